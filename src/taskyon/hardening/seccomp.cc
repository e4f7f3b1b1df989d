#include "taskyon/hardening/seccomp.h"

#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
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

// Syscalls newer than Debian 12's headers and libseccomp 2.5.4; their numbers
// are the same on x86-64 and aarch64 (added to every table at once).
constexpr int kFchmodat2 = 452;
constexpr int kSetxattrat = 463;
constexpr int kRemovexattrat = 466;
constexpr int kOpenTreeAttr = 467;  // Linux 6.15: open_tree with mount attributes (the open_tree family)
constexpr int kFileSetattr = 469;  // Linux 6.17: FS_IOC_FSSETXATTR's inode flags by path

// FS_IOC_SETFLAGS, FS_IOC32_SETFLAGS, FS_IOC_FSSETXATTR, FS_IOC_SETVERSION,
// FS_IOC32_SETVERSION (<linux/fs.h>): inode flags and the generation number.
constexpr std::uint32_t kInodeFlagIoctls[] = {0x40086602u, 0x40046602u, 0x401c5820u, 0x40087602u, 0x40047602u};

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
  auto ok = deny({SCMP_SYS(io_uring_setup), SCMP_SYS(io_uring_enter), SCMP_SYS(io_uring_register),
               SCMP_SYS(ptrace), SCMP_SYS(process_vm_readv), SCMP_SYS(process_vm_writev),
               SCMP_SYS(process_madvise), SCMP_SYS(pidfd_getfd), SCMP_SYS(kcmp),
               SCMP_SYS(unshare), SCMP_SYS(setns),
               SCMP_SYS(mount), SCMP_SYS(umount2), SCMP_SYS(pivot_root), SCMP_SYS(chroot),
               SCMP_SYS(open_tree), kOpenTreeAttr, SCMP_SYS(move_mount), SCMP_SYS(fsopen), SCMP_SYS(fsconfig),
               SCMP_SYS(fsmount), SCMP_SYS(fspick), SCMP_SYS(mount_setattr), SCMP_SYS(open_by_handle_at),
               SCMP_SYS(bpf), SCMP_SYS(perf_event_open), SCMP_SYS(userfaultfd),
               SCMP_SYS(keyctl), SCMP_SYS(add_key), SCMP_SYS(request_key)},
              eperm);
  if (!ok) return ok;
  if (auto ok = deny({SCMP_SYS(chmod), SCMP_SYS(fchmod), SCMP_SYS(fchmodat), kFchmodat2,
                      SCMP_SYS(chown), SCMP_SYS(fchown), SCMP_SYS(lchown), SCMP_SYS(fchownat),
                      SCMP_SYS(utime), SCMP_SYS(utimes), SCMP_SYS(utimensat), SCMP_SYS(futimesat),
                      SCMP_SYS(setxattr), SCMP_SYS(lsetxattr), SCMP_SYS(fsetxattr), kSetxattrat,
                      SCMP_SYS(removexattr), SCMP_SYS(lremovexattr), SCMP_SYS(fremovexattr), kRemovexattrat,
                      kFileSetattr, SCMP_SYS(process_mrelease)},
                     eperm);
      !ok) {
    return ok;
  }
  // The inode-flag and fsxattr ioctls (chattr, project ids): they need only an
  // open descriptor and ownership, so they belong to the same family.
  for (std::uint32_t cmd : kInodeFlagIoctls) {
    if (auto ok = check(seccomp_rule_add(ctx, eperm, SCMP_SYS(ioctl), 1, SCMP_A1_32(SCMP_CMP_EQ, cmd)),
                        "seccomp_rule_add(ioctl)");
        !ok) {
      return ok;
    }
  }
  return {};
}

// The pid-family filter (seccomp.h), assembled by hand: a syscall of the family
// is allowed when its target is 0 or the caller's own pid, else EPERM.
struct PidProgram {
  std::vector<sock_filter> insns;
  std::vector<std::size_t> own_pid_slots;
};

#if defined(__x86_64__)
constexpr std::uint32_t kNativeArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr std::uint32_t kNativeArch = AUDIT_ARCH_AARCH64;
#else
#error "the sandbox's seccomp filter knows x86-64 and aarch64"
#endif

