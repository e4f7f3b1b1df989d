#include "taskyon/external/mcp.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "taskyon/base/line_reader.h"
#include "taskyon/base/sigpipe.h"
#include "taskyon/base/spawn.h"
#include "taskyon/registry/schema.h"

namespace taskyon::external {
namespace {

// The server's stderr as log entries, one per line (no line's '\n' kept).
void add_stderr_lines(std::vector<sandbox::LogEntry>& logs, std::string_view text) {
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    if (!line.empty()) logs.push_back({"stderr", std::string(line)});
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}


using json::Value;
using Clock = std::chrono::steady_clock;
constexpr std::size_t kMaxStderrBytes = 64u << 10;
constexpr const char* kProtocolVersion = "2025-06-18";

// How a session read ended when it produced no message.
enum class Stop { none, timeout, closed, malformed, cancelled };

// One running server: its pipes, and a deadline for everything it is asked.
class Session {
 public:
  ~Session() { stop(); }

  void set_deadline(Clock::time_point deadline) { deadline_ = deadline; }
  // A descriptor readable once the current operation is cancelled (CancelToken::fd), or -1.
  void set_cancel_fd(int fd) { cancel_fd_ = fd; }
  pid_t pid() const { return pid_; }
  // True while the server process runs and its pipes are open.
  bool alive() {
    if (pid_ <= 0 || in_ < 0 || out_ < 0) return false;
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || (r < 0 && errno == ECHILD)) {  // exited (or reaped by someone else)
      pid_ = -1;
      stop();
      return false;
    }
    pollfd p{out_, POLLIN, 0};  // its stdout closed (it is exiting): as good as dead
    if (::poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR)) && !(p.revents & POLLIN)) {
      stop();
      return false;
    }
    return true;
  }
  void clear_stderr() { stderr_.clear(); }

  Result<void> start(const McpServer& server, Clock::time_point deadline) {
    deadline_ = deadline;
    int in[2], out[2], err[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)
      return fail(Errc::internal, fmt::format("cannot create pipes: {}", std::strerror(errno)));
    in_ = in[1];
    out_ = out[0];
    err_ = err[0];
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err[1], 2);
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    if (!server.cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, server.cwd.c_str());
    const SpawnAttributes attr(POSIX_SPAWN_SETSID);
    std::vector<char*> argv;
    for (const auto& a : server.command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const char* path = std::getenv("PATH");
    std::string path_env = std::string("PATH=") + (path ? path : "/usr/bin:/bin");
    std::string lang_env = "LANG=C.UTF-8";
    char* envp[] = {path_env.data(), lang_env.data(), nullptr};
    const int rc = posix_spawnp(&pid_, argv[0], &fa, attr.get(), argv.data(), envp);
    posix_spawn_file_actions_destroy(&fa);
    ::close(in[0]);
    ::close(out[1]);
    ::close(err[1]);
    if (rc != 0) {
      pid_ = -1;
      return fail(Errc::bad_usage, fmt::format("cannot start the MCP server: {}", std::strerror(rc)), server.command[0]);
    }
    for (int fd : {in_, out_, err_}) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return {};
  }

  // Sends a request and waits for its response, answering server requests
  // with "method not found" and handing notifications to `on_notification`
  // (if given; else they are skipped).
  std::expected<Value, Stop> request(const std::string& method, Value params,
                                     const std::function<void(const Value&)>& on_notification = {}) {
    const auto id = ++next_id_;
    if (!send({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}}))
      return std::unexpected(Stop::closed);
    for (;;) {
      auto message = receive();
      if (!message) return std::unexpected(message.error());
      const auto& m = *message;
      if (m.contains("method")) {
        if (m.contains("id"))
          send({{"jsonrpc", "2.0"}, {"id", m["id"]}, {"error", {{"code", -32601}, {"message", "not supported"}}}});
        else if (on_notification)
          on_notification(m);
        continue;
      }
      if (m.contains("id") && m["id"] == id) return m;
    }
  }

  bool notify(const std::string& method) { return send({{"jsonrpc", "2.0"}, {"method", method}}); }

  // Ends the server: SIGKILL to its process group, then reaped.
  void stop() {
    for (int* fd : {&in_, &out_, &err_})
      if (*fd >= 0) ::close(std::exchange(*fd, -1));
    if (pid_ > 0) {
      ::kill(-pid_, SIGKILL);
      ::kill(pid_, SIGKILL);
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      pid_ = -1;
    }
  }

  std::string stderr_text() const { return stderr_; }

 private:
  bool send(const Value& message) {
    const auto line = message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    std::size_t done = 0;
    while (done < line.size()) {
      const ssize_t n = write_no_sigpipe(in_, line.data() + done, line.size() - done);  // a server gone: EPIPE, not SIGPIPE
      if (n > 0) {
        done += static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && errno == EAGAIN) {
        pollfd p{in_, POLLOUT, 0};
        if (wait(&p, 1) <= 0) return false;
        continue;
      }
      return false;
    }
    return true;
  }

  // poll() until the deadline: > 0 ready, 0 the deadline passed, < 0 failed.
  // The wait is rounded up so that poll never returns before the deadline
  // (a truncated wait used to end a moment early and read as "closed").
  int wait(pollfd* fds, nfds_t n) {
    for (;;) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline_ - Clock::now()).count();
      if (left <= 0) return 0;
      const int ready = ::poll(fds, n, static_cast<int>(std::min<long long>(left, INT_MAX)));
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0 && Clock::now() < deadline_) continue;
      return ready;
    }
  }

  std::expected<Value, Stop> receive() {
    for (;;) {
      if (auto line = reader_.next()) {
        auto v = json::parse(*line);
        if (!v || !v->is_object()) return std::unexpected(Stop::malformed);
        return *v;
      }
      if (reader_.overflowed()) return std::unexpected(Stop::malformed);
      pollfd fds[3] = {{out_, POLLIN, 0}, {err_, POLLIN, 0}, {cancel_fd_, POLLIN, 0}};
      if (Clock::now() >= deadline_) return std::unexpected(Stop::timeout);
      const int ready = wait(fds, 3);  // a negative fd is ignored by poll()
      if (ready == 0) return std::unexpected(Stop::timeout);
      if (ready < 0) return std::unexpected(Stop::closed);
      if (cancel_fd_ >= 0 && fds[2].revents) return std::unexpected(Stop::cancelled);
      char buf[65536];
      if (err_ >= 0 && fds[1].revents) {
        const ssize_t n = ::read(err_, buf, sizeof buf);
        if (n > 0 && stderr_.size() < kMaxStderrBytes)
          stderr_.append(buf, std::min<std::size_t>(static_cast<std::size_t>(n), kMaxStderrBytes - stderr_.size()));
        if (n == 0) ::close(std::exchange(err_, -1));
      }
      if (fds[0].revents) {
        const ssize_t n = ::read(out_, buf, sizeof buf);
        if (n == 0) return std::unexpected(Stop::closed);
        if (n > 0 && !reader_.feed({buf, static_cast<std::size_t>(n)})) return std::unexpected(Stop::malformed);
      }
    }
  }

  pid_t pid_ = -1;
  int in_ = -1, out_ = -1, err_ = -1;
  int cancel_fd_ = -1;
  Clock::time_point deadline_;
  LineReader reader_{kMaxMessageBytes};
  std::int64_t next_id_ = 0;
  std::string stderr_;
};

