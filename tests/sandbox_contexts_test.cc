// Per-call capability contexts (S2, issue 12 item 1), one deadline per call
// and a tool's AbortSignal (item 3), nothing vanishes (item 6), on Node AND
// Deno: tool code in real sandboxes, the host's decisions
// (invoke/capabilities.h) on a real SQLite store and audit log, and the real
// loopback HTTPS server admitted by the test-only allow rule.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>

#include "taskyon/invoke/invoke.h"
#include "taskyon/loopback/loopback.h"
#include "taskyon/registry/manifest.h"
#include "taskyon/store/audit.h"
#include "taskyon/store/grants.h"
#include "taskyon/store/kv.h"
#include "taskyon/tasks/compiler.h"
#include "test_util.h"

namespace taskyon {
namespace {

using namespace std::chrono_literals;
using json::Value;
using Clock = std::chrono::steady_clock;

class Contexts : public ::testing::TestWithParam<sandbox::JsRuntime> {
 protected:
  static void SetUpTestSuite() {
    server_dir_ = new testing::TempDir();
    loopback::ServerOptions server;
    server.dir = server_dir_->path();
    auto started = loopback::HttpsServer::start(server);
    ASSERT_TRUE(started) << started.error().describe();
    server_ = started->release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    delete server_dir_;
  }

  void SetUp() override {
    ASSERT_NE(server_, nullptr);
    auto s = store::Store::open((dir.path() / "taskyon.db").string());
    ASSERT_TRUE(s) << s.error().describe();
    st.emplace(std::move(*s));
    sandbox::RuntimeConfig config;
    config.runtime = GetParam();
    pool.emplace(config);
    options.capabilities.network.allow = {*capability::Cidr::parse("127.0.0.1/32")};
    options.capabilities.network.ca_file = server_->ca_file().string();
  }

  bool deno() const { return GetParam() == sandbox::JsRuntime::deno; }

  std::string install(const std::string& name, const std::string& code) {
    auto r = st->install(*registry::parse_manifest(testing::js_tool(name, code)), store::Activate::always);
    EXPECT_TRUE(r) << r.error().describe();
    return r ? r->id : std::string();
  }

  void grant_all(const std::string& revision) {
    ASSERT_TRUE(store::grant_fetch(*st, revision, server_->origin(), capability::Access::read, {}, "test"));
    ASSERT_TRUE(store::grant_storage(*st, revision, "test"));
  }

  invoke::Invocation call(const std::string& tool, const std::string& input) {
    auto compiled = tasks::compile(tasks::function_call(tool, {{"input", input}}), {{}, st->resolver()});
    EXPECT_TRUE(compiled) << compiled.error().describe();
    auto inv = invoke::run_call(*st, *pool, compiled->task, options);
    EXPECT_TRUE(inv) << inv.error().describe();
    if (!inv) return {};
    return std::move(*inv);
  }

  std::vector<store::AuditEntry> audit() {
    store::AuditQuery all;
    all.limit = 0;
    auto rows = store::query_audit(*st, all);
    EXPECT_TRUE(rows);
    return rows ? *rows : std::vector<store::AuditEntry>{};
  }

  // How tool code writes raw bytes to fd 1 (the protocol channel), bypassing
  // the harness: what a hostile tool does to forge a frame.
  std::string raw_write() const {
    return deno() ? "(await import('node:fs')).writeSync(1, new TextEncoder().encode(line))"
                  : "require('fs').writeSync(1, line)";
  }

