#include "taskyon/sandbox/memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace taskyon::sandbox {

namespace {

// /proc/PID/statm's resident and shared fields (proc(5)), bytes. Unlike
// smaps_rollup it needs no ptrace access to the process.
struct Statm {
  std::uint64_t resident = 0;
  std::uint64_t shared = 0;  // resident pages backed by a file or shared memory
};

std::optional<Statm> read_statm(pid_t pid) {
  std::ifstream statm(fmt::format("/proc/{}/statm", pid));
  std::uint64_t size = 0, resident = 0, shared = 0;
  if (!(statm >> size >> resident >> shared)) return std::nullopt;
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  return Statm{resident * page, shared * page};
}

}  // namespace

std::optional<std::uint64_t> resident_bytes(pid_t pid) {
  const auto statm = read_statm(pid);
  if (!statm) return std::nullopt;
  return statm->resident;
}

std::optional<Footprint> footprint(pid_t pid) {
  std::ifstream rollup(fmt::format("/proc/{}/smaps_rollup", pid));
  Footprint f;
  bool pss = false;
  for (std::string line; std::getline(rollup, line);) {
    const bool is_pss = line.starts_with("Pss:");
    if (!is_pss && !line.starts_with("Private_Clean:") && !line.starts_with("Private_Dirty:")) continue;
    std::istringstream fields(line.substr(line.find(':') + 1));
    std::uint64_t kib = 0;
    if (!(fields >> kib)) continue;
    (is_pss ? f.proportional : f.unique) += kib * 1024;
    pss = pss || is_pss;
  }
  if (pss) return f;
  const auto statm = read_statm(pid);
  if (!statm) return std::nullopt;
  return Footprint{statm->resident, statm->resident - std::min(statm->shared, statm->resident)};
}

std::optional<std::uint64_t> proportional_bytes(pid_t pid) {
  const auto f = footprint(pid);
  if (!f) return std::nullopt;
  return f->proportional;
}

namespace {

#ifndef MADV_POPULATE_WRITE
constexpr int MADV_POPULATE_WRITE = 23;  // Linux 5.14 (uapi/asm-generic/mman-common.h)
#endif

// "START-END PERMS OFFSET DEV INODE [PATH]": the range of a private anonymous
// writable mapping ("rw-p", inode 0), or false.
bool anonymous_writable(std::string_view line, std::uintptr_t& start, std::uintptr_t& end) {
  const char* p = line.data();
  const char* const stop = p + line.size();
  auto got = std::from_chars(p, stop, start, 16);
  if (got.ec != std::errc() || got.ptr == stop || *got.ptr != '-') return false;
  got = std::from_chars(got.ptr + 1, stop, end, 16);
  if (got.ec != std::errc() || stop - got.ptr < 6 || std::string_view(got.ptr, 6) != " rw-p ") return false;
  std::string_view rest(got.ptr + 6, static_cast<std::size_t>(stop - got.ptr - 6));  // OFFSET DEV INODE ...
  for (int field = 0; field < 2; ++field) {
    const auto space = rest.find(' ');
    if (space == std::string_view::npos) return false;
    rest.remove_prefix(space + 1);
  }
  return rest.starts_with("0 ") || rest == "0";
}

}  // namespace

bool can_restore_write_access() noexcept {
  static const bool supported = [] {
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    void* probe = ::mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (probe == MAP_FAILED) return false;
    const bool ok = ::madvise(probe, page, MADV_POPULATE_WRITE) == 0;
    ::munmap(probe, page);
    return ok;
  }();
  return supported;
}

std::uint64_t restore_write_access() noexcept {
  if (!can_restore_write_access()) return 0;
  constexpr std::uintptr_t kMaxMapping = std::uintptr_t{1} << 30;
  // /proc/PID/pagemap (Documentation/admin-guide/mm/pagemap.rst): bit 63 the
  // page is present, bit 56 it is mapped by this process alone. The shared
  // zero page (memory read, never written) is never exclusive, nor a page a
  // fork still shares, so neither is given a page of its own here.
  constexpr std::uint64_t kPresent = std::uint64_t{1} << 63, kExclusive = std::uint64_t{1} << 56;
  std::uint64_t done = 0;
  const int pagemap = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (pagemap < 0) return 0;
  try {
    static const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    std::ifstream in("/proc/self/maps");
    const std::string maps((std::istreambuf_iterator<char>(in)), {});
    std::vector<std::uint64_t> entries;
    for (std::size_t at = 0; at < maps.size();) {
      std::size_t eol = maps.find('\n', at);
      if (eol == std::string::npos) eol = maps.size();
      const std::string_view line(maps.data() + at, eol - at);
      at = eol + 1;
      std::uintptr_t start = 0, end = 0;
      if (!anonymous_writable(line, start, end) || end <= start || end - start > kMaxMapping) continue;
      const std::size_t pages = (end - start) / page;
      entries.assign(pages, 0);
      const std::size_t bytes = pages * sizeof(std::uint64_t);
      if (::pread(pagemap, entries.data(), bytes, static_cast<off_t>(start / page * sizeof(std::uint64_t))) !=
          static_cast<ssize_t>(bytes))
        continue;
      const auto wanted = [&](std::size_t k) {
        return (entries[k] & (kPresent | kExclusive)) == (kPresent | kExclusive);
      };
      for (std::size_t i = 0; i < pages;) {
        if (!wanted(i)) {
          ++i;
          continue;
        }
        std::size_t j = i;
        while (j < pages && wanted(j)) ++j;
        // A failure is a range another thread unmapped or changed since: left alone.
        if (::madvise(reinterpret_cast<void*>(start + i * page), (j - i) * page, MADV_POPULATE_WRITE) == 0)
          done += (j - i) * page;
        i = j;
      }
    }
  } catch (...) {
    // Out of memory: the pages stay write-protected, which costs faults, not correctness.
  }
  ::close(pagemap);
  return done;
}

namespace {

// The unified hierarchy's mount point: /sys/fs/cgroup (pure v2) or
// /sys/fs/cgroup/unified (hybrid); empty when none is mounted.
std::string cgroup2_mount() {
  std::ifstream mounts("/proc/self/mounts");
  for (std::string line; std::getline(mounts, line);) {
    std::istringstream fields(line);
    std::string device, dir, type;
    if (fields >> device >> dir >> type && type == "cgroup2") return dir;
  }
  return {};
}

}  // namespace

std::string cgroup_v2_memory_unavailable() {
  const std::string mount = cgroup2_mount();
  if (mount.empty()) return "no cgroup v2 hierarchy is mounted";
  std::ifstream self("/proc/self/cgroup");
  std::string own;
  for (std::string line; std::getline(self, line);)
    if (line.starts_with("0::")) own = line.substr(3);
  const std::string dir = own.empty() || own == "/" ? mount : mount + own;
  std::ifstream controllers(dir + "/cgroup.controllers");
  std::string word;
  bool memory = false;
  while (controllers >> word) memory = memory || word == "memory";
  if (!memory)
    return fmt::format("the memory controller is not enabled in cgroup v2 here ({} lists no \"memory\"; it may be "
                       "on a v1 hierarchy)",
                       dir + "/cgroup.controllers");
  if (::access(dir.c_str(), W_OK) != 0 || ::access((dir + "/cgroup.subtree_control").c_str(), W_OK) != 0)
    return fmt::format("{} is not delegated to this user (not writable)", dir);
  return {};
}

}  // namespace taskyon::sandbox
