#include "taskyon/http/api.h"

#include <atomic>
#include <charconv>

#include <fmt/format.h>

#include "taskyon/host/views.h"
#include "taskyon/http/egress.h"
#include "taskyon/invoke/provider_call.h"
#include "taskyon/registry/manifest.h"
#include "taskyon/store/audit.h"

namespace taskyon::http {

int status_for(Errc code) {
  switch (code) {
    case Errc::not_found: return 404;
    case Errc::ambiguous: return 409;
    case Errc::integrity:
    case Errc::store:
    case Errc::io:
    case Errc::runtime_missing:
    case Errc::internal: return 500;
    default: return 400;
  }
}

namespace {

using json::Value;

Response error(const Error& e) { return Response::json(status_for(e.code), host::error_json(e)); }

Result<Value> parse_body(const Request& r) {
  if (r.body.empty()) return fail(Errc::bad_usage, "the request needs a JSON body");
  return json::parse(r.body);
}

// Everything the routes share.
struct Api {
  host::Host& core;
  ApiOptions options;
  host::SessionId session;  // every /v1/call runs in this host session
  std::atomic<std::size_t> running{0};  // calls and proxy fetches being served

  Api(host::Host& h, ApiOptions o) : core(h), options(std::move(o)), session(h.open_session("v1")) {}

  // Admits one more call or proxied fetch, or says 429.
  struct Slot {
    std::atomic<std::size_t>* n = nullptr;
    ~Slot() {
      if (n) n->fetch_sub(1);
    }
  };
  bool take(Slot& slot) {
    if (running.fetch_add(1) >= options.max_concurrent_calls) {
      running.fetch_sub(1);
      return false;
    }
    slot.n = &running;
    return true;
  }
  Response busy() const {
    return Response::error(429, "too_many_calls",
                           fmt::format("at most {} calls run at once; retry when one has ended",
                                       options.max_concurrent_calls));
  }

  Response tools() {
    return core.with_store([&](store::Store& store) {
      auto t = store.tools();
      if (!t) return error(t.error());
      return Response::json(200, host::tool_list_json(*t));
    });
  }

  Response tool(const std::string& ref) {
    return core.with_store([&](store::Store& store) {
      auto rev = store.resolve(ref);
      if (!rev) return error(rev.error());
      auto active = store.active(rev->name);
      if (!active) return error(active.error());
      return Response::json(200, host::tool_show_json(*rev, *active && (*active)->revision == rev->id));
    });
  }

  Response install(const Request& r) {
    auto body = parse_body(r);
    if (!body) return error(body.error());
    auto manifest = registry::parse_manifest(*body);
    if (!manifest) return error(manifest.error());
    // R6: host authority is given at the terminal, by a person (tycli tool install --trust).
    if (registry::needs_trust(*manifest))
      return Response::json(403, host::error_json({Errc::bad_usage,
                                                   registry::trust_required_message(*manifest) +
                                                       " (over HTTP no tool gets host authority: use `tycli tool "
                                                       "install --trust` at the terminal)",
                                                   "/"}));
    const auto activate = r.query_value("activate").value_or("") == "1" ? store::Activate::always
                                                                        : store::Activate::if_unbound;
    auto installed = core.with_store([&](store::Store& store) { return store.install(*manifest, activate); });
    if (!installed) return error(installed.error());
    core.check_activations();  // H6: an install that bound a name reaches MCP clients' list_changed
    return Response::json(installed->created ? 201 : 200, host::install_json(*installed));
  }

  Response call(const Request& r) {
    auto body = parse_body(r);
    if (!body) return error(body.error());
    if (!body->is_object() || !body->contains("tool") || !(*body)["tool"].is_string())
      return error({Errc::bad_usage, "the body must be {\"tool\": NAME|REVISION, \"args\"?: {…}, \"timeoutMs\"?: N}", "/tool"});
    for (const auto& [key, _] : body->items())
      if (key != "tool" && key != "args" && key != "timeoutMs")
        return error({Errc::bad_usage, fmt::format("unknown member \"{}\" (tool, args, timeoutMs)", key), "/" + key});
    host::CallRequest request;
    request.tool = (*body)["tool"].get<std::string>();
    if (body->contains("args")) request.arguments = (*body)["args"];
    if (body->contains("timeoutMs")) {
      const auto& t = (*body)["timeoutMs"];
      if (!t.is_number_integer() || t.get<long long>() <= 0)
        return error({Errc::bad_usage, "timeoutMs must be a positive integer of milliseconds", "/timeoutMs"});
      request.timeout = std::chrono::milliseconds(t.get<long long>());  // the host refuses one above its maximum
    }
    Slot slot;
    if (!take(slot)) return busy();
    // A client that hangs up cancels its call (H5), as on /mcp and /v1/fetch.
    const sandbox::CancelToken cancel = request.cancel;
    ClientWatch watch(r.client_gone, [cancel] { cancel.cancel(); });
    // The host compiles, pins, runs and stores it as `tycli call` does (same task ids).
    auto inv = core.call(session, request);
    if (!inv) return error(inv.error());
    return Response::json(200, host::invocation_json(*inv));
  }

