// The kernel layers around the real runtimes, one claim of `tycli sandbox
// explain` at a time: a hostile script runs in Node and in Deno with the
// runtime's own checks off (Node without --experimental-permission, `deno
// eval`, which grants every Deno permission), so only the kernel layers stand
// between it and the host. Each claim is tested twice: with its layer on the
// attempt fails and the canaries are unchanged; with only that layer switched
// off (hardening::Layers) the same attempt succeeds — so the layer, not
// something else, is what denies it.
//
// Canaries: a file of the host's user in a directory anyone may enter (mode,
// owner, times compared), /etc/shadow (it exists on the host), and an
// unrelated process of the host's user (its priority compared; it must stay
// alive).
#include <fcntl.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "taskyon/hardening/contain.h"
#include "taskyon/hardening/namespaces.h"
#include "taskyon/hardening/probe.h"
#include "test_util.h"

#ifndef TASKYON_SOURCE_DIR
#define TASKYON_SOURCE_DIR "."
#endif

namespace taskyon::hardening {
namespace {

namespace fs = std::filesystem;
using taskyon::testing::TempDir;

// The attempts; `CANARY`, `GRANTED`, `PID`, `PORT` and `WAIT` are
// replaced by the test. Every value is "ok", "err:<errno name>" or, for what
// is read rather than attempted, "val:<value>".
constexpr const char* kScript = R"(
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
const canary = CANARY, granted = GRANTED, pid = PID, port = PORT, wait = WAIT;
const code = (e) => 'err:' + ((e.info && e.info.code) || e.code || e.name);
const t = (f) => { try { f(); return 'ok'; } catch (e) { return code(e); } };
const v = (f) => { try { return 'val:' + f(); } catch (e) { return code(e); } };
const out = {
  cwd: v(() => fs.readdirSync('.').join(',')),  // first: `create` below may add a file
  statShadow: t(() => fs.statSync('/etc/shadow')),
  accessShadow: t(() => fs.accessSync('/etc/shadow')),
  readlinkShadow: t(() => fs.readlinkSync('/etc/shadow')),
  openShadow: t(() => fs.closeSync(fs.openSync('/etc/shadow', 'r'))),
  statUsrBin: t(() => fs.statSync('/usr/bin/env')),
  statCanary: t(() => fs.statSync(canary)),
  readCanary: t(() => fs.readFileSync(canary)),
  writeGranted: t(() => fs.closeSync(fs.openSync(granted, 'r+'))),
  create: t(() => fs.closeSync(fs.openSync('created.txt', 'wx'))),
  chmod: t(() => fs.chmodSync(canary, 0o4777)),
  utimes: t(() => fs.utimesSync(canary, 1, 1)),
  chown: t(() => fs.chownSync(canary, 1000, 1000)),  // 1000: the sandbox's own id inside
  setPriority: t(() => os.setPriority(pid, 19)),
  kill: t(() => process.kill(pid, 0)),
  descriptors: v(() => fs.readdirSync('/proc/self/fd').join(',')),
  manyFiles: t(() => {
    const open = [];
    try { for (let i = 0; i < 300; ++i) open.push(fs.openSync(process.execPath, 'r')); }
    finally { for (const f of open) fs.closeSync(f); }
  }),
  noNewPrivs: v(() => (fs.readFileSync('/proc/self/status', 'utf8').match(/NoNewPrivs:\s*(\d)/) || [])[1]),
  environment: v(() => process.env.TASKYON_KERNEL_CANARY ?? 'unset'),
};
out.tcp = await new Promise((done) => {
  try {
    const s = net.connect(port, '127.0.0.1');
    s.on('connect', () => { s.destroy(); done('ok'); });
    s.on('error', (e) => done(code(e)));
  } catch (e) { done(code(e)); }
});
process.stdout.write(JSON.stringify(out) + '\n');
wait && setInterval(() => {}, 1000);  // no top-level `if`: it makes deno eval panic without /proc/self/maps
)";

// The first executable `name` on PATH, or empty.
std::string on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  for (std::size_t begin = 0; begin <= dirs.size();) {
    std::size_t end = dirs.find(':', begin);
    if (end == std::string::npos) end = dirs.size();
    const std::string candidate = dirs.substr(begin, end - begin) + "/" + name;
    begin = end + 1;
    if (::access(candidate.c_str(), X_OK) == 0) return fs::canonical(candidate).string();
  }
  return {};
}

