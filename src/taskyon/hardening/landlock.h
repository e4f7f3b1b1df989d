// Landlock rules of a sandbox child. Host side: a Ruleset is built once per
// runtime (it holds a ruleset descriptor with every rule already added);
// child side: restrict_self(), after no_new_privs, between fork and exec.
//
// The ruleset handles every access right the running kernel knows, so
// whatever is not granted below is denied:
//   files (ABI 1-3, 5)  open for reading or writing, exec, list directories,
//                       create/remove/rename/link anything, truncate, device
//                       ioctls — everywhere except the grants;
//   TCP (ABI 4)         bind and connect on every port (no rule grants one);
//   scopes (ABI 6)      connecting to abstract UNIX sockets created outside the
//                       sandbox's own domain, and sending signals to processes
//                       outside it (the host, other sandboxes, anything else).
// Grants (each file, never a directory):
//   read_execute        open for reading and execute: the runtime binary and
//                       its ELF interpreter (exec opens both for read + exec);
//   read                open for reading only: shared libraries, and the few
//                       files the runtime reads at start.
// Landlock does not restrict path lookup, stat(2), access(2) or readlink(2):
// native code can learn whether a path exists (see docs/sandbox.md).
//
// Debian 12's <linux/landlock.h> stops at ABI 2; the constants and structs of
// later ABIs are defined here by value (include/uapi/linux/landlock.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "taskyon/base/error.h"
#include "taskyon/hardening/fd.h"

namespace taskyon::hardening::landlock {

// The kernel's Landlock ABI version; 0 when Landlock is missing or disabled.
int abi_version() noexcept;

struct Grants {
  std::vector<std::string> read_execute;  // absolute paths of regular files
  std::vector<std::string> read;          // absolute paths of files
};

// A ruleset descriptor with the grants added: immutable once built.
class Ruleset {
 public:
  // Errc::internal when a granted path cannot be opened or a syscall fails;
  // `abi` must be >= 1 (abi_version()).
  static Result<Ruleset> build(const Grants& grants, int abi);

  int abi() const { return abi_; }
  int fd() const { return fd_.get(); }
  std::uint64_t handled_fs() const { return handled_fs_; }
  std::uint64_t handled_net() const { return handled_net_; }
  std::uint64_t scoped() const { return scoped_; }

 private:
  Ruleset() = default;
  Fd fd_;
  int abi_ = 0;
  std::uint64_t handled_fs_ = 0, handled_net_ = 0, scoped_ = 0;
};

// Child side: landlock_restrict_self(ruleset). Needs no_new_privs (or
// CAP_SYS_ADMIN in the current user namespace). False on failure (errno set).
bool restrict_self(const Ruleset& ruleset) noexcept;

}  // namespace taskyon::hardening::landlock
