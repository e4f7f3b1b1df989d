// Shared pieces of the tycli subcommands: global options, output, exit codes.
//
// Exit codes: 0 ok; 1 the tool ran and failed or was stopped (error, timeout,
// crash); 2 bad usage or bad input (the message says what and where);
// 3 the environment failed (database, files, missing runtime, our bug);
// 128 + N: `call` or `run` was interrupted by signal N (129 SIGHUP, 130 SIGINT,
// 143 SIGTERM) and ended cleanly: the running call stored as Cancelled, every
// sandbox destroyed ("interrupted" in `sandbox log`), no work directory left.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "taskyon/base/error.h"
#include "taskyon/invoke/capabilities.h"
#include "taskyon/sandbox/pool.h"
#include "taskyon/json/json.h"
#include "taskyon/store/store.h"

namespace tycli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitToolFailed = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitEnvironment = 3;

// What `tycli --version` prints (and the man page's footer).
inline constexpr const char* kVersion = "tycli 0.1.0";

struct Globals {
  std::string db_path;  // --db; empty: the default location
  bool json = false;    // --json: machine-readable output on stdout
  bool full_ids = false;  // --full-ids: whole ids in tables (--json always prints them whole)
  // Capability decisions of `call` and `run` (host.cc):
  bool ask = false;                            // --ask: put a missing fetch grant to the user on a TTY
  std::vector<std::string> fetch_allow_cidr;   // --fetch-allow-cidr: TEST-ONLY address admission
  std::string fetch_ca_file;                   // --fetch-ca-file: TEST-ONLY trust anchors
  int exit_code = kExitOk;
};

// Exit code for an error: 2 for the caller's input, 3 for the environment.
int exit_code_for(const taskyon::Error& error);

// Prints an error (stderr for people, in plain words: suggest.h; a {"error":{…}} object on stdout with --json)
// and returns its exit code.
int report(const Globals& g, const taskyon::Error& error);

// Opens the store at --db or the default location; StoreUse::read for
// commands that never write (they work on a read-only store, and refuse one
// that does not exist with Errc::not_found naming the path and the command
// that creates one); StoreUse::write creates it.
enum class StoreUse { write, read };
taskyon::Result<taskyon::store::Store> open_store(const Globals& g, StoreUse use = StoreUse::write);

// Limits of files named on the command line (docs/limits.md). A file must be a
// regular file (or `-`, stdin, where allowed) no larger than its limit; it is
// stat-ed before it is read and a stream is read with the same cap, so
// /dev/zero or a huge file is refused without reading it. Errc::bad_usage
// naming the file and the limit.
inline constexpr std::size_t kMaxManifestFileBytes = 4u << 20;      // tool install FILE
inline constexpr std::size_t kMaxArgumentsFileBytes = 4u << 20;     // --args @FILE (= registry::kMaxArgumentsBytes)
inline constexpr std::size_t kMaxConversationFileBytes = 16u << 20; // run FILE
inline constexpr std::size_t kMaxSettingsFileBytes = 1u << 20;      // settings set NAME FILE
inline constexpr std::size_t kMaxSecretInputBytes = 64u << 10;      // secret set … < stdin (the store keeps at most 8 KiB)
inline constexpr std::size_t kMaxJsonFileBytes = 4u << 20;          // any other JSON file

// Reads a whole file (or stdin for "-" when `stdin_ok`) of at most `limit` bytes.
taskyon::Result<std::string> read_bounded_file(const std::string& path, std::size_t limit, std::string_view what,
                                               bool stdin_ok = false);
// Reads stdin up to `limit` bytes; more is refused (Errc::bad_usage). Stdin is
// read at most once per tycli process (one command): a second read, e.g. two
// `-` arguments, is Errc::bad_usage naming `what`, before anything is read.
taskyon::Result<std::string> read_bounded_stdin(std::size_t limit, std::string_view what);

// Reads and strictly parses a JSON file of at most `limit` bytes ("-": stdin,
// when `stdin_ok`); errors name the file ("stdin" for "-").
taskyon::Result<taskyon::json::Value> read_json_file(const std::string& path, std::size_t limit = kMaxJsonFileBytes,
                                                     std::string_view what = "a JSON file", bool stdin_ok = false);

// A CLI11 check for FILE arguments that also take "-" (stdin): an existing file or "-".
const CLI::Validator& existing_file_or_stdin();

// JSON given inline or as @FILE (at most `limit` bytes); @- reads stdin.
taskyon::Result<taskyon::json::Value> json_argument(const std::string& text, const std::string& option,
                                                    std::size_t limit = kMaxJsonFileBytes);

// Prints a JSON document on one line.
void print_json(const taskyon::json::Value& value);

// "sha256:0123456789ab" (the first 12 hex digits), for tables.
std::string short_id(const std::string& id);
// An id in a table: short_id, or the whole id with --full-ids. Every command
// taking an id accepts the short form as a prefix (an ambiguous one is refused
// listing the candidates: Errc::ambiguous).
std::string table_id(const Globals& g, const std::string& id);

// Says on stderr, on every use, that a TEST-ONLY flag weakens the fetch
// policy: "tycli: warning: --fetch-allow-cidr 127.0.0.1/32 is for tests only: …".
void warn_test_only(std::string_view flag, std::string_view value);

