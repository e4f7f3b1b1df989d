#include "taskyon/host/host.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "taskyon/external/mcp.h"
#include "taskyon/invoke/runtime_record.h"
#include "taskyon/native/native.h"
#include "taskyon/native/python.h"
#include "taskyon/store/sandbox_log.h"
#include "taskyon/tasks/compiler.h"

namespace taskyon::host {
namespace {

using Activations = std::vector<std::pair<std::string, std::string>>;  // (name, active revision), sorted

struct SessionState {
  std::string label;
  std::unique_ptr<native::Session> natives;  // nothing approved: no one can be asked (no terminal)
  std::map<std::uint64_t, sandbox::CancelToken> running;  // the session's calls in progress
};

}  // namespace

struct Host::Impl {
  explicit Impl(Options o, store::Store s) : options(std::move(o)), store(std::move(s)) {}

  Options options;

  // The host's own connection (list_tools, activation polling, the sandbox
  // log, with_store), guarded by store_mu.
  std::mutex store_mu;
  store::Store store;

  // Connections lent to calls, one per call at a time (never shared between threads).
  std::mutex conn_mu;
  std::vector<std::unique_ptr<store::Store>> idle_connections;

  // Destructions the pool reported, waiting to be written to the sandbox log.
  std::mutex pending_mu;
  std::vector<sandbox::Destruction> pending;

  std::unique_ptr<sandbox::Pool> pool;
  std::unique_ptr<external::McpClients> mcp_clients;  // Options::keep_mcp_servers

  mutable std::mutex sessions_mu;
  std::condition_variable sessions_cv;  // a call ended
  std::map<SessionId, SessionState, std::less<>> sessions;
  std::size_t running_calls = 0;  // guarded by sessions_mu, over every session
  std::uint64_t next_call = 1;    // guarded by sessions_mu
  std::atomic<bool> shut_down{false};

  std::mutex watchers_mu;
  std::map<std::uint64_t, std::function<void()>> watchers;
  std::uint64_t next_watcher = 1;
  std::mutex seen_mu;
  std::optional<Activations> seen;  // the activations last compared

  std::mutex timer_mu;
  std::condition_variable timer_cv;
  bool timer_stop = false;
  std::thread timer;

  Result<std::unique_ptr<store::Store>> borrow() {
    {
      std::lock_guard lock(conn_mu);
      if (!idle_connections.empty()) {
        auto conn = std::move(idle_connections.back());
        idle_connections.pop_back();
        return conn;
      }
    }
    auto opened = store::Store::open(options.db_path);
    if (!opened) return std::unexpected(std::move(opened.error()));
    return std::make_unique<store::Store>(std::move(*opened));
  }
  // The caller's thread may end after the call: its connection is parked for
  // the next borrower's thread (store::Store::park).
  void give_back(std::unique_ptr<store::Store> conn) {
    conn->park();
    std::lock_guard lock(conn_mu);
    if (idle_connections.size() < 8) idle_connections.push_back(std::move(conn));
  }

  // Compiles a call with no arguments of each active tool (the first
  // kWarmedTools by name) and drops it: a compile error (a missing required
  // argument, a tampered revision) is the call's to report, not the host's.
  // Then prepares the statement a call is stored with.
  void warm(store::Store& conn) {
    constexpr std::size_t kWarmedTools = 64;
    Activations active;
    {
      std::lock_guard lock(seen_mu);
      if (seen) active = *seen;
    }
    if (active.size() > kWarmedTools) active.resize(kWarmedTools);
    for (const auto& [name, revision] : active)
      (void)tasks::compile(tasks::function_call(name, json::Value::object()), {{}, conn.resolver()});
    (void)conn.prepare_task_writes();  // a failure is the first call's to report
  }

