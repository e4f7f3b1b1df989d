#include "taskyon/tasks/chat.h"

#include <fmt/format.h>

namespace taskyon::tasks {
namespace {

using json::Value;

std::string kind_of(const Task& t) { return content_kind(t.content).value_or(""); }

std::string call_id(const std::string& task_id) { return "call_" + task_id.substr(7, 24); }

std::string dump(const Value& v) { return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

std::string result_text(const Value& result) {
  if (result.contains("error"))
    return fmt::format("error {}: {}", result["error"]["code"].get<std::string>(),
                       result["error"]["message"].get<std::string>());
  return dump(result["result"]);
}

}  // namespace

Value tools_for_completion(const std::vector<VisibleTool>& tools) {
  Value out = Value::array();
  for (const auto& t : tools) {
    const auto& m = t.tool.manifest;
    out.push_back({{"type", "function"},
                   {"function", {{"name", m.name}, {"description", m.description}, {"parameters", m.parameters}}}});
  }
  return out;
}

Value model_messages(const std::vector<Task>& path) {
  Value out = Value::array();
  for (const auto& t : path) {
    const auto kind = kind_of(t);
    if (kind == "message") {
      out.push_back({{"role", role_name(t.role)}, {"content", t.content["message"]}});
    } else if (kind == "functionCall") {
      const auto& c = t.content["functionCall"];
      out.push_back({{"role", "assistant"},
                     {"content", nullptr},
                     {"tool_calls",
                      {{{"id", call_id(t.id)},
                        {"type", "function"},
                        {"function", {{"name", c["name"]}, {"arguments", dump(c["arguments"])}}}}}}});
    } else if (kind == "toolResult") {
      out.push_back({{"role", "tool"},
                     {"tool_call_id", t.parent_id ? call_id(*t.parent_id) : std::string()},
                     {"content", result_text(t.content["toolResult"])}});
    }  // toolDefinition: never sent to the model (T9)
  }
  return out;
}

Value copy_chat_json(const std::vector<Task>& path) {
  Value out = Value::array();
  for (const auto& t : path) {
    const auto kind = kind_of(t);
    if (kind == "toolDefinition") continue;
    Value entry = {{"role", role_name(t.role)}};
    if (kind == "toolResult") {
      const auto& r = t.content["toolResult"];
      entry["toolResult"] = r.contains("error") ? Value{{"error", r["error"]}} : Value{{"result", r["result"]}};
    } else {
      entry[kind] = t.content[kind];
    }
    out.push_back(std::move(entry));
  }
  return out;
}

std::string copy_chat_markdown(const std::vector<Task>& path) {
  std::string out;
  for (const auto& t : path) {
    const auto kind = kind_of(t);
    if (kind == "message") {
      out += fmt::format("**{}:** {}\n\n", role_name(t.role), t.content["message"].get<std::string>());
    } else if (kind == "functionCall") {
      const auto& c = t.content["functionCall"];
      out += fmt::format("**assistant** calls `{}` with `{}`\n\n", c["name"].get<std::string>(), dump(c["arguments"]));
    } else if (kind == "toolResult") {
      out += fmt::format("**tool:** `{}`\n\n", result_text(t.content["toolResult"]));
    }
  }
  return out;
}

}  // namespace taskyon::tasks
