#include "taskyon/hardening/seccomp.h"

#include <linux/seccomp.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <initializer_list>

#include <seccomp.h>

#include <fmt/format.h>

#include "taskyon/hardening/fd.h"

namespace taskyon::hardening::seccomp {

namespace {

constexpr std::uint64_t kNamespaceFlags[] = {CLONE_NEWNS,  CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
                                             CLONE_NEWUSER, CLONE_NEWPID,   CLONE_NEWNET};

struct Context {
  scmp_filter_ctx ctx;
  ~Context() { seccomp_release(ctx); }
};

Result<void> check(int rc, const char* what) {
  if (rc == 0) return {};
  return fail(Errc::internal, fmt::format("seccomp: {} failed: {}", what, std::strerror(-rc)));
}

// Every rule of the policy in seccomp.h.
Result<void> add_rules(scmp_filter_ctx ctx, const AllowedExec& exec, Exceptions exceptions) {
  const std::uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
  auto deny = [&](std::initializer_list<int> syscalls, std::uint32_t action) -> Result<void> {
    for (int nr : syscalls) {
      if (nr < 0) continue;  // unknown to this libseccomp: nothing to deny by number
      if (auto ok = check(seccomp_rule_add(ctx, action, nr, 0), "seccomp_rule_add"); !ok) return ok;
    }
    return {};
  };
  if (!exceptions.unix_stream_socketpair) {
    if (auto ok = deny({SCMP_SYS(socket), SCMP_SYS(socketpair)}, SCMP_ACT_ERRNO(EACCES)); !ok) return ok;
  } else {
    if (auto ok = deny({SCMP_SYS(socket)}, SCMP_ACT_ERRNO(EACCES)); !ok) return ok;
    // socketpair: denied unless AF_UNIX and SOCK_STREAM (the type's low bits; the
    // flags SOCK_NONBLOCK/SOCK_CLOEXEC may be set). Rules of one action are OR'ed.
    const scmp_arg_cmp other_family = SCMP_A0_32(SCMP_CMP_NE, AF_UNIX);
    if (auto ok = check(seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(socketpair), 1, &other_family),
                        "seccomp_rule_add(socketpair)");
        !ok) {
      return ok;
    }
    // A masked comparison cannot say "not equal": each other type is denied by name.
    for (int type : {SOCK_DGRAM, SOCK_RAW, SOCK_RDM, SOCK_SEQPACKET, SOCK_DCCP, SOCK_PACKET}) {
      const scmp_arg_cmp is_type = SCMP_A1_32(SCMP_CMP_MASKED_EQ, 0xf, type);
      if (auto ok = check(seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(socketpair), 1, &is_type),
                          "seccomp_rule_add(socketpair)");
          !ok) {
        return ok;
      }
    }
  }
  if (auto ok = deny({SCMP_SYS(fork), SCMP_SYS(vfork), SCMP_SYS(execve)}, eperm); !ok) return ok;
  if (auto ok = deny({SCMP_SYS(clone3)}, SCMP_ACT_ERRNO(ENOSYS)); !ok) return ok;
  // clone: a new process (no CLONE_THREAD), or any new namespace.
  if (auto ok = check(seccomp_rule_add(ctx, eperm, SCMP_SYS(clone), 1,
                                       SCMP_A0_64(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0)),
                      "seccomp_rule_add(clone)");
      !ok) {
    return ok;
  }
  for (std::uint64_t flag : kNamespaceFlags) {
    if (auto ok = check(seccomp_rule_add(ctx, eperm, SCMP_SYS(clone), 1, SCMP_A0_64(SCMP_CMP_MASKED_EQ, flag, flag)),
                        "seccomp_rule_add(clone)");
        !ok) {
      return ok;
    }
  }
  // execveat: denied when any argument differs from the prepared exec (rules
  // with the same action are OR'ed); the prepared call falls through to allow.
  const scmp_arg_cmp differs[] = {
      SCMP_A0_32(SCMP_CMP_NE, static_cast<std::uint32_t>(exec.fd)),
      SCMP_A1_64(SCMP_CMP_NE, reinterpret_cast<std::uintptr_t>(exec.path)),
      SCMP_A2_64(SCMP_CMP_NE, reinterpret_cast<std::uintptr_t>(exec.argv)),
      SCMP_A3_64(SCMP_CMP_NE, reinterpret_cast<std::uintptr_t>(exec.envp)),
      SCMP_A4_32(SCMP_CMP_NE, static_cast<std::uint32_t>(exec.flags)),
  };
  for (const scmp_arg_cmp& cmp : differs) {
    if (auto ok = check(seccomp_rule_add_array(ctx, eperm, SCMP_SYS(execveat), 1, &cmp), "seccomp_rule_add(execveat)");
        !ok) {
      return ok;
    }
  }
  return deny({SCMP_SYS(io_uring_setup), SCMP_SYS(io_uring_enter), SCMP_SYS(io_uring_register),
               SCMP_SYS(ptrace), SCMP_SYS(process_vm_readv), SCMP_SYS(process_vm_writev),
               SCMP_SYS(process_madvise), SCMP_SYS(pidfd_getfd), SCMP_SYS(kcmp),
               SCMP_SYS(unshare), SCMP_SYS(setns),
               SCMP_SYS(mount), SCMP_SYS(umount2), SCMP_SYS(pivot_root), SCMP_SYS(chroot),
               SCMP_SYS(open_tree), SCMP_SYS(move_mount), SCMP_SYS(fsopen), SCMP_SYS(fsconfig),
               SCMP_SYS(fsmount), SCMP_SYS(fspick), SCMP_SYS(mount_setattr), SCMP_SYS(open_by_handle_at),
               SCMP_SYS(bpf), SCMP_SYS(perf_event_open), SCMP_SYS(userfaultfd),
               SCMP_SYS(keyctl), SCMP_SYS(add_key), SCMP_SYS(request_key)},
              eperm);
}

}  // namespace

