// Compilation of drafts into hashed tasks (DESIGN §4). A draft is a task
// without id and pins. Compilation (core only, never in a sandbox):
//   1. checks the draft's shape (check_content);
//   2. for a function call: resolves the name in the draft's lexical scope
//      (scope.h), pins toolRevision and settingsRevision (T1), and validates
//      the arguments against the tool's parameters;
//      for a tool definition: admits only sandboxed JavaScript or a binding to
//      a full registry revision id (T7);
//   3. hashes the identity, parent id included, into the task id (T4).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "taskyon/base/error.h"
#include "taskyon/json/json.h"
#include "taskyon/tasks/scope.h"
#include "taskyon/tasks/task.h"

namespace taskyon::tasks {

struct Draft {
  Role role = Role::user;
  json::Value content;  // see task.h
  std::vector<std::string> labels;
  std::optional<Provenance> created_by;  // set by the host for drafts tool code sent, never parsed from JSON
};

// Where a draft is compiled: its parent and what is visible there.
struct Scope {
  std::vector<Task> lineage;  // the parent's lineage, root first, parent last; empty for a root
  ToolResolver registry;      // the registry's active bindings and revisions
  // The lineage's toolDefinition positions, when the caller keeps them
  // (scope.h Definitions); nullptr: each ancestor is looked at.
  const Definitions* definitions = nullptr;
};

struct Compiled {
  Task task;                         // state Open, hashed
  std::optional<VisibleTool> tool;   // function calls: what the call is pinned to
};

// Errors: Errc::invalid_task (shape, role, T7), Errc::not_found (no visible
// tool: the message names the tool and where it looked), Errc::ambiguous,
// Errc::integrity, Errc::invalid_arguments (the message names each argument
// and the rule it broke).
Result<Compiled> compile(const Draft& draft, const Scope& scope);

// A draft from its JSON form {"role", "content", "labels"?} (and "parent",
// which is left to the caller, when allow_parent). Tool results are refused:
// they are made by running a call. Errc::invalid_task, `where` under `at`.
Result<Draft> parse_draft(const json::Value& value, const std::string& at, bool allow_parent = false);

// A function-call draft for `tool` (a name, or for registry tools also a
// revision id or prefix) with `arguments`.
Draft function_call(std::string tool, json::Value arguments);

}  // namespace taskyon::tasks
