// Capability frames between a real Node sandbox and the host (DESIGN §6, M1,
// M2, M3, M13), cancellation from another thread (S5) and eager destruction
// on activation (S3). The Capabilities object here is the test's own host
// side: what is under test is the protocol, the harness and the pool.
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "taskyon/sandbox/pool.h"
#include "taskyon/sandbox/protocol.h"

namespace taskyon::sandbox {
namespace {

using namespace std::chrono_literals;
using json::Value;

struct Seen {
  std::string revision;
  CapabilityOp op;
  Value args;
};

// Answers every request from a script and records what it was asked.
class ScriptedHost : public Capabilities {
 public:
  CapabilityReply handle(std::string_view revision, CapabilityOp op, const Value& args, const CancelToken& cancel,
                         std::chrono::steady_clock::time_point deadline) override {
    {
      std::lock_guard lock(mu);
      seen.push_back({std::string(revision), op, args});
      helper_tids.insert(static_cast<pid_t>(::syscall(SYS_gettid)));
    }
    if (block_until_cancelled) {  // a long transfer that only a cancel ends
      while (!cancel.cancelled() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
      return CapabilityReply::failure("cancelled", "the request was cancelled");
    }
    if (refuse) return CapabilityReply::failure("denied", "no grant for this origin");
    switch (op) {
      case CapabilityOp::fetch:
        return CapabilityReply::success({{"status", 200},
                                         {"statusText", "OK"},
                                         {"headers", Value::array({Value::array({"x-test", "1"})})},
                                         {"body", "aGVsbG8="},  // "hello"
                                         {"url", args["url"]}});
      case CapabilityOp::resolve_invocation:
        return CapabilityReply::success({{"tool", "sha256:tool"}, {"settings", "sha256:settings"}});
      default:
        return CapabilityReply::success(huge ? Value(std::string(huge, 'x')) : Value(nullptr));
    }
  }

  std::mutex mu;
  std::vector<Seen> seen;
  std::set<pid_t> helper_tids;  // the threads handle() ran on
  bool refuse = false;
  bool block_until_cancelled = false;
  std::size_t huge = 0;
};

CallRequest request(std::string revision, std::string code, Capabilities* caps, std::string name = "tool") {
  CallRequest r;
  r.tool = ToolCode{std::move(revision), std::move(code), std::move(name)};
  r.timeout = 10s;
  r.capabilities = caps;
  return r;
}

CallOutcome run(Pool& pool, const CallRequest& req) {
  auto result = pool.call(req);
  if (!result) {
    ADD_FAILURE() << result.error().describe();
    CallOutcome failed;
    failed.status = Status::crashed;
    return failed;
  }
  return std::move(*result);
}

std::string comm_of(int pid) {
  std::string comm;
  std::getline(std::ifstream("/proc/" + std::to_string(pid) + "/comm"), comm);
  return comm;
}

TEST(SandboxCapabilities, GlobalFetchIsContextFetch) {  // M2
  Pool pool;
  ScriptedHost host;
  auto out = run(pool, request("sha256:m2", "(a, context) => globalThis.fetch === context.fetch && "
                                            "typeof fetch === 'function' && Object.isFrozen(context)",
                               &host));
  ASSERT_EQ(out.status, Status::ok) << out.error;
  EXPECT_EQ(out.value, true);
}

// Issue 19: a capability request runs on a reused helper thread
// (base/workers.h), not on a thread started for it.
TEST(SandboxCapabilities, RequestsOneAfterAnotherRunOnReusedHelperThreads) {
  Pool pool;
  ScriptedHost host;
  const auto req = request("sha256:reuse", R"(async (a, context) => {
      for (let i = 0; i < 10; ++i) await context.storage.get('k' + i);
      return 'done';
    })",
                           &host);
  for (int call = 0; call < 3; ++call) {
    auto out = run(pool, req);
    ASSERT_EQ(out.status, Status::ok) << out.error;
  }
  ASSERT_EQ(host.seen.size(), 30u);
  // Usually one thread; a request that comes before the previous helper waits
  // again takes another idle one or starts one. A thread per request: 30.
  EXPECT_LE(host.helper_tids.size(), 4u) << "30 requests ran on " << host.helper_tids.size() << " threads";
  EXPECT_FALSE(host.helper_tids.contains(static_cast<pid_t>(::syscall(SYS_gettid))));
}

TEST(SandboxCapabilities, FetchTravelsAsOneTypedRequestWithTheChannelsRevision) {  // M3
  Pool pool;
  ScriptedHost host;
  auto out = run(pool, request("sha256:bound", R"(async () => {
      const r = await fetch('https://example.com/x', { method: 'POST', headers: { 'X-A': '1' }, body: 'hi' });
      return { status: r.status, text: await r.text(), h: r.headers.get('x-test'), url: r.url };
    })",
                               &host));
  ASSERT_EQ(out.status, Status::ok) << out.error;
  EXPECT_EQ(out.value, (Value{{"status", 200}, {"text", "hello"}, {"h", "1"}, {"url", "https://example.com/x"}}));
  ASSERT_EQ(host.seen.size(), 1u);
  EXPECT_EQ(host.seen[0].revision, "sha256:bound");
  EXPECT_EQ(host.seen[0].op, CapabilityOp::fetch);
  EXPECT_EQ(host.seen[0].args["method"], "POST");
  EXPECT_EQ(host.seen[0].args["body"], "aGk=");
  EXPECT_EQ(host.seen[0].args["url"], "https://example.com/x");
  EXPECT_NE(host.seen[0].args["headers"].dump().find(R"(["x-a","1"])"), std::string::npos);
}