std::string describe(Stop stop) {
  switch (stop) {
    case Stop::timeout: return "did not answer before the timeout";
    case Stop::closed: return "exited or closed its output";
    case Stop::malformed: return "sent a message that is not JSON-RPC (or too large)";
    case Stop::cancelled: return "was still working when the call was cancelled";
    case Stop::none: break;
  }
  return "failed";
}

std::expected<Value, Stop> initialize(Session& s) {
  auto init = s.request("initialize", {{"protocolVersion", kProtocolVersion},
                                       {"capabilities", Value::object()},
                                       {"clientInfo", {{"name", "tycli"}, {"version", "0.1.0"}}}});
  if (!init) return init;
  if (!init->contains("result")) return std::unexpected(Stop::malformed);
  if (!s.notify("notifications/initialized")) return std::unexpected(Stop::closed);
  return init;
}

std::string error_text(const Value& result) {
  std::string text;
  for (const auto& c : result.value("content", Value::array()))
    if (c.is_object() && c.value("type", "") == "text" && c.contains("text") && c["text"].is_string())
      text += (text.empty() ? "" : "\n") + c["text"].get<std::string>();
  return text.empty() ? "the tool reported an error" : text;
}

}  // namespace

Result<std::vector<McpTool>> list_tools(const McpServer& server, std::chrono::milliseconds timeout) {
  Session s;
  if (auto r = s.start(server, Clock::now() + timeout); !r) return std::unexpected(r.error());
  const auto where = server.command.front();
  auto init = initialize(s);
  if (!init) return fail(Errc::io, fmt::format("the MCP server {} during initialize", describe(init.error())), where);
  std::vector<McpTool> tools;
  Value cursor;
  do {
    Value params = Value::object();
    if (!cursor.is_null()) params["cursor"] = cursor;
    auto page = s.request("tools/list", params);
    if (!page) return fail(Errc::io, fmt::format("the MCP server {} during tools/list", describe(page.error())), where);
    const auto& result = (*page)["result"];
    if (!result.is_object() || !result.contains("tools") || !result["tools"].is_array())
      return fail(Errc::invalid_json, "the MCP server answered tools/list without a tools array", where);
    for (const auto& t : result["tools"]) {
      if (!t.is_object() || !t.contains("name") || !t["name"].is_string() || !t.contains("inputSchema"))
        return fail(Errc::invalid_json, "the MCP server listed a tool without name or inputSchema", where);
      tools.push_back({t["name"], t.value("description", ""), t["inputSchema"], t.value("outputSchema", Value())});
    }
    cursor = result.value("nextCursor", Value());
  } while (!cursor.is_null());
  return tools;
}

