// Deno as the selectable JS runtime of the sandbox (DESIGN §5; N1, N2, N4 and
// the pool's S1, S2, S4, S6 on Deno). Real deno processes under the real
// containment: the project-local install that scripts/setup.sh makes (npm
// package `deno`), found by sandbox::find_deno.
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "taskyon/hardening/probe.h"
#include "taskyon/hardening/seccomp.h"
#include "taskyon/sandbox/pool.h"
#include "taskyon/sandbox/runtime.h"
#include "taskyon/sandbox/sandbox.h"
#include "test_util.h"

namespace taskyon::sandbox {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using json::Value;
using taskyon::testing::TempDir;

RuntimeConfig deno_config() {
  RuntimeConfig config;
  config.runtime = JsRuntime::deno;
  return config;
}

CallOutcome call(Pool& pool, const std::string& revision, const std::string& code, Value args = Value::object(),
                 std::chrono::milliseconds timeout = 15s, Mode mode = Mode::retained) {
  CallRequest request;
  request.tool = ToolCode{"sha256:deno-" + revision, code, {}};
  request.args = std::move(args);
  request.timeout = timeout;
  request.mode = mode;
  auto result = pool.call(request);
  if (!result) {
    ADD_FAILURE() << "Pool::call failed: " << result.error().describe();
    CallOutcome failed;
    failed.status = Status::crashed;
    return failed;
  }
  if (result->status == Status::crashed || result->status == Status::protocol_error) {
    for (const auto& log : result->logs) std::cerr << "  [" << log.level << "] " << log.text << "\n";
  }
  return std::move(*result);
}

// The child's argv as the kernel holds it.
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

bool process_gone(int pid) { return ::kill(pid, 0) == -1 && errno == ESRCH; }

// --- Selection (N1, N2) ------------------------------------------------------------

TEST(DenoRuntime, FindsTheProjectInstall) {
  // CI installs the npm package (scripts/setup.sh); a missing Deno here is a failure, not a skip.
  auto found = find_deno("");
  ASSERT_TRUE(found.has_value()) << found.error().describe();
  EXPECT_TRUE(fs::path(found->path).is_absolute());
  EXPECT_EQ(found->runtime, JsRuntime::deno);
  EXPECT_FALSE(found->path.ends_with(".cjs")) << "the npm shim, not the platform binary: " << found->path;
}

TEST(DenoRuntime, NodeIsTheDefault) {  // N1
  RuntimeConfig config;
  EXPECT_EQ(config.runtime, JsRuntime::node);
  Pool pool;
  auto out = call(pool, "default", "() => typeof Deno + ' ' + typeof process");
  ASSERT_EQ(out.status, Status::ok) << out.error;
  EXPECT_EQ(out.value, "undefined object");
  auto located = locate_runtime(config);
  ASSERT_TRUE(located.has_value()) << located.error().describe();
  EXPECT_EQ(located->runtime, JsRuntime::node);
  EXPECT_EQ(fs::path(cmdline_of(pool.sandboxes().at(0).pid).at(0)).filename(), fs::path(located->path).filename());
}

TEST(DenoRuntime, SelectedButMissingSaysHowToInstall) {  // N2
  TempDir dir;
  RuntimeConfig config = deno_config();
  config.deno_path = (dir / "no-deno-here").string();
  Pool pool(config);
  CallRequest request;
  request.tool = ToolCode{"sha256:deno-missing", "() => 1", {}};
  auto result = pool.call(request);
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code, Errc::runtime_missing);
  EXPECT_NE(result.error().message.find("make install"), std::string::npos) << result.error().message;
  EXPECT_NE(result.error().message.find("scripts/setup.sh"), std::string::npos) << result.error().message;
  EXPECT_NE(result.error().message.find("PATH"), std::string::npos) << result.error().message;
  EXPECT_TRUE(pool.sandboxes().empty());
  // Selected but not installed anywhere: an empty PATH and a configured path that is not Deno.
  const std::string not_deno = dir.write("deno", "#!/usr/bin/env node\n");  // like the npm shim
  ::chmod(not_deno.c_str(), 0755);
  EXPECT_EQ(find_deno(not_deno).error().code, Errc::runtime_missing);
}

