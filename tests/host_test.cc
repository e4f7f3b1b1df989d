// The long-lived host core (taskyon/host) and the transport-free MCP
// connection (taskyon/mcp/server.h) in one process, on a real store and real
// node sandboxes (DESIGN §8: H3 sessions, H5 cancellation, H6 activations,
// clean shutdown).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "taskyon/host/host.h"
#include "taskyon/mcp/server.h"
#include "taskyon/registry/schema.h"
#include "taskyon/store/sandbox_log.h"
#include "test_util.h"

namespace taskyon::testing {
namespace {

using namespace std::chrono_literals;
using json::Value;

const Value kCounter = {
    {"name", "counter"},
    {"description", "counts in memory"},
    {"parameters", {{"type", "object"}, {"properties", {{"step", {{"type", "integer"}}}}}, {"additionalProperties", false}}},
    {"execution", "sandboxed-code"},
    {"runtime", "javascript"},
    {"code", "({step = 1}) => { globalThis.n = (globalThis.n ?? 0) + step; return {count: globalThis.n}; }"}};

std::string install(store::Store& st, const Value& definition, store::Activate activate = store::Activate::if_unbound) {
  auto m = registry::parse_manifest(definition);
  EXPECT_TRUE(m.has_value()) << (m ? "" : m.error().describe());
  auto r = st.install(*m, activate);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().describe());
  return r ? r->id : std::string();
}

class HostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = (dir_ / "taskyon.db").string();
    auto st = store::Store::open(db_);
    ASSERT_TRUE(st.has_value());
    install(*st, kCounter);
    install(*st, js_tool("stuck", "async () => { console.log('stuck'); await new Promise(() => {}); }"));
    upper1_ = install(*st, js_tool("upper", "({input}) => input.toUpperCase()"));
    upper2_ = install(*st, js_tool("upper", "({input}) => input.toUpperCase() + '!'"));
    host::Options o;
    o.db_path = db_;
    o.activation_poll = 0ms;  // the tests call check_activations()/list_tools() themselves
    auto h = host::Host::open(std::move(o));
    ASSERT_TRUE(h.has_value()) << h.error().describe();
    host_ = std::move(*h);
  }

  int count(const host::SessionId& s) {
    host::CallRequest r;
    r.tool = "counter";
    auto out = host_->call(s, r);
    EXPECT_TRUE(out.has_value()) << (out ? "" : out.error().describe());
    if (!out || !out->ok()) return -1;
    return out->outcome.value["count"].get<int>();
  }

  TempDir dir_;
  std::string db_;
  std::string upper1_, upper2_;
  std::unique_ptr<host::Host> host_;
};

TEST_F(HostTest, SessionsInOneProcessKeepTheirOwnState) {
  auto a = host_->open_session("a");
  auto b = host_->open_session("b");
  EXPECT_NE(a, b);
  EXPECT_EQ(count(a), 1);
  EXPECT_EQ(count(a), 2);
  EXPECT_EQ(count(b), 1) << "H3";
  host_->close_session(a);
  auto reopened = host_->open_session("a again");
  EXPECT_EQ(count(reopened), 1);
  EXPECT_EQ(count(b), 2);
  host::CallRequest r;
  r.tool = "counter";
  auto closed = host_->call(a, r);
  ASSERT_FALSE(closed.has_value());
  EXPECT_EQ(closed.error().code, Errc::bad_usage);
}

// Descriptors this process holds on `path` (the store file), from /proc/self/fd.
int open_descriptors(const std::string& path) {
  int n = 0;
  std::error_code ec;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/self/fd", ec))
    if (std::filesystem::read_symlink(fd.path(), ec) == std::filesystem::path(path)) ++n;
  return n;
}

