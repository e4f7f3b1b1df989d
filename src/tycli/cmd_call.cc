// tycli call NAME|REV [--args JSON|@FILE]... | tycli call --task ID
#include <chrono>
#include <iostream>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "cli.h"
#include "live.h"
#include "remedies.h"
#include "suggest.h"
#include "signals.h"
#include "taskyon/base/escape.h"
#include "taskyon/host/views.h"
#include "taskyon/invoke/invoke.h"
#include "taskyon/invoke/runtime_record.h"
#include "taskyon/native/python.h"
#include "taskyon/sandbox/runtime.h"
#include "taskyon/tasks/compiler.h"

namespace tycli {
namespace {

using taskyon::json::Value;
namespace sandbox = taskyon::sandbox;
namespace tasks = taskyon::tasks;

struct CallArgs {
  std::string tool;
  std::vector<std::string> args;
  std::string task;
  long long timeout_ms = 10000;
  bool verbose = false;
  bool disposable = false;
  bool approve_python = false;          // P2, for this process only
  std::string python_isolation;       // empty: strict (the default)
  bool timeout_given = false;           // --timeout given: it wins over config.json's "timeout"
  std::string js_runtime;               // --js-runtime node|deno; empty: config file, else node
  long long memory_budget_mib = -1;     // --memory-budget; -1: config file, else the default
  std::string runtime_mismatch = "refuse";  // --runtime-mismatch refuse|allow (with --task)
};

// `streamed`: the first logs were printed live already (live.h).
void print_human(const taskyon::invoke::Invocation& inv, bool verbose, std::size_t streamed) {
  const auto& o = inv.outcome;
  if (verbose) {
    std::cerr << fmt::format("task     {}\ntool     {} {}\nsettings {}\nsandbox  {}{}\ntook     {} ms\n", inv.call.id,
                             inv.tool.manifest.name, inv.tool.revision, inv.call.settings_revision.value_or("-"),
                             o.fresh_sandbox ? "started for this call" : "reused (retained)",
                             o.destroyed ? fmt::format(", then destroyed ({})", *o.destroyed) : std::string(),
                             o.duration.count());
  }
  // Logs, results and errors are tool text: escaped (taskyon/base/escape.h),
  // so a tool cannot move the cursor, set the clipboard or forge a line.
  using taskyon::escape_terminal;
  for (std::size_t i = streamed; i < o.logs.size(); ++i)
    std::cerr << fmt::format("[{}] {}\n", escape_terminal(o.logs[i].level), escape_terminal(o.logs[i].text));
  if (o.logs_truncated) std::cerr << "[logs truncated]\n";
  if (inv.ok()) {
    std::cout << taskyon::escape_json_dump(o.value.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)) << "\n";
  } else {
    // (A timeout was announced at 80 % of it, naming --timeout: live.h.)
    std::cerr << fmt::format("tycli: tool \"{}\" failed: {}: {}\n", escape_terminal(inv.tool.manifest.name),
                             sandbox::status_name(o.status), escape_terminal(o.error));
  }
}

// A stored call re-run on another runtime than the one its result records
// (issue 16): refused unless --runtime-mismatch allow; another version of the
// same runtime is said on stderr.
int check_runtime(const Globals& g, const CallArgs& a, taskyon::store::Store& st, const sandbox::Pool& pool,
                  const tasks::Task& call, const taskyon::native::Session& natives) {
  auto cmp = taskyon::invoke::compare_runtime(st, pool, call, &natives);
  if (!cmp) return report(g, cmp.error());
  using taskyon::invoke::describe_runtime;
  if (cmp->mismatch()) {
    const auto& now = *cmp->now;
    const bool python = now.value("kind", "") == "python";
    const std::string chosen = python ? "--python-isolation " + now.value("isolation", "")
                                      : "--js-runtime " + now.value("kind", "");
    const std::string what = fmt::format("this call ran on {}; {} would run it on {}", describe_runtime(cmp->recorded),
                                         chosen, describe_runtime(now));
    if (a.runtime_mismatch != "allow")
      return report(g, {taskyon::Errc::bad_usage,
                        what + "; pass --runtime-mismatch allow to run it anyway (its new result records " +
                            describe_runtime(now) + ")",
                        "--runtime-mismatch"});
    std::cerr << "tycli: warning: " << taskyon::escape_terminal(what) << " (--runtime-mismatch allow)\n";
  } else if (cmp->version_differs()) {
    std::cerr << fmt::format("tycli: note: this call ran on {}; it now runs on {}\n",
                             taskyon::escape_terminal(describe_runtime(cmp->recorded)),
                             taskyon::escape_terminal(describe_runtime(*cmp->now)));
  }
  return kExitOk;
}

int call(Globals& g, CallArgs a) {  // a copy: the config file fills it in
  if (a.task.empty() && a.tool.empty())
    return report(g, {taskyon::Errc::bad_usage,
                      "name the tool to call (its name, revision id or prefix: `tycli tool list`) or a stored call "
                      "to run again (--task ID: `tycli task tree`)",
                      "call"});
  if (!a.task.empty() && !a.tool.empty())
    return report(g, {taskyon::Errc::bad_usage,
                      "give a tool or --task ID, not both (a stored call already names its revision)", "call"});
  if (!a.task.empty() && !a.args.empty())
    return report(g, {taskyon::Errc::bad_usage, "--args cannot be combined with --task (a stored call keeps its arguments)",
                      "--args"});
  if (auto configured = apply_config_file(a.timeout_ms, a.timeout_given, a.python_isolation); !configured)
    return report(g, configured.error());
  if (a.timeout_ms <= 0)
    return report(g, {taskyon::Errc::bad_usage, "--timeout must be a positive number of milliseconds", "--timeout"});

  auto capabilities = capability_options(g);
  if (!capabilities) return report(g, capabilities.error());
  auto st = open_store(g);
  if (!st) return report(g, st.error());

  // Compile every call before running any: bad input changes nothing.
  std::vector<tasks::Compiled> calls;  // a stored call (--task) has no compiled tool
  if (!a.task.empty()) {
    auto t = st->task(a.task);
    if (!t) return report(g, t.error());
    // A call tool code planted (createSubtasksResult) runs only with the
    // approval a fresh call needs (--approve-python stays explicit), and
    // never without saying who planted it.
    if (t->created_by)
      std::cerr << fmt::format("tycli: call {} was planted by tool call {} (revision {}), not written by you; it runs "
                               "with the same approvals as a fresh call\n",
                               t->id, t->created_by->task, t->created_by->revision);
    calls.push_back({std::move(*t), std::nullopt});
  } else {
    const std::vector<std::string> args = a.args.empty() ? std::vector<std::string>{"{}"} : a.args;
    for (const auto& text : args) {
      auto value = json_argument(text, "--args", kMaxArgumentsFileBytes);
      if (!value) return report(g, value.error());
      auto compiled = tasks::compile(tasks::function_call(a.tool, std::move(*value)), {{}, st->resolver()});
      if (!compiled) {
        auto e = compiled.error();
        // A mistyped name: the nearest active tool, as a mistyped command gets (suggest.h).
        if (e.code == taskyon::Errc::not_found)
          if (auto names = st->active_names(); names)
            if (const std::string near = nearest_name(a.tool, *names); !near.empty())
              e.message += fmt::format(" (did you mean `tycli call {}`?)", near);
        return report(g, e);
      }
      calls.push_back(std::move(*compiled));
    }
  }

  auto runtime = runtime_config(a.js_runtime, a.memory_budget_mib);
  if (!runtime) return report(g, runtime.error());
  LoggedPool hosted(*st, *runtime);
  sandbox::Pool& pool = hosted.pool();
  taskyon::invoke::Options options{std::chrono::milliseconds(a.timeout_ms),
                                   a.disposable ? sandbox::Mode::disposable : sandbox::Mode::retained};
  options.capabilities = std::move(*capabilities);
  Remedies remedies;  // the grant or secret a refused fetch needed, said after the call
  remedies.attach(options.capabilities);
  taskyon::native::Session natives(taskyon::native::python::session_settings(a.approve_python, a.python_isolation));
  options.natives = &natives;
  if (!a.task.empty())
    if (int refused = check_runtime(g, a, *st, pool, calls.front().task, natives); refused != kExitOk) return refused;
  LiveOutput live(g.json, options.timeout);  // logs and progress as they arrive, on stderr
  live.attach(options);
  // A signal ends the running call as cancelled and destroys every sandbox
  // ("interrupted"); the loop stores that call and stops (signals.h).
  Interruption interruption([&](int) {  // the token inside interrupt(), as in cmd_run.cc
    pool.interrupt("interrupted", [&] { options.cancel.cancel(); });
  });
  int exit = kExitOk;
  for (auto& c : calls) {
    if (interruption.signal()) break;
    live.begin(LiveOutput::tool_name(c.task, a.tool));
    auto inv = taskyon::invoke::run_call(*st, pool, c.task, options,
                                                c.tool ? std::optional(std::move(c.tool->tool)) : std::nullopt);
    live.end();
    if (!inv) {
      remedies.print(g, *st);
      return report(g, inv.error());
    }
    if (g.json)
      print_json(taskyon::host::invocation_json(*inv));
    else
      print_human(*inv, a.verbose, live.streamed());
    remedies.print(g, *st);
    if (!inv->ok()) exit = kExitToolFailed;
    hosted.flush();
  }
  if (a.verbose && !g.json)
    for (const auto& d : pool.destructions())
      std::cerr << fmt::format("sandbox of {} destroyed: {}\n", short_id(d.revision), d.reason);
  if (int signal = interruption.signal()) return interrupted(signal, pool);
  return exit;
}

}  // namespace