TEST(DenoRuntime, TheFlagWinsOverTheConfigFile) {
  TempDir dir;
  const std::string file = dir.write("config.json", R"({"jsRuntime":"deno"})");
  RuntimeConfig config;
  ASSERT_TRUE(select_runtime(config, "", file).has_value());
  EXPECT_EQ(config.runtime, JsRuntime::deno);
  RuntimeConfig flagged;
  ASSERT_TRUE(select_runtime(flagged, "node", file).has_value());
  EXPECT_EQ(flagged.runtime, JsRuntime::node);
  RuntimeConfig none;
  ASSERT_TRUE(select_runtime(none, "", (dir / "absent.json").string()).has_value());
  EXPECT_EQ(none.runtime, JsRuntime::node);  // N1
  EXPECT_EQ(select_runtime(none, "bun", file).error().code, Errc::bad_usage);
  const std::string bad = dir.write("bad.json", R"({"jsRuntime":"python"})");
  EXPECT_EQ(select_runtime(none, "", bad).error().code, Errc::bad_usage);
}

// --- No Deno permissions (N4) ---------------------------------------------------------

TEST(DenoRuntime, TheArgvCheckRefusesEveryPermissionFlag) {
  RuntimeConfig config = deno_config();
  const auto argv = deno_argv("/usr/bin/deno", config);
  EXPECT_TRUE(check_deno_argv(argv).has_value());
  for (const char* flag : {"-A", "--allow-all", "--allow-read", "--allow-read=/", "--allow-net", "-P", "-Pdefault",
                           "--permission-set", "--permission-set=x", "-qA", "--allow-env=HOME"}) {
    auto bad = argv;
    bad.insert(bad.begin() + 2, flag);
    auto checked = check_deno_argv(bad);
    ASSERT_FALSE(checked.has_value()) << flag;
    EXPECT_EQ(checked.error().code, Errc::internal);
  }
  auto eval = argv;
  eval[1] = "eval";  // `deno eval` implies every permission
  EXPECT_FALSE(check_deno_argv(eval).has_value());
  // The harness's own arguments after the entry module are not flags of Deno.
  auto harness_args = argv;
  harness_args.push_back("-A");
  EXPECT_TRUE(check_deno_argv(harness_args).has_value());
}

TEST(DenoRuntime, TheLiveChildHasNoPermissionFlag) {
  Pool pool(deno_config());
  auto out = call(pool, "argv", "() => Deno.args");
  ASSERT_EQ(out.status, Status::ok) << out.error;
  ASSERT_EQ(pool.sandboxes().size(), 1u);
  const auto argv = cmdline_of(pool.sandboxes()[0].pid);
  ASSERT_GE(argv.size(), 3u);
  EXPECT_EQ(argv[1], "run");
  EXPECT_TRUE(check_deno_argv(argv).has_value());
  bool entry_is_data_url = false;
  for (const auto& arg : argv) {
    EXPECT_FALSE(arg == "-A" || arg.starts_with("--allow") || arg.starts_with("-P") ||
                 arg.starts_with("--permission-set"))
        << arg;
    if (arg.starts_with("data:text/javascript;base64,")) entry_is_data_url = true;
  }
  for (const char* flag : {"--no-prompt", "--no-config", "--no-lock", "--no-remote", "--no-npm", "--cached-only"}) {
    EXPECT_NE(std::find(argv.begin(), argv.end(), flag), argv.end()) << flag;
  }
  EXPECT_TRUE(entry_is_data_url);  // the host's harness is the entry module, not a file, not the tool
  EXPECT_EQ(out.value, (Value{"8388608", "1048576", "512"}));
}