  // A model's tool call as its provider sent it (docs/serve.md), run under
  // the node the model answered: what `tycli chat call` does.
  Response chat_call(const Request& r) {
    auto body = parse_body(r);
    if (!body) return error(body.error());
    const char* shape = "the body must be {\"at\": TASK ID, \"toolCall\": {…}, \"format\"?: …, \"timeoutMs\"?: N}";
    if (!body->is_object() || !body->contains("at") || !(*body)["at"].is_string())
      return error({Errc::bad_usage, shape, "/at"});
    if (!body->contains("toolCall")) return error({Errc::bad_usage, shape, "/toolCall"});
    for (const auto& [key, _] : body->items())
      if (key != "at" && key != "toolCall" && key != "format" && key != "timeoutMs")
        return error({Errc::bad_usage, fmt::format("unknown member \"{}\" (at, toolCall, format, timeoutMs)", key),
                      "/" + key});
    auto pc = tasks::parse_provider_call((*body)["toolCall"]);
    if (!pc) return error({pc.error().code, pc.error().message, "/toolCall" + pc.error().where});
    tasks::Provider format = pc->provider;
    if (body->contains("format")) {
      auto f = (*body)["format"].is_string() ? tasks::parse_provider((*body)["format"].get<std::string>())
                                             : tasks::parse_provider("");
      if (!f) return error({f.error().code, f.error().message, "/format"});
      format = *f;
    }
    if (format == tasks::Provider::mcp) {
      auto refused = tasks::tool_answer(format, pc->id, Value());
      return error({refused.error().code, refused.error().message, "/format"});
    }
    host::CallRequest request;
    if (body->contains("timeoutMs")) {
      const auto& t = (*body)["timeoutMs"];
      if (!t.is_number_integer() || t.get<long long>() <= 0)
        return error({Errc::bad_usage, "timeoutMs must be a positive integer of milliseconds", "/timeoutMs"});
      request.timeout = std::chrono::milliseconds(t.get<long long>());
    }
    Slot slot;
    if (!take(slot)) return busy();
    // Resolving, and storing what the model got wrong, under the store mutex.
    auto planned = core.with_store([&](store::Store& store) -> Result<invoke::ProviderCallPlan> {
      auto at = store.task((*body)["at"].get<std::string>());
      if (!at) return std::unexpected(at.error());
      auto lineage = store.lineage(at->id);
      if (!lineage) return std::unexpected(lineage.error());
      return invoke::plan_provider_call(store, *pc, *lineage);
    });
    if (!planned) return error(planned.error());
    if (!planned->run) {
      auto out = invoke::provider_answer_json(format, *pc, *planned->refused_call, *planned->refused_result);
      return out ? Response::json(200, *out) : error(out.error());
    }
    request.task = std::move(planned->run);
    const sandbox::CancelToken cancel = request.cancel;
    ClientWatch watch(r.client_gone, [cancel] { cancel.cancel(); });
    auto inv = core.call(session, request);
    if (!inv) return error(inv.error());
    auto out = invoke::provider_answer_json(format, *pc, inv->call, inv->result);
    return out ? Response::json(200, *out) : error(out.error());
  }

  Response task(const std::string& ref, bool tree) {
    return core.with_store([&](store::Store& store) {
      auto t = store.task(ref);
      if (!t) return error(t.error());
      if (!tree) {
        auto view = host::task_view(store, *t);  // as `tycli task show --json`
        if (!view) return error(view.error());
        return Response::json(200, *view);
      }
      auto node = host::tree_json(store, *t);
      if (!node) return error(node.error());
      return Response::json(200, Value::array({std::move(*node)}));
    });
  }

  Response audit(const Request& r) {
    store::AuditQuery q;
    if (auto limit = r.query_value("limit")) {
      std::size_t n = 0;
      const auto [end, ec] = std::from_chars(limit->data(), limit->data() + limit->size(), n);
      if (ec != std::errc() || end != limit->data() + limit->size())
        return error({Errc::bad_usage, "limit is 0 (all) or a positive number", "limit"});
      q.limit = n;
    }
    if (auto since = r.query_value("since")) {
      auto parsed = store::parse_since(*since);
      if (!parsed) return error(parsed.error());
      q.since = *parsed;
    }
    return core.with_store([&](store::Store& store) {
      if (auto rev = r.query_value("revision")) {  // as `tycli audit --revision` (Store::logged_revision)
        auto resolved = store.logged_revision(*rev);
        if (!resolved) return error(resolved.error());
        q.revision = *resolved;
      }
      auto rows = store::query_audit(store, q);
      if (!rows) return error(rows.error());
      Value out = Value::array();
      for (const auto& e : *rows) out.push_back(host::audit_row_json(e));
      return Response::json(200, out);
    });
  }

  Response fetch(const Request& r) {
    Slot slot;
    if (!take(slot)) return busy();
    return egress_fetch(r.body, {options.egress_store, options.capabilities, std::chrono::milliseconds(60000)}, r.client_gone);
  }
};

}  // namespace

Result<void> mount_api(Server& server, host::Host& host, ApiOptions options) {
  if (!options.egress_store) return fail(Errc::bad_usage, "the egress proxy needs the server's store, and none was given");
  auto api = std::make_shared<Api>(host, std::move(options));
  server.handle("GET", "/v1/tools", [api](const Request&) { return api->tools(); });
  server.handle("GET", "/v1/tools/([^/]+)", [api](const Request& r) { return api->tool(r.params.at(0)); });
  server.handle("POST", "/v1/tools", [api](const Request& r) { return api->install(r); });
  server.handle("POST", "/v1/call", [api](const Request& r) { return api->call(r); });
  server.handle("POST", "/v1/chat/call", [api](const Request& r) { return api->chat_call(r); });
  server.handle("GET", "/v1/tasks/([^/]+)", [api](const Request& r) { return api->task(r.params.at(0), false); });
  server.handle("GET", "/v1/tasks/([^/]+)/tree", [api](const Request& r) { return api->task(r.params.at(0), true); });
  server.handle("GET", "/v1/audit", [api](const Request& r) { return api->audit(r); });
  server.handle("POST", "/v1/fetch", [api](const Request& r) { return api->fetch(r); });
  return {};
}

}  // namespace taskyon::http
