#include "taskyon/sandbox/memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace taskyon::sandbox {

std::optional<std::uint64_t> resident_bytes(pid_t pid) {
  std::ifstream statm(fmt::format("/proc/{}/statm", pid));
  std::uint64_t size = 0, resident = 0;
  if (!(statm >> size >> resident)) return std::nullopt;
  return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

std::optional<std::uint64_t> proportional_bytes(pid_t pid) {
  std::ifstream rollup(fmt::format("/proc/{}/smaps_rollup", pid));
  for (std::string line; std::getline(rollup, line);) {
    if (!line.starts_with("Pss:")) continue;
    std::istringstream fields(line.substr(4));
    std::uint64_t kib = 0;
    if (fields >> kib) return kib * 1024;
  }
  return resident_bytes(pid);
}

namespace {

#ifndef MADV_POPULATE_WRITE
constexpr int MADV_POPULATE_WRITE = 23;  // Linux 5.14 (uapi/asm-generic/mman-common.h)
#endif

// This process's maps (proc(5)), read whole; empty when unreadable.
std::string own_maps() {
  std::string text;
  const int fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char chunk[16384];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(chunk, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

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

std::uint64_t restore_write_access() noexcept {
  static std::atomic<bool> unsupported{false};
  if (unsupported.load(std::memory_order_relaxed)) return 0;
  constexpr std::uintptr_t kMaxMapping = std::uintptr_t{1} << 30;
  std::uint64_t done = 0;
  try {
    static const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    const std::string maps = own_maps();
    std::vector<unsigned char> resident;
    for (std::size_t at = 0; at < maps.size();) {
      std::size_t eol = maps.find('\n', at);
      if (eol == std::string::npos) eol = maps.size();
      const std::string_view line(maps.data() + at, eol - at);
      at = eol + 1;
      std::uintptr_t start = 0, end = 0;
      if (!anonymous_writable(line, start, end) || end <= start || end - start > kMaxMapping) continue;
      const std::size_t pages = (end - start) / page;
      resident.assign(pages, 0);
      if (::mincore(reinterpret_cast<void*>(start), end - start, resident.data()) != 0) continue;  // unmapped since
      for (std::size_t i = 0; i < pages;) {
        if (!(resident[i] & 1)) {
          ++i;
          continue;
        }
        std::size_t j = i;
        while (j < pages && (resident[j] & 1)) ++j;
        // Errors are left alone: a range another thread unmapped or changed meanwhile.
        if (::madvise(reinterpret_cast<void*>(start + i * page), (j - i) * page, MADV_POPULATE_WRITE) == 0) {
          done += (j - i) * page;
        } else if (errno == EINVAL) {
          unsupported.store(true, std::memory_order_relaxed);  // a kernel before 5.14
          return done;
        }
        i = j;
      }
    }
  } catch (...) {
    // Out of memory: the pages stay write-protected, which costs faults, not correctness.
  }
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