  static testing::TempDir* server_dir_;
  static loopback::HttpsServer* server_;
  testing::TempDir dir;
  std::optional<store::Store> st;
  std::optional<sandbox::Pool> pool;
  invoke::Options options;
};

testing::TempDir* Contexts::server_dir_ = nullptr;
loopback::HttpsServer* Contexts::server_ = nullptr;

// Call 1 saves its context (and the global fetch of its time) and starts a
// timer; during call 2 the saved context's fetch, createSubtasksResult and
// storage are refused inside the sandbox, and nothing is done or audited under
// call 2's task. The saved context's signal tells it its call ended.
TEST_P(Contexts, ASavedContextOrTimerOfAnEndedCallIsRefused) {
  const std::string url = server_->url("/ok");
  const std::string code = R"(async ({input}, context) => {
    const url = ')" + url + R"(';
    const tryAll = async (ctx, f) => {
      const out = [];
      for (const op of [() => ctx.fetch(url), () => f(url), () => ctx.createSubtasksResult([{ role: 'assistant', content: 'planted' }]),
                        () => ctx.storage.set('stale', 1), () => ctx.resolveInvocation('x')]) {
        try { await op(); out.push('ok'); } catch (e) { out.push(String(e.code)); }
      }
      return out;
    };
    if (input === 'save') {
      globalThis.saved = context;
      globalThis.savedFetch = fetch;
      globalThis.timerResult = null;
      setTimeout(async () => { globalThis.timerResult = await tryAll(context, globalThis.savedFetch); }, 300);
      return 'saved';
    }
    await new Promise((r) => setTimeout(r, 900));
    const direct = await tryAll(globalThis.saved, globalThis.savedFetch);
    const own = await context.storage.get('stale');
    return { timer: globalThis.timerResult, direct, endedSignal: globalThis.saved.signal.aborted,
             ownSignal: context.signal.aborted, fresh: context !== globalThis.saved, own };
  })";
  const auto rev = install("saver", code);
  grant_all(rev);
  auto first = call("saver", "save");
  ASSERT_TRUE(first.ok()) << first.outcome.error;
  const auto before = audit().size();
  auto second = call("saver", "use");
  ASSERT_TRUE(second.ok()) << second.outcome.error;
  const Value& v = second.outcome.value;
  const Value refused = Value::array({"denied", "denied", "denied", "denied", "denied"});
  EXPECT_EQ(v["timer"], refused) << v.dump();
  EXPECT_EQ(v["direct"], refused) << v.dump();
  EXPECT_EQ(v["endedSignal"], true);
  EXPECT_EQ(v["ownSignal"], false);
  EXPECT_EQ(v["fresh"], true);
  EXPECT_TRUE(v["own"].is_null()) << "the stale storage.set took effect: " << v.dump();
  EXPECT_TRUE(second.subtasks.empty());
  const auto rows = audit();
  // Refused inside the sandbox: no frame, so the only row of call 2 is its own storage.get.
  for (std::size_t i = before; i < rows.size(); ++i) {
    EXPECT_TRUE(rows[i].task == second.call.id && rows[i].capability == "storage.get")
        << "a stale request reached the host: " << rows[i].capability << " " << rows[i].reason;
  }
}

// The host refuses a forged cap frame naming call 1 during call 2 (the
// harness is not the boundary): nothing is done, and the refusal is audited
// as a deny under call 1's task, never call 2's.
TEST_P(Contexts, AForgedFrameOfAnEndedCallIsRefusedByTheHostAndAuditedUnderThatCall) {
  const std::string code = R"(async ({input}, context) => {
    if (input === 'save') { globalThis.saved = context; return 'saved'; }
    let message = '';
    try { await globalThis.saved.storage.get('k'); } catch (e) { message = e.message; }
    const ended = Number(/call (\d+)/.exec(message)[1]);
    const line = JSON.stringify({ type: 'cap', id: ended, req: 1, op: 'storage.set', args: { key: 'forged', value: 1 } }) + '\n';
    )" + raw_write() + R"(;
    await new Promise((r) => setTimeout(r, 400));
    return { ended };
  })";
  const auto rev = install("forger", code);
  grant_all(rev);
  auto first = call("forger", "save");
  ASSERT_TRUE(first.ok()) << first.outcome.error;
  auto second = call("forger", "forge");
  ASSERT_TRUE(second.ok()) << second.outcome.error;
  EXPECT_FALSE(second.outcome.destroyed.has_value()) << *second.outcome.destroyed;
  auto stored = store::storage_get(*st, store::Caller{rev, second.call.id}, "forged");
  ASSERT_TRUE(stored && *stored);
  EXPECT_FALSE(stored->value().has_value()) << "the forged request was acted on";
  bool found = false;
  for (const auto& row : audit()) {
    if (row.capability != "storage.set") continue;
    EXPECT_NE(row.task, second.call.id) << "attributed to the current call";
    EXPECT_EQ(row.task, first.call.id);
    EXPECT_EQ(row.verdict, capability::Verdict::deny);
    EXPECT_EQ(row.target, "forged");
    found = true;
  }
  EXPECT_TRUE(found) << "the refused stale request was not audited";
}

// One deadline bounds everything the host does for a call: 50 queued slow
// requests end with the call's 1500 ms timeout, not one after another.
TEST_P(Contexts, FiftyQueuedSlowRequestsEndWithTheCallsTimeout) {
  const std::string url = server_->url("/slow?ms=4000");
  const auto rev = install("queue", "async () => { const all = []; for (let i = 0; i < 50; i++) all.push(fetch('" +
                                        url + "').catch((e) => e.code)); return await Promise.all(all); }");
  grant_all(rev);
  options.timeout = 1500ms;
  const auto started = Clock::now();
  auto inv = call("queue", "");
  const auto took = Clock::now() - started;
  EXPECT_EQ(inv.outcome.status, sandbox::Status::timeout) << inv.outcome.error;
  EXPECT_LT(took, 1500ms + 1000ms) << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
}

