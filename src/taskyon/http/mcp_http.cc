#include "taskyon/http/mcp_http.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "taskyon/mcp/server.h"

namespace taskyon::http {

namespace {

using json::Value;

Response rpc_error(int status, int code, std::string_view message) {
  return Response::json(status, {{"jsonrpc", "2.0"}, {"id", nullptr}, {"error", {{"code", code}, {"message", message}}}});
}

bool is_response(const Value& m) {
  return m.is_object() && !m.contains("method") && m.contains("id") && (m.contains("result") || m.contains("error"));
}

// The requests of one POST and what the connection sent for them.
struct Exchange {
  std::vector<std::string> keys;           // request ids (dumped), in order
  bool sse = false;                        // the client accepts text/event-stream
  std::deque<Value> notes;                 // notifications of its calls not yet sent (sse only)
  std::map<std::string, Value> responses;  // by key
};

struct Session {
  std::string id;
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, std::shared_ptr<Exchange>> routes;  // request key -> the POST that waits for it
  std::set<std::string> cancelled;  // requests the client cancelled: no response will come
  bool closed = false;
  std::unique_ptr<mcp::Connection> connection;  // last: destroyed first

  // Under mu: every request of `x` answered (or cancelled), or the session over.
  bool ready(const Exchange& x) const {
    return closed || std::all_of(x.keys.begin(), x.keys.end(), [&](const std::string& k) {
             return x.responses.contains(k) || cancelled.contains(k);
           });
  }

  // Under mu: the exchange's responses in order (a timed-out request gets an
  // error, a cancelled one nothing); its routes removed.
  std::vector<Value> finish(Exchange& x) {
    std::vector<Value> out;
    for (const auto& k : x.keys) {
      if (auto it = x.responses.find(k); it != x.responses.end()) {
        out.push_back(std::move(it->second));
      } else if (!cancelled.contains(k)) {
        out.push_back({{"jsonrpc", "2.0"}, {"id", Value::parse(k)},
                       {"error", {{"code", -32603}, {"message", closed ? "the session ended" : "no response in time"}}}});
      }
      routes.erase(k);
      cancelled.erase(k);
    }
    x.responses.clear();
    return out;
  }

  void close() {
    if (connection) connection->close();
    std::lock_guard lock(mu);
    closed = true;
    cv.notify_all();
  }
};

std::string sse_event(const Value& message) {
  return "event: message\ndata: " + message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n\n";
}

// How long a POST of a client that accepts SSE waits for its responses
// before it streams anyway: a stream's heartbeats notice a client that left.
constexpr auto kPatience = std::chrono::milliseconds(1000);
// How often a waiting POST looks whether its client hung up.
constexpr auto kHeartbeat = std::chrono::milliseconds(200);

bool accepts_event_stream(const Request& r) {
  auto accept = r.header("Accept");
  return accept && accept->find("text/event-stream") != std::string::npos;
}

}  // namespace

struct McpEndpoint::Impl {
  host::Host& host;
  std::chrono::milliseconds wait;
  mutable std::mutex mu;
  std::map<std::string, std::shared_ptr<Session>> sessions;
  bool closing = false;

  Impl(host::Host& h, std::chrono::milliseconds w) : host(h), wait(w) {}

  Result<std::shared_ptr<Session>> open() {
    auto token = new_token();
    if (!token) return std::unexpected(token.error());
    auto s = std::make_shared<Session>();
    s->id = token->substr(0, 32);
    Session* raw = s.get();
    s->connection = std::make_unique<mcp::Connection>(
        host,
        [raw](mcp::Outgoing out) {  // serialized by the Connection
          const bool response = is_response(out.message);
          // A response belongs to its id; a notification to the call it reports on.
          const Value& about = response ? out.message["id"] : out.related;
          if (about.is_null()) return;  // list_changed: no GET stream to carry it (GET is 405)
          const std::string key = about.dump();
          std::lock_guard lock(raw->mu);
          auto it = raw->routes.find(key);
          if (it == raw->routes.end()) return;
          Exchange& x = *it->second;
          if (response) x.responses[key] = std::move(out.message);
          else if (x.sse) x.notes.push_back(std::move(out.message));
          else return;  // a JSON-only client: its notifications have no stream
          raw->cv.notify_all();
        },
        mcp::ServerInfo{}, "http");
    return s;
  }

  // The client of `x` is gone: its running calls are cancelled like a
  // notifications/cancelled would (H5), so their sandboxes are destroyed.
  static void abandon(Session& s, Exchange& x) {
    const auto pending = cancel_running(s, x, "the client disconnected");
    std::lock_guard lock(s.mu);
    for (const auto& k : pending) s.cancelled.insert(k);
    s.finish(x);
  }