void add_call_command(CLI::App& app, Globals& g) {
  auto a = std::make_shared<CallArgs>();
  auto* c = app.add_subcommand("call", "compile a pinned call, run it in its sandbox, store call and result");
  c->add_option("tool", a->tool, "tool name, revision id, or unique prefix (>= 12 hex digits)");
  c->add_option("--args", a->args,
                "arguments as JSON or @FILE (default {}); repeat for several calls in one retained sandbox")
      ->allow_extra_args(false);
  c->add_option("--task", a->task, "re-run a stored call on its pinned revision");
  c->add_option("--timeout", a->timeout_ms, "per call, in ms (default 10000, or \"timeout\" in config.json)")
      ->each([a](const std::string&) { a->timeout_given = true; });
  c->add_option("--js-runtime", a->js_runtime,
                "node (default) or deno; overrides \"jsRuntime\" in $TASKYON_HOME/config.json")
      ->check(CLI::IsMember({"node", "deno"}));
  c->add_option("--runtime-mismatch", a->runtime_mismatch,
                "with --task: refuse (default) or allow a re-run on another runtime than its result records")
      ->check(CLI::IsMember({"refuse", "allow"}));
  add_memory_budget_option(*c, a->memory_budget_mib);
  c->add_flag("--verbose", a->verbose, "show task ids, pinned revisions and the sandbox's life");
  c->add_flag("--disposable", a->disposable, "run each call in a fresh sandbox, destroyed after it");
  c->add_flag("--approve-python", a->approve_python,
              "approve executePython for this process without a prompt (in the strict sandbox by default; with "
              "--python-isolation host it has your OS permissions, and tycli prints a warning)");
  c->add_option("--python-isolation", a->python_isolation,
                "strict (default: sandbox kernel layers + bubblewrap; refuses to run if a layer is missing) or "
                "host (your own OS permissions, no sandbox: prints a warning)")
      ->check(CLI::IsMember({"host", "strict"}));
  c->callback([&g, a] { g.exit_code = guarded(g, [&] { return call(g, *a); }); });
}

}  // namespace tycli
