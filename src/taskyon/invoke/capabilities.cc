#include "taskyon/invoke/capabilities.h"

#include <algorithm>

#include <openssl/evp.h>

#include <mutex>

#include <fmt/format.h>

#include "taskyon/store/audit.h"
#include "taskyon/store/grants.h"
#include "taskyon/store/kv.h"
#include "taskyon/store/secrets.h"
#include "taskyon/store/settings.h"
#include "taskyon/tasks/compiler.h"
#include "taskyon/tasks/scope.h"

namespace taskyon::invoke {

using sandbox::CapabilityOp;
using sandbox::CapabilityReply;

namespace {

CapabilityReply invalid(std::string message) { return CapabilityReply::failure("invalid_request", std::move(message)); }

// A tool-made task as tool code sees it (M14, M15): every id and revision in
// it replaced by its opaque identity (store/settings.h), since each id hashes
// a settings revision and each revision is a plain hash of its manifest.
Result<json::Value> shown_to_tool(store::Store& store, const tasks::Task& task) {
  auto shown = tasks::task_json(task);
  for (const char* member : {"id", "parentId"}) {
    if (!shown[member].is_string()) continue;
    auto identity = store::task_identity(store, shown[member].get<std::string>());
    if (!identity) return std::unexpected(identity.error());
    shown[member] = *identity;
  }
  if (task.settings_revision) {
    auto identity = store::settings_identity(store, task.tool_revision.value_or(""), *task.settings_revision);
    if (!identity) return std::unexpected(identity.error());
    shown["settingsRevision"] = *identity;
  }
  if (task.tool_revision) {
    auto identity = store::revision_identity(store, *task.tool_revision);
    if (!identity) return std::unexpected(identity.error());
    shown["toolRevision"] = *identity;
  }
  if (task.created_by) {
    auto by_task = store::task_identity(store, task.created_by->task);
    auto by_revision = store::revision_identity(store, task.created_by->revision);
    if (!by_task || !by_revision) return std::unexpected(by_task ? by_revision.error() : by_task.error());
    shown["createdBy"] = {{"task", *by_task}, {"revision", *by_revision}};
  }
  return shown;
}

// The per-grant limits over the fetch module's defaults.
capability::FetchLimits limits_of(const store::FetchLimits& granted) {
  capability::FetchLimits limits;
  if (granted.connect_timeout_ms) limits.connect_timeout = std::chrono::milliseconds(*granted.connect_timeout_ms);
  if (granted.total_timeout_ms) limits.total_timeout = std::chrono::milliseconds(*granted.total_timeout_ms);
  if (granted.max_response_bytes) limits.max_response_bytes = static_cast<std::size_t>(*granted.max_response_bytes);
  if (granted.max_request_bytes) limits.max_request_bytes = static_cast<std::size_t>(*granted.max_request_bytes);
  return limits;
}

// Failures the policy or the grant decided (a deny in the audit log); the
// others happened to a request that was allowed.
bool is_refusal(std::string_view code) {
  return code == capability::kDenied || code == capability::kPolicyBlocked || code == capability::kInvalidRequest;
}

// A store outcome as a capability reply: the value, a refusal, or (the store
// failed) an internal failure the tool sees as "denied", never as data.
template <typename T, typename MakeValue>
CapabilityReply reply_of(Result<store::Outcome<T>>&& result, MakeValue&& make_value) {
  if (!result) return CapabilityReply::failure("denied", "the host could not consult its store: " + result.error().message);
  if (!*result) return CapabilityReply::failure(result->error().code, result->error().message);
  if constexpr (std::is_void_v<T>) {
    return CapabilityReply::success(make_value());
  } else {
    return CapabilityReply::success(make_value(**result));
  }
}

}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
    const bool pad = c == '=' && i + 2 >= text.size() && (i + 1 == text.size() || text[i + 1] == '=');
    if (!alnum && !pad) return std::nullopt;
  }
  std::string out(3 * (text.size() / 4), '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) return std::nullopt;
  std::size_t size = static_cast<std::size_t>(n);
  if (text.ends_with("==")) size -= 2;  // EVP_DecodeBlock counts padding as zero bytes
  else if (text.ends_with("=")) size -= 1;
  out.resize(size);
  return out;
}

std::vector<tasks::Task> HostCapabilities::take_lineage() {
  if (!lineage_.empty()) lineage_.pop_back();
  return std::move(lineage_);
}