// What a call would otherwise do the first time is done as the host opens
// (issue 19): the active tools' parameter schemas are compiled, and calls on
// threads that come and go (tycli mcp runs each on its own) share the
// connection the host opened instead of each opening one.
TEST_F(HostTest, OpeningWarmsTheCallPathAndCallsOnNewThreadsOpenNoConnection) {
  registry::clear_schema_cache();
  host::Options o;
  o.db_path = db_;
  o.activation_poll = 0ms;
  auto second = host::Host::open(std::move(o));
  ASSERT_TRUE(second.has_value()) << second.error().describe();
  EXPECT_EQ(registry::schema_cache_size(), 3u);  // counter, stuck, upper: compiled before any call
  auto s = (*second)->open_session("threads");
  const int before = open_descriptors(db_);
  for (int i = 0; i < 3; ++i) {
    std::thread([&] {
      host::CallRequest r;
      r.tool = "upper";
      r.arguments = {{"input", "abc"}};
      auto out = (*second)->call(s, r);
      ASSERT_TRUE(out.has_value()) << out.error().describe();
      EXPECT_EQ(out->outcome.value, "ABC");
    }).join();
    EXPECT_EQ(open_descriptors(db_), before) << "call " << i;
  }
}

TEST_F(HostTest, CallsAreStoredLikeTyCliCall) {
  auto s = host_->open_session("t");
  host::CallRequest r;
  r.tool = "upper";
  r.arguments = {{"input", "abc"}};
  auto out = host_->call(s, r);
  ASSERT_TRUE(out.has_value()) << out.error().describe();
  EXPECT_EQ(out->outcome.value, "ABC");
  EXPECT_EQ(out->tool.revision, upper1_);
  auto st = store::Store::open(db_);
  auto stored = st->task(out->call.id);
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->state, tasks::State::completed);
  r.arguments = {{"input", 5}};
  auto bad = host_->call(s, r);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code, Errc::invalid_arguments);
  r.tool = "nope";
  auto unknown = host_->call(s, r);
  ASSERT_FALSE(unknown.has_value());
  EXPECT_EQ(unknown.error().code, Errc::not_found);
}

TEST_F(HostTest, ActivationChangesReachWatchersAndListButNotPinnedCalls) {
  std::atomic<int> changes{0};
  auto sub = host_->on_tools_changed([&] { ++changes; });
  auto before = host_->list_tools();
  ASSERT_TRUE(before.has_value());
  EXPECT_FALSE(host_->check_activations());
  // Another process (a second connection) activates v2: seen on the next check.
  {
    auto other = store::Store::open(db_);
    ASSERT_TRUE(other->activate("upper", upper2_).has_value());
  }
  EXPECT_TRUE(host_->check_activations());
  EXPECT_EQ(changes.load(), 1);
  auto after = host_->list_tools();
  ASSERT_TRUE(after.has_value());
  for (const auto& t : *after) {
    if (t.name == "upper") {
      EXPECT_EQ(t.revision, upper2_);
    }
  }
  auto s = host_->open_session("t");
  host::CallRequest r;
  r.tool = upper1_;
  r.arguments = {{"input", "x"}};
  auto pinned = host_->call(s, r);
  ASSERT_TRUE(pinned.has_value());
  EXPECT_EQ(pinned->outcome.value, "X") << "H6: a call pinned to v1 runs v1";
  ASSERT_TRUE(host_->activate("upper", upper1_).has_value());
  EXPECT_EQ(changes.load(), 2) << "an activation through the host notifies at once";
  sub.reset();
  ASSERT_TRUE(host_->activate("upper", upper2_).has_value());
  EXPECT_EQ(changes.load(), 2) << "a dropped subscription hears nothing";
}

TEST_F(HostTest, ShutdownCancelsRunningCallsAndLogsEverySandbox) {
  auto s = host_->open_session("t");
  count(s);
  std::optional<Result<host::CallResult>> stuck;
  std::mutex mu;
  std::condition_variable cv;
  bool logged = false;
  std::thread t([&] {
    host::CallRequest r;
    r.tool = "stuck";
    r.timeout = 60s;
    r.events.on_log = [&](const sandbox::LogEntry&) {
      std::lock_guard lock(mu);
      logged = true;
      cv.notify_all();
    };
    stuck = host_->call(s, r);
  });
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 20s, [&] { return logged; }));
  }
  host_->shutdown("shutdown");
  t.join();
  ASSERT_TRUE(stuck.has_value() && stuck->has_value());
  EXPECT_EQ((*stuck)->outcome.status, sandbox::Status::cancelled);
  EXPECT_EQ((*stuck)->call.state, tasks::State::cancelled);
  EXPECT_TRUE(host_->pool().sandboxes().empty());
  auto st = store::Store::open(db_);
  auto log = store::destructions(*st, 0);
  ASSERT_TRUE(log.has_value());
  std::vector<std::string> reasons;
  for (const auto& d : *log) reasons.push_back(d.tool + ":" + d.reason);
  std::sort(reasons.begin(), reasons.end());
  EXPECT_EQ(reasons, (std::vector<std::string>{"counter:shutdown", "stuck:shutdown"}));  // as tycli call logs a signal
  host::CallRequest r;
  r.tool = "counter";
  EXPECT_FALSE(host_->call(s, r).has_value()) << "no call after shutdown";
}

