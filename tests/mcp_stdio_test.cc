// `tycli mcp` (issue 13 items 2 and 7, DESIGN §8 H3-H6) driven by real MCP
// clients: the official TypeScript SDK Client over StdioClientTransport
// (tests/mcp/stdio_client.mjs) and @modelcontextprotocol/inspector-cli. The
// script records what it saw; the assertions are here.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "test_util.h"

namespace taskyon::testing {
namespace {

namespace fs = std::filesystem;
using json::Value;

const std::string kSource = TASKYON_SOURCE_DIR;

bool have_sdk() { return fs::exists(kSource + "/node_modules/@modelcontextprotocol/sdk/package.json"); }

std::string install(const TempDir& home, const std::string& name, const Value& manifest) {
  auto file = home.write(name + ".json", manifest.dump());
  auto r = run_tycli({"--json", "tool", "install", file}, home.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto out = Value::parse(r.out, nullptr, false);
  if (out.is_array() && !out.empty()) out = out[0];
  return out.is_object() && out.contains("revision") ? out["revision"].get<std::string>() : std::string();
}

Value example(const std::string& name) {
  auto r = run_command({"cat", kSource + "/examples/tools/" + name + ".json"}, fs::temp_directory_path());
  return Value::parse(r.out);
}

Value sandbox_log(const fs::path& home) {
  auto r = run_tycli({"--json", "sandbox", "log", "--limit", "0"}, home);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return Value::parse(r.out, nullptr, false);
}

// The structuredContent of a recorded tools/call result.
Value structured(const Value& result) { return result.value("structuredContent", Value()); }

class McpStdio : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_sdk()) GTEST_SKIP() << "node_modules/@modelcontextprotocol/sdk is missing (scripts/setup.sh)";
    fs::create_directories(home_ / "tmp");
    install(home_, "counter", example("counter"));
    v1_ = install(home_, "uppercase", example("uppercase"));
    Value v2 = example("uppercase");
    v2["code"] = "({input}) => input.toUpperCase() + '!'";
    v2["description"] = "Converts the input text to upper case, with feeling.";
    v2_ = install(home_, "uppercase-v2", v2);  // stays inactive: the name is bound to v1
    install(home_, "fails", js_tool("fails", "() => { throw new RangeError('the input is out of range'); }"));
    install(home_, "stuck", js_tool("stuck", "async () => { console.log('stuck'); await new Promise(() => {}); }"));
    install(home_, "chatty", js_tool("chatty", "async (args, context) => { console.log('one'); "
                                                "context.progress(1, 2, 'half'); console.warn('two'); "
                                                "context.progress(2, 2); "
                                                // The TS SDK client runs notification handlers in a microtask
                                                // but responses at once: progress read in the same chunk as
                                                // the result finds its handler gone. A real tool works on
                                                // after reporting; so does this one.
                                                "await new Promise((r) => setTimeout(r, 100)); "
                                                "return {done: true}; }"));
    ASSERT_FALSE(v1_.empty());
    ASSERT_FALSE(v2_.empty());
    ASSERT_NE(v1_, v2_);
  }

  TempDir home_;
  std::string v1_, v2_;
};

