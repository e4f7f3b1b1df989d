// Issue 11, item 4: every pool sandbox runs in its own PID namespace, and the
// host still names, measures and kills it by its runtime's host pid
// (hardening/contain.h: the host's child is the namespace's init, PID 1; the
// runtime is PID 2 and reports its host pid through SCM_CREDENTIALS). Real
// node processes; /proc read from the host's side.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "taskyon/hardening/probe.h"
#include "taskyon/sandbox/memory.h"
#include "taskyon/sandbox/pool.h"
#include "taskyon/sandbox/process.h"
#include "taskyon/sandbox/runtime.h"
#include "taskyon/sandbox/sandbox.h"

namespace taskyon::sandbox {
namespace {

using json::Value;

bool process_gone(int pid) { return ::kill(pid, 0) == -1 && errno == ESRCH; }

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The value of field `name` ("NSpid", …) in /proc/PID/status, tabs as read.
std::string status_field(int pid, const std::string& name) {
  std::istringstream in(read_text("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(in, line);)
    if (line.starts_with(name + ":")) return line.substr(name.size() + 2);
  return {};
}

// ppid and session of PID, from /proc/PID/stat.
std::pair<int, int> parent_and_session(int pid) {
  const std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
  const std::size_t close = stat.rfind(')');
  char state = 0;
  int ppid = 0, pgrp = 0, session = 0;
  if (close == std::string::npos ||
      std::sscanf(stat.c_str() + close + 1, " %c %d %d %d", &state, &ppid, &pgrp, &session) != 4)
    return {0, 0};
  return {ppid, session};
}

CallRequest request(std::string revision, std::string code) {
  CallRequest r;
  r.tool = ToolCode{std::move(revision), std::move(code)};
  return r;
}

class SandboxPidNamespace : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!hardening::support().pid_namespace) GTEST_SKIP() << "no PID namespace here: " << hardening::support().full_error;
  }
  Pool pool_;
};

TEST_F(SandboxPidNamespace, ThePoolNamesTheRuntimeByItsHostPid) {
  auto out = pool_.call(request("sha256:pidns-name", "() => ({ pid: process.pid, ppid: process.ppid })"));
  ASSERT_TRUE(out.has_value()) << out.error().describe();
  ASSERT_EQ(out->status, Status::ok) << out->error;
  // Inside: the runtime is PID 2, its parent the init (PID 1).
  EXPECT_EQ(out->value, (Value{{"pid", 2}, {"ppid", 1}}));
  ASSERT_EQ(pool_.sandboxes().size(), 1u);
  const int pid = pool_.sandboxes()[0].pid;
  // Outside: SandboxInfo::pid is the runtime itself (its command line, its
  // memory), PID 2 of a namespace of its own; its parent is the init, which
  // leads the session the host kills.
  auto node = find_node("");
  ASSERT_TRUE(node.has_value());
  const std::string cmdline = read_text("/proc/" + std::to_string(pid) + "/cmdline");
  EXPECT_EQ(cmdline.substr(0, cmdline.find('\0')), *node);
  EXPECT_EQ(status_field(pid, "NSpid"), std::to_string(pid) + "\t2");
  const auto [init, session] = parent_and_session(pid);
  EXPECT_EQ(session, init);
  EXPECT_EQ(status_field(init, "NSpid"), std::to_string(init) + "\t1");
  EXPECT_EQ(parent_and_session(init).first, ::getpid());
  // The memory budget measures the runtime: V8's heap, tens of MiB resident.
  EXPECT_GT(resident_bytes(pid).value_or(0), 16u << 20);
}

TEST_F(SandboxPidNamespace, DestroyingTheSandboxEndsItsWholeNamespace) {
  auto out = pool_.call(request("sha256:pidns-kill", "() => 1"));
  ASSERT_TRUE(out.has_value() && out->status == Status::ok);
  const int pid = pool_.sandboxes().at(0).pid;
  const int init = parent_and_session(pid).first;
  ASSERT_GT(init, 0);
  ASSERT_NE(init, ::getpid());
  pool_.terminate("sha256:pidns-kill");
  EXPECT_TRUE(process_gone(pid));
  EXPECT_TRUE(process_gone(init));
}

TEST_F(SandboxPidNamespace, ToolCodeCannotSignalItsInitOrTheHost) {
  // PID 1 takes no signal from inside the namespace that it has no handler
  // for (and Landlock's signal scope refuses it too); the host's pid does not
  // exist in there. The sandbox survives and takes the next call.
  const std::string code = "(a) => { const r = {}; "
                           "for (const [k, p] of [['init', 1], ['host', a.host]]) "
                           "{ try { process.kill(p, 'SIGKILL'); r[k] = 'sent'; } catch (e) { r[k] = e.code; } } "
                           "return r; }";
  CallRequest r = request("sha256:pidns-signal", code);
  r.args = Value{{"host", static_cast<int>(::getpid())}};
  auto out = pool_.call(r);
  ASSERT_TRUE(out.has_value()) << out.error().describe();
  ASSERT_EQ(out->status, Status::ok) << out->error;
  EXPECT_NE(out->value["init"], "sent");  // EPERM (signal scope); and ignored by PID 1 without it
  EXPECT_EQ(out->value["host"], "ESRCH");
  auto again = pool_.call(r);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->status, Status::ok) << again->error;
  EXPECT_FALSE(again->fresh_sandbox);
}

