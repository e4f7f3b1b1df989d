// The long-lived host core (DESIGN §8, issue 13 item 1): one store, one
// sandbox pool and one capability host per process, shared by every
// transport (`tycli mcp` over stdio, `tycli serve` over HTTP) and thread.
//
// Sessions are first-class: a transport opens one per client connection
// (one stdio connection, one MCP Streamable HTTP session, …). Retained
// sandboxes are keyed by (revision, session) (H3): one session's in-memory
// state never reaches another session's call; closing a session destroys its
// sandboxes, recorded in the sandbox log as "session_closed".
//
// call() compiles, pins, runs and stores a call exactly as `tycli call` does
// (tasks::compile + invoke::run_call: the same task ids, the same stored
// records, the same audit). Calls to different revisions (or sessions) run in
// parallel on the callers' threads; calls to one (revision, session) sandbox
// are serialized by the pool (S2). A call's CancelToken destroys its sandbox
// at once and the call is stored as Cancelled (H5, S5).
//
// Activations (H6): the host compares the store's active bindings before
// every list_tools(), after every activate() through it, and on a timer
// (Options::activation_poll), so an activation made by another process
// (`tycli tool activate`) is seen too; on a change every watcher registered
// with on_tools_changed() is called. A pinned or running call never changes.
//
// Store use and threads: SQLite connections are not shared between threads
// here. Each call borrows a connection of its own from a small set the host
// opens on the same database file (WAL; a busy store waits with a bound,
// store/sqlite.cc), so parallel calls never share a connection; the host's
// own reads (list_tools, activation polling, the sandbox log) go through one
// connection guarded by one mutex (until Store itself is thread-safe,
// helper storejson). with_store() lends that connection under the mutex.
//
// Shutdown (shutdown() or the destructor): new calls are refused, every
// sandbox is destroyed and recorded with the shutdown's reason (a running
// call's too), running calls end cancelled (stored as Cancelled), the
// callers' threads are waited for, and the sandbox log is written.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taskyon/base/error.h"
#include "taskyon/invoke/capabilities.h"
#include "taskyon/invoke/invoke.h"
#include "taskyon/json/json.h"
#include "taskyon/sandbox/pool.h"
#include "taskyon/store/store.h"

namespace taskyon::host {

struct Options {
  std::string db_path;                     // the store file (store::default_db_path() for the default)
  sandbox::RuntimeConfig runtime = {};     // the one pool's configuration
  // How capability requests are decided. `ask` must stay empty: a long-lived
  // host has no terminal; a missing grant is "denied". The network rules are
  // TEST-ONLY (loopback servers, --fetch-allow-cidr/--fetch-ca-file).
  invoke::CapabilityOptions capabilities = {};
  std::chrono::milliseconds default_timeout{10000};  // per call when CallRequest::timeout is 0, ms
  std::chrono::milliseconds max_timeout{600000};     // a call asking for more is refused (bad_usage), ms
  std::chrono::milliseconds activation_poll{500};    // H6 timer; 0: only before list_tools()/after activate()
  // Imported MCP servers (external/mcp.h) stay running in the host, one
  // session per server, restarted if it dies (issue 13 item 5). false: each
  // call starts its server afresh, as the one-shot CLI does.
  bool keep_mcp_servers = true;
};

// A session id: "s-" followed by 16 hex digits, unique within the process.
using SessionId = std::string;

// One active tool as a client sees it (H4: the reduced signature only; no
// code, no service command).
struct ToolInfo {
  std::string name;
  std::string description;
  json::Value input_schema;          // the manifest's `parameters`
  json::Value output_schema;         // JSON Schema object of the result, or null when not declared
  std::string revision;              // the active revision a call by name pins now, "sha256:…"
  std::string settings_revision;     // the settings revision it pins with it, "sha256:…"
  std::string execution;             // "sandboxed-code" | "trusted-native" | "external-service"
};

// context.progress(value, total?, message?) of the running tool (guest core).
struct Progress {
  double progress = 0;
  std::optional<double> total;
  std::string message;  // may be empty
};

// Called on the call's own thread (or the pool's reader), as frames arrive,
// before call() returns; must be quick and must not call back into the Host.
struct CallEvents {
  std::function<void(const sandbox::LogEntry&)> on_log;  // console output and stderr lines
  std::function<void(const Progress&)> on_progress;
};

struct CallRequest {
  std::string tool;                                 // registry name, revision id or unique prefix (R4)
  json::Value arguments = json::Value::object();    // checked against the pinned revision's parameters
  std::chrono::milliseconds timeout{0};             // 0: Options::default_timeout
  sandbox::Mode mode = sandbox::Mode::retained;     // retained: the (revision, session) sandbox
  CallEvents events = {};
  sandbox::CancelToken cancel = {};                 // fire from any thread (H5)
  // A call task compiled already (invoke::plan_provider_call: a model's call
  // under a node of the tree) to run as is instead of compiling `tool` and
  // `arguments` at the root; its lineage is loaded and verified by run_call.
  std::optional<tasks::Task> task = std::nullopt;
};

// What a call returns: the stored call and result tasks, the pinned revision
// that ran and how the sandbox call ended (invoke.h). A tool that failed,
// timed out or was cancelled is a result here, not an Error.
using CallResult = invoke::Invocation;

// A registration with on_tools_changed(); dropping it unregisters (it may be
// dropped from any thread but the watcher's own call).
class Subscription {
 public:
  Subscription() = default;
  explicit Subscription(std::function<void()> cancel) : cancel_(std::move(cancel)) {}
  ~Subscription() { reset(); }
  Subscription(Subscription&& o) noexcept : cancel_(std::move(o.cancel_)) { o.cancel_ = nullptr; }
  Subscription& operator=(Subscription&& o) noexcept {
    if (this != &o) {
      reset();
      cancel_ = std::move(o.cancel_);
      o.cancel_ = nullptr;
    }
    return *this;
  }
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;
  void reset() {
    if (cancel_) cancel_();
    cancel_ = nullptr;
  }

