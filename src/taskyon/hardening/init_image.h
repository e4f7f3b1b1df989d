// The program a PID namespace's init execs once the runtime has exec'd
// (src/guest/init/init.cc: reap, report the runtime's wait status, exit), so
// the init holds a few pages of its own instead of a copy-on-write snapshot of
// the host for the sandbox's lifetime (contain.h, docs/sandbox.md).
//
// The program is linked into the host (a static, freestanding ELF of a few
// KiB) and executed from a memfd, so no file of the host's tree is named and
// the sandbox's mount namespace need not contain it.
#pragma once

#include <span>

#include "taskyon/base/error.h"

namespace taskyon::hardening {

// The program's ELF image, as linked into this binary.
std::span<const unsigned char> init_image() noexcept;

// A read-only, close-on-exec descriptor of a sealed memfd (F_SEAL_WRITE, _GROW,
// _SHRINK, _SEAL, and _EXEC from Linux 6.3) holding init_image(), made on
// first use and kept for the process's lifetime; execveat(fd, "", …,
// AT_EMPTY_PATH) runs it.
// Errc::internal (memfd_create, write, seal or reopen failed, with errno's
// text) when the kernel refuses, e.g. vm.memfd_noexec = 2: the init then waits
// in place, as a fork of the host.
const Result<int>& init_image_fd() noexcept;

}  // namespace taskyon::hardening
