// A model's tool call, as its provider sent it (tasks/provider.h), made into a
// call task under the node the model answered: the part `tycli chat call` and
// `tycli serve`'s POST /v1/chat/call share (docs/tasks.md, docs/serve.md).
#pragma once

#include <optional>
#include <vector>

#include "taskyon/base/error.h"
#include "taskyon/json/json.h"
#include "taskyon/store/store.h"
#include "taskyon/tasks/provider.h"
#include "taskyon/tasks/task.h"

namespace taskyon::invoke {

struct ProviderCallPlan {
  // A compiled, pinned call (state Open, functionCall.callId the provider's
  // id) to run with run_call …
  std::optional<tasks::Task> run;
  // … or, when the model got it wrong (arguments not JSON or not an object,
  // no such tool visible, arguments against the tool's parameters), the call
  // (state Error, not pinned) and a result {"error": {"code":
  // "invalid_arguments"|"not_found", "message"}} the model reads, both
  // already stored.
  std::optional<tasks::Task> refused_call;
  std::optional<tasks::Task> refused_result;
};

// `lineage`: the answered node's lineage, root first (Store::lineage), not
// empty. Errors (nothing stored): Errc::bad_usage for a name that is not a
// tool name; store and integrity errors.
Result<ProviderCallPlan> plan_provider_call(store::Store& store, const tasks::ProviderCall& call,
                                            const std::vector<tasks::Task>& lineage);

// {"id": RESULT TASK, "call": CALL TASK, "ok": the tool returned a value,
// "format": provider_name, "message": the provider's role: tool answer}.
// Errc::bad_usage for Provider::mcp (tool_answer).
Result<json::Value> provider_answer_json(tasks::Provider format, const tasks::ProviderCall& call,
                                         const tasks::Task& call_task, const tasks::Task& result);

}  // namespace taskyon::invoke
