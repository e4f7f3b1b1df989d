#include "taskyon/mcp/server.h"

#include <array>
#include <exception>
#include <functional>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "taskyon/base/workers.h"
#include "taskyon/tasks/provider.h"

namespace taskyon::mcp {
namespace {

using json::Value;

// Equal to the TypeScript SDK's SUPPORTED_PROTOCOL_VERSIONS (the pinned
// @modelcontextprotocol/sdk 1.32.2, dist/esm/types.js), newest first; keep
// the two equal when the SDK is updated.
constexpr std::array<std::string_view, 5> kVersions = {kLatestProtocolVersion, "2025-06-18", "2025-03-26",
                                                       "2024-11-05", "2024-10-07"};

// The first revision with structured tool output (the spec's 2025-06-18
// changelog): `outputSchema` in tools/list, `structuredContent` in a
// tools/call result. Revision names are dates, so they compare as strings.
constexpr std::string_view kStructuredOutputVersion = "2025-06-18";
bool has_structured_output(std::string_view version) {
  return version.empty() || version >= kStructuredOutputVersion;  // empty: before initialize, the latest
}

std::string dump(const Value& v) { return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

// Content block types a tool result may carry at each revision (the spec's
// changelogs: audio came with 2025-03-26, resource_link with 2025-06-18).
bool knows_content_type(std::string_view version, std::string_view type) {
  if (type == "text" || type == "image" || type == "resource") return true;
  const bool latest = version.empty();  // before initialize: the latest
  if (type == "audio") return latest || version >= "2025-03-26";
  if (type == "resource_link") return latest || version >= kStructuredOutputVersion;
  return false;
}

// A content block the client's revision does not know, as a text block that
// says what it was (binary data left out: base64 text helps no model).
Value as_text_block(const Value& block, std::string_view version) {
  const std::string type = block.is_object() ? block.value("type", std::string("?")) : std::string("?");
  auto field = [&](const char* key) {
    return block.is_object() && block.contains(key) && block[key].is_string() ? block[key].get<std::string>()
                                                                               : std::string();
  };
  std::string text;
  if (type == "resource_link") {
    text = fmt::format("Resource link: {} <{}>", field("name"), field("uri"));
    if (auto mime = field("mimeType"); !mime.empty()) text += fmt::format(" ({})", mime);
    if (auto description = field("description"); !description.empty()) text += ": " + description;
  } else if (block.is_object() && block.contains("data")) {
    text = fmt::format("[{} content ({}, {} base64 characters) left out: MCP {} has no {} content]", type,
                       field("mimeType"), field("data").size(), version, type);
  } else {
    text = fmt::format("[{} content, as MCP {} has no such type] {}", type, version, dump(block));
  }
  return {{"type", "text"}, {"text", std::move(text)}};
}

// JSON-RPC 2.0 error codes.
constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;
constexpr int kInternalError = -32603;

// RFC 5424 severities as MCP spells them, least severe first.
constexpr std::array<std::string_view, 8> kLevels = {"debug",    "info",  "notice", "warning",
                                                     "error",    "critical", "alert", "emergency"};

int level_rank(std::string_view level) {
  for (std::size_t i = 0; i < kLevels.size(); ++i)
    if (kLevels[i] == level) return static_cast<int>(i);
  return -1;
}

// A sandbox log level (pool.h LogEntry) as an MCP logging level.
std::string_view mcp_level(std::string_view level) {
  if (level == "debug") return "debug";
  if (level == "warn" || level == "stderr") return "warning";
  if (level == "error") return "error";
  return "info";  // "log", "info"
}

Value error_response(const Value& id, int code, std::string message) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", std::move(message)}}}};
}

Value result_response(const Value& id, Value result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

Value notification(std::string method, Value params) {
  Value n = {{"jsonrpc", "2.0"}, {"method", std::move(method)}};
  if (!params.is_null()) n["params"] = std::move(params);
  return n;
}

// A tool result a model can read: one text item, isError true.
Value tool_error(std::string text, Value meta = Value()) {
  Value r = {{"content", Value::array({{{"type", "text"}, {"text", std::move(text)}}})}, {"isError", true}};
  if (!meta.is_null()) r["_meta"] = std::move(meta);
  return r;
}


}  // namespace

std::span<const std::string_view> protocol_versions() { return kVersions; }

std::string batch_refusal(std::string_view version) {
  return fmt::format("JSON-RPC batches are not part of MCP {} (only {} has them); send each message on its own",
                     version.empty() ? kLatestProtocolVersion : version, kBatchVersion);
}

struct Connection::Impl {
  Impl(host::Host& h, Sink s, ServerInfo i) : host(h), sink(std::move(s)), info(std::move(i)) {}

