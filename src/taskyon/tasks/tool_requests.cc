#include "taskyon/tasks/tool_requests.h"

#include <fmt/format.h>

#include "taskyon/registry/manifest.h"

namespace taskyon::tasks {

namespace {

// The registry as tool code may name it: a tool name resolves to its own
// active binding only (the store's resolver also takes revision prefixes, and
// a 12-hex prefix is a valid tool name), a full revision id only where the
// lineage's tree bindings name one (tool-made drafts cannot bind).
ToolResolver names_only(const ToolResolver& registry) {
  return [registry](std::string_view ref) -> Result<ResolvedTool> {
    auto found = registry(ref);
    if (found && !json::is_content_id(ref) && found->manifest.name != ref)
      return fail(Errc::not_found, fmt::format("no tool named \"{}\" in the registry", ref));
    return found;
  };
}

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
    // A binding names a registry revision by its id: tool code would learn
    // from the answer whether a guessed manifest is stored (M15).
    if (draft->content.contains("toolDefinition") && draft->content["toolDefinition"].contains("binding"))
      return refuse("invalid_request",
                    fmt::format("{}/content/toolDefinition/binding: tool code cannot bind registry revisions; it may "
                                "define sandboxed code (definition)",
                                at));
    draft->created_by = by;  // hashed into the id
    auto task = compile(*draft, Scope{scope.lineage, names_only(scope.registry)});
    if (!task) {
      const Errc code = task.error().code;
      // Resolution and argument errors describe another tool (its parameters,
      // where the compiler looked): the tool is told only that the call does
      // not compile; the audit keeps the whole error.
      if (code == Errc::not_found || code == Errc::ambiguous || code == Errc::invalid_arguments || code == Errc::integrity) {
        const auto& call = draft->content["functionCall"];
        const std::string name = call.is_object() && call.contains("name") && call["name"].is_string()
                                     ? call["name"].get<std::string>()
                                     : std::string();
        return std::unexpected(ToolRequestRefusal{
            "invalid_request",
            fmt::format("{}: no tool named \"{}\" visible to this call accepts these arguments", at, name),
            task.error().describe()});
      }
      return refuse("invalid_request", task.error().describe());
    }
    compiled.push_back(std::move(task->task));
  }
  return compiled;
}

ToolRequestResult<VisibleTool> resolve_invocation(const json::Value& request, const std::vector<Task>& lineage,
                                                  const ToolResolver& registry) {
  if (!request.is_object() || request.size() != 1 || !request.contains("name") || !request["name"].is_string())
    return refuse("invalid_request", "resolveInvocation takes exactly {name: string}");
  const std::string name = request["name"].get<std::string>();
  // Names only: a revision id or prefix would let a tool confirm a guessed
  // manifest, or reach a revision no name is bound to (M15).
  if (!registry::is_valid_tool_name(name))
    return std::unexpected(ToolRequestRefusal{"not_found", fmt::format("no tool named \"{}\" is visible to this call", name),
                                              "not a tool name"});
  auto found = resolve_in_scope(name, lineage, names_only(registry));
  if (!found)
    return std::unexpected(ToolRequestRefusal{
        "not_found", fmt::format("no tool named \"{}\" is visible to this call", name), found.error().message});
  return std::move(*found);
}

}  // namespace taskyon::tasks
