// Helpers shared by the tests: temporary directories and running tycli as a
// user would (a real process, real exit code, real output).
#pragma once

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "taskyon/json/json.h"

namespace taskyon::testing {

// The npm package `deno`'s platform binary, relative to the project root
// (scripts/setup.sh installs it).
#if defined(__aarch64__)
inline constexpr const char* kDenoPackageBinary = "node_modules/@deno/linux-arm64-glibc/deno";
#else
inline constexpr const char* kDenoPackageBinary = "node_modules/@deno/linux-x64-glibc/deno";
#endif

// A fresh directory under $TMPDIR, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }
  // Writes `text` to a file in the directory and returns its path.
  std::string write(const std::string& name, const std::string& text) const;

 private:
  std::filesystem::path path_;
};

struct CommandResult {
  int exit_code = -1;  // the process's exit status, or 128 + signal
  std::string out;
  std::string err;
};

// Runs tycli with `args` and a minimal environment: TASKYON_HOME=`home`,
// TMPDIR=`home`/tmp (so the sandboxes' working directories are made there),
// PATH from the test's own environment. Returns what it did.
CommandResult run_tycli(const std::vector<std::string>& args, const std::filesystem::path& home);

// The whole content of a file ("" when it cannot be read).
std::string read_file(const std::filesystem::path& path);

// The lines of `text` that parse as JSON (json::parse), in order: what one
// `tycli --json call` with several --args printed, a value per call.
std::vector<json::Value> json_lines(const std::string& text);

// Runs any program (found on PATH) the same way.
CommandResult run_command(const std::vector<std::string>& argv, const std::filesystem::path& home);

// Where run_command and spawn_command start a program: `cwd` (empty: the
// test's own); PATH is `path` (empty: the test's own) with `path_prefix`
// put before it (empty: none).
struct Launch {
  std::filesystem::path cwd = {};
  std::string path_prefix = {};
  std::string path = {};
};
CommandResult run_command(const std::vector<std::string>& argv, const std::filesystem::path& home,
                          const Launch& launch);
// Starts a program like spawn_tycli (stdout and stderr to the file `log`).
int spawn_command(const std::vector<std::string>& argv, const std::filesystem::path& home, const Launch& launch,
                  const std::string& log);

// Starts tycli the same way without waiting; stdout and stderr go to the file
// `log` (created), or to /dev/null when it is empty.
int spawn_tycli(const std::vector<std::string>& args, const std::filesystem::path& home, const std::string& log = "");

// The same, with stdout and stderr on the caller's descriptors `out` and
// `err` (e.g. pipe write ends; -1: /dev/null). The caller closes its copies.
int spawn_tycli_fds(const std::vector<std::string>& args, const std::filesystem::path& home, int out, int err);

// Waits for `pid` and returns its exit code (128 + signal when killed).
int wait_exit(int pid);

// Pids of live (not zombie) children of `parent`.
std::vector<int> children_of(int parent);

// Pids of live processes whose working directory is under `dir`
// (sandboxes work in a private directory under the host's TMPDIR).
std::vector<int> processes_in(const std::filesystem::path& dir);
// The working directories (under `dir`) of those processes: a sandbox's is its workdir.
std::set<std::string> working_directories_in(const std::filesystem::path& dir);

// A sandboxed-code manifest with one string parameter "input".
json::Value js_tool(const std::string& name, const std::string& code);


}  // namespace taskyon::testing
