// S1, S2, S4, S6 (the pool) and N1, N3 (the Node runtime): real Node
// sandboxes started by a real sandbox::Pool, and hostile tool code.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "taskyon/diagnostics/groups.h"
#include "taskyon/sandbox/sandbox.h"

namespace taskyon::diagnostics {
namespace {

namespace fs = std::filesystem;
using json::Value;
using namespace std::chrono_literals;
using sandbox::Mode;
using sandbox::Status;

// Revisions the pool keys sandboxes by; any distinct strings do.
std::string rev(std::string_view name) { return "sha256:diagnostics-" + std::string(name); }


int pid_of(sandbox::Pool& pool, const std::string& revision) {
  for (const auto& s : pool.sandboxes()) {
    if (s.revision == revision && s.mode == Mode::retained) return s.pid;
  }
  return -1;
}


Outcome retained_per_revision(Env& env) {
  const std::string code = "() => (globalThis.n = (globalThis.n || 0) + 1)";
  auto a1 = env.call(request(rev("A"), code));
  auto a2 = env.call(request(rev("A"), code));
  const int pid_a = pid_of(env.pool(), rev("A"));
  auto b1 = env.call(request(rev("B"), code));
  const int pid_b = pid_of(env.pool(), rev("B"));
  expect(ok_value(a1, "A's first call") == 1 && ok_value(a2, "A's second call") == 2,
         "revision A did not keep its state between calls");
  expect(a1.fresh_sandbox && !a2.fresh_sandbox, "revision A's second call did not reuse its sandbox");
  expect(ok_value(b1, "B's first call") == 1 && b1.fresh_sandbox, "revision B saw revision A's state");
  expect(pid_a > 0 && pid_b > 0 && pid_a != pid_b, "revisions A and B share one process");
  return pass("one retained process per revision: state kept within a revision, never shared across two");
}

Outcome serialized_separate_contexts(Env& env) {
  const std::string code = R"((() => {
      let inside = false, count = 0;
      return async (args, context) => {
        if (inside) throw new Error('interleaved');
        inside = true;
        console.log('call ' + args.input);
        await new Promise((r) => setTimeout(r, 2));
        inside = false;
        return { n: ++count, frozen: Object.isFrozen(context) };
      };
    })())";
  constexpr int kThreads = 4, kCalls = 4;
  std::vector<std::vector<sandbox::CallOutcome>> results(kThreads);
  std::vector<std::optional<Error>> errors(kThreads);
  {
    env.pool();  // made before the threads share it
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kCalls; ++i) {
          auto out = env.pool().call(request(rev("serial"), code, {{"input", std::to_string(t * 100 + i)}}));
          if (!out) errors[t] = out.error();
          else results[t].push_back(std::move(*out));
        }
      });
    }
    for (auto& thread : threads) thread.join();
  }
  std::set<int> counts;
  for (int t = 0; t < kThreads; ++t) {
    if (errors[t]) need(Result<void>(std::unexpected(*errors[t])), "a concurrent call");
    for (int i = 0; i < kCalls; ++i) {
      const auto& out = results[t][i];
      Value v = ok_value(out, "a concurrent call");
      counts.insert(v["n"].get<int>());
      expect(v["frozen"].get<bool>(), "a call's context is not frozen");
      expect(out.logs.size() == 1 && out.logs[0].text == "call " + std::to_string(t * 100 + i),
             "a call's logs hold another call's output");
    }
  }
  expect(counts.size() == kThreads * kCalls, "calls interleaved in the sandbox");
  return pass("16 concurrent calls ran one at a time, each with its own logs and a frozen context");
}

