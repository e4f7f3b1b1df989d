// Which JavaScript runtime a sandbox child runs, where it is found, and what
// exactly it is started with: argv, environment, Landlock file grants and
// resource limits (DESIGN §5, contracts N1, N2, N4). Node is the default (N1);
// Deno runs only when selected (RuntimeConfig::runtime, `tycli --js-runtime
// deno` or $TASKYON_HOME/config.json {"jsRuntime":"deno"}) and installed (N2).
//
// A Deno child never gets a Deno permission (N4): its argv is checked by
// check_deno_argv() before every spawn, and the entry module is the host's
// harness (src/guest/deno/harness.js) as a data: URL, which imports the tool's
// code as a data: module at run time. The kernel layers of
// src/taskyon/hardening are the same for both runtimes; docs/sandbox.md
// explains the Deno grants and what was measured.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taskyon/base/error.h"
#include "taskyon/hardening/contain.h"
#include "taskyon/sandbox/pool.h"

namespace taskyon::sandbox {

// "node" | "deno".
std::string_view js_runtime_name(JsRuntime runtime);
// nullopt for anything but exactly "node" or "deno".
std::optional<JsRuntime> parse_js_runtime(std::string_view name);

// The runtime a config selects, found.
struct RuntimeLocation {
  JsRuntime runtime = JsRuntime::node;
  std::string path;    // absolute path of the executable
  std::string source;  // where it was found: "configured", "PATH", "tycli's install", "project install"
};

// Finds the executable of config.runtime:
//   node: find_node(config.node_path) (sandbox.h);
//   deno: find_deno(config.deno_path).
// Errc::runtime_missing, saying how to install the runtime.
Result<RuntimeLocation> locate_runtime(const RuntimeConfig& config);

// The version `executable` (a runtime as locate_runtime found it) reports
// for itself: node's `--version`, e.g. "v22.12.0" (= process.version); deno's
// `--version` first line "deno 2.1.4 (…)" as "2.1.4" (= Deno.version.deno).
// Asked once per (runtime, path) in a process, result or error cached; 10 s
// limit, an environment of NO_COLOR=1 (and DENO_NO_UPDATE_CHECK=1 for Deno).
// Errc::runtime_missing when it cannot be run or prints no version.
// (runtime_version.cc)
Result<std::string> runtime_version(JsRuntime runtime, const std::string& executable);

// The Deno executable, searched in this order:
//   1. `configured` when not empty (a path: absolute or relative to the cwd);
//   2. the first `deno` on the host's PATH that is an ELF executable (the npm
//      package's JavaScript shim node_modules/.bin/deno is skipped);
//   3. the project-local install of the npm package `deno` (its platform
//      binary node_modules/@deno/linux-x64-glibc/deno), looked for next to the
//      running executable — <dir>/../node_modules/… and <dir>/../../node_modules/…
//      (tycli in build/, the tests in build/tests/) — then in the source tree
//      this binary was built from.
// Errc::runtime_missing with the install hint (`npm install` in the repository
// or scripts/setup.sh, or deno on PATH, or RuntimeConfig::deno_path).
Result<RuntimeLocation> find_deno(std::string_view configured);

// Off-heap room of a Deno child above the V8 heap cap: RLIMIT_DATA =
// heap_limit_mb + this, MiB. V8 in Deno reserves a 512 MiB code range as
// private writable memory at start (it aborts with "Failed to reserve virtual
// memory for CodeRange" under 544 MiB, measured with Deno 2.9.6); the rest,
// 256 MiB as for Node, is what a tool's ArrayBuffers and WebAssembly memories
// share.
inline constexpr std::uint64_t kDenoOffHeapMb = 512 + 256;

// The Deno child's argv: deno run, its flags, the harness as a data: URL,
// then the harness limits (the same three as the Node harness gets):
//   --no-prompt       a permission request fails at once (nothing is ever granted)
//   --no-config       no deno.json/deno.jsonc from the cwd or its parents
//   --no-lock         no deno.lock read or written
//   --no-remote       no http(s) module is fetched
//   --no-npm          no npm: specifier is resolved
//   --cached-only     nothing is downloaded, even into the cache
//   --deny-import     the import permission (granted by default for deno.land,
//                     jsr.io, esm.sh, … hosts) is denied too
//   --v8-flags=--max-old-space-size=<heap_limit_mb>   V8 heap cap, MiB
// Never -A, --allow-*, -P or --permission-set (check_deno_argv).
std::vector<std::string> deno_argv(const std::string& deno, const RuntimeConfig& config);

// Refuses a Deno argv that could grant a permission: any argument that is -A,
// starts with --allow- or --permission-set, is -P or starts with -P, or a
// short-flag cluster holding A or P (e.g. -qA); and one whose subcommand is
// not `run` (`deno eval` implies every permission). The refusal is
// Errc::internal: the host is never meant to build such an argv.
Result<void> check_deno_argv(const std::vector<std::string>& argv);

// The Deno child's environment, exactly:
//   DENO_DIR=<deno_dir>        per sandbox (Deno keeps caches and localStorage there)
//   DENO_NO_UPDATE_CHECK=1     no update check
//   DENO_NO_PACKAGE_JSON=1     no package.json discovery from the cwd
//   NO_COLOR=1                 no ANSI escapes in error messages and logs
// No HOME, PATH, XDG_*, proxies or anything else of the host's.
std::vector<std::string> deno_env(const std::string& deno_dir);

// The hardening policy of every Deno child: Landlock read+execute on the Deno
// executable and its ELF interpreter, read on its shared libraries and
// /etc/ld.so.cache; nothing else (no DENO_DIR, no /dev/urandom, no /proc: Deno
// starts without them, see docs/sandbox.md). Prepared once per (path, layers).
Result<std::shared_ptr<const hardening::Policy>> deno_policy(const std::string& deno,
                                                             const hardening::Layers& layers = {});

// RLIMIT_DATA = heap_limit_mb + kDenoOffHeapMb, RLIMIT_NOFILE 256.
hardening::rlimits::Limits deno_limits(const RuntimeConfig& config);

// Everything Sandbox::start needs to spawn a child of config.runtime in
// `workdir` (the sandbox's private directory).
struct Launch {
  std::shared_ptr<const hardening::Policy> policy;
  std::vector<std::string> argv;
  std::vector<std::string> env;
  hardening::rlimits::Limits limits;
};

// `executable` as locate_runtime(config) found it. For Deno the DENO_DIR is
// <workdir>/deno, which the child cannot create (Landlock grants no write) and
// which is removed with the workdir when the sandbox is destroyed. Errors:
// those of node_policy/deno_policy; Errc::internal when check_deno_argv refuses.
Result<Launch> prepare_launch(const std::string& executable, const RuntimeConfig& config, const std::string& workdir);

// $TASKYON_HOME/config.json (TASKYON_HOME as for the store: $TASKYON_HOME,
// else $XDG_DATA_HOME/taskyon, else $HOME/.local/share/taskyon). Empty when
// no home can be found.
std::string config_file_path();

// The JS runtime chosen by the config file {"jsRuntime":"node"|"deno",
// "denoPath":PATH, "nodePath":PATH, "sandboxMemoryBudgetMiB":N, "timeout":MS,
// "pythonIsolation":"strict"|"host"} (every key optional; each means what the
// tycli flag of the same meaning does, and the flag wins): nullopt when the
// file does not exist or says nothing. Errc::bad_usage for a key not in
// kConfigKeys (the message names it and the known ones), a timeout that is
// not a whole number of ms from 1 to kMaxConfigTimeoutMs, a pythonIsolation
// other than strict/host, an empty or non-string nodePath. Errc::bad_usage too for a budget that is not a whole
// number of MiB between 0 and 1048576.
// Errc::invalid_json when it is not strict JSON; Errc::bad_usage when
// jsRuntime is not "node"/"deno" or denoPath is not a string (`where` names the file).
// The largest memory budget a config file or flag may set, MiB (1 TiB).
inline constexpr std::uint64_t kMaxMemoryBudgetMib = 1u << 20;

inline constexpr std::array<std::string_view, 6> kConfigKeys = {
    "jsRuntime", "denoPath", "nodePath", "sandboxMemoryBudgetMiB", "timeout", "pythonIsolation"};
inline constexpr std::uint64_t kMaxConfigTimeoutMs = 24ull * 3600 * 1000;  // "timeout": at most a day

struct RuntimeChoice {
  std::optional<JsRuntime> runtime;
  std::string deno_path;
  std::string node_path;                // "nodePath": RuntimeConfig::node_path (no flag)
  std::optional<long long> timeout_ms;  // "timeout": per call, ms (= --timeout of call, run)
  std::string python_isolation;         // "pythonIsolation": "strict" | "host"; empty: not said
  std::optional<std::uint64_t> memory_budget_mib;  // "sandboxMemoryBudgetMiB": a whole number >= 0 (0: no budget)
};
Result<RuntimeChoice> read_runtime_choice(const std::string& config_file);

// Applies the selection rule of tycli: the --js-runtime flag (`flag`, empty
// when not given) wins over the config file, which wins over the default
// (node). The config file's "nodePath"/"denoPath" set config.node_path/deno_path
// when they are empty. Its "sandboxMemoryBudgetMiB" sets
// config.memory_budget_bytes (tycli's --memory-budget, applied after, wins).
// Errc::bad_usage for a flag other than node/deno; the errors of
// read_runtime_choice.
Result<void> select_runtime(RuntimeConfig& config, std::string_view flag, const std::string& config_file);

}  // namespace taskyon::sandbox
