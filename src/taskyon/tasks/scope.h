// Lexical scope of tool names in the task tree (DESIGN §4, T5-T7). A
// toolDefinition task is visible only to its descendants; resolving a name
// walks from the parent up through its ancestors to the nearest definition of
// that name (shadowing outer ones and the registry), then falls back to the
// registry's active binding. Tree definitions never enter the registry (T6):
// their revision id is the content address of the manifest they hold, like a
// registry revision's, and nothing is stored for them but the task itself.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taskyon/base/error.h"
#include "taskyon/registry/manifest.h"
#include "taskyon/tasks/task.h"

namespace taskyon::tasks {

// A tool as resolved: the pinned revision and its manifest.
struct ResolvedTool {
  std::string revision;           // "sha256:…" content id of the manifest
  std::string settings_revision;  // "sha256:…" of the tool's settings object
  registry::Manifest manifest;
};

// Resolves a registry name (active binding), full revision id, or unique prefix.
using ToolResolver = std::function<Result<ResolvedTool>(std::string_view ref)>;

// A tool visible at a node, and where it comes from.
struct VisibleTool {
  ResolvedTool tool;
  std::optional<std::string> defined_at;  // the toolDefinition task's id; empty: the registry
};

// The tool a toolDefinition task provides. T7: a definition must be sandboxed
// JavaScript; a binding must name a full registry revision id. Errc::invalid_task
// says which forms are allowed.
Result<ResolvedTool> defined_tool(const Task& definition, const ToolResolver& registry);

// The positions in a lineage of its toolDefinition tasks, ascending. A caller
// that extends one lineage entry after entry (invoke::run_conversation) keeps
// them, appending a position when it appends a definition, so that resolving a
// name looks at the definitions, not at every ancestor (issue 19: the walk was
// a quarter of a late call's time in a chain of 3000). Where a function below takes
// `definitions`, nullptr means "not kept": each ancestor is looked at.
using Definitions = std::vector<std::size_t>;
bool is_definition(const Task& task);
Definitions definitions_in(const std::vector<Task>& lineage);

// Resolves `name` for a draft whose parent's lineage (root first) is `lineage`.
Result<VisibleTool> resolve_in_scope(std::string_view name, const std::vector<Task>& lineage,
                                     const ToolResolver& registry, const Definitions* definitions = nullptr);

// Every tool visible below the last task of `lineage`: tree definitions nearest
// first (shadowing), then registry tools named in `registry_names` not shadowed.
// Sorted by name.
Result<std::vector<VisibleTool>> visible_tools(const std::vector<Task>& lineage, const ToolResolver& registry,
                                               const std::vector<std::string>& registry_names);

// The tree definition whose revision is `pin`, among the call's ancestors.
Result<ResolvedTool> pinned_in_lineage(std::string_view pin, const std::vector<Task>& lineage,
                                       const ToolResolver& registry, const Definitions* definitions = nullptr);

}  // namespace taskyon::tasks
