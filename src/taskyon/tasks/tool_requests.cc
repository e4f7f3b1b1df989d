#include "taskyon/tasks/tool_requests.h"

#include <fmt/format.h>

namespace taskyon::tasks {

namespace {

std::unexpected<ToolRequestRefusal> refuse(std::string code, std::string message) {
  std::string detail = message;
  return std::unexpected(ToolRequestRefusal{std::move(code), std::move(message), std::move(detail)});
}

}  // namespace

ToolRequestResult<std::vector<Task>> compile_tool_drafts(const json::Value& request, const Provenance& by,
                                                         const Scope& scope, std::size_t already) {
  if (!request.is_object() || request.size() != 1 || !request.contains("drafts") || !request["drafts"].is_array())
    return refuse("invalid_request", "createSubtasksResult takes exactly {drafts: [...]}");
  const auto& drafts = request["drafts"];
  if (already + drafts.size() > kMaxSubtasks)
    return refuse("too_large", fmt::format("a call may create at most {} subtasks", kMaxSubtasks));
  std::vector<Task> compiled;
  for (std::size_t i = 0; i < drafts.size(); ++i) {
    const std::string at = fmt::format("/drafts/{}", i);
    if (drafts[i].dump(-1, ' ', false, json::Value::error_handler_t::replace).size() > kMaxDraftBytes)
      return refuse("too_large", fmt::format("draft {} is larger than {} bytes", i, kMaxDraftBytes));
    auto draft = parse_draft(drafts[i], at);
    if (!draft) return refuse("invalid_request", draft.error().describe());
    // DESIGN §6: tool code speaks as a tool, never as the system or the user.
    if (draft->role == Role::system || draft->role == Role::user)
      return refuse("invalid_request",
                    fmt::format("{}/role: tool code cannot create {} tasks (only assistant ones, marked as made by "
                                "this call)",
                                at, role_name(draft->role)));
    draft->created_by = by;  // hashed into the id
    auto task = compile(*draft, scope);
    if (!task) return refuse("invalid_request", task.error().describe());
    compiled.push_back(std::move(task->task));
  }
  return compiled;
}

ToolRequestResult<VisibleTool> resolve_invocation(const json::Value& request, const std::vector<Task>& lineage,
                                                  const ToolResolver& registry) {
  if (!request.is_object() || request.size() != 1 || !request.contains("name") || !request["name"].is_string())
    return refuse("invalid_request", "resolveInvocation takes exactly {name: string}");
  const std::string name = request["name"].get<std::string>();
  auto found = resolve_in_scope(name, lineage, registry);
  if (!found)
    return std::unexpected(ToolRequestRefusal{
        "not_found", fmt::format("no tool named \"{}\" is visible to this call", name), found.error().message});
  return std::move(*found);
}

}  // namespace taskyon::tasks