// Issue 11: the init is a fork of the host holding a copy-on-write snapshot
// of its memory; the memory budget counts it with the runtime (sandbox.h
// footprint(), resident_bytes()).
TEST(SandboxPidNamespaceMemory, TheBudgetCountsTheInitWithTheRuntime) {
  if (!hardening::support().pid_namespace) GTEST_SKIP() << "no PID namespace here: " << hardening::support().full_error;
  RuntimeConfig config;
  auto node = locate_runtime(config);
  ASSERT_TRUE(node.has_value()) << node.error().describe();
  Launcher launcher;
  auto started = Sandbox::start(launcher, node->path, config, "sha256:pidns-memory", Mode::retained);
  ASSERT_TRUE(started.has_value()) << started.error().describe();
  const Sandbox& sandbox = **started;
  // The init: the runtime's parent on the host's side.
  const int init = parent_and_session(sandbox.pid()).first;
  ASSERT_GT(init, 0);
  ASSERT_NE(init, sandbox.pid());
  // PSS divides a shared page among the processes mapping it, so it moves
  // whenever another node starts or ends elsewhere on the machine (ctest runs
  // tests in parallel). A sample counts only when the runtime's own figure is
  // the same, within 1%, just before and just after the sandbox's sum; in such
  // a sample the init's share is the margin (without it the sum is the
  // runtime's alone). RSS does not depend on sharing and is checked alike.
  bool pss_held = false, rss_held = false;
  std::string last;
  for (int attempt = 0; attempt < 100 && !(pss_held && rss_held); ++attempt) {
    if (attempt > 0) ::usleep(20'000);
    const auto before = proportional_bytes(sandbox.pid());
    const auto counted = sandbox.footprint();
    const auto after = proportional_bytes(sandbox.pid());
    const auto init_pss = proportional_bytes(init);
    ASSERT_TRUE(before && counted && after && init_pss);
    ASSERT_GT(*init_pss, 0u);
    const auto rss_before = resident_bytes(sandbox.pid());
    const auto rss = sandbox.resident_bytes();
    const auto rss_after = resident_bytes(sandbox.pid());
    const auto init_rss = resident_bytes(init);
    ASSERT_TRUE(rss_before && rss && rss_after && init_rss);
    const auto steady = [](std::uint64_t a, std::uint64_t b) { return (a > b ? a - b : b - a) * 100 <= std::max(a, b); };
    if (steady(*before, *after) && counted->proportional > std::max(*before, *after) + *init_pss / 2) pss_held = true;
    if (steady(*rss_before, *rss_after) && *rss >= std::max(*rss_before, *rss_after) + *init_rss / 2) rss_held = true;
    last = "runtime pss " + std::to_string(*before) + ".." + std::to_string(*after) + ", init pss " +
           std::to_string(*init_pss) + ", counted " + std::to_string(counted->proportional) + "; runtime rss " +
           std::to_string(*rss_before) + ".." + std::to_string(*rss_after) + ", init rss " + std::to_string(*init_rss) +
           ", counted " + std::to_string(*rss);
  }
  EXPECT_TRUE(pss_held) << last;
  EXPECT_TRUE(rss_held) << last;
}

// Once the runtime has exec'd, the init execs taskyon-init (hardening/
// init_image.h): it no longer holds a copy-on-write snapshot of the host, whose
// pages it would otherwise keep resident (this test binary: tens of MiB) and
// copy each time the host writes one.
TEST_F(SandboxPidNamespace, TheInitKeepsNoCopyOfTheHost) {
  auto out = pool_.call(request("sha256:pidns-small-init", "() => 1"));
  ASSERT_TRUE(out.has_value() && out->status == Status::ok);
  const int init = parent_and_session(pool_.sandboxes().at(0).pid).first;
  ASSERT_GT(init, 0);
  ASSERT_NE(init, ::getpid());
  const std::string cmdline = read_text("/proc/" + std::to_string(init) + "/cmdline");
  EXPECT_EQ(cmdline.substr(0, cmdline.find('\0')), "taskyon-init");
  EXPECT_EQ(status_field(init, "NSpid"), std::to_string(init) + "\t1");
  const auto init_rss = resident_bytes(init);
  const auto host_rss = resident_bytes(::getpid());
  ASSERT_TRUE(init_rss && host_rss);
  EXPECT_LT(*init_rss, 1u << 20) << "the host's is " << *host_rss;
  // Still the runtime's reporter: the runtime's end reaches the host as its own.
  auto abort = pool_.call(request("sha256:pidns-small-init-abort", "() => process.abort()"));
  ASSERT_TRUE(abort.has_value()) << abort.error().describe();
  EXPECT_EQ(abort->status, Status::crashed) << abort->error;
  EXPECT_NE(abort->error.find("SIGABRT"), std::string::npos) << abort->error;
}

}  // namespace
}  // namespace taskyon::sandbox
