// executePython: the native Python tool (DESIGN §5; contracts P1, P2, P3;
// docs/sandbox.md, "Native Python").
//
// Native id kPythonId, arguments {"code": string} (at most kMaxCodeBytes of
// UTF-8). The code is the whole program: it reaches the interpreter on its
// stdin (`python3 -I … -`), never in argv. Result, whenever the interpreter
// ran to its end (any exit status, an uncaught exception included):
//   {"stdout": string, "stderr": string, "exitCode": int, "truncated": bool,
//    "isolation": "host" | "strict"}
// stdout/stderr are UTF-8 (invalid bytes become U+FFFD), each at most
// kMaxOutputBytes; exitCode is 128+N when the process was killed by signal N;
// truncated: a stream passed its limit, so the process group was killed.
// Tool errors (Error values): not approved in this session (P2), timed out
// (the process group is killed), code too large or not a string, the
// interpreter could not be started, strict isolation asked for on a machine
// that lacks a layer it depends on (Errc::runtime_missing naming the layer:
// strict never runs with fewer layers).
//
// Isolation: strict is the default (the sandbox's kernel layers, inside
// bubblewrap where it is usable). Host (the user's own OS permissions) is an
// explicit choice, announced by a warning line through the Session.
//
// P1: offered only when detect_python() finds an interpreter: the first
// `python3` on PATH that answers `python3 -I -S -c …` (its version, its
// sys.executable, its sys.path) and whose sys.executable resolves to a real
// ELF file. A pyenv shim is thus resolved to the interpreter it runs; runs
// exec that interpreter directly, never the shim.
// P3: nothing here loads Pyodide; the CLI has no WebAssembly Python.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "taskyon/base/error.h"
#include "taskyon/hardening/probe.h"
#include "taskyon/json/json.h"
#include "taskyon/native/native.h"

namespace taskyon::native::python {

inline constexpr std::string_view kPythonId = "taskyon.executePython";
inline constexpr std::size_t kMaxCodeBytes = 1u << 20;     // the code argument, bytes
inline constexpr std::size_t kMaxOutputBytes = 1u << 20;   // stdout and stderr, each, bytes
inline constexpr std::uint64_t kStrictDataBytes = 1ull << 30;  // RLIMIT_DATA in strict mode, bytes

// What the user is asked before the first run of a session (P2).
std::string approval_question(PythonIsolation isolation);
// How to approve without a terminal.
inline constexpr std::string_view kHowToApprove =
    "pass --approve-python to tycli call / tycli run, or run tycli on a terminal to be asked";

struct Interpreter {
  std::string command;            // the PATH entry that answered, e.g. /root/.pyenv/shims/python3
  std::string executable;         // real path of the ELF interpreter (sys.executable, resolved)
  std::string version;            // e.g. "3.11.7"
  std::vector<std::string> path;  // sys.path under -I -S: the stdlib directories that exist
};

// Looks for `python3` on `path_env` (a PATH value) and asks it who it is, with
// this process's environment (a pyenv shim needs it) and a 10 s limit.
// Errc::runtime_missing, saying why, when there is none that answers.
Result<Interpreter> detect_python(std::string_view path_env);

// detect_python(getenv("PATH")), once per process.
const Result<Interpreter>& interpreter();

// bubblewrap for strict mode: `bwrap` on PATH that can build a minimal root
// here (probed once per process by running it). `path` empty when unusable;
// `why` says why.
struct Bubblewrap {
  std::string path;
  std::string why;
};
const Bubblewrap& bubblewrap();

// What strict isolation depends on, in `support` (a machine's layers) with or
// without a usable bubblewrap: Landlock (ABI >= 1: file access), seccomp
// filters, unprivileged user namespaces (bwrap needs them; without bwrap our
// own namespaces do), and without bubblewrap also Landlock ABI >= 6 (signal
// scope: inside bwrap a PID namespace hides other processes instead).
// Errc::runtime_missing naming the first missing layer and how to proceed.
Result<void> strict_requirements(const hardening::Support& support, bool bubblewrap_usable);

// strict_requirements() of this machine (hardening::support(), bubblewrap()),
// once per process.
const Result<void>& strict_available();

// Runs `code` under `isolation` with `timeout` (docs: the result above).
// `wheels` (null or absent: none): the revision's pure-Python wheels,
// {NAME: {"main": PATH, "files": {PATH: TEXT}}} (native::Context::modules):
// each is unpacked into its own directory of a private scratch directory of
// the run (0755 directories, 0644 files; not the working directory, which
// the sandbox's own root covers), which is put first on sys.path
// in NAME order; strict mode binds that directory read-only into the
// sandbox's root and grants it to Landlock for reading, nothing more. The
// program then runs as `python3 … -c PRELUDE DIR…` (the prelude puts the
// DIRs on sys.path, empties sys.argv after -c, and executes stdin as
// "<stdin>") instead of `python3 … -`. Errc::io when a file cannot be written.
Result<json::Value> execute(const Interpreter& python, std::string_view code, PythonIsolation isolation,
                            std::chrono::milliseconds timeout, const std::string& helper,
                            const json::Value* wheels = nullptr);

// The session tycli's flags ask for: --approve-python (`approve_python`),
// --python-isolation host|strict (`isolation`; "host" is host, anything else
// — the flag not given included — strict), a terminal prompt when stdin and
// stderr are terminals, and warnings as `tycli: warning: …` lines on stderr.

Session::Settings session_settings(bool approve_python, std::string_view isolation);

// The warning line of a host-mode run (once per session), saying that the
// code has the user's authority, and when `preapproved` that --approve-python
// approved it without a prompt.
std::string host_mode_warning(bool preapproved);

// The native function (run: strict's requirements, approval, the host-mode
// warning, then execute()).
NativeFunction function();

// For `tycli sandbox explain`: {"interpreter": {...} | null, "why": …,
// "bubblewrap": {"path", "usable", "why"}, "strict": what strict mode is here,
// "strictAvailable": bool, "strictMissing": why not (when not), "host": …,
// "default": "strict"}.
json::Value explain();

// tycli's internal re-exec entry, run inside bubblewrap in strict mode:
//   tycli __python-contain --data-bytes N [--tree DIR]... -- PYTHON ARG...
// Prepares the kernel layers for PYTHON (Landlock read on PYTHON, its
// libraries and each DIR tree), forks, and the child runs hardening::contain()
// and execs PYTHON; the helper waits and exits with the child's status
// (128+N for signal N). Returns the exit code for main().
inline constexpr std::string_view kContainEntry = "__python-contain";
int contain_main(int argc, char** argv);

}  // namespace taskyon::native::python
