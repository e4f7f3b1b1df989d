// tycli mcp: the long-lived host (taskyon/host) as an MCP server over stdio
// (taskyon/mcp/server.h, docs/mcp.md). Newline-delimited JSON-RPC 2.0 on
// stdin/stdout; stdout carries nothing but protocol messages, diagnostics go
// to stderr. One stdio connection is one session (H3). stdin EOF ends it once
// the calls already received have answered; SIGINT, SIGTERM or SIGHUP end it
// at once: running calls are cancelled and stored as Cancelled. Either way
// every sandbox is destroyed and written to the sandbox log.
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "cli.h"
#include "signals.h"
#include "taskyon/base/sigpipe.h"
#include "taskyon/host/host.h"
#include "taskyon/mcp/server.h"
#include "taskyon/sandbox/runtime.h"

namespace tycli {
namespace {

namespace sandbox = taskyon::sandbox;

struct McpArgs {
  long long timeout_ms = 10000;
  std::string js_runtime;
  long long memory_budget_mib = -1;
  long long poll_ms = 500;
  long long prestart = 0;  // sandbox::RuntimeConfig::prestart (apply_prestart)
};

// stdin split into lines of at most mcp::kMaxMessageBytes. A longer line is
// never held: its bytes are dropped up to its newline, and it is handed on as
// one oversized message (answered -32600), so the session goes on with the
// next line. At most one line's bytes (the limit) are held at a time.
class StdinLines {
 public:
  template <class OnLine, class OnOversized>
  void feed(std::string_view bytes, OnLine&& on_line, OnOversized&& on_oversized) {
    while (!bytes.empty()) {
      const std::size_t nl = bytes.find('\n');
      const std::string_view part = bytes.substr(0, nl);
      if (!dropping_ && pending_.size() + part.size() > taskyon::mcp::kMaxMessageBytes) {
        dropping_ = true;
        std::string().swap(pending_);
      }
      if (!dropping_) pending_.append(part);
      if (nl == std::string_view::npos) return;
      bytes.remove_prefix(nl + 1);
      if (dropping_) {
        dropping_ = false;
        on_oversized();
      } else {
        on_line(pending_);
        pending_.clear();
      }
    }
  }

