#include "taskyon/hardening/namespaces.h"

#include <fcntl.h>
#include <signal.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstddef>

#include <fmt/format.h>

namespace taskyon::hardening::namespaces {

bool host_is_root() noexcept { return ::geteuid() == 0; }

Plan plan_namespaces(Options options) {
  Plan plan;
  plan.drop_ids = options.drop_ids && host_is_root();
  const unsigned uid = plan.drop_ids ? kOverflowId : ::geteuid();
  const unsigned gid = plan.drop_ids ? kOverflowId : ::getegid();
  plan.outside_id = uid;
  if (!options.user_net_ipc_uts) return plan;
  plan.flags = CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS;
  if (options.pid) {
    // The child is born in the PID namespace (it is PID 1). A root host that
    // drops the ids creates it with its own authority, before the drop; else
    // the new user namespace comes with it and owns it.
    plan.clone_flags = CLONE_NEWPID;
    if (!plan.drop_ids) {
      plan.clone_flags |= CLONE_NEWUSER;
      plan.flags &= ~CLONE_NEWUSER;
    }
  }
  if (options.mount) {
    // A root host builds the new root with its own authority (any runtime path
    // is readable), in a mount namespace the sandbox's user namespace does not own.
    if (plan.drop_ids) {
      plan.mount_first = true;
    } else {
      plan.flags |= CLONE_NEWNS;
    }
  }
  plan.uid_map = fmt::format("{} {} 1\n", kSandboxId, uid);
  plan.gid_map = fmt::format("{} {} 1\n", kSandboxId, gid);
  return plan;
}

namespace {

// Writes `size` bytes to `name` under `dir` in one write(2), as procfs id maps require.
bool write_file(int dir, const char* name, const char* data, std::size_t size) noexcept {
  const long fd = ::syscall(SYS_openat, dir, name, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const long n = ::syscall(SYS_write, fd, data, size);
  const bool ok = n == static_cast<long>(size);
  ::syscall(SYS_close, fd);
  return ok;
}

}  // namespace

int open_proc_self() noexcept {
  return static_cast<int>(::syscall(SYS_openat, AT_FDCWD, "/proc/self", O_PATH | O_DIRECTORY | O_CLOEXEC));
}

bool unshare_mount_first(const Plan& plan) noexcept {
  return !plan.mount_first || ::syscall(SYS_unshare, CLONE_NEWNS) == 0;
}

bool drop_ids(const Plan& plan) noexcept {
  if (!plan.drop_ids) return true;
  const long id = kOverflowId;
  return ::syscall(SYS_setgroups, 0, nullptr) == 0 && ::syscall(SYS_setresgid, id, id, id) == 0 &&
         ::syscall(SYS_setresuid, id, id, id) == 0 && ::syscall(SYS_prctl, PR_SET_DUMPABLE, 1, 0, 0, 0) == 0;
}

bool unshare_all(const Plan& plan) noexcept { return ::syscall(SYS_unshare, plan.flags) == 0; }

pid_t clone_child(const Plan& plan) noexcept {
  // clone(flags, stack = 0: the parent's, as fork; the other arguments unused).
  return static_cast<pid_t>(::syscall(SYS_clone, static_cast<unsigned long>(plan.clone_flags) | SIGCHLD, 0, 0, 0, 0));
}

bool write_id_maps(const Plan& plan, int proc_self) noexcept {
  static constexpr char kDeny[] = "deny";
  return write_file(proc_self, "setgroups", kDeny, sizeof kDeny - 1) &&
         write_file(proc_self, "uid_map", plan.uid_map.data(), plan.uid_map.size()) &&
         write_file(proc_self, "gid_map", plan.gid_map.data(), plan.gid_map.size());
}

bool set_hostname() noexcept {
  return ::syscall(SYS_sethostname, kSandboxHostname.data(), kSandboxHostname.size()) == 0;
}

}  // namespace taskyon::hardening::namespaces
