#include "taskyon/invoke/invoke.h"

#include <fmt/format.h>

#include "taskyon/external/mcp.h"
#include "taskyon/native/native.h"

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

// Runs a trusted-native tool in the host: host authority, no sandbox (R6).
sandbox::CallOutcome run_native(const native::NativeFunction& fn, const json::Value& args) {
  const auto started = std::chrono::steady_clock::now();
  sandbox::CallOutcome out;
  try {
    auto value = fn.run(args);
    if (value) {
      out.value = std::move(*value);
    } else {
      out.status = sandbox::Status::tool_error;
      out.error = value.error().describe();
    }
  } catch (const std::exception& e) {
    out.status = sandbox::Status::tool_error;
    out.error = std::string("native function failed: ") + e.what();
  }
  out.duration = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  return out;
}

// Dispatches on the execution class (DESIGN §3).
Result<sandbox::CallOutcome> execute(const tasks::ResolvedTool& tool, const json::Value& args, sandbox::Pool& pool,
                                     const Options& options) {
  const auto& m = tool.manifest;
  switch (m.execution) {
    case registry::Execution::sandboxed_code: {
      sandbox::CallRequest request;
      request.tool = {tool.revision, m.code};
      request.args = args;
      request.timeout = options.timeout;
      request.mode = options.mode;
      return pool.call(request);
    }
    case registry::Execution::trusted_native: {
      const auto* fn = native::find(m.native);
      if (!fn) return fail(Errc::not_found, fmt::format("R5: this host has no native function \"{}\"", m.native), tool.revision);
      return run_native(*fn, args);
    }
    case registry::Execution::external_service: {
      if (m.service.contains("mcp")) {
        const auto& mcp = m.service["mcp"];
        return external::call_tool({mcp["command"].get<std::vector<std::string>>(), mcp.value("cwd", "")},
                                   mcp["tool"].get<std::string>(), args, mcp.value("outputSchema", json::Value()),
                                   options.timeout);
      }
      return fail(Errc::bad_usage,
                  fmt::format("tool \"{}\" is an HTTPS endpoint; this host cannot call those until the mediated "
                              "fetch capability exists",
                              m.name),
                  tool.revision);
    }
  }
  return fail(Errc::internal, "unhandled execution class");
}

}  // namespace

Result<Invocation> run_call(store::Store& store, sandbox::Pool& pool, const tasks::Task& call, const Options& options) {
  auto kind = tasks::content_kind(call.content);
  if (!kind) return std::unexpected(kind.error());
  if (*kind != "functionCall") return fail(Errc::invalid_task, "this task is not a function call", call.id);
  if (!call.tool_revision) return fail(Errc::invalid_task, "this function call is not pinned to a tool revision", call.id);

  auto tool = pinned_tool(store, call);
  if (!tool) return std::unexpected(tool.error());
  auto outcome = execute(*tool, call.content["functionCall"]["arguments"], pool, options);
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