// The script's answers: {"key":"value",...} on one line, read without a JSON library.
std::string answer(const std::string& out, const std::string& key) {
  const std::string marker = "\"" + key + "\":\"";
  const std::size_t at = out.find(marker);
  if (at == std::string::npos) return "missing";
  const std::size_t start = at + marker.size();
  return out.substr(start, out.find('"', start) - start);
}

// The descriptor number the host leaves open for the sandbox to find.
constexpr int kLeakedFd = 100;

// How one run differs from the default (besides its layers).
struct RunOptions {
  std::vector<std::string> env = {};  // the child's environment (Deno's own entries are added)
  std::string workdir = {};      // empty: the fixture's empty work directory
  bool wait = false;             // the script stays alive after its line (started with spawn())
};

class KernelLayers : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    const Support& s = support();
    if (!s.user_namespaces || !s.full_error.empty() || !s.seccomp || s.landlock_abi < 6) {
      GTEST_SKIP() << "needs every kernel layer (Landlock ABI 6): " << s.full_error;
    }
    deno_ = std::string(GetParam()) == "deno";
    // The project-local Deno install (scripts/setup.sh), as sandbox::find_deno finds it.
    const std::string deno = std::string(TASKYON_SOURCE_DIR) + "/" + taskyon::testing::kDenoPackageBinary;
    exe_ = deno_ ? (::access(deno.c_str(), X_OK) == 0 ? fs::canonical(deno).string() : on_path("deno"))
                 : on_path("node");
    ASSERT_FALSE(exe_.empty()) << GetParam() << " is not installed";
    ::chmod(dir_.path().c_str(), 0755);
    canary_ = dir_.write("canary.txt", "canary-55e0\n");
    ::chmod(canary_.c_str(), 0644);
    ASSERT_EQ(::stat(canary_.c_str(), &before_), 0);
    granted_ = dir_.write("granted.txt", "granted\n");  // granted read-only (Landlock, mount namespace)
    ::chmod(granted_.c_str(), 0666);
    other_ = ::fork();
    ASSERT_GE(other_, 0);
    if (other_ == 0) {
      // No capabilities: then only the uid (and seccomp) decide whether the
      // sandbox may change its priority (commoncap refuses a less capable
      // caller otherwise, whatever the uid).
      __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
      __user_cap_data_struct none[2] = {};
      ::syscall(SYS_capset, &header, none);
      for (;;) ::pause();
    }
    errno = 0;
    other_nice_ = ::getpriority(PRIO_PROCESS, static_cast<id_t>(other_));
    work_ = dir_ / "work";
    fs::create_directory(work_);
    ::chmod(work_.c_str(), 0777);
    // A TCP listener of the host's on loopback, and a descriptor the host
    // leaves open (not close-on-exec): neither may reach the sandbox.
    tcp_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(tcp_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(::listen(tcp_, 8), 0);
    socklen_t len = sizeof addr;
    ::getsockname(tcp_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    const int opened = ::open(canary_.c_str(), O_RDONLY | O_CLOEXEC);
    leaked_ = ::fcntl(opened, F_DUPFD, kLeakedFd);  // deliberately without close-on-exec
    ::close(opened);
    ASSERT_GE(leaked_, kLeakedFd);
  }
  void TearDown() override {
    if (other_ > 0) {
      int status = 0;
      EXPECT_EQ(::waitpid(other_, &status, WNOHANG), 0) << "the unrelated process ended";
      ::kill(other_, SIGKILL);
      ::waitpid(other_, nullptr, 0);
    }
    if (tcp_ >= 0) ::close(tcp_);
    if (leaked_ >= 0) ::close(leaked_);
  }

  bool canary_unchanged() const {
    struct stat now {};
    if (::stat(canary_.c_str(), &now) != 0) return false;
    return now.st_mode == before_.st_mode && now.st_uid == before_.st_uid && now.st_gid == before_.st_gid &&
           now.st_mtim.tv_sec == before_.st_mtim.tv_sec && now.st_mtim.tv_nsec == before_.st_mtim.tv_nsec;
  }
  bool other_unchanged() const {
    errno = 0;
    return ::getpriority(PRIO_PROCESS, static_cast<id_t>(other_)) == other_nice_;
  }

  // A started child: its host pid and the read ends of its stdout and stderr.
  struct Started {
    pid_t pid = -1;
    int out = -1, err = -1;
  };

  // Prepares the script under `layers` and `how` (the Containment, which
  // start() runs: nothing allocates after this).
  std::unique_ptr<const Containment> prepare(Layers layers, const RunOptions& how, Started& ends) {
    std::string code = kScript;
    auto put = [&code](const std::string& name, const std::string& value) {
      code.replace(code.find(name), name.size(), value);
    };
    put("CANARY", "'" + canary_ + "'");
    put("GRANTED", "'" + granted_ + "'");
    put("PID", std::to_string(other_));
    put("PORT", std::to_string(port_));
    put("WAIT", how.wait ? "true" : "false");
    std::vector<std::string> argv, env = how.env;
    if (deno_) {
      argv = {exe_, "eval", code};
      // A DENO_DIR it cannot create: with Landlock off, Deno's cache writes
      // would meet RLIMIT_FSIZE=0 (SIGXFSZ).
      env.insert(env.end(), {"DENO_DIR=/dev/null/deno", "DENO_NO_UPDATE_CHECK=1", "NO_COLOR=1"});
    } else {
      argv = {exe_, "--openssl-config=/dev/null", "--input-type=module", "-e", code};
    }
    std::vector<std::string> reads = {granted_};
    if (!deno_) reads.push_back("/dev/null");
    auto policy = Policy::prepare(exe_, reads, layers, {.unix_stream_socketpair = deno_});
    EXPECT_TRUE(policy.has_value()) << policy.error().describe();
    if (!policy) return nullptr;
    int in[2], out[2], err[2];
    EXPECT_EQ(::pipe2(in, O_CLOEXEC), 0);
    EXPECT_EQ(::pipe2(out, O_CLOEXEC), 0);
    EXPECT_EQ(::pipe2(err, O_CLOEXEC), 0);
    if ((*policy)->namespace_plan().pid()) {
      EXPECT_TRUE(report_socket(report_host_, report_child_));
    }
    auto containment = Containment::prepare(
        *policy,
        {.argv = argv,
         .env = env,
         .workdir = how.workdir.empty() ? work_.string() : how.workdir,
         .limits = {.data_bytes = 0, .open_files = 256}},
        ChildStdio{in[0], out[1], err[1], report_child_.get(), report_host_.get()});
    EXPECT_TRUE(containment.has_value()) << containment.error().describe();
    child_ends_ = {in[0], in[1], out[1], err[1]};
    ends.out = out[0];
    ends.err = err[0];
    if (!containment) return nullptr;
    return std::move(*containment);
  }
  // After start(): the host closes the child's ends.
  void close_child_ends() {
    report_child_.reset();
    for (int fd : child_ends_) ::close(fd);
    child_ends_.clear();
  }

  static std::string read_all(int fd) {
    std::string text;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<std::size_t>(n));
    return text;
  }
  static std::string read_line(int fd) {
    std::string line;
    char c;
    while (::read(fd, &c, 1) == 1 && c != '\n') line += c;
    return line;
  }

  // Runs the script under `layers` to its end; its output line.
  std::string run(Layers layers, const RunOptions& how = {}) {
    Started ends;
    auto containment = prepare(layers, how, ends);
    if (!containment) return "no containment";
    const pid_t pid = start(*containment);
    close_child_ends();
    const std::string text = read_all(ends.out), errors = read_all(ends.err);
    ::close(ends.out);
    ::close(ends.err);
    report_host_.reset();
    int status = 0;
    EXPECT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "wait status " << status << " (" << step_name(WIFEXITED(status) ? WEXITSTATUS(status) : 0) << ") "
        << errors;
    return text;
  }

  static std::string at(const std::string& out, const char* key) { return answer(out, key); }

  bool deno_ = false;
  std::string exe_, canary_, granted_;
  TempDir dir_;
  fs::path work_;
  struct stat before_ {};
  pid_t other_ = -1;
  int other_nice_ = 0;
  int tcp_ = -1, port_ = 0, leaked_ = -1;
  Fd report_host_, report_child_;  // with a PID namespace (contain.h)
  std::vector<int> child_ends_;
};

