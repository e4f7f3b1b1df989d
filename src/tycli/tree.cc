#include "tree.h"

#include <iostream>

#include <fmt/format.h>

#include "cli.h"
#include "taskyon/base/escape.h"
#include "taskyon/host/views.h"

namespace tycli {
namespace {

using taskyon::json::Value;
namespace tasks = taskyon::tasks;

// Text already escaped, cut to `max` bytes.
std::string cut(std::string text, std::size_t max) {
  if (text.size() <= max) return text;
  std::size_t at = max;
  while (at > 0 && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) --at;  // keep UTF-8 whole
  return text.substr(0, at) + "…";
}

// Tool text, escaped (control characters as \u001b, newlines as \n) and cut.
std::string clip(std::string_view raw, std::size_t max = 60) { return cut(taskyon::escape_terminal(raw), max); }

std::string compact(const Value& v) {
  return taskyon::escape_json_dump(v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

taskyon::Result<void> print_below(taskyon::store::Store& store, const tasks::Task& task, const std::string& prefix,
                                  const std::function<std::string(const tasks::Task&)>& mark) {
  auto children = store.children(task.id);
  if (!children) return std::unexpected(children.error());
  for (std::size_t i = 0; i < children->size(); ++i) {
    const bool last = i + 1 == children->size();
    const auto& child = (*children)[i];
    std::cout << prefix << (last ? "└─ " : "├─ ") << task_line(child) << mark(child) << "\n";
    if (auto r = print_below(store, child, prefix + (last ? "   " : "│  "), mark); !r) return r;
  }
  return {};
}

}  // namespace

std::string provenance_text(const tasks::Task& t) {
  if (!t.created_by) return {};
  return fmt::format("made by tool call {} (revision {})", short_id(t.created_by->task), short_id(t.created_by->revision));
}

std::string task_line(const tasks::Task& t) {
  // A task tool code made is shown as tool output, never in a system, user
  // or assistant voice.
  const auto head = t.created_by ? fmt::format("{} {:<9} [{}]", short_id(t.id), "tool-made", provenance_text(t))
                                 : fmt::format("{} {:<9}", short_id(t.id), tasks::role_name(t.role));
  if (t.content.contains("message")) return fmt::format("{} \"{}\"", head, clip(t.content["message"].get<std::string>()));
  if (t.content.contains("functionCall")) {
    const auto& c = t.content["functionCall"];
    return fmt::format("{} call {}({}) pinned {} [{}]", head, clip(c["name"].get<std::string>()), cut(compact(c["arguments"]), 40),
                       short_id(t.tool_revision.value_or("-")), tasks::state_name(t.state));
  }
  if (t.content.contains("toolResult")) {
    const auto& r = t.content["toolResult"];
    if (r.contains("error"))
      return fmt::format("{} error {}: {}", head, clip(r["error"]["code"].get<std::string>()),
                         clip(r["error"]["message"].get<std::string>()));
    return fmt::format("{} result {}", head, cut(compact(r["result"]), 60));
  }
  const auto& d = t.content["toolDefinition"];
  if (d.contains("binding"))
    return fmt::format("{} binds tool revision {}", head, clip(short_id(d["binding"].value("revision", ""))));
  const auto rev = taskyon::json::content_id_of(d["definition"]);
  return fmt::format("{} defines tool {} revision {}", head, clip(d["definition"].value("name", "?")),
                     short_id(rev.value_or("?")));
}

taskyon::Result<void> print_tree(taskyon::store::Store& store, const tasks::Task& root,
                                 const std::function<std::string(const tasks::Task&)>& mark) {
  std::cout << task_line(root) << mark(root) << "\n";
  return print_below(store, root, "", mark);
}

taskyon::Result<Value> tree_json(taskyon::store::Store& store, const tasks::Task& root) {
  return taskyon::host::tree_json(store, root);
}

}  // namespace tycli
