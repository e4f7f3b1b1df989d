// tycli sandbox explain [--node PATH]: the hardening layers of sandbox
// children on this machine, in the order a child applies them, whether each
// is active here and what it denies; then what a Node sandbox is granted.
#include <sys/utsname.h>

#include <iostream>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cli.h"
#include "taskyon/hardening/probe.h"
#include "taskyon/native/python.h"
#include "taskyon/sandbox/memory.h"
#include "taskyon/sandbox/pool.h"
#include "taskyon/sandbox/runtime.h"
#include "taskyon/sandbox/sandbox.h"

namespace tycli {
namespace {

using taskyon::json::Value;
namespace hardening = taskyon::hardening;
namespace sandbox = taskyon::sandbox;

struct ExplainArgs {
  std::string node;        // empty: the first `node` on PATH
  std::string js_runtime;  // --js-runtime; empty: $TASKYON_HOME/config.json, else node
  long long memory_budget_mib = -1;  // --memory-budget; -1: config file, else the default
};

// The pool's memory budget as tycli call/run would apply it.
Value memory_budget_json(const ExplainArgs& a) {
  sandbox::RuntimeConfig config;
  Value out = {{"configKey", "sandboxMemoryBudgetMiB"}, {"flag", "--memory-budget"}};
  if (auto selected = sandbox::select_runtime(config, "", sandbox::config_file_path()); !selected) {
    out["error"] = selected.error().describe();
    return out;
  }
  if (auto applied = apply_memory_budget(config, a.memory_budget_mib); !applied) {
    out["error"] = applied.error().describe();
    return out;
  }
  out["budgetBytes"] = config.memory_budget_bytes;
  out["mechanism"] = config.memory_budget_bytes == 0
                         ? "none: no budget (0)"
                         : "pool-wide, from each child's PSS (/proc/PID/smaps_rollup; RSS first as a cheap upper "
                           "bound): least recently used idle sandboxes destroyed (\"memory_budget\") before a "
                           "start and after every call";
  const std::string cgroup = sandbox::cgroup_v2_memory_unavailable();
  out["cgroupV2"] = cgroup.empty() ? std::string("a delegated memory controller exists, not used: the budget is "
                                                 "enforced from PSS")
                                   : "not used: " + cgroup;
  return out;
}

// Which JS runtime `tycli call`/`run` would use (flag, then config file, then
// node) and where it was found; for Deno also what its children get.
Value js_runtime_json(const ExplainArgs& a) {
  sandbox::RuntimeConfig config;
  config.node_path = a.node;
  const std::string file = sandbox::config_file_path();
  Value out = {{"configFile", file}};
  if (auto selected = sandbox::select_runtime(config, a.js_runtime, file); !selected) {
    out["error"] = selected.error().describe();
    return out;
  }
  out["selected"] = std::string(sandbox::js_runtime_name(config.runtime));
  auto located = sandbox::locate_runtime(config);
  if (!located) {
    out["error"] = located.error().message;
    return out;
  }
  out["path"] = located->path;
  out["foundIn"] = located->source;
  if (config.runtime == sandbox::JsRuntime::deno) {
    auto policy = sandbox::deno_policy(located->path);
    if (!policy) {
      out["error"] = policy.error().describe();
      return out;
    }
    Value argv = Value::array();
    for (const std::string& arg : sandbox::deno_argv(located->path, config)) {
      argv.push_back(arg.starts_with("data:") ? std::string("<harness: src/guest/deno/harness.js as a data: URL>")
                                              : arg);
    }
    const auto limits = sandbox::deno_limits(config);
    out["argv"] = argv;
    out["environment"] = sandbox::deno_env("<sandbox directory>/deno");
    out["landlock"] = {{"readExecute", (*policy)->grants().read_execute}, {"read", (*policy)->grants().read}};
    out["seccompExceptions"] = Value::array({"socketpair(AF_UNIX, SOCK_STREAM)"});
    out["limits"] = {{"dataBytes", limits.data_bytes}, {"openFiles", limits.open_files}};
  }
  return out;
}

std::string kernel_release() {
  struct utsname uts {};
  return ::uname(&uts) == 0 ? std::string(uts.release) : std::string("unknown");
}

// The Node child's argv as people read it: the harness source stands for itself.
Value readable_argv(const std::string& node, const sandbox::RuntimeConfig& config) {
  Value argv = Value::array();
  for (const std::string& arg : sandbox::node_argv(node, config)) {
    argv.push_back(arg.size() > 200 ? std::string("<harness: src/guest/node/bootstrap.js>") : arg);
  }
  return argv;
}

int explain(Globals& g, const ExplainArgs& a) {
  const hardening::Support& support = hardening::support();
  const auto layers = hardening::describe_layers(support);
  const auto warnings = hardening::warnings(support);

  sandbox::RuntimeConfig config;
  config.node_path = a.node;
  Value node = Value();
  std::string node_error;
  if (auto path = sandbox::find_node(config.node_path); !path) {
    node_error = path.error().message;
  } else if (auto policy = sandbox::node_policy(*path); !policy) {
    node_error = policy.error().describe();
  } else {
    const auto limits = sandbox::node_limits(config);
    node = {{"path", *path},
            {"argv", readable_argv(*path, config)},
            {"environment", Value::object()},
            {"landlock",
             {{"readExecute", (*policy)->grants().read_execute}, {"read", (*policy)->grants().read}}},
            {"limits", {{"dataBytes", limits.data_bytes}, {"openFiles", limits.open_files}}}};
  }

  if (g.json) {
    Value out = {{"kernel", kernel_release()},
                 {"landlockAbi", support.landlock_abi},
                 {"layers", Value::array()},
                 {"warnings", warnings},
                 {"node", node},
                 {"jsRuntime", js_runtime_json(a)},
                 {"memoryBudget", memory_budget_json(a)},
                 {"python", taskyon::native::python::explain()}};
    for (const auto& layer : layers) {
      out["layers"].push_back({{"id", layer.id},
                               {"name", layer.name},
                               {"active", layer.active},
                               {"detail", layer.detail},
                               {"denies", layer.denies},
                               {"tests", layer.tests}});
    }
    if (!node_error.empty()) out["nodeError"] = node_error;
    print_json(out);
    return kExitOk;
  }

  std::cout << fmt::format("Sandbox layers on this machine (Linux {}), in the order each child applies them:\n",
                           kernel_release());
  for (const auto& layer : layers) {
    std::cout << fmt::format("  {:<8} {:<16} {}: {}\n", layer.active ? "active" : "MISSING", layer.id, layer.name,
                             layer.detail);
    std::cout << fmt::format("  {:<8} {:<16} denies: {}\n", "", "", layer.denies);
    if (!layer.tests.empty()) std::cout << fmt::format("  {:<8} {:<16} shown by: {}\n", "", "", layer.tests);
  }
  if (node.is_null()) {
    std::cout << fmt::format("\nNode sandboxes: unavailable ({})\n", node_error);
  } else {
    std::cout << fmt::format("\nNode sandboxes ({}):\n", node["path"].get<std::string>());
    std::string argv;
    for (const auto& arg : node["argv"]) argv += (argv.empty() ? "" : " ") + arg.get<std::string>();
    std::cout << fmt::format("  argv         {}\n", argv);
    std::cout << "  environment  empty\n";
    for (const auto& path : node["landlock"]["readExecute"]) {
      std::cout << fmt::format("  read+exec    {}\n", path.get<std::string>());
    }
    for (const auto& path : node["landlock"]["read"]) {
      std::cout << fmt::format("  read         {}\n", path.get<std::string>());
    }
    std::cout << fmt::format("  limits       RLIMIT_DATA {} MiB, RLIMIT_NOFILE {}, RLIMIT_FSIZE 0, RLIMIT_CORE 0\n",
                             node["limits"]["dataBytes"].get<std::uint64_t>() >> 20,
                             node["limits"]["openFiles"].get<std::uint64_t>());
  }
  const Value budget = memory_budget_json(a);
  if (budget.contains("error")) {
    std::cout << fmt::format("\nMemory budget across live sandboxes: {}\n", budget["error"].get<std::string>());
  } else {
    const auto bytes = budget["budgetBytes"].get<std::uint64_t>();
    std::cout << fmt::format("\nMemory budget across live sandboxes: {}\n  enforced     {}\n  cgroup v2    {}\n"
                             "  set by       --memory-budget MIB, else \"sandboxMemoryBudgetMiB\" in the config file\n",
                             bytes == 0 ? std::string("none") : fmt::format("{} MiB", bytes >> 20),
                             budget["mechanism"].get<std::string>(), budget["cgroupV2"].get<std::string>());
  }
  const Value py = taskyon::native::python::explain();
  std::string strict_layers;
  for (const auto& layer : py.value("strict", Value::array()))
    strict_layers += (strict_layers.empty() ? "" : ", ") + (layer.is_string() ? layer.get<std::string>() : layer.dump());
  const Value bwrap = py.value("bubblewrap", Value::object());
  std::cout << fmt::format("\nexecutePython: {}\n  --python-isolation strict (the default): {}\n  bubblewrap: {}\n",
                           py["interpreter"].is_null() ? "not offered (" + py.value("why", std::string("?")) + ")"
                                                       : py["interpreter"].value("executable", std::string("?")),
                           py.value("strictAvailable", false)
                               ? (strict_layers.empty() ? std::string("-") : strict_layers)
                               : "REFUSES TO RUN here: " + py.value("strictMissing", std::string("?")),
                           bwrap.value("usable", false) ? bwrap.value("path", std::string("usable"))
                                                        : "not used: " + bwrap.value("why", std::string("missing")));
  std::cout << fmt::format("  strict sandbox uid: {}\n", py.value("sandboxUid", std::string("-")));
  std::cout << fmt::format("  --python-isolation host: {}\n", py.value("host", std::string("-")));
  const Value js = js_runtime_json(a);
  if (js.contains("error")) {
    std::cout << fmt::format("\nJS runtime for tycli call/run: {} ({})\n", js.value("selected", "unknown"),
                             js["error"].get<std::string>());
  } else {
    std::cout << fmt::format("\nJS runtime for tycli call/run: {}, found in {}: {}\n",
                             js["selected"].get<std::string>(), js["foundIn"].get<std::string>(),
                             js["path"].get<std::string>());
    std::cout << fmt::format("  chosen by    --js-runtime, else \"jsRuntime\" in {}, else node\n",
                             js["configFile"].get<std::string>());
  }
  if (js.contains("argv")) {
    std::string argv;
    for (const auto& arg : js["argv"]) argv += (argv.empty() ? "" : " ") + arg.get<std::string>();
    std::cout << fmt::format("  argv         {}\n", argv);
    std::string env;
    for (const auto& entry : js["environment"]) env += (env.empty() ? "" : " ") + entry.get<std::string>();
    std::cout << fmt::format("  environment  {}\n", env);
    for (const auto& path : js["landlock"]["readExecute"]) {
      std::cout << fmt::format("  read+exec    {}\n", path.get<std::string>());
    }
    for (const auto& path : js["landlock"]["read"]) std::cout << fmt::format("  read         {}\n", path.get<std::string>());
    std::cout << "  seccomp      as for Node, except socketpair(AF_UNIX, SOCK_STREAM) (tokio's signal driver)\n";
    std::cout << fmt::format("  limits       RLIMIT_DATA {} MiB, RLIMIT_NOFILE {}, RLIMIT_FSIZE 0, RLIMIT_CORE 0\n",
                             js["limits"]["dataBytes"].get<std::uint64_t>() >> 20,
                             js["limits"]["openFiles"].get<std::uint64_t>());
  }
  for (const auto& warning : warnings) std::cerr << fmt::format("tycli: warning: {}\n", warning);
  return kExitOk;
}

}  // namespace

void add_memory_budget_option(CLI::App& command, long long& mib) {
  command.add_option("--memory-budget", mib,
                     fmt::format("the sum of live sandboxes' memory (PSS), MiB; 0: none (default {}; overrides "
                                 "\"sandboxMemoryBudgetMiB\" in $TASKYON_HOME/config.json)",
                                 sandbox::kDefaultMemoryBudgetBytes >> 20));
}

taskyon::Result<void> apply_memory_budget(sandbox::RuntimeConfig& config, long long mib) {
  if (mib == -1) return {};
  if (mib < 0 || static_cast<unsigned long long>(mib) > sandbox::kMaxMemoryBudgetMib)
    return taskyon::fail(taskyon::Errc::bad_usage,
                         fmt::format("--memory-budget must be a whole number of MiB from 0 (no budget) to {}, not {}",
                                     sandbox::kMaxMemoryBudgetMib, mib),
                         "--memory-budget");
  config.memory_budget_bytes = static_cast<std::uint64_t>(mib) << 20;
  return {};
}

void add_prestart_option(CLI::App& command, long long& count) {
  command.add_option("--prestart", count,
                     fmt::format("hardened sandboxes started ahead, not yet loaded, so a revision's first call does "
                                 "not wait for one (default 0; at most {}; they count in --memory-budget)",
                                 kMaxPrestart));
}

taskyon::Result<void> apply_prestart(sandbox::RuntimeConfig& config, long long count) {
  if (count < 0 || count > kMaxPrestart)
    return taskyon::fail(taskyon::Errc::bad_usage,
                         fmt::format("--prestart must be 0..{} sandboxes, not {}", kMaxPrestart, count), "--prestart");
  config.prestart = static_cast<std::size_t>(count);
  return {};
}

void add_sandbox_commands(CLI::App& app, Globals& g) {
  auto* sb = app.add_subcommand("sandbox", "inspect the sandbox that runs tool code");
  sb->require_subcommand(1);
  auto ea = std::make_shared<ExplainArgs>();
  auto* ex = sb->add_subcommand("explain",
                                "list the hardening layers of sandbox children: active on this machine or not, "
                                "and what each denies");
  ex->add_option("--node", ea->node, "the Node executable to describe (default: `node` on PATH)");
  ex->add_option("--js-runtime", ea->js_runtime,
                 "node or deno: the runtime to describe (default: as tycli call would choose)")
      ->check(CLI::IsMember({"node", "deno"}));
  add_memory_budget_option(*ex, ea->memory_budget_mib);
  ex->callback([&g, ea] { g.exit_code = guarded(g, [&] { return explain(g, *ea); }); });
  add_sandbox_log_command(*sb, g);
}

}  // namespace tycli
