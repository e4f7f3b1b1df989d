// make bench: `tycli serve` over HTTP against the same library's floor
// (issue 13: a warm call over HTTP within 2x a bare request to cpp-httplib's
// hello-world handler).
//   HttplibHelloWorld        GET / of an httplib::Server in this process answering "hello" (one HTTP round trip)
//   ServeV1Call              POST /v1/call of a trivial tool to a real `tycli serve` (HTTP, H1/H2, the host
//                            core, the retained Node sandbox and back), warm sandbox, keep-alive
//   ServeMcpToolsCall        the same call as MCP tools/call over POST /mcp in one session
//   ServeEgressFetch         POST /v1/fetch (the browser host's egress proxy) of an origin no grant admits:
//                            the revision looked up, the decision, its audit row, the 403; nothing resolved
//   ServeBrowserRun          a browser page's run without its page: POST /v1/runs (compiled, pinned) and
//                            POST /v1/runs/{run}/result (call and result stored), new arguments each time
//   ServeSandboxLog          POST /v1/sandbox-log (a page's sandbox destruction appended to the log)
// Report each as a ratio to HttplibHelloWorld.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "taskyon/json/json.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

pid_t spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env, const std::string& log) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), envp.data()) != 0) std::abort();
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

// A real `tycli serve` in a fresh TASKYON_HOME holding the tool "echo".
struct Served {
  fs::path home;
  pid_t pid = -1;
  int port = 0;
  std::string token;
  Served() {
    home = fs::temp_directory_path() / ("taskyon-bench-serve-" + std::to_string(::getpid()));
    fs::create_directories(home / "tmp");
    const std::string tool = (home / "echo.json").string();
    std::ofstream(tool) << R"({"name":"echo","description":"returns its input","parameters":{"type":"object"},)"
                           R"("execution":"sandboxed-code","runtime":"javascript","code":"(args) => args"})";
    const std::vector<std::string> env = {"TASKYON_HOME=" + home.string(), "TMPDIR=" + (home / "tmp").string(),
                                          std::string("PATH=") + (std::getenv("PATH") ? std::getenv("PATH") : "")};
    int status = 0;
    ::waitpid(spawn({TYCLI_PATH, "tool", "install", tool}, env, (home / "install.log").string()), &status, 0);
    const std::string log = (home / "serve.log").string();
    pid = spawn({TYCLI_PATH, "--json", "serve"}, env, log);
    for (int i = 0; i < 1000 && port == 0; ++i) {
      std::istringstream lines(slurp(log));
      for (std::string line; std::getline(lines, line);) {
        auto v = taskyon::json::parse(line);
        if (v && v->is_object() && v->contains("port")) port = (*v)["port"].get<int>();
      }
      if (port == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (port == 0) std::abort();
    token = slurp(home / "serve.token");
    while (!token.empty() && token.back() == '\n') token.pop_back();
  }
  ~Served() {
    ::kill(pid, SIGTERM);
    int status = 0;
    ::waitpid(pid, &status, 0);
    std::error_code ec;
    fs::remove_all(home, ec);
  }
  httplib::Headers auth() const { return {{"Authorization", "Bearer " + token}}; }
  // A keep-alive client of this server, set as real clients are.
  std::unique_ptr<httplib::Client> client() const {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", port);
    c->set_keep_alive(true);
    c->set_tcp_nodelay(true);  // as Node's fetch and curl do; without it Nagle meets delayed ACKs (~40 ms)
    return c;
  }
};

// The benchmark's loop: POST `body` to `path` once per iteration, each
// answered `status`.
void post_each_iteration(benchmark::State& state, const Served& s, httplib::Client& client, const std::string& path,
                         const std::string& body, int status) {
  for (auto _ : state) {
    auto r = client.Post(path, s.auth(), body, "application/json");
    if (!r || r->status != status) {
      state.SkipWithError(("POST " + path + " did not answer " + std::to_string(status)).c_str());
      break;
    }
  }
}

void HttplibHelloWorld(benchmark::State& state) {
  httplib::Server server;
  server.set_tcp_nodelay(true);  // as tycli serve does
  server.Get("/", [](const httplib::Request&, httplib::Response& res) { res.set_content("hello", "text/plain"); });
  const int port = server.bind_to_any_port("127.0.0.1");
  std::thread t([&] { server.listen_after_bind(); });
  while (!server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  httplib::Client client("127.0.0.1", port);
  client.set_keep_alive(true);
  client.set_tcp_nodelay(true);  // as Node's fetch and curl do; without it Nagle meets delayed ACKs (~40 ms)
  for (auto _ : state) {
    auto r = client.Get("/");
    if (!r || r->status != 200) state.SkipWithError("hello failed");
  }
  server.stop();
  t.join();
}
BENCHMARK(HttplibHelloWorld);

void ServeV1Call(benchmark::State& state) {
  Served s;
  auto client = s.client();
  const std::string body = R"({"tool":"echo","args":{"n":1}})";
  auto warm = client->Post("/v1/call", s.auth(), body, "application/json");
  if (!warm || warm->status != 200) {
    state.SkipWithError("the warm-up call failed");
    return;
  }
  post_each_iteration(state, s, *client, "/v1/call", body, 200);
}
BENCHMARK(ServeV1Call)->Unit(benchmark::kMicrosecond);

void ServeMcpToolsCall(benchmark::State& state) {
  Served s;
  auto owned = s.client();
  httplib::Client& client = *owned;
  auto init = client.Post("/mcp", s.auth(),
                          R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",)"
                          R"("capabilities":{},"clientInfo":{"name":"bench","version":"1"}}})",
                          "application/json");
  if (!init || init->status != 200) {
    state.SkipWithError("initialize failed");
    return;
  }
  auto headers = s.auth();
  headers.emplace("Mcp-Session-Id", init->get_header_value("Mcp-Session-Id"));
  client.Post("/mcp", headers, R"({"jsonrpc":"2.0","method":"notifications/initialized"})", "application/json");
  int id = 1;
  const auto call = [&] {
    return client.Post("/mcp", headers,
                       R"({"jsonrpc":"2.0","id":)" + std::to_string(id++) +
                           R"(,"method":"tools/call","params":{"name":"echo","arguments":{"n":1}}})",
                       "application/json");
  };
  call();  // warm
  for (auto _ : state) {
    auto r = call();
    if (!r || r->status != 200) state.SkipWithError("tools/call failed");
  }
}
BENCHMARK(ServeMcpToolsCall)->Unit(benchmark::kMicrosecond);

// The revision "echo" is bound to, as GET /v1/tools/echo shows it.
std::string echo_revision(const Served& s, httplib::Client& client) {
  auto r = client.Get("/v1/tools/echo", s.auth());
  if (!r || r->status != 200) return {};
  auto v = taskyon::json::parse(r->body);
  if (!v || !v->is_object() || !v->contains("revision") || !(*v)["revision"].is_string()) return {};
  return (*v)["revision"].get<std::string>();
}

// POST `path` with {"revision": echo's revision, `rest`…} once per
// iteration, each answered `status`.
void ServeRevisionRequest(benchmark::State& state, const char* path, const char* rest, int status) {
  Served s;
  auto client = s.client();
  const std::string revision = echo_revision(s, *client);
  if (revision.empty()) {
    state.SkipWithError("GET /v1/tools/echo failed");
    return;
  }
  post_each_iteration(state, s, *client, path, R"({"revision":")" + revision + "\"," + rest + "}", status);
}
BENCHMARK_CAPTURE(ServeRevisionRequest, egress, "/v1/fetch", R"("url":"https://example.com/data")", 403)
    ->Name("ServeEgressFetch")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(ServeRevisionRequest, sandbox_log, "/v1/sandbox-log", R"("tool":"echo","reason":"superseded")", 201)
    ->Name("ServeSandboxLog")
    ->Unit(benchmark::kMicrosecond);

void ServeBrowserRun(benchmark::State& state) {
  Served s;
  auto owned = s.client();
  httplib::Client& client = *owned;
  int n = 0;
  for (auto _ : state) {
    auto started = client.Post("/v1/runs", s.auth(),
                               R"({"tool":"echo","args":{"n":)" + std::to_string(n++) +
                                   R"(},"runtime":{"kind":"browser","version":"Chromium 1.0"}})",
                               "application/json");
    if (!started || started->status != 201) {
      state.SkipWithError("POST /v1/runs failed");
      break;
    }
    auto v = taskyon::json::parse(started->body);
    if (!v || !v->is_object() || !v->contains("run")) {
      state.SkipWithError("POST /v1/runs failed");
      break;
    }
    auto done = client.Post("/v1/runs/" + (*v)["run"].get<std::string>() + "/result", s.auth(),
                            R"({"status":"ok","value":{"n":1}})", "application/json");
    if (!done || done->status != 200) state.SkipWithError("POST /v1/runs/{run}/result failed");
  }
}
BENCHMARK(ServeBrowserRun)->Unit(benchmark::kMicrosecond);

}  // namespace
