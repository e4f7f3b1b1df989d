// Writing to a pipe or socket whose reader may be gone, without the SIGPIPE
// that would end the host (its default action): a sandbox's stdin, an
// imported MCP server's stdin, a Python child's stdin, `tycli mcp`'s stdout.
// Every such write in the host goes through here.
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace taskyon {

// write(2) that never raises SIGPIPE: the first call on a thread blocks
// SIGPIPE for that thread for good (one system call per thread, not two per
// write: issue 19), and a write that fails with EPIPE consumes the pending
// SIGPIPE. Returns what write returns; errno is preserved. Programs the host
// starts do not inherit the mask (base/spawn.h).
ssize_t write_no_sigpipe(int fd, const void* data, std::size_t size) noexcept;

}  // namespace taskyon