// What $TASKYON_HOME/config.json says for `call` and `run` under their flags
// (sandbox/runtime.h read_runtime_choice): its "timeout" (ms) replaces
// `timeout_ms` unless --timeout was given (`timeout_given`), its
// "pythonIsolation" fills an empty `python_isolation`. The errors of
// read_runtime_choice.
taskyon::Result<void> apply_config_file(long long& timeout_ms, bool timeout_given, std::string& python_isolation);

// The capability options of a call from the global options: the test-only
// network admission and, with --ask on a terminal, a prompt that records a
// grant. Errc::bad_usage for a bad CIDR or an unreadable CA file.
taskyon::Result<taskyon::invoke::CapabilityOptions> capability_options(const Globals& g);

// The sandbox pool of one command. Every destruction (the pool's own at the
// end included) is appended to the store's sandbox log (`tycli sandbox log`).
// --memory-budget MIB (cmd_sandbox.cc): the pool's memory budget across live
// sandboxes; `mib` stays -1 when the option is not given.
void add_memory_budget_option(CLI::App& command, long long& mib);
// Sets config.memory_budget_bytes from `mib` unless it is -1 (the config file
// or the default stand); Errc::bad_usage outside 0..kMaxMemoryBudgetMib.
taskyon::Result<void> apply_memory_budget(taskyon::sandbox::RuntimeConfig& config, long long mib);
// --prestart N (cmd_sandbox.cc) of the long-lived hosts (tycli serve, tycli
// mcp): hardened, not yet loaded sandboxes kept ready for a revision's first
// call (sandbox::RuntimeConfig::prestart). apply_prestart sets it;
// Errc::bad_usage outside 0..kMaxPrestart.
inline constexpr long long kMaxPrestart = 16;
void add_prestart_option(CLI::App& command, long long& count);
taskyon::Result<void> apply_prestart(taskyon::sandbox::RuntimeConfig& config, long long count);

// The runtime of a command's pool: --js-runtime (empty: "jsRuntime" in the
// config file, else node) and --memory-budget MIB (-1: the config file or
// the default). Errors: select_runtime's and apply_memory_budget's.
taskyon::Result<taskyon::sandbox::RuntimeConfig> runtime_config(const std::string& js_runtime,
                                                                long long memory_budget_mib);

class LoggedPool {
 public:
  LoggedPool(taskyon::store::Store& store, taskyon::sandbox::RuntimeConfig config);
  ~LoggedPool();  // destroys the pool and its sandboxes, then writes what is left of the log
  LoggedPool(const LoggedPool&) = delete;
  LoggedPool& operator=(const LoggedPool&) = delete;

  taskyon::sandbox::Pool& pool() { return *pool_; }
  void flush();  // appends the destructions recorded since the last flush

 private:
  struct Pending;
  taskyon::store::Store& store_;
  std::shared_ptr<Pending> pending_;
  std::unique_ptr<taskyon::sandbox::Pool> pool_;
};

// After `signal` interrupted a command that hosts `pool` (signals.h): says so
// on stderr and returns Interruption::exit_code(signal).
int interrupted(int signal, const taskyon::sandbox::Pool& pool);

// Removes the sandbox work directories of tycli processes that are gone
// (sandbox/workdir.h) and says how many on stderr, when there were any.
void sweep_stale_workdirs();

void add_tool_commands(CLI::App& app, Globals& g);
void add_call_command(CLI::App& app, Globals& g);
void add_run_command(CLI::App& app, Globals& g);
void add_task_commands(CLI::App& app, Globals& g);
void add_chat_commands(CLI::App& app, Globals& g);
void add_policy_commands(CLI::App& app, Globals& g);
void add_sandbox_commands(CLI::App& app, Globals& g);
// Grants, secrets, audit, settings and popups (cmd_grant.cc, cmd_secret.cc,
// cmd_audit.cc, cmd_settings.cc, cmd_popup.cc).
void add_grant_commands(CLI::App& app, Globals& g);
void add_secret_commands(CLI::App& app, Globals& g);
void add_module_commands(CLI::App& app, Globals& g);
void add_audit_command(CLI::App& app, Globals& g);
void add_settings_commands(CLI::App& app, Globals& g);
void add_popup_commands(CLI::App& app, Globals& g);
// `tycli sandbox log` under the given `sandbox` subcommand (cmd_audit.cc).
void add_sandbox_log_command(CLI::App& sandbox, Globals& g);
// Who records a grant, secret or trust: the OS user running tycli.
std::string os_user_name();
void add_diagnostics_commands(CLI::App& app, Globals& g);
// `tycli mcp`: the long-lived host as an MCP server on stdio (cmd_mcp.cc, docs/mcp.md).
void add_mcp_command(CLI::App& app, Globals& g);
// `tycli serve` (cmd_serve.cc): the HTTP host, docs/serve.md.
void add_serve_command(CLI::App& app, Globals& g);

}  // namespace tycli

namespace tycli {

// Runs a subcommand body; an exception (which only our bugs or exhausted
// memory raise) is reported as Errc::internal instead of crossing main().
template <typename F>
int guarded(const Globals& g, F&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    return report(g, taskyon::Error{taskyon::Errc::internal, std::string("unexpected failure: ") + e.what(), {}});
  }
}

}  // namespace tycli
