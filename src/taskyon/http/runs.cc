#include "taskyon/http/runs.h"

#include <array>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "taskyon/host/views.h"
#include "taskyon/http/api.h"
#include "taskyon/invoke/external_run.h"
#include "taskyon/store/sandbox_log.h"
#include "taskyon/store/store.h"

namespace taskyon::http {

// A namespace of its own: the unity build puts this file in a batch with api.cc and egress.cc.
namespace runs_detail {
namespace {

using json::Value;
using Clock = std::chrono::steady_clock;

// The page's logs as stored: as many entries and bytes as a sandbox call keeps
// (the guest harness's 1000 messages, sandbox::RuntimeConfig::max_log_bytes).
constexpr std::size_t kMaxLogEntries = 1000;
constexpr std::size_t kMaxLogBytes = 1u << 20;
constexpr std::size_t kMaxErrorBytes = 64u << 10;
constexpr std::size_t kMaxDetailBytes = 400;

Response error(const Error& e) { return Response::json(status_for(e.code), host::error_json(e)); }
Response bad(std::string message, std::string where) { return error({Errc::bad_usage, std::move(message), std::move(where)}); }

// A capability refusal's HTTP status (runs.h).
int status_for_refusal(std::string_view code) {
  if (code == "denied" || code == "policy_blocked") return 403;
  if (code == "too_large") return 413;
  if (code == "not_found") return 404;
  if (code == "call_ended") return 409;
  return 400;
}

// The body as an object whose members are all in `allowed`, or the 400 to answer.
Result<Value> object_body(const Request& r, std::initializer_list<std::string_view> allowed, std::string_view shape) {
  if (r.body.empty()) return fail(Errc::bad_usage, fmt::format("the request needs a JSON body: {}", shape));
  auto body = json::parse(r.body);
  if (!body) return std::unexpected(body.error());
  if (!body->is_object()) return fail(Errc::bad_usage, fmt::format("the body must be {}", shape));
  for (const auto& [key, _] : body->items()) {
    bool known = false;
    for (auto a : allowed) known = known || key == a;
    if (!known) return fail(Errc::bad_usage, fmt::format("unknown member \"{}\" in {}", key, shape), "/" + key);
  }
  return body;
}

std::optional<std::string> text_member(const Value& body, const char* name) {
  if (!body.contains(name) || !body[name].is_string()) return std::nullopt;
  return body[name].get<std::string>();
}

bool printable(std::string_view s) {
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return false;
  return true;
}

std::optional<sandbox::Status> parse_status(std::string_view name) {
  for (auto s : {sandbox::Status::ok, sandbox::Status::tool_error, sandbox::Status::timeout, sandbox::Status::crashed,
                 sandbox::Status::protocol_error, sandbox::Status::cancelled})
    if (sandbox::status_name(s) == name) return s;
  return std::nullopt;
}

// The page's logs, kept up to the bounds above; past them one entry says how many were dropped.
Result<std::vector<sandbox::LogEntry>> parse_logs(const Value& logs) {
  static constexpr std::array<std::string_view, 6> kLevels = {"log", "info", "warn", "error", "debug", "stderr"};
  if (!logs.is_array()) return fail(Errc::bad_usage, "logs must be [{\"level\", \"text\"}…]", "/logs");
  std::vector<sandbox::LogEntry> out;
  std::size_t bytes = 0, dropped = 0;
  for (std::size_t i = 0; i < logs.size(); ++i) {
    const auto& e = logs[i];
    const auto where = fmt::format("/logs/{}", i);
    if (!e.is_object() || e.size() != 2 || !text_member(e, "level") || !text_member(e, "text"))
      return fail(Errc::bad_usage, "a log entry is {\"level\", \"text\"}", where);
    const auto level = e["level"].get<std::string>();
    bool known = false;
    for (auto l : kLevels) known = known || level == l;
    if (!known) return fail(Errc::bad_usage, "level is log, info, warn, error, debug or stderr", where + "/level");
    const auto& text = e["text"].get_ref<const std::string&>();
    if (out.size() >= kMaxLogEntries || bytes + text.size() > kMaxLogBytes) {
      ++dropped;
      continue;
    }
    bytes += text.size();
    out.push_back({level, text});
  }
  if (dropped)
    out.push_back({"stderr", fmt::format("[{} more log entries dropped by the server: a call keeps {} entries, {} bytes]",
                                         dropped, kMaxLogEntries, kMaxLogBytes)});
  return out;
}

// The outcome the page reports (runs.h, /result).
Result<sandbox::CallOutcome> parse_outcome(const Value& body) {
  sandbox::CallOutcome out;
  auto name = text_member(body, "status");
  auto status = name ? parse_status(*name) : std::nullopt;
  if (!status)
    return fail(Errc::bad_usage, "status is ok, tool_error, timeout, crashed, protocol_error or cancelled", "/status");
  out.status = *status;
  if (out.status == sandbox::Status::ok) {
    if (!body.contains("value") || body.contains("error"))
      return fail(Errc::bad_usage, "a result with status ok has a \"value\" (JSON; null too) and no \"error\"", "/value");
    out.value = body["value"];
  } else {
    auto message = text_member(body, "error");
    if (!message || body.contains("value"))
      return fail(Errc::bad_usage, "a failed call has an \"error\" (a string) and no \"value\"", "/error");
    if (message->size() > kMaxErrorBytes)
      return fail(Errc::bad_usage, fmt::format("error is at most {} bytes", kMaxErrorBytes), "/error");
    out.error = *message;
  }
  if (body.contains("logs")) {
    auto logs = parse_logs(body["logs"]);
    if (!logs) return std::unexpected(logs.error());
    out.logs = std::move(*logs);
  }
  if (body.contains("durationMs")) {
    const auto& d = body["durationMs"];
    if (!d.is_number_integer() || d.get<long long>() < 0)
      return fail(Errc::bad_usage, "durationMs is a non-negative integer of milliseconds", "/durationMs");
    out.duration = std::chrono::milliseconds(d.get<long long>());
  }
  return out;
}

struct Open {
  std::mutex mu;                              // one request of the run at a time
  std::unique_ptr<invoke::ExternalRun> run;   // null once its result is stored
  Clock::time_point deadline;                 // its timeout plus the grace
  std::chrono::milliseconds timeout{0};
  std::size_t bytes = 0;                      // its start request's body, counted against RunsOptions::max_open_bytes
};

class RunTable final : public Runs {
 public:
  explicit RunTable(RunsOptions options) : options_(std::move(options)) {}
  ~RunTable() override { close("the server stopped before the page reported its result"); }

