// The seccomp filter of a sandbox child, built with libseccomp on the host
// (exported to BPF before fork) and loaded by the child as the last step
// before it execs the runtime.
//
// Default: allow. Denied (EPERM unless noted), with what each closes:
//   socket, socketpair (EACCES)     every socket of every family: no network,
//                                   no UNIX socket (paths or abstract), no
//                                   netlink (interface listing, audit), no packet
//   fork, vfork; clone without      new processes (fork bombs, grandchildren that
//     CLONE_THREAD                  outlive the sandbox, re-exec of the runtime)
//   clone with any CLONE_NEW* flag  new namespaces
//   clone3 (ENOSYS)                 clone3's flags live in memory a filter cannot
//                                   read; ENOSYS makes the C library fall back to
//                                   clone, which the rules above see
//   execve; execveat except the     exec after the runtime's own start: the one
//     one prepared exec             execveat let through is the prepared call (same
//                                   descriptor, path, argv and envp pointers, flags)
//   io_uring_setup/enter/register   a second syscall interface the filter cannot see
//   ptrace, process_vm_readv/writev,
//     process_madvise, pidfd_getfd,
//     kcmp                          reaching into other processes
//   unshare, setns                  new or foreign namespaces
//   mount, umount2, pivot_root, chroot, open_tree, move_mount, fsopen,
//     fsconfig, fsmount, fspick, mount_setattr, open_by_handle_at
//                                   the filesystem layout and handle-based opens
//   bpf, perf_event_open, userfaultfd,
//     keyctl, add_key, request_key  kernel attack surface a tool never needs
//   chmod, fchmod, fchmodat, fchmodat2; chown, fchown, lchown, fchownat;
//     utime, utimes, utimensat, futimesat; setxattr, lsetxattr, fsetxattr,
//     setxattrat, removexattr, lremovexattr, fremovexattr, removexattrat;
//     ioctl FS_IOC_SETFLAGS / FS_IOC32_SETFLAGS / FS_IOC_FSSETXATTR
//                                   the metadata of files: Landlock does not
//                                   mediate it, and any file the sandbox's uid
//                                   owns (or root's, when tycli is root) could
//                                   be made setuid, world-readable, re-dated
//                                   or tagged with data that outlives the sandbox
//   process_mrelease                reaping another process's memory
// A second, hand-written filter (the pid family, libseccomp cannot say "neither
// 0 nor X" of one argument) denies with EPERM, unless the target is the caller
// itself (0, or its own pid, bound by load()):
//   prlimit64, sched_{set,get}{scheduler,param,affinity,attr},
//     sched_rr_get_interval, migrate_pages, move_pages, get_robust_list
//                                   another process's limits (lowering tycli's
//                                   RLIMIT_FSIZE kills it on its next write),
//                                   scheduling, CPUs, memory placement, or
//                                   reading them
//   setpriority, getpriority        unless which is PRIO_PROCESS and who the caller
//   ioprio_set, ioprio_get          unless which is IOPRIO_WHO_PROCESS and who the caller
// (a process group or a user is never "the caller": PRIO_USER 0 would reach
// every process of the uid.)
// Another architecture's syscalls (i386, x32) kill the process.
#pragma once

#include <linux/filter.h>

#include <vector>

#include "taskyon/base/error.h"

namespace taskyon::hardening::seccomp {

// True when the kernel offers seccomp filters (SECCOMP_MODE_FILTER).
bool available() noexcept;

// The one execveat(2) the filter lets through, by the exact argument values
// the child passes. The pointers must stay valid until the child execs.
struct AllowedExec {
  int fd = -1;
  const char* path = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  int flags = 0;
};

// Exceptions one runtime needs to start, each off by default (Node needs none).
struct Exceptions {
  // socketpair(AF_UNIX, SOCK_STREAM[|SOCK_NONBLOCK|SOCK_CLOEXEC], 0) is allowed:
  // a pair connected to itself that reaches nothing outside the process
  // (connect and sendto with an address fail with EISCONN; a datagram pair,
  // which could sendto any pathname socket, stays denied). Deno needs it:
  // tokio's signal driver makes one at start and panics without it.
  bool unix_stream_socketpair = false;
};

// A BPF program, ready to load.
class Filter {
 public:
  // Errc::internal when libseccomp fails.
  static Result<Filter> build(const AllowedExec& exec, Exceptions exceptions = {});

  Filter(Filter&& other) noexcept;
  Filter& operator=(Filter&&) = delete;
  Filter(const Filter&) = delete;

  const sock_fprog& program() const { return program_; }
  std::size_t size() const { return insns_.size() + pid_insns_.size(); }

 private:
  friend bool load(const Filter& filter) noexcept;
  explicit Filter(std::vector<sock_filter> insns);
  std::vector<sock_filter> insns_;
  sock_fprog program_{};
  // The pid-family filter; the comparisons with the caller's own pid (listed
  // in own_pid_slots_) are written by load(), in the child.
  mutable std::vector<sock_filter> pid_insns_;
  mutable sock_fprog pid_program_{};
  std::vector<std::size_t> own_pid_slots_;
};

// Child side: writes getpid() into the pid-family filter, then loads both
// filters (needs no_new_privs). False on failure (errno set). No allocation.
bool load(const Filter& filter) noexcept;

}  // namespace taskyon::hardening::seccomp