// S2 serializes the calls of one session to one revision; a call queued behind
// a stuck one keeps its own timeout and cancellation (it does not wait for the
// call ahead), and neither touches the sandbox the stuck call runs in.
TEST_F(HostTest, ACallQueuedBehindAStuckCallOfItsSessionKeepsItsTimeoutAndCancellation) {
  auto s = host_->open_session("t");
  std::mutex mu;
  std::condition_variable cv;
  bool logged = false;
  std::atomic<bool> first_done{false};
  sandbox::CancelToken stop_first;
  std::thread t([&] {
    host::CallRequest r;
    r.tool = "stuck";
    r.timeout = 8s;  // bounds the test only when queued calls wait for it
    r.cancel = stop_first;
    r.events.on_log = [&](const sandbox::LogEntry&) {
      std::lock_guard lock(mu);
      logged = true;
      cv.notify_all();
    };
    (void)host_->call(s, r);
    first_done = true;
  });
  struct Join {
    sandbox::CancelToken token;
    std::thread& thread;
    ~Join() {
      token.cancel();
      thread.join();
    }
  } join{stop_first, t};
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 20s, [&] { return logged; }));
  }
  const auto live = host_->pool().sandboxes();
  ASSERT_EQ(live.size(), 1u);

  host::CallRequest queued;
  queued.tool = "stuck";
  queued.timeout = 300ms;
  auto timed_out = host_->call(s, queued);
  EXPECT_FALSE(first_done) << "the queued call returned only when the call ahead of it ended";
  ASSERT_TRUE(timed_out.has_value()) << timed_out.error().describe();
  EXPECT_EQ(timed_out->outcome.status, sandbox::Status::timeout) << timed_out->outcome.error;
  EXPECT_NE(timed_out->outcome.error.find("busy with an earlier call"), std::string::npos) << timed_out->outcome.error;

  host::CallRequest cancelled;
  cancelled.tool = "stuck";
  cancelled.timeout = 60s;
  std::thread canceller([c = cancelled.cancel] {
    std::this_thread::sleep_for(200ms);
    c.cancel();
  });
  auto out = host_->call(s, cancelled);
  canceller.join();
  EXPECT_FALSE(first_done) << "the cancelled call returned only when the call ahead of it ended";
  ASSERT_TRUE(out.has_value()) << out.error().describe();
  EXPECT_EQ(out->outcome.status, sandbox::Status::cancelled) << out->outcome.error;
  EXPECT_EQ(out->call.state, tasks::State::cancelled);
  ASSERT_EQ(host_->pool().sandboxes().size(), 1u);
  EXPECT_EQ(host_->pool().sandboxes()[0].pid, live[0].pid) << "the stuck call's sandbox was left alone";
}

// An MCP connection with an in-memory sink: the messages it emits, in order.
struct Recorder {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Value> messages;
  mcp::Sink sink() {
    return [this](mcp::Outgoing out) {
      std::lock_guard lock(mu);
      messages.push_back(std::move(out.message));
      cv.notify_all();
    };
  }
  // Waits for the response to `id`.
  Value response(int id) {
    std::unique_lock lock(mu);
    Value found;
    cv.wait_for(lock, 20s, [&] {
      for (const auto& m : messages)
        if (m.contains("id") && m["id"] == id && (m.contains("result") || m.contains("error"))) {
          found = m;
          return true;
        }
      return false;
    });
    return found;
  }
};