  // Not under mu: cancels the calls of `x` still running, as a
  // notifications/cancelled with `reason` would; returns their keys. A POST
  // past its wait does this too, so no call runs on that nobody will read.
  static std::vector<std::string> cancel_running(Session& s, Exchange& x, std::string_view reason) {
    std::vector<std::string> pending;
    {
      std::lock_guard lock(s.mu);
      for (const auto& k : x.keys)
        if (!x.responses.contains(k) && !s.cancelled.contains(k)) pending.push_back(k);
    }
    for (const auto& k : pending)
      s.connection->receive_value({{"jsonrpc", "2.0"},
                                   {"method", "notifications/cancelled"},
                                   {"params", {{"requestId", Value::parse(k)}, {"reason", std::string(reason)}}}});
    return pending;
  }

  // The SSE body of a POST whose calls report while they run: their
  // notifications as they come, then the responses; a comment line every
  // kHeartbeat to find a client that went away (its calls are then cancelled).
  static void stream(const std::shared_ptr<Session>& s, const std::shared_ptr<Exchange>& x,
                     std::chrono::steady_clock::time_point deadline, const std::function<bool()>& gone,
                     const StreamWrite& write) {
    std::unique_lock lock(s->mu);
    for (;;) {
      s->cv.wait_until(lock, std::min(deadline, std::chrono::steady_clock::now() + kHeartbeat),
                       [&] { return !x->notes.empty() || s->ready(*x); });
      std::deque<Value> notes;
      notes.swap(x->notes);
      const bool late = !s->ready(*x) && std::chrono::steady_clock::now() >= deadline;
      if (late) {
        lock.unlock();
        cancel_running(*s, *x, "no response in time");
        lock.lock();
      }
      const bool done = late || s->ready(*x);
      std::vector<Value> responses;
      if (done) responses = s->finish(*x);
      lock.unlock();
      std::string text;
      for (const auto& n : notes) text += sse_event(n);
      for (const auto& r : responses) text += sse_event(r);
      if (text.empty()) text = ": keep-alive\n\n";
      const bool written = write(text);
      if (done) return;
      if (!written || gone()) return abandon(*s, *x);
      lock.lock();
    }
  }

