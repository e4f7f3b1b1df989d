// make bench: load on one `tycli serve` (issue 13, "How we will check": 8
// clients x 200 calls over 4 revisions with no wrong result, no lost stored
// call and no leaked process; calls/s, p50, p99).
//   ServeLoad/clients:1   one MCP session making the calls one after another (the baseline)
//   ServeLoad/clients:8   8 MCP sessions (threads, one keep-alive connection each) at once
// Each client makes 200 tools/call over POST /mcp, spread over 4 tools (4
// revisions: tag0..tag3 return {tag, client, i}). Counters: calls_per_s,
// p50_us, p99_us, and the checks, which must be 0: wrong (a result that is not
// the call's own), lost (calls whose functionCall task is not in the store
// after the run), leaked (processes left running with the bench's home in
// their command line or environment after the server exited).
// Report ServeLoad/clients:8 calls_per_s / ServeLoad/clients:1 calls_per_s and
// the p50/p99 of both.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fcntl.h>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "taskyon/json/json.h"

namespace {

namespace fs = std::filesystem;
using taskyon::json::Value;

constexpr int kCallsPerClient = 200;
constexpr int kRevisions = 4;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
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

// Processes (other than ours) whose command line or environment names `home`.
int processes_naming(const std::string& home) {
  int n = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit) || std::stoi(name) == ::getpid()) continue;
    const std::string cmdline = slurp(entry.path() / "cmdline"), environ = slurp(entry.path() / "environ");
    if (cmdline.find(home) != std::string::npos || environ.find(home) != std::string::npos) ++n;
  }
  return n;
}

struct Served {
  fs::path home;
  std::vector<std::string> env;
  pid_t pid = -1;
  int port = 0;
  std::string token;
  Served() {
    home = fs::temp_directory_path() / ("taskyon-bench-load-" + std::to_string(::getpid()));
    fs::remove_all(home);
    fs::create_directories(home / "tmp");
    env = {"TASKYON_HOME=" + home.string(), "TMPDIR=" + (home / "tmp").string(),
           std::string("PATH=") + (std::getenv("PATH") ? std::getenv("PATH") : "")};
    for (int k = 0; k < kRevisions; ++k) {
      const std::string tool = (home / ("tag" + std::to_string(k) + ".json")).string();
      const Value manifest = {{"name", "tag" + std::to_string(k)},
                              {"description", "returns its tag and arguments"},
                              {"parameters", {{"type", "object"}}},
                              {"execution", "sandboxed-code"},
                              {"runtime", "javascript"},
                              {"code", "(args) => ({tag: " + std::to_string(k) + ", client: args.client, i: args.i})"}};
      std::ofstream(tool) << manifest.dump();
      int status = 0;
      ::waitpid(spawn({TYCLI_PATH, "tool", "install", tool}, env, (home / "install.log").string()), &status, 0);
    }
    const std::string log = (home / "serve.log").string();
    // Sized for the load: 8 sessions x 4 revisions = 32 retained sandboxes
    // (H3). With the defaults (16 live, a 1 GiB budget) the LRU order of a
    // round robin over 32 slots makes every call start a sandbox.
    pid = spawn({TYCLI_PATH, "--json", "serve", "--max-sandboxes", "40", "--memory-budget", "3072"}, env, log);
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
  // Stops the server; the processes still naming the home afterwards.
  int stop() {
    ::kill(pid, SIGTERM);
    int status = 0;
    ::waitpid(pid, &status, 0);
    pid = -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    return processes_naming(home.string());
  }
  // Stored functionCall tasks (tycli's own SQLite file, read with the sqlite3 CLI).
  long stored_calls() const {
    const std::string out = (home / "count.txt").string();
    int status = 0;
    ::waitpid(spawn({"sqlite3", (home / "taskyon.db").string(), "SELECT count(*) FROM tasks WHERE kind = 'functionCall'"},
                    env, out),
              &status, 0);
    try {
      return std::stol(slurp(out));
    } catch (const std::exception&) {
      return -1;
    }
  }
  ~Served() {
    if (pid > 0) stop();
    std::error_code ec;
    fs::remove_all(home, ec);
  }
};

void ServeLoad(benchmark::State& state) {
  const int clients = static_cast<int>(state.range(0));
  for (auto _ : state) {
    Served s;
    std::atomic<int> wrong{0};
    std::vector<std::vector<double>> latencies(clients);
    const auto started = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (int c = 0; c < clients; ++c) {
      threads.emplace_back([&, c] {
        httplib::Client client("127.0.0.1", s.port);
        client.set_keep_alive(true);
        client.set_tcp_nodelay(true);
        client.set_read_timeout(std::chrono::seconds(60));
        httplib::Headers headers = {{"Authorization", "Bearer " + s.token}};
        auto init = client.Post("/mcp", headers,
                                R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",)"
                                R"("capabilities":{},"clientInfo":{"name":"load","version":"1"}}})",
                                "application/json");
        if (!init || init->status != 200) {
          wrong += kCallsPerClient;
          return;
        }
        headers.emplace("Mcp-Session-Id", init->get_header_value("Mcp-Session-Id"));
        for (int i = 0; i < kCallsPerClient; ++i) {
          const int tag = (c + i) % kRevisions;
          const Value request = {{"jsonrpc", "2.0"}, {"id", i + 1}, {"method", "tools/call"},
                                 {"params", {{"name", "tag" + std::to_string(tag)}, {"arguments", {{"client", c}, {"i", i}}}}}};
          const auto t0 = std::chrono::steady_clock::now();
          auto r = client.Post("/mcp", headers, request.dump(), "application/json");
          latencies[c].push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
          auto v = r && r->status == 200 ? taskyon::json::parse(r->body) : taskyon::Result<Value>(Value());
          const Value expected = {{"tag", tag}, {"client", c}, {"i", i}};
          if (!v || !v->is_object() || (*v)["id"] != i + 1 || (*v)["result"]["structuredContent"] != expected) ++wrong;
        }
        client.Delete("/mcp", headers);
      });
    }
    for (auto& t : threads) t.join();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::vector<double> all;
    for (const auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
    std::sort(all.begin(), all.end());
    const long calls = static_cast<long>(clients) * kCallsPerClient;
    const long stored = s.stored_calls();
    const int leaked = s.stop();
    state.counters["calls_per_s"] = static_cast<double>(calls) / seconds;
    state.counters["p50_us"] = all.empty() ? 0 : all[all.size() / 2];
    state.counters["p99_us"] = all.empty() ? 0 : all[std::min(all.size() - 1, all.size() * 99 / 100)];
    state.counters["wrong"] = wrong.load();
    state.counters["lost"] = static_cast<double>(calls - stored);
    state.counters["leaked"] = leaked;
    if (wrong || stored != calls || leaked) state.SkipWithError("a load check failed (wrong, lost or leaked is not 0)");
  }
}
BENCHMARK(ServeLoad)->ArgName("clients")->Arg(1)->Arg(8)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
