// tycli serve [--port N] [--token-file PATH] [--print-token] [--page DIR]: the long-lived
// host over HTTP on 127.0.0.1 (DESIGN §8; docs/serve.md). The transport and
// its H1/H2 rules are taskyon/http/server.h, the /v1 API taskyon/http/api.h.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "cli.h"
#include "signals.h"
#include "taskyon/host/host.h"
#include "taskyon/http/api.h"
#include "taskyon/http/mcp_http.h"
#include "taskyon/http/page.h"
#include "taskyon/http/runs.h"
#include "taskyon/http/server.h"
#include "taskyon/sandbox/runtime.h"

namespace tycli {
namespace {

struct ServeArgs {
  int port = 0;
  std::string token_file;  // empty: serve.token beside the store
  bool print_token = false;
  long long max_body_bytes = 8 << 20;
  long long max_concurrent_calls = 4;
  long long timeout_ms = 10000;
  std::string js_runtime;
  long long memory_budget_mib = -1;
  long long max_sandboxes = 0;  // 0: the pool's default (sandbox::RuntimeConfig::max_live)
  long long prestart = 0;       // sandbox::RuntimeConfig::prestart: started, not yet loaded sandboxes kept ready
  std::string page_root;        // --page: a browser host page's files under /page/TOKEN/ (http/page.h)
  std::string page_start = "index.html";
};

taskyon::Result<std::string> store_path(const Globals& g) {
  if (!g.db_path.empty()) return g.db_path;
  return taskyon::store::default_db_path();
}

int serve(Globals& g, const ServeArgs& a) {
  using taskyon::Errc;
  if (a.max_body_bytes < 1024 || a.max_body_bytes > (64ll << 20))
    return report(g, {Errc::bad_usage, "--max-body must be 1024..67108864 bytes", "--max-body"});
  if (a.max_concurrent_calls < 1 || a.max_concurrent_calls > 256)
    return report(g, {Errc::bad_usage, "--max-concurrent-calls must be 1..256", "--max-concurrent-calls"});
  if (a.timeout_ms <= 0) return report(g, {Errc::bad_usage, "--timeout must be a positive number of ms", "--timeout"});
  auto capabilities = capability_options(g);
  if (!capabilities) return report(g, capabilities.error());
  capabilities->ask = {};  // a server has no terminal to ask at
  auto db = store_path(g);
  if (!db) return report(g, db.error());

  taskyon::host::Options core;
  core.db_path = *db;
  core.capabilities = *capabilities;
  core.default_timeout = std::chrono::milliseconds(a.timeout_ms);
  core.max_timeout = std::max(core.max_timeout, core.default_timeout);
  if (auto selected = taskyon::sandbox::select_runtime(core.runtime, a.js_runtime, taskyon::sandbox::config_file_path());
      !selected)
    return report(g, selected.error());
  if (auto budget = apply_memory_budget(core.runtime, a.memory_budget_mib); !budget) return report(g, budget.error());
  if (a.max_sandboxes < 0 || a.max_sandboxes > 1024)
    return report(g, {Errc::bad_usage, "--max-sandboxes must be 0 (the default) or 1..1024", "--max-sandboxes"});
  if (a.max_sandboxes > 0) core.runtime.max_live = static_cast<std::size_t>(a.max_sandboxes);
  if (auto prestart = apply_prestart(core.runtime, a.prestart); !prestart) return report(g, prestart.error());
  const auto max_wait = core.max_timeout + std::chrono::seconds(30);
  const auto default_timeout = core.default_timeout, max_timeout = core.max_timeout;
  auto host = taskyon::host::Host::open(std::move(core));
  if (!host) return report(g, host.error());
  // The browser host's records (its runs, egress fetches, sandbox log) go to one
  // Store opened here: each HTTP thread keeps its own connection of it.
  auto opened = taskyon::store::Store::open(*db);
  if (!opened) return report(g, opened.error());
  auto records = std::make_shared<taskyon::store::Store>(std::move(*opened));
  records->park();  // its first connection goes to the first HTTP thread that uses it

  // H1: a fresh token per run, in a 0600 file; the token itself is printed only when asked.
  auto token = taskyon::http::new_token();
  if (!token) return report(g, token.error());
  const std::string token_file =
      a.token_file.empty() ? (std::filesystem::path(*db).parent_path() / "serve.token").string() : a.token_file;

  taskyon::http::Options options;
  options.port = a.port;
  options.token = *token;
  options.max_body_bytes = static_cast<std::size_t>(a.max_body_bytes);
  // Room for the /v1 calls, the MCP sessions' waiting POSTs, and quick answers (429, reads).
  options.threads = static_cast<std::size_t>(a.max_concurrent_calls) + 12;
  auto server = taskyon::http::Server::bind(options);
  if (!server) return report(g, server.error());
  // Written once the port is ours: a server that cannot start (its port taken,
  // perhaps by the server whose token file this is) leaves the file alone.
  if (auto w = taskyon::http::write_token_file(token_file, *token); !w) return report(g, w.error());
  std::string page_url;
  if (!a.page_root.empty()) {
    if (auto mounted = taskyon::http::mount_page(**server, a.page_root); !mounted) {
      taskyon::http::remove_token_file(token_file, *token);
      return report(g, mounted.error());
    }
    page_url = (*server)->url() + taskyon::http::page_prefix(*token) + a.page_start;
  }

  taskyon::http::ApiOptions api;
  api.egress_store = records;
  api.capabilities = *capabilities;
  api.max_concurrent_calls = static_cast<std::size_t>(a.max_concurrent_calls);
  if (auto mounted = taskyon::http::mount_api(**server, **host, api); !mounted) {
    taskyon::http::remove_token_file(token_file, *token);
    return report(g, mounted.error());
  }
  // Runs (issue 14): calls a browser page executes, recorded in this store.
  taskyon::http::RunsOptions runs_options;
  runs_options.store = records;
  runs_options.capabilities = *capabilities;
  runs_options.default_timeout = default_timeout;
  runs_options.max_timeout = max_timeout;
  auto mounted_runs = taskyon::http::mount_runs(**server, runs_options);
  if (!mounted_runs) {
    taskyon::http::remove_token_file(token_file, *token);
    return report(g, mounted_runs.error());
  }
  auto runs = std::move(*mounted_runs);
  taskyon::http::McpEndpoint mcp(**host, max_wait);
  mcp.mount(**server);

  taskyon::http::Server* running = server->get();
  taskyon::host::Host* core_host = host->get();
  Interruption interruption([&](int) {
    running->stop();
    // The host first: every sandbox, an MCP session's running call's too, is
    // destroyed and written to the sandbox log as "interrupted" (as a /v1
    // call's and `tycli call`'s); then the MCP sessions close.
    core_host->shutdown("interrupted");
    mcp.close_all();
  });
  // The first stdout line says where the server is (scripts wait for it), written once
  // SIGTERM and SIGINT are handled: a script that stops the server as soon as it reads
  // the line gets the clean shutdown, never the default action (exit 143, token file left).
  if (g.json) {
    taskyon::json::Value ready = {{"url", (*server)->url()}, {"port", (*server)->port()}, {"tokenFile", token_file}};
    if (a.print_token) ready["token"] = *token;
    if (!page_url.empty()) ready["pageUrl"] = page_url;
    print_json(ready);
  } else {
    std::cout << fmt::format("listening on {}\ntoken file {}\n", (*server)->url(), token_file);
    if (a.print_token) std::cout << "token " << *token << "\n";
    if (!page_url.empty()) std::cout << "page " << page_url << "\n";
  }
  std::cout.flush();

  running->run();  // returns once every handler has ended
  mcp.close_all();
  runs->close(interruption.signal() ? "the server was interrupted before the page reported its result"
                                    : "the server stopped before the page reported its result");
  (*host)->shutdown(interruption.signal() ? "interrupted" : "shutdown");
  // A stale token is useless (nobody answers it); a file another server wrote
  // since holds that server's token, and stays.
  taskyon::http::remove_token_file(token_file, *token);
  if (int signal = interruption.signal()) std::cerr << fmt::format("tycli serve: stopped by {}\n", Interruption::name(signal));
  return kExitOk;
}

}  // namespace

void add_serve_command(CLI::App& app, Globals& g) {
  auto a = std::make_shared<ServeArgs>();
  auto* c = app.add_subcommand("serve", "the long-lived host over HTTP on 127.0.0.1: MCP at /mcp, the /v1 JSON API and "
                                        "the egress proxy (docs/serve.md)");
  c->add_option("--port", a->port, "TCP port on 127.0.0.1 (default 0: pick a free one and print it)");
  c->add_option("--token-file", a->token_file,
                "where the bearer token is written, mode 0600 (default: serve.token beside the store)")
      ->type_name("FILE");
  c->add_flag("--print-token", a->print_token, "also print the token on stdout (it is a secret: only for scripts)");
  c->add_option("--max-body", a->max_body_bytes, "largest request body, bytes (default 8388608; larger: 413)");
  c->add_option("--max-concurrent-calls", a->max_concurrent_calls,
                "calls and proxied fetches at once (default 4; more: 429)");
  c->add_option("--timeout", a->timeout_ms, "default per-call timeout in ms (default 10000; a request may set timeoutMs)");
  c->add_option("--js-runtime", a->js_runtime, "node (default) or deno")->check(CLI::IsMember({"node", "deno"}));
  add_memory_budget_option(*c, a->memory_budget_mib);
  c->add_option("--max-sandboxes", a->max_sandboxes,
                "retained sandboxes alive at once, one per (revision, session) (default 16; past it the least "
                "recently used idle one is destroyed)");
  add_prestart_option(*c, a->prestart);
  c->add_option("--page", a->page_root,
                "serve a browser host page's files from DIR under /page/TOKEN/ and print its URL, which carries the "
                "token (docs/serve.md)")
      ->type_name("DIR");
  c->add_option("--page-start", a->page_start, "the file under --page whose URL is printed (default index.html)")
      ->type_name("PATH");
  c->callback([&g, a] { g.exit_code = guarded(g, [&] { return serve(g, *a); }); });
}

}  // namespace tycli
