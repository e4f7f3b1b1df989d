// Imported MCP servers stay running in the long-lived host (issue 13 item 5):
// external::McpClients against the real server-everything from npm. One
// session per server, kept between calls, restarted when it died, stopped
// when a call is cancelled.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <vector>
#include <thread>

#include <gtest/gtest.h>

#include "taskyon/external/mcp.h"

namespace taskyon::external {
namespace {

using json::Value;
using namespace std::chrono_literals;

const std::string kServer =
    std::string(TASKYON_SOURCE_DIR) + "/node_modules/@modelcontextprotocol/server-everything/dist/index.js";
const McpServer kEverything{{"node", kServer, "stdio"}, ""};

bool gone(int pid) { return ::kill(pid, 0) == -1 && errno == ESRCH; }

TEST(McpClients, KeepsTheServerRunningBetweenCallsAndRestartsItWhenItDies) {
  McpClients clients;
  auto first = clients.call_tool(kEverything, "echo", {{"message", "one"}}, Value(), 20s, {});
  ASSERT_TRUE(first) << first.error().describe();
  ASSERT_EQ(first->status, sandbox::Status::ok) << first->error;
  EXPECT_TRUE(first->fresh_sandbox);
  ASSERT_EQ(clients.pids().size(), 1u);
  const int pid = clients.pids()[0];

  auto second = clients.call_tool(kEverything, "echo", {{"message", "two"}}, Value(), 20s, {});
  ASSERT_TRUE(second) << second.error().describe();
  ASSERT_EQ(second->status, sandbox::Status::ok) << second->error;
  EXPECT_FALSE(second->fresh_sandbox) << "the second call reuses the running server";
  EXPECT_EQ(second->value["content"][0]["text"], "Echo: two");
  ASSERT_EQ(clients.pids(), std::vector<int>{pid});

  ::kill(-pid, SIGKILL);  // the server dies between calls
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);  // and is gone for good (reaped here, not by the client)
  auto third = clients.call_tool(kEverything, "echo", {{"message", "three"}}, Value(), 20s, {});
  ASSERT_TRUE(third) << third.error().describe();
  ASSERT_EQ(third->status, sandbox::Status::ok) << third->error;
  EXPECT_TRUE(third->fresh_sandbox) << "a dead server is restarted";
  ASSERT_EQ(clients.pids().size(), 1u);
  EXPECT_NE(clients.pids()[0], pid);
}

// Calls `server`'s echo tool from a new thread whose signal mask is `mask`
// (a host worker's, or a fresh thread's); true when the call returned ok.
bool echo_from_thread_with_mask(McpClients& clients, const McpServer& server, const sigset_t& mask) {
  bool ok = false;
  std::thread caller([&] {
    if (pthread_sigmask(SIG_SETMASK, &mask, nullptr) != 0) return;
    auto called = clients.call_tool(server, "echo", {{"message", "mask"}}, Value(), 20s, {});
    ok = called && called->status == sandbox::Status::ok;
  });
  caller.join();
  return ok;
}

// A server starts with no signal blocked, whatever the calling thread blocks:
// a host worker that wrote to a sandbox blocks SIGPIPE for good
// (write_no_sigpipe) and runs later calls on the same thread, and
// posix_spawn would pass that mask on to the server (base/spawn.h). Node and
// dash unblock every signal when they start, so the mask is read by a
// Python that then execs Node.
TEST(McpClients, AServerStartsWithNoSignalBlocked) {
  const std::string seen = ::testing::TempDir() + "/taskyon-server-sigblk-" + std::to_string(::getpid());
  const McpServer server{{"python3", "-c",
                          "import os, sys\n"
                          "open(sys.argv[1], 'w').write(next(l for l in open('/proc/self/status') if l.startswith('SigBlk:')))\n"
                          "os.execvp('node', ['node', sys.argv[2], 'stdio'])\n",
                          seen, kServer},
                         ""};
  McpClients clients;
  sigset_t pipe_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  ASSERT_TRUE(echo_from_thread_with_mask(clients, server, pipe_set));
  std::ifstream status(seen);
  std::string line;
  std::getline(status, line);
  std::remove(seen.c_str());
  EXPECT_EQ(line, "SigBlk:\t0000000000000000") << "the server inherited the calling thread's signal mask";
}

// A server that closes its stdin (it answers initialize, then reads no more)
// makes the client's next write fail. The write is EPIPE and the call an
// error, never a SIGPIPE that ends the host: the calling thread here has
// SIGPIPE unblocked, as a fresh host thread does (base/sigpipe.h).
TEST(McpClients, AServerThatClosesItsInputFailsTheCallNotTheHost) {
  const McpServer deaf{{"python3", "-c",
                        "import json, os, sys, time\n"
                        "request = json.loads(sys.stdin.readline())\n"
                        "os.close(0)\n"
                        "print(json.dumps({'jsonrpc': '2.0', 'id': request['id'], 'result': {\n"
                        "  'protocolVersion': request['params']['protocolVersion'],\n"
                        "  'capabilities': {'tools': {}}, 'serverInfo': {'name': 'deaf', 'version': '1'}}}), flush=True)\n"
                        "time.sleep(30)\n"},
                       ""};
  McpClients clients;
  sigset_t none;
  sigemptyset(&none);
  EXPECT_FALSE(echo_from_thread_with_mask(clients, deaf, none));
}

TEST(McpClients, ACancelledCallStopsItsServer) {
  McpClients clients;
  ASSERT_TRUE(clients.call_tool(kEverything, "echo", {{"message", "warm"}}, Value(), 20s, {}));
  ASSERT_EQ(clients.pids().size(), 1u);
  const int pid = clients.pids()[0];
  sandbox::CancelToken cancel;
  std::thread canceller([cancel] {
    std::this_thread::sleep_for(200ms);
    cancel.cancel();
  });
  auto out = clients.call_tool(kEverything, "trigger-long-running-operation", {{"duration", 30}, {"steps", 3}}, Value(),
                               60s, cancel);
  canceller.join();
  ASSERT_TRUE(out) << out.error().describe();
  EXPECT_EQ(out->status, sandbox::Status::cancelled) << out->error;
  EXPECT_TRUE(out->destroyed.has_value());
  EXPECT_TRUE(clients.pids().empty());
  EXPECT_TRUE(gone(pid));
}

// A call queued behind another call on the same server (calls to one server
// run one at a time) keeps its own deadline and its own cancellation: it does
// not wait for the call ahead of it, and the server is left running that call.
TEST(McpClients, ACallQueuedBehindABusyServerKeepsItsOwnTimeoutAndCancellation) {
  McpClients clients;
  sandbox::CancelToken stop_first;
  std::atomic<bool> busy{false}, first_done{false};
  std::optional<Result<sandbox::CallOutcome>> first;
  // The first call's own timeout (8 s) only bounds the test when queued calls
  // wait for it; the test cancels it long before.
  std::thread holder([&] {
    first = clients.call_tool(kEverything, "trigger-long-running-operation", {{"duration", 30}, {"steps", 100}},
                              Value(), 8s, stop_first, CallEvents{[&](double, double, std::string_view) { busy = true; }});
    first_done = true;
  });
  struct Stop {  // an assertion that ends the test early still ends the held call
    sandbox::CancelToken token;
    std::thread& thread;
    ~Stop() {
      token.cancel();
      if (thread.joinable()) thread.join();
    }
  } stop{stop_first, holder};
  for (int i = 0; i < 2000 && !busy; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(busy) << "the long-running call reports progress: it holds the server";
  const auto pids = clients.pids();
  ASSERT_EQ(pids.size(), 1u);

  auto timed_out = clients.call_tool(kEverything, "echo", {{"message", "queued"}}, Value(), 300ms, {});
  EXPECT_FALSE(first_done) << "the queued call returned only when the call ahead of it ended";
  ASSERT_TRUE(timed_out) << timed_out.error().describe();
  EXPECT_EQ(timed_out->status, sandbox::Status::timeout) << timed_out->error;
  EXPECT_NE(timed_out->error.find("busy with another call"), std::string::npos) << timed_out->error;
  EXPECT_FALSE(timed_out->destroyed.has_value()) << "the server keeps running the other call";

  sandbox::CancelToken cancel;
  std::thread canceller([cancel] {
    std::this_thread::sleep_for(200ms);
    cancel.cancel();
  });
  auto cancelled = clients.call_tool(kEverything, "echo", {{"message", "queued"}}, Value(), 60s, cancel);
  canceller.join();
  EXPECT_FALSE(first_done) << "the cancelled call returned only when the call ahead of it ended";
  ASSERT_TRUE(cancelled) << cancelled.error().describe();
  EXPECT_EQ(cancelled->status, sandbox::Status::cancelled) << cancelled->error;
  EXPECT_FALSE(cancelled->destroyed.has_value());
  EXPECT_EQ(clients.pids(), pids) << "neither queued call touched the server";

  stop_first.cancel();
  holder.join();
  ASSERT_TRUE(first.has_value() && first->has_value());
  EXPECT_EQ((*first)->status, sandbox::Status::cancelled) << (*first)->error;
}

// pids() and running() read what each server publishes, never its session:
// a reader thread polling them while calls restart the server (the old
// session freed, a new one made) must see at most one server, and never
// touch a session being replaced (a heap-use-after-free under ASan when they
// read the session itself).
TEST(McpClients, PidsAndRunningAreSafeWhileCallsRestartTheServer) {
  McpClients clients;
  std::atomic<bool> done{false};
  std::atomic<int> reads{0}, bad{0};
  std::thread reader([&] {
    while (!done) {
      const auto pids = clients.pids();
      const auto running = clients.running();
      if (pids.size() > 1 || running > 1) ++bad;
      ++reads;
    }
  });
  std::vector<int> seen;
  for (int i = 0; i < 6; ++i) {
    auto out = clients.call_tool(kEverything, "echo", {{"message", "restart"}}, Value(), 20s, {});
    ASSERT_TRUE(out) << out.error().describe();
    ASSERT_EQ(out->status, sandbox::Status::ok) << out->error;
    EXPECT_TRUE(out->fresh_sandbox) << "call " << i << " follows a killed server";
    ASSERT_EQ(clients.pids().size(), 1u);
    const int pid = clients.pids()[0];
    seen.push_back(pid);
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  done = true;
  reader.join();
  EXPECT_EQ(bad, 0);
  EXPECT_GT(reads, 0);
  EXPECT_EQ(std::set<int>(seen.begin(), seen.end()).size(), seen.size()) << "every restart is a new process";
}

TEST(McpClients, DestructionStopsEveryServer) {
  int pid = 0;
  {
    McpClients clients;
    ASSERT_TRUE(clients.call_tool(kEverything, "echo", {{"message", "x"}}, Value(), 20s, {}));
    ASSERT_EQ(clients.pids().size(), 1u);
    pid = clients.pids()[0];
  }
  EXPECT_TRUE(gone(pid));
}

}  // namespace
}  // namespace taskyon::external
