#include "taskyon/tasks/compiler.h"

#include "taskyon/registry/schema.h"

namespace taskyon::tasks {

Result<CompiledCall> compile_call(const CallDraft& draft, const ToolResolver& resolve) {
  if (!draft.arguments.is_object())
    return fail(Errc::invalid_arguments, "arguments must be a JSON object of named arguments", "/arguments");
  auto tool = resolve(draft.tool);
  if (!tool) return std::unexpected(tool.error());
  if (auto valid = registry::validate_arguments(tool->manifest.parameters, draft.arguments); !valid)
    return std::unexpected(valid.error());

  Task task;
  task.parent_id = draft.parent_id;
  task.role = Role::assistant;
  task.content = {{"functionCall", {{"name", tool->manifest.name}, {"arguments", draft.arguments}}}};
  task.state = State::open;
  task.tool_revision = tool->revision;
  task.settings_revision = tool->settings_revision;
  auto id = compute_id(task);
  if (!id) return std::unexpected(id.error());
  task.id = *id;
  return CompiledCall{std::move(task), std::move(*tool)};
}

}  // namespace taskyon::tasks
