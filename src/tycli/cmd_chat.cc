// tycli chat tools|messages|copy --at ID: what a model provider would see.
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "cli.h"
#include "taskyon/base/escape.h"
#include "taskyon/tasks/chat.h"

namespace tycli {
namespace {

using taskyon::json::Value;
namespace tasks = taskyon::tasks;

struct ChatArgs {
  std::string at;
  std::string format = "md";
};

taskyon::Result<std::vector<tasks::Task>> path_to(taskyon::store::Store& st, const std::string& at) {
  auto t = st.task(at);
  if (!t) return std::unexpected(t.error());
  return st.lineage(t->id);
}

int tools(Globals& g, const ChatArgs& a) {
  auto st = open_store(g, StoreUse::read);
  if (!st) return report(g, st.error());
  auto lineage = path_to(*st, a.at);
  if (!lineage) return report(g, lineage.error());
  auto names = st->active_names();
  if (!names) return report(g, names.error());
  auto visible = tasks::visible_tools(*lineage, st->resolver(), *names);
  if (!visible) return report(g, visible.error());
  if (g.json) {
    print_json(tasks::tools_for_completion(*visible));
    return kExitOk;
  }
  for (const auto& t : *visible)
    std::cout << fmt::format("{:<20} {}  ({})\n", taskyon::escape_terminal(t.tool.manifest.name),
                             taskyon::escape_terminal(t.tool.manifest.description),
                             t.defined_at ? "defined in the tree at " + short_id(*t.defined_at) : "registry");
  return kExitOk;
}

int messages(Globals& g, const ChatArgs& a) {
  auto st = open_store(g, StoreUse::read);
  if (!st) return report(g, st.error());
  auto path = path_to(*st, a.at);
  if (!path) return report(g, path.error());
  const auto out = tasks::model_messages(*path);
  if (g.json)
    print_json(out);
  else
    std::cout << taskyon::escape_json_dump(out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)) << "\n";
  return kExitOk;
}

int copy(Globals& g, const ChatArgs& a) {
  if (a.format != "md" && a.format != "json")
    return report(g, {taskyon::Errc::bad_usage, "--format must be md or json", "--format"});
  auto st = open_store(g, StoreUse::read);
  if (!st) return report(g, st.error());
  auto path = path_to(*st, a.at);
  if (!path) return report(g, path.error());
  if (a.format == "json" || g.json)
    print_json(tasks::copy_chat_json(*path));
  else
    std::cout << tasks::copy_chat_markdown(*path);
  return kExitOk;
}

}  // namespace

void add_chat_commands(CLI::App& app, Globals& g) {
  auto* chat = app.add_subcommand("chat", "the conversation as a model provider sees it");
  chat->require_subcommand(1);
  auto a = std::make_shared<ChatArgs>();
  const auto add = [&](const char* name, const char* help, int (*body)(Globals&, const ChatArgs&)) {
    auto* c = chat->add_subcommand(name, help);
    c->add_option("--at", a->at, "task id or unique prefix: the node the model would answer")->required();
    if (std::string(name) == "copy") c->add_option("--format", a->format, "md (default) or json");
    c->callback([&g, a, body] { g.exit_code = guarded(g, [&] { return body(g, *a); }); });
  };
  add("tools", "tools visible at the node, as reduced signatures (--json: the provider's tools list)", tools);
  add("messages", "chat messages for the model, definition nodes left out", messages);
  add("copy", "an ordinary copy of the conversation, without definition nodes", copy);
}

}  // namespace tycli