 private:
  std::string pending_;    // the line so far
  bool dropping_ = false;  // the line so far is over the limit: dropped up to its newline
};

// Writes all of `bytes` to fd 1; false when stdout is gone: a client that
// went away ends the loop cleanly (EPIPE) instead of killing tycli
// (base/sigpipe.h).
bool write_all(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = taskyon::write_no_sigpipe(STDOUT_FILENO, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

int serve_stdio(Globals& g, const McpArgs& a) {
  if (a.timeout_ms <= 0)
    return report(g, {taskyon::Errc::bad_usage, "--timeout must be a positive number of milliseconds", "--timeout"});
  if (a.poll_ms < 0)
    return report(g, {taskyon::Errc::bad_usage, "--activation-poll must be 0 or more milliseconds", "--activation-poll"});
  auto capabilities = capability_options(g);
  if (!capabilities) return report(g, capabilities.error());
  capabilities->ask = nullptr;  // stdin is the protocol: nobody can be asked
  taskyon::host::Options options;
  options.db_path = g.db_path;
  options.capabilities = std::move(*capabilities);
  options.default_timeout = std::chrono::milliseconds(a.timeout_ms);
  options.max_timeout = std::max(options.max_timeout, options.default_timeout);
  options.activation_poll = std::chrono::milliseconds(a.poll_ms);
  if (auto selected = sandbox::select_runtime(options.runtime, a.js_runtime, sandbox::config_file_path()); !selected)
    return report(g, selected.error());
  if (auto budget = apply_memory_budget(options.runtime, a.memory_budget_mib); !budget)
    return report(g, budget.error());
  if (auto prestart = apply_prestart(options.runtime, a.prestart); !prestart) return report(g, prestart.error());
  auto host = taskyon::host::Host::open(std::move(options));
  if (!host) return report(g, host.error());

  int wake[2];
  if (::pipe(wake) != 0) return report(g, {taskyon::Errc::internal, "pipe() failed", {}});
  Interruption interruption([&](int) {
    const char byte = 1;
    (void)!::write(wake[1], &byte, 1);
  });

  std::atomic<bool> stdout_gone{false};  // written under the Connection's sink lock, read by this loop
  {
    taskyon::mcp::Connection connection(
        **host,
        [&stdout_gone](taskyon::mcp::Outgoing out) {  // serialized by the Connection
          if (stdout_gone) return;
          std::string line = out.message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
          line += '\n';
          if (!write_all(line)) stdout_gone = true;
        },
        {}, "stdio");
    std::cerr << fmt::format("tycli mcp: serving MCP {} on stdio (session {})\n", taskyon::mcp::kLatestProtocolVersion,
                             connection.session());
    StdinLines lines;
    std::string chunk(64 * 1024, '\0');
    bool stdin_closed = false;
    for (;;) {
      pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {wake[0], POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      if (fds[1].revents) break;  // a signal
      if (!fds[0].revents) continue;
      const ssize_t n = ::read(STDIN_FILENO, chunk.data(), chunk.size());
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {  // EOF (or a read error): no more requests
        stdin_closed = true;
        break;
      }
      lines.feed(
          std::string_view(chunk.data(), static_cast<std::size_t>(n)),
          [&](std::string_view line) {
            if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
            if (line.find_first_not_of(" \t") == std::string_view::npos) return;
            connection.receive(line);
          },
          [&] { connection.receive_oversized(); });
      if (stdout_gone) break;
    }
    // Closed stdin ends the session, but the calls it already sent still
    // answer (each within its own timeout) before the session closes: a
    // client that writes its requests and closes its end (`printf … | tycli
    // mcp`) loses nothing. A client gone altogether (its end of the stdout
    // pipe closed too: POLLERR there), a signal, or a failed write cancels
    // them at once instead (H5: a disconnect destroys the running call's sandbox).
    if (stdin_closed && !stdout_gone && connection.running_calls() > 0) {
      std::cerr << fmt::format("tycli mcp: stdin closed; finishing {} running call(s) first (a signal cancels them)\n",
                               connection.running_calls());
      while (connection.running_calls() > 0 && !stdout_gone) {
        pollfd waits[2] = {{wake[0], POLLIN, 0}, {STDOUT_FILENO, 0, 0}};
        if (::poll(waits, 2, 20) <= 0) continue;
        if (waits[1].revents & (POLLERR | POLLHUP)) stdout_gone = true;
        break;
      }
    }
    // A signal ends the host first, so every sandbox, a running call's too, is
    // recorded "interrupted" as `tycli call` and `tycli serve` record one;
    // the calls it ends still answer their clients (isError, cancelled).
    if (interruption.signal()) (*host)->shutdown("interrupted");
    connection.close();  // H5: running calls cancelled (stored as Cancelled), the session's sandboxes destroyed
  }
  (*host)->shutdown(interruption.signal() ? "interrupted" : "shutdown");
  ::close(wake[0]);
  ::close(wake[1]);
  if (int signal = interruption.signal()) {
    std::cerr << fmt::format("tycli mcp: stopped by {}\n", Interruption::name(signal));
    return Interruption::exit_code(signal);
  }
  return kExitOk;
}

}  // namespace

void add_mcp_command(CLI::App& app, Globals& g) {
  auto a = std::make_shared<McpArgs>();
  auto* c = app.add_subcommand("mcp", "serve the active tools as an MCP server on stdin/stdout (docs/mcp.md)");
  c->add_option("--timeout", a->timeout_ms, "per call, in ms (default 10000)");
  c->add_option("--js-runtime", a->js_runtime,
                "node (default) or deno; overrides \"jsRuntime\" in $TASKYON_HOME/config.json")
      ->check(CLI::IsMember({"node", "deno"}));
  add_memory_budget_option(*c, a->memory_budget_mib);
  add_prestart_option(*c, a->prestart);
  c->add_option("--activation-poll", a->poll_ms,
                "how often to look for activation changes made by other processes, in ms (default 500; 0: only "
                "before tools/list)");
  c->callback([&g, a] { g.exit_code = guarded(g, [&] { return serve_stdio(g, *a); }); });
}

}  // namespace tycli
