// tycli run FILE: the main job — compile a conversation file into the task
// tree, run its calls in their sandboxes, and print the tree.
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "cli.h"
#include "live.h"
#include "remedies.h"
#include "signals.h"
#include "taskyon/base/escape.h"
#include "taskyon/invoke/conversation.h"
#include "taskyon/native/python.h"
#include "taskyon/sandbox/runtime.h"
#include "tree.h"

namespace tycli {
namespace {

using taskyon::json::Value;
namespace invoke = taskyon::invoke;

struct RunArgs {
  std::string file;
  long long timeout_ms = 10000;
  bool approve_python = false;          // P2, for this process only
  std::string python_isolation;       // empty: strict (the default)
  bool timeout_given = false;           // --timeout given: it wins over config.json's "timeout"
  std::string js_runtime;               // --js-runtime node|deno; empty: config file, else node
  long long memory_budget_mib = -1;     // --memory-budget; -1: config file, else the default
};

Value step_json(const invoke::Step& s) {
  Value out = {{"index", s.index}, {"task", s.task.id}, {"reused", s.reused}};
  if (s.tool) out["tool"] = {{"name", s.tool->manifest.name}, {"revision", s.tool->revision}};
  if (s.result) {
    out["result"] = s.result->id;
    out["state"] = taskyon::tasks::state_name(s.result->state);
  }
  return out;
}

// One line on stderr as entry `s` (of `total`) finishes (issue 16 item 3):
//   [I/N] call NAME STATE in MS ms | [I/N] call NAME reused (stored result) | [I/N] ROLE new|reused
// --json: {"type":"entry","index":I,"of":N,"task":ID,"reused":B[,"tool":NAME,"state":S,"durationMs":MS]}.
std::string step_line(const invoke::Step& s, std::size_t total, bool json) {
  if (json) {
    Value v = step_json(s);
    v["type"] = "entry";
    v["of"] = total;
    if (s.outcome) v["durationMs"] = s.outcome->duration.count();
    return v.dump(-1, ' ', false, Value::error_handler_t::replace);
  }
  std::string what;
  if (s.tool) {
    what = "call " + taskyon::escape_terminal(s.tool->manifest.name) + " ";
    if (!s.outcome)
      what += s.result ? "reused (stored result)" : "not run";
    else
      what += fmt::format("{}{} in {} ms", s.result ? taskyon::tasks::state_name(s.result->state) : "?",
                          s.outcome->status == taskyon::sandbox::Status::ok
                              ? std::string()
                              : fmt::format(" ({})", taskyon::sandbox::status_name(s.outcome->status)),
                          s.outcome->duration.count());
  } else {
    what = fmt::format("{} {}", taskyon::tasks::role_name(s.task.role), s.reused ? "reused" : "new");
  }
  return fmt::format("[{}/{}] {}", s.index + 1, total, what);
}

int run(Globals& g, RunArgs a) {  // a copy: the config file fills it in
  if (auto configured = apply_config_file(a.timeout_ms, a.timeout_given, a.python_isolation); !configured)
    return report(g, configured.error());
  if (a.timeout_ms <= 0)
    return report(g, {taskyon::Errc::bad_usage, "--timeout must be a positive number of milliseconds", "--timeout"});
  auto file = read_json_file(a.file, kMaxConversationFileBytes, "the conversation file", /*stdin_ok=*/true);
  if (!file) return report(g, file.error());
  auto entries = taskyon::tasks::parse_conversation(*file);
  if (!entries) {
    auto e = entries.error();
    e.where = (a.file == "-" ? "stdin" : a.file) + ": " + e.where;
    return report(g, e);
  }
  auto st = open_store(g);
  if (!st) return report(g, st.error());
  auto runtime = runtime_config(a.js_runtime, a.memory_budget_mib);
  if (!runtime) return report(g, runtime.error());
  auto capabilities = capability_options(g);
  if (!capabilities) return report(g, capabilities.error());
  LoggedPool hosted(*st, *runtime);
  taskyon::sandbox::Pool& pool = hosted.pool();
  taskyon::native::Session natives(taskyon::native::python::session_settings(a.approve_python, a.python_isolation));
  invoke::Options options{std::chrono::milliseconds(a.timeout_ms)};
  options.capabilities = std::move(*capabilities);
  Remedies remedies;  // the grants and secrets refused fetches needed, said after the run
  remedies.attach(options.capabilities);
  options.natives = &natives;
  // signals.h: the entry in progress ends as cancelled, the run stops. The
  // token is cancelled before the pool kills the entry's sandbox (the run
  // loop may look at it before moving on, and must find it cancelled) but
  // after the pool is marked interrupted (so the sandbox is logged as
  // "interrupted", not "cancelled").
  Interruption interruption([&](int) {
    pool.interrupt("interrupted", [&] { options.cancel.cancel(); });
  });
  LiveOutput live(g.json, options.timeout);  // logs, progress and each entry as it finishes, on stderr
  live.attach(options);
  invoke::RunHooks hooks;
  hooks.on_call = [&](std::size_t, const taskyon::tasks::Task& call) { live.begin(LiveOutput::tool_name(call, "call")); };
  hooks.on_step = [&](const invoke::Step& s) {
    live.end();
    live.line(step_line(s, entries->size(), g.json));
  };
  auto result = invoke::run_conversation(*st, pool, *entries, options, hooks);
  live.end();
  if (!result) {
    remedies.print(g, *st);
    auto e = result.error();
    e.where = a.file + ": " + e.where;
    return report(g, e);
  }

  // Every root the run touched, in order, and how each task came to be.
  std::vector<std::string> roots;
  std::map<std::string, std::string> marks;
  std::size_t created = 0, ran = 0;
  // A step's root is its parent's root: known for parents this run made,
  // looked up (lineage, verified) only for a parent stored before the run.
  std::map<std::string, std::string> root_of;
  for (const auto& s : result->steps) {
    std::string root;
    if (!s.task.parent_id) {
      root = s.task.id;
    } else if (auto it = root_of.find(*s.task.parent_id); it != root_of.end()) {
      root = it->second;
    } else {
      auto lineage = st->lineage(s.task.id);
      if (!lineage) return report(g, lineage.error());
      root = lineage->front().id;
    }
    root_of[s.task.id] = root;
    if (s.result) root_of[s.result->id] = root;
    if (std::find(roots.begin(), roots.end(), root) == roots.end()) roots.push_back(root);
    marks[s.task.id] = s.reused ? "" : "  (new)";
    created += s.reused ? 0 : 1;
    if (s.outcome) {
      ++ran;
      ++created;
      marks[s.result->id] = "  (new)";
    }
  }
  if (g.json) {
    Value steps = Value::array();
    for (const auto& s : result->steps) steps.push_back(step_json(s));
    print_json({{"steps", steps}, {"roots", roots}, {"created", created}, {"callsRun", ran}});
  } else {
    for (const auto& root : roots) {
      auto t = st->task(root);
      if (!t) return report(g, t.error());
      auto printed = print_tree(*st, *t, [&](const taskyon::tasks::Task& x) {
        auto it = marks.find(x.id);
        return it == marks.end() ? std::string() : it->second;
      }, g.full_ids);
      if (!printed) return report(g, printed.error());
    }
    std::cout << fmt::format("{} entries: {} task(s) new, {} call(s) run{}\n", result->steps.size(), created, ran,
                             created == 0 ? " — everything was already stored (same ids)" : "");
  }
  remedies.print(g, *st);
  if (int signal = interruption.signal()) {
    std::cerr << fmt::format("tycli: {} of {} entries ran before the interruption\n", result->steps.size(),
                             entries->size());
    return interrupted(signal, pool);
  }
  return result->tools_ok() ? kExitOk : kExitToolFailed;
}

}  // namespace

void add_run_command(CLI::App& app, Globals& g) {
  auto a = std::make_shared<RunArgs>();
  auto* r = app.add_subcommand("run", "run a conversation file: compile, pin, run the calls, print the tree");
  r->add_option("file", a->file, "conversation file (a JSON array of drafts, see docs/tasks.md)")
      ->required()
      ->check(existing_file_or_stdin());
  r->add_option("--timeout", a->timeout_ms, "per call, in ms (default 10000, or \"timeout\" in config.json)")
      ->each([a](const std::string&) { a->timeout_given = true; });
  r->add_option("--js-runtime", a->js_runtime,
                "node (default) or deno; overrides \"jsRuntime\" in $TASKYON_HOME/config.json")
      ->check(CLI::IsMember({"node", "deno"}));
  add_memory_budget_option(*r, a->memory_budget_mib);
  r->add_flag("--approve-python", a->approve_python,
              "approve executePython for this process without a prompt (in the strict sandbox by default; with "
              "--python-isolation host it has your OS permissions, and tycli prints a warning)");
  r->add_option("--python-isolation", a->python_isolation,
                "strict (default: sandbox kernel layers + bubblewrap; refuses to run if a layer is missing) or "
                "host (your own OS permissions, no sandbox: prints a warning)")
      ->check(CLI::IsMember({"host", "strict"}));
  r->callback([&g, a] { g.exit_code = guarded(g, [&] { return run(g, *a); }); });
}

}  // namespace tycli