Value request(int id, std::string method, Value params = Value::object()) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", std::move(method)}, {"params", std::move(params)}};
}

TEST_F(HostTest, McpConnectionsInOneProcessAreSessions) {
  Recorder ra, rb;
  mcp::Connection a(*host_, ra.sink());
  mcp::Connection b(*host_, rb.sink());
  a.receive(request(1, "initialize", {{"protocolVersion", "2025-06-18"}, {"capabilities", Value::object()},
                                      {"clientInfo", {{"name", "t"}, {"version", "1"}}}})
                .dump());
  EXPECT_EQ(ra.response(1)["result"]["protocolVersion"], "2025-06-18") << "an older supported version is kept";
  b.receive(request(1, "initialize", {{"protocolVersion", "1999-01-01"}}).dump());
  EXPECT_EQ(rb.response(1)["result"]["protocolVersion"], mcp::kLatestProtocolVersion);
  auto call = [](int id, Value args = Value::object()) {
    return request(id, "tools/call", {{"name", "counter"}, {"arguments", std::move(args)}}).dump();
  };
  a.receive(call(2));
  EXPECT_EQ(ra.response(2)["result"]["structuredContent"]["count"], 1);
  a.receive(call(3));
  EXPECT_EQ(ra.response(3)["result"]["structuredContent"]["count"], 2);
  b.receive(call(2));
  EXPECT_EQ(rb.response(2)["result"]["structuredContent"]["count"], 1) << "H3";
  a.receive(call(4, {{"step", "x"}}));
  EXPECT_EQ(ra.response(4)["result"]["isError"], true);

  // JSON-RPC errors.
  a.receive(std::string_view("{not json"));
  a.receive(request(5, "no/such/method").dump());
  a.receive(Value{{"jsonrpc", "1.0"}, {"id", 6}, {"method", "ping"}}.dump());
  a.receive(request(7, "tools/call", {{"arguments", Value::object()}}).dump());
  a.receive(request(8, "ping").dump());
  EXPECT_EQ(ra.response(5)["error"]["code"], -32601);
  EXPECT_EQ(ra.response(6)["error"]["code"], -32600);
  EXPECT_EQ(ra.response(7)["error"]["code"], -32602);
  EXPECT_EQ(ra.response(8)["result"], Value::object());
  bool parse_error = false;
  {
    std::lock_guard lock(ra.mu);
    for (const auto& m : ra.messages) parse_error |= m.contains("error") && m["error"]["code"] == -32700;
  }
  EXPECT_TRUE(parse_error);

  // H5: notifications/cancelled destroys the running call's sandbox; no response follows.
  a.receive(request(9, "tools/call", {{"name", "stuck"}}).dump());
  for (int i = 0; i < 400 && host_->pool().sandboxes().size() < 3; ++i) std::this_thread::sleep_for(10ms);
  bool logged = false;
  for (int i = 0; i < 400 && !logged; ++i) {
    {
      std::lock_guard lock(ra.mu);
      for (const auto& m : ra.messages) logged |= m.value("method", "") == "notifications/message";
    }
    if (!logged) std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(logged) << "the stuck tool's log arrives as notifications/message";
  a.receive(Value{{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", 9}}}}.dump());
  for (int i = 0; i < 400 && a.running_calls() > 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(a.running_calls(), 0u);
  bool cancelled = false;
  for (const auto& d : host_->pool().destructions()) cancelled |= d.name == "stuck" && d.reason == "cancelled";
  EXPECT_TRUE(cancelled);

  // H6: an activation through the host sends list_changed to both.
  ASSERT_TRUE(host_->activate("upper", upper2_).has_value());
  a.close();
  b.close();
  auto has_list_changed = [](Recorder& r) {
    std::lock_guard lock(r.mu);
    bool found = false;
    for (const auto& m : r.messages) {
      found |= m.value("method", "") == "notifications/tools/list_changed";
      EXPECT_FALSE(m.contains("id") && m["id"] == 9) << "a cancelled request gets no response";
    }
    return found;
  };
  EXPECT_TRUE(has_list_changed(ra));
  EXPECT_TRUE(has_list_changed(rb));
}

// tools/call runs on the connection's workers (issue 19): a call that finds a
// worker waiting runs on it (a thread per call cost each a clone, a stack and
// five signal-mask calls). Each call here is sent once the worker waits again
// (one sent before that may start a second worker). A call made while another
// runs gets a worker of its own: it never waits behind the first.
TEST_F(HostTest, McpCallsReuseAWorkerAndNeverQueueBehindARunningCall) {
  Recorder r;
  std::mutex tids_mu;
  std::vector<pid_t> tids;  // the kernel thread each tools/call response was emitted from
  mcp::Connection c(*host_, [&](mcp::Outgoing out) {
    if (out.message.contains("result") && out.message["result"].contains("content")) {
      std::lock_guard lock(tids_mu);
      tids.push_back(::gettid());
    }
    r.sink()(std::move(out));
  });
  c.receive(request(1, "initialize", {{"protocolVersion", "2025-06-18"}}).dump());
  ASSERT_TRUE(r.response(1).contains("result"));
  for (int id = 2; id <= 21; ++id) {
    c.receive(request(id, "tools/call", {{"name", "counter"}, {"arguments", Value::object()}}).dump());
    ASSERT_EQ(r.response(id)["result"]["structuredContent"]["count"], id - 1);
    for (int i = 0; i < 2000 && c.idle_workers() == 0; ++i) std::this_thread::sleep_for(1ms);
    ASSERT_EQ(c.idle_workers(), 1u);
  }
  {
    std::lock_guard lock(tids_mu);
    ASSERT_EQ(tids.size(), 20u);
    std::set<pid_t> distinct(tids.begin(), tids.end());
    EXPECT_EQ(distinct.size(), 1u) << "20 calls one after another ran on " << distinct.size() << " threads";
  }
  c.receive(request(30, "tools/call", {{"name", "stuck"}, {"arguments", Value::object()}}).dump());
  c.receive(request(31, "tools/call", {{"name", "counter"}, {"arguments", Value::object()}}).dump());
  EXPECT_EQ(r.response(31)["result"]["structuredContent"]["count"], 21) << "the call waited behind the stuck one";
  EXPECT_EQ(c.running_calls(), 1u);
  c.close();  // cancels the stuck call and waits for both workers
  EXPECT_EQ(c.running_calls(), 0u);
}

// MCP revisions differ in structured tool output: `outputSchema` (tools/list)
// and `structuredContent` (tools/call) exist from 2025-06-18 on. A client that
// negotiated an older revision gets neither, the result only as text content.
TEST_F(HostTest, AnOlderProtocolVersionGetsNoStructuredOutput) {
  const std::string server =
      std::string(TASKYON_SOURCE_DIR) + "/node_modules/@modelcontextprotocol/server-everything/dist/index.js";
  const Value output_schema = {{"type", "object"},
                               {"properties", {{"temperature", {{"type", "number"}}}}},
                               {"required", Value::array({"temperature"})}};
  {
    auto st = store::Store::open(db_);
    ASSERT_TRUE(st.has_value());
    auto m = registry::parse_manifest(
        {{"name", "weather"},
         {"description", "structured"},
         {"parameters", {{"type", "object"}, {"properties", {{"location", {{"type", "string"}}}}}}},
         {"execution", "external-service"},
         {"service",
          {{"mcp",
            {{"command", Value::array({"node", server, "stdio"})},
             {"tool", "get-structured-content"},
             {"outputSchema", output_schema}}}}}});
    ASSERT_TRUE(m.has_value()) << m.error().describe();
    ASSERT_TRUE(st->install(*m, store::Activate::if_unbound, store::Trust{"tester", "test"}).has_value());
  }
  Recorder old_r, new_r;
  mcp::Connection old_c(*host_, old_r.sink());
  mcp::Connection new_c(*host_, new_r.sink());
  old_c.receive(request(1, "initialize", {{"protocolVersion", "2025-03-26"}}).dump());
  new_c.receive(request(1, "initialize", {{"protocolVersion", "2025-06-18"}}).dump());
  ASSERT_EQ(old_r.response(1)["result"]["protocolVersion"], "2025-03-26");
  ASSERT_EQ(new_r.response(1)["result"]["protocolVersion"], "2025-06-18");

  auto weather = [](const Value& list) {
    for (const auto& t : list["result"]["tools"])
      if (t["name"] == "weather") return t;
    return Value();
  };
  old_c.receive(request(2, "tools/list").dump());
  new_c.receive(request(2, "tools/list").dump());
  const Value old_tool = weather(old_r.response(2)), new_tool = weather(new_r.response(2));
  ASSERT_TRUE(old_tool.is_object() && new_tool.is_object());
  EXPECT_FALSE(old_tool.contains("outputSchema")) << old_tool.dump();
  EXPECT_EQ(new_tool["outputSchema"], output_schema);

  auto call = [](int id, const std::string& name, Value args) {
    return request(id, "tools/call", {{"name", name}, {"arguments", std::move(args)}}).dump();
  };
  old_c.receive(call(3, "counter", Value::object()));
  new_c.receive(call(3, "counter", Value::object()));
  const Value old_count = old_r.response(3)["result"], new_count = new_r.response(3)["result"];
  EXPECT_FALSE(old_count.contains("structuredContent")) << old_count.dump();
  ASSERT_EQ(old_count["content"].size(), 1u) << old_count.dump();
  EXPECT_EQ(json::parse(old_count["content"][0]["text"].get<std::string>()).value(), (Value{{"count", 1}}))
      << "the result is still there, as text";
  EXPECT_EQ(old_count["isError"], false);
  EXPECT_EQ(new_count["structuredContent"], (Value{{"count", 1}}));

  old_c.receive(call(4, "weather", {{"location", "Chicago"}}));
  new_c.receive(call(4, "weather", {{"location", "Chicago"}}));
  const Value old_weather = old_r.response(4)["result"], new_weather = new_r.response(4)["result"];
  EXPECT_EQ(old_weather["isError"], false) << old_weather.dump();
  EXPECT_FALSE(old_weather.contains("structuredContent")) << old_weather.dump();
  bool text = false;
  for (const auto& c : old_weather["content"]) text |= c["type"] == "text";
  EXPECT_TRUE(text) << old_weather.dump();
  EXPECT_EQ(new_weather["isError"], false) << new_weather.dump();
  EXPECT_EQ(new_weather["structuredContent"]["temperature"], 36) << new_weather.dump();
  old_c.close();
  new_c.close();
}

// JSON-RPC batches exist in MCP 2025-03-26 only (added there, removed in
// 2025-06-18): a client at that revision gets each message answered; at any
// other, or before initialize, the batch gets one -32600 and none of it runs.
TEST_F(HostTest, BatchesAreAnsweredOnlyAtTheRevisionThatHasThem) {
  const Value batch = Value::array({request(2, "ping"), request(3, "tools/call", {{"name", "counter"}})});
  auto answered = [](Recorder& r, int id) {
    std::lock_guard lock(r.mu);
    for (const auto& m : r.messages)
      if (m.contains("id") && m["id"] == id) return true;
    return false;
  };
  auto refusals = [](Recorder& r) {
    std::lock_guard lock(r.mu);
    int n = 0;
    for (const auto& m : r.messages)
      n += m.contains("error") && m["error"]["code"] == -32600 && m["id"].is_null() &&
                   m["error"]["message"].get<std::string>().find("only 2025-03-26") != std::string::npos
               ? 1
               : 0;
    return n;
  };

  Recorder before;
  mcp::Connection uninitialized(*host_, before.sink());
  uninitialized.receive(batch.dump());
  EXPECT_EQ(refusals(before), 1) << "before initialize the version is the latest, which has no batches";

  for (const std::string version : {"2025-11-25", "2025-06-18", "2024-11-05"}) {
    Recorder r;
    mcp::Connection c(*host_, r.sink());
    c.receive(request(1, "initialize", {{"protocolVersion", version}}).dump());
    ASSERT_EQ(r.response(1)["result"]["protocolVersion"], version);
    c.receive(batch.dump());
    c.receive(request(4, "ping").dump());
    EXPECT_EQ(r.response(4)["result"], Value::object()) << version << ": the connection goes on";
    c.close();
    EXPECT_EQ(refusals(r), 1) << version;
    EXPECT_FALSE(answered(r, 2) || answered(r, 3)) << version << ": nothing of a refused batch runs";
  }

  Recorder r;
  mcp::Connection c(*host_, r.sink());
  c.receive(request(1, "initialize", {{"protocolVersion", "2025-03-26"}}).dump());
  ASSERT_EQ(r.response(1)["result"]["protocolVersion"], "2025-03-26");
  c.receive(batch.dump());
  EXPECT_EQ(r.response(2)["result"], Value::object());
  EXPECT_EQ(json::parse(r.response(3)["result"]["content"][0]["text"].get<std::string>()).value(),
            (Value{{"count", 1}}));
  c.receive(Value::array({request(5, "initialize", {{"protocolVersion", "2025-03-26"}})}).dump());
  EXPECT_EQ(r.response(5)["error"]["code"], -32600) << "initialize is never part of a batch";
  c.close();
  EXPECT_EQ(refusals(r), 0);
}

// An imported server's content blocks reach a client as its revision knows
// them: audio (2025-03-26 on) and resource_link (2025-06-18 on) become text
// blocks that name them for an older client, never a type it cannot parse.
TEST_F(HostTest, ContentBlocksAClientRevisionLacksBecomeText) {
  const std::string server = std::string(TASKYON_SOURCE_DIR) + "/tests/mcp/content_server.mjs";
  if (!std::filesystem::exists(std::string(TASKYON_SOURCE_DIR) + "/node_modules/@modelcontextprotocol/sdk/package.json"))
    GTEST_SKIP() << "node_modules/@modelcontextprotocol/sdk is missing (scripts/setup.sh)";
  {
    auto st = store::Store::open(db_);
    ASSERT_TRUE(st.has_value());
    auto m = registry::parse_manifest({{"name", "blocks"},
                                       {"description", "one block of each type"},
                                       {"parameters", {{"type", "object"}}},
                                       {"execution", "external-service"},
                                       {"service", {{"mcp", {{"command", Value::array({"node", server})}, {"tool", "blocks"}}}}}});
    ASSERT_TRUE(m.has_value()) << m.error().describe();
    ASSERT_TRUE(st->install(*m, store::Activate::if_unbound, store::Trust{"tester", "test"}).has_value());
  }
  auto types_at = [&](const std::string& version) {
    Recorder r;
    mcp::Connection c(*host_, r.sink());
    c.receive(request(1, "initialize", {{"protocolVersion", version}}).dump());
    EXPECT_EQ(r.response(1)["result"]["protocolVersion"], version);
    c.receive(request(2, "tools/call", {{"name", "blocks"}, {"arguments", Value::object()}}).dump());
    const Value result = r.response(2)["result"];
    c.close();
    EXPECT_EQ(result["isError"], false) << version << " " << result.dump();
    std::vector<std::string> types;
    for (const auto& block : result["content"]) types.push_back(block["type"].get<std::string>());
    return std::pair{types, result};
  };
  const auto [latest, latest_result] = types_at("2025-06-18");
  EXPECT_EQ(latest, (std::vector<std::string>{"text", "audio", "resource_link"})) << latest_result.dump();
  EXPECT_EQ(latest_result["content"][1]["data"], "UklGRiQAAABXQVZF") << "passed on as the server gave it";

  const auto [march, march_result] = types_at("2025-03-26");
  EXPECT_EQ(march, (std::vector<std::string>{"text", "audio", "text"})) << march_result.dump();
  EXPECT_EQ(march_result["content"][2]["text"],
            "Resource link: report <file:///data/report.csv> (text/csv): the quarterly numbers");

  const auto [november, november_result] = types_at("2024-11-05");
  EXPECT_EQ(november, (std::vector<std::string>{"text", "text", "text"})) << november_result.dump();
  const std::string audio = november_result["content"][1]["text"].get<std::string>();
  EXPECT_NE(audio.find("audio content (audio/wav, 16 base64 characters) left out"), std::string::npos) << audio;
  EXPECT_EQ(audio.find("UklGR"), std::string::npos) << "no base64 data in the text";
}

}  // namespace
}  // namespace taskyon::testing
