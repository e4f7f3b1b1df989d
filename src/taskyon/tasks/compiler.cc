#include "taskyon/tasks/compiler.h"

#include <fmt/format.h>

#include "taskyon/registry/schema.h"

namespace taskyon::tasks {

namespace {

// A tool name resolves in the lexical scope; a revision id or prefix (not a
// valid tool name) only in the registry.
Result<VisibleTool> resolve_call_target(const std::string& ref, const Scope& scope) {
  if (registry::is_valid_tool_name(ref)) return resolve_in_scope(ref, scope.lineage, scope.registry, scope.definitions);
  auto tool = scope.registry(ref);
  if (!tool) return std::unexpected(tool.error());
  return VisibleTool{std::move(*tool), std::nullopt};
}

}  // namespace

Draft function_call(std::string tool, json::Value arguments) {
  return {Role::assistant, {{"functionCall", {{"name", std::move(tool)}, {"arguments", std::move(arguments)}}}}, {}, {}};
}

Result<Draft> parse_draft(const json::Value& e, const std::string& at, bool allow_parent) {
  if (!e.is_object()) return fail(Errc::invalid_task, "a draft must be an object {role, content, labels?}", at);
  for (const auto& [key, _] : e.items())
    if (key != "role" && key != "content" && key != "labels" && (key != "parent" || !allow_parent))
      return fail(Errc::invalid_task, fmt::format("unknown field \"{}\"", key), at + "/" + key);
  if (!e.contains("role") || !e["role"].is_string())
    return fail(Errc::invalid_task, "role must be system, user, assistant or tool", at + "/role");
  auto role = parse_role(e["role"].get<std::string>());
  if (!role) return fail(Errc::invalid_task, role.error().message, at + "/role");
  Draft draft;
  draft.role = *role;
  draft.content = e.value("content", json::Value());
  if (auto shape = check_content(*role, draft.content); !shape)
    return fail(Errc::invalid_task, shape.error().message, at + shape.error().where);
  if (draft.content.contains("toolResult"))
    return fail(Errc::invalid_task, "tool results are made by running the call, not written as drafts",
                at + "/content/toolResult");
  if (e.contains("labels")) {
    if (!e["labels"].is_array()) return fail(Errc::invalid_task, "labels must be an array of strings", at + "/labels");
    for (const auto& l : e["labels"]) {
      if (!l.is_string()) return fail(Errc::invalid_task, "labels must be an array of strings", at + "/labels");
      draft.labels.push_back(l.get<std::string>());
    }
  }
  return draft;
}

Result<Compiled> compile(const Draft& draft, const Scope& scope) {
  Task task;
  task.parent_id = scope.lineage.empty() ? std::nullopt : std::optional<std::string>(scope.lineage.back().id);
  task.role = draft.role;
  task.content = draft.content;
  task.labels = draft.labels;
  task.created_by = draft.created_by;
  task.state = State::open;

  std::optional<VisibleTool> tool;
  const auto kind = content_kind(draft.content);
  if (!kind) return std::unexpected(kind.error());
  if (*kind == "functionCall") {
    // The name may be a registry revision id or prefix (tycli call REV); those
    // are not valid tool names, so check the shape after resolving.
    const auto& call = draft.content["functionCall"];
    if (!call.is_object() || !call.contains("name") || !call["name"].is_string())
      return fail(Errc::invalid_task, "functionCall.name must be a string", "/content/functionCall/name");
    // A provider's call id comes from the model through `tycli chat call`,
    // never from tool code: a planted call cannot pose as the model's.
    if (draft.created_by && call.contains("callId"))
      return fail(Errc::invalid_task, "a call made by tool code cannot carry a provider call id (callId)",
                  "/content/functionCall/callId");
    const auto ref = call["name"].get<std::string>();
    auto resolved = resolve_call_target(ref, scope);
    if (!resolved) return std::unexpected(resolved.error());
    task.content["functionCall"]["name"] = resolved->tool.manifest.name;
    task.tool_revision = resolved->tool.revision;
    task.settings_revision = resolved->tool.settings_revision;
    tool = std::move(*resolved);
  }
  if (auto shape = check_content(task.role, task.content); !shape) return std::unexpected(shape.error());
  if (*kind == "toolResult")
    return fail(Errc::invalid_task, "tool results are made by running a call, not compiled from drafts",
                "/content/toolResult");
  if (*kind == "toolDefinition") {
    if (auto defined = defined_tool(task, scope.registry); !defined) return std::unexpected(defined.error());
  }
  if (tool) {
    if (auto valid = registry::validate_arguments(tool->tool.manifest.parameters,
                                                  task.content["functionCall"]["arguments"], tool->tool.revision);
        !valid)
      return std::unexpected(valid.error());
  }
  auto id = compute_id(task);
  if (!id) return std::unexpected(id.error());
  task.id = *id;
  return Compiled{std::move(task), std::move(tool)};
}

}  // namespace taskyon::tasks
