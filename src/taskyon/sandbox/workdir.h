// The host-side work directories of sandboxes (and of executePython), and the
// sweep that removes the ones a killed host left behind (issue 18 item 4).
//
// A directory is <tmp>/<prefix><pid>-<start>-XXXXXX, mode 0700, with <prefix>
// "taskyon-sandbox-" (sandboxes) or "taskyon-python-" (native/python.h), where
// <tmp> is $TMPDIR (else /tmp), <pid> is the creating host process and <start>
// its start time in clock ticks since boot (/proc/<pid>/stat field 22), so a
// reused pid is not mistaken for the owner. The Sandbox removes its directory
// when it is destroyed; only a host that dies without running destructors
// (SIGKILL, a crash) leaves one behind.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <sys/types.h>

#include "taskyon/base/error.h"

namespace taskyon::sandbox {

inline constexpr const char* kWorkdirPrefix = "taskyon-sandbox-";
inline constexpr const char* kPythonWorkdirPrefix = "taskyon-python-";

// The directory sandboxes are made in: $TMPDIR when absolute, else /tmp.
std::string workdir_parent();

// Makes a fresh <prefix><pid>-<start>-XXXXXX directory as above. Errc::internal
// naming the path when mkdtemp fails.
Result<std::string> make_owned_directory(std::string_view prefix);

// make_owned_directory(kWorkdirPrefix): a sandbox's working directory.
Result<std::string> make_workdir();

// The start time of process `pid` in clock ticks since boot, or nullopt when
// there is no such process (or /proc is not mounted).
std::optional<std::uint64_t> process_start_time(pid_t pid);

struct Sweep {
  std::size_t removed = 0;  // directories removed
  std::size_t failed = 0;   // stale directories that could not be removed
};

// Removes every <parent>/<prefix><pid>-<start>-XXXXXX directory (both prefixes) owned by this
// user whose owner is gone: no process `pid`, or one with another start time.
// Entries of other users, symlinks, non-directories, names of another shape
// (including the older taskyon-sandbox-XXXXXX, whose owner is unknown) and
// directories of live hosts are left alone. Never fails: problems are counted.
Sweep sweep_stale_workdirs(const std::string& parent = workdir_parent());

}  // namespace taskyon::sandbox