TEST_P(KernelLayers, EveryLayerOn) {
  const std::string out = run({});
  for (const char* key : {"statShadow", "accessShadow", "readlinkShadow", "openShadow", "statUsrBin", "statCanary"})
    EXPECT_EQ(at(out, key), "err:ENOENT") << key << " " << out;
  for (const char* key : {"chmod", "utimes", "chown", "setPriority", "kill", "writeGranted", "create", "tcp",
                          "manyFiles", "descriptors"}) {
    EXPECT_TRUE(at(out, key).starts_with("err:")) << key << " " << out;
  }
  EXPECT_EQ(at(out, "environment"), "val:unset") << out;
  EXPECT_TRUE(at(out, "cwd") == "val:" || at(out, "cwd") == "err:EACCES") << out;  // empty, and not Landlock's to list
  EXPECT_TRUE(canary_unchanged());
  EXPECT_TRUE(other_unchanged());
}

// Every answer `tycli sandbox explain` gives for the mount namespace: stat,
// access, readlink and open of host paths the runtime does not need (/usr's
// other files too) answer ENOENT; a file the runtime is granted is read-only
// (EROFS, before Landlock is asked). Without the namespace the same paths
// exist (Landlock still refuses to open them: EACCES).
TEST_P(KernelLayers, MountNamespaceHidesHostPaths) {
  const std::string on = run({});
  for (const char* key : {"statShadow", "accessShadow", "readlinkShadow", "openShadow", "statUsrBin", "statCanary"})
    EXPECT_EQ(at(on, key), "err:ENOENT") << key << " " << on;
  EXPECT_EQ(at(on, "writeGranted"), "err:EROFS") << on;
  Layers off;
  off.mount_namespace = false;  // Landlock stays: it does not mediate stat
  const std::string without = run(off);
  EXPECT_EQ(at(without, "statShadow"), "ok") << without;
  EXPECT_EQ(at(without, "statUsrBin"), "ok") << without;
  EXPECT_EQ(at(without, "statCanary"), "ok") << without;
  EXPECT_EQ(at(without, "readlinkShadow"), "err:EINVAL") << without;  // it exists, and is no symlink
  EXPECT_EQ(at(without, "openShadow"), "err:EACCES") << without;
  EXPECT_EQ(at(without, "writeGranted"), "err:EACCES") << without;
}

