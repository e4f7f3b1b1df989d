// Live progress (issue 16 item 3): a tool's console lines and
// context.progress reach the caller while the call runs, on real node and
// deno processes. Pool level: CallRequest::on_log sees a line before the
// tool's next step; the log bound holds for what is streamed. CLI level: the
// real tycli binary with its stderr on a pipe, read line by line as it
// arrives: the first line is read while tycli still runs (its exit status
// not available yet) and before anything is on stdout; `tycli run` prints
// each entry as it finishes; a call near its timeout says so, naming
// --timeout. Ordering, never absolute timing, decides each outcome.
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "taskyon/external/mcp.h"
#include "taskyon/sandbox/pool.h"
#include "taskyon/sandbox/runtime.h"
#include "test_util.h"

namespace taskyon::testing {
namespace {

namespace fs = std::filesystem;
using json::Value;
using namespace std::chrono_literals;

// A tool logging every 200 ms for ~1 s, with a progress frame per tick and
// one without a total at the end.
constexpr const char* kTicker =
    "async (args, context) => { for (let i = 0; i < 5; i++) { console.log('tick ' + i);"
    " context.progress(i + 1, 5, 'step ' + (i + 1)); await new Promise((r) => setTimeout(r, 200)); }"
    " context.progress(5); return {ticks: 5}; }";

bool deno_available() { return sandbox::find_deno("").has_value(); }

// tycli with stdout and stderr on pipes, the environment of test_util.h's run_tycli.
struct Running {
  pid_t pid = -1;
  int out = -1;
  int err = -1;
  std::string err_buffer;  // stderr read but not yet split into lines
  bool err_open = true;

  ~Running() {
    if (out >= 0) ::close(out);
    if (err >= 0) ::close(err);
  }

  // The next complete stderr line (without '\n'), waiting for it; nullopt at EOF.
  std::optional<std::string> next_err_line() {
    for (;;) {
      if (auto nl = err_buffer.find('\n'); nl != std::string::npos) {
        std::string line = err_buffer.substr(0, nl);
        err_buffer.erase(0, nl + 1);
        return line;
      }
      if (!err_open) return std::nullopt;
      pollfd p{err, POLLIN, 0};
      if (::poll(&p, 1, 60000) <= 0) return std::nullopt;  // a hung tycli fails the test, never hangs it
      char buf[4096];
      const ssize_t n = ::read(err, buf, sizeof buf);
      if (n <= 0) {
        err_open = false;
        continue;
      }
      err_buffer.append(buf, static_cast<std::size_t>(n));
    }
  }

  // True when tycli has exited (its status is available); it stays waitable.
  bool exited() const {
    siginfo_t info{};
    return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid;
  }

  // True when something (or EOF) is readable on stdout now.
  bool stdout_ready() const {
    pollfd p{out, POLLIN, 0};
    return ::poll(&p, 1, 0) > 0;
  }

  std::string read_stdout() {
    std::string text;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(out, buf, sizeof buf)) > 0) text.append(buf, static_cast<std::size_t>(n));
    return text;
  }
};

