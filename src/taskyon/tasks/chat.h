// Chat projection of the task tree (DESIGN §4, T8, T9): what a model provider
// sees, and ordinary copies of a conversation. A path is the lineage of one
// node, root first. Definition nodes never appear in messages or copies; the
// model sees tools only as reduced signatures.
#pragma once

#include <string>
#include <vector>

#include "taskyon/base/error.h"
#include "taskyon/json/json.h"
#include "taskyon/tasks/scope.h"
#include "taskyon/tasks/task.h"

namespace taskyon::tasks {

// OpenAI `tools` list: [{"type": "function", "function": {"name",
// "description", "parameters"}}] — nothing else of the manifest (T8). The
// other providers' shapes, and strict mode: provider.h.
json::Value tools_for_completion(const std::vector<VisibleTool>& tools);

// A tool result ({"result", "logs"} or {"error", "logs"}) as the text a model
// reads: the result as JSON, or "error CODE: MESSAGE".
std::string tool_result_text(const json::Value& tool_result);

// The id a model knows a call task by: its functionCall.callId (the
// provider's own id, task.h) when it has one, else "call_" + 24 hex digits of
// the task id.
std::string model_call_id(const Task& call);

// OpenAI chat messages for a path (T9): messages as {"role", "content"},
// calls as assistant "tool_calls" (id model_call_id: the provider's id, else
// "call_" + 24 hex digits of the call's task id; arguments as a JSON string), results as {"role": "tool",
// "tool_call_id", "content"} with the result (or "error <code>: <message>") as
// JSON text. Tool output is untrusted data and is passed as content only.
// A tool-made task (createdBy), and the result of a call a tool planted, is a
// {"role": "tool"} message answering the call that made it, its content
// prefixed by "[tool output: made by tool call ID (revision REV) …]": never a
// system, user or assistant message.
json::Value model_messages(const std::vector<Task>& path);

// An ordinary copy of the conversation without definition nodes, ids or
// revisions: JSON [{"role", "message"|"functionCall"|"toolResult",
// "createdBy"?}] (a tool-made task has role "tool" and its createdBy) ...
json::Value copy_chat_json(const std::vector<Task>& path);
// ... or Markdown, one paragraph per task, every piece of text escaped for a
// terminal (escape.h); tool-made tasks as "**tool output** (made by …)".
std::string copy_chat_markdown(const std::vector<Task>& path);

}  // namespace taskyon::tasks
