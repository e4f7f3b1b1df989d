#include "taskyon/tasks/chat.h"

#include <fmt/format.h>

#include "taskyon/base/escape.h"

namespace taskyon::tasks {
namespace {

using json::Value;

std::string kind_of(const Task& t) { return content_kind(t.content).value_or(""); }

std::string call_id(const std::string& task_id) { return "call_" + task_id.substr(7, 24); }

// The model's id of the call `task_id` on the path, or the derived one.
std::string call_id_on(const std::vector<Task>& path, const std::string& task_id) {
  for (const auto& t : path)
    if (t.id == task_id) return model_call_id(t);
  return call_id(task_id);
}

std::string dump(const Value& v) { return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

}  // namespace

std::string tool_result_text(const Value& result) {
  if (result.contains("error"))
    return fmt::format("error {}: {}", result["error"]["code"].get<std::string>(),
                       result["error"]["message"].get<std::string>());
  return dump(result["result"]);
}

std::string model_call_id(const Task& call) {
  const auto& c = call.content;
  if (c.is_object() && c.contains("functionCall") && c["functionCall"].contains("callId") &&
      c["functionCall"]["callId"].is_string())
    return c["functionCall"]["callId"].get<std::string>();
  return call_id(call.id);
}

Value tools_for_completion(const std::vector<VisibleTool>& tools) {
  Value out = Value::array();
  for (const auto& t : tools) {
    const auto& m = t.tool.manifest;
    out.push_back({{"type", "function"},
                   {"function", {{"name", m.name}, {"description", m.description}, {"parameters", m.parameters}}}});
  }
  return out;
}

namespace {

// What a tool-made task says, as text: "message: …", "call NAME(ARGS)".
std::string tool_made_text(const Task& t, const std::string& kind) {
  if (kind == "message") return "message: " + t.content["message"].get<std::string>();
  if (kind == "functionCall") {
    const auto& c = t.content["functionCall"];
    return fmt::format("call {}({})", c["name"].get<std::string>(), dump(c["arguments"]));
  }
  return dump(t.content);
}

// The provenance a task is shown under: its own (tool-made), or for the
// result of a tool-made call, that call's.
const Provenance* shown_provenance(const Task& t, const Task* parent) {
  if (t.created_by) return &*t.created_by;
  if (parent && parent->created_by && content_kind(t.content).value_or("") == "toolResult") return &*parent->created_by;
  return nullptr;
}

std::string provenance_note(const Provenance& p) {
  return fmt::format("[tool output: made by tool call {} (revision {}), not by the user, the system or the assistant]",
                     p.task, p.revision);
}

}  // namespace

Value model_messages(const std::vector<Task>& path) {
  Value out = Value::array();
  for (std::size_t i = 0; i < path.size(); ++i) {
    const Task& t = path[i];
    const auto kind = kind_of(t);
    if (kind == "toolDefinition") continue;  // never sent to the model (T9)
    // A tool-made task (and the result of a call a tool planted) is tool
    // output of the call that made it, never a system, user or assistant voice.
    if (const Provenance* p = shown_provenance(t, i ? &path[i - 1] : nullptr)) {
      const std::string text = kind == "toolResult" ? "result of that call: " + tool_result_text(t.content["toolResult"])
                                                    : tool_made_text(t, kind);
      out.push_back({{"role", "tool"}, {"tool_call_id", call_id_on(path, p->task)}, {"content", provenance_note(*p) + " " + text}});
      continue;
    }
    if (kind == "message") {
      out.push_back({{"role", role_name(t.role)}, {"content", t.content["message"]}});
    } else if (kind == "functionCall") {
      const auto& c = t.content["functionCall"];
      out.push_back({{"role", "assistant"},
                     {"content", nullptr},
                     {"tool_calls",
                      {{{"id", model_call_id(t)},
                        {"type", "function"},
                        {"function", {{"name", c["name"]}, {"arguments", dump(c["arguments"])}}}}}}});
    } else if (kind == "toolResult") {
      out.push_back({{"role", "tool"},
                     {"tool_call_id", t.parent_id ? call_id_on(path, *t.parent_id) : std::string()},
                     {"content", tool_result_text(t.content["toolResult"])}});
    }
  }
  return out;
}

Value copy_chat_json(const std::vector<Task>& path) {
  Value out = Value::array();
  for (std::size_t i = 0; i < path.size(); ++i) {
    const Task& t = path[i];
    const auto kind = kind_of(t);
    if (kind == "toolDefinition") continue;
    const Provenance* p = shown_provenance(t, i ? &path[i - 1] : nullptr);
    Value entry = {{"role", p ? "tool" : role_name(t.role)}};
    if (kind == "toolResult") {
      const auto& r = t.content["toolResult"];
      entry["toolResult"] = r.contains("error") ? Value{{"error", r["error"]}} : Value{{"result", r["result"]}};
    } else {
      entry[kind] = t.content[kind];
    }
    if (p) entry["createdBy"] = provenance_json(*p);
    out.push_back(std::move(entry));
  }
  return out;
}

std::string copy_chat_markdown(const std::vector<Task>& path) {
  // Every piece of text is escaped (taskyon/base/escape.h); tool text keeps
  // no line break, so it cannot start a paragraph that looks like another voice.
  std::string out;
  for (std::size_t i = 0; i < path.size(); ++i) {
    const Task& t = path[i];
    const auto kind = kind_of(t);
    if (kind == "toolDefinition") continue;
    if (const Provenance* p = shown_provenance(t, i ? &path[i - 1] : nullptr)) {
      const std::string text = kind == "toolResult" ? "result of that call: " + tool_result_text(t.content["toolResult"])
                                                    : tool_made_text(t, kind);
      out += fmt::format("**tool output** (made by tool call `{}`, revision `{}`): `{}`\n\n", p->task, p->revision,
                         escape_terminal(text));
    } else if (kind == "message") {
      out += fmt::format("**{}:** {}\n\n", role_name(t.role),
                         escape_terminal(t.content["message"].get<std::string>(), Newlines::keep));
    } else if (kind == "functionCall") {
      const auto& c = t.content["functionCall"];
      out += fmt::format("**assistant** calls `{}` with `{}`\n\n", escape_terminal(c["name"].get<std::string>()),
                         escape_terminal(dump(c["arguments"])));
    } else if (kind == "toolResult") {
      out += fmt::format("**tool:** `{}`\n\n", escape_terminal(tool_result_text(t.content["toolResult"])));
    }
  }
  return out;
}

}  // namespace taskyon::tasks