namespace {

// tools/call on an initialized session. `keep`: the session stays running
// after a call that ended well (the kept-alive client); it is stopped after
// anything else, and always when `keep` is false.
// Hands a notifications/progress for `token` to events.on_progress, within
// the bounds of mcp.h CallEvents; anything else is skipped.
std::function<void(const Value&)> progress_handler(const CallEvents& events, const Value& token, std::size_t& frames) {
  if (!events.on_progress) return {};
  return [&events, token, &frames](const Value& m) {
    if (m.value("method", "") != "notifications/progress" || !m.contains("params") || !m["params"].is_object()) return;
    const Value& p = m["params"];
    if (p.value("progressToken", Value()) != token || !p.contains("progress") || !p["progress"].is_number()) return;
    if (frames >= sandbox::kMaxProgressFrames) return;
    ++frames;
    const double total = p.contains("total") && p["total"].is_number() ? p["total"].get<double>() : std::nan("");
    std::string message = p.contains("message") && p["message"].is_string() ? p["message"].get<std::string>() : "";
    if (message.size() > sandbox::kMaxProgressMessageBytes) {
      std::size_t n = sandbox::kMaxProgressMessageBytes;
      while (n > 0 && (static_cast<unsigned char>(message[n]) & 0xC0) == 0x80) --n;
      message.resize(n);
    }
    events.on_progress(p["progress"].get<double>(), total, message);
  };
}

sandbox::CallOutcome call_on(Session& s, const std::string& tool, const Value& arguments, const Value& output_schema,
                             Clock::time_point started, bool keep, bool* failed, const CallEvents& events) {
  sandbox::CallOutcome out;
  const auto finish = [&](sandbox::Status status, std::string error) {
    out.status = status;
    out.error = std::move(error);
    const bool broken = status == sandbox::Status::timeout || status == sandbox::Status::crashed ||
                        status == sandbox::Status::protocol_error || status == sandbox::Status::cancelled;
    if (failed) *failed = broken;
    if (!keep || broken) s.stop();
    add_stderr_lines(out.logs, s.stderr_text());
    s.clear_stderr();
    out.duration = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
    return out;
  };
  const auto stopped = [&](Stop stop, const char* during) {
    const auto status = stop == Stop::timeout     ? sandbox::Status::timeout
                        : stop == Stop::closed    ? sandbox::Status::crashed
                        : stop == Stop::cancelled ? sandbox::Status::cancelled
                                                  : sandbox::Status::protocol_error;
    return finish(status, fmt::format("the MCP server {} during {}", describe(stop), during));
  };
  Value params = {{"name", tool}, {"arguments", arguments}};
  const Value token = "tycli-progress";
  if (events.on_progress) params["_meta"] = {{"progressToken", token}};
  std::size_t frames = 0;
  auto reply = s.request("tools/call", std::move(params), progress_handler(events, token, frames));
  if (!reply) return stopped(reply.error(), "tools/call");
  if (reply->contains("error"))
    return finish(sandbox::Status::tool_error,
                  fmt::format("the MCP server refused the call: {}", (*reply)["error"].value("message", "no message")));
  const auto& result = (*reply)["result"];
  if (!result.is_object() || !result.contains("content") || !result["content"].is_array())
    return finish(sandbox::Status::protocol_error, "the MCP server answered tools/call without a content array");
  if (result.value("isError", false)) return finish(sandbox::Status::tool_error, error_text(result));
  out.value = {{"content", result["content"]}};
  if (result.contains("structuredContent")) out.value["structuredContent"] = result["structuredContent"];
  if (output_schema.is_object()) {
    if (!result.contains("structuredContent"))
      return finish(sandbox::Status::protocol_error, "the tool declares an outputSchema but returned no structuredContent");
    if (auto valid = registry::validate_arguments(output_schema, result["structuredContent"]); !valid)
      return finish(sandbox::Status::protocol_error,
                    "the result does not match the tool's outputSchema: " + valid.error().message);
  }
  return finish(sandbox::Status::ok, "");
}

sandbox::CallOutcome failed_start(Stop stop, Session& s, Clock::time_point started) {
  sandbox::CallOutcome out;
  out.fresh_sandbox = true;
  out.status = stop == Stop::timeout     ? sandbox::Status::timeout
               : stop == Stop::closed    ? sandbox::Status::crashed
               : stop == Stop::cancelled ? sandbox::Status::cancelled
                                         : sandbox::Status::protocol_error;
  out.error = fmt::format("the MCP server {} during initialize", describe(stop));
  s.stop();
  add_stderr_lines(out.logs, s.stderr_text());
  out.duration = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
  return out;
}

std::string server_key(const McpServer& server) {
  std::string key = server.cwd;
  for (const auto& a : server.command) {
    key += '\0';
    key += a;
  }
  return key;
}

}  // namespace

