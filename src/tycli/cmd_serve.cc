// tycli serve [--port N] [--token-file PATH] [--print-token]: the long-lived
// host over HTTP on 127.0.0.1 (DESIGN §8; docs/serve.md). The transport and
// its H1/H2 rules are taskyon/http/server.h, the /v1 API taskyon/http/api.h.
#include <filesystem>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "cli.h"
#include "signals.h"
#include "taskyon/http/api.h"
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
  auto st = open_store(g);
  if (!st) return report(g, st.error());

  taskyon::sandbox::RuntimeConfig runtime;
  if (auto selected = taskyon::sandbox::select_runtime(runtime, a.js_runtime, taskyon::sandbox::config_file_path());
      !selected)
    return report(g, selected.error());
  if (auto budget = apply_memory_budget(runtime, a.memory_budget_mib); !budget) return report(g, budget.error());

  // H1: a fresh token per run, in a 0600 file; the token itself is printed only when asked.
  auto token = taskyon::http::new_token();
  if (!token) return report(g, token.error());
  std::error_code ec;
  const std::string token_file =
      a.token_file.empty() ? (std::filesystem::path(*db).parent_path() / "serve.token").string() : a.token_file;
  if (auto w = taskyon::http::write_token_file(token_file, *token); !w) return report(g, w.error());

  taskyon::http::Options options;
  options.port = a.port;
  options.token = *token;
  options.max_body_bytes = static_cast<std::size_t>(a.max_body_bytes);
  options.threads = static_cast<std::size_t>(a.max_concurrent_calls) + 4;  // room to answer 429 and reads
  auto server = taskyon::http::Server::bind(options);
  if (!server) return report(g, server.error());

  LoggedPool hosted(*st, runtime);
  taskyon::http::ApiOptions api;
  api.db_path = *db;
  api.capabilities = *capabilities;
  api.default_timeout = std::chrono::milliseconds(a.timeout_ms);
  api.max_concurrent_calls = static_cast<std::size_t>(a.max_concurrent_calls);
  api.after_call = [&hosted] { hosted.flush(); };
  taskyon::http::mount_api(**server, *st, hosted.pool(), api);

  // The first stdout line says where the server is (scripts wait for it).
  if (g.json) {
    taskyon::json::Value ready = {{"url", (*server)->url()}, {"port", (*server)->port()}, {"tokenFile", token_file}};
    if (a.print_token) ready["token"] = *token;
    print_json(ready);
  } else {
    std::cout << fmt::format("listening on {}\ntoken file {}\n", (*server)->url(), token_file);
    if (a.print_token) std::cout << "token " << *token << "\n";
  }
  std::cout.flush();

  taskyon::http::Server* running = server->get();
  Interruption interruption([&](int) {
    running->stop();
    hosted.pool().interrupt("interrupted");
  });
  running->run();
  // run() returned: no handler is running any more; the pool's sandboxes go with `hosted`.
  std::filesystem::remove(token_file, ec);  // a stale token is useless: nobody answers it
  if (int signal = interruption.signal()) {
    std::cerr << fmt::format("tycli: serve stopped by {}\n", Interruption::name(signal));
    return kExitOk;
  }
  return kExitOk;
}

}  // namespace

void add_serve_command(CLI::App& app, Globals& g) {
  auto a = std::make_shared<ServeArgs>();
  auto* c = app.add_subcommand("serve", "the long-lived host over HTTP on 127.0.0.1: the /v1 JSON API and the egress "
                                        "proxy (docs/serve.md)");
  c->add_option("--port", a->port, "TCP port on 127.0.0.1 (default 0: pick a free one and print it)");
  c->add_option("--token-file", a->token_file,
                "where the bearer token is written, mode 0600 (default: serve.token beside the store)");
  c->add_flag("--print-token", a->print_token, "also print the token on stdout (it is a secret: only for scripts)");
  c->add_option("--max-body", a->max_body_bytes, "largest request body, bytes (default 8388608; larger: 413)");
  c->add_option("--max-concurrent-calls", a->max_concurrent_calls,
                "calls and proxied fetches at once (default 4; more: 429)");
  c->add_option("--timeout", a->timeout_ms, "default per-call timeout in ms (default 10000; a request may set timeoutMs)");
  c->add_option("--js-runtime", a->js_runtime, "node (default) or deno");
  add_memory_budget_option(*c, a->memory_budget_mib);
  c->callback([&g, a] { g.exit_code = guarded(g, [&] { return serve(g, *a); }); });
}

}  // namespace tycli
