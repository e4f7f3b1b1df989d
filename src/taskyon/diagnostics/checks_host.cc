// H3-H6 (DESIGN §8, the long-lived host) against the real host core
// (taskyon/host) and the real MCP protocol handler (taskyon/mcp/server.h) in
// this process, on the check's own store and real node sandboxes. The stdio
// framing of `tycli mcp` around them is proven by tests/mcp_stdio_test.cc with
// the official SDK client; H1/H2 (HTTP) belong to `tycli serve`.
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "taskyon/diagnostics/groups.h"
#include "taskyon/host/host.h"
#include "taskyon/mcp/server.h"

namespace taskyon::diagnostics {
namespace {

using json::Value;
using namespace std::chrono_literals;

std::unique_ptr<host::Host> open_host(Env& env) {
  env.node();  // SKIPs without Node
  host::Options o;
  o.db_path = (env.dir() / "taskyon.db").string();
  o.runtime = env.runtime_config();
  o.activation_poll = 0ms;
  return need(host::Host::open(std::move(o)), "open the host");
}


// An MCP client in this process: what the connection emits, in order.
class Client {
 public:
  explicit Client(host::Host& h)
      : connection_(h, [this](mcp::Outgoing out) {
          std::lock_guard lock(mu_);
          messages_.push_back(std::move(out.message));
          cv_.notify_all();
        }) {
    send(1, "initialize", {{"protocolVersion", mcp::kLatestProtocolVersion}, {"capabilities", Value::object()},
                           {"clientInfo", {{"name", "diagnostics"}, {"version", "1"}}}});
    expect(wait_response(1).contains("result"), "initialize failed");
  }