// S2 (issue 12 item 1): a context saved by an ended call is refused inside
// the sandbox, and a frame forged on fd 1 naming that call is refused by the
// host: never handled, recorded against the ended call only.
Outcome stale_context_refused(Env& env) {
  struct Recorder : sandbox::Capabilities {
    sandbox::CapabilityReply handle(std::string_view, sandbox::CapabilityOp op, const Value& args,
                                    const sandbox::CancelToken&, std::chrono::steady_clock::time_point) override {
      handled.push_back(std::string(sandbox::capability_op_name(op)) + " " + args.dump());
      return sandbox::CapabilityReply::success(Value());
    }
    void refused_stale(std::string_view, sandbox::CapabilityOp op, const Value&, std::string_view ended) override {
      stale.push_back(std::string(sandbox::capability_op_name(op)) + " " + std::string(ended));
    }
    std::vector<std::string> handled, stale;
  } host;
  const std::string code = R"(async ({input}, context) => {
      if (input === 'save') { globalThis.saved = context; return 'saved'; }
      let message = '', code = '';
      try { await globalThis.saved.storage.set('k', 1); } catch (e) { message = e.message; code = e.code; }
      const ended = Number(/call (\d+)/.exec(message)[1]);
      require('fs').writeSync(1, JSON.stringify({ type: 'cap', id: ended, req: 1, op: 'storage.set',
                                                  args: { key: 'forged', value: 1 } }) + '\n');
      await new Promise((r) => setTimeout(r, 300));
      return { code, aborted: globalThis.saved.signal.aborted };
    })";
  auto first = request(rev("stale"), code, {{"input", "save"}});
  first.capabilities = &host;
  first.attribution = "call-one";
  auto second = request(rev("stale"), code, {{"input", "use"}});
  second.capabilities = &host;
  second.attribution = "call-two";
  auto one = env.call(first);
  (void)ok_value(one, "the saving call");
  auto two = env.call(second);
  Value v = ok_value(two, "the call using the saved context");
  expect(v["code"] == "denied", "the saved context was not refused inside the sandbox: " + v.dump());
  expect(v["aborted"] == true, "the ended call's context.signal did not abort");
  expect(host.handled.empty(), "the host handled a request of an ended call: " +
                                   (host.handled.empty() ? std::string() : host.handled.front()));
  expect(host.stale.size() == 1 && host.stale[0] == "storage.set call-one",
         "the forged request of the ended call was not recorded against that call");
  return pass("a saved context is refused in the sandbox; a forged frame of the ended call is refused by the "
              "host and recorded against that call");
}

Outcome timeout_destroys(Env& env) {
  const std::string code = "(a) => { if (a.input === 'spin') for (;;) {} return 'ok'; }";
  ok_value(env.call(request(rev("loop"), code)), "the first call");
  const int pid = pid_of(env.pool(), rev("loop"));
  std::string workdir;
  for (const auto& s : env.pool().sandboxes()) workdir = s.workdir;
  auto spun = env.call(request(rev("loop"), code, {{"input", "spin"}}, 500ms));
  expect(spun.status == Status::timeout, "an endless loop ended " + std::string(sandbox::status_name(spun.status)));
  expect(spun.destroyed == "timeout" && destroyed_for(env.pool(), rev("loop"), "timeout"),
         "the timed-out sandbox was not destroyed");
  expect(process_gone(pid), "the timed-out sandbox's process is still alive");
  expect(!fs::exists(workdir), "the timed-out sandbox's directory is still there");
  auto next = env.call(request(rev("loop"), code));
  expect(ok_value(next, "the call after the timeout") == "ok" && next.fresh_sandbox,
         "the call after a timeout did not get a fresh sandbox");
  return pass("a call past its timeout kills its sandbox; the next call gets a fresh one");
}

Outcome boundary_failure_destroys(Env& env) {
  const std::string code = R"((a) => {
      if (a.input === 'garbage') { require('fs').writeSync(1, 'not a frame\n'); return 1; }
      if (a.input === 'exit') process.exit(3);
      return 'ok';
    })";
  for (const auto& [input, status, reason] : {std::tuple{"garbage", Status::protocol_error, "protocol_error"},
                                              std::tuple{"exit", Status::crashed, "crashed"}}) {
    const std::string revision = rev(std::string("boundary-") + input);
    ok_value(env.call(request(revision, code)), "the first call");
    const int pid = pid_of(env.pool(), revision);
    auto bad = env.call(request(revision, code, {{"input", input}}));
    expect(bad.status == status, std::string(input) + " ended " + std::string(sandbox::status_name(bad.status)));
    expect(bad.destroyed == reason && destroyed_for(env.pool(), revision, reason),
           std::string("the sandbox was not destroyed after ") + input);
    expect(process_gone(pid), std::string("the sandbox process survived ") + input);
    expect(env.call(request(revision, code)).fresh_sandbox, std::string("no fresh sandbox after ") + input);
  }
  return pass("a forged frame on fd 1 and an exit mid-call destroy the sandbox");
}

Outcome disposable_fresh_and_destroyed(Env& env) {
  const std::string code = "(() => { let n = 0; return () => ++n; })()";
  expect(ok_value(env.call(request(rev("disp"), code)), "a retained call") == 1, "the retained counter is not 1");
  const int retained_pid = pid_of(env.pool(), rev("disp"));
  auto once = env.call(request(rev("disp"), code, Value::object(), 10s, Mode::disposable));
  expect(ok_value(once, "the disposable call") == 1, "the disposable call saw retained state");
  expect(once.fresh_sandbox, "the disposable call did not get a fresh sandbox");
  expect(once.destroyed == "disposable" && destroyed_for(env.pool(), rev("disp"), "disposable"),
         "the disposable sandbox was not destroyed after its call");
  expect(env.pool().sandboxes().size() == 1, "the disposable sandbox is still alive");
  auto again = env.call(request(rev("disp"), code));
  expect(ok_value(again, "the retained call") == 2 && !again.fresh_sandbox,
         "the retained sandbox was disturbed by the disposable call");
  expect(pid_of(env.pool(), rev("disp")) == retained_pid, "the retained sandbox was replaced");
  return pass("a disposable call gets a fresh sandbox that is destroyed after it; the retained one is untouched");
}