TEST(DenoRuntime, NoPermissionIsGranted) {
  Pool pool(deno_config());
  auto out = call(pool, "perms", R"(async () => {
    const out = {};
    for (const name of ['read', 'write', 'net', 'env', 'run', 'ffi', 'sys', 'import']) {
      out[name] = (await Deno.permissions.query({ name })).state;
    }
    out.request = (await Deno.permissions.request({ name: 'read' })).state;
    return out;
  })");
  ASSERT_EQ(out.status, Status::ok) << out.error;
  for (const auto& [name, state] : out.value.items()) {
    EXPECT_TRUE(state == "denied" || state == "prompt") << name << ": " << state;
  }
}

TEST(DenoRuntime, TheToolCannotReachFilesEnvironmentProcessesOrNetwork) {
  Pool pool(deno_config());
  const std::string code = R"(async (a) => {
    const t = async (f) => { try { return 'ok:' + String(await f()).slice(0, 200); }
                             catch (e) { return 'err:' + (e && e.name); } };
    return {
      readPasswd: await t(() => Deno.readTextFile('/etc/passwd')),
      readSyncPasswd: await t(() => Deno.readTextFileSync('/etc/passwd')),
      env: await t(() => Deno.env.get('PATH')),
      envAll: await t(() => JSON.stringify(Deno.env.toObject())),
      command: await t(() => new Deno.Command('/bin/sh', { args: ['-c', 'id'] }).output()),
      connect: await t(() => Deno.connect({ hostname: '127.0.0.1', port: 22 })),
      listen: await t(() => Deno.listen({ port: 0 })),
      remoteImport: await t(() => import('https://deno.land/std/version.ts')),
      fileImport: await t(() => import('file:///etc/passwd', { with: { type: 'text' } })),
      computedImport: await t(() => import('file:///etc/' + 'passwd', { with: { type: 'text' } })),
      nodeFs: await t(async () => (await import('node:fs')).readFileSync('/etc/passwd', 'utf8')),
    };
  })";
  auto out = call(pool, "reach", code);
  ASSERT_EQ(out.status, Status::ok) << out.error;
  for (const auto& [attempt, result] : out.value.items()) {
    EXPECT_TRUE(result.get<std::string>().starts_with("err:")) << attempt << ": " << result;
  }
  EXPECT_EQ(out.value.dump().find("root:"), std::string::npos);
}

TEST(DenoRuntime, LocalStorageDoesNotCrossSandboxes) {
  Pool pool(deno_config());
  const std::string code = R"((a) => {
    let set;
    try { localStorage.setItem('k', a.value); set = 'ok'; } catch (e) { set = 'err:' + e.name; }
    let got;
    try { got = localStorage.getItem('k'); } catch (e) { got = 'err:' + e.name; }
    return { set, got };
  })";
  auto first = call(pool, "storage-a", code, Value{{"value", "from-a"}});
  ASSERT_EQ(first.status, Status::ok) << first.error;
  ASSERT_EQ(pool.sandboxes().size(), 1u);
  const std::string workdir = pool.sandboxes()[0].workdir;
  if (hardening::support().landlock_abi >= 1) {  // DENO_DIR cannot be created: nothing is ever stored
    EXPECT_TRUE(first.value["set"].get<std::string>().starts_with("err:")) << first.value;
  }
  EXPECT_FALSE(fs::exists(workdir + "/deno"));
  auto second = call(pool, "storage-b", code, Value{{"value", "from-b"}});
  ASSERT_EQ(second.status, Status::ok) << second.error;
  EXPECT_NE(second.value["got"], "from-a") << second.value;
  std::cerr << "  localStorage in a Deno sandbox: " << first.value.dump() << "\n";
  pool.terminate("sha256:deno-storage-a");
  auto again = call(pool, "storage-a", R"(() => { try { return localStorage.getItem('k'); } catch (e) { return 'err:' + e.name; } })");
  ASSERT_EQ(again.status, Status::ok) << again.error;
  EXPECT_NE(again.value, "from-a");
  EXPECT_FALSE(fs::exists(workdir));  // DENO_DIR lives in the sandbox's directory, gone with it
}