TEST_F(McpStdio, SdkClientSeesToolsResultsErrorsSessionsCancellationAndListChanged) {
  const Value config = {{"tycli", TYCLI_PATH}, {"home", home_.path().string()}, {"v1", v1_}, {"v2", v2_}};
  auto r = run_command({"node", kSource + "/tests/mcp/stdio_client.mjs", config.dump()}, home_.path());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const Value seen = Value::parse(r.out, nullptr, false);
  ASSERT_TRUE(seen.is_object()) << r.out << r.err;
  const std::string all = seen.dump(1);

  // initialize: our name, tools with listChanged, logging.
  EXPECT_EQ(seen["serverVersion"]["name"], "taskyon") << all;
  EXPECT_EQ(seen["capabilities"]["tools"]["listChanged"], true) << all;
  EXPECT_TRUE(seen["capabilities"].contains("logging")) << all;

  // tools/list (H4): reduced signatures, inputSchema = parameters, the pinned revision in _meta, no code.
  const Value& tools = seen["tools"];
  ASSERT_TRUE(tools.is_array()) << all;
  bool found_upper = false;
  for (const auto& t : tools) {
    EXPECT_FALSE(t.contains("code")) << t.dump();
    EXPECT_EQ(t["inputSchema"]["type"], "object") << t.dump();
    EXPECT_TRUE(t["_meta"]["taskyon/revision"].get<std::string>().starts_with("sha256:")) << t.dump();
    if (t["name"] == "uppercase") {
      found_upper = true;
      EXPECT_EQ(t["_meta"]["taskyon/revision"], v1_);
      EXPECT_EQ(t["inputSchema"], example("uppercase")["parameters"]);
    }
  }
  EXPECT_TRUE(found_upper) << all;

  // H3: session A counts 1, 2, then 3 after session B counted 1 on its own.
  ASSERT_EQ(seen["countA"].size(), 3u) << all;
  EXPECT_EQ(structured(seen["countA"][0])["count"], 1) << all;
  EXPECT_EQ(structured(seen["countA"][1])["count"], 2) << all;
  EXPECT_EQ(structured(seen["countB"][0])["count"], 1) << all;
  EXPECT_EQ(structured(seen["countA"][2])["count"], 3) << all;

  // A result: structuredContent (a non-object wrapped as {"result"}), text content, _meta (H4).
  const Value& upper = seen["upper"];
  EXPECT_EQ(structured(upper)["result"], "ABC") << all;
  EXPECT_EQ(upper["content"][0]["type"], "text");
  EXPECT_EQ(upper["content"][0]["text"], "\"ABC\"");
  EXPECT_EQ(upper["isError"], false);
  EXPECT_EQ(upper["_meta"]["taskyon/revision"], v1_);
  const std::string task = upper["_meta"]["taskyon/task"].get<std::string>();
  EXPECT_TRUE(task.starts_with("sha256:")) << all;
  auto shown = run_tycli({"--json", "task", "show", task}, home_.path());
  EXPECT_EQ(shown.exit_code, 0) << "the call is stored under the task id the result names: " << shown.err;

  // Tool errors and invalid arguments are isError results a model can read.
  EXPECT_EQ(seen["toolError"]["isError"], true) << all;
  EXPECT_NE(seen["toolError"]["content"][0]["text"].get<std::string>().find("out of range"), std::string::npos) << all;
  EXPECT_EQ(seen["toolError"]["_meta"]["taskyon/status"], "tool_error") << all;
  EXPECT_EQ(seen["invalidArgs"]["isError"], true) << all;
  EXPECT_NE(seen["invalidArgs"]["content"][0]["text"].get<std::string>().find("Invalid arguments"), std::string::npos)
      << all;
  EXPECT_EQ(seen["unknownTool"]["thrown"]["code"], -32602) << all;

  // Progress and logs arrive while the call runs, before its result.
  EXPECT_EQ(structured(seen["chatty"])["done"], true) << all;
  ASSERT_EQ(seen["progress"].size(), 2u) << all;
  EXPECT_EQ(seen["progress"][0]["progress"], 1);
  EXPECT_EQ(seen["progress"][0]["total"], 2);
  EXPECT_EQ(seen["progress"][0]["message"], "half");
  ASSERT_EQ(seen["chattyLogs"].size(), 2u) << all;
  EXPECT_EQ(seen["chattyLogs"][0]["level"], "info");
  EXPECT_EQ(seen["chattyLogs"][1]["level"], "warning");
  std::vector<std::string> order;
  for (const auto& e : seen["events"]) order.push_back(e["what"].get<std::string>());
  auto at = [&](const std::string& what) { return std::find(order.begin(), order.end(), what) - order.begin(); };
  EXPECT_LT(at("log:one"), at("result:chatty")) << all;
  EXPECT_LT(at("progress:2"), at("result:chatty")) << all;

  // H5: the cancelled call's sandbox was destroyed ("cancelled") and the call stored as Cancelled.
  EXPECT_TRUE(seen["stuck"].contains("thrown")) << all;  // the SDK rejects an aborted request
  const Value log = sandbox_log(home_.path());
  int cancelled = 0;
  for (const auto& d : log) cancelled += d["reason"] == "cancelled" && d["tool"] == "stuck" ? 1 : 0;
  EXPECT_EQ(cancelled, 1) << log.dump(1);
  auto q = run_command({"sqlite3", (home_ / "taskyon.db").string(),
                        "SELECT count(*) FROM tasks WHERE state = 'Cancelled' AND kind = 'functionCall'"},
                       home_.path());
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_EQ(std::stoi(q.out), 1) << "the cancelled call is stored as Cancelled";

  // H6: list_changed arrived, the next tools/list names v2, a call by name runs v2, one pinned to v1 runs v1.
  EXPECT_EQ(seen["listChanged"], true) << all;
  for (const auto& t : seen["toolsAfter"]) {
    if (t["name"] == "uppercase") {
      EXPECT_EQ(t["_meta"]["taskyon/revision"], v2_);
    }
  }
  EXPECT_EQ(structured(seen["upperV2"])["result"], "ABC!") << all;
  EXPECT_EQ(structured(seen["upperV1Pinned"])["result"], "ABC") << all;
  auto rerun = run_tycli({"--json", "call", "--task", task}, home_.path());
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  EXPECT_EQ(Value::parse(rerun.out)["result"], "ABC") << "a stored call still runs v1 after v2 was activated";

  // Sessions end with the connection: their sandboxes are in the log as session_closed or shutdown.
  int ended = 0;
  for (const auto& d : log) ended += d["reason"] == "session_closed" ? 1 : 0;
  EXPECT_GE(ended, 1) << log.dump(1);
}

