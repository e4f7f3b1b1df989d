// Tasks of the task tree (DESIGN §4). A task's id is the content address of
// its identity: role, content, parent id and pinned revisions (T4), so a task
// id fixes the whole chain above it, as a git commit id does.
//
// Identity (hashed, RFC 8785): {"role", "content", "parentId"?, "labels"?,
// "toolRevision"?, "settingsRevision"?, "createdBy"?} with absent optionals
// (and empty labels) left out. "createdBy": {"task": CALL ID, "revision":
// TOOL REVISION} marks a task tool code made (createSubtasksResult, DESIGN
// §6): the call that made it and the revision that call ran; it is hashed,
// so it cannot be dropped or forged without changing the id. The state is an execution record kept beside the
// identity, not part of it: a call's id is known when it is compiled, before
// it runs. docs/tasks.md shows every form with examples.
//
// Content is a JSON object with exactly one member naming its kind:
//   {"message": STRING}                                  role system|user|assistant
//   {"functionCall": {"name": NAME, "arguments": OBJECT, "callId"?: STRING}} role assistant
//     callId: the model provider's own id of the call (OpenAI "call_…", Anthropic
//     "toolu_…"; 1-256 printable ASCII, no spaces), kept so the result answers
//     that id. It is content, so it is hashed: two calls the model made with the
//     same arguments under one node stay two tasks, and the id cannot be changed
//     after the fact; a call without it hashes exactly as before.
//   {"toolResult": {"result": VALUE | "error": {"code": STRING, "message": STRING},
//                   "logs": [{"level": STRING, "text": STRING}, …],
//                   "runtime": {"kind": STRING, "version": STRING[, "isolation": STRING]}}}   role tool
//     (runtime optional: which runtime produced the result, docs/tasks.md "Runtime records")
//   {"toolDefinition": {"definition": MANIFEST}}         role system|user|assistant
//   {"toolDefinition": {"binding": {"revision": "sha256:…"}}}
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taskyon/base/error.h"
#include "taskyon/json/json.h"

namespace taskyon::tasks {

enum class Role { system, user, assistant, tool };
enum class State { open, queued, in_progress, completed, cancelled, error };

std::string_view role_name(Role role);    // "system", "user", "assistant", "tool"
std::string_view state_name(State state);  // "Open", "Queued", "In Progress", "Completed", "Cancelled", "Error"
Result<Role> parse_role(std::string_view name);
Result<State> parse_state(std::string_view name);

// Who made a tool-made task: the creating call and the revision it ran.
struct Provenance {
  std::string task;      // the function-call task id "sha256:…"
  std::string revision;  // the tool revision that call was pinned to
  friend bool operator==(const Provenance&, const Provenance&) = default;
};

struct Task {
  std::string id;                              // "sha256:…" of the identity
  std::optional<std::string> parent_id;
  Role role = Role::user;
  std::vector<std::string> labels;             // free-form tags, part of the identity
  json::Value content;                         // see above
  State state = State::open;
  std::optional<std::string> tool_revision;    // function calls: pinned tool revision
  std::optional<std::string> settings_revision;
  std::optional<Provenance> created_by;        // tool-made tasks only; part of the identity
};

// {"task", "revision"} of a provenance, and back (Errc::invalid_task).
json::Value provenance_json(const Provenance& p);
Result<Provenance> parse_provenance(const json::Value& value);

// The content kind: "message", "functionCall", "toolResult", "toolDefinition", or
// Errc::invalid_task if content is not an object with exactly one known member.
Result<std::string> content_kind(const json::Value& content);

// A provider call id as functionCall.callId allows (see above).
bool is_provider_call_id(const json::Value& value);

// Checks the content's shape for its kind, that the role may hold it, and
// that it nests at most json::ParseLimits::max_depth (512) levels, members
// included, so a stored task parses back. Errc::invalid_task, `where` a JSON
// pointer under "/content".
Result<void> check_content(Role role, const json::Value& content);

// The hashed identity object of a task (see above).
json::Value identity(const Task& task);

// The task as shown and exchanged: {"id", "parentId", "role", "state",
// "labels", "content", "toolRevision", "settingsRevision", "createdBy"}
// (absent ids and provenance null).
json::Value task_json(const Task& task);

// A task from its task_json form (every member present, absent ones null),
// checked as persistence checks it (check_invariants): Errc::invalid_task for
// the shape (`where` its JSON pointer), Errc::integrity for an id that is not
// the hash of the identity.
Result<Task> parse_task(const json::Value& value);

// content_id_of(identity(task)).
Result<std::string> compute_id(const Task& task);

// The invariants persistence enforces: the content's shape (check_content),
// a function call in state Completed has a tool revision (T3;
// Errc::invalid_task), and the id is the hash of the identity (T4; Errc::integrity).
Result<void> check_invariants(const Task& task);

}  // namespace taskyon::tasks
