// Shared pieces of the tycli subcommands: global options, output, exit codes.
//
// Exit codes: 0 ok; 1 the tool ran and failed or was stopped (error, timeout,
// crash); 2 bad usage or bad input (the message says what and where);
// 3 the environment failed (database, files, missing runtime, our bug).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "taskyon/base/error.h"
#include "taskyon/json/json.h"
#include "taskyon/store/store.h"

namespace tycli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitToolFailed = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitEnvironment = 3;

struct Globals {
  std::string db_path;  // --db; empty: the default location
  bool json = false;    // --json: machine-readable output on stdout
  int exit_code = kExitOk;
};

// Exit code for an error: 2 for the caller's input, 3 for the environment.
int exit_code_for(const taskyon::Error& error);

// Prints an error (stderr for people; a {"error":{…}} object on stdout with --json)
// and returns its exit code.
int report(const Globals& g, const taskyon::Error& error);

// Opens the store at --db or the default location.
taskyon::Result<taskyon::store::Store> open_store(const Globals& g);

// Reads and strictly parses a JSON file; errors name the file.
taskyon::Result<taskyon::json::Value> read_json_file(const std::string& path);

// JSON given inline or as @FILE.
taskyon::Result<taskyon::json::Value> json_argument(const std::string& text, const std::string& option);

// Prints a JSON document on one line.
void print_json(const taskyon::json::Value& value);

// "sha256:0123456789ab" (the first 12 hex digits), for tables.
std::string short_id(const std::string& id);

void add_tool_commands(CLI::App& app, Globals& g);
void add_call_command(CLI::App& app, Globals& g);
void add_run_command(CLI::App& app, Globals& g);
void add_task_commands(CLI::App& app, Globals& g);
void add_chat_commands(CLI::App& app, Globals& g);
void add_policy_commands(CLI::App& app, Globals& g);
void add_sandbox_commands(CLI::App& app, Globals& g);

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