  host::Host& host;
  Sink sink;
  ServerInfo info;
  host::SessionId session;
  host::Subscription tools_changed;

  std::mutex sink_mu;  // serializes the sink; `silent` guarded by it
  bool silent = false;  // close() ran: nothing more is emitted

  mutable std::mutex mu;
  std::string version;       // guarded by mu
  bool initialized = false;  // guarded by mu
  bool closed = false;       // guarded by mu
  int min_level = 0;         // guarded by mu: kLevels index of the least severe level sent
  struct Running {
    sandbox::CancelToken cancel;
    bool cancelled_by_client = false;
  };
  std::map<std::string, Running> running;  // guarded by mu, keyed by dump(request id)
  // The call workers (base/workers.h; issue 19: a thread started for each
  // tools/call cost the call a clone, a stack, five signal-mask calls, and
  // the store connection and buffers a thread keeps). A call runs at once on
  // the worker that went idle last, or on a new one: no call waits behind
  // another, calls one after another run on one worker, and at most
  // kMaxConcurrentCalls run at once (`running`). close() waits for them.
  Workers workers;

  void emit(Value message, Value related = Value()) {
    std::lock_guard lock(sink_mu);
    if (silent) return;
    try {
      sink(Outgoing{std::move(message), std::move(related)});
    } catch (const std::exception&) {
      // A transport that failed to write: the client is gone; close() follows from the transport.
    }
  }

  void handle(const Value& message) {
    if (!message.is_object()) {
      emit(error_response(Value(), kInvalidRequest, "a JSON-RPC message must be an object"));
      return;
    }
    const bool has_id = message.contains("id");
    const Value id = has_id ? message["id"] : Value();
    const bool id_ok = !has_id || id.is_string() || id.is_number_integer();
    if (!message.contains("jsonrpc") || message["jsonrpc"] != "2.0" || !id_ok) {
      emit(error_response(id_ok ? id : Value(), kInvalidRequest, "not a JSON-RPC 2.0 message (jsonrpc \"2.0\", id a string or integer)"));
      return;
    }
    if (!message.contains("method")) {
      if (message.contains("result") || message.contains("error")) return;  // a response: we send no requests
      if (has_id) emit(error_response(id, kInvalidRequest, "a request needs a method"));
      return;
    }
    if (!message["method"].is_string()) {
      if (has_id) emit(error_response(id, kInvalidRequest, "the method must be a string"));
      return;
    }
    const std::string method = message["method"].get<std::string>();
    const Value params = message.contains("params") ? message["params"] : Value::object();
    if (!params.is_object()) {
      if (has_id) emit(error_response(id, kInvalidParams, "params must be an object"));
      return;
    }
    if (!has_id) {
      notify(method, params);
      return;
    }
    if (method == "initialize") return initialize(id, params);
    if (method == "ping") return emit(result_response(id, Value::object()), id);
    if (method == "tools/list") return list(id);
    if (method == "tools/call") return call(id, params);
    if (method == "logging/setLevel") return set_level(id, params);
    emit(error_response(id, kMethodNotFound, fmt::format("method not found: {}", method)), id);
  }

