#include "taskyon/http/mcp_http.h"

#include <algorithm>
#include <condition_variable>
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

struct Session {
  std::string id;
  std::mutex mu;
  std::condition_variable cv;
  std::set<std::string> waiting;              // request ids (dumped) a POST waits for
  std::map<std::string, Value> responses;     // their responses, until the POST takes them
  std::set<std::string> cancelled;            // requests the client cancelled: no response will come
  bool closed = false;
  std::unique_ptr<mcp::Connection> connection;  // last: destroyed first

  void close() {
    if (connection) connection->close();
    std::lock_guard lock(mu);
    closed = true;
    cv.notify_all();
  }
};

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
          if (!is_response(out.message)) return;  // notifications: no stream to carry them (no SSE)
          const std::string key = out.message["id"].dump();
          std::lock_guard lock(raw->mu);
          if (!raw->waiting.contains(key)) return;
          raw->responses[key] = std::move(out.message);
          raw->cv.notify_all();
        },
        mcp::ServerInfo{}, "http");
    return s;
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
      if (messages.size() != 1) return rpc_error(400, -32600, "initialize must be sent alone");
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

    std::vector<std::string> keys;  // the requests of this POST, in order
    {
      std::lock_guard lock(s->mu);
      for (const auto& m : messages) {
        if (!m.is_object()) continue;
        if (m.contains("method") && m.contains("id") && !m["id"].is_null()) {
          keys.push_back(m["id"].dump());
          s->waiting.insert(keys.back());
        }
        if (m.value("method", Value()) == "notifications/cancelled" && m.contains("params") &&
            m["params"].is_object() && m["params"].contains("requestId")) {
          s->cancelled.insert(m["params"]["requestId"].dump());
          s->cv.notify_all();
        }
      }
    }
    for (const auto& m : messages) s->connection->receive_value(m);
    if (keys.empty()) return Response{202, "application/json", "", {}};

    std::unique_lock lock(s->mu);
    const auto ready = [&] {
      return s->closed || std::all_of(keys.begin(), keys.end(), [&](const std::string& k) {
               return s->responses.contains(k) || s->cancelled.contains(k);
             });
    };
    s->cv.wait_for(lock, wait, ready);
    Value out = Value::array();
    for (const auto& k : keys) {
      if (auto it = s->responses.find(k); it != s->responses.end()) {
        out.push_back(std::move(it->second));
        s->responses.erase(it);
      } else if (!s->cancelled.contains(k)) {
        out.push_back({{"jsonrpc", "2.0"}, {"id", Value::parse(k)},
                       {"error", {{"code", -32603}, {"message", s->closed ? "the session ended" : "no response in time"}}}});
      }
      s->waiting.erase(k);
      s->cancelled.erase(k);
    }
    lock.unlock();
    if (out.empty()) return Response{202, "application/json", "", {}};  // cancelled: no response (MCP)
    Response res = Response::json(200, batch ? out : out[0]);
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
    return Response{204, "application/json", "", {}};
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