// handle() may run for a request the tool aborted while the next one runs
// (sandbox/capability_runner.h): every use of the store here (a SQLite
// connection opened NOMUTEX, the call's own when lent) and of the call's
// subtasks and row counters is under this call's lock; the transfer itself is not.
class HostCapabilities::StoreUse {
 public:
  explicit StoreUse(HostCapabilities& c) : lock_(c.store_mu_), borrow_(c.loan_) {}

 private:
  std::lock_guard<std::mutex> lock_;
  store::Store::Borrow borrow_;
};

void HostCapabilities::lend_callers_connection() { loan_ = store_.lend(); }

HostCapabilities::HostCapabilities(store::Store& store, tasks::Task call, std::vector<tasks::Task> lineage,
                                   std::string revision, std::string tool, CapabilityOptions options)
    : store_(store), call_(std::move(call)), lineage_(std::move(lineage)), revision_(std::move(revision)),
      tool_(std::move(tool)), options_(std::move(options)) {
  lineage_.push_back(call_);
}

CapabilityReply HostCapabilities::handle(std::string_view revision, CapabilityOp op, const json::Value& args,
                                         const sandbox::CancelToken& cancel,
                                         std::chrono::steady_clock::time_point deadline) {
  // M3: the pool hands us the revision bound to the channel. It must be the
  // one this context was made for; anything else is a host bug, refused.
  if (revision != revision_) {
    const StoreUse use(*this);
    audit(std::string(sandbox::capability_op_name(op)), "", "", false,
          fmt::format("the channel's revision {} is not the call's {}", revision, revision_));
    return CapabilityReply::failure("denied", "this capability context belongs to another revision");
  }
  if (op == CapabilityOp::fetch) return fetch(args, cancel, deadline);  // locks around its store uses
  const StoreUse use(*this);
  switch (op) {
    case CapabilityOp::create_subtasks_result: return create_subtasks(args);
    case CapabilityOp::resolve_invocation: return resolve_invocation(args);
    default: return storage(op, args);
  }
}

HostCapabilities::~HostCapabilities() {
  if (unrecorded_refused_ + unrecorded_allowed_ == 0) return;
  store::AuditEntry entry;
  entry.revision = revision_;
  entry.capability = "audit.more";
  entry.target = fmt::format("{} more", unrecorded_refused_ + unrecorded_allowed_);
  entry.verdict = unrecorded_refused_ ? capability::Verdict::deny : capability::Verdict::allow;
  entry.reason = fmt::format("{} more refused and {} more allowed decisions of this call were not recorded one by one "
                             "(at most {} rows per call)",
                             unrecorded_refused_, unrecorded_allowed_, kMaxAuditRowsPerCall);
  entry.task = call_.id;
  const StoreUse use(*this);
  (void)store::append_audit(store_, std::move(entry));
}

void HostCapabilities::refused_stale(std::string_view revision, CapabilityOp op, const json::Value& args,
                                     std::string_view ended) {
  const StoreUse use(*this);  // audit() and the row counters are used under it
  // Counted against the current call's row cap: stale frames arrive during it.
  if (audit_rows_ >= kMaxAuditRowsPerCall) {
    ++unrecorded_refused_;
    return;
  }
  ++audit_rows_;
  std::string target;
  for (const char* member : {"url", "key", "name", "prefix"}) {
    if (args.is_object() && args.contains(member) && args[member].is_string()) {
      target = args[member].get<std::string>().substr(0, 200);
      break;
    }
  }
  store::AuditEntry entry;
  entry.revision = std::string(revision);
  entry.capability = std::string(sandbox::capability_op_name(op));
  entry.target = std::move(target);
  entry.verdict = capability::Verdict::deny;
  entry.reason = "S2: a request from a call that had ended (a saved context or a timer), refused";
  if (!ended.empty()) entry.task = std::string(ended);
  (void)store::append_audit(store_, std::move(entry));
}

void HostCapabilities::audit(std::string capability, std::string target, std::string access, bool allowed,
                             std::string reason) {
  if (audit_rows_ >= kMaxAuditRowsPerCall) {
    ++(allowed ? unrecorded_allowed_ : unrecorded_refused_);
    return;
  }
  ++audit_rows_;
  store::AuditEntry entry;
  entry.revision = revision_;
  entry.capability = std::move(capability);
  entry.target = std::move(target);
  entry.access = std::move(access);
  entry.verdict = allowed ? capability::Verdict::allow : capability::Verdict::deny;
  entry.reason = std::move(reason);
  entry.task = call_.id;
  (void)store::append_audit(store_, std::move(entry));  // a failed append must not turn a refusal into data
}

