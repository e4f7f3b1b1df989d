#include "tree.h"

#include <iostream>

#include <fmt/format.h>

#include "cli.h"

namespace tycli {
namespace {

using taskyon::json::Value;
namespace tasks = taskyon::tasks;

std::string clip(std::string text, std::size_t max = 60) {
  for (auto& c : text)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  if (text.size() <= max) return text;
  std::size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // keep UTF-8 whole
  return text.substr(0, cut) + "…";
}

std::string compact(const Value& v) { return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

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

std::string task_line(const tasks::Task& t) {
  const auto head = fmt::format("{} {:<9}", short_id(t.id), tasks::role_name(t.role));
  if (t.content.contains("message")) return fmt::format("{} \"{}\"", head, clip(t.content["message"].get<std::string>()));
  if (t.content.contains("functionCall")) {
    const auto& c = t.content["functionCall"];
    return fmt::format("{} call {}({}) pinned {} [{}]", head, c["name"].get<std::string>(), clip(compact(c["arguments"]), 40),
                       short_id(t.tool_revision.value_or("-")), tasks::state_name(t.state));
  }
  if (t.content.contains("toolResult")) {
    const auto& r = t.content["toolResult"];
    if (r.contains("error"))
      return fmt::format("{} error {}: {}", head, r["error"]["code"].get<std::string>(),
                         clip(r["error"]["message"].get<std::string>()));
    return fmt::format("{} result {}", head, clip(compact(r["result"])));
  }
  const auto& d = t.content["toolDefinition"];
  if (d.contains("binding"))
    return fmt::format("{} binds tool revision {}", head, short_id(d["binding"].value("revision", "")));
  const auto rev = taskyon::json::content_id_of(d["definition"]);
  return fmt::format("{} defines tool {} revision {}", head, d["definition"].value("name", "?"),
                     short_id(rev.value_or("?")));
}

taskyon::Result<void> print_tree(taskyon::store::Store& store, const tasks::Task& root,
                                 const std::function<std::string(const tasks::Task&)>& mark) {
  std::cout << task_line(root) << mark(root) << "\n";
  return print_below(store, root, "", mark);
}

taskyon::Result<Value> tree_json(taskyon::store::Store& store, const tasks::Task& root) {
  Value node = tasks::task_json(root);
  node["children"] = Value::array();
  auto children = store.children(root.id);
  if (!children) return std::unexpected(children.error());
  for (const auto& c : *children) {
    auto sub = tree_json(store, c);
    if (!sub) return sub;
    node["children"].push_back(std::move(*sub));
  }
  return node;
}

}  // namespace tycli
