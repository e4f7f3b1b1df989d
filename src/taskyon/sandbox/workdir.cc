#include "taskyon/sandbox/workdir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <system_error>

#include <fmt/format.h>

namespace taskyon::sandbox {

namespace fs = std::filesystem;

namespace {

// `text` as a decimal number, all of it.
std::optional<std::uint64_t> number(std::string_view text) {
  std::uint64_t value = 0;
  if (text.empty()) return std::nullopt;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

// <pid>-<start> of a name <prefix><pid>-<start>-XXXXXX; nullopt for any other shape.
std::optional<std::pair<pid_t, std::uint64_t>> owner_of(std::string_view name) {
  bool known = false;
  for (std::string_view prefix : {std::string_view(kWorkdirPrefix), std::string_view(kPythonWorkdirPrefix)}) {
    if (!name.starts_with(prefix)) continue;
    name.remove_prefix(prefix.size());
    known = true;
    break;
  }
  if (!known) return std::nullopt;
  const auto dash1 = name.find('-');
  if (dash1 == std::string_view::npos) return std::nullopt;
  const auto dash2 = name.find('-', dash1 + 1);
  if (dash2 == std::string_view::npos || name.size() - dash2 - 1 != 6) return std::nullopt;
  auto pid = number(name.substr(0, dash1));
  auto start = number(name.substr(dash1 + 1, dash2 - dash1 - 1));
  if (!pid || !start || *pid == 0 || *pid > 0x3fffffff) return std::nullopt;
  return std::pair{static_cast<pid_t>(*pid), *start};
}

}  // namespace

std::string workdir_parent() {
  const char* env = std::getenv("TMPDIR");
  if (env && env[0] == '/') return env;
  return "/tmp";
}

std::optional<std::uint64_t> process_start_time(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string stat;
  if (!in || !std::getline(in, stat)) return std::nullopt;
  // "pid (comm) state ..." — comm may hold spaces and ')': fields start after the last ')'.
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::string_view rest = std::string_view(stat).substr(close + 1);
  // Field 3 (state) is the first after ')'; field 22 (starttime) is the 20th from there.
  for (int field = 3; field < 22; ++field) {
    const auto space = rest.find_first_not_of(' ');
    if (space == std::string_view::npos) return std::nullopt;
    rest.remove_prefix(space);
    rest.remove_prefix(std::min(rest.find(' '), rest.size()));
  }
  const auto begin = rest.find_first_not_of(' ');
  if (begin == std::string_view::npos) return std::nullopt;
  rest.remove_prefix(begin);
  return number(rest.substr(0, rest.find(' ')));
}

Result<std::string> make_workdir() { return make_owned_directory(kWorkdirPrefix); }

Result<std::string> make_owned_directory(std::string_view prefix) {
  static const std::uint64_t start = process_start_time(::getpid()).value_or(0);
  std::string pattern =
      (fs::path(workdir_parent()) / fmt::format("{}{}-{}-XXXXXX", prefix, ::getpid(), start)).string();
  if (::mkdtemp(pattern.data()) == nullptr)
    return fail(Errc::internal, fmt::format("cannot create the sandbox directory: {}", std::strerror(errno)), pattern);
  return pattern;
}

Sweep sweep_stale_workdirs(const std::string& parent) {
  Sweep sweep;
  DIR* dir = ::opendir(parent.c_str());
  if (!dir) return sweep;
  const uid_t me = ::geteuid();
  while (const dirent* entry = ::readdir(dir)) {
    auto owner = owner_of(entry->d_name);
    if (!owner) continue;
    struct stat st {};
    if (::fstatat(::dirfd(dir), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!S_ISDIR(st.st_mode) || st.st_uid != me) continue;
    const auto [pid, start] = *owner;
    if (auto now = process_start_time(pid); now && *now == start) continue;  // its host is alive
    if (!process_start_time(pid) && ::kill(pid, 0) == 0) continue;           // alive, no /proc to tell
    std::error_code ec;
    fs::remove_all(fs::path(parent) / entry->d_name, ec);  // never follows symlinks inside
    ++(ec ? sweep.failed : sweep.removed);
  }
  ::closedir(dir);
  return sweep;
}

}  // namespace taskyon::sandbox
