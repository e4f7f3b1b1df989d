// How much memory a sandbox child uses, read from the host's /proc, for the
// pool's memory budget (RuntimeConfig::memory_budget_bytes; docs/sandbox.md,
// "The memory budget").
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace taskyon::sandbox {

// Resident set size of `pid`, bytes: /proc/PID/statm (field 2 × page size).
// Cheap (kernel counters), and never below the process's PSS. nullopt when
// the process is gone or unreadable.
std::optional<std::uint64_t> resident_bytes(pid_t pid);

// Proportional set size of `pid`, bytes: the Pss line of
// /proc/PID/smaps_rollup (pages shared with other processes — the runtime's
// executable and libraries — count as 1/N each, so the sum over processes is
// the memory they take together). Walks the process's mappings: read it only
// when resident_bytes() says the budget may be exceeded. Falls back to
// resident_bytes() when smaps_rollup is unreadable.
std::optional<std::uint64_t> proportional_bytes(pid_t pid);

// A process's memory as its pages' sharing divides it, bytes, from one read
// of /proc/PID/smaps_rollup.
struct Footprint {
  std::uint64_t proportional = 0;  // PSS: the Pss line, as proportional_bytes()
  // USS: Private_Clean + Private_Dirty, the pages no other process maps,
  // which is what killing the process frees. Its share of the pages it
  // shares moves to the processes still mapping them: when those are all in
  // one set, the set's PSS sum falls by USS, not by PSS.
  std::uint64_t unique = 0;
};
// nullopt when the process is gone. When smaps_rollup cannot be read (it
// needs ptrace access to the process; statm does not), from /proc/PID/statm:
// PSS its RSS (an upper bound), USS its resident anonymous pages (RSS minus
// statm's file-backed and shared ones): a page of the runtime's executable
// is never counted as freed.
std::optional<Footprint> footprint(pid_t pid);

// After a fork (every sandbox's start is one) each private page of this
// process is write-protected, and its next write takes a page fault: 18-23 us
// each on the 2-CPU VM, over 100 of them on the MCP call after a spare
// starts. This makes the pages of this process's private anonymous writable
// mappings that are present and mapped by it alone (/proc/self/pagemap)
// writable again in the kernel, as a write would, without writing (madvise
// MADV_POPULATE_WRITE, Linux 5.14; 0.2-3 us a page there). Never changes
// memory contents and adds no page: the shared zero page and pages a fork
// still shares are left as they are; mappings over 1 GiB (a sanitizer's
// shadow) are skipped. Returns the bytes made writable; 0 where the kernel
// lacks the advice (can_restore_write_access()).
std::uint64_t restore_write_access() noexcept;
bool can_restore_write_access() noexcept;  // probed once, on a page of its own

// Why the pool does not put its children in a cgroup v2 with memory.max on
// this machine (e.g. "the memory controller is not enabled in cgroup v2 here
// (it is on a v1 hierarchy)"); empty when a delegated, writable cgroup v2
// memory controller exists. For `tycli sandbox explain`.
std::string cgroup_v2_memory_unavailable();

}  // namespace taskyon::sandbox
