#include "taskyon/invoke/invoke.h"

#include <fmt/format.h>

namespace taskyon::invoke {
namespace {

json::Value logs_json(const sandbox::CallOutcome& outcome) {
  auto logs = json::Value::array();
  for (const auto& entry : outcome.logs) logs.push_back({{"level", entry.level}, {"text", entry.text}});
  return logs;
}

Result<tasks::Task> result_task(const tasks::Task& call, const sandbox::CallOutcome& outcome) {
  json::Value body = {{"logs", logs_json(outcome)}};
  if (outcome.status == sandbox::Status::ok) {
    body["result"] = outcome.value;
  } else {
    body["error"] = {{"code", sandbox::status_name(outcome.status)}, {"message", outcome.error}};
  }
  tasks::Task t;
  t.parent_id = call.id;
  t.role = tasks::Role::tool;
  t.content = {{"toolResult", std::move(body)}};
  t.state = outcome.status == sandbox::Status::ok ? tasks::State::completed : tasks::State::error;
  auto id = tasks::compute_id(t);
  if (!id) return std::unexpected(id.error());
  t.id = *id;
  return t;
}

Result<tasks::ResolvedTool> pinned_tool(store::Store& store, const tasks::Task& call) {
  const auto& pin = *call.tool_revision;
  auto registered = store.revision(pin);
  if (registered)
    return tasks::ResolvedTool{registered->id, call.settings_revision.value_or(registry::empty_settings_revision()),
                               std::move(registered->manifest)};
  if (registered.error().code != Errc::not_found || !call.parent_id) return std::unexpected(registered.error());
  auto lineage = store.lineage(*call.parent_id);
  if (!lineage) return std::unexpected(lineage.error());
  return tasks::pinned_in_lineage(pin, *lineage, store.resolver());
}

}  // namespace

Result<Invocation> run_call(store::Store& store, sandbox::Pool& pool, const tasks::Task& call, const Options& options) {
  auto kind = tasks::content_kind(call.content);
  if (!kind) return std::unexpected(kind.error());
  if (*kind != "functionCall") return fail(Errc::invalid_task, "this task is not a function call", call.id);
  if (!call.tool_revision) return fail(Errc::invalid_task, "this function call is not pinned to a tool revision", call.id);

  auto tool = pinned_tool(store, call);
  if (!tool) return std::unexpected(tool.error());
  const auto& manifest = tool->manifest;
  if (manifest.execution != registry::Execution::sandboxed_code)
    return fail(Errc::bad_usage,
                fmt::format("tool \"{}\" is a {} tool; this host runs sandboxed-code tools only", manifest.name,
                            registry::execution_name(manifest.execution)),
                tool->revision);

  sandbox::CallRequest request;
  request.tool = {tool->revision, manifest.code};
  request.args = call.content["functionCall"]["arguments"];
  request.timeout = options.timeout;
  request.mode = options.mode;
  auto outcome = pool.call(request);
  if (!outcome) return std::unexpected(outcome.error());

  Invocation inv{call, {}, std::move(*tool), std::move(*outcome)};
  inv.call.state = inv.ok() ? tasks::State::completed : tasks::State::error;
  auto result = result_task(inv.call, inv.outcome);
  if (!result) return std::unexpected(result.error());
  inv.result = std::move(*result);
  if (auto stored = store.put_tasks({inv.call, inv.result}); !stored) return std::unexpected(stored.error());
  return inv;
}

}  // namespace taskyon::invoke
