#include "taskyon/invoke/provider_call.h"

#include <fmt/format.h>

#include "taskyon/registry/manifest.h"
#include "taskyon/tasks/compiler.h"
#include "taskyon/tasks/scope.h"

namespace taskyon::invoke {
namespace {

using json::Value;

Result<ProviderCallPlan> refuse(store::Store& st, const std::string& parent, const Value& content,
                                const std::string& code, const std::string& message) {
  tasks::Task call;
  call.parent_id = parent;
  call.role = tasks::Role::assistant;
  call.content = content;
  call.state = tasks::State::error;
  auto id = tasks::compute_id(call);
  if (!id) return std::unexpected(id.error());
  call.id = *id;
  tasks::Task result;
  result.parent_id = call.id;
  result.role = tasks::Role::tool;
  result.content = {{"toolResult", {{"error", {{"code", code}, {"message", message}}}, {"logs", Value::array()}}}};
  result.state = tasks::State::error;
  auto rid = tasks::compute_id(result);
  if (!rid) return std::unexpected(rid.error());
  result.id = *rid;
  if (auto put = st.put_tasks({call, result}); !put) return std::unexpected(put.error());
  ProviderCallPlan plan;
  plan.refused_call = std::move(call);
  plan.refused_result = std::move(result);
  return plan;
}

}  // namespace

Result<ProviderCallPlan> plan_provider_call(store::Store& st, const tasks::ProviderCall& pc,
                                            const std::vector<tasks::Task>& lineage) {
  if (lineage.empty()) return fail(Errc::internal, "a provider call needs the node it answers");
  if (!registry::is_valid_tool_name(pc.name))
    return fail(Errc::bad_usage,
                fmt::format("the model called \"{}\", which is not a tool name (^[a-zA-Z0-9_-]{{1,64}}$)", pc.name),
                "/name");
  const std::string& parent = lineage.back().id;
  const Value content = {
      {"functionCall", {{"name", pc.name}, {"arguments", pc.arguments.value_or(Value::object())}, {"callId", pc.id}}}};
  if (!pc.arguments)
    return refuse(st, parent, content, "invalid_arguments",
                  pc.arguments_error + "; send the arguments as a JSON object and call again");
  // By name only, as the model sees tools: never a revision id or prefix.
  auto seen = tasks::resolve_in_scope(pc.name, lineage, st.resolver());
  if (!seen) {
    if (seen.error().code != Errc::not_found) return std::unexpected(seen.error());
    std::string names;
    if (auto active = st.active_names())
      if (auto visible = tasks::visible_tools(lineage, st.resolver(), *active))
        for (const auto& t : *visible) names += (names.empty() ? "" : ", ") + t.tool.manifest.name;
    return refuse(st, parent, content, "not_found",
                  fmt::format("there is no tool \"{}\" here; the tools you can call are: {}", pc.name,
                              names.empty() ? "none" : names));
  }
  const tasks::Draft draft{tasks::Role::assistant, content, {}, std::nullopt};
  auto compiled = tasks::compile(draft, {lineage, st.resolver()});
  if (!compiled) {
    if (compiled.error().code != Errc::invalid_arguments) return std::unexpected(compiled.error());
    return refuse(st, parent, content, "invalid_arguments",
                  fmt::format("tool \"{}\": {}; fix them and call again",
                              pc.name, compiled.error().message));
  }
  ProviderCallPlan plan;
  plan.run = std::move(compiled->task);
  return plan;
}

Result<Value> provider_answer_json(tasks::Provider format, const tasks::ProviderCall& pc, const tasks::Task& call,
                                   const tasks::Task& result) {
  auto answer = tasks::tool_answer(format, pc.id, result.content);
  if (!answer) return std::unexpected(answer.error());
  return Value{{"id", result.id},
               {"call", call.id},
               {"ok", !result.content["toolResult"].contains("error")},
               {"format", tasks::provider_name(format)},
               {"message", std::move(*answer)}};
}

}  // namespace taskyon::invoke