  Response post(const Request& r) {
    if (auto version = r.header("MCP-Protocol-Version")) {
      const auto versions = mcp::protocol_versions();
      if (std::find(versions.begin(), versions.end(), *version) == versions.end())
        return rpc_error(400, -32600, "unsupported MCP-Protocol-Version");
    }
    auto body = json::parse(r.body);
    if (!body) return rpc_error(400, -32700, "parse error: " + body.error().message);
    const bool batch = body->is_array();
    std::vector<Value> messages = batch ? body->get<std::vector<Value>>() : std::vector<Value>{*body};
    if (messages.empty()) return rpc_error(400, -32600, "an empty batch");
    const bool initialize = std::any_of(messages.begin(), messages.end(), [](const Value& m) {
      return m.is_object() && m.value("method", Value()) == "initialize";
    });

    std::shared_ptr<Session> s;
    if (initialize) {
      if (batch) return rpc_error(400, -32600, "initialize must be sent alone, not in a batch");
      {
        std::lock_guard lock(mu);
        if (closing) return rpc_error(503, -32603, "the server is shutting down");
        if (sessions.size() >= kMaxSessions)
          return rpc_error(503, -32603, "too many MCP sessions; end one with DELETE /mcp");
      }
      auto opened = open();
      if (!opened) return rpc_error(500, -32603, opened.error().message);
      s = std::move(*opened);
      std::lock_guard lock(mu);
      sessions[s->id] = s;
    } else {
      auto id = r.header("Mcp-Session-Id");
      if (!id) return rpc_error(400, -32600, "Mcp-Session-Id header required (send initialize first)");
      std::lock_guard lock(mu);
      auto it = sessions.find(*id);
      if (it == sessions.end()) return rpc_error(404, -32600, "unknown or ended MCP session");
      s = it->second;
    }
    if (batch && !initialize) {
      const std::string version = s->connection->protocol_version();
      if (!mcp::accepts_batches(version)) return rpc_error(400, -32600, mcp::batch_refusal(version));
    }

    auto x = std::make_shared<Exchange>();
    x->sse = accepts_event_stream(r);
    {
      std::lock_guard lock(s->mu);
      for (const auto& m : messages) {
        if (!m.is_object()) continue;
        if (m.contains("method") && m.contains("id") && !m["id"].is_null()) {
          const std::string key = m["id"].dump();
          if (s->routes.contains(key) || std::find(x->keys.begin(), x->keys.end(), key) != x->keys.end()) {
            for (const auto& k : x->keys) s->routes.erase(k);
            return rpc_error(400, -32600, "a request with id " + key + " is still running in this session");
          }
          x->keys.push_back(key);
          s->routes[key] = x;
        }
        if (m.value("method", Value()) == "notifications/cancelled" && m.contains("params") &&
            m["params"].is_object() && m["params"].contains("requestId")) {
          // Only a request still running: a cancel that comes after its
          // response (the spec allows it) must not mark the id for good.
          if (const std::string key = m["params"]["requestId"].dump(); s->routes.contains(key)) {
            s->cancelled.insert(key);
            s->cv.notify_all();
          }
        }
      }
    }
    for (const auto& m : messages) s->connection->receive_value(m);
    if (x->keys.empty()) return Response::empty(202);

    // Plain JSON when the responses come before anything to stream; SSE once
    // a call reports progress or logs (and the client accepts it).
    const auto deadline = std::chrono::steady_clock::now() + wait;
    std::unique_lock lock(s->mu);
    const auto patience = std::min(deadline, std::chrono::steady_clock::now() + kPatience);
    const auto until = x->sse ? patience : deadline;
    const auto answered = [&] { return s->ready(*x) || !x->notes.empty(); };
    while (!s->cv.wait_until(lock, std::min(until, std::chrono::steady_clock::now() + kHeartbeat), answered) &&
           std::chrono::steady_clock::now() < until) {
      lock.unlock();
      const bool gone = r.client_gone();
      lock.lock();
      if (gone && !s->ready(*x)) {
        lock.unlock();
        abandon(*s, *x);  // nobody reads the answer: the calls are cancelled (H5)
        return Response::empty(202);
      }
    }
    if (x->sse && !s->ready(*x) && std::chrono::steady_clock::now() < deadline) {
      lock.unlock();
      Response res;
      res.content_type = "text/event-stream";
      res.headers.push_back({"Cache-Control", "no-cache"});
      if (initialize) res.headers.push_back({"Mcp-Session-Id", s->id});
      res.stream = [s, x, deadline, gone = r.client_gone](const StreamWrite& write) { stream(s, x, deadline, gone, write); };
      return res;
    }
    if (!s->ready(*x)) {  // past the wait: nobody will read these calls' answers
      lock.unlock();
      cancel_running(*s, *x, "no response in time");
      lock.lock();
    }
    std::vector<Value> out = s->finish(*x);
    lock.unlock();
    if (out.empty()) return Response::empty(202);  // cancelled: no response (MCP)
    Response res = Response::json(200, batch ? Value(out) : out[0]);
    if (initialize) res.headers.push_back({"Mcp-Session-Id", s->id});
    return res;
  }

  Response remove(const Request& r) {
    auto id = r.header("Mcp-Session-Id");
    if (!id) return rpc_error(400, -32600, "Mcp-Session-Id header required");
    std::shared_ptr<Session> s;
    {
      std::lock_guard lock(mu);
      auto it = sessions.find(*id);
      if (it == sessions.end()) return rpc_error(404, -32600, "unknown or ended MCP session");
      s = it->second;
      sessions.erase(it);
    }
    s->close();  // H5: its running calls cancelled, its sandboxes destroyed
    return Response::empty(204);
  }

  void close_all() {
    std::map<std::string, std::shared_ptr<Session>> all;
    {
      std::lock_guard lock(mu);
      closing = true;
      all.swap(sessions);
    }
    for (auto& [_, s] : all) s->close();
  }
};

McpEndpoint::McpEndpoint(host::Host& host, std::chrono::milliseconds wait)
    : impl_(std::make_shared<Impl>(host, wait)) {}
McpEndpoint::~McpEndpoint() { close_all(); }

void McpEndpoint::mount(Server& server) {
  auto impl = impl_;
  server.handle("POST", "/mcp", [impl](const Request& r) { return impl->post(r); });
  server.handle("DELETE", "/mcp", [impl](const Request& r) { return impl->remove(r); });
  server.handle("GET", "/mcp", [](const Request&) {
    Response res = Response::error(405, "method_not_allowed", "no server-initiated SSE stream; POST JSON-RPC to /mcp");
    res.headers.push_back({"Allow", "POST, DELETE"});
    return res;
  });
}

void McpEndpoint::close_all() { impl_->close_all(); }

std::size_t McpEndpoint::session_count() const {
  std::lock_guard lock(impl_->mu);
  return impl_->sessions.size();
}

}  // namespace taskyon::http