  // Writes the pending destructions to the sandbox log (under store_mu).
  void flush() {
    std::vector<sandbox::Destruction> records;
    {
      std::lock_guard lock(pending_mu);
      records.swap(pending);
    }
    if (records.empty()) return;
    std::lock_guard lock(store_mu);
    for (const auto& d : records)
      if (auto r = store::record_destruction(store, d.revision, d.name, d.reason, d.pid); !r)
        std::fprintf(stderr, "taskyon: warning: the sandbox log could not be written: %s\n", r.error().message.c_str());
  }

  Result<Activations> read_activations() {  // under store_mu
    auto tools = store.tools();
    if (!tools) return std::unexpected(std::move(tools.error()));
    Activations out;
    for (const auto& t : *tools)
      if (!t.active_revision.empty()) out.emplace_back(t.name, t.active_revision);
    std::sort(out.begin(), out.end());
    return out;
  }

  // Compares with the activations seen last; on a change, S3 (the pool's
  // sandboxes of a superseded revision are destroyed, also when another
  // process activated it) and H6 (watchers notified).
  bool compare(const Activations& now) {
    bool changed = false;
    Activations before;
    {
      std::lock_guard lock(seen_mu);
      changed = seen.has_value() && *seen != now;
      if (seen) before = *seen;
      seen = now;
    }
    if (!changed) return false;
    for (const auto& [name, revision] : now)
      if (std::find(before.begin(), before.end(), std::make_pair(name, revision)) == before.end())
        pool->retire_superseded(name, revision);
    flush();
    notify();
    return true;
  }

  void notify() {
    std::vector<std::function<void()>> copy;
    {
      std::lock_guard lock(watchers_mu);
      for (const auto& [_, w] : watchers) copy.push_back(w);
    }
    for (const auto& w : copy) w();
  }

  bool check() {
    Result<Activations> now;
    {
      std::lock_guard lock(store_mu);
      now = read_activations();
    }
    if (!now) return false;  // a busy or broken store: compared again next time
    return compare(*now);
  }