TEST_P(KernelLayers, SandboxUidFailsTheOwnerCheck) {
  if (!namespaces::host_is_root()) GTEST_SKIP() << "the sandbox uid needs a root host";
  // Only the uid stands: no seccomp, and the canary visible (no mount namespace).
  Layers layers;
  layers.seccomp = false;
  layers.mount_namespace = false;
  const std::string on = run(layers);
  for (const char* key : {"chmod", "utimes", "chown"}) EXPECT_EQ(at(on, key), "err:EPERM") << key << on;
  EXPECT_TRUE(canary_unchanged());
  layers.sandbox_uid = false;
  const std::string without = run(layers);
  for (const char* key : {"chmod", "utimes", "chown"}) EXPECT_EQ(at(without, key), "ok") << key << without;
  EXPECT_FALSE(canary_unchanged());
}

TEST_P(KernelLayers, SeccompDeniesMetadataAndOtherProcessesPriority) {
  // Only seccomp stands: the sandbox owns the canary (no sandbox uid), sees it
  // (no mount namespace) and the other process (no PID namespace).
  Layers layers;
  layers.sandbox_uid = false;
  layers.mount_namespace = false;
  layers.pid_namespace = false;
  const std::string on = run(layers);
  for (const char* key : {"chmod", "utimes", "chown", "setPriority"}) {
    EXPECT_EQ(at(on, key), "err:EPERM") << key << on;
  }
  EXPECT_TRUE(canary_unchanged());
  EXPECT_TRUE(other_unchanged());
  layers.seccomp = false;
  const std::string without = run(layers);
  for (const char* key : {"chmod", "utimes", "setPriority"}) EXPECT_EQ(at(without, key), "ok") << key << without;
  EXPECT_FALSE(canary_unchanged());
  EXPECT_FALSE(other_unchanged());
}

TEST_P(KernelLayers, PidNamespaceHidesHostProcesses) {
  // Only the PID namespace stands: no Landlock signal scope, the host's uid.
  Layers layers;
  layers.landlock = false;
  layers.sandbox_uid = false;
  const std::string on = run(layers);
  EXPECT_EQ(at(on, "kill"), "err:ESRCH") << on;
  layers.pid_namespace = false;
  const std::string without = run(layers);
  EXPECT_EQ(at(without, "kill"), "ok") << without;
}