TEST_F(McpStdio, InspectorCliListsTheTools) {
  const std::string inspector = kSource + "/node_modules/.bin/mcp-inspector-cli";
  if (!fs::exists(inspector)) GTEST_SKIP() << "mcp-inspector-cli is missing";
  // The inspector reads its own package.json relative to the working directory: run it from its build/.
  const std::string build = kSource + "/node_modules/@modelcontextprotocol/inspector-cli/build";
  auto r = run_command({"sh", "-c", "cd \"$1\" && shift && exec \"$@\"", "sh", build, inspector, "--cli", "-e",
                        "TASKYON_HOME=" + home_.path().string(), "-e", "TMPDIR=" + (home_ / "tmp").string(),
                        TYCLI_PATH, "mcp", "--method", "tools/list"},
                       home_.path());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const Value out = Value::parse(r.out, nullptr, false);
  ASSERT_TRUE(out.is_object()) << r.out;
  std::vector<std::string> names;
  for (const auto& t : out["tools"]) names.push_back(t["name"].get<std::string>());
  EXPECT_EQ(names, (std::vector<std::string>{"chatty", "counter", "fails", "stuck", "uppercase"})) << r.out;
}

// A client that writes its requests and closes stdin at once (`printf … |
// tycli mcp`) still gets every answer: EOF ends the session only after the
// calls already received have answered, each within its own timeout.
TEST(McpStdioEof, CallsReceivedBeforeStdinClosesStillAnswer) {
  TempDir home;
  install(home, "late", js_tool("late", "async ({input}) => { await new Promise((r) => setTimeout(r, 300)); "
                                        "return 'late ' + input; }"));
  install(home, "stuck", js_tool("stuck", "async () => { await new Promise(() => {}); }"));
  const std::string init =
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},)"
      R"("clientInfo":{"name":"printf","version":"1"}}})";
  const std::string ready = R"({"jsonrpc":"2.0","method":"notifications/initialized"})";
  const std::string late = R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"late","arguments":{"input":"x"}}})";
  const std::string stuck = R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"stuck","arguments":{}}})";
  auto r = run_command({"sh", "-c", "printf '%s\\n' \"$1\" \"$2\" \"$3\" \"$4\" | \"$5\" mcp --timeout 800", "sh", init,
                        ready, late, stuck, TYCLI_PATH},
                       home.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  Value answers = Value::object();
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    auto v = Value::parse(line, nullptr, false);
    if (v.is_object() && v.contains("id")) answers[v["id"].dump()] = v;
  }
  ASSERT_TRUE(answers.contains("2")) << r.out << r.err;
  EXPECT_EQ(structured(answers["2"]["result"]).dump(), Value({{"result", "late x"}}).dump()) << answers["2"].dump();
  // The stuck call ends at its own timeout, as an error result the client reads, not a silent cancel.
  ASSERT_TRUE(answers.contains("3")) << r.out << r.err;
  EXPECT_EQ(answers["3"]["result"]["isError"], true) << answers["3"].dump();
  EXPECT_EQ(answers["3"]["result"]["_meta"]["taskyon/status"], "timeout") << answers["3"].dump();
  EXPECT_NE(r.err.find("stdin closed; finishing 2 running call(s)"), std::string::npos) << r.err;
}

