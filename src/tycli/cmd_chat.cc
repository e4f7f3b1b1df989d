// tycli chat tools|messages|copy|call: what a model provider sees, and a
// model's tool call handed back verbatim.
#include <chrono>
#include <iostream>
#include <memory>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "cli.h"
#include "remedies.h"
#include "live.h"
#include "signals.h"
#include "taskyon/base/escape.h"
#include "taskyon/invoke/invoke.h"
#include "taskyon/invoke/provider_call.h"
#include "taskyon/native/python.h"
#include "taskyon/sandbox/runtime.h"
#include "taskyon/tasks/chat.h"
#include "taskyon/tasks/provider.h"

namespace tycli {
namespace {

using taskyon::json::Value;
namespace sandbox = taskyon::sandbox;
namespace tasks = taskyon::tasks;

struct ChatArgs {
  std::string at;
  std::string format = "md";
  std::string tools_format;  // chat tools/call --format; empty: openai-chat (tools), the call's own shape (call)
  bool strict = false;
  std::string tool_call;     // chat call --tool-call JSON|@FILE|-
  long long timeout_ms = 10000;
  bool timeout_given = false;    // --timeout given: it wins over config.json's "timeout"
  std::string python_isolation;  // empty: config.json's "pythonIsolation", else strict
  std::string js_runtime;
  long long memory_budget_mib = -1;
  bool approve_python = false;
};

taskyon::Result<std::vector<tasks::Task>> path_to(taskyon::store::Store& st, const std::string& at) {
  auto t = st.task(at);
  if (!t) return std::unexpected(t.error());
  return st.lineage(t->id);
}

int tools(Globals& g, const ChatArgs& a) {
  std::optional<tasks::Provider> provider;
  if (!a.tools_format.empty()) {
    auto p = tasks::parse_provider(a.tools_format);
    if (!p) return report(g, p.error());
    provider = *p;
  }
  if (a.strict && !provider)
    return report(g, {taskyon::Errc::bad_usage, "--strict needs --format openai-chat or openai-responses", "--strict"});
  auto st = open_store(g, StoreUse::read);
  if (!st) return report(g, st.error());
  // Without --at: the registry's active tools, what a first model turn sees.
  std::vector<tasks::Task> lineage;
  if (!a.at.empty()) {
    auto l = path_to(*st, a.at);
    if (!l) return report(g, l.error());
    lineage = std::move(*l);
  }
  auto names = st->active_names();
  if (!names) return report(g, names.error());
  auto visible = tasks::visible_tools(lineage, st->resolver(), *names);
  if (!visible) return report(g, visible.error());
  if (provider) {
    auto listed = tasks::tools_for_provider(*visible, *provider, a.strict);
    if (!listed) return report(g, listed.error());
    for (const auto& n : listed->not_strict)
      std::cerr << fmt::format("tycli: tool \"{}\" is listed with \"strict\": false: {}{}\n",
                               taskyon::escape_terminal(n.tool), taskyon::escape_terminal(n.reason.message),
                               n.reason.where.empty() ? std::string()
                                                      : " (at " + taskyon::escape_terminal(n.reason.where) + ")");
    print_json(listed->tools);
    return kExitOk;
  }
  if (g.json) {
    print_json(tasks::tools_for_completion(*visible));
    return kExitOk;
  }
  for (const auto& t : *visible)
    std::cout << fmt::format("{:<20} {}  ({})\n", taskyon::escape_terminal(t.tool.manifest.name),
                             taskyon::escape_terminal(t.tool.manifest.description),
                             t.defined_at ? "defined in the tree at " + table_id(g, *t.defined_at) : "registry");
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

int print_answer(Globals& g, tasks::Provider format, const tasks::ProviderCall& pc, const tasks::Task& call,
                 const tasks::Task& result) {
  auto out = taskyon::invoke::provider_answer_json(format, pc, call, result);
  if (!out) return report(g, out.error());
  if (g.json) {
    print_json(*out);
  } else {
    std::cout << taskyon::escape_json_dump((*out)["message"].dump(2, ' ', false, nlohmann::json::error_handler_t::replace))
              << "\n";
    std::cerr << fmt::format("tycli: {} stored; continue with --at {}\n",
                             (*out)["ok"] == true ? "result" : "an error for the model", result.id);
  }
  return kExitOk;
}

int call(Globals& g, const ChatArgs& given_args) {
  ChatArgs a = given_args;  // a copy: the config file fills it in, as in `tycli call`
  if (auto configured = apply_config_file(a.timeout_ms, a.timeout_given, a.python_isolation); !configured)
    return report(g, configured.error());
  if (a.timeout_ms <= 0)
    return report(g, {taskyon::Errc::bad_usage, "--timeout must be a positive number of milliseconds", "--timeout"});
  // `-` is `@-`: stdin, its errors placed at "stdin: POINTER" like a file's.
  auto given = json_argument(a.tool_call == "-" ? "@-" : a.tool_call, "--tool-call", kMaxArgumentsFileBytes);
  if (!given) return report(g, given.error());
  auto pc = tasks::parse_provider_call(*given);
  if (!pc) return report(g, {pc.error().code, pc.error().message, "--tool-call" + pc.error().where});
  tasks::Provider format = pc->provider;
  if (!a.tools_format.empty()) {
    auto f = tasks::parse_provider(a.tools_format);
    if (!f) return report(g, f.error());
    format = *f;
  }
  if (format == tasks::Provider::mcp)
    return report(g, tasks::tool_answer(format, pc->id, Value()).error());
  auto capabilities = capability_options(g);
  if (!capabilities) return report(g, capabilities.error());
  auto st = open_store(g);
  if (!st) return report(g, st.error());
  auto lineage = path_to(*st, a.at);
  if (!lineage) return report(g, lineage.error());
  // What the model got wrong is its to read and fix: stored as the call's
  // result and answered like any other, exit 0.
  auto plan = taskyon::invoke::plan_provider_call(*st, *pc, *lineage);
  if (!plan) return report(g, {plan.error().code, plan.error().message, "--tool-call" + plan.error().where});
  if (!plan->run) return print_answer(g, format, *pc, *plan->refused_call, *plan->refused_result);

  auto runtime = runtime_config(a.js_runtime, a.memory_budget_mib);
  if (!runtime) return report(g, runtime.error());
  LoggedPool hosted(*st, *runtime);
  sandbox::Pool& pool = hosted.pool();
  taskyon::invoke::Options options{std::chrono::milliseconds(a.timeout_ms), sandbox::Mode::retained};
  options.capabilities = std::move(*capabilities);
  Remedies remedies;  // the grant or secret a refused fetch needed, said after the call
  remedies.attach(options.capabilities);
  taskyon::native::Session natives(taskyon::native::python::session_settings(a.approve_python, a.python_isolation));
  options.natives = &natives;
  LiveOutput live(g.json, options.timeout);  // logs and progress as they arrive, on stderr
  live.attach(options);
  Interruption interruption([&](int) { pool.interrupt("interrupted", [&] { options.cancel.cancel(); }); });
  live.begin(LiveOutput::tool_name(*plan->run, pc->name));
  auto inv = taskyon::invoke::run_call(*st, pool, *plan->run, options, *lineage);
  live.end();
  remedies.print(g, *st);
  if (!inv) return report(g, inv.error());
  hosted.flush();
  if (int signal = interruption.signal()) return interrupted(signal, pool);
  if (!g.json) {
    const auto& logs = inv->outcome.logs;  // the first live.streamed() were printed as they came
    for (std::size_t i = live.streamed(); i < logs.size(); ++i)
      std::cerr << fmt::format("[{}] {}\n", taskyon::escape_terminal(logs[i].level),
                               taskyon::escape_terminal(logs[i].text));
  }
  return print_answer(g, format, *pc, inv->call, inv->result);
}

}  // namespace

void add_chat_commands(CLI::App& app, Globals& g) {
  auto* chat = app.add_subcommand("chat", "the conversation as a model provider sees it, and a model's tool calls");
  chat->require_subcommand(1);
  auto a = std::make_shared<ChatArgs>();
  const auto add = [&](const char* name, const char* help, int (*body)(Globals&, const ChatArgs&)) {
    auto* c = chat->add_subcommand(name, help);
    c->callback([&g, a, body] { g.exit_code = guarded(g, [&] { return body(g, *a); }); });
    return c;
  };
  auto* t = add("tools",
                "tools visible at the node (without --at: the registry's active tools); --format gives the provider's "
                "tools list (--json alone: openai-chat)",
                tools);
  t->add_option("--at", a->at, "task id or unique prefix: the node the model would answer");
  t->add_option("--format", a->tools_format, "openai-chat, openai-responses, anthropic or mcp")
      ->check(CLI::IsMember({"openai-chat", "openai-responses", "anthropic", "mcp"}));
  t->add_flag("--strict", a->strict,
              "OpenAI strict mode: closed object schemas, every property required; a tool that cannot be made strict "
              "without changing its meaning is listed with \"strict\": false and named on stderr");
  add("messages", "chat messages for the model, definition nodes left out", messages)
      ->add_option("--at", a->at, "task id or unique prefix: the node the model would answer")
      ->required();
  auto* c = add("copy", "an ordinary copy of the conversation, without definition nodes", copy);
  c->add_option("--at", a->at, "task id or unique prefix: the last node of the copy")->required();
  c->add_option("--format", a->format, "md (default) or json")->check(CLI::IsMember({"md", "json"}));
  auto* k = add("call",
                "run a model's tool call as the provider sent it (OpenAI chat, OpenAI Responses or Anthropic), store "
                "it under --at with the model's call id, and print the role: tool answer",
                call);
  k->add_option("--at", a->at, "task id or unique prefix: the node the model answered")->required();
  k->add_option("--tool-call", a->tool_call, "the provider's tool call object as JSON, @FILE, or - for stdin")
      ->required();
  k->add_option("--format", a->tools_format,
                "the answer's shape: openai-chat, openai-responses or anthropic (default: the call's own)")
      ->check(CLI::IsMember({"openai-chat", "openai-responses", "anthropic", "mcp"}));  // mcp: refused with why
  k->add_option("--timeout", a->timeout_ms, "in ms (default 10000, or \"timeout\" in config.json)")
      ->each([a](const std::string&) { a->timeout_given = true; });
  k->add_option("--js-runtime", a->js_runtime,
                "node (default) or deno; overrides \"jsRuntime\" in $TASKYON_HOME/config.json")
      ->check(CLI::IsMember({"node", "deno"}));
  add_memory_budget_option(*k, a->memory_budget_mib);
  k->add_flag("--approve-python", a->approve_python, "approve executePython for this process (as tycli call)");
  k->add_option("--python-isolation", a->python_isolation, "strict (default) or host, as tycli call")
      ->check(CLI::IsMember({"host", "strict"}));
}

}  // namespace tycli
