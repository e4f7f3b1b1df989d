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
#include <sys/resource.h>
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

// The attempts; `CANARY` and `PID` are replaced by the test. Every value is
// "ok" or "err:<errno name>".
constexpr const char* kScript = R"(
import fs from 'node:fs';
import os from 'node:os';
const canary = CANARY, pid = PID;
const t = (f) => {
  try { f(); return 'ok'; } catch (e) { return 'err:' + ((e.info && e.info.code) || e.code || e.name); }
};
const out = {
  statShadow: t(() => fs.statSync('/etc/shadow')),
  statCanary: t(() => fs.statSync(canary)),
  chmod: t(() => fs.chmodSync(canary, 0o4777)),
  utimes: t(() => fs.utimesSync(canary, 1, 1)),
  chown: t(() => fs.chownSync(canary, 1000, 1000)),  // 1000: the sandbox's own id inside
  setPriority: t(() => os.setPriority(pid, 19)),
  kill: t(() => process.kill(pid, 0)),
};
process.stdout.write(JSON.stringify(out) + '\n');
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

class KernelLayers : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    const Support& s = support();
    if (!s.user_namespaces || !s.full_error.empty() || !s.seccomp || s.landlock_abi < 1) {
      GTEST_SKIP() << "needs every kernel layer: " << s.full_error;
    }
    deno_ = std::string(GetParam()) == "deno";
    // The project-local Deno install (scripts/setup.sh), as sandbox::find_deno finds it.
    const std::string deno = std::string(TASKYON_SOURCE_DIR) + "/node_modules/@deno/linux-x64-glibc/deno";
    exe_ = deno_ ? (::access(deno.c_str(), X_OK) == 0 ? fs::canonical(deno).string() : on_path("deno"))
                 : on_path("node");
    ASSERT_FALSE(exe_.empty()) << GetParam() << " is not installed";
    ::chmod(dir_.path().c_str(), 0755);
    canary_ = dir_.write("canary.txt", "canary-55e0\n");
    ::chmod(canary_.c_str(), 0644);
    ASSERT_EQ(::stat(canary_.c_str(), &before_), 0);
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
  }
  void TearDown() override {
    if (other_ > 0) {
      int status = 0;
      EXPECT_EQ(::waitpid(other_, &status, WNOHANG), 0) << "the unrelated process ended";
      ::kill(other_, SIGKILL);
      ::waitpid(other_, nullptr, 0);
    }
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

  // Runs the script under `layers`; its output line.
  std::string run(Layers layers) {
    std::string code = kScript;
    code.replace(code.find("CANARY"), 6, "'" + canary_ + "'");
    code.replace(code.find("PID"), 3, std::to_string(other_));
    std::vector<std::string> argv, env;
    if (deno_) {
      argv = {exe_, "eval", code};
      env = {"DENO_DIR=" + (work_ / "deno").string(), "DENO_NO_UPDATE_CHECK=1", "NO_COLOR=1"};
    } else {
      argv = {exe_, "--openssl-config=/dev/null", "--input-type=module", "-e", code};
    }
    auto policy = Policy::prepare(exe_, deno_ ? std::vector<std::string>{} : std::vector<std::string>{"/dev/null"},
                                  layers, {.unix_stream_socketpair = deno_});
    EXPECT_TRUE(policy.has_value()) << policy.error().describe();
    if (!policy) return "no policy";
    int in[2], out[2], err[2];
    EXPECT_EQ(::pipe2(in, O_CLOEXEC), 0);
    EXPECT_EQ(::pipe2(out, O_CLOEXEC), 0);
    EXPECT_EQ(::pipe2(err, O_CLOEXEC), 0);
    Fd report_host, report_child;  // with a PID namespace (contain.h)
    if ((*policy)->namespace_plan().pid()) {
      EXPECT_TRUE(report_socket(report_host, report_child));
    }
    auto containment = Containment::prepare(
        *policy, {.argv = argv, .env = env, .workdir = work_.string(), .limits = {.data_bytes = 0, .open_files = 256}},
        ChildStdio{in[0], out[1], err[1], report_child.get(), report_host.get()});
    EXPECT_TRUE(containment.has_value()) << containment.error().describe();
    if (!containment) return "no containment";
    const pid_t pid = start(**containment);
    report_child.reset();
    ::close(in[0]);
    ::close(in[1]);
    ::close(out[1]);
    ::close(err[1]);
    std::string text, errors;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(out[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<std::size_t>(n));
    while ((n = ::read(err[0], buf, sizeof buf)) > 0) errors.append(buf, static_cast<std::size_t>(n));
    ::close(out[0]);
    ::close(err[0]);
    int status = 0;
    EXPECT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "wait status " << status << " (" << step_name(WIFEXITED(status) ? WEXITSTATUS(status) : 0) << ") "
        << errors;
    return text;
  }

  static std::string at(const std::string& out, const char* key) { return answer(out, key); }

  bool deno_ = false;
  std::string exe_, canary_;
  TempDir dir_;
  fs::path work_;
  struct stat before_ {};
  pid_t other_ = -1;
  int other_nice_ = 0;
};

TEST_P(KernelLayers, EveryLayerOn) {
  const std::string out = run({});
  EXPECT_EQ(at(out, "statShadow"), "err:ENOENT") << out;
  EXPECT_EQ(at(out, "statCanary"), "err:ENOENT") << out;
  for (const char* key : {"chmod", "utimes", "chown", "setPriority", "kill"}) {
    EXPECT_NE(at(out, key), "ok") << key << " " << out;
    EXPECT_TRUE(at(out, key).starts_with("err:")) << key << " " << out;
  }
  EXPECT_TRUE(canary_unchanged());
  EXPECT_TRUE(other_unchanged());
}

TEST_P(KernelLayers, MountNamespaceHidesHostPaths) {
  const std::string on = run({});
  EXPECT_EQ(at(on, "statShadow"), "err:ENOENT") << on;
  EXPECT_EQ(at(on, "statCanary"), "err:ENOENT") << on;
  Layers off;
  off.mount_namespace = false;  // Landlock stays: it does not mediate stat
  const std::string without = run(off);
  EXPECT_EQ(at(without, "statShadow"), "ok") << without;
  EXPECT_EQ(at(without, "statCanary"), "ok") << without;
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

INSTANTIATE_TEST_SUITE_P(Runtimes, KernelLayers, ::testing::Values("node", "deno"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace taskyon::hardening