Result<sandbox::CallOutcome> call_tool(const McpServer& server, const std::string& tool, const Value& arguments,
                                       const Value& output_schema, std::chrono::milliseconds timeout,
                                       const CallEvents& events) {
  const auto started = Clock::now();
  Session s;
  if (auto r = s.start(server, started + timeout); !r) return std::unexpected(r.error());
  auto init = initialize(s);
  if (!init) return failed_start(init.error(), s, started);
  auto out = call_on(s, tool, arguments, output_schema, started, /*keep=*/false, nullptr, events);
  out.fresh_sandbox = true;
  return out;
}

// How often a call queued behind another on the same server looks at its cancel token.
constexpr std::chrono::milliseconds kQueueSlice{10};

struct McpClients::Impl {
  struct Server {
    std::timed_mutex mu;  // one call at a time per server (one session); waited for with a bound
    std::unique_ptr<Session> session;  // guarded by `mu` (the per-server lock)
    std::size_t starts = 0;            // guarded by `mu`
    // The running server's pid, 0 when none: written under `mu` whenever
    // `session` changes, read by running()/pids() without `mu`, which a call
    // may hold for its whole timeout.
    std::atomic<long> pid{0};
    void publish() { pid.store(session ? static_cast<long>(session->pid()) : 0); }
  };
  mutable std::mutex mu;
  std::map<std::string, std::shared_ptr<Server>> servers;
};