// The one seccomp exception Deno gets (tokio's signal driver needs a
// socketpair at start): AF_UNIX + SOCK_STREAM only; every socket() and every
// other socketpair stays EACCES, and Node's filter has no exception at all.
TEST(DenoRuntime, TheSeccompExceptionIsAUnixStreamPairOnly) {
  if (!hardening::seccomp::available()) GTEST_SKIP() << "this kernel has no seccomp filters";
  auto probe = [](hardening::seccomp::Exceptions exceptions) {
    auto filter = hardening::seccomp::Filter::build({.fd = -1}, exceptions);
    EXPECT_TRUE(filter.has_value());
    const pid_t pid = ::fork();
    if (pid == 0) {
      if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || !hardening::seccomp::load(*filter)) ::_exit(100);
      int pair[2];
      int bits = 0;
      const auto denied = [&](int rc) { return rc < 0 && errno == EACCES; };
      if (denied(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, pair))) bits |= 1;
      if (denied(::socketpair(AF_UNIX, SOCK_DGRAM, 0, pair))) bits |= 2;
      if (denied(::socketpair(AF_UNIX, SOCK_SEQPACKET, 0, pair))) bits |= 4;
      if (denied(::socketpair(AF_INET, SOCK_STREAM, 0, pair))) bits |= 8;
      if (denied(::socket(AF_UNIX, SOCK_STREAM, 0))) bits |= 16;
      if (denied(::socket(AF_INET, SOCK_STREAM, 0))) bits |= 32;
      ::_exit(bits);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  EXPECT_EQ(probe({.unix_stream_socketpair = true}), 2 | 4 | 8 | 16 | 32);  // the stream pair alone is allowed
  EXPECT_EQ(probe({}), 1 | 2 | 4 | 8 | 16 | 32);                             // Node: nothing
  auto deno = find_deno("");
  ASSERT_TRUE(deno.has_value());
  auto policy = deno_policy(deno->path);
  ASSERT_TRUE(policy.has_value()) << policy.error().describe();
  EXPECT_TRUE((*policy)->seccomp_exceptions().unix_stream_socketpair);
  auto node = find_node("");
  ASSERT_TRUE(node.has_value());
  EXPECT_FALSE((*node_policy(*node))->seccomp_exceptions().unix_stream_socketpair);
}

// --- The pool on Deno (S1, S2, S4, S6) ---------------------------------------------

TEST(DenoPool, RetainsStateAcrossCalls) {  // S1
  Pool pool(deno_config());
  const std::string code = "(a) => { globalThis.n = (globalThis.n || 0) + 1; return { n: globalThis.n, id: (globalThis.id = globalThis.id || Math.random()) }; }";
  auto first = call(pool, "retain", code);
  ASSERT_EQ(first.status, Status::ok) << first.error;
  EXPECT_TRUE(first.fresh_sandbox);
  auto second = call(pool, "retain", code);
  ASSERT_EQ(second.status, Status::ok) << second.error;
  EXPECT_FALSE(second.fresh_sandbox);
  EXPECT_EQ(second.value["n"], 2);
  EXPECT_EQ(second.value["id"], first.value["id"]);  // Deno.pid is 2 in every sandbox (PID namespace)
}

TEST(DenoPool, SerializesConcurrentCalls) {  // S2
  Pool pool(deno_config());
  const std::string code = R"(async (a) => {
    if (globalThis.busy) throw new Error('interleaved');
    globalThis.busy = true;
    await new Promise((r) => setTimeout(r, 5));
    globalThis.busy = false;
    return a.i;
  })";
  ASSERT_EQ(call(pool, "serial", code, Value{{"i", -1}}).status, Status::ok);  // warm
  std::vector<std::thread> threads;
  std::vector<CallOutcome> outs(8);
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] { outs[i] = call(pool, "serial", code, Value{{"i", i}}); });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(outs[i].status, Status::ok) << outs[i].error;
    EXPECT_EQ(outs[i].value, i);
  }
  EXPECT_EQ(pool.sandboxes().size(), 1u);
}