TEST(SandboxCapabilities, TheDenoHarnessSpeaksTheSameCapabilityFrames) {  // M2, M3 on Deno
  RuntimeConfig config;
  config.runtime = JsRuntime::deno;
  Pool pool(config);
  ScriptedHost host;
  auto out = run(pool, request("sha256:deno-bound", R"(async (a, context) => {
      const r = await fetch('https://example.com/d', { method: 'PUT', body: new Uint8Array([104, 105]) });
      return { same: globalThis.fetch === context.fetch, status: r.status, text: await r.text(),
               inv: await context.resolveInvocation('other') };
    })",
                               &host));
  ASSERT_EQ(out.status, Status::ok) << out.error;
  EXPECT_EQ(out.value, (Value{{"same", true},
                              {"status", 200},
                              {"text", "hello"},
                              {"inv", {{"tool", "sha256:tool"}, {"settings", "sha256:settings"}}}}));
  ASSERT_EQ(host.seen.size(), 2u);
  EXPECT_EQ(host.seen[0].revision, "sha256:deno-bound");
  EXPECT_EQ(host.seen[0].args["method"], "PUT");
  EXPECT_EQ(host.seen[0].args["body"], "aGk=");
}

TEST(SandboxCapabilities, EveryTypedCapabilityReachesTheHost) {
  Pool pool;
  ScriptedHost host;
  auto out = run(pool, request("sha256:all", R"(async (a, c) => {
      const inv = await c.resolveInvocation('other');
      await c.createSubtasksResult([{ role: 'user', content: 'x' }]);
      await c.storage.set('k', { v: 1 });
      await c.storage.get('k');
      await c.storage.delete('k');
      await c.storage.list('');
      return inv;
    })",
                               &host));
  ASSERT_EQ(out.status, Status::ok) << out.error;
  EXPECT_EQ(out.value, (Value{{"tool", "sha256:tool"}, {"settings", "sha256:settings"}}));
  std::vector<CapabilityOp> ops;
  for (const auto& s : host.seen) ops.push_back(s.op);
  EXPECT_EQ(ops, (std::vector<CapabilityOp>{CapabilityOp::resolve_invocation, CapabilityOp::create_subtasks_result,
                                            CapabilityOp::storage_set, CapabilityOp::storage_get,
                                            CapabilityOp::storage_delete, CapabilityOp::storage_list}));
  EXPECT_EQ(host.seen[2].args, (Value{{"key", "k"}, {"value", {{"v", 1}}}}));
}

TEST(SandboxCapabilities, UnknownCapabilityIsABoundaryFailure) {  // M1
  Pool pool;
  ScriptedHost host;
  for (const char* frame : {
           R"({"type":"cap","id":ID,"req":1,"op":"exec","args":{}})",                       // no generic RPC
           R"({"type":"cap","id":ID,"req":1,"op":"fetch","args":{},"revision":"sha256:x"})",  // claims an identity
           R"({"type":"rpc","id":ID,"method":"readFile","params":["/etc/passwd"]})",
           R"({"type":"cap","id":ID,"req":7,"op":"fetch","args":{}})",                      // out of order
       }) {
    std::string text = frame;
    text.replace(text.find("ID"), 2, "' + id + '");
    // The harness numbers its own frames; a forged frame needs the call id,
    // which tool code learns from no API: it writes the frame for each plausible id.
    const std::string forge =
        "() => { const fs = require('fs'); for (let id = 1; id < 64; id++) fs.writeSync(1, '" + text + "\\n'); "
        "return 1; }";
    auto out = run(pool, request("sha256:m1", forge, &host));
    EXPECT_EQ(out.status, Status::protocol_error) << frame;
    EXPECT_EQ(out.destroyed, "protocol_error") << frame;
  }
  EXPECT_TRUE(host.seen.empty());
  EXPECT_TRUE(pool.live().empty());
}