Outcome node_is_default(Env& env) {
  env.node();          // SKIPs without Node
  sandbox::Pool pool;  // the default configuration, as tycli uses it
  auto out = pool.call(request(rev("runtime"), "() => ({ release: process.release.name, deno: typeof Deno })"));
  if (!out && out.error().code == Errc::runtime_missing) skip_check(out.error().message);
  Value v = ok_value(need(std::move(out), "the call"), "the call");
  expect(v["release"] == "node" && v["deno"] == "undefined", "the default runtime is not Node: " + v.dump());
  const int pid = pool.sandboxes().empty() ? -1 : pool.sandboxes()[0].pid;
  std::error_code ec;
  const auto exe = fs::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec);
  const auto node = fs::canonical(need(sandbox::find_node(""), "find node"), ec);
  expect(!ec && exe == node, "the sandbox process runs " + exe.string() + ", not " + node.string());
  return pass("a sandbox of the default configuration is a Node process (" + node.string() + ")");
}

// --- N3: what tool code can reach ------------------------------------------

// Runs `body` (an async function body with `a` the arguments, and t/ta that
// turn an attempt into "ok:…" or "err:<code>"), returning its object of attempts.
Value attempts(Env& env, const std::string& name, const std::string& body, Value args = Value::object()) {
  const std::string code = R"((() => {
  const describe = (e) => 'err:' + ((e && (e.code || (e.cause && e.cause.code) || e.name)) || String(e));
  const t = (f) => { try { return 'ok:' + String(f()).slice(0, 200); } catch (e) { return describe(e); } };
  const ta = async (f) => {
    let timer;
    try {
      const late = new Promise((_, rej) => { timer = setTimeout(() => rej({ code: 'TIMEOUT' }), 3000); });
      return 'ok:' + String(await Promise.race([f(), late])).slice(0, 200);
    } catch (e) { return describe(e); } finally { clearTimeout(timer); }
  };
  return async (a, context) => {
)" + body + "\n  };\n})()";
  return ok_value(env.call(request(rev(name), code, std::move(args))), "the hostile tool");
}

// Every attempt was refused; names the first that was not.
void expect_all_denied(const Value& results, std::string_view what) {
  expect(results.is_object() && !results.empty(), std::string(what) + ": no attempts were reported");
  for (const auto& [attempt, result] : results.items()) {
    const std::string text = result.is_string() ? result.get<std::string>() : result.dump();
    expect(text.starts_with("err:") && text != "err:TIMEOUT",
           std::string(what) + ": " + attempt + " was not refused (" + text + ")");
  }
}

Outcome no_filesystem(Env& env) {
  const std::string secret = "diagnostics-secret-" + std::to_string(::getpid());
  const auto file = env.dir() / "secret.txt";
  std::ofstream(file) << secret;
  const auto planted = env.dir() / "planted.txt";
  Value v = attempts(env, "fs", R"(
    const fs = require('fs');
    return {
      readFileSync: t(() => fs.readFileSync(a.file, 'utf8')),
      promisesReadFile: await ta(() => fs.promises.readFile(a.file, 'utf8')),
      openSync: t(() => fs.openSync(a.file, 'r')),
      readdir: t(() => fs.readdirSync(a.dir).join(',')),
      passwd: t(() => fs.readFileSync('/etc/passwd', 'utf8')),
      procEnviron: t(() => fs.readFileSync('/proc/self/environ', 'utf8')),
      write: t(() => fs.writeFileSync(a.planted, 'x')),
      writeCwd: t(() => fs.writeFileSync('planted.txt', 'x')),
    };
  )", {{"file", file.string()}, {"dir", env.dir().string()}, {"planted", planted.string()}});
  expect(v.dump().find(secret) == std::string::npos, "tool code read the secret file");
  expect_all_denied(v, "file system");
  expect(!fs::exists(planted), "tool code wrote a file on the host");
  return pass("reads, listings and writes of host files are refused");
}

