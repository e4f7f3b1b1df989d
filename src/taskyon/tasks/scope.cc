#include "taskyon/tasks/scope.h"

#include <algorithm>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "taskyon/json/json.h"

namespace taskyon::tasks {
namespace {

// Whether `definitions` can stand for `lineage`'s: ascending, each position a
// definition in it. (One it omits cannot be seen from here: the caller that
// keeps them answers for that.)
bool fits(const Definitions& definitions, const std::vector<Task>& lineage) {
  for (std::size_t i = 0; i < definitions.size(); ++i) {
    const std::size_t at = definitions[i];
    if (at >= lineage.size() || (i > 0 && at <= definitions[i - 1]) || !is_definition(lineage[at])) return false;
  }
  return true;
}

// Calls `visit` on the toolDefinition tasks of `lineage`, nearest first, until
// it returns true.
template <typename Visit>
void nearest_definitions(const std::vector<Task>& lineage, const Definitions* definitions, Visit&& visit) {
  if (definitions != nullptr && fits(*definitions, lineage)) {
    for (auto it = definitions->rbegin(); it != definitions->rend(); ++it)
      if (visit(lineage[*it])) return;
    return;
  }
  for (auto it = lineage.rbegin(); it != lineage.rend(); ++it)
    if (is_definition(*it) && visit(*it)) return;
}

}  // namespace

bool is_definition(const Task& t) { return t.content.is_object() && t.content.contains("toolDefinition"); }

Definitions definitions_in(const std::vector<Task>& lineage) {
  Definitions out;
  for (std::size_t i = 0; i < lineage.size(); ++i)
    if (is_definition(lineage[i])) out.push_back(i);
  return out;
}

Result<ResolvedTool> defined_tool(const Task& definition, const ToolResolver& registry) {
  const auto& body = definition.content.at("toolDefinition");
  const std::string at = "/content/toolDefinition";
  if (body.contains("binding")) {
    const auto revision = body["binding"].value("revision", std::string());
    if (!json::is_content_id(revision))
      return fail(Errc::invalid_task,
                  fmt::format("T7: a binding in the task tree must name a full registry revision id "
                              "(\"sha256:\" + 64 hex digits), not \"{}\": names and prefixes can change meaning",
                              revision),
                  at + "/binding/revision");
    auto tool = registry(revision);
    if (!tool) return std::unexpected(tool.error());
    return tool;
  }
  auto manifest = registry::parse_manifest(body.at("definition"));
  if (!manifest) {
    auto e = manifest.error();
    e.where = at + "/definition" + e.where;
    return std::unexpected(e);
  }
  if (manifest->execution != registry::Execution::sandboxed_code)
    return fail(Errc::invalid_task,
                fmt::format("T7: a tool defined in the task tree may hold only sandboxed JavaScript "
                            "(execution \"sandboxed-code\") or a binding {{\"revision\": \"sha256:…\"}} to a registry "
                            "revision; \"{}\" tools must be installed in the registry",
                            registry::execution_name(manifest->execution)),
                at + "/definition/execution");
  auto revision = registry::revision_id(*manifest);
  if (!revision) return std::unexpected(revision.error());
  return ResolvedTool{*revision, registry::empty_settings_revision(), std::move(*manifest)};
}

Result<VisibleTool> resolve_in_scope(std::string_view name, const std::vector<Task>& lineage,
                                     const ToolResolver& registry, const Definitions* definitions) {
  std::size_t looked_at = 0;
  std::optional<Result<VisibleTool>> found;
  nearest_definitions(lineage, definitions, [&](const Task& definition) {
    ++looked_at;
    auto tool = defined_tool(definition, registry);
    if (!tool) {
      found.emplace(std::unexpected(tool.error()));
      return true;
    }
    if (tool->manifest.name != name) return false;
    found.emplace(VisibleTool{std::move(*tool), definition.id});
    return true;
  });
  if (found) return std::move(*found);
  auto tool = registry(name);
  if (tool) return VisibleTool{std::move(*tool), std::nullopt};
  if (tool.error().code != Errc::not_found) return std::unexpected(tool.error());
  const std::string parent = lineage.empty() ? std::string("a root task") : lineage.back().id;
  return fail(Errc::not_found,
              fmt::format("no tool named \"{}\" is visible here: looked in {} ancestor task(s) of {} ({} tool "
                          "definition(s), none named \"{}\"; definitions in other branches are not visible) and in "
                          "the registry's active bindings",
                          name, lineage.size(), parent, looked_at, name),
              lineage.empty() ? std::string() : lineage.back().id);
}

Result<std::vector<VisibleTool>> visible_tools(const std::vector<Task>& lineage, const ToolResolver& registry,
                                               const std::vector<std::string>& registry_names) {
  std::map<std::string, VisibleTool> seen;
  for (auto it = lineage.rbegin(); it != lineage.rend(); ++it) {
    if (!is_definition(*it)) continue;
    auto tool = defined_tool(*it, registry);
    if (!tool) return std::unexpected(tool.error());
    const auto name = tool->manifest.name;
    seen.try_emplace(name, VisibleTool{std::move(*tool), it->id});
  }
  for (const auto& name : registry_names) {
    if (seen.contains(name)) continue;
    auto tool = registry(name);
    if (!tool) return std::unexpected(tool.error());
    seen.emplace(name, VisibleTool{std::move(*tool), std::nullopt});
  }
  std::vector<VisibleTool> out;
  for (auto& [_, tool] : seen) out.push_back(std::move(tool));
  return out;
}

Result<ResolvedTool> pinned_in_lineage(std::string_view pin, const std::vector<Task>& lineage,
                                       const ToolResolver& registry, const Definitions* definitions) {
  std::optional<ResolvedTool> found;
  nearest_definitions(lineage, definitions, [&](const Task& definition) {
    auto tool = defined_tool(definition, registry);
    if (!tool || tool->revision != pin) return false;
    found = std::move(*tool);
    return true;
  });
  if (found) return std::move(*found);
  return fail(Errc::not_found,
              fmt::format("revision {} is neither in the registry nor defined by an ancestor of this call", pin),
              std::string(pin));
}

}  // namespace taskyon::tasks