CapabilityReply HostCapabilities::fetch(const json::Value& args, const sandbox::CancelToken& cancel,
                                        std::chrono::steady_clock::time_point deadline) {
  capability::HttpRequest request;
  if (!args.contains("url") || !args["url"].is_string()) return invalid("fetch needs a string url");
  request.url = args["url"].get<std::string>();
  if (args.contains("method")) {
    if (!args["method"].is_string()) return invalid("fetch: method must be a string");
    request.method = args["method"].get<std::string>();
  }
  if (args.contains("headers")) {
    if (!args["headers"].is_array()) return invalid("fetch: headers must be [[name, value], …]");
    for (const auto& pair : args["headers"]) {
      if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string() || !pair[1].is_string())
        return invalid("fetch: headers must be [[name, value], …] of strings");
      request.headers.push_back({pair[0].get<std::string>(), pair[1].get<std::string>()});
    }
  }
  if (args.contains("body") && !args["body"].is_null()) {
    if (!args["body"].is_string()) return invalid("fetch: body must be base64 or null");
    auto body = base64_decode(args["body"].get_ref<const std::string&>());
    if (!body) return invalid("fetch: body is not valid base64");
    request.body = std::move(*body);
  }

  bool asked = false, once = false;  // asked a person; allowed for this call only
  capability::FetchContext context;
  context.rules = options_.network;
  context.resolve = options_.resolve;
  context.cancelled = &cancel.flag();
  context.deadline = deadline;
  context.grant = [&](std::string_view origin, capability::Access access) -> std::optional<capability::FetchLimits> {
    const StoreUse use(*this);
    auto granted = store::fetch_grant_for(store_, revision_, origin, access);
    if (granted && *granted) return limits_of(**granted);
    if (!granted) return std::nullopt;
    const auto missing = [&] {
      if (options_.missing)
        options_.missing({MissingAuthority::Kind::grant, revision_, tool_, std::string(origin), access, {}});
      return std::nullopt;
    };
    if (!options_.ask) return missing();
    const std::pair<std::string, capability::Access> key{std::string(origin), access};
    if (std::find(allowed_once_.begin(), allowed_once_.end(), key) != allowed_once_.end()) {
      asked = once = true;
      return capability::FetchLimits{};
    }
    asked = true;
    const auto answer = options_.ask({revision_, tool_, std::string(origin), access});
    if (answer == GrantAnswer::no) return missing();
    if (answer == GrantAnswer::once) {
      once = true;
      allowed_once_.push_back(key);
      return capability::FetchLimits{};
    }
    auto recorded = store::grant_fetch(store_, revision_, origin, access, {}, options_.asked_by);
    if (!recorded) return std::nullopt;
    return capability::FetchLimits{};
  };
  context.secret = [&](std::string_view origin, std::string_view name) -> std::optional<std::string> {
    const StoreUse use(*this);
    auto value = store::secret_for(store_, revision_, origin, name);
    if (value && !*value && options_.missing)
      options_.missing({MissingAuthority::Kind::secret, revision_, tool_, std::string(origin),
                        capability::Access::read, std::string(name)});
    return value ? *value : std::nullopt;
  };

  capability::FetchResult result = capability::fetch(request, context);
  const StoreUse use(*this);
  const auto& decision = result.decision;
  const std::string target = decision.origin.empty() ? request.url.substr(0, 200) : decision.origin;
  const std::string access =
      decision.access == capability::Access::reject ? "" : std::string(capability::access_name(decision.access));
  if (!result.response) {
    const auto& failure = result.response.error();
    const bool refused = is_refusal(failure.code);
    // The audit log keeps what the tool is not shown (resolved addresses, libcurl's words).
    const std::string& why = failure.detail.empty() ? failure.message : failure.detail;
    audit("fetch", target, access, !refused,
          refused ? why : fmt::format("allowed; the request ended with {}: {}", failure.code, why));
    return CapabilityReply::failure(failure.code, failure.message);
  }
  const auto& response = *result.response;
  audit("fetch", target, access, true,
        fmt::format("{} {} granted{}; HTTP {}", decision.method, decision.href, once ? " (asked, once)" : asked ? " (asked)" : "",
                    response.status));
  auto headers = json::Value::array();
  for (const auto& h : response.headers) headers.push_back(json::Value::array({h.name, h.value}));
  return CapabilityReply::success({{"status", response.status},
                                   {"statusText", response.status_text},
                                   {"headers", std::move(headers)},
                                   {"body", base64_encode(response.body)},
                                   {"url", response.url}});
}

