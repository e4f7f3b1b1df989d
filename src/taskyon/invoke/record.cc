#include "taskyon/invoke/record.h"

#include "taskyon/registry/manifest.h"

namespace taskyon::invoke {
namespace {

json::Value logs_json(const sandbox::CallOutcome& outcome) {
  auto logs = json::Value::array();
  for (const auto& entry : outcome.logs) logs.push_back({{"level", entry.level}, {"text", entry.text}});
  return logs;
}

Result<tasks::Task> result_task(const tasks::Task& call, const sandbox::CallOutcome& outcome,
                                const std::optional<json::Value>& runtime) {
  json::Value body = {{"logs", logs_json(outcome)}};
  if (runtime) body["runtime"] = *runtime;
  if (outcome.status == sandbox::Status::ok) {
    body["result"] = outcome.value;
  } else {
    body["error"] = {{"code", sandbox::status_name(outcome.status)}, {"message", outcome.error}};
  }
  tasks::Task t;
  t.parent_id = call.id;
  t.role = tasks::Role::tool;
  t.content = {{"toolResult", std::move(body)}};
  t.state = state_after(outcome.status);
  if (auto ok = tasks::check_content(t.role, t.content); !ok) return std::unexpected(ok.error());  // e.g. too deep to read back
  auto id = tasks::compute_id(t);
  if (!id) return std::unexpected(id.error());
  t.id = *id;
  return t;
}

}  // namespace

tasks::State state_after(sandbox::Status status) {
  if (status == sandbox::Status::ok) return tasks::State::completed;
  return status == sandbox::Status::cancelled ? tasks::State::cancelled : tasks::State::error;
}

Result<tasks::ResolvedTool> pinned_tool(store::Store& store, const tasks::Task& call,
                                        std::vector<tasks::Task>& lineage, bool have_lineage,
                                        const tasks::Definitions* definitions,
                                        std::optional<tasks::ResolvedTool> resolved) {
  if (call.parent_id && !have_lineage) {
    auto found = store.lineage(*call.parent_id);
    if (!found) return std::unexpected(found.error());
    lineage = std::move(*found);
  }
  const auto& pin = *call.tool_revision;
  const auto settings = call.settings_revision.value_or(registry::empty_settings_revision());
  if (resolved && resolved->revision == pin) return tasks::ResolvedTool{pin, settings, std::move(resolved->manifest)};
  auto registered = store.revision(pin);
  if (registered)
    return tasks::ResolvedTool{registered->id, settings, std::move(registered->manifest)};
  if (registered.error().code != Errc::not_found || !call.parent_id) return std::unexpected(registered.error());
  return tasks::pinned_in_lineage(pin, lineage, store.resolver(), have_lineage ? definitions : nullptr);
}

Result<void> store_invocation(store::Store& store, Invocation& inv, const std::optional<json::Value>& runtime) {
  auto& outcome = inv.outcome;
  // A result the store cannot hash (a value json::canonicalize refuses, from a
  // native, an MCP server or a page; the sandbox protocol refuses those at the
  // frame) becomes the call's error.
  if (outcome.status == sandbox::Status::ok) {
    if (auto canonical = json::canonicalize(outcome.value); !canonical) {
      outcome.status = sandbox::Status::tool_error;
      outcome.error = "the result cannot be stored: " + canonical.error().describe();
      outcome.value = json::Value();
    }
  }
  inv.call.state = state_after(outcome.status);
  auto result = result_task(inv.call, outcome, runtime);
  if (!result) {
    // The logs or the error text could not be hashed either: keep the error alone.
    outcome.logs.clear();
    outcome.status = outcome.status == sandbox::Status::ok ? sandbox::Status::tool_error : outcome.status;
    outcome.error = "the call's outcome cannot be stored: " + result.error().describe();
    inv.call.state = tasks::State::error;
    result = result_task(inv.call, outcome, runtime);
  }
  if (!result) return std::unexpected(result.error());
  inv.result = std::move(*result);
  std::vector<tasks::Task> batch{inv.call};
  batch.insert(batch.end(), inv.subtasks.begin(), inv.subtasks.end());
  batch.push_back(inv.result);
  return store.put_tasks(batch);
}

}  // namespace taskyon::invoke