bool available() noexcept {
  // With a NULL filter the kernel answers EFAULT when filters are supported,
  // EINVAL when they are not (and changes nothing either way).
  return ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, nullptr, 0, 0) != 0 && errno == EFAULT;
}

Filter::Filter(std::vector<sock_filter> insns) : insns_(std::move(insns)) {
  program_.len = static_cast<unsigned short>(insns_.size());
  program_.filter = insns_.data();
}

Filter::Filter(Filter&& other) noexcept : Filter(std::move(other.insns_)) {}

Result<Filter> Filter::build(const AllowedExec& exec, Exceptions exceptions) {
  Context c{seccomp_init(SCMP_ACT_ALLOW)};
  if (c.ctx == nullptr) return fail(Errc::internal, "seccomp: seccomp_init failed");
  if (auto ok = check(seccomp_attr_set(c.ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS), "seccomp_attr_set");
      !ok) {
    return std::unexpected(std::move(ok.error()));
  }
  // The child sets no_new_privs itself, as its own step.
  if (auto ok = check(seccomp_attr_set(c.ctx, SCMP_FLTATR_CTL_NNP, 0), "seccomp_attr_set"); !ok) {
    return std::unexpected(std::move(ok.error()));
  }
  if (auto ok = add_rules(c.ctx, exec, exceptions); !ok) return std::unexpected(std::move(ok.error()));
  // libseccomp 2.5 exports to a descriptor only: through a memory file.
  Fd mem(::memfd_create("taskyon-seccomp", MFD_CLOEXEC));
  if (!mem) return fail(Errc::internal, fmt::format("seccomp: memfd_create failed: {}", std::strerror(errno)));
  if (auto ok = check(seccomp_export_bpf(c.ctx, mem.get()), "seccomp_export_bpf"); !ok) {
    return std::unexpected(std::move(ok.error()));
  }
  const off_t bytes = ::lseek(mem.get(), 0, SEEK_END);
  if (bytes <= 0 || bytes % static_cast<off_t>(sizeof(sock_filter)) != 0 ||
      bytes / static_cast<off_t>(sizeof(sock_filter)) > BPF_MAXINSNS) {
    return fail(Errc::internal, "seccomp: the exported filter has an unexpected size");
  }
  std::vector<sock_filter> insns(static_cast<std::size_t>(bytes) / sizeof(sock_filter));
  if (::pread(mem.get(), insns.data(), static_cast<std::size_t>(bytes), 0) != bytes) {
    return fail(Errc::internal, fmt::format("seccomp: cannot read the exported filter: {}", std::strerror(errno)));
  }
  return Filter(std::move(insns));
}

bool load(const Filter& filter) noexcept {
  return ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &filter.program()) == 0;
}

}  // namespace taskyon::hardening::seccomp
