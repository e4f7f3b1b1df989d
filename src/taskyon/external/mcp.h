// External-service tools served by an MCP server over stdio (Model Context
// Protocol, JSON-RPC 2.0, one message per line). The server is another
// program, owned and configured by the user: it runs with tycli's authority
// (installing it needs --trust, R6) and the host only forwards arguments and
// results, validating both against the tool's schemas.
//
// Each operation of the one-shot CLI starts the server, runs `initialize`,
// then the request, and stops it (SIGKILL to its process group); a timeout
// covers the whole session. The long-lived host keeps servers running
// instead (McpClients).
// The server gets a minimal environment (PATH, LANG) and no descriptors but
// its stdin, stdout and stderr; its stderr is kept, bounded, as logs.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "taskyon/base/error.h"
#include "taskyon/json/json.h"
#include "taskyon/sandbox/pool.h"

namespace taskyon::external {

struct McpServer {
  std::vector<std::string> command;  // program (looked up on PATH) and arguments
  std::string cwd;                   // absolute working directory; empty: the caller's
};

struct McpTool {
  std::string name;
  std::string description;
  json::Value input_schema;   // JSON Schema of the arguments
  json::Value output_schema;  // JSON Schema of structuredContent, or null
};

inline constexpr std::size_t kMaxMessageBytes = 8u << 20;  // one JSON-RPC line, bytes

// tools/list. Errors: Errc::bad_usage (the command cannot be started),
// Errc::invalid_json (the server broke the protocol), Errc::io (it exited or
// timed out), naming the command.
Result<std::vector<McpTool>> list_tools(const McpServer& server, std::chrono::milliseconds timeout);

// Progress of a running tools/call (issue 16 item 3): the request carries
// `_meta.progressToken` when on_progress is set, and each
// notifications/progress with that token is handed on, on the calling
// thread, before call_tool returns: progress, total (NaN when absent),
// message ("" when absent); at most sandbox::kMaxProgressFrames per call,
// messages cut to sandbox::kMaxProgressMessageBytes (at a UTF-8 boundary).
// Nothing of it is stored. Other notifications are skipped, as before.
struct CallEvents {
  std::function<void(double, double, std::string_view)> on_progress = {};
};

// tools/call. The outcome: ok with value {"content": [...], "structuredContent"?}
// (structuredContent checked against `output_schema` when it is an object);
// tool_error when the server reports isError or a JSON-RPC error; timeout;
// crashed when the server exits or closes stdout mid-call; protocol_error for
// malformed or oversized messages. Error only when the server cannot be started.
Result<sandbox::CallOutcome> call_tool(const McpServer& server, const std::string& tool, const json::Value& arguments,
                                       const json::Value& output_schema, std::chrono::milliseconds timeout,
                                       const CallEvents& events = {});

// The long-lived host's imported servers (issue 13 item 5): one running
// server and one MCP session per (command, cwd), started on first use and
// kept between calls; calls to one server are serialized. A server that died
// is restarted on the next call (fresh_sandbox set then); one that timed out,
// broke the protocol or was still working when `cancel` fired is stopped
// (SIGKILL to its group; `destroyed` names why) and restarted next time.
// Outcomes as call_tool's. The destructor stops every server.
//
// One McpClients serves the whole host, so one imported server process (and
// its one MCP session) is shared by every host session: H3's per-session
// state (retained sandboxes keyed by (revision, session)) does not extend
// into imported servers. Whatever state a server keeps between calls is seen
// by every client of the host; the server is the user's program, trusted
// with that at import (R6). Sessions' calls to one server wait for each
// other, each no longer than its own timeout: a call still queued at its
// deadline ends as `timeout`, one cancelled while queued as `cancelled`
// (neither touches the server, which keeps running the call ahead).
class McpClients {
 public:
  McpClients();
  ~McpClients();
  McpClients(const McpClients&) = delete;
  McpClients& operator=(const McpClients&) = delete;

  Result<sandbox::CallOutcome> call_tool(const McpServer& server, const std::string& tool, const json::Value& arguments,
                                         const json::Value& output_schema, std::chrono::milliseconds timeout,
                                         const sandbox::CancelToken& cancel, const CallEvents& events = {});

  std::size_t running() const;   // servers kept running now
  std::vector<int> pids() const;  // their process ids (tests, diagnostics)
  // Both answer at once, from any thread, even while a call holds its server
  // for its whole timeout: they read a pid each server publishes, never the session.

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace taskyon::external
