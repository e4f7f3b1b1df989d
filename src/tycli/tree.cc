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

std::string id_text(const std::string& id, bool full_ids) { return full_ids ? id : short_id(id); }

taskyon::Result<void> print_below(taskyon::store::Store& store, const tasks::Task& task, const std::string& prefix,
                                  const std::function<std::string(const tasks::Task&)>& mark, bool full_ids) {
  auto children = store.children(task.id);
  if (!children) return std::unexpected(children.error());
  for (std::size_t i = 0; i < children->size(); ++i) {
    const bool last = i + 1 == children->size();
    const auto& child = (*children)[i];
    std::cout << prefix << (last ? "└─ " : "├─ ") << task_line(child, full_ids) << mark(child) << "\n";
    if (auto r = print_below(store, child, prefix + (last ? "   " : "│  "), mark, full_ids); !r) return r;
  }
  return {};
}

}  // namespace

std::string provenance_text(const tasks::Task& t, bool full_ids) {
  if (!t.created_by) return {};
  return fmt::format("made by tool call {} (revision {})", id_text(t.created_by->task, full_ids),
                     id_text(t.created_by->revision, full_ids));
}

std::string task_line(const tasks::Task& t, bool full_ids) {
  // A task tool code made is shown as tool output, never in a system, user
  // or assistant voice.
  const auto head = t.created_by ? fmt::format("{} {:<9} [{}]", id_text(t.id, full_ids), "tool-made", provenance_text(t, full_ids))
                                 : fmt::format("{} {:<9}", id_text(t.id, full_ids), tasks::role_name(t.role));
  if (t.content.contains("message")) return fmt::format("{} \"{}\"", head, clip(t.content["message"].get<std::string>()));
  if (t.content.contains("functionCall")) {
    const auto& c = t.content["functionCall"];
    return fmt::format("{} call {}({}) pinned {} [{}]", head, clip(c["name"].get<std::string>()), cut(compact(c["arguments"]), 40),
                       id_text(t.tool_revision.value_or("-"), full_ids), tasks::state_name(t.state));
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
    return fmt::format("{} binds tool revision {}", head, clip(id_text(d["binding"].value("revision", ""), full_ids), 80));
  const auto rev = taskyon::json::content_id_of(d["definition"]);
  return fmt::format("{} defines tool {} revision {}", head, clip(d["definition"].value("name", "?")),
                     id_text(rev.value_or("?"), full_ids));
}

taskyon::Result<void> print_tree(taskyon::store::Store& store, const tasks::Task& root,
                                 const std::function<std::string(const tasks::Task&)>& mark, bool full_ids) {
  std::cout << task_line(root, full_ids) << mark(root) << "\n";
  return print_below(store, root, "", mark, full_ids);
}

taskyon::Result<Value> tree_json(taskyon::store::Store& store, const tasks::Task& root) {
  return taskyon::host::tree_json(store, root);
}

}  // namespace tycli
