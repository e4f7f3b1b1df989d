// The task-tree requests tool code makes (DESIGN §6), decided by the same
// rules in the CLI (invoke/capabilities.cc) and in the browser (abi/abi.h,
// the wasm core): createSubtasksResult (M14) and resolveInvocation (M15).
// A refusal is a value the tool sees as a CapabilityError with `code`; the
// host's audit row records `detail` (which may name more than the tool sees).
#pragma once

#include <cstddef>
#include <expected>
#include <string>
#include <vector>

#include "taskyon/json/json.h"
#include "taskyon/tasks/compiler.h"
#include "taskyon/tasks/scope.h"
#include "taskyon/tasks/task.h"

namespace taskyon::tasks {

inline constexpr std::size_t kMaxSubtasks = 64;            // drafts per call, all requests together
inline constexpr std::size_t kMaxDraftBytes = 64u << 10;  // one draft's JSON text, bytes

struct ToolRequestRefusal {
  std::string code;     // "invalid_request" | "too_large" | "not_found" (the capability codes)
  std::string message;  // what the tool sees
  std::string detail;   // what the audit records
};
template <typename T>
using ToolRequestResult = std::expected<T, ToolRequestRefusal>;

// createSubtasksResult's request {"drafts": [{role, content, labels?}…]}:
// compiled as children of the call (the last task of scope.lineage), each
// marked created by `by` (the call and its revision, hashed into the id).
// `already`: subtasks this call created before (kMaxSubtasks is per call).
// Refusals: too_large (count, a draft over kMaxDraftBytes), invalid_request
// (the request's shape, a system or user draft, a toolDefinition binding, any
// compile error; one that concerns another tool, as unknown tool or arguments
// its parameters refuse, tells the tool only that, the detail has the rest).
// The caller shows the tasks with opaque identities in place of every id and
// revision (store/settings.h): each id hashes a settings revision.
ToolRequestResult<std::vector<Task>> compile_tool_drafts(const json::Value& request, const Provenance& by,
                                                         const Scope& scope, std::size_t already);

// resolveInvocation's request {"name"}: the tool visible to the call (the
// last task of lineage) under that name, a tool name (never a revision id or
// prefix). Refusals: invalid_request (shape), not_found (the message names
// only the name; the detail says why). The
// caller shows opaque identities of the revision and the settings revision,
// never either itself (M15).
ToolRequestResult<VisibleTool> resolve_invocation(const json::Value& request, const std::vector<Task>& lineage,
                                                  const ToolResolver& registry);

}  // namespace taskyon::tasks
