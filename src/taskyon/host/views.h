// The JSON shapes the CLI's --json prints and the HTTP API (/v1/…, docs/serve.md)
// returns: one builder per shape, used by both, so they cannot drift.
// Every builder is pure (no I/O) except tree_json, which reads children.
#pragma once

#include <vector>

#include "taskyon/base/error.h"
#include "taskyon/invoke/invoke.h"
#include "taskyon/json/json.h"
#include "taskyon/store/audit.h"
#include "taskyon/store/store.h"
#include "taskyon/tasks/task.h"

namespace taskyon::host {

// `tool list`: [{"name","active"(id|null),"revisions"}…]
json::Value tool_list_json(const std::vector<store::ToolSummary>& tools);

// `tool show`: {"revision","name","createdAt","active"(bool),"definition","trust"?{"by","at","reason"}}
json::Value tool_show_json(const store::RevisionRecord& revision, bool is_active);

// `tool install`, one manifest: {"name","revision","created","activated","active"(id|null)}
json::Value install_json(const store::InstallResult& result);

// `call`: {"task","resultTask","tool":{"name","revision"},"settingsRevision","status","logs",
// "sandbox":{"fresh","destroyed"},"durationMs","plantedBy", "result" | "error":{"code","message"}}
json::Value invocation_json(const invoke::Invocation& inv);

// `task tree`: tasks::task_json plus "children" (nested), read from the store.
Result<json::Value> tree_json(store::Store& store, const tasks::Task& root);
// One task as `tycli task show --json` and GET /v1/tasks/ID show it:
// tasks::task_json plus, for a tool result and a function call, "runtime":
// the record of the result (of a call's latest result; invoke/runtime_record.h),
// null when unknown. Reads the call's children.
Result<json::Value> task_view(store::Store& store, const tasks::Task& task);

// `audit`, one row: {"seq","at","revision","capability","target","access"(|null),"verdict","reason","task"(|null)}
json::Value audit_row_json(const store::AuditEntry& entry);

// {"error":{"code","message","where"?}}, as `--json` reports an Error.
json::Value error_json(const Error& error);

}  // namespace taskyon::host
