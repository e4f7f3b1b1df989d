// Running compiled calls: a function-call task runs on its pinned revision
// (T2) — never on whatever the name points to now — and its record is stored:
// the call task, and its tool-result task as a child. A pinned revision is
// looked up in the registry, else among the tool definitions of the call's
// ancestors (tree-defined tools never enter the registry, T6).
//
// A tool-result task: role "tool", parent the call's id, state Completed,
// Cancelled (sandbox::Status::cancelled: the caller or a signal stopped it) or
// Error, content {"toolResult": {"result": VALUE, "logs": [...]}} or
// {"toolResult": {"error": {"code": STATUS, "message": STRING}, "logs": [...]}}
// where STATUS is sandbox::status_name (e.g. "timeout"); both with
// "runtime": the runtime that produced it (runtime_record.h), when it ran in one.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "taskyon/base/error.h"
#include "taskyon/invoke/capabilities.h"
#include "taskyon/native/native.h"
#include "taskyon/sandbox/pool.h"
#include "taskyon/store/store.h"
#include "taskyon/tasks/scope.h"
#include "taskyon/tasks/task.h"

namespace taskyon::external {
class McpClients;  // external/mcp.h
}

namespace taskyon::invoke {

struct Options {
  std::chrono::milliseconds timeout{10000};
  sandbox::Mode mode = sandbox::Mode::retained;
  CapabilityOptions capabilities = {};  // how the call's capability requests are decided
  sandbox::CancelToken cancel = {};     // fire it (any thread) to abort the call (S5)
  // The session trusted-native functions run in: approvals (P2: executePython
  // asks before its first run) and Python's isolation. Owned by the caller for
  // the session's lifetime (one tycli process); null: nothing is approved.
  native::Session* natives = nullptr;
  // The long-lived host (host/host.h): the session whose retained sandbox
  // runs the call (H3; empty: the one-shot CLI's), and log/progress frames as
  // they arrive (sandboxed code only; sandbox::CallRequest::on_log/on_progress).
  std::string session = {};
  std::function<void(const sandbox::LogEntry&)> on_log = {};
  std::function<void(double, double, std::string_view)> on_progress = {};
  // Imported MCP servers kept running between calls (the long-lived host);
  // null: each call starts its server afresh (external::call_tool).
  external::McpClients* mcp_clients = nullptr;
  // sandbox::CallRequest::refill_later: the caller calls Pool::refill() once
  // its own work after the call is done (the long-lived host, after the call).
  bool refill_later = false;
};

struct Invocation {
  tasks::Task call;              // as stored (state of this run)
  tasks::Task result;            // the tool-result task, stored
  std::vector<tasks::Task> subtasks;  // compiled by createSubtasksResult, stored as children of the call
  tasks::ResolvedTool tool;      // the pinned revision that ran
  sandbox::CallOutcome outcome;  // how the sandbox call ended
  bool ok() const { return outcome.status == sandbox::Status::ok; }
};

// Runs a stored or freshly compiled function-call task and stores the call and
// its result. Errors: Errc::invalid_task (not a pinned function call),
// Errc::not_found / Errc::integrity (the pinned revision or the call's
// lineage),
// machinery errors from the pool or an MCP server that cannot be started.
// Execution classes: sandboxed code runs in the pool; trusted-native tools run
// in the host (host authority, reviewed code, R6); MCP services are forwarded
// to their server (external/mcp.h); an HTTPS JSON endpoint gets the arguments
// POSTed through the mediated fetch (needs a write grant on its origin).
// A tool that fails is not an Error: see Invocation::outcome.
// `resolved`, for a call this process compiled just now with this store's
// resolver, is the revision the compiler read and verified
// (tasks::Compiled::tool, moved in): the call uses it, when pinned to it,
// instead of reading the revision again (issue 19).
Result<Invocation> run_call(store::Store& store, sandbox::Pool& pool, const tasks::Task& call, const Options& options,
                            std::optional<tasks::ResolvedTool> resolved = std::nullopt);
// The same, for a caller that already holds the verified lineage of the
// call's parent (root first, parent last; Store::lineage or its own record of
// what it stored): it is lent to the call instead of loaded and verified
// again, and given back unchanged — empty after an error. Used when it does
// not end in the call's parent; then the lineage is loaded as above.
// `definitions`, when the caller keeps them, are its toolDefinition positions
// (tasks/scope.h); `resolved` as above.
Result<Invocation> run_call(store::Store& store, sandbox::Pool& pool, const tasks::Task& call, const Options& options,
                            std::vector<tasks::Task>& parent_lineage, const tasks::Definitions* definitions = nullptr,
                            std::optional<tasks::ResolvedTool> resolved = std::nullopt);

// Activates `revision_ref` under `name` (Store::activate) and then destroys,
// at once, the pool's sandboxes of that name's other revisions (S3).
Result<store::Binding> activate(store::Store& store, sandbox::Pool& pool, std::string_view name,
                                std::string_view revision_ref);

}  // namespace taskyon::invoke