  void run_timer() {
    std::unique_lock lock(timer_mu);
    while (!timer_stop) {
      timer_cv.wait_for(lock, options.activation_poll, [&] { return timer_stop; });
      if (timer_stop) break;
      lock.unlock();
      check();
      lock.lock();
    }
  }
};

Host::Host(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<Host>> Host::open(Options options) {
  if (options.capabilities.ask)
    return fail(Errc::bad_usage, "a long-lived host cannot ask a person for grants: it has no terminal (give --ask only to tycli call or tycli run)");
  if (options.default_timeout.count() <= 0 || options.max_timeout < options.default_timeout)
    return fail(Errc::bad_usage, "the host's default timeout must be positive and at most its maximum timeout");
  if (options.db_path.empty()) {
    auto path = store::default_db_path();
    if (!path) return std::unexpected(std::move(path.error()));
    options.db_path = *path;
  }
  auto st = store::Store::open(options.db_path);
  if (!st) return std::unexpected(std::move(st.error()));
  auto impl = std::make_unique<Impl>(std::move(options), std::move(*st));
  impl->pool = std::make_unique<sandbox::Pool>(impl->options.runtime);
  if (impl->options.keep_mcp_servers) impl->mcp_clients = std::make_unique<external::McpClients>();
  Impl* raw = impl.get();
  impl->pool->on_destruction([raw](const sandbox::Destruction& d) {
    std::lock_guard lock(raw->pending_mu);
    raw->pending.push_back(d);
  });
  {
    std::lock_guard lock(raw->store_mu);
    if (auto now = raw->read_activations()) raw->seen = std::move(*now);
  }
  if (raw->options.activation_poll.count() > 0) raw->timer = std::thread([raw] { raw->run_timer(); });
  // What the first call would otherwise do once, done here: open the
  // connection calls borrow, compile a call of each active tool on it (up to
  // kWarmedTools; the revision is read and verified, its parameter schema
  // compiled, both kept per process, and the statements a call reads and is
  // stored with are prepared), and ask the JS runtime's version for the
  // runtime record.
  if (auto conn = raw->borrow()) {
    raw->warm(**conn);
    raw->give_back(std::move(*conn));
  }
  invoke::prepare_runtime_record(raw->options.runtime);
  return std::unique_ptr<Host>(new Host(std::move(impl)));
}

Host::~Host() { shutdown("shutdown"); }

SessionId Host::open_session(std::string_view label) {
  static std::atomic<std::uint64_t> counter{0};
  std::random_device rd;
  const std::uint64_t id = (static_cast<std::uint64_t>(rd()) << 32 ^ rd()) + counter.fetch_add(1);
  SessionId session = fmt::format("s-{:016x}", id);
  SessionState state;
  state.label = std::string(label);
  state.natives = std::make_unique<native::Session>(native::python::session_settings(false, ""));
  std::lock_guard lock(impl_->sessions_mu);
  impl_->sessions.emplace(session, std::move(state));
  return session;
}

void Host::close_session(const SessionId& session) {
  {
    std::unique_lock lock(impl_->sessions_mu);
    auto it = impl_->sessions.find(session);
    if (it == impl_->sessions.end()) return;
    for (auto& [_, token] : it->second.running) token.cancel();
    impl_->sessions_cv.wait(lock, [&] { return it->second.running.empty(); });
    impl_->sessions.erase(it);
  }
  impl_->pool->close_session(session, "session_closed");
  impl_->flush();
}

std::size_t Host::session_count() const {
  std::lock_guard lock(impl_->sessions_mu);
  return impl_->sessions.size();
}

Result<std::vector<ToolInfo>> Host::list_tools() {
  std::vector<ToolInfo> out;
  Activations now;
  {
    std::lock_guard lock(impl_->store_mu);
    auto read = impl_->read_activations();
    if (!read) return std::unexpected(std::move(read.error()));
    now = std::move(*read);
    auto resolve = impl_->store.resolver();
    for (const auto& [name, revision] : now) {
      auto tool = resolve(revision);  // the revision the binding points at, with its settings revision
      if (!tool) return std::unexpected(std::move(tool.error()));
      const auto& m = tool->manifest;
      ToolInfo info;
      info.name = m.name;
      info.description = m.description;
      info.input_schema = m.parameters;
      info.output_schema = json::Value();
      if (m.service.is_object() && m.service.contains("mcp") && m.service["mcp"].contains("outputSchema"))
        info.output_schema = m.service["mcp"]["outputSchema"];
      info.revision = tool->revision;
      info.settings_revision = tool->settings_revision;
      info.execution = std::string(registry::execution_name(m.execution));
      out.push_back(std::move(info));
    }
  }
  impl_->compare(now);
  return out;
}

Result<CallResult> Host::call(const SessionId& session, const CallRequest& request) {
  Impl& im = *impl_;
  if (im.shut_down.load()) return fail(Errc::bad_usage, "the host is shutting down; no new calls are taken");
  const auto timeout = request.timeout.count() == 0 ? im.options.default_timeout : request.timeout;
  if (timeout.count() < 0 || timeout > im.options.max_timeout)
    return fail(Errc::bad_usage,
                fmt::format("the timeout must be between 1 and {} ms", im.options.max_timeout.count()), "timeout");
  std::uint64_t call_no = 0;
  native::Session* natives = nullptr;
  {
    std::lock_guard lock(im.sessions_mu);
    auto it = im.sessions.find(session);
    if (it == im.sessions.end()) return fail(Errc::bad_usage, "unknown or closed session", session);
    call_no = im.next_call++;
    it->second.running.emplace(call_no, request.cancel);
    natives = it->second.natives.get();
    ++im.running_calls;
  }
  struct Done {  // unregisters the call however it ends
    Impl& im;
    const SessionId& session;
    std::uint64_t call_no;
    ~Done() {
      {
        std::lock_guard lock(im.sessions_mu);
        if (auto it = im.sessions.find(session); it != im.sessions.end()) it->second.running.erase(call_no);
        --im.running_calls;
      }
      im.sessions_cv.notify_all();
    }
  } done{im, session, call_no};
  if (im.shut_down.load()) request.cancel.cancel();  // shutdown() ran between the check and the registration

  auto conn = im.borrow();
  if (!conn) return std::unexpected(std::move(conn.error()));
  store::Store& st = **conn;
  std::optional<tasks::Task> given = request.task;
  std::optional<tasks::ResolvedTool> resolved;  // what compile read, not read again
  if (!given) {
    auto compiled = tasks::compile(tasks::function_call(request.tool, request.arguments), {{}, st.resolver()});
    if (!compiled) {
      im.give_back(std::move(*conn));
      return std::unexpected(std::move(compiled.error()));
    }
    given = std::move(compiled->task);
    if (compiled->tool) resolved = std::move(compiled->tool->tool);
  }
  invoke::Options options{timeout, request.mode};
  options.capabilities = im.options.capabilities;
  options.cancel = request.cancel;
  options.natives = natives;
  options.session = session;
  options.mcp_clients = im.mcp_clients.get();
  if (request.events.on_log) options.on_log = request.events.on_log;
  if (request.events.on_progress)
    options.on_progress = [&request](double value, double total, std::string_view message) {
      Progress p;
      p.progress = value;
      if (!std::isnan(total)) p.total = total;
      p.message = std::string(message);
      request.events.on_progress(p);
    };
  options.refill_later = true;  // the spare this call takes is replaced once it is stored
  auto inv = invoke::run_call(st, *im.pool, *given, options, std::move(resolved));
  im.give_back(std::move(*conn));
  im.pool->refill();
  im.flush();
  return inv;
}

Result<store::Binding> Host::activate(std::string_view name, std::string_view revision_ref) {
  Result<store::Binding> binding;
  {
    std::lock_guard lock(impl_->store_mu);
    binding = invoke::activate(impl_->store, *impl_->pool, name, revision_ref);
  }
  impl_->flush();
  if (binding) impl_->check();
  return binding;
}

Subscription Host::on_tools_changed(std::function<void()> watcher) {
  std::uint64_t id = 0;
  {
    std::lock_guard lock(impl_->watchers_mu);
    id = impl_->next_watcher++;
    impl_->watchers.emplace(id, std::move(watcher));
  }
  Impl* im = impl_.get();
  return Subscription([im, id] {
    std::lock_guard lock(im->watchers_mu);
    im->watchers.erase(id);
  });
}

bool Host::check_activations() { return impl_->check(); }

const sandbox::Pool& Host::pool() const { return *impl_->pool; }

void Host::shutdown(std::string_view reason) {
  Impl& im = *impl_;
  if (im.shut_down.exchange(true)) return;
  {
    std::lock_guard lock(im.timer_mu);
    im.timer_stop = true;
  }
  im.timer_cv.notify_all();
  if (im.timer.joinable()) im.timer.join();
  // Every sandbox of every session, recorded as `reason` (a running call's
  // too, as tycli call logs a signal's: the pool is marked before the calls'
  // tokens are cancelled); then the callers' threads are waited for.
  im.pool->interrupt(reason, [&] {
    std::lock_guard lock(im.sessions_mu);
    for (auto& [_, s] : im.sessions)
      for (auto& [__, token] : s.running) token.cancel();
  });
  {
    std::unique_lock lock(im.sessions_mu);
    im.sessions_cv.wait(lock, [&] { return im.running_calls == 0; });
    im.sessions.clear();
  }
  im.mcp_clients.reset();  // every kept MCP server stopped
  im.flush();
  {
    std::lock_guard lock(im.watchers_mu);
    im.watchers.clear();
  }
}

bool Host::shut_down() const { return impl_->shut_down.load(); }

Host::StoreLock::StoreLock(Host& host) : host_(host) { host_.impl_->store_mu.lock(); }
Host::StoreLock::~StoreLock() { host_.impl_->store_mu.unlock(); }
store::Store& Host::StoreLock::store() { return host_.impl_->store; }

}  // namespace taskyon::host