Outcome no_environment(Env& env) {
  Value v = attempts(env, "env", R"(
    return { keys: Object.keys(process.env), path: String(process.env.PATH), home: String(process.env.HOME) };
  )");
  expect(v["keys"].is_array() && v["keys"].empty(), "tool code sees environment variables: " + v["keys"].dump());
  expect(v["path"] == "undefined" && v["home"] == "undefined", "tool code sees PATH or HOME");
  return pass("process.env is empty inside the sandbox");
}

Outcome no_network(Env& env) {
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  expect(listener >= 0, "cannot open the canary socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  const bool listening = ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                         ::listen(listener, 8) == 0 &&
                         ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{listener};
  expect(listening, "cannot listen on the canary socket");
  Value v = attempts(env, "net", R"(
    const net = require('net'), dgram = require('dgram');
    const connect = (port, host) => new Promise((res, rej) => {
      const s = net.connect(port, host, () => res('connected')); s.on('error', rej);
    });
    return {
      netConnect: await ta(() => connect(a.port, '127.0.0.1')),
      fetchHttp: await ta(() => fetch('http://127.0.0.1:' + a.port + '/')),
      udp: await ta(() => new Promise((res, rej) => {
        const s = dgram.createSocket('udp4'); s.on('error', rej);
        s.send('x', a.port, '127.0.0.1', (e) => (e ? rej(e) : res('sent')));
      })),
      listen: await ta(() => new Promise((res, rej) => {
        const srv = net.createServer(); srv.on('error', rej); srv.listen(0, '127.0.0.1', () => res('listening'));
      })),
    };
  )", {{"port", ntohs(addr.sin_port)}});
  const int accepted = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  if (accepted >= 0) ::close(accepted);
  expect(accepted < 0, "a connection from tool code reached the host's canary listener");
  expect_all_denied(v, "network");
  return pass("TCP, UDP, listening and raw fetch to the host are refused; nothing reached the canary");
}

Outcome no_subprocess(Env& env) {
  Value v = attempts(env, "proc", R"(
    const cp = require('child_process');
    const { Worker } = require('worker_threads');
    return {
      spawnSync: t(() => {
        const r = cp.spawnSync('/bin/sh', ['-c', 'true']); if (r.error) throw r.error; return r.status;
      }),
      execSync: t(() => cp.execSync('id').toString()),
      fork: t(() => cp.fork('-e', ['1']).pid),
      worker: t(() => new Worker('1', { eval: true }).threadId),
    };
  )");
  expect_all_denied(v, "subprocess");
  return pass("child_process and worker threads are refused");
}

Outcome no_native_bindings(Env& env) {
  Value v = attempts(env, "bindings", R"(
    return {
      binding: t(() => process.binding('uv')),
      linkedBinding: t(() => process._linkedBinding('uv')),
      dlopen: t(() => process.dlopen({ exports: {} }, '/tmp/evil.node')),
      wasi: t(() => new (require('wasi').WASI)({ version: 'preview1' })),
      inspector: t(() => require('inspector').open(0, '127.0.0.1')),
    };
  )");
  expect_all_denied(v, "native bindings");
  return pass("process.binding, addons, WASI and the inspector are refused");
}

}  // namespace

void add_sandbox_checks(Registry& r) {
  add(r, {"S1", "revisions_never_share_a_sandbox", "one retained process per revision, state never shared",
          retained_per_revision});
  add(r, {"S2", "calls_serialized_with_own_context", "concurrent calls run one at a time, each with its own logs",
          serialized_separate_contexts});
  add(r, {"S2", "stale_context_refused", "a saved context of an ended call is refused by sandbox and host",
          stale_context_refused});
  add(r, {"S4", "timeout_destroys_sandbox", "a call past its timeout kills the sandbox; the next is fresh",
          timeout_destroys});
  add(r, {"S4", "boundary_failure_destroys_sandbox", "a forged frame or an exit mid-call destroys the sandbox",
          boundary_failure_destroys});
  add(r, {"S6", "disposable_call_fresh_and_destroyed", "a disposable call gets a fresh sandbox, destroyed after",
          disposable_fresh_and_destroyed});
  add(r, {"N1", "node_is_the_default_runtime", "the default configuration runs tool code in Node",
          node_is_default});
  add(r, {"N3", "no_filesystem", "tool code cannot read, list or write host files", no_filesystem});
  add(r, {"N3", "no_environment", "tool code sees an empty environment", no_environment});
  add(r, {"N3", "no_network", "tool code cannot connect, send or listen", no_network});
  add(r, {"N3", "no_subprocess", "tool code cannot start processes or workers", no_subprocess});
  add(r, {"N3", "no_native_bindings", "process.binding, addons, WASI and the inspector are refused",
          no_native_bindings});
}

}  // namespace taskyon::diagnostics