  void close(std::string_view reason) override {
    expire();  // a run past its deadline is a timeout, whenever it is noticed
    std::map<std::string, std::shared_ptr<Open>> left;
    {
      std::lock_guard lock(mu_);
      closed_ = true;
      left.swap(open_);
      held_bytes_ = 0;
    }
    for (auto& [id, open] : left) end(*open, sandbox::Status::cancelled, std::string(reason));
  }

  Response start(const Request& r) {
    constexpr const char* shape =
        "{\"tool\", \"args\"?, \"parent\"?, \"timeoutMs\"?, \"runtime\": {\"kind\": \"browser\", \"version\"}}";
    auto body = object_body(r, {"tool", "args", "parent", "timeoutMs", "runtime"}, shape);
    if (!body) return error(body.error());
    invoke::ExternalCall call;
    auto tool = text_member(*body, "tool");
    if (!tool) return bad(fmt::format("tool (a name, revision id or prefix) is required: {}", shape), "/tool");
    call.tool = *tool;
    if (body->contains("args")) call.arguments = (*body)["args"];
    if (body->contains("parent")) {
      auto parent = text_member(*body, "parent");
      if (!parent || !json::is_content_id(*parent)) return bad("parent is a full task id (\"sha256:…\")", "/parent");
      call.parent = *parent;
    }
    const auto& runtime = body->contains("runtime") ? (*body)["runtime"] : Value();
    if (!runtime.is_object() || runtime.size() != 2 || text_member(runtime, "kind") != "browser" ||
        !text_member(runtime, "version"))
      return bad("runtime is {\"kind\": \"browser\", \"version\": the page's browser (\"Chromium 156.0\")}", "/runtime");
    auto record = invoke::browser_runtime(runtime["version"].get_ref<const std::string&>());
    if (!record) return error(record.error());
    call.runtime = std::move(*record);
    auto timeout = options_.default_timeout;
    if (body->contains("timeoutMs")) {
      const auto& t = (*body)["timeoutMs"];
      if (!t.is_number_integer() || t.get<long long>() <= 0 || t.get<long long>() > options_.max_timeout.count())
        return bad(fmt::format("timeoutMs is 1..{} milliseconds", options_.max_timeout.count()), "/timeoutMs");
      timeout = std::chrono::milliseconds(t.get<long long>());
    }

    expire();
    // A place among the open runs is taken before the call is compiled, and given back
    // if it does not start: concurrent starts cannot pass the bounds together.
    Reservation place(*this, r.body.size());
    if (!place.taken) {
      if (place.closed) return Response::error(503, "shutting_down", "the server is stopping; no new runs are taken");
      return Response::error(429, "too_many_runs",
                             fmt::format("at most {} runs, holding {} bytes of requests, are open at once; report a "
                                         "result first",
                                         options_.max_open, options_.max_open_bytes));
    }
    auto run = invoke::ExternalRun::start(options_.store, call, options_.capabilities);
    if (!run) return error(run.error());
    const auto& m = (*run)->tool().manifest;
    if (!m.modules.is_null())  // the page's harness has no module loader (docs/modules.md is the CLI's)
      return bad(fmt::format("{} requires modules (docs/modules.md): the browser host has no module loader; run it with "
                             "POST /v1/call",
                             m.name),
                 "/tool");
    auto id = new_token();
    if (!id) return error(id.error());
    const std::string run_id = "run-" + id->substr(0, 32);
    Value answer = {{"run", run_id},
                    {"task", (*run)->call().id},
                    {"tool", {{"name", m.name}, {"revision", (*run)->tool().revision}}},
                    {"settingsRevision", (*run)->tool().settings_revision},
                    {"code", m.code},
                    {"timeoutMs", timeout.count()}};
    auto open = std::make_shared<Open>();
    open->run = std::move(*run);
    open->timeout = timeout;
    open->deadline = Clock::now() + timeout + options_.grace;
    open->bytes = r.body.size();
    {
      std::lock_guard lock(mu_);
      if (closed_) return Response::error(503, "shutting_down", "the server is stopping; no new runs are taken");
      open_.emplace(run_id, std::move(open));
      place.keep();  // its place and bytes now belong to the open run, in the same locked step
    }
    return Response::json(201, answer);
  }