  void notify(const std::string& method, const Value& params) {
    if (method == "notifications/cancelled") {
      if (!params.contains("requestId")) return;
      std::lock_guard lock(mu);
      auto it = running.find(dump(params["requestId"]));
      if (it == running.end()) return;  // finished already, or never ours: ignored (the spec's rule)
      it->second.cancelled_by_client = true;
      it->second.cancel.cancel();  // H5: the pool destroys the sandbox at once
    }
    // notifications/initialized, roots/list_changed, …: nothing to do.
  }

  void initialize(const Value& id, const Value& params) {
    std::string asked = params.contains("protocolVersion") && params["protocolVersion"].is_string()
                            ? params["protocolVersion"].get<std::string>()
                            : std::string();
    std::string chosen(kLatestProtocolVersion);
    for (auto v : kVersions)
      if (v == asked) chosen = asked;
    {
      std::lock_guard lock(mu);
      version = chosen;
      initialized = true;
    }
    Value result = {{"protocolVersion", chosen},
                    {"capabilities", {{"tools", {{"listChanged", true}}}, {"logging", Value::object()}}},
                    {"serverInfo", {{"name", info.name}, {"version", info.version}}}};
    if (!info.instructions.empty()) result["instructions"] = info.instructions;
    emit(result_response(id, std::move(result)), id);
  }

  std::string negotiated() {
    std::lock_guard lock(mu);
    return version;
  }

  void set_level(const Value& id, const Value& params) {
    const int rank = params.contains("level") && params["level"].is_string()
                         ? level_rank(params["level"].get<std::string>())
                         : -1;
    if (rank < 0) return emit(error_response(id, kInvalidParams, "level must be one of debug, info, notice, warning, "
                                                                 "error, critical, alert, emergency"), id);
    {
      std::lock_guard lock(mu);
      min_level = rank;
    }
    emit(result_response(id, Value::object()), id);
  }

  void list(const Value& id) {
    auto tools = host.list_tools();
    if (!tools) return emit(error_response(id, kInternalError, "the tool registry could not be read: " +
                                                                   tools.error().describe()), id);
    const bool structured = has_structured_output(negotiated());
    Value out = Value::array();
    for (const auto& t : *tools) {
      Value tool = tasks::mcp_tool(t.name, t.description, t.input_schema, structured ? t.output_schema : Value());
      tool["_meta"] = {{"taskyon/revision", t.revision},
                       {"taskyon/settingsRevision", t.settings_revision},
                       {"taskyon/execution", t.execution}};
      out.push_back(std::move(tool));
    }
    emit(result_response(id, {{"tools", std::move(out)}}), id);
  }

  void call(const Value& id, const Value& params) {
    if (!params.contains("name") || !params["name"].is_string())
      return emit(error_response(id, kInvalidParams, "tools/call needs params.name, the tool's name"), id);
    if (params.contains("arguments") && !params["arguments"].is_object() && !params["arguments"].is_null())
      return emit(error_response(id, kInvalidParams, "params.arguments must be an object"), id);
    Value progress_token;
    if (params.contains("_meta") && params["_meta"].is_object() && params["_meta"].contains("progressToken")) {
      progress_token = params["_meta"]["progressToken"];
      if (!progress_token.is_string() && !progress_token.is_number_integer()) progress_token = Value();
    }
    host::CallRequest request;
    request.tool = params["name"].get<std::string>();
    if (params.contains("arguments") && params["arguments"].is_object()) request.arguments = params["arguments"];
    const std::string key = dump(id);
    {
      std::lock_guard lock(mu);
      if (closed) return;
      if (running.contains(key))
        return void(emit(error_response(id, kInvalidRequest, "a request with this id is still running"), id));
      if (running.size() >= kMaxConcurrentCalls) {
        emit(result_response(id, tool_error(fmt::format("too many calls are running on this connection (at most {}); "
                                                        "wait for one to finish and call again",
                                                        kMaxConcurrentCalls))),
             id);
        return;
      }
      running.emplace(key, Running{request.cancel, false});
    }
    const bool started = workers.run([this, id, key, progress_token, request = std::move(request)]() mutable {
      run(id, key, progress_token, std::move(request));
    });
    if (started) return;
    {
      std::lock_guard lock(mu);
      running.erase(key);
      if (closed) return;
    }
    emit(result_response(id, tool_error("the host cannot start a thread for this call now; call again")), id);
  }