 private:
  std::function<void()> cancel_;
};

class Host {
 public:
  // Opens the store (creating it, Store::open) and the pool. Errors: those of
  // Store::open; Errc::bad_usage for Options that cannot work (ask set,
  // zero timeouts).
  static Result<std::unique_ptr<Host>> open(Options options);
  ~Host();  // shutdown("shutdown")
  Host(const Host&) = delete;
  Host& operator=(const Host&) = delete;

  // Sessions. `label` is for people (e.g. "stdio", the client's name) and
  // appears nowhere in a decision. close_session() cancels the session's
  // running calls, destroys its retained sandboxes ("session_closed") and
  // returns once its calls have ended; an unknown id is ignored.
  SessionId open_session(std::string_view label);
  void close_session(const SessionId& session);
  std::size_t session_count() const;

  // The active registry tools, sorted by name, with the revisions a call by
  // name would pin now (H4, H6). Checks activations first (may notify).
  Result<std::vector<ToolInfo>> list_tools();

  // Compiles (tasks::compile: unknown tool Errc::not_found, Errc::ambiguous;
  // arguments against the schema Errc::invalid_arguments, `where` the JSON
  // pointer), pins, runs and stores one call in `session`. Other Errors:
  // Errc::bad_usage (unknown session, host shut down, timeout above
  // max_timeout), machinery errors of invoke::run_call. Safe from any thread.
  Result<CallResult> call(const SessionId& session, const CallRequest& request);

  // Activates `revision_ref` under `name` (invoke::activate: S3 retires the
  // superseded sandboxes of every session), then notifies watchers (H6).
  Result<store::Binding> activate(std::string_view name, std::string_view revision_ref);

  // Calls `watcher` (on the host's timer thread or the thread that saw the
  // change) whenever the set of active (name, revision) pairs changes. It
  // must be quick and must not call back into the Host.
  Subscription on_tools_changed(std::function<void()> watcher);

  // Compares the store's active bindings with the last seen ones now; true
  // (and watchers called) when they changed.
  bool check_activations();

  // Runs `body` with the host's own store connection, under the store mutex
  // (for the JSON API's reads and installs: tools show, task tree, audit).
  // Do not run sandbox calls inside it.
  template <typename F>
  auto with_store(F&& body) {
    StoreLock lock(*this);
    return body(lock.store());
  }

  // The pool, for inspection (sandboxes(), destructions()); calls go through call().
  const sandbox::Pool& pool() const;

  // Refuses new calls, cancels running ones, waits for them, destroys every
  // sandbox (recorded as `reason`) and writes the sandbox log. Idempotent;
  // from any thread but a call's own.
  void shutdown(std::string_view reason = "shutdown");
  bool shut_down() const;

 private:
  struct Impl;
  class StoreLock {
   public:
    explicit StoreLock(Host& host);
    ~StoreLock();
    StoreLock(const StoreLock&) = delete;
    StoreLock& operator=(const StoreLock&) = delete;
    store::Store& store();

   private:
    Host& host_;
  };
  explicit Host(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace taskyon::host
