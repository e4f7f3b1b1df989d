#include "taskyon/sandbox/memory.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

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
