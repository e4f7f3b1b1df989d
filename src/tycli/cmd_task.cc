// tycli task show ID | tycli task tree [ROOT]
#include <iostream>
#include <memory>
#include <optional>

#include "cli.h"
#include "taskyon/base/escape.h"
#include "taskyon/host/views.h"
#include "taskyon/invoke/runtime_record.h"
#include "tree.h"

namespace tycli {
namespace {

using taskyon::json::Value;

int show(Globals& g, const std::string& ref) {
  auto st = open_store(g, StoreUse::read);
  if (!st) return report(g, st.error());
  auto t = st->task(ref);  // verified: a tampered row is an integrity error, never shown as valid
  if (!t) return report(g, t.error());
  // The runtime that produced a result (invoke/runtime_record.h): a
  // tool-result's own; a call's, of its latest result. null: unknown.
  std::optional<Value> runtime;
  const auto kind = taskyon::tasks::content_kind(t->content).value_or("");
  if (kind == "toolResult") runtime = taskyon::invoke::recorded_runtime(*t);
  if (kind == "functionCall") {
    auto children = st->children(t->id);
    if (!children) return report(g, children.error());
    for (const auto& c : *children)
      if (c.role == taskyon::tasks::Role::tool) runtime = taskyon::invoke::recorded_runtime(c);
  }
  if (g.json) {
    auto view = taskyon::host::task_view(*st, *t);  // the JSON API's shape too
    if (!view) return report(g, view.error());
    print_json(*view);
    return kExitOk;
  }
  std::cout << "id        " << t->id << "\n"
            << "parent    " << t->parent_id.value_or("-") << "\n"
            << "role      " << taskyon::tasks::role_name(t->role) << "\n"
            << "state     " << taskyon::tasks::state_name(t->state) << "\n";
  // A tool-made task says so first: its content is tool output, whatever its role.
  if (t->created_by)
    std::cout << "made by   tool call " << t->created_by->task << " (revision " << t->created_by->revision
              << "): tool output, not the model's, the user's or the system's\n";
  const auto dump = [](const Value& v, int indent) {
    return taskyon::escape_json_dump(v.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace));
  };
  if (!t->labels.empty()) std::cout << "labels    " << dump(Value(t->labels), -1) << "\n";
  if (t->tool_revision) std::cout << "tool      " << *t->tool_revision << "\n";
  if (t->settings_revision) std::cout << "settings  " << *t->settings_revision << "\n";
  if (runtime) std::cout << "runtime   " << taskyon::escape_terminal(taskyon::invoke::describe_runtime(*runtime)) << "\n";
  std::cout << "content   " << dump(t->content, 2) << "\n";
  return kExitOk;
}

int tree(Globals& g, const std::string& ref) {
  auto st = open_store(g, StoreUse::read);
  if (!st) return report(g, st.error());
  std::vector<taskyon::tasks::Task> roots;
  if (ref.empty()) {
    auto r = st->roots();
    if (!r) return report(g, r.error());
    roots = std::move(*r);
  } else {
    auto t = st->task(ref);
    if (!t) return report(g, t.error());
    roots.push_back(std::move(*t));
  }
  if (g.json) {
    Value out = Value::array();
    for (const auto& r : roots) {
      auto node = tree_json(*st, r);
      if (!node) return report(g, node.error());
      out.push_back(std::move(*node));
    }
    print_json(out);
    return kExitOk;
  }
  if (roots.empty()) std::cout << "no tasks yet (try `tycli run examples/conversations/<file>.json`)\n";
  for (const auto& r : roots)
    if (auto p = print_tree(*st, r, [](const auto&) { return std::string(); }, g.full_ids); !p) return report(g, p.error());
  return kExitOk;
}

}  // namespace

void add_task_commands(CLI::App& app, Globals& g) {
  auto* task = app.add_subcommand("task", "inspect stored tasks");
  task->require_subcommand(1);
  auto id = std::make_shared<std::string>();
  auto* sh = task->add_subcommand("show", "one task, verified against its content address");
  sh->add_option("id", *id, "task id or unique prefix (>= 12 hex digits)")->required();
  sh->callback([&g, id] { g.exit_code = guarded(g, [&] { return show(g, *id); }); });
  auto root = std::make_shared<std::string>();
  auto* tr = task->add_subcommand("tree", "the task tree under ROOT (default: every root)");
  tr->add_option("root", *root, "task id or unique prefix");
  tr->callback([&g, root] { g.exit_code = guarded(g, [&] { return tree(g, *root); }); });
}

}  // namespace tycli