TEST(SandboxCapabilities, ADeniedRequestIsAToolErrorWithACodeAndTheSandboxSurvives) {  // M13
  Pool pool;
  ScriptedHost host;
  host.refuse = true;
  const std::string code = R"(async (a) => {
      process.title = 'survivor';
      if (a.catch) { try { await fetch('https://example.com/'); } catch (e) { return [e.name, e.code, e.message]; } }
      return (await fetch('https://example.com/')).status;
    })";
  CallRequest first = request("sha256:m13", code, &host);
  first.args = {{"catch", true}};
  auto caught = run(pool, first);
  ASSERT_EQ(caught.status, Status::ok) << caught.error;
  EXPECT_EQ(caught.value, (Value::array({"CapabilityError", "denied", "no grant for this origin"})));
  const int pid = pool.sandboxes().at(0).pid;

  CallRequest again = request("sha256:m13", code, &host);
  again.args = {{"catch", false}};
  auto thrown = run(pool, again);
  EXPECT_EQ(thrown.status, Status::tool_error);
  EXPECT_NE(thrown.error.find("CapabilityError"), std::string::npos) << thrown.error;
  EXPECT_NE(thrown.error.find("denied"), std::string::npos) << thrown.error;
  EXPECT_FALSE(thrown.destroyed);
  ASSERT_EQ(pool.sandboxes().size(), 1u);
  EXPECT_EQ(pool.sandboxes()[0].pid, pid);  // the same sandbox took both calls
}

TEST(SandboxCapabilities, WithoutACapabilityContextEveryRequestIsDenied) {
  Pool pool;
  auto out = run(pool, request("sha256:none", "async () => { try { await fetch('https://example.com/'); } "
                                              "catch (e) { return e.code; } }",
                               nullptr));
  ASSERT_EQ(out.status, Status::ok) << out.error;
  EXPECT_EQ(out.value, "denied");
}

TEST(SandboxCapabilities, AReplyLargerThanAFrameIsTooLarge) {
  RuntimeConfig config;
  config.max_frame_bytes = 64u << 10;
  Pool pool(config);
  ScriptedHost host;
  host.huge = 100u << 10;
  auto out = run(pool, request("sha256:big", "async (a, c) => { try { await c.storage.get('k'); } "
                                             "catch (e) { return e.code; } }",
                               &host));
  ASSERT_EQ(out.status, Status::ok) << out.error;
  EXPECT_EQ(out.value, "too_large");
}

TEST(SandboxCapabilities, RequestsAfterTheCallEndedFailInsideTheSandbox) {
  Pool pool;
  ScriptedHost host;
  const std::string code = R"(async (a) => {
      if (a.later) {
        while (globalThis.lateError === undefined) await new Promise((r) => setTimeout(r, 5));
        return globalThis.lateError;
      }
      setTimeout(() => fetch('https://example.com/').catch((e) => { globalThis.lateError = e.code; }), 0);
      return 'returned';
    })";
  auto first = run(pool, request("sha256:late", code, &host));
  ASSERT_EQ(first.status, Status::ok) << first.error;
  std::this_thread::sleep_for(200ms);  // the timer fires between the calls
  CallRequest again = request("sha256:late", code, &host);
  again.args = {{"later", true}};
  auto probe = run(pool, again);
  ASSERT_EQ(probe.status, Status::ok) << probe.error;
  EXPECT_EQ(probe.value, "denied");  // S2: the ended call's fetch is refused
  EXPECT_TRUE(host.seen.empty());  // no frame reached the host after the call ended
}

TEST(SandboxCapabilities, CancelFromAnotherThreadDestroysTheSandbox) {  // S5
  Pool pool;
  CallRequest req = request("sha256:cancel", "() => { process.title = 'spinning'; for (;;) {} }", nullptr);
  std::thread canceller([&] {
    for (int i = 0; i < 2000; ++i) {
      auto infos = pool.sandboxes();
      if (!infos.empty() && comm_of(infos[0].pid) == "spinning") break;
      std::this_thread::sleep_for(5ms);
    }
    req.cancel.cancel();
  });
  auto out = run(pool, req);
  canceller.join();
  EXPECT_EQ(out.status, Status::cancelled) << out.error;
  EXPECT_EQ(out.destroyed, "cancelled");
  EXPECT_TRUE(pool.live().empty());
  bool recorded = false;
  for (const auto& d : pool.destructions()) recorded |= d.reason == "cancelled" && d.revision == "sha256:cancel";
  EXPECT_TRUE(recorded);
}