  Response request(const std::string& id, const Request& r) {
    auto body = object_body(r, {"op", "args"}, "{\"op\", \"args\"}");
    if (!body) return error(body.error());
    auto name = text_member(*body, "op");
    auto op = name ? sandbox::capability_op(*name) : std::nullopt;
    if (!op)
      return bad("op is storage.get, storage.set, storage.delete, storage.list, createSubtasksResult or resolveInvocation",
                 "/op");
    if (!body->contains("args") || !(*body)["args"].is_object()) return bad("args is an object (the request's)", "/args");
    expire();
    auto open = find(id);
    if (!open) return not_open(id);
    std::lock_guard lock(open->mu);
    if (!open->run) return not_open(id);
    if (Clock::now() > open->deadline - options_.grace)
      return Response::error(409, "call_ended", "the call's timeout has passed: it takes no more requests");
    auto reply = open->run->request(*op, (*body)["args"]);
    if (!reply.ok()) return Response::error(status_for_refusal(*reply.code), *reply.code, reply.message);
    return Response::json(200, Value{{"value", reply.value}});
  }

  Response result(const std::string& id, const Request& r) {
    auto body = object_body(r, {"status", "value", "error", "logs", "durationMs"},
                            "{\"status\", \"value\"? | \"error\"?, \"logs\"?, \"durationMs\"?}");
    if (!body) return error(body.error());
    auto outcome = parse_outcome(*body);
    if (!outcome) return error(outcome.error());
    expire();
    std::shared_ptr<Open> open;
    {
      std::lock_guard lock(mu_);
      auto it = open_.find(id);
      if (it == open_.end()) return not_open(id);
      open = it->second;
      open_.erase(it);
      held_bytes_ -= open->bytes;
    }
    std::lock_guard lock(open->mu);
    if (!open->run) return not_open(id);
    auto inv = open->run->finish(std::move(*outcome));
    open->run.reset();
    if (!inv) return error(inv.error());
    return Response::json(200, host::invocation_json(*inv));
  }

  Response list() {
    expire();
    Value out = Value::array();
    std::lock_guard lock(mu_);
    const auto now = Clock::now();
    for (const auto& [id, open] : open_) {
      std::lock_guard one(open->mu);
      if (!open->run) continue;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(open->deadline - now).count();
      out.push_back({{"run", id},
                     {"task", open->run->call().id},
                     {"tool", open->run->tool().manifest.name},
                     {"revision", open->run->tool().revision},
                     {"expiresInMs", left < 0 ? 0 : left}});
    }
    return Response::json(200, out);
  }

  Response sandbox_log(const Request& r) {
    constexpr const char* shape = "{\"revision\", \"tool\", \"reason\", \"detail\"?}";
    auto body = object_body(r, {"revision", "tool", "reason", "detail"}, shape);
    if (!body) return error(body.error());
    auto revision = text_member(*body, "revision");
    auto tool = text_member(*body, "tool");
    auto reason = text_member(*body, "reason");
    if (!revision || !json::is_content_id(*revision)) return bad("revision is the full id the sandbox ran", "/revision");
    if (!tool) return bad(fmt::format("tool is required: {}", shape), "/tool");
    if (!reason || reason->empty() || reason->size() > 64 ||
        reason->find_first_not_of("abcdefghijklmnopqrstuvwxyz_") != std::string::npos)
      return bad("reason is the page's destruction reason: 1..64 of a-z and _ (timeout, superseded, …)", "/reason");
    std::string detail;
    if (body->contains("detail")) {
      auto d = text_member(*body, "detail");
      if (!d || d->size() > kMaxDetailBytes || !printable(*d))
        return bad(fmt::format("detail is at most {} bytes without control characters", kMaxDetailBytes), "/detail");
      detail = *d;
    }
    store::Store& st = *options_.store;
    auto held = st.revision(*revision);  // only revisions the store holds, and only under their own name
    if (!held) return error(held.error());
    if (held->manifest.name != *tool)
      return bad(fmt::format("revision {} is a revision of {}, not {}", *revision, held->manifest.name, *tool), "/tool");
    const std::string text = detail.empty() ? fmt::format("browser: {}", *reason) : fmt::format("browser: {}: {}", *reason, detail);
    auto recorded = store::record_destruction(st, *revision, *tool, text, 0);
    if (!recorded) return error(recorded.error());
    return Response::json(201, Value{{"seq", recorded->seq}, {"at", recorded->at}});
  }

