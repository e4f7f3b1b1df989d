// Compilation of function-call drafts into pinned, hashed tasks (DESIGN §4,
// T1). Compilation resolves the tool, pins its revision and settings revision,
// validates the arguments against the tool's parameters, and only then hashes.
// The compiler reads the registry through a ToolResolver, so it depends on no
// store; the store provides one (store::Store::resolver()).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "taskyon/base/error.h"
#include "taskyon/json/json.h"
#include "taskyon/registry/manifest.h"
#include "taskyon/tasks/task.h"

namespace taskyon::tasks {

// A tool as the registry resolves it: the pinned revision and its manifest.
struct ResolvedTool {
  std::string revision;           // "sha256:…"
  std::string settings_revision;  // "sha256:…" of the tool's settings object
  registry::Manifest manifest;
};

// Resolves a name (active binding), a full revision id, or a unique prefix.
using ToolResolver = std::function<Result<ResolvedTool>(std::string_view ref)>;

struct CallDraft {
  std::optional<std::string> parent_id;
  std::string tool;                                   // name, revision id or prefix
  json::Value arguments = json::Value::object();
};

struct CompiledCall {
  Task task;            // role assistant, content functionCall, state Open, pinned and hashed
  ResolvedTool tool;    // what the call is pinned to
};

// Errors: from the resolver (not_found, ambiguous, integrity), Errc::invalid_arguments
// when the arguments break the schema, Errc::invalid_task for a non-object.
Result<CompiledCall> compile_call(const CallDraft& draft, const ToolResolver& resolve);

}  // namespace taskyon::tasks