TEST(DenoPool, ATimeoutDestroysTheSandbox) {  // S4
  Pool pool(deno_config());
  auto warm = call(pool, "timeout", "(a) => a.loop ? (() => { for (;;) {} })() : Deno.pid");
  ASSERT_EQ(warm.status, Status::ok) << warm.error;
  ASSERT_EQ(pool.sandboxes().size(), 1u);
  const int pid = pool.sandboxes()[0].pid;  // the host's view (Deno.pid is 2 inside its PID namespace)
  auto out = call(pool, "timeout", "(a) => a.loop ? (() => { for (;;) {} })() : Deno.pid", Value{{"loop", true}}, 500ms);
  EXPECT_EQ(out.status, Status::timeout) << out.error;
  EXPECT_EQ(out.destroyed, "timeout");
  EXPECT_TRUE(pool.sandboxes().empty());
  EXPECT_TRUE(process_gone(pid));
  auto next = call(pool, "timeout", "(a) => a.loop ? (() => { for (;;) {} })() : Deno.pid");
  EXPECT_TRUE(next.fresh_sandbox);
}

TEST(DenoPool, DisposableCallsLeaveTheRetainedSandboxAlone) {  // S6
  Pool pool(deno_config());
  const std::string code = "() => { globalThis.n = (globalThis.n || 0) + 1; return globalThis.n; }";
  ASSERT_EQ(call(pool, "disposable", code).value, 1);
  auto once = call(pool, "disposable", code, Value::object(), 15s, Mode::disposable);
  ASSERT_EQ(once.status, Status::ok) << once.error;
  EXPECT_EQ(once.value, 1);
  EXPECT_EQ(once.destroyed, "disposable");
  EXPECT_EQ(call(pool, "disposable", code).value, 2);
  EXPECT_EQ(pool.sandboxes().size(), 1u);
}

TEST(DenoPool, ToolErrorsLogsAndLoadErrors) {
  Pool pool(deno_config());
  auto logged = call(pool, "logs", R"(() => {
    console.log('hello %s', 'deno', { a: 1 });
    console.warn('careful');
    Deno.stdout.writeSync(new TextEncoder().encode('through stdout'));
    return 'done';
  })");
  ASSERT_EQ(logged.status, Status::ok) << logged.error;
  ASSERT_EQ(logged.logs.size(), 3u);
  EXPECT_EQ(logged.logs[0].level, "log");
  EXPECT_EQ(logged.logs[0].text, "hello deno { a: 1 }");
  EXPECT_EQ(logged.logs[1].level, "warn");
  EXPECT_EQ(logged.logs[2].text, "through stdout");
  auto thrown = call(pool, "throws", "() => { throw new RangeError('no such thing'); }");
  EXPECT_EQ(thrown.status, Status::tool_error);
  EXPECT_EQ(thrown.error, "RangeError: no such thing");
  auto broken = call(pool, "broken", "(a) => { syntax error");
  EXPECT_EQ(broken.status, Status::tool_error);
  EXPECT_EQ(broken.destroyed, "load_error");
  EXPECT_NE(broken.error.find("SyntaxError"), std::string::npos) << broken.error;
}

TEST(DenoPool, CapabilityRequestsWithoutAContextAreDenied) {
  Pool pool(deno_config());
  auto out = call(pool, "caps", R"(async (a, context) => {
    const out = { same: globalThis.fetch === context.fetch, frozen: Object.isFrozen(context) };
    try { await fetch('https://example.com/'); out.fetch = 'ok'; } catch (e) { out.fetch = e.name + ':' + e.code; }
    try { await context.storage.set('k', 1); out.set = 'ok'; } catch (e) { out.set = e.name + ':' + e.code; }
    return out;
  })");
  ASSERT_EQ(out.status, Status::ok) << out.error;
  EXPECT_EQ(out.value["same"], true);   // M2
  EXPECT_EQ(out.value["frozen"], true);
  EXPECT_EQ(out.value["fetch"], "CapabilityError:denied");
  EXPECT_EQ(out.value["set"], "CapabilityError:denied");
}

}  // namespace
}  // namespace taskyon::sandbox
