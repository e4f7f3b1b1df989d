// A call's record, shared by run_call (invoke.h) and ExternalRun
// (external_run.h): the tool a stored call is pinned to, and the state and
// tool-result task its outcome is stored as (invoke.h describes the shapes).
#pragma once

#include <optional>
#include <vector>

#include "taskyon/base/error.h"
#include "taskyon/invoke/invoke.h"
#include "taskyon/json/json.h"
#include "taskyon/sandbox/pool.h"
#include "taskyon/store/store.h"
#include "taskyon/tasks/scope.h"
#include "taskyon/tasks/task.h"

namespace taskyon::invoke {

// Completed for Status::ok; Cancelled when the caller stopped the call (a
// CancelToken, a signal); Error for any other failure.
tasks::State state_after(sandbox::Status status);

// The revision `call` is pinned to: the registry's, else a tool definition
// in its ancestors (T6). `lineage` receives the lineage of the call's parent
// (root first) unless `have_lineage` says it holds it already, and then
// `definitions` may hold its definitions' positions (tasks/scope.h). A
// `resolved` tool (run_call's) with the pinned id is taken as it is: an id
// names one manifest, wherever it was read. Errors: Errc::not_found,
// Errc::integrity (R2), the store's.
Result<tasks::ResolvedTool> pinned_tool(store::Store& store, const tasks::Task& call,
                                        std::vector<tasks::Task>& lineage, bool have_lineage,
                                        const tasks::Definitions* definitions = nullptr,
                                        std::optional<tasks::ResolvedTool> resolved = std::nullopt);

// Stores `inv` (its call, subtasks and the result of its outcome) as one
// batch, after making the outcome storable (issue 12 item 6, nothing
// vanishes): a value the store cannot hash becomes the call's error; when the
// logs or the error text cannot be hashed either, the error is kept alone.
// Sets inv.call.state and inv.result. Errors: an outcome even that cannot
// hash, the store's.
Result<void> store_invocation(store::Store& store, Invocation& inv, const std::optional<json::Value>& runtime);

}  // namespace taskyon::invoke
