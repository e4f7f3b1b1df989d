// Resource limits of a sandbox child. Host side: plan_rlimits() (reads the
// host's hard limits); child side: apply_rlimits(), between fork and exec.
//
// What each limit denies:
//   RLIMIT_CORE   = 0       core files (a crash writes nothing anywhere)
//   RLIMIT_FSIZE  = 0       growing any regular file (SIGXFSZ/EFBIG); pipes are unaffected
//   RLIMIT_NOFILE = files   more than `open_files` descriptors
//   RLIMIT_DATA   = data    private writable memory beyond `data_bytes`: the V8 heap and
//                           what the heap flag does not bound (Buffer, ArrayBuffer,
//                           WebAssembly.Memory). Not RLIMIT_AS: runtimes reserve large
//                           address ranges they never touch (Deno cannot start under it).
// A limit is never raised above the host's own hard limit (an unprivileged
// process could not), so a host that runs tighter keeps its limit.
// Not set: RLIMIT_NPROC (it counts every process of the host's user outside a
// user namespace, and root is exempt; seccomp forbids new processes instead);
// RLIMIT_CPU (a retained sandbox lives across calls; the host's per-call
// timeout bounds CPU).
#pragma once

#include <sys/resource.h>

#include <array>
#include <cstddef>
#include <cstdint>

namespace taskyon::hardening::rlimits {

struct Limits {
  std::uint64_t data_bytes = 0;    // RLIMIT_DATA; 0: leave the host's
  std::uint64_t open_files = 256;  // RLIMIT_NOFILE
};

// Prepared before fork: (resource, value) pairs, applied in order.
struct Plan {
  struct Entry {
    int resource = 0;
    struct rlimit value {};
  };
  std::array<Entry, 4> entries{};
  std::size_t count = 0;
};

Plan plan_rlimits(const Limits& limits);

// Child side: setrlimit for each entry; false on the first failure (errno set).
bool apply_rlimits(const Plan& plan) noexcept;

}  // namespace taskyon::hardening::rlimits