CapabilityReply HostCapabilities::create_subtasks(const json::Value& args) {
  const std::string target =
      args.contains("drafts") && args["drafts"].is_array() ? fmt::format("{} draft(s)", args["drafts"].size()) : "";
  const tasks::Scope scope{lineage_, store_.resolver()};
  auto compiled = tasks::compile_tool_drafts(args, tasks::Provenance{call_.id, revision_}, scope, subtasks_.size());
  if (!compiled) {
    if (!target.empty()) audit("createSubtasksResult", target, "", false, compiled.error().detail);
    return CapabilityReply::failure(compiled.error().code, compiled.error().message);
  }
  auto out = json::Value::array();
  for (const auto& task : *compiled) {
    auto shown = shown_to_tool(store_, task);
    if (!shown) return CapabilityReply::failure("denied", "the host could not consult its store: " + shown.error().message);
    out.push_back(std::move(*shown));
  }
  for (auto& t : *compiled) subtasks_.push_back(std::move(t));
  audit("createSubtasksResult", target, "", true, fmt::format("compiled as children of {}", call_.id));
  return CapabilityReply::success(std::move(out));
}

CapabilityReply HostCapabilities::resolve_invocation(const json::Value& args) {
  auto found = tasks::resolve_invocation(args, lineage_, store_.resolver());
  if (!found) {
    if (found.error().code == "not_found") audit("resolveInvocation", args["name"].get<std::string>(), "", false, found.error().detail);
    return CapabilityReply::failure(found.error().code, found.error().message);
  }
  // M15: the tool revision and an opaque settings identity (store/settings.h):
  // never the manifest, code, settings values, nor the settings' content
  // address, which a tool could compare with hashes of guesses.
  auto identity = store::settings_identity(store_, found->tool.revision, found->tool.settings_revision);
  auto tool = store::revision_identity(store_, found->tool.revision);
  if (!identity || !tool)
    return CapabilityReply::failure("denied", "the host could not consult its store: " +
                                                  (identity ? tool.error().message : identity.error().message));
  audit("resolveInvocation", args["name"].get<std::string>(), "", true, fmt::format("resolved to {}", found->tool.revision));
  return CapabilityReply::success({{"tool", *tool}, {"settings", *identity}});
}

CapabilityReply HostCapabilities::storage(CapabilityOp op, const json::Value& args) {
  const store::Caller caller{revision_, call_.id};
  auto key_of = [&](const char* member) -> std::optional<std::string> {
    if (!args.contains(member) || !args[member].is_string()) return std::nullopt;
    return args[member].get<std::string>();
  };
  switch (op) {
    case CapabilityOp::storage_get: {
      auto key = key_of("key");
      if (!key || args.size() != 1) return invalid("storage.get takes exactly {key: string}");
      return reply_of(store::storage_get(store_, caller, *key),
                      [](const std::optional<json::Value>& v) { return v ? *v : json::Value(); });
    }
    case CapabilityOp::storage_set: {
      auto key = key_of("key");
      if (!key || !args.contains("value") || args.size() != 2)
        return invalid("storage.set takes exactly {key: string, value: JSON}");
      return reply_of(store::storage_set(store_, caller, *key, args["value"]), [] { return json::Value(); });
    }
    case CapabilityOp::storage_delete: {
      auto key = key_of("key");
      if (!key || args.size() != 1) return invalid("storage.delete takes exactly {key: string}");
      return reply_of(store::storage_delete(store_, caller, *key), [](bool removed) { return json::Value(removed); });
    }
    default: {
      auto prefix = key_of("prefix");
      if (!prefix || args.size() != 1) return invalid("storage.list takes exactly {prefix: string}");
      return reply_of(store::storage_list(store_, caller, *prefix),
                      [](const std::vector<std::string>& keys) { return json::Value(keys); });
    }
  }
}

}  // namespace taskyon::invoke
