// Internals of executePython shared by python.cc (detection, host mode, the
// call) and python_strict.cc (strict mode, the re-exec entry). Not a public
// API.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "taskyon/base/error.h"
#include "taskyon/hardening/mounts.h"
#include "taskyon/hardening/namespaces.h"
#include "taskyon/native/python.h"
#include "taskyon/sandbox/process.h"

namespace taskyon::native::python::detail {

// How a root host starts bubblewrap as the sandbox uid (python_strict.cc):
// the child first unshares a mount namespace of its own and builds `root`
// in it (mounts.h: every path bwrap binds, at the same path, under
// directories anyone may traverse — pyenv's interpreter lives under a 0700
// /root), then drops to `ids` (namespaces.h: no groups, uid/gid 65534). bwrap,
// started as 65534, maps the sandbox to 65534: it owns nothing of the host's.
struct Staged {
  hardening::mounts::RootPlan root;
  hardening::namespaces::Plan ids;
};

// Starts `argv` (argv[0] an absolute path) with exactly `env`, in `workdir`
// (empty: this process's), with pipes on 0/1/2 and no other descriptor, in
// its own session (killed as a group), with a parent-death signal. No kernel
// layers: host mode, detection, and bubblewrap (`no_new_privs`: set
// PR_SET_NO_NEW_PRIVS before exec; `staged`: see Staged; the child then
// starts in root's working directory instead of `workdir`). The host ends
// are non-blocking. Exit codes of a failed start: hardening::Step.
Result<std::unique_ptr<sandbox::Child>> spawn_plain(const std::vector<std::string>& argv,
                                                    const std::vector<std::string>& env, const std::string& workdir,
                                                    bool no_new_privs = false, const Staged* staged = nullptr);

// What a child wrote and how it ended.
struct Collected {
  std::string out, err;    // at most max_bytes each
  bool truncated = false;  // a stream passed max_bytes: the group was killed
  bool timed_out = false;  // the deadline passed: the group was killed
  int wait_status = 0;     // as waitpid fills it
};

// Writes `input` to the child's stdin (then closes it), reads stdout and
// stderr until the child exits, the deadline passes or a stream passes
// `max_bytes`; then reaps the child (SIGKILL to its group first).
Collected collect(sandbox::Child& child, std::string_view input, std::chrono::milliseconds timeout,
                  std::size_t max_bytes);

// A fresh private directory <TMPDIR or /tmp>/<prefix><pid>-<start>-XXXXXX
// (mode 0700; sandbox/workdir.h, so a later tycli sweeps it when this host is
// killed), removed with its contents on destruction.
class ScratchDir {
 public:
  static Result<ScratchDir> make(std::string_view prefix);
  ScratchDir(ScratchDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  ScratchDir(const ScratchDir&) = delete;
  ~ScratchDir();
  const std::string& path() const { return path_; }

 private:
  explicit ScratchDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// Starts the interpreter for a strict run (python_strict.cc): inside
// bubblewrap and the helper when bubblewrap is usable, else contained
// directly. `launcher` must outlive the child.
// `sys_path`: directories (the run's unpacked wheels) the interpreter may
// read and list, bound read-only into its root and put first on sys.path
// (python_argv).
Result<std::unique_ptr<sandbox::Child>> spawn_strict(const Interpreter& python, const std::string& helper,
                                                     const std::string& workdir, sandbox::Launcher& launcher,
                                                     const std::vector<std::string>& sys_path = {});

// One bubblewrap run in strict mode's minimal root (python_strict.cc):
// bwrap's namespaces, /usr and the top-level system directories read-only,
// the loader cache, private /tmp, /proc and a /dev of its own, plus `binds`.
struct BwrapRun {
  std::string bwrap{};                // absolute path
  std::vector<std::string> binds{};   // files or directories, bound read-only at the same paths
  std::vector<std::string> writable{};  // bound writable at the same paths (tests: a canary the sandbox sees)
  bool null_file = true;              // /dev/null: an empty 0666 file of the working directory; false: the host's, read-only
  std::vector<std::string> command{};  // run inside, in /tmp, as the sandbox's uid
  // A root host starts bwrap as the sandbox uid (65534; Staged), so inside
  // and outside the sandbox is 65534 and owns nothing of the host's. False
  // (tests: the control) leaves bwrap's mapping of the invoking user.
  bool sandbox_uid = true;
};

// Starts `run` with spawn_plain; `workdir`: an existing private directory
// (the null file and the staged root go there). Errc::io when they cannot be
// created; the runtime_files() errors of bwrap.
Result<std::unique_ptr<sandbox::Child>> spawn_bwrap(const BwrapRun& run, const std::string& workdir);

// What strict mode binds for `python` in bwrap's root: its executable, ELF
// loader and libraries, the trees and files of its sys.path.
Result<std::vector<std::string>> strict_binds(const Interpreter& python);

// The first executable regular file `name` in the absolute directories of
// `path_env` (a PATH value); empty when there is none.
std::string find_on_path(std::string_view path_env, std::string_view name);

// The first line of `text`.
std::string first_line(std::string_view text);

// The interpreter's command line in each mode (code on stdin). With
// `sys_path` (absolute directories): `-c kSysPathPrelude DIR…` instead of
// `-`, the DIRs on sys.path right after the standard library (after its
// last lib-dynload entry; at the end when there is none): a wheel never
// shadows a standard-library module (docs/modules.md, "Python wheels"),
// and in host mode it still comes before site-packages.
inline constexpr const char* kSysPathPrelude =
    "import sys; n = max([i + 1 for i, p in enumerate(sys.path) if p.endswith('/lib-dynload')], "
    "default=len(sys.path)); sys.path[n:n] = sys.argv[1:]; del sys.argv[1:]; del n, sys\n"
    "exec(compile(__import__('sys').stdin.buffer.read(), '<stdin>', 'exec'))\n";
std::vector<std::string> python_argv(const Interpreter& python, PythonIsolation isolation,
                                     const std::vector<std::string>& sys_path = {});

}  // namespace taskyon::native::python::detail