PidProgram pid_program() {
  // Changes, target in argument 0. Reads (sched_get*, getpriority, ioprio_get,
  // prlimit64 without a new limit) stay allowed: a runtime's threads read their
  // own parameters by thread id (abseil's pthread_getschedparam in Deno aborts
  // when refused), and a thread id is not the caller's pid.
  constexpr int kByPid[] = {__NR_sched_setscheduler, __NR_sched_setparam, __NR_sched_setaffinity,
                            __NR_sched_setattr,      __NR_migrate_pages,  __NR_move_pages};
  constexpr std::uint32_t kPrioProcess = 0;        // PRIO_PROCESS
  constexpr std::uint32_t kIoprioWhoProcess = 1;   // IOPRIO_WHO_PROCESS
  constexpr std::uint32_t kArg0 = offsetof(seccomp_data, args[0]);  // the low word (little-endian)
  constexpr std::uint32_t kArg1 = offsetof(seccomp_data, args[1]);
  // Labels: instruction indexes, resolved once the layout is known.
  enum Label : int { none = -1, allow, deny, check_pid0, check_who1, check_prio, check_ioprio, check_prlimit, count };
  struct Insn {
    sock_filter f;
    int jt = none, jf = none;  // labels; none: the next instruction
    bool own_pid = false;
  };
  std::vector<Insn> code;
  int at[count] = {};
  auto label = [&](Label l) { at[l] = static_cast<int>(code.size()); };
  auto stmt = [&](std::uint16_t op, std::uint32_t k) { code.push_back({BPF_STMT(op, k)}); };
  auto jeq = [&](std::uint32_t k, int jt, int jf = none, bool own = false) {
    code.push_back({BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, k, 0, 0), jt, jf, own});
  };
  stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch));
  jeq(kNativeArch, none, allow);  // another architecture: the main filter kills it
  stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr));
  for (int nr : kByPid) jeq(static_cast<std::uint32_t>(nr), check_pid0);
  jeq(__NR_prlimit64, check_prlimit);
  jeq(__NR_setpriority, check_prio);
  jeq(__NR_ioprio_set, check_ioprio);
  stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);  // not of the family
  label(check_prlimit);  // a NULL new limit (both words 0) only reads
  stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[2]));
  jeq(0, none, check_pid0);
  stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[2]) + 4);
  jeq(0, allow, check_pid0);
  label(check_pid0);
  stmt(BPF_LD | BPF_W | BPF_ABS, kArg0);
  jeq(0, allow);
  jeq(0, allow, deny, true);
  label(check_prio);
  stmt(BPF_LD | BPF_W | BPF_ABS, kArg0);
  jeq(kPrioProcess, check_who1, deny);
  label(check_ioprio);
  stmt(BPF_LD | BPF_W | BPF_ABS, kArg0);
  jeq(kIoprioWhoProcess, check_who1, deny);
  label(check_who1);
  stmt(BPF_LD | BPF_W | BPF_ABS, kArg1);
  jeq(0, allow);
  jeq(0, allow, deny, true);
  label(allow);
  stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  label(deny);
  stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA));

  PidProgram out;
  for (std::size_t i = 0; i < code.size(); ++i) {
    sock_filter f = code[i].f;
    auto offset = [&](int l) -> std::uint8_t {
      return l == none ? 0 : static_cast<std::uint8_t>(at[l] - static_cast<int>(i) - 1);  // forward jumps only
    };
    if (BPF_CLASS(f.code) == BPF_JMP) {
      f.jt = offset(code[i].jt);
      f.jf = offset(code[i].jf);
    }
    if (code[i].own_pid) out.own_pid_slots.push_back(i);
    out.insns.push_back(f);
  }
  return out;
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
  PidProgram pid = pid_program();
  pid_insns_ = std::move(pid.insns);
  own_pid_slots_ = std::move(pid.own_pid_slots);
  pid_program_.len = static_cast<unsigned short>(pid_insns_.size());
  pid_program_.filter = pid_insns_.data();
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
  const auto own = static_cast<std::uint32_t>(::getpid());
  for (std::size_t slot : filter.own_pid_slots_) filter.pid_insns_[slot].k = own;
  return ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &filter.pid_program_) == 0 &&
         ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &filter.program()) == 0;
}

}  // namespace taskyon::hardening::seccomp