  void run(const Value& id, const std::string& key, const Value& progress_token, host::CallRequest request) {
    const std::string tool_name = request.tool;
    request.events.on_log = [this, &id, &tool_name](const sandbox::LogEntry& entry) {
      const std::string_view level = mcp_level(entry.level);
      {
        std::lock_guard lock(mu);
        if (level_rank(level) < min_level) return;
      }
      emit(notification("notifications/message", {{"level", level}, {"logger", tool_name}, {"data", entry.text}}), id);
    };
    if (!progress_token.is_null())
      request.events.on_progress = [this, &id, &progress_token](const host::Progress& p) {
        Value params = {{"progressToken", progress_token}, {"progress", p.progress}};
        if (p.total) params["total"] = *p.total;
        if (!p.message.empty()) params["message"] = p.message;
        emit(notification("notifications/progress", std::move(params)), id);
      };
    Value response;
    try {
      response = respond(id, request);
    } catch (const std::exception& e) {
      response = error_response(id, kInternalError, std::string("the call failed in the host: ") + e.what());
    }
    bool cancelled = false;
    {
      std::lock_guard lock(mu);
      auto it = running.find(key);
      cancelled = it != running.end() && it->second.cancelled_by_client;
      if (it != running.end()) running.erase(it);
    }
    if (!cancelled) emit(std::move(response), id);  // a cancelled request gets no response (MCP cancellation)
  }

  Value respond(const Value& id, const host::CallRequest& request) {
    auto inv = host.call(session, request);
    if (!inv) {
      const Error& e = inv.error();
      switch (e.code) {
        case Errc::not_found:
        case Errc::ambiguous:
          return error_response(id, kInvalidParams, fmt::format("Unknown tool: {} ({})", request.tool, e.describe()));
        case Errc::invalid_arguments:
          return result_response(id, tool_error(fmt::format("Invalid arguments for tool {}: {}. Fix the arguments to "
                                                            "match the tool's inputSchema and call again.",
                                                            request.tool, e.describe())));
        default:
          return result_response(id, tool_error(fmt::format("The call could not be run: {} ({})", e.describe(),
                                                            code_name(e.code))));
      }
    }
    const auto& o = inv->outcome;
    Value meta = {{"taskyon/task", inv->call.id},
                  {"taskyon/resultTask", inv->result.id},
                  {"taskyon/revision", inv->tool.revision},
                  {"taskyon/settingsRevision", inv->call.settings_revision.value_or("")},
                  {"taskyon/status", sandbox::status_name(o.status)}};
    if (!inv->ok())
      return result_response(id, tool_error(fmt::format("The tool {} failed ({}): {}", inv->tool.manifest.name,
                                                        sandbox::status_name(o.status), o.error),
                                            std::move(meta)));
    Value result;
    const bool mcp_service = inv->tool.manifest.execution == registry::Execution::external_service &&
                             inv->tool.manifest.service.contains("mcp");
    if (mcp_service && o.value.is_object() && o.value.contains("content")) {
      // An imported MCP server's result (external/mcp.h): passed on as it came.
      result = {{"content", o.value["content"]}};
      if (o.value.contains("structuredContent")) result["structuredContent"] = o.value["structuredContent"];
    } else {
      // structuredContent must be an object (MCP): another value is wrapped as {"result": VALUE}.
      Value structured = o.value.is_object() ? o.value : Value{{"result", o.value}};
      result = {{"content", Value::array({{{"type", "text"}, {"text", dump(o.value)}}})},
                {"structuredContent", std::move(structured)}};
    }
    const std::string version = negotiated();
    if (!result["content"].is_array())  // not MCP's shape: the server's whole result, as text
      result["content"] = Value::array({{{"type", "text"}, {"text", dump(o.value)}}});
    for (auto& block : result["content"])
      if (!block.is_object() || !block.contains("type") || !block["type"].is_string() ||
          !knows_content_type(version, block["type"].get<std::string>()))
        block = as_text_block(block, version);
    if (!has_structured_output(version) && result.contains("structuredContent")) {
      // An older revision has no structuredContent: the result is in the text
      // content (ours always; an imported server's gets its JSON as text when
      // it sent no text item of its own).
      bool text = false;
      for (const auto& c : result["content"]) text |= c.is_object() && c.value("type", "") == "text";
      if (!text) result["content"].push_back({{"type", "text"}, {"text", dump(result["structuredContent"])}});
      result.erase("structuredContent");
    }
    result["isError"] = false;
    result["_meta"] = std::move(meta);
    return result_response(id, std::move(result));
  }