// A tool's AbortSignal aborts its in-flight host request at once: aborted 300
// ms into a stalled request, the fetch rejects and the next request (which
// waits for the host to be free; storage, so no TLS handshake is measured) is
// answered within 100 ms of the abort; a fetch after it still works.
TEST_P(Contexts, AToolsAbortSignalFreesAStalledRequestAtOnce) {
  const std::string slow = server_->url("/slow?ms=8000");
  const std::string ok = server_->url("/ok");
  const auto rev = install("aborter", R"(async (args, context) => {
    const controller = new AbortController();
    const pending = fetch(')" + slow + R"(', { signal: controller.signal }).then(() => 'answered', (e) => e.name);
    await new Promise((r) => setTimeout(r, 300));
    const t0 = performance.now();
    controller.abort();
    const first = await pending;
    await context.storage.get('k');
    const ms = performance.now() - t0;
    const r = await fetch(')" + ok + R"(');
    return { first, status: r.status, ms };
  })");
  grant_all(rev);
  auto inv = call("aborter", "");
  ASSERT_TRUE(inv.ok()) << inv.outcome.error;
  const Value& v = inv.outcome.value;
  EXPECT_EQ(v["first"], "AbortError") << v.dump();
  EXPECT_EQ(v["status"], 200) << v.dump();
  EXPECT_LT(v["ms"].get<double>(), 100.0) << v.dump();
  bool cancelled = false;
  for (const auto& row : audit())
    if (row.target == server_->origin() && row.reason.find("cancelled") != std::string::npos) cancelled = true;
  EXPECT_TRUE(cancelled) << "the aborted request is not audited as cancelled";
}

// Nothing vanishes: a result frame with 2^64-1 (forged on fd 1) is a boundary
// failure, the sandbox is destroyed, and the call is stored with a result
// saying the error; the audit rows of the call name a task that exists.
TEST_P(Contexts, AnUncanonicalizableResultIsStoredAsTheCallsError) {
  // The forged frame needs the call id: a fresh pool numbers its calls 1, 2, …
  const auto rev2 = install("huge2", R"(async (args, context) => {
    await context.storage.get('k');
    const line = '{"type":"result","id":1,"value":18446744073709551615}\n';
    )" + raw_write() + R"(;
    await new Promise(() => {});
  })");
  grant_all(rev2);
  auto inv = call("huge2", "");
  EXPECT_EQ(inv.outcome.status, sandbox::Status::protocol_error) << inv.outcome.error;
  ASSERT_TRUE(inv.outcome.destroyed.has_value());
  EXPECT_EQ(inv.result.state, tasks::State::error);
  ASSERT_TRUE(inv.result.content["toolResult"].contains("error")) << inv.result.content.dump();
  EXPECT_TRUE(st->task(inv.call.id).has_value()) << "the call was not stored";
  EXPECT_TRUE(st->task(inv.result.id).has_value()) << "the result was not stored";
  for (const auto& row : audit()) {
    ASSERT_TRUE(row.task.has_value());
    EXPECT_TRUE(st->task(*row.task).has_value()) << "an audit row names a task that exists nowhere";
  }
  EXPECT_TRUE(pool->live().empty());
}

// A result larger than one frame is refused AND its sandbox destroyed; the
// call is stored with the error.
TEST_P(Contexts, AResultLargerThanAFrameDestroysTheSandbox) {
  install("big", "async () => 'x'.repeat(9 << 20)");
  auto inv = call("big", "");
  EXPECT_EQ(inv.outcome.status, sandbox::Status::protocol_error) << inv.outcome.error;
  ASSERT_TRUE(inv.outcome.destroyed.has_value());
  EXPECT_EQ(*inv.outcome.destroyed, "protocol_error");
  EXPECT_EQ(inv.result.state, tasks::State::error);
  EXPECT_TRUE(st->task(inv.result.id).has_value());
  EXPECT_TRUE(pool->live().empty());
}

INSTANTIATE_TEST_SUITE_P(Runtimes, Contexts, ::testing::Values(sandbox::JsRuntime::node, sandbox::JsRuntime::deno),
                         [](const auto& info) { return info.param == sandbox::JsRuntime::node ? "Node" : "Deno"; });

}  // namespace
}  // namespace taskyon