  void send(int id, const std::string& method, Value params = Value::object()) {
    connection_.receive_value({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}});
  }
  void notify(const std::string& method, Value params) {
    connection_.receive_value({{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}});
  }
  // The response to `id` (null after 20 s).
  Value wait_response(int id) {
    return wait_for([id](const Value& m) { return m.contains("id") && m["id"] == id; });
  }
  Value wait_for(const std::function<bool(const Value&)>& match, std::chrono::milliseconds bound = 20s) {
    std::unique_lock lock(mu_);
    Value found;
    cv_.wait_for(lock, bound, [&] {
      for (const auto& m : messages_)
        if (match(m)) {
          found = m;
          return true;
        }
      return false;
    });
    return found;
  }
  Value call(int id, const std::string& tool, Value args = Value::object()) {
    send(id, "tools/call", {{"name", tool}, {"arguments", std::move(args)}});
    return wait_response(id)["result"];
  }
  mcp::Connection& connection() { return connection_; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Value> messages_;
  mcp::Connection connection_;  // last: destroyed (closed) before the messages it writes to
};

Outcome sessions_keep_their_own_state(Env& env) {
  install_js(env, "counter", "() => (globalThis.n = (globalThis.n ?? 0) + 1)");
  auto h = open_host(env);
  Client a(*h), b(*h);
  auto count = [](const Value& result) { return result.value("structuredContent", Value())["result"]; };
  expect(count(a.call(2, "counter")) == 1 && count(a.call(3, "counter")) == 2, "session a did not count 1, 2");
  const Value in_b = count(b.call(2, "counter"));
  expect(in_b == 1, fmt::format("session b's first call saw {}: another session's state reached it", in_b.dump()));
  expect(count(a.call(4, "counter")) == 3, "session a lost its own count");
  return pass("two MCP sessions on one counter revision each counted from 1 in their own sandbox");
}

Outcome results_name_task_and_revisions(Env& env) {
  const std::string rev = install_js(env, "upper", "({input}) => input.toUpperCase()");
  auto h = open_host(env);
  Client c(*h);
  c.send(2, "tools/list");
  const Value list = c.wait_response(2)["result"]["tools"];
  expect(list.is_array() && list.size() == 1, "tools/list did not list the one tool");
  const Value& tool = list[0];
  expect(!tool.contains("code") && !tool.contains("execution") && !tool.contains("service"),
         "tools/list shows more than the reduced signature");
  expect(tool["inputSchema"] == js_tool("upper", "")["parameters"], "inputSchema is not the tool's parameters");
  expect(tool["_meta"]["taskyon/revision"] == rev, "tools/list does not name the revision a call pins");
  const Value result = c.call(3, "upper", {{"input", "ab"}});
  expect(result["isError"] == false && result["structuredContent"]["result"] == "AB", "the call failed");
  const Value& meta = result["_meta"];
  expect(meta["taskyon/revision"] == rev, "the result does not name the pinned revision");
  const std::string task = meta.value("taskyon/task", "");
  auto stored = need(env.store().task(task), "read the task the result names");
  expect(stored.tool_revision == rev, "the stored call is not pinned to the revision the result names");
  expect(meta["taskyon/resultTask"].is_string() && meta["taskyon/settingsRevision"].is_string(),
         "the result's _meta lacks the result task or the settings revision");
  return pass("tools/list gives name, description, inputSchema and revision only; a result names its stored task "
              "and pinned revisions");
}

Outcome cancellation_destroys_sandbox(Env& env) {
  install_js(env, "stuck", "async () => { console.log('stuck'); await new Promise(() => {}); }");
  auto h = open_host(env);
  Client c(*h);
  c.send(2, "tools/call", {{"name", "stuck"}, {"arguments", Value::object()}});
  const Value logged = c.wait_for([](const Value& m) { return m.value("method", "") == "notifications/message"; });
  expect(!logged.is_null(), "the stuck tool's log never arrived as notifications/message");
  expect(h->pool().sandboxes().size() == 1, "the stuck call has no live sandbox");
  const int pid = h->pool().sandboxes()[0].pid;
  c.notify("notifications/cancelled", {{"requestId", 2}, {"reason", "diagnostics"}});
  for (int i = 0; i < 500 && c.connection().running_calls() > 0; ++i) std::this_thread::sleep_for(10ms);
  expect(c.connection().running_calls() == 0, "the cancelled call is still running after 5 s");
  bool recorded = false;
  for (const auto& d : h->pool().destructions()) recorded |= d.pid == pid && d.reason == "cancelled";
  expect(recorded, "the sandbox of the cancelled call was not destroyed as \"cancelled\"");
  expect(h->pool().sandboxes().empty(), "a sandbox is still alive after the cancellation");
  const auto n = query_int(env.store(), "SELECT COUNT(*) FROM tasks WHERE kind = 'functionCall' AND state = 'Cancelled'");
  expect(n == 1, fmt::format("{} calls are stored as Cancelled, expected 1", n));
  return pass("notifications/cancelled destroyed the running call's sandbox and the call is stored as Cancelled");
}

Outcome activation_reaches_list_not_pinned_calls(Env& env) {
  const std::string v1 = install_js(env, "upper", "({input}) => input.toUpperCase()");
  const std::string v2 = install_js(env, "upper", "({input}) => input.toUpperCase() + '!'");
  auto h = open_host(env);
  Client c(*h);
  c.send(2, "tools/list");
  expect(c.wait_response(2)["result"]["tools"][0]["_meta"]["taskyon/revision"] == v1, "v1 is not listed");
  need(env.store().activate("upper", v2), "activate v2 from another connection");
  h->check_activations();
  const Value changed =
      c.wait_for([](const Value& m) { return m.value("method", "") == "notifications/tools/list_changed"; }, 5s);
  expect(!changed.is_null(), "no notifications/tools/list_changed after the activation");
  c.send(3, "tools/list");
  expect(c.wait_response(3)["result"]["tools"][0]["_meta"]["taskyon/revision"] == v2,
         "the next tools/list does not name v2");
  const Value pinned = c.call(4, v1, {{"input", "a"}});
  expect(pinned["structuredContent"]["result"] == "A" && pinned["_meta"]["taskyon/revision"] == v1,
         "a call pinned to v1 did not run v1");
  const Value by_name = c.call(5, "upper", {{"input", "a"}});
  expect(by_name["structuredContent"]["result"] == "A!", "a call by name did not run the active v2");
  return pass("an activation by another connection sent list_changed, reached the next tools/list, and a call "
              "pinned to v1 still ran v1");
}

}  // namespace

void add_host_checks(Registry& r) {
  add(r, {"H3", "mcp_sessions_keep_their_own_state",
          "two MCP sessions of one host never see each other's retained in-memory state",
          sessions_keep_their_own_state});
  add(r, {"H4", "mcp_results_name_task_and_revisions",
          "tools/list shows reduced signatures; every result names its stored task and pinned revisions",
          results_name_task_and_revisions});
  add(r, {"H5", "mcp_cancellation_destroys_sandbox",
          "notifications/cancelled destroys the running call's sandbox and stores the call as Cancelled",
          cancellation_destroys_sandbox});
  add(r, {"H6", "activation_reaches_list_not_pinned_calls",
          "an activation sends list_changed and reaches tools/list; a pinned call keeps its revision",
          activation_reaches_list_not_pinned_calls});
}

}  // namespace taskyon::diagnostics
