#include "taskyon/hardening/namespaces.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstddef>

#include <fmt/format.h>

namespace taskyon::hardening::namespaces {

Plan plan_namespaces() {
  return Plan{
      .flags = CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS,
      .uid_map = fmt::format("{} {} 1\n", kSandboxId, ::geteuid()),
      .gid_map = fmt::format("{} {} 1\n", kSandboxId, ::getegid()),
  };
}

namespace {

// Writes `size` bytes to `path` in one write(2), as procfs id maps require.
bool write_file(const char* path, const char* data, std::size_t size) noexcept {
  const long fd = ::syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const long n = ::syscall(SYS_write, fd, data, size);
  const bool ok = n == static_cast<long>(size);
  ::syscall(SYS_close, fd);
  return ok;
}

}  // namespace

bool unshare_all(const Plan& plan) noexcept { return ::syscall(SYS_unshare, plan.flags) == 0; }

bool write_id_maps(const Plan& plan) noexcept {
  static constexpr char kDeny[] = "deny";
  return write_file("/proc/self/setgroups", kDeny, sizeof kDeny - 1) &&
         write_file("/proc/self/uid_map", plan.uid_map.data(), plan.uid_map.size()) &&
         write_file("/proc/self/gid_map", plan.gid_map.data(), plan.gid_map.size());
}

bool set_hostname() noexcept {
  return ::syscall(SYS_sethostname, kSandboxHostname.data(), kSandboxHostname.size()) == 0;
}

}  // namespace taskyon::hardening::namespaces
