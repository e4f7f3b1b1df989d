// S3, S5 (the pool's lifecycle through the real host: activation, abort,
// terminate) and N2, N4 (Deno: only when selected and installed, and then
// with no Deno permissions).
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "taskyon/diagnostics/groups.h"
#include "taskyon/invoke/invoke.h"
#include "taskyon/sandbox/runtime.h"
#include "taskyon/tasks/compiler.h"

namespace taskyon::diagnostics {
namespace {

namespace fs = std::filesystem;
using json::Value;
using namespace std::chrono_literals;
using sandbox::Status;


int pid_of(const sandbox::Pool& pool, const std::string& revision) {
  for (const auto& s : pool.sandboxes()) {
    if (s.revision == revision && s.mode == sandbox::Mode::retained) return s.pid;
  }
  return -1;
}



invoke::Invocation call(Env& env, const std::string& name) {
  auto compiled = need(tasks::compile(tasks::function_call(name, {{"input", ""}}), {{}, env.store().resolver()}),
                       "compile a call of " + name);
  return need(invoke::run_call(env.store(), env.pool(), compiled.task, {}), "run " + name);
}

std::vector<std::string> cmdline_of(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  std::vector<std::string> argv;
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = text.find('\0', begin);
    if (end == std::string::npos) end = text.size();
    argv.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return argv;
}

// --- S3, S5 --------------------------------------------------------------------------

Outcome revision_change_destroys(Env& env) {
  const auto v1 = install_js(env, "counter", "() => (globalThis.n = (globalThis.n || 0) + 1)");
  const auto v2 = install_js(env, "counter", "() => 'v2'");  // stored, not active: the name is bound to v1
  install_js(env, "bystander", "() => 'other'");
  expect(v1 != v2, "the two versions have one revision");
  auto first = call(env, "counter");
  expect(first.ok() && first.tool.revision == v1, "the first call did not run v1");
  expect(call(env, "bystander").ok(), "the bystander failed");
  const int v1_pid = pid_of(env.pool(), v1);
  const int other_pid = pid_of(env.pool(), call(env, "bystander").tool.revision);
  expect(v1_pid > 0 && other_pid > 0, "the sandboxes were not retained");
  need(invoke::activate(env.store(), env.pool(), "counter", v2), "activate v2");
  // At once: before any call of the new revision.
  expect(pid_of(env.pool(), v1) < 0 && destroyed_for(env.pool(), v1, "superseded"),
         "v1's sandbox outlived the activation of v2");
  for (int i = 0; i < 100 && !process_gone(v1_pid); ++i) std::this_thread::sleep_for(5ms);
  expect(process_gone(v1_pid), "v1's sandbox process is still alive");
  expect(pid_of(env.pool(), call(env, "bystander").tool.revision) == other_pid,
         "another tool's sandbox was destroyed too");
  auto next = call(env, "counter");
  expect(next.ok() && next.tool.revision == v2 && next.outcome.value == "v2" && next.outcome.fresh_sandbox,
         "the call after the activation did not run v2 in a fresh sandbox");
  return pass("activating a new revision destroys the old revision's sandbox at once; other tools are untouched");
}

Outcome abort_or_terminate_destroys(Env& env) {
  const std::string spin = "sha256:diagnostics-spin";
  sandbox::CallRequest req = request(spin, "() => { process.title = 'spinning'; for (;;) {} }");
  sandbox::Pool& pool = env.pool();
  std::thread canceller([&] {
    for (int i = 0; i < 1000; ++i) {
      auto infos = pool.sandboxes();
      if (!infos.empty()) {
        std::string comm;
        std::getline(std::ifstream("/proc/" + std::to_string(infos[0].pid) + "/comm"), comm);
        if (comm == "spinning") break;
      }
      std::this_thread::sleep_for(5ms);
    }
    req.cancel.cancel();
  });
  const auto start = std::chrono::steady_clock::now();
  auto out = env.pool().call(req);
  canceller.join();
  auto aborted = need(std::move(out), "the spinning call");
  expect(aborted.status == Status::cancelled, "an aborted call ended " + std::string(sandbox::status_name(aborted.status)));
  expect(std::chrono::steady_clock::now() - start < 8s, "the abort did not end the call before its timeout");
  expect(aborted.destroyed == "cancelled" && destroyed_for(pool, spin, "cancelled"),
         "the aborted call's sandbox was not destroyed");
  expect(pool.live().empty(), "a sandbox is alive after the abort");

  const std::string idle = "sha256:diagnostics-idle";
  const std::string code = "() => (globalThis.n = (globalThis.n || 0) + 1)";
  ok_value(env.call(request(idle, code)), "the first call");
  const int pid = pid_of(pool, idle);
  pool.terminate(idle);
  expect(destroyed_for(pool, idle, "terminated") && pid_of(pool, idle) < 0, "terminate did not destroy the sandbox");
  for (int i = 0; i < 100 && !process_gone(pid); ++i) std::this_thread::sleep_for(5ms);
  expect(process_gone(pid), "the terminated sandbox's process is still alive");
  auto next = env.call(request(idle, code));
  expect(ok_value(next, "the call after terminate") == 1 && next.fresh_sandbox,
         "the call after terminate saw the old sandbox");
  return pass("aborting a call from another thread and terminating a revision both destroy its sandbox");
}

// --- N2, N4 ----------------------------------------------------------------------------

Outcome deno_only_when_selected_and_installed(Env& env) {
  sandbox::RuntimeConfig config;
  config.runtime = sandbox::JsRuntime::deno;
  config.deno_path = (env.dir() / "no-deno-here").string();
  sandbox::Pool pool(config);
  auto result = pool.call(request("sha256:diagnostics-deno-missing", "() => 1"));
  expect(!result.has_value(), "a pool selecting a missing Deno ran the call (in another runtime?)");
  expect(result.error().code == Errc::runtime_missing,
         "a missing Deno was not runtime_missing: " + result.error().describe());
  expect(result.error().message.find("scripts/setup.sh") != std::string::npos,
         "the error does not say how to install Deno: " + result.error().message);
  expect(pool.sandboxes().empty(), "a sandbox was started without Deno");
  const fs::path not_deno = env.dir() / "deno";
  std::ofstream(not_deno) << "#!/usr/bin/env node\n";
  fs::permissions(not_deno, fs::perms::owner_all);
  auto shim = sandbox::find_deno(not_deno.string());
  expect(!shim && shim.error().code == Errc::runtime_missing, "a script named deno was taken for Deno");
  // Without selecting Deno, Node runs (N1).
  auto node = ok_value(env.call(request("sha256:diagnostics-default", "() => typeof Deno")), "a default call");
  expect(node == "undefined", "the default configuration ran Deno");
  return pass("Deno selected but missing is runtime_missing with the install hint; not selected, Node runs");
}

Outcome deno_has_no_permissions(Env&) {
  auto deno = sandbox::find_deno("");
  if (!deno) skip_check("Deno is not installed: run scripts/setup.sh (" + deno.error().message + ")");
  sandbox::RuntimeConfig config;
  config.runtime = sandbox::JsRuntime::deno;
  config.deno_path = deno->path;
  sandbox::Pool pool(config);
  auto result = need(pool.call(request("sha256:diagnostics-deno-perms", R"(async () => {
      const out = {};
      for (const name of ['read', 'write', 'net', 'env', 'run', 'ffi', 'sys', 'import'])
        out[name] = (await Deno.permissions.query({ name })).state;
      out.request = (await Deno.permissions.request({ name: 'read' })).state;
      return out;
    })", Value::object(), 15s)), "the Deno call");
  Value v = ok_value(result, "the Deno call");
  expect(v.is_object() && v.size() == 9, "unexpected answer: " + v.dump());
  for (const auto& [name, state] : v.items())
    expect(state == "denied" || state == "prompt", "Deno permission " + name + " is " + state.dump());
  expect(pool.sandboxes().size() == 1, "no live Deno sandbox");
  const auto argv = cmdline_of(pool.sandboxes()[0].pid);
  expect(argv.size() >= 2 && argv[1] == "run", "the Deno child is not `deno run`");
  need(sandbox::check_deno_argv(argv), "the live child's argv");
  for (const auto& arg : argv)
    expect(!(arg == "-A" || arg.starts_with("--allow") || arg.starts_with("-P") || arg.starts_with("--permission")),
           "the Deno child has a permission flag: " + arg);
  auto with_allow = argv;
  with_allow.insert(with_allow.begin() + 2, "--allow-read");
  expect(!sandbox::check_deno_argv(with_allow), "the argv check admits --allow-read");
  return pass("the Deno child runs without permission flags and every Deno permission is denied or prompt");
}

}  // namespace

void add_lifecycle_checks(Registry& r) {
  add(r, {"S3", "revision_change_destroys_old_sandbox", "activating a new revision destroys the old one's sandbox",
          revision_change_destroys});
  add(r, {"S5", "abort_or_terminate_destroys_sandbox", "an aborted call or terminate() destroys the sandbox",
          abort_or_terminate_destroys});
  add(r, {"N2", "deno_only_when_selected_and_installed", "a missing Deno is refused; Node runs unless Deno is chosen",
          deno_only_when_selected_and_installed});
  add(r, {"N4", "deno_has_no_permissions", "a Deno sandbox has no permission flags and no granted permission",
          deno_has_no_permissions});
}

}  // namespace taskyon::diagnostics