std::unique_ptr<Running> spawn_piped(const std::vector<std::string>& args, const fs::path& home) {
  auto r = std::make_unique<Running>();
  int o[2], e[2];
  if (::pipe2(o, O_CLOEXEC) != 0 || ::pipe2(e, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  r->pid = testing::spawn_tycli_fds(args, home, o[1], e[1]);
  ::close(o[1]);
  ::close(e[1]);
  r->out = o[0];
  r->err = e[0];
  return r;
}

// Every stderr line of `r` until tycli closes it, and whether tycli had
// exited, or put its result on stdout, when the line holding `first` came.
struct Streamed {
  std::vector<std::string> lines;
  bool exited_at_first = true;
  bool stdout_at_first = true;
  std::string all() const {
    std::string text;
    for (const auto& l : lines) text += l + "\n";
    return text;
  }
};

Streamed read_streamed(Running& r, std::string_view first) {
  Streamed s;
  while (auto line = r.next_err_line()) {
    if (line->find(first) != std::string::npos) {
      s.exited_at_first = r.exited();
      s.stdout_at_first = r.stdout_ready();
    }
    s.lines.push_back(*line);
  }
  return s;
}

void install(const TempDir& home, const std::string& name, const std::string& code) {
  auto file = home.write(name + ".json", js_tool(name, code).dump());
  auto r = run_tycli({"tool", "install", file}, home.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

// --- Pool level -------------------------------------------------------------

// The tool's capability request runs after its first console line: the host
// must have handed that line on by then (it arrived before the request frame).
class Witness : public sandbox::Capabilities {
 public:
  explicit Witness(const std::atomic<bool>& seen) : seen_(seen) {}
  sandbox::CapabilityReply handle(std::string_view, sandbox::CapabilityOp, const json::Value&,
                                  const sandbox::CancelToken&, std::chrono::steady_clock::time_point) override {
    seen_at_request = seen_.load();
    ++requests;
    return sandbox::CapabilityReply::success(nullptr);
  }
  bool seen_at_request = false;
  int requests = 0;

 private:
  const std::atomic<bool>& seen_;
};

class LiveProgressPool : public ::testing::TestWithParam<sandbox::JsRuntime> {
 protected:
  void SetUp() override {
    if (GetParam() == sandbox::JsRuntime::deno && !deno_available()) GTEST_SKIP() << "no deno";
  }
  sandbox::RuntimeConfig config() const {
    sandbox::RuntimeConfig c;
    c.runtime = GetParam();
    return c;
  }
};

TEST_P(LiveProgressPool, ALogLineIsHandedOnBeforeTheToolsNextStep) {
  sandbox::Pool pool(config());
  std::atomic<bool> seen{false};
  Witness witness(seen);
  sandbox::CallRequest r;
  r.tool = sandbox::ToolCode{"sha256:test-live-witness",
                             "async (args, context) => { console.log('before'); await context.storage.get('k');"
                             " console.log('after'); return 1; }",
                             "witness"};
  r.timeout = 30s;
  r.capabilities = &witness;
  std::vector<std::string> streamed;
  r.on_log = [&](const sandbox::LogEntry& e) {
    streamed.push_back(e.text);
    if (e.text == "before") seen = true;
  };
  auto out = pool.call(r);
  ASSERT_TRUE(out.has_value()) << out.error().describe();
  ASSERT_EQ(out->status, sandbox::Status::ok) << out->error;
  EXPECT_EQ(witness.requests, 1);
  EXPECT_TRUE(witness.seen_at_request) << "the first line reached on_log only after the tool went on";
  EXPECT_EQ(streamed, (std::vector<std::string>{"before", "after"}));
  ASSERT_EQ(out->logs.size(), 2u) << "what is kept (stored) is unchanged";
  EXPECT_EQ(out->logs[0].text, "before");
}

TEST_P(LiveProgressPool, TickerStreamsEveryLineAndProgressFrame) {
  sandbox::Pool pool(config());
  sandbox::CallRequest r;
  r.tool = sandbox::ToolCode{"sha256:test-live-ticker", kTicker, "ticker"};
  r.timeout = 30s;
  std::vector<std::string> events;
  r.on_log = [&](const sandbox::LogEntry& e) { events.push_back(e.level + ":" + e.text); };
  r.on_progress = [&](double done, double total, std::string_view message) {
    events.push_back("progress:" + std::to_string(static_cast<int>(done)) + "/" +
                     (std::isnan(total) ? std::string("-") : std::to_string(static_cast<int>(total))) + ":" +
                     std::string(message));
  };
  auto out = pool.call(r);
  ASSERT_TRUE(out.has_value()) << out.error().describe();
  ASSERT_EQ(out->status, sandbox::Status::ok) << out->error;
  std::vector<std::string> expected;
  for (int i = 0; i < 5; ++i) {
    expected.push_back("log:tick " + std::to_string(i));
    expected.push_back("progress:" + std::to_string(i + 1) + "/5:step " + std::to_string(i + 1));
  }
  expected.push_back("progress:5/-:");
  EXPECT_EQ(events, expected);
  EXPECT_EQ(out->logs.size(), 5u);
}

// Tool code can write log frames and stderr to its fds itself, past the
// harness's own cut: what the host streams is bounded by max_log_bytes as
// what it keeps is, and the call still reports.
TEST(LiveProgressPoolBound, AFloodingToolIsCutOffAndStillReports) {
  sandbox::RuntimeConfig config;
  config.max_log_bytes = 4096;
  sandbox::Pool pool(config);  // a fresh pool: its first call has id 1
  sandbox::CallRequest r;
  r.tool = sandbox::ToolCode{
      "sha256:test-live-flood",
      "() => { const fs = require('fs'); const m = 'é'.repeat(3000);"
      " for (let i = 0; i < 300; i++) { console.log(m);"
      " fs.writeSync(1, JSON.stringify({type: 'log', id: 1, level: 'warn', text: m}) + '\\n');"
      " fs.writeSync(2, m + '\\n'); } return 'still here'; }",
      "flood"};
  r.timeout = 60s;
  std::size_t streamed_bytes = 0, streamed_entries = 0;
  r.on_log = [&](const sandbox::LogEntry& e) {
    streamed_bytes += e.text.size();
    ++streamed_entries;
  };
  auto out = pool.call(r);
  ASSERT_TRUE(out.has_value()) << out.error().describe();
  ASSERT_EQ(out->status, sandbox::Status::ok) << out->error;
  EXPECT_EQ(out->value, "still here");
  EXPECT_TRUE(out->logs_truncated);
  EXPECT_LE(streamed_bytes, config.max_log_bytes);
  EXPECT_GT(streamed_bytes, 0u);
  std::size_t kept = 0;
  for (const auto& e : out->logs) kept += e.text.size();
  EXPECT_EQ(kept, streamed_bytes) << "streamed bytes count against the same bound";
  EXPECT_EQ(out->logs.size(), streamed_entries);
}

INSTANTIATE_TEST_SUITE_P(Runtimes, LiveProgressPool,
                         ::testing::Values(sandbox::JsRuntime::node, sandbox::JsRuntime::deno),
                         [](const auto& info) { return info.param == sandbox::JsRuntime::node ? "node" : "deno"; });

// --- Imported MCP servers ---------------------------------------------------

const std::string kEverything =
    std::string(TASKYON_SOURCE_DIR) + "/node_modules/@modelcontextprotocol/server-everything/dist/index.js";

// The request carries a progressToken; the server's notifications/progress
// reach on_progress while tools/call runs (the one-shot client and the kept one).
TEST(LiveProgressMcp, ServerProgressNotificationsAreHandedOn) {
  const external::McpServer server{{"node", kEverything, "stdio"}, ""};
  std::vector<std::string> seen;
  external::CallEvents events;
  events.on_progress = [&](double done, double total, std::string_view message) {
    seen.push_back(std::to_string(static_cast<int>(done)) + "/" + std::to_string(static_cast<int>(total)) + ":" +
                   std::string(message));
  };
  auto out = external::call_tool(server, "trigger-long-running-operation", {{"duration", 0.3}, {"steps", 3}}, Value(),
                                 30s, events);
  ASSERT_TRUE(out.has_value()) << out.error().describe();
  ASSERT_EQ(out->status, sandbox::Status::ok) << out->error;
  EXPECT_EQ(seen, (std::vector<std::string>{"1/3:", "2/3:", "3/3:"}));

  seen.clear();
  external::McpClients clients;
  auto kept = clients.call_tool(server, "trigger-long-running-operation", {{"duration", 0.3}, {"steps", 2}}, Value(),
                                30s, {}, events);
  ASSERT_TRUE(kept.has_value()) << kept.error().describe();
  ASSERT_EQ(kept->status, sandbox::Status::ok) << kept->error;
  EXPECT_EQ(seen, (std::vector<std::string>{"1/2:", "2/2:"}));
  for (const auto& e : kept->logs) EXPECT_EQ(e.level, "stderr") << "progress is not kept as logs: " << e.text;
}

// --- tycli ------------------------------------------------------------------

class LiveProgressCli : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "deno" && !deno_available()) GTEST_SKIP() << "no deno";
  }
};

TEST_P(LiveProgressCli, CallPrintsEachLineWhileTheToolRuns) {
  TempDir home;
  install(home, "ticker", kTicker);
  auto run = spawn_piped({"call", "ticker", "--js-runtime", GetParam()}, home.path());
  const Streamed streamed = read_streamed(*run, "tick 0");
  const auto& lines = streamed.lines;
  const std::string out = run->read_stdout();
  EXPECT_EQ(wait_exit(run->pid), 0);
  const std::string all = streamed.all();
  EXPECT_FALSE(streamed.exited_at_first) << "the first line was read only after tycli had exited:\n" << all;
  EXPECT_FALSE(streamed.stdout_at_first) << "the result was on stdout before the first line:\n" << all;
  std::vector<std::string> ticks, progress;
  for (const auto& l : lines) {
    if (l.find("[log] tick") != std::string::npos) ticks.push_back(l);
    if (l.find("progress") != std::string::npos) progress.push_back(l);
  }
  ASSERT_EQ(ticks.size(), 5u) << "each line once, not again at the end:\n" << all;
  EXPECT_EQ(ticks[0], "ticker: [log] tick 0");
  ASSERT_EQ(progress.size(), 6u) << all;
  EXPECT_EQ(progress[0], "ticker: progress 1/5 step 1");
  EXPECT_EQ(progress[5], "ticker: progress 5");
  EXPECT_EQ(all.find("--timeout"), std::string::npos) << "a quick call says nothing of its timeout:\n" << all;
  EXPECT_NE(out.find("\"ticks\": 5"), std::string::npos) << out;
}

INSTANTIATE_TEST_SUITE_P(Runtimes, LiveProgressCli, ::testing::Values("node", "deno"),
                         [](const auto& info) { return info.param; });

TEST(LiveProgressCliJson, JsonLinesOnStderrAndTheStoredLogsUnchanged) {
  TempDir home;
  install(home, "ticker", kTicker);
  auto run = spawn_piped({"--json", "call", "ticker"}, home.path());
  std::vector<Value> events;
  bool stdout_at_first = true;
  while (auto line = run->next_err_line()) {
    auto v = json::parse(*line);
    ASSERT_TRUE(v.has_value()) << "not a JSON line: " << *line;
    if (events.empty()) stdout_at_first = run->stdout_ready();
    events.push_back(std::move(*v));
  }
  const std::string out = run->read_stdout();
  EXPECT_EQ(wait_exit(run->pid), 0);
  EXPECT_FALSE(stdout_at_first);
  ASSERT_EQ(events.size(), 11u);
  EXPECT_EQ(events[0], (Value{{"type", "log"}, {"tool", "ticker"}, {"level", "log"}, {"text", "tick 0"}}));
  EXPECT_EQ(events[1], (Value{{"type", "progress"}, {"tool", "ticker"}, {"done", 1}, {"total", 5}, {"message", "step 1"}}));
  EXPECT_EQ(events[10], (Value{{"type", "progress"}, {"tool", "ticker"}, {"done", 5}, {"total", nullptr}, {"message", ""}}));
  auto result = json::parse(out);
  ASSERT_TRUE(result.has_value()) << out;
  ASSERT_EQ((*result)["logs"].size(), 5u) << out;
  EXPECT_EQ((*result)["logs"][0], (Value{{"level", "log"}, {"text", "tick 0"}}));
}

TEST(LiveProgressCliBound, AFloodingToolIsCutOffAndTheCallStillReports) {
  TempDir home;
  install(home, "flood", "() => { for (let i = 0; i < 3000; i++) console.log('x'.repeat(1000)); return 'still here'; }");
  auto r = run_tycli({"call", "flood"}, home.path());
  EXPECT_EQ(r.exit_code, 0) << r.err.substr(0, 500);
  EXPECT_NE(r.out.find("still here"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("[logs truncated]"), std::string::npos);
  // 1 MiB of text (RuntimeConfig::max_log_bytes) and a short prefix per line, not 3 MB.
  EXPECT_LT(r.err.size(), (1u << 20) + 64u * 1024u) << r.err.size();
}

TEST(LiveProgressCliTimeout, ACallNearItsTimeoutSaysSoNamingTheFlag) {
  TempDir home;
  install(home, "sleeper", "async () => { console.log('waiting'); await new Promise(() => {}); }");
  auto r = run_tycli({"call", "sleeper", "--timeout", "1500"}, home.path());
  EXPECT_NE(r.exit_code, 0);
  const std::string said = "tycli: sleeper has run ";
  const auto near = r.err.find(said);
  const auto failed = r.err.find("failed: timeout");
  ASSERT_NE(near, std::string::npos) << r.err;
  ASSERT_NE(failed, std::string::npos) << r.err;
  EXPECT_LT(near, failed) << r.err;
  EXPECT_NE(r.err.find("of its 1500 ms timeout; give it more with --timeout MS"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("has run", near + said.size()), std::string::npos) << "one line, not one per tick:\n" << r.err;
}

// `tycli chat call` streams like `tycli call` (each line once, while the
// tool runs) and takes config.json's "timeout" like it.
TEST(LiveProgressCliChat, ChatCallStreamsEachLineOnceAndTakesTheConfigTimeout) {
  TempDir home;
  install(home, "ticker", kTicker);
  const std::string conversation =
      home.write("conversation.json", R"([{"role": "user", "content": {"message": "tick"}}])");
  auto run = run_tycli({"--json", "run", conversation}, home.path());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string root = (*json::parse(run.out))["roots"][0].get<std::string>();
  const std::string tool_call = R"({"id": "call_1", "type": "function", "function": {"name": "ticker", "arguments": "{}"}})";

  auto chat = spawn_piped({"chat", "call", "--at", root, "--tool-call", tool_call}, home.path());
  const Streamed streamed = read_streamed(*chat, "tick 0");
  const std::string out = chat->read_stdout();
  EXPECT_EQ(wait_exit(chat->pid), 0);
  const std::string all = streamed.all();
  EXPECT_FALSE(streamed.exited_at_first) << "the first line was read only after tycli had exited:\n" << all;
  EXPECT_FALSE(streamed.stdout_at_first) << "the answer was on stdout before the first line:\n" << all;
  std::size_t ticks = 0;
  for (const auto& l : streamed.lines) ticks += l.find("tick ") != std::string::npos;
  EXPECT_EQ(ticks, 5u) << "each line once, not again at the end:\n" << all;
  EXPECT_NE(out.find("call_1"), std::string::npos) << out;

  // The ticker takes about 1 s: a 300 ms "timeout" in config.json stops it.
  home.write("config.json", R"({"timeout": 300})");
  auto slow = run_tycli({"--json", "chat", "call", "--at", root, "--tool-call",
                         R"({"id": "call_2", "type": "function", "function": {"name": "ticker", "arguments": "{}"}})"},
                        home.path());
  EXPECT_EQ(slow.exit_code, 0) << slow.err;  // a tool's failure is the model's to read
  auto answer = json::parse(slow.out);
  ASSERT_TRUE(answer.has_value()) << slow.out;
  EXPECT_EQ((*answer)["ok"], false) << slow.out;
  EXPECT_NE(slow.out.find("timeout"), std::string::npos) << slow.out;
}

TEST(LiveProgressCliRun, RunPrintsEachEntryAsItFinishes) {
  TempDir home;
  install(home, "quick", "() => 'done'");
  install(home, "slow", "async () => { await new Promise((r) => setTimeout(r, 1000)); return 'slow'; }");
  const Value conversation = Value::array({
      {{"role", "user"}, {"content", {{"message", "go"}}}},
      {{"role", "assistant"}, {"content", {{"functionCall", {{"name", "quick"}, {"arguments", Value::object()}}}}}},
      {{"role", "assistant"}, {"content", {{"functionCall", {{"name", "slow"}, {"arguments", Value::object()}}}}}},
  });
  auto file = home.write("conv.json", conversation.dump());
  auto run = spawn_piped({"run", file}, home.path());
  std::vector<std::string> lines;
  bool exited_at_quick = true, stdout_at_quick = true;
  while (auto line = run->next_err_line()) {
    if (line->starts_with("[2/3]")) {
      exited_at_quick = run->exited();
      stdout_at_quick = run->stdout_ready();
    }
    lines.push_back(*line);
  }
  const std::string out = run->read_stdout();
  EXPECT_EQ(wait_exit(run->pid), 0);
  std::string all;
  for (const auto& l : lines) all += l + "\n";
  ASSERT_EQ(lines.size(), 3u) << all;
  EXPECT_EQ(lines[0], "[1/3] user new");
  EXPECT_TRUE(lines[1].starts_with("[2/3] call quick Completed in ")) << all;
  EXPECT_TRUE(lines[2].starts_with("[3/3] call slow Completed in ")) << all;
  EXPECT_FALSE(exited_at_quick) << all;
  EXPECT_FALSE(stdout_at_quick) << "the tree came before the entry line:\n" << all;
  EXPECT_NE(out.find("3 entries"), std::string::npos) << out;

  // Again: everything is stored, each entry says it was reused.
  auto again = run_tycli({"run", file}, home.path());
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("[2/3] call quick reused (stored result)"), std::string::npos) << again.err;
}

TEST(LiveProgressCliMcp, AnImportedServersProgressIsShownWhileItRuns) {
  TempDir home;
  auto imp = run_tycli({"tool", "import-mcp", "--trust", "--", "node", kEverything, "stdio"}, home.path());
  ASSERT_EQ(imp.exit_code, 0) << imp.err;
  auto run = spawn_piped({"call", "trigger-long-running-operation", "--args", R"({"duration": 1, "steps": 4})"},
                         home.path());
  std::vector<std::string> lines;
  bool stdout_at_first = true, exited_at_first = true;
  while (auto line = run->next_err_line()) {
    if (lines.empty()) {
      stdout_at_first = run->stdout_ready();
      exited_at_first = run->exited();
    }
    lines.push_back(*line);
  }
  const std::string out = run->read_stdout();
  EXPECT_EQ(wait_exit(run->pid), 0);
  std::string all;
  for (const auto& l : lines) all += l + "\n";
  // The server's own stderr ("Starting … server") is kept as a log and printed at the end.
  ASSERT_GE(lines.size(), 4u) << all;
  EXPECT_EQ(lines[0], "trigger-long-running-operation: progress 1/4");
  EXPECT_EQ(lines[3], "trigger-long-running-operation: progress 4/4");
  for (std::size_t i = 4; i < lines.size(); ++i) EXPECT_TRUE(lines[i].starts_with("[stderr] ")) << all;
  EXPECT_FALSE(stdout_at_first) << all;
  EXPECT_FALSE(exited_at_first) << all;
  EXPECT_NE(out.find("Long running operation completed"), std::string::npos) << out;
}

}  // namespace
}  // namespace taskyon::testing
