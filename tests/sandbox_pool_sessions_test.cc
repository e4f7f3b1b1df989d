// Retained sandboxes keyed by (revision, session) (DESIGN §8 H3), a session's
// close destroying its sandboxes, and log/progress frames streamed to the
// caller as they arrive (issue 13 item 1), on real node processes.
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "taskyon/sandbox/pool.h"

namespace taskyon::sandbox {
namespace {

using namespace std::chrono_literals;
using json::Value;

const std::string kCounter =
    "() => { globalThis.n = (globalThis.n ?? 0) + 1; return globalThis.n; }";

CallRequest counter(std::string session) {
  CallRequest r;
  r.tool = ToolCode{"sha256:test-session-counter", kCounter, "counter"};
  r.session = std::move(session);
  return r;
}

int count(Pool& pool, const std::string& session) {
  auto out = pool.call(counter(session));
  EXPECT_TRUE(out.has_value());
  if (!out) return -1;
  EXPECT_EQ(out->status, Status::ok) << out->error;
  return out->value.is_number_integer() ? out->value.get<int>() : -1;
}

TEST(PoolSessions, EachSessionHasItsOwnRetainedSandbox) {
  Pool pool;
  EXPECT_EQ(count(pool, "a"), 1);
  EXPECT_EQ(count(pool, "a"), 2);
  EXPECT_EQ(count(pool, "b"), 1) << "H3: session b must not see session a's variables";
  EXPECT_EQ(count(pool, ""), 1) << "the unnamed session (the one-shot CLI) is a session of its own";
  EXPECT_EQ(count(pool, "a"), 3);
  auto infos = pool.sandboxes();
  ASSERT_EQ(infos.size(), 3u);
  std::vector<std::string> sessions;
  for (const auto& i : infos) sessions.push_back(i.session);
  std::sort(sessions.begin(), sessions.end());
  EXPECT_EQ(sessions, (std::vector<std::string>{"", "a", "b"}));
}

TEST(PoolSessions, ClosingASessionDestroysOnlyItsSandboxes) {
  Pool pool;
  count(pool, "a");
  count(pool, "b");
  int pid_a = 0;
  for (const auto& i : pool.sandboxes())
    if (i.session == "a") pid_a = i.pid;
  ASSERT_GT(pid_a, 0);
  pool.close_session("a");
  ASSERT_EQ(pool.sandboxes().size(), 1u);
  EXPECT_EQ(pool.sandboxes()[0].session, "b");
  auto d = pool.destructions();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].reason, "session_closed");
  EXPECT_EQ(d[0].session, "a");
  EXPECT_EQ(d[0].pid, pid_a);
  EXPECT_EQ(count(pool, "a"), 1) << "a closed session starts again";
  EXPECT_EQ(count(pool, "b"), 2);
}

TEST(PoolSessions, TerminateAndSupersedeReachEverySession) {
  Pool pool;
  count(pool, "a");
  count(pool, "b");
  pool.retire_superseded("counter", "sha256:another");
  EXPECT_TRUE(pool.sandboxes().empty());
  ASSERT_EQ(pool.destructions().size(), 2u);
  EXPECT_EQ(pool.destructions()[0].reason, "superseded");
  count(pool, "a");
  count(pool, "b");
  pool.terminate("sha256:test-session-counter");
  EXPECT_TRUE(pool.sandboxes().empty());
}

TEST(PoolSessions, LogsAndProgressStreamBeforeTheCallEnds) {
  Pool pool;
  CallRequest r;
  r.tool = ToolCode{"sha256:test-session-chatty",
                    "async (args, context) => { console.log('first'); context.progress(1, 3, 'one of three');"
                    " context.progress(2); console.error('second'); return 7; }",
                    "chatty"};
  std::mutex mu;
  std::vector<std::string> events;
  r.on_log = [&](const LogEntry& e) {
    std::lock_guard lock(mu);
    events.push_back(e.level + ":" + e.text);
  };
  r.on_progress = [&](double value, double total, std::string_view message) {
    std::lock_guard lock(mu);
    events.push_back("progress:" + std::to_string(static_cast<int>(value)) + "/" +
                     (std::isnan(total) ? std::string("-") : std::to_string(static_cast<int>(total))) + ":" +
                     std::string(message));
  };
  auto out = pool.call(r);
  ASSERT_TRUE(out.has_value());
  ASSERT_EQ(out->status, Status::ok) << out->error;
  EXPECT_EQ(out->value, 7);
  EXPECT_EQ(events, (std::vector<std::string>{"log:first", "progress:1/3:one of three", "progress:2/-:",
                                              "error:second"}));
  ASSERT_EQ(out->logs.size(), 2u) << "streamed logs are kept in the outcome too";
}

TEST(PoolSessions, ProgressRefusesNonNumbers) {
  Pool pool;
  CallRequest r;
  r.tool = ToolCode{"sha256:test-session-badprogress",
                    "(args, context) => { context.progress('lots'); return 1; }", "bad"};
  auto out = pool.call(r);
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->status, Status::tool_error);
  EXPECT_NE(out->error.find("finite number"), std::string::npos) << out->error;
}

// The harness drops progress past its own cap, but tool code can write frames
// to fd 1 itself: the host bounds what it hands on (pool.h kMaxProgressFrames,
// kMaxProgressMessageBytes), whatever the guest does.
TEST(PoolSessions, TheHostBoundsProgressFramesToolCodeWritesItself) {
  Pool pool;  // a fresh pool: its first call has id 1
  CallRequest r;
  r.tool = ToolCode{"sha256:test-session-forgedprogress",
                    "() => { const fs = require('fs'); const m = 'é'.repeat(5000);"
                    " for (let i = 0; i < 1500; i++) fs.writeSync(1, JSON.stringify({type: 'progress', id: 1,"
                    " progress: i, total: null, message: m}) + '\\n'); return 1; }",
                    "forged"};
  // 15 MB of frames for the host to parse: under ASan on a loaded machine that
  // passed the default 10 s call timeout once. Speed is not what this checks.
  r.timeout = 60s;
  std::size_t frames = 0, longest = 0;
  bool valid = true;
  r.on_progress = [&](double, double, std::string_view message) {
    ++frames;
    longest = std::max(longest, message.size());
    valid = valid && message.size() % 2 == 0;  // 'é' is 2 bytes: never cut inside one
  };
  auto out = pool.call(r);
  ASSERT_TRUE(out.has_value());
  ASSERT_EQ(out->status, Status::ok) << out->error;
  EXPECT_EQ(frames, kMaxProgressFrames);
  EXPECT_LE(longest, kMaxProgressMessageBytes);
  EXPECT_GT(longest, 0u);
  EXPECT_TRUE(valid);
}

TEST(PoolSessions, ALogCallbackSeesAStuckCallsLogBeforeItIsCancelled) {
  Pool pool;
  CallRequest r;
  r.tool = ToolCode{"sha256:test-session-stuck", "async () => { console.log('stuck'); await new Promise(() => {}); }",
                    "stuck"};
  r.session = "s";
  r.timeout = 30s;
  CancelToken cancel = r.cancel;
  r.on_log = [cancel](const LogEntry& e) {
    if (e.text == "stuck") cancel.cancel();  // from the pool's reading thread, as an MCP client would
  };
  auto out = pool.call(r);
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->status, Status::cancelled);
  EXPECT_EQ(out->destroyed.value_or(""), "cancelled");
  EXPECT_TRUE(pool.sandboxes().empty());
}

}  // namespace
}  // namespace taskyon::sandbox
