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
  std::size_t size() const { return insns_.size(); }

 private:
  explicit Filter(std::vector<sock_filter> insns);
  std::vector<sock_filter> insns_;
  sock_fprog program_{};
};

// Child side: loads the filter (needs no_new_privs). False on failure (errno set).
bool load(const Filter& filter) noexcept;

}  // namespace taskyon::hardening::seccomp