McpClients::McpClients() : impl_(std::make_unique<Impl>()) {}
McpClients::~McpClients() = default;  // each Session's destructor stops its server (SIGKILL, reaped)

Result<sandbox::CallOutcome> McpClients::call_tool(const McpServer& server, const std::string& tool,
                                                   const Value& arguments, const Value& output_schema,
                                                   std::chrono::milliseconds timeout,
                                                   const sandbox::CancelToken& cancel, const CallEvents& events) {
  const auto started = Clock::now();
  std::shared_ptr<Impl::Server> entry;
  {
    std::lock_guard lock(impl_->mu);
    auto& e = impl_->servers[server_key(server)];
    if (!e) e = std::make_shared<Impl::Server>();
    entry = e;
  }
  // A call queued behind another one on this server waits no longer than its
  // own deadline and ends as soon as it is cancelled: the wait is taken in
  // short slices so that the cancel token is looked at between them.
  std::unique_lock call_lock(entry->mu, std::defer_lock);
  const auto deadline = started + timeout;
  while (!call_lock.try_lock_until(std::min(deadline, Clock::now() + kQueueSlice))) {
    const bool cancelled = cancel.cancelled();
    if (!cancelled && Clock::now() < deadline) continue;
    sandbox::CallOutcome out;
    out.status = cancelled ? sandbox::Status::cancelled : sandbox::Status::timeout;
    out.duration = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
    out.error = cancelled ? fmt::format("the call was cancelled after {} ms while it waited for the MCP server, which "
                                        "was busy with another call (calls to one server run one at a time)",
                                        out.duration.count())
                          : fmt::format("the call timed out after {} ms while it waited for the MCP server, which "
                                        "was busy with another call (calls to one server run one at a time)",
                                        out.duration.count());
    return out;  // the server was not touched: it keeps running the other call
  }
  bool fresh = false;
  if (!entry->session || !entry->session->alive()) {  // first use, or it died: (re)started
    entry->session = std::make_unique<Session>();
    fresh = true;
    ++entry->starts;
    entry->session->set_cancel_fd(cancel.fd());
    if (auto r = entry->session->start(server, started + timeout); !r) {
      entry->session.reset();
      entry->publish();
      return std::unexpected(r.error());
    }
    auto init = initialize(*entry->session);
    if (!init) {
      auto out = failed_start(init.error(), *entry->session, started);
      entry->session.reset();
      entry->publish();
      return out;
    }
    entry->publish();
  }
  Session& s = *entry->session;
  s.set_deadline(started + timeout);
  s.set_cancel_fd(cancel.fd());
  bool failed = false;
  auto out = call_on(s, tool, arguments, output_schema, started, /*keep=*/true, &failed, events);
  s.set_cancel_fd(-1);
  out.fresh_sandbox = fresh;
  if (failed) {
    out.destroyed = std::string(sandbox::status_name(out.status));
    entry->session.reset();
    entry->publish();
  }
  return out;
}

std::size_t McpClients::running() const {
  std::lock_guard lock(impl_->mu);
  std::size_t n = 0;
  for (const auto& [_, e] : impl_->servers) n += e->pid.load() > 0 ? 1 : 0;
  return n;
}

std::vector<int> McpClients::pids() const {
  std::lock_guard lock(impl_->mu);
  std::vector<int> out;
  for (const auto& [_, e] : impl_->servers)
    if (const long pid = e->pid.load(); pid > 0) out.push_back(static_cast<int>(pid));
  return out;
}

}  // namespace taskyon::external
