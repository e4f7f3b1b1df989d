// Conversation files: the input of `tycli run`. A JSON array of drafts that
// form a tree; each entry is
//   {"role": ROLE, "content": CONTENT, "labels"?: [STRING…], "parent"?: PARENT}
// where PARENT is
//   absent            the last task the previous entry produced (its tool
//                     result when it was a function call); the first entry is a root
//   null              a root
//   N (integer)       the task made from entry N (0-based, an earlier entry)
//   {"resultOf": N}   the tool result of entry N, a function call
//   "sha256:…"        a stored task, by id or unique prefix (>= 12 hex digits)
// docs/tasks.md shows complete files.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "taskyon/base/error.h"
#include "taskyon/json/json.h"
#include "taskyon/tasks/compiler.h"

namespace taskyon::tasks {

struct ParentRef {
  enum class Kind { previous, root, entry, result_of, task };
  Kind kind = Kind::previous;
  std::size_t index = 0;  // entry, result_of
  std::string task;       // task: id or prefix
};

struct ConversationEntry {
  Draft draft;
  ParentRef parent;
};

// Parses and checks a conversation file before anything runs: shapes, roles,
// and parent references (only to earlier entries; resultOf only to function
// calls). Errc::invalid_task with `where` the JSON pointer (e.g. "/3/parent").
Result<std::vector<ConversationEntry>> parse_conversation(const json::Value& file);

}  // namespace taskyon::tasks