// A client gone altogether (stdin closed and its end of stdout closed too) is a
// disconnect (H5): the running call is cancelled and its sandbox destroyed at
// once, not left to run to its timeout for nobody.
TEST(McpStdioEof, AClientGoneAltogetherCancelsTheRunningCall) {
  TempDir home;
  install(home, "stuck", js_tool("stuck", "async () => { await new Promise(() => {}); }"));
  const std::string init =
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},)"
      R"("clientInfo":{"name":"gone","version":"1"}}})";
  const std::string ready = R"({"jsonrpc":"2.0","method":"notifications/initialized"})";
  const std::string stuck = R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"stuck","arguments":{}}})";
  // `head -c 1` reads the first byte of the answer to initialize and exits: stdout's reader is gone.
  auto r = run_command({"sh", "-c", "printf '%s\\n' \"$1\" \"$2\" \"$3\" | \"$4\" mcp --timeout 5000 | head -c 1 >/dev/null",
                        "sh", init, ready, stuck, TYCLI_PATH},
                       home.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const Value log = sandbox_log(home.path());
  int cancelled = 0, timed_out = 0;
  for (const auto& d : log) {
    cancelled += d["tool"] == "stuck" && d["reason"] == "cancelled" ? 1 : 0;
    timed_out += d["tool"] == "stuck" && d["reason"] == "timeout" ? 1 : 0;
  }
  EXPECT_EQ(cancelled, 1) << log.dump();
  EXPECT_EQ(timed_out, 0) << log.dump();
}