// landlock-fs: with the host's tree in view (no mount namespace) and the
// host's uid, Landlock alone refuses to read a file it does not grant, to
// open a granted file for writing and to create one.
TEST_P(KernelLayers, LandlockFsReadsOnlyGrantedFilesAndWritesNone) {
  Layers layers;
  layers.mount_namespace = false;
  layers.sandbox_uid = false;
  const std::string on = run(layers);
  for (const char* key : {"readCanary", "writeGranted", "create"}) EXPECT_EQ(at(on, key), "err:EACCES") << key << on;
  EXPECT_FALSE(fs::exists(work_ / "created.txt"));
  layers.landlock = false;
  const std::string without = run(layers);
  for (const char* key : {"readCanary", "writeGranted", "create"}) EXPECT_EQ(at(without, key), "ok") << key << without;
  EXPECT_TRUE(fs::exists(work_ / "created.txt"));
}

// landlock-net: in the host's network (no namespaces) with socket() allowed
// (no seccomp), Landlock alone refuses a TCP connect to the host's listener.
TEST_P(KernelLayers, LandlockNetDeniesTcpConnect) {
  Layers layers;
  layers.namespaces = false;
  layers.seccomp = false;
  const std::string on = run(layers);
  EXPECT_EQ(at(on, "tcp"), "err:EACCES") << on;
  layers.landlock = false;
  const std::string without = run(layers);
  EXPECT_EQ(at(without, "tcp"), "ok") << without;
}

// namespaces (network): with socket() allowed and no Landlock TCP rules, the
// network namespace alone keeps the host's loopback listener out of reach.
TEST_P(KernelLayers, NetworkNamespaceHasNoRouteToTheHost) {
  Layers layers;
  layers.seccomp = false;
  layers.landlock = false;
  const std::string on = run(layers);
  EXPECT_TRUE(at(on, "tcp") == "err:ENETUNREACH" || at(on, "tcp") == "err:ECONNREFUSED") << on;
  layers.namespaces = false;
  const std::string without = run(layers);
  EXPECT_EQ(at(without, "tcp"), "ok") << without;
}

// landlock-scope: a host process of the same uid in view (no PID namespace),
// Landlock's signal scope alone refuses to signal it.
TEST_P(KernelLayers, LandlockScopeDeniesSignalsOutside) {
  Layers layers;
  layers.pid_namespace = false;
  layers.sandbox_uid = false;
  const std::string on = run(layers);
  EXPECT_EQ(at(on, "kill"), "err:EPERM") << on;
  layers.landlock = false;
  const std::string without = run(layers);
  EXPECT_EQ(at(without, "kill"), "ok") << without;
}

// rlimits: RLIMIT_NOFILE bounds the descriptors a sandbox may hold.
TEST_P(KernelLayers, RlimitsBoundDescriptors) {
  rlimit host{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &host), 0);
  if (host.rlim_cur < 400) GTEST_SKIP() << "the host's own descriptor limit is " << host.rlim_cur;
  const std::string on = run({});
  EXPECT_EQ(at(on, "manyFiles"), "err:EMFILE") << on;
  Layers off;
  off.rlimits = false;
  const std::string without = run(off);
  EXPECT_EQ(at(without, "manyFiles"), "ok") << without;
}

// descriptors: a descriptor the host left open (no O_CLOEXEC) is closed at
// exec. Listed in the host's /proc (no mount namespace, no Landlock).
TEST_P(KernelLayers, DescriptorsOfTheHostAreClosedAtExec) {
  Layers layers;
  layers.mount_namespace = false;
  layers.landlock = false;
  const std::string leaked = std::to_string(kLeakedFd);
  auto listed = [&](const std::string& out) {
    const std::string fds = "," + at(out, "descriptors").substr(4) + ",";
    return fds.find("," + leaked + ",") != std::string::npos;
  };
  const std::string on = run(layers);
  EXPECT_TRUE(at(on, "descriptors").starts_with("val:")) << on;
  EXPECT_FALSE(listed(on)) << on;
  layers.descriptors = false;
  const std::string without = run(layers);
  EXPECT_TRUE(listed(without)) << without;
}

// no-new-privs: the runtime runs with PR_SET_NO_NEW_PRIVS, which is what makes
// the kernel ignore setuid bits and file capabilities at any later exec
// (exec itself is seccomp's to deny). Read from the host's /proc (no mount
// namespace, no Landlock).
TEST_P(KernelLayers, NoNewPrivsIsSet) {
  Layers layers;
  layers.mount_namespace = false;
  layers.landlock = false;
  const std::string on = run(layers);
  EXPECT_EQ(at(on, "noNewPrivs"), "val:1") << on;
  layers.no_new_privs = false;  // seccomp then loads with the namespace's CAP_SYS_ADMIN
  const std::string without = run(layers);
  EXPECT_EQ(at(without, "noNewPrivs"), "val:0") << without;
}