 private:
  static Response not_open(const std::string& id) {
    return Response::error(404, "not_found",
                           fmt::format("no open run {}: it was never started here, its result is stored, or its deadline "
                                       "passed (then it is stored as a timeout)",
                                       id));
  }

  std::shared_ptr<Open> find(const std::string& id) {
    std::lock_guard lock(mu_);
    auto it = open_.find(id);
    return it == open_.end() ? nullptr : it->second;
  }

  // Stores `open`'s call as ended with `status` (the page reported nothing).
  static void end(Open& open, sandbox::Status status, std::string message) {
    std::lock_guard lock(open.mu);
    if (!open.run) return;
    sandbox::CallOutcome outcome;
    outcome.status = status;
    outcome.error = std::move(message);
    outcome.duration = open.timeout;
    (void)open.run->finish(std::move(outcome));  // a store failure here has nobody to tell; the audit has the decisions
    open.run.reset();
  }

  // Stores the runs whose deadline has passed as timeouts.
  void expire() {
    std::vector<std::shared_ptr<Open>> late;
    {
      std::lock_guard lock(mu_);
      const auto now = Clock::now();
      for (auto it = open_.begin(); it != open_.end();) {
        if (it->second->deadline < now) {
          late.push_back(it->second);
          held_bytes_ -= it->second->bytes;
          it = open_.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (auto& open : late)
      end(*open, sandbox::Status::timeout,
          fmt::format("the page reported no result within the call's timeout ({} ms) and {} ms more",
                      open->timeout.count(), options_.grace.count()));
  }

  // A place among the open runs for one start: counted in `starting_` while the
  // call compiles, then kept by the open run or given back.
  struct Reservation {
    RunTable& table;
    std::size_t bytes;
    bool taken = false, closed = false, kept = false;
    Reservation(RunTable& t, std::size_t b) : table(t), bytes(b) {
      std::lock_guard lock(table.mu_);
      closed = table.closed_;
      taken = !closed && table.open_.size() + table.starting_ < table.options_.max_open &&
              table.held_bytes_ + bytes <= table.options_.max_open_bytes;
      if (!taken) return;
      ++table.starting_;
      table.held_bytes_ += bytes;
    }
    // Under table.mu_, together with the run's entry in open_: done later (in
    // the destructor, after the lock was let go), a concurrent start saw the
    // run counted twice, in open_ and in starting_, and was refused a place
    // that was free (the bounded-runs test: 15 started and 9 refused of 24).
    void keep() {
      --table.starting_;
      kept = true;
    }
    ~Reservation() {
      if (!taken || kept) return;
      std::lock_guard lock(table.mu_);
      --table.starting_;
      if (!table.closed_) table.held_bytes_ -= bytes;
    }
  };

  RunsOptions options_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Open>> open_;
  std::size_t starting_ = 0;    // starts between their reservation and their entry in open_
  std::size_t held_bytes_ = 0;  // bytes of the open and starting runs' requests
  bool closed_ = false;
};

}  // namespace
}  // namespace runs_detail

Result<std::shared_ptr<Runs>> mount_runs(Server& server, RunsOptions options) {
  using runs_detail::RunTable;
  if (!options.store) return fail(Errc::bad_usage, "the runs need the server's store, and none was given");
  options.capabilities.ask = {};
  auto runs = std::make_shared<RunTable>(std::move(options));
  server.handle("POST", "/v1/runs", [runs](const Request& r) { return runs->start(r); });
  server.handle("GET", "/v1/runs", [runs](const Request&) { return runs->list(); });
  server.handle("POST", "/v1/runs/([^/]+)/requests", [runs](const Request& r) { return runs->request(r.params.at(0), r); });
  server.handle("POST", "/v1/runs/([^/]+)/result", [runs](const Request& r) { return runs->result(r.params.at(0), r); });
  server.handle("POST", "/v1/sandbox-log", [runs](const Request& r) { return runs->sandbox_log(r); });
  return runs;
}

}  // namespace taskyon::http