// `tycli mcp` as a client process meets it, with the test holding both ends:
// stdin is one end of a socketpair (written with MSG_NOSIGNAL: a tycli that
// died is an error here, not a SIGPIPE), stdout a pipe, stderr a file.
class McpProcess {
 public:
  McpProcess(const TempDir& home, const std::vector<std::string>& args) : err_log_(home / "mcp.err") {
    fs::create_directories(home / "tmp");
    int in[2], out[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0 || ::pipe2(out, O_CLOEXEC) != 0) return;
    std::vector<std::string> argv_s = {TYCLI_PATH};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::string home_env = "TASKYON_HOME=" + home.path().string();
    std::string tmp_env = "TMPDIR=" + (home / "tmp").string();
    std::string path_env = std::string("PATH=") + (std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin");
    std::vector<char*> envp = {home_env.data(), tmp_env.data(), path_env.data(), nullptr};
    const int err = ::open(err_log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(in[1], 0);
      ::dup2(out[1], 1);
      ::dup2(err, 2);
      ::execve(argv[0], argv.data(), envp.data());
      ::_exit(127);
    }
    ::close(err);
    ::close(in[1]);
    ::close(out[1]);
    to_ = in[0];
    from_ = out[0];
  }
  ~McpProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      wait_exit(pid_);
    }
    if (to_ >= 0) ::close(to_);
    if (from_ >= 0) ::close(from_);
  }
  int pid() const { return pid_; }
  // Waits for tycli to exit (after a signal or closed stdin): its exit code. Once only.
  int wait() {
    const int rc = wait_exit(pid_);
    pid_ = -1;
    return rc;
  }
  std::string err() const { return read_file(err_log_); }

  bool send(std::string line) {
    line += '\n';
    std::string_view rest = line;
    while (!rest.empty()) {
      const ssize_t n = ::send(to_, rest.data(), rest.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      rest.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }
  bool send(const Value& message) { return send(message.dump()); }
  void close_stdin() { ::shutdown(to_, SHUT_WR); }

  // The first message `match` accepts (kept ones first, then read, up to 20 s); null if none came.
  template <class Match>
  Value wait_for(Match match) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (std::size_t seen = 0;;) {
      for (; seen < messages_.size(); ++seen)
        if (match(messages_[seen])) return messages_[seen];
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
      if (left.count() <= 0 || !read_some(static_cast<int>(left.count()))) return Value();
    }
  }
  Value response(int id) {
    return wait_for([id](const Value& m) { return m.contains("id") && m["id"] == id && !m.contains("method"); });
  }
  const std::vector<Value>& messages() const { return messages_; }

  // initialize (at `version`) and notifications/initialized; the result of initialize.
  Value initialize(const std::string& version = "2025-06-18") {
    send(Value{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"},
               {"params", {{"protocolVersion", version}, {"capabilities", Value::object()},
                           {"clientInfo", {{"name", "test"}, {"version", "1"}}}}}});
    send(Value{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
    return response(1);
  }
  bool call(int id, const std::string& tool, const Value& args = Value::object()) {
    return send(Value{{"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/call"},
                      {"params", {{"name", tool}, {"arguments", args}}}});
  }

 private:
  bool read_some(int timeout_ms) {
    pollfd p{from_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return false;
    char buf[65536];
    const ssize_t n = ::read(from_, buf, sizeof buf);
    if (n <= 0) return false;
    pending_.append(buf, static_cast<std::size_t>(n));
    for (std::size_t nl; (nl = pending_.find('\n')) != std::string::npos; pending_.erase(0, nl + 1))
      messages_.push_back(Value::parse(pending_.substr(0, nl), nullptr, false));
    return true;
  }

  fs::path err_log_;
  int pid_ = -1, to_ = -1, from_ = -1;
  std::string pending_;
  std::vector<Value> messages_;
};

std::string stdio_comm(int pid) {
  std::string comm;
  std::getline(std::ifstream("/proc/" + std::to_string(pid) + "/comm"), comm);
  return comm;
}

// Waits (bounded) until a sandbox under home/tmp has set its process title to
// `title`: the tool reached its stuck point. Returns that sandbox's pid, or 0.
int stdio_wait_for_title(const fs::path& home, const std::string& title) {
  for (int i = 0; i < 600; ++i) {
    for (int pid : processes_in(home / "tmp"))
      if (stdio_comm(pid) == title) return pid;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return 0;
}

// Gone: no such process, or only its zombie (an orphan init has not reaped yet).
bool stdio_gone(int pid) {
  if (::kill(pid, 0) == -1 && errno == ESRCH) return true;
  std::string stat;
  std::getline(std::ifstream("/proc/" + std::to_string(pid) + "/stat"), stat);
  const auto paren = stat.rfind(')');
  return paren == std::string::npos || (paren + 2 < stat.size() && stat[paren + 2] == 'Z');
}

std::string stdio_sql(const fs::path& home, const std::string& query) {
  auto r = run_command({"sqlite3", (home / "taskyon.db").string(), query}, home);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

// SIGTERM or SIGINT to `tycli mcp` while a call runs (docs/mcp.md): it exits
// 128 + N at once, the running call is stored as Cancelled, its sandbox is
// destroyed (no process left) and logged "interrupted".
class McpSignal : public ::testing::TestWithParam<int> {};

TEST_P(McpSignal, ARunningCallIsCancelledAndNoSandboxIsLeft) {
  const int signal = GetParam();
  TempDir home;
  install(home, "stuck", js_tool("stuck", "async () => { process.title = 'tystuck'; await new Promise(() => {}); }"));
  McpProcess mcp(home, {"mcp", "--timeout", "60000"});
  ASSERT_GT(mcp.pid(), 0);
  ASSERT_TRUE(mcp.initialize().contains("result")) << mcp.err();
  ASSERT_TRUE(mcp.call(2, "stuck"));
  const int sandbox = stdio_wait_for_title(home.path(), "tystuck");
  ASSERT_GT(sandbox, 0) << "the stuck tool never ran: " << mcp.err();
  ::kill(mcp.pid(), signal);
  EXPECT_EQ(mcp.wait(), 128 + signal) << mcp.err();
  EXPECT_NE(mcp.err().find("stopped by " + std::string(signal == SIGTERM ? "SIGTERM" : "SIGINT")), std::string::npos)
      << mcp.err();
  EXPECT_TRUE(stdio_gone(sandbox)) << "the sandbox outlived tycli mcp";
  EXPECT_TRUE(processes_in(home / "tmp").empty()) << "a process is left under the host's TMPDIR";
  const Value log = sandbox_log(home.path());
  ASSERT_EQ(log.size(), 1u) << log.dump(1);
  EXPECT_EQ(log[0]["tool"], "stuck") << log.dump(1);
  // A signal's reason, as `tycli call` and `tycli serve` record it (a
  // disconnect's is "cancelled": McpStdio.ClientThatGoesAwayCancelsItsCalls).
  EXPECT_EQ(log[0]["reason"], "interrupted") << log.dump(1);
  EXPECT_EQ(stdio_sql(home.path(), "SELECT kind, state FROM tasks ORDER BY kind"),
            "functionCall|Cancelled\ntoolResult|Cancelled\n");
}

INSTANTIATE_TEST_SUITE_P(Signals, McpSignal, ::testing::Values(SIGTERM, SIGINT),
                         [](const auto& info) { return std::string(info.param == SIGTERM ? "SIGTERM" : "SIGINT"); });

// At most kMaxConcurrentCalls (16) tools/call run at once per connection: the
// 17th gets an isError result naming the limit, at once; the 16 go on. (The
// 16 calls of one session to one revision queue on its one sandbox, S2: one
// process, however many calls.)
TEST(McpLimits, The17thConcurrentCallOfAConnectionIsRefusedNamingTheLimit) {
  TempDir home;
  install(home, "stuck", js_tool("stuck", "async () => { process.title = 'tystuck'; await new Promise(() => {}); }"));
  install(home, "quick", js_tool("quick", "() => 'ok'"));
  McpProcess mcp(home, {"mcp", "--timeout", "60000"});
  ASSERT_TRUE(mcp.initialize().contains("result")) << mcp.err();
  for (int id = 10; id < 26; ++id) ASSERT_TRUE(mcp.call(id, "stuck"));
  ASSERT_TRUE(mcp.call(26, "stuck"));
  const Value refused = mcp.response(26);
  ASSERT_TRUE(refused.contains("result")) << refused.dump() << mcp.err();
  EXPECT_EQ(refused["result"]["isError"], true) << refused.dump();
  const std::string text = refused["result"]["content"][0]["text"].get<std::string>();
  EXPECT_NE(text.find("at most 16"), std::string::npos) << text;
  for (const auto& m : mcp.messages())
    EXPECT_FALSE(m.contains("id") && m["id"] != 1 && m["id"] != 26) << "one of the 16 answered: " << m.dump();
  // The 16 are still running: cancelling one frees a place for a new call.
  ASSERT_TRUE(mcp.send(Value{{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", 10}}}}));
  Value admitted;
  for (int attempt = 0; attempt < 200; ++attempt) {  // the cancellation is taken in on the host's own time
    ASSERT_TRUE(mcp.call(100 + attempt, "quick"));
    admitted = mcp.response(100 + attempt);
    if (admitted.contains("result") && admitted["result"].value("isError", true) == false) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(admitted["result"]["structuredContent"]["result"], "ok") << admitted.dump();
  ::kill(mcp.pid(), SIGTERM);
  EXPECT_EQ(mcp.wait(), 128 + SIGTERM);
  EXPECT_TRUE(processes_in(home / "tmp").empty());
}

// --prestart N (issue 19, as for tycli serve): hardened, not yet loaded
// sandboxes are started before any request, a revision's first call takes
// one (the tool runs in a workdir that was there before the request), and
// none is left once stdin closes; a count past 16 is refused naming the flag,
// before anything starts.
TEST(McpPrestart, SandboxesAreReadyBeforeTheFirstRequestAndNoneIsLeftAtExit) {
  TempDir home;
  install(home, "quick", js_tool("quick", "() => process.cwd()"));
  auto refused = run_tycli({"mcp", "--prestart", "17"}, home.path());
  EXPECT_EQ(refused.exit_code, 2) << refused.out << refused.err;
  EXPECT_NE(refused.err.find("--prestart"), std::string::npos) << refused.err;
  McpProcess mcp(home, {"mcp", "--prestart", "2"});
  ASSERT_GT(mcp.pid(), 0);
  std::set<std::string> spares;
  for (int i = 0; i < 600 && spares.size() < 2; ++i) {
    spares = working_directories_in(home / "tmp");
    if (spares.size() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(spares.size(), 2u) << "the sandboxes were not started before the first request: " << mcp.err();
  ASSERT_TRUE(mcp.initialize().contains("result")) << mcp.err();
  ASSERT_TRUE(mcp.call(2, "quick"));
  const Value ran_in = structured(mcp.response(2)["result"])["result"];
  ASSERT_TRUE(ran_in.is_string()) << ran_in.dump() << mcp.err();
  EXPECT_TRUE(spares.contains(ran_in.get<std::string>())) << ran_in << " is not a pre-started sandbox's workdir";
  mcp.close_stdin();
  EXPECT_EQ(mcp.wait(), 0) << mcp.err();
  EXPECT_TRUE(processes_in(home / "tmp").empty()) << "a process is left under the host's TMPDIR";
}

// Calls to different revisions run in parallel (issue 13 item 4): two tools
// that each wait 2.5 s, called at once on one connection, overlap. Asserted by
// the times each tool saw (its start before the other's end), not by a
// wall-clock threshold.
TEST(McpParallel, CallsToDifferentRevisionsOverlap) {
  TempDir home;
  const std::string code = "async () => { const start = Date.now(); await new Promise((r) => setTimeout(r, 2500)); "
                           "return {start, end: Date.now()}; }";
  install(home, "slow-a", js_tool("slow-a", code));
  install(home, "slow-b", js_tool("slow-b", code));
  McpProcess mcp(home, {"mcp", "--timeout", "30000"});
  ASSERT_TRUE(mcp.initialize().contains("result")) << mcp.err();
  ASSERT_TRUE(mcp.call(2, "slow-a"));
  ASSERT_TRUE(mcp.call(3, "slow-b"));
  const Value a = mcp.response(2)["result"]["structuredContent"];
  const Value b = mcp.response(3)["result"]["structuredContent"];
  ASSERT_TRUE(a.contains("start") && b.contains("start")) << a.dump() << b.dump() << mcp.err();
  EXPECT_LT(a["start"].get<double>(), b["end"].get<double>()) << a.dump() << b.dump();
  EXPECT_LT(b["start"].get<double>(), a["end"].get<double>()) << "the calls ran one after the other: " << a.dump()
                                                              << b.dump();
}

// The stdio message bound (mcp::kMaxMessageBytes, 8 MiB): a longer line is
// answered -32600 (id null) and dropped up to its newline; the connection
// goes on with the next request.
TEST(McpStdioLimits, ALineOver8MiBGetsInvalidRequestAndTheConnectionGoesOn) {
  TempDir home;
  McpProcess mcp(home, {"mcp"});
  ASSERT_TRUE(mcp.initialize().contains("result")) << mcp.err();
  const std::string head = R"({"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":")";
  ASSERT_TRUE(mcp.send(head + std::string((8u << 20) - head.size() + 16, 'x') + "\"}}"));
  const Value refused = mcp.wait_for([](const Value& m) { return m.contains("error"); });
  ASSERT_TRUE(refused.is_object()) << "no answer to the oversized line: " << mcp.err();
  EXPECT_EQ(refused["error"]["code"], -32600) << refused.dump();
  EXPECT_TRUE(refused["id"].is_null()) << refused.dump();
  ASSERT_TRUE(mcp.send(Value{{"jsonrpc", "2.0"}, {"id", 3}, {"method", "ping"}}));
  EXPECT_EQ(mcp.response(3)["result"], Value::object()) << mcp.err();
  for (const auto& m : mcp.messages())
    EXPECT_FALSE(m.contains("id") && m["id"] == 2) << "the oversized request was run: " << m.dump();
  mcp.close_stdin();
  EXPECT_EQ(mcp.wait(), 0) << mcp.err();
}

}  // namespace
}  // namespace taskyon::testing