  void close() {
    bool first = false;
    {
      std::lock_guard lock(mu);
      first = !closed;
      closed = true;
      for (auto& [_, r] : running) {
        r.cancelled_by_client = true;  // nobody to answer: the client is gone (H5: disconnect)
        r.cancel.cancel();
      }
    }
    workers.close();  // idle workers end; busy ones once their calls have answered
    if (!first) return;
    tools_changed.reset();
    {
      std::lock_guard lock(sink_mu);
      silent = true;
    }
    host.close_session(session);
  }
};

Connection::Connection(host::Host& host, Sink sink, ServerInfo info, std::string_view label)
    : impl_(std::make_shared<Impl>(host, std::move(sink), std::move(info))) {
  impl_->session = host.open_session(label);
  std::weak_ptr<Impl> weak = impl_;
  impl_->tools_changed = host.on_tools_changed([weak] {
    auto self = weak.lock();
    if (!self) return;
    {
      std::lock_guard lock(self->mu);
      if (!self->initialized || self->closed) return;
    }
    self->emit(notification("notifications/tools/list_changed", Value()));
  });
}

Connection::~Connection() { close(); }

void Connection::receive_oversized() {
  impl_->emit(error_response(Value(), kInvalidRequest,
                             fmt::format("the message is larger than {} bytes", kMaxMessageBytes)));
}

void Connection::receive(std::string_view text) {
  if (text.size() > kMaxMessageBytes) return receive_oversized();
  auto parsed = json::parse(text);
  if (!parsed) {
    impl_->emit(error_response(Value(), kParseError, "parse error: " + parsed.error().describe()));
    return;
  }
  receive_value(*parsed);
}

bool accepts_batches(std::string_view version) { return version == kBatchVersion; }

void Connection::receive_value(const json::Value& message) {
  if (message.is_array()) {
    const std::string version = protocol_version();
    if (!accepts_batches(version))
      return impl_->emit(error_response(Value(), kInvalidRequest, batch_refusal(version)));
    if (message.empty()) impl_->emit(error_response(Value(), kInvalidRequest, "an empty batch"));
    for (const auto& m : message) {
      if (m.is_object() && m.value("method", Value()) == "initialize") {
        impl_->emit(error_response(m.value("id", Value()), kInvalidRequest, "initialize must be sent alone, not in a batch"));
        continue;
      }
      impl_->handle(m);
    }
    return;
  }
  impl_->handle(message);
}

void Connection::close() { impl_->close(); }

std::string Connection::protocol_version() const {
  std::lock_guard lock(impl_->mu);
  return impl_->version;
}

bool Connection::initialized() const {
  std::lock_guard lock(impl_->mu);
  return impl_->initialized;
}

const host::SessionId& Connection::session() const { return impl_->session; }

std::size_t Connection::idle_workers() const {
  return impl_->workers.idle();
}

std::size_t Connection::running_calls() const {
  std::lock_guard lock(impl_->mu);
  return impl_->running.size();
}

}  // namespace taskyon::mcp