TEST(SandboxCapabilities, CancelReachesARequestInProgress) {  // S5, M13
  Pool pool;
  ScriptedHost host;
  host.block_until_cancelled = true;
  CallRequest req = request("sha256:cancel-fetch", "async () => (await fetch('https://example.com/slow')).status", &host);
  std::thread canceller([&] {
    for (int i = 0; i < 2000; ++i) {
      {
        std::lock_guard lock(host.mu);
        if (!host.seen.empty()) break;
      }
      std::this_thread::sleep_for(5ms);
    }
    req.cancel.cancel();
  });
  auto out = run(pool, req);
  canceller.join();
  EXPECT_EQ(out.status, Status::cancelled) << out.error;
  EXPECT_EQ(out.destroyed, "cancelled");
}

TEST(SandboxCapabilities, ActivatingANewRevisionDestroysTheOldSandboxAtOnce) {  // S3
  std::vector<Destruction> observed;  // outlives the pool: its destructor reports "shutdown" here too
  Pool pool;
  pool.on_destruction([&](const Destruction& d) { observed.push_back(d); });
  ASSERT_EQ(run(pool, request("sha256:v1", "() => 1", nullptr, "counter")).status, Status::ok);
  ASSERT_EQ(run(pool, request("sha256:v2", "() => 2", nullptr, "counter")).status, Status::ok);
  ASSERT_EQ(run(pool, request("sha256:other", "() => 3", nullptr, "other")).status, Status::ok);
  int v1_pid = 0;
  for (const auto& s : pool.sandboxes())
    if (s.revision == "sha256:v1") v1_pid = s.pid;
  ASSERT_GT(v1_pid, 0);

  pool.retire_superseded("counter", "sha256:v2");
  auto live = pool.live();
  EXPECT_EQ(live, (std::vector<std::string>{"sha256:other", "sha256:v2"}));
  ASSERT_EQ(observed.size(), 1u);
  EXPECT_EQ(observed[0].revision, "sha256:v1");
  EXPECT_EQ(observed[0].reason, "superseded");
  EXPECT_EQ(observed[0].name, "counter");
  EXPECT_EQ(observed[0].pid, v1_pid);
}

TEST(SandboxProtocol, CapabilityFramesAreExact) {
  auto ok = protocol::parse_call_reply(R"({"type":"cap","id":3,"req":1,"op":"storage.list","args":{"prefix":""}})", 3);
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->kind, protocol::Frame::Kind::cap);
  EXPECT_EQ(ok->op, CapabilityOp::storage_list);
  for (const char* bad : {
           R"({"type":"cap","id":3,"req":1,"op":"storage.drop","args":{}})",
           R"({"type":"cap","id":3,"req":1,"op":"fetch","args":[]})",
           R"({"type":"cap","id":3,"req":-1,"op":"fetch","args":{}})",
           R"({"type":"cap","id":"4","req":1,"op":"fetch","args":{}})",
           R"({"type":"cap","id":3,"op":"fetch","args":{}})",
           R"({"type":"cap","id":3,"req":1,"op":"fetch","args":{"n":18446744073709551615}})",  // not canonicalizable
           R"({"type":"cap","id":3,"req":1,"op":"fetch","args":{"a":1,"a":2}})",               // duplicate name
           R"({"type":"abort","id":3,"req":1,"op":"fetch"})",
           R"({"type":"result","id":3,"value":18446744073709551615})",
           R"({"type":"result","id":3,"value":1e400})",
       }) {
    EXPECT_FALSE(protocol::parse_call_reply(bad, 3).has_value()) << bad;
  }
  // A cap or abort frame may name another call: the sandbox decides (a stale
  // context is refused, an id it never ran is a boundary failure).
  auto other = protocol::parse_call_reply(R"({"type":"cap","id":4,"req":1,"op":"fetch","args":{}})", 3);
  ASSERT_TRUE(other.has_value());
  EXPECT_EQ(other->call, 4u);
  auto abort = protocol::parse_call_reply(R"({"type":"abort","id":3,"req":2})", 3);
  ASSERT_TRUE(abort.has_value());
  EXPECT_EQ(abort->kind, protocol::Frame::Kind::abort);
  EXPECT_EQ(abort->req, 2u);
  EXPECT_EQ(protocol::encode_cap_reply(2, CapabilityReply::failure("denied", "no"), 1024),
            "{\"code\":\"denied\",\"message\":\"no\",\"req\":2,\"type\":\"cap_error\"}\n");
}

}  // namespace
}  // namespace taskyon::sandbox
