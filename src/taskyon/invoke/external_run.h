// A call whose code runs outside this host's sandboxes (issue 14: a browser
// page that uses `tycli serve`'s store; docs/serve.md "Runs"). It is
// compiled, pinned (T1) and stored here exactly as run_call stores a call —
// the call task, the subtasks its tool made, its tool-result task as a child
// — while the code runs in the page's own sandbox. Between start() and
// finish() the tool's capability requests are decided here by
// HostCapabilities, under the run's pinned revision (M3: never a revision a
// request names) and audited as a sandbox's are.
//
// What the store records of such a call is partly the page's word: the
// outcome (value or error, logs) and the runtime (runtime_record.h kind
// "browser", its version the page's own description). The pins, the
// arguments' validation and every capability decision are this host's.
//
// Not thread-safe: one caller at a time per run (the HTTP API holds a mutex
// per run). Runs share a Store (store.h: each thread that uses it has its
// own SQLite connection), which each run keeps alive until it ends.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "taskyon/base/error.h"
#include "taskyon/invoke/capabilities.h"
#include "taskyon/invoke/invoke.h"
#include "taskyon/json/json.h"
#include "taskyon/sandbox/pool.h"
#include "taskyon/store/store.h"
#include "taskyon/tasks/task.h"

namespace taskyon::invoke {

// What the page asks to run.
struct ExternalCall {
  std::string tool;                               // a name, full revision id or unique prefix (R4)
  json::Value arguments = json::Value::object();  // checked against the pinned revision's parameters
  std::optional<std::string> parent;              // a task id the store holds: compiled in its scope (T5)
  json::Value runtime;                            // its runtime record, from browser_runtime()
};

// The record of a browser runtime: {"kind":"browser","version":VERSION}.
// VERSION is the page's description of itself ("Chromium 156.0.8078.73"):
// 1..64 bytes of letters, digits, space and ._/()+- . Errc::bad_usage else.
Result<json::Value> browser_runtime(std::string_view version);

class ExternalRun {
 public:
  // Compiles `call` (tasks::compile: Errc::not_found, Errc::ambiguous,
  // Errc::invalid_arguments with the JSON pointer, Errc::invalid_task) on
  // `store`, which the run keeps until it ends. Only sandboxed code runs elsewhere: a
  // trusted-native or external-service tool is Errc::bad_usage (it runs in
  // this host: POST /v1/call).
  static Result<std::unique_ptr<ExternalRun>> start(std::shared_ptr<store::Store> store, const ExternalCall& call,
                                                    CapabilityOptions options);
  ~ExternalRun();
  ExternalRun(const ExternalRun&) = delete;
  ExternalRun& operator=(const ExternalRun&) = delete;

  const tasks::Task& call() const { return call_; }        // compiled, state Open, not stored yet
  const tasks::ResolvedTool& tool() const { return tool_; }  // the pinned revision the page must run

  // One capability request of the running tool: storage.*,
  // createSubtasksResult, resolveInvocation (capabilities.h for args and
  // answers). fetch is refused here (invalid_request): the page's strict mode
  // sends it to the egress proxy, which decides it with the same code.
  sandbox::CapabilityReply request(sandbox::CapabilityOp op, const json::Value& args);

  // Stores the call, the subtasks its tool made and the result of `outcome`
  // (settled as run_call settles it: a value the store cannot hash becomes
  // the call's error), and returns them. Once only: Errc::bad_usage after.
  Result<Invocation> finish(sandbox::CallOutcome outcome);

 private:
  ExternalRun(std::shared_ptr<store::Store> store, tasks::Task call, tasks::ResolvedTool tool,
              std::vector<tasks::Task> lineage, json::Value runtime, CapabilityOptions options);
  std::shared_ptr<store::Store> store_;
  tasks::Task call_;
  tasks::ResolvedTool tool_;
  json::Value runtime_;
  std::unique_ptr<HostCapabilities> capabilities_;
  bool finished_ = false;
};

}  // namespace taskyon::invoke