// environment and workdir are the host's to build (there is no kernel layer
// to switch off): the child sees exactly the environment and directory it is
// given. The controls pass the host's secret and a directory holding the
// canary, and the same probes see them.
TEST_P(KernelLayers, EnvironmentAndWorkdirAreExactlyTheHostsChoice) {
  Layers layers;
  layers.mount_namespace = false;  // the directories are the host's
  layers.landlock = false;         // and listable
  ::setenv("TASKYON_KERNEL_CANARY", "host-secret", 1);
  const std::string on = run(layers);
  ::unsetenv("TASKYON_KERNEL_CANARY");
  EXPECT_EQ(at(on, "environment"), "val:unset") << on;
  EXPECT_EQ(at(on, "cwd"), "val:") << on;
  const std::string control =
      run(layers, {.env = {"TASKYON_KERNEL_CANARY=host-secret"}, .workdir = dir_.path(), .wait = false});
  EXPECT_EQ(at(control, "environment"), "val:host-secret") << control;
  EXPECT_NE(at(control, "cwd").find("canary.txt"), std::string::npos) << control;
}

// session: the child leads its own process group, so the host's kill of the
// group by the child's pid reaches it (and whatever it left behind).
TEST_P(KernelLayers, SessionLetsTheHostKillTheGroup) {
  for (const bool session : {true, false}) {
    Layers layers;
    layers.session = session;
    Started ends;
    auto containment = prepare(layers, {.env = {}, .workdir = {}, .wait = true}, ends);
    ASSERT_TRUE(containment);
    const pid_t pid = start(*containment);
    close_child_ends();
    EXPECT_NE(read_line(ends.out), "");  // it runs
    if (session) {
      EXPECT_EQ(::kill(-pid, SIGKILL), 0);
    } else {
      errno = 0;
      EXPECT_EQ(::kill(-pid, SIGKILL), -1);  // no such group: the child is in the test's
      EXPECT_EQ(errno, ESRCH);
      ::kill(pid, SIGKILL);
    }
    int status = 0;
    EXPECT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
    ::close(ends.out);
    ::close(ends.err);
    report_host_.reset();
  }
}

// die-with-parent: when the process that started the child dies, the child
// is killed; without the parent-death signal it lives on. This test is the
// subreaper of the orphan, so it can wait for it.
TEST_P(KernelLayers, TheChildDiesWithItsParent) {
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  for (const bool die : {true, false}) {
    Layers layers;
    layers.die_with_parent = die;
    Started ends;
    auto containment = prepare(layers, {.env = {}, .workdir = {}, .wait = true}, ends);
    ASSERT_TRUE(containment);
    int pid_pipe[2];
    ASSERT_EQ(::pipe2(pid_pipe, O_CLOEXEC), 0);
    const pid_t parent = ::fork();
    ASSERT_GE(parent, 0);
    if (parent == 0) {  // the child's parent: starts it, says its pid, waits to be killed
      const pid_t child = start(*containment);
      (void)!::write(pid_pipe[1], &child, sizeof child);
      for (;;) ::pause();
    }
    ::close(pid_pipe[1]);
    pid_t child = -1;
    ASSERT_EQ(::read(pid_pipe[0], &child, sizeof child), static_cast<ssize_t>(sizeof child));
    ::close(pid_pipe[0]);
    close_child_ends();
    report_host_.reset();  // the parent holds its copy
    EXPECT_NE(read_line(ends.out), "");  // it runs
    ::kill(parent, SIGKILL);
    ASSERT_EQ(::waitpid(parent, nullptr, 0), parent);
    int status = 0;
    if (die) {
      EXPECT_EQ(::waitpid(child, &status, 0), child);  // the orphan came to this subreaper, killed
      EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
    } else {
      ::usleep(300 * 1000);
      EXPECT_EQ(::waitpid(child, &status, WNOHANG), 0) << "the child should outlive its parent without the signal";
      ::kill(child, SIGKILL);
      EXPECT_EQ(::waitpid(child, &status, 0), child);
    }
    ::close(ends.out);
    ::close(ends.err);
  }
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
}

INSTANTIATE_TEST_SUITE_P(Runtimes, KernelLayers, ::testing::Values("node", "deno"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace taskyon::hardening
