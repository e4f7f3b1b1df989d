// Runs of `tycli serve` (http/runs.h, invoke/external_run.h; issue 14): calls a
// browser page executes while the server keeps the records. A real server
// process and client (served.h), the records read back with the CLI; the
// deadline rules on an in-process server with a short grace.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "served.h"
#include "taskyon/http/runs.h"
#include "taskyon/http/server.h"
#include "taskyon/store/store.h"
#include "test_util.h"

namespace taskyon {
namespace {

using ::testing::HasSubstr;
using json::Value;
using testing::body_of;
using testing::Served;

const Value kBrowser = {{"kind", "browser"}, {"version", "Chromium 156.0.8078.73"}};

class ServeRuns : public ::testing::Test {
 protected:
  testing::CommandResult tycli(const std::vector<std::string>& args) { return testing::run_tycli(args, home.path()); }
  Value cli_json(const std::vector<std::string>& args) { return testing::cli_json(home.path(), args); }
  // Installs `manifest` with the CLI; its revision id.
  std::string install(const Value& manifest) {
    const auto file = home.write(manifest["name"].get<std::string>() + ".json", manifest.dump());
    auto out = cli_json({"tool", "install", file});
    return out.is_array() ? out[0]["revision"].get<std::string>() : "";
  }
  static Value start(const Served& s, const Value& body) { return body_of(s.post("/v1/runs", body)); }

  Value upper = testing::js_tool("upper", "({input}) => input.toUpperCase()");
  testing::TempDir home;
};

TEST_F(ServeRuns, ARunIsPinnedHereRunElsewhereAndStoredWithTheBrowsersRuntime) {
  const std::string revision = install(upper);
  Served s(home);
  ASSERT_TRUE(s.up()) << s.log();
  auto started = s.post("/v1/runs", Value{{"tool", "upper"}, {"args", {{"input", "hi"}}}, {"runtime", kBrowser}});
  ASSERT_TRUE(started);
  ASSERT_EQ(started->status, 201) << started->body;
  const Value run = body_of(started);
  EXPECT_EQ(run["tool"]["revision"], revision);
  EXPECT_EQ(run["code"], upper["code"]);  // the pinned revision's code: what the page must run
  const std::string id = run["run"].get<std::string>(), task = run["task"].get<std::string>();
  EXPECT_THAT(id, ::testing::StartsWith("run-"));

  // Tree requests are decided here, under the run's revision and call task.
  auto made = s.post("/v1/runs/" + id + "/requests",
                     Value{{"op", "createSubtasksResult"},
                           {"args", {{"drafts", Value::array({{{"role", "assistant"}, {"content", {{"message", "planned"}}}}})}}}});
  ASSERT_EQ(made->status, 200) << made->body;
  EXPECT_THAT(body_of(made)["value"][0]["id"].get<std::string>(), ::testing::StartsWith("hmac-sha256:"));  // opaque (M14)
  auto resolved = s.post("/v1/runs/" + id + "/requests", Value{{"op", "resolveInvocation"}, {"args", {{"name", "upper"}}}});
  ASSERT_EQ(resolved->status, 200) << resolved->body;
  EXPECT_EQ(body_of(resolved)["value"].size(), 2u);

  auto reported = s.post("/v1/runs/" + id + "/result",
                         Value{{"status", "ok"}, {"value", "HI"}, {"logs", Value::array({{{"level", "log"}, {"text", "upper ran"}}})}});
  ASSERT_EQ(reported->status, 200) << reported->body;
  const Value answer = body_of(reported);
  EXPECT_EQ(answer["task"], task);
  EXPECT_EQ(answer["result"], "HI");
  EXPECT_EQ(answer["runtime"], kBrowser);

  // The CLI sees the call, the subtask and the result in the store.
  const Value tree = cli_json({"task", "tree", task});
  ASSERT_TRUE(tree.is_array()) << tree.dump();
  EXPECT_EQ(tree[0]["toolRevision"], revision);
  EXPECT_EQ(tree[0]["state"], "Completed");
  ASSERT_EQ(tree[0]["children"].size(), 2u) << tree.dump();
  const Value result = cli_json({"task", "show", answer["resultTask"].get<std::string>()});
  EXPECT_EQ(result["content"]["toolResult"]["runtime"], kBrowser);
  EXPECT_EQ(result["content"]["toolResult"]["logs"][0]["text"], "upper ran");
  EXPECT_THAT(tycli({"task", "show", task}).out, HasSubstr("browser Chromium 156.0.8078.73"));

  // The run is over: its id answers nothing more.
  auto again = s.post("/v1/runs/" + id + "/result", Value{{"status", "ok"}, {"value", "again"}});
  EXPECT_EQ(again->status, 404);
  auto late = s.post("/v1/runs/" + id + "/requests", Value{{"op", "storage.get"}, {"args", {{"key", "k"}}}});
  EXPECT_EQ(late->status, 404);
}

TEST_F(ServeRuns, StorageIsDecidedUnderTheRunsRevisionAndAudited) {
  const std::string revision = install(upper);
  Served s(home);
  ASSERT_TRUE(s.up()) << s.log();
  auto request = [&](const std::string& run) {
    return s.post("/v1/runs/" + run + "/requests", Value{{"op", "storage.set"}, {"args", {{"key", "k"}, {"value", 7}}}});
  };
  const Value first = start(s, Value{{"tool", "upper"}, {"args", {{"input", "a"}}}, {"runtime", kBrowser}});
  auto denied = request(first["run"].get<std::string>());
  EXPECT_EQ(denied->status, 403) << denied->body;
  EXPECT_EQ(body_of(denied)["error"]["code"], "denied");
  ASSERT_EQ(tycli({"grant", "storage", "upper"}).exit_code, 0);
  auto allowed = request(first["run"].get<std::string>());
  EXPECT_EQ(allowed->status, 200) << allowed->body;
  // fetch is the egress proxy's, never a run request.
  auto fetch = s.post("/v1/runs/" + first["run"].get<std::string>() + "/requests",
                      Value{{"op", "fetch"}, {"args", {{"url", "https://example.com/"}}}});
  EXPECT_EQ(fetch->status, 400);
  EXPECT_THAT(body_of(fetch)["error"]["message"].get<std::string>(), HasSubstr("/v1/fetch"));
  const Value audit = cli_json({"audit", "--revision", revision});
  std::vector<std::string> rows;
  for (const auto& row : audit) rows.push_back(row["capability"].get<std::string>() + ":" + row["verdict"].get<std::string>());
  EXPECT_THAT(rows, ::testing::ElementsAre("storage.set:deny", "storage.set:allow"));
}

// Every run and request uses the server's one Store, each HTTP thread its own
// connection of it: runs started, asked and finished from many threads at once
// each get their own answers, and every decision and record is stored.
TEST_F(ServeRuns, RunsOnManyThreadsAtOnceShareTheStoreAndKeepTheirOwnRecords) {
  const std::string revision = install(upper);
  ASSERT_EQ(tycli({"grant", "storage", "upper"}).exit_code, 0);
  Served s(home);
  ASSERT_TRUE(s.up()) << s.log();
  constexpr int kThreads = 8, kRunsEach = 4;
  std::mutex m;
  std::vector<std::string> wrong, tasks;
  auto one_run = [&](const std::string& input) -> std::string {
    auto started = s.post("/v1/runs", Value{{"tool", "upper"}, {"args", {{"input", input}}}, {"runtime", kBrowser}});
    if (!started || started->status != 201) return "start: " + (started ? started->body : std::string("no answer"));
    const Value run = body_of(started);
    const std::string requests = "/v1/runs/" + run["run"].get<std::string>() + "/requests";
    auto set = s.post(requests, Value{{"op", "storage.set"}, {"args", {{"key", input}, {"value", input}}}});
    if (!set || set->status != 200) return "set: " + (set ? set->body : std::string("no answer"));
    auto got = s.post(requests, Value{{"op", "storage.get"}, {"args", {{"key", input}}}});
    if (!got || got->status != 200 || body_of(got)["value"] != input)
      return "get " + input + ": " + (got ? got->body : std::string("no answer"));
    auto done = s.post("/v1/runs/" + run["run"].get<std::string>() + "/result", Value{{"status", "ok"}, {"value", input}});
    if (!done || done->status != 200 || body_of(done)["result"] != input || body_of(done)["task"] != run["task"])
      return "result " + input + ": " + (done ? done->body : std::string("no answer"));
    std::lock_guard lock(m);
    tasks.push_back(run["task"].get<std::string>());
    return "";
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRunsEach; ++i)
        if (auto failed = one_run("t" + std::to_string(t) + "r" + std::to_string(i)); !failed.empty()) {
          std::lock_guard lock(m);
          wrong.push_back(failed);
        }
    });
  for (auto& t : threads) t.join();
  EXPECT_THAT(wrong, ::testing::IsEmpty());
  ASSERT_EQ(tasks.size(), static_cast<std::size_t>(kThreads * kRunsEach));
  std::map<std::string, int> rows;
  for (const auto& row : cli_json({"audit", "--revision", revision}))
    ++rows[row["capability"].get<std::string>() + ":" + row["verdict"].get<std::string>()];
  EXPECT_EQ(rows["storage.set:allow"], kThreads * kRunsEach);
  EXPECT_EQ(rows["storage.get:allow"], kThreads * kRunsEach);
  for (const auto& task : {tasks.front(), tasks.back()})
    EXPECT_EQ(cli_json({"task", "show", task})["state"], "Completed") << task;
}

TEST_F(ServeRuns, OnlyValidCallsOfSandboxedCodeStart) {
  install(upper);
  const auto bundle = home.write("tiny.js", "module.exports = 1;\n");
  const Value module = cli_json({"module", "add", bundle, "--name", "tiny"});
  ASSERT_TRUE(module.is_object() && module.contains("id")) << module.dump();
  Value with_module = testing::js_tool("usesmodule", "() => require('tiny')");
  with_module["modules"] = {{"tiny", module["id"]}};
  install(with_module);
  Value sha256;
  for (const auto& n : cli_json({"tool", "natives"}))
    if (n["name"] == "sha256") sha256 = n;
  ASSERT_TRUE(sha256.is_object());
  const auto native_file = home.write("native.json", sha256.dump());
  ASSERT_EQ(tycli({"tool", "install", "--trust", native_file}).exit_code, 0);
  Served s(home);
  ASSERT_TRUE(s.up()) << s.log();
  auto code_of = [&](const Value& body) {
    auto r = s.post("/v1/runs", body);
    return std::to_string(r->status) + " " + body_of(r)["error"]["code"].get<std::string>();
  };
  EXPECT_EQ(code_of({{"tool", "upper"}, {"args", {{"input", 1}}}, {"runtime", kBrowser}}), "400 invalid_arguments");
  EXPECT_EQ(code_of({{"tool", "nosuch"}, {"runtime", kBrowser}}), "404 not_found");
  EXPECT_EQ(code_of({{"tool", "sha256"}, {"args", {{"text", "x"}}}, {"runtime", kBrowser}}), "400 bad_usage");  // host authority stays here
  EXPECT_EQ(code_of({{"tool", "usesmodule"}, {"runtime", kBrowser}}), "400 bad_usage");       // no module loader in a page
  EXPECT_EQ(code_of({{"tool", "upper"}, {"args", {{"input", "x"}}}}), "400 bad_usage");      // the runtime is required
  EXPECT_EQ(code_of({{"tool", "upper"}, {"args", {{"input", "x"}}}, {"runtime", {{"kind", "browser"}, {"version", "a\nb"}}}}),
            "400 bad_usage");
  EXPECT_EQ(code_of({{"tool", "upper"}, {"args", {{"input", "x"}}}, {"runtime", kBrowser}, {"timeoutMs", 0}}), "400 bad_usage");
  EXPECT_EQ(code_of({{"tool", "upper"}, {"args", {{"input", "x"}}}, {"runtime", kBrowser}, {"revision", "sha256:00"}}),
            "400 bad_usage");  // no member names a revision: the run's is the one it pinned
  auto listed = body_of(s.get("/v1/runs"));
  EXPECT_TRUE(listed.is_array() && listed.empty()) << listed.dump();  // nothing refused was left open
  // Without the token nothing starts (H1).
  auto anonymous = s.post("/v1/runs", Value{{"tool", "upper"}, {"args", {{"input", "x"}}}, {"runtime", kBrowser}}.dump(), {});
  EXPECT_EQ(anonymous->status, 401);
}

TEST_F(ServeRuns, ReportedOutcomesAreCheckedBeforeAnythingIsStored) {
  install(upper);
  Served s(home);
  ASSERT_TRUE(s.up()) << s.log();
  const Value run = start(s, Value{{"tool", "upper"}, {"args", {{"input", "a"}}}, {"runtime", kBrowser}});
  const std::string path = "/v1/runs/" + run["run"].get<std::string>() + "/result";
  for (const Value& bad : {Value{{"status", "fine"}, {"value", 1}}, Value{{"status", "ok"}},
                           Value{{"status", "ok"}, {"value", 1}, {"error", "x"}}, Value{{"status", "timeout"}},
                           Value{{"status", "ok"}, {"value", 1}, {"logs", Value::array({{{"level", "shout"}, {"text", "x"}}})}},
                           Value{{"status", "ok"}, {"value", 1}, {"durationMs", -1}}, Value{{"status", "ok"}, {"value", 1}, {"extra", 1}}}) {
    auto r = s.post(path, bad);
    EXPECT_EQ(r->status, 400) << bad.dump() << " " << r->body;
  }
  // Still open: a valid report is stored. Logs past 1000 entries are dropped, and that is said.
  Value logs = Value::array();
  for (int i = 0; i < 1200; ++i) logs.push_back({{"level", "log"}, {"text", std::to_string(i)}});
  auto stored = s.post(path, Value{{"status", "tool_error"}, {"error", "TypeError: boom"}, {"logs", logs}});
  ASSERT_EQ(stored->status, 200) << stored->body;
  const Value answer = body_of(stored);
  EXPECT_EQ(answer["status"], "tool_error");
  EXPECT_EQ(answer["logs"].size(), 1001u);
  EXPECT_THAT(answer["logs"][1000]["text"].get<std::string>(), HasSubstr("200 more log entries dropped"));
  EXPECT_EQ(cli_json({"task", "show", answer["task"].get<std::string>()})["state"], "Error");
}

TEST_F(ServeRuns, ASandboxLogEntryNamesARevisionTheStoreHoldsUnderItsOwnName) {
  const std::string revision = install(upper);
  Served s(home);
  ASSERT_TRUE(s.up()) << s.log();
  auto post = [&](const Value& body) { return s.post("/v1/sandbox-log", body)->status; };
  EXPECT_EQ(post({{"revision", "sha256:" + std::string(64, '0')}, {"tool", "upper"}, {"reason", "timeout"}}), 404);
  EXPECT_EQ(post({{"revision", revision}, {"tool", "other"}, {"reason", "timeout"}}), 400);
  EXPECT_EQ(post({{"revision", revision}, {"tool", "upper"}, {"reason", "Time Out"}}), 400);
  EXPECT_EQ(post({{"revision", revision}, {"tool", "upper"}, {"reason", "timeout"}, {"detail", "a\x1b[31m"}}), 400);
  EXPECT_EQ(post({{"revision", revision}, {"tool", "upper"}, {"reason", "timeout"}, {"detail", "sandbox 3, session alice"}}), 201);
  const Value log = cli_json({"sandbox", "log"});
  ASSERT_EQ(log.size(), 1u) << log.dump();
  EXPECT_EQ(log[0]["reason"], "browser: timeout: sandbox 3, session alice");
  EXPECT_EQ(log[0]["revision"], revision);
}

TEST_F(ServeRuns, AnOpenRunIsStoredCancelledWhenTheServerStops) {
  install(upper);
  std::string task;
  {
    Served s(home);
    ASSERT_TRUE(s.up()) << s.log();
    task = start(s, Value{{"tool", "upper"}, {"args", {{"input", "a"}}}, {"runtime", kBrowser}})["task"].get<std::string>();
    EXPECT_EQ(s.stop(SIGTERM), 0);
  }
  const Value tree = cli_json({"task", "tree", task});
  ASSERT_TRUE(tree.is_array()) << tree.dump();
  EXPECT_EQ(tree[0]["state"], "Cancelled");
  EXPECT_THAT(tree[0]["children"][0]["content"]["toolResult"]["error"]["message"].get<std::string>(),
              HasSubstr("before the page reported its result"));
}

TEST_F(ServeRuns, AReportedValueTooDeepToReadBackIsStoredAsAnError) {
  install(upper);
  Served s(home);
  ASSERT_TRUE(s.up()) << s.log();
  const Value run = start(s, Value{{"tool", "upper"}, {"args", {{"input", "a"}}}, {"runtime", kBrowser}});
  Value deep = Value::array();
  for (int i = 1; i < 511; ++i) deep = Value::array({deep});
  auto r = s.post("/v1/runs/" + run["run"].get<std::string>() + "/result", Value{{"status", "ok"}, {"value", deep}});
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(body_of(r)["status"], "tool_error");
  auto tree = tycli({"task", "tree", run["task"].get<std::string>()});
  EXPECT_EQ(tree.exit_code, 0) << tree.err;  // readable, never "tampered"
}

TEST_F(ServeRuns, OpenRunsAreBoundedInNumberAndBytesAndConcurrentStartsCannotPassTogether) {
  install(upper);
  Served s(home);
  ASSERT_TRUE(s.up()) << s.log();
  const Value small = {{"tool", "upper"}, {"args", {{"input", "a"}}}, {"runtime", kBrowser}};
  std::vector<std::thread> starters;
  std::atomic<int> started{0}, refused{0};
  std::mutex other_mu;
  std::string others;  // what an answer that is neither was, for the failure message
  for (int i = 0; i < 24; ++i)
    starters.emplace_back([&] {
      auto r = s.post("/v1/runs", small);
      if (r && r->status == 201) ++started;
      else if (r && r->status == 429) ++refused;
      else {
        std::lock_guard lock(other_mu);
        others += r ? std::to_string(r->status) + " " + r->body + "; " : "transport: " + httplib::to_string(r.error()) + "; ";
      }
    });
  for (auto& t : starters) t.join();
  EXPECT_EQ(started.load(), 16) << others << s.log();
  EXPECT_EQ(refused.load(), 8) << others << s.log();
  EXPECT_EQ(body_of(s.get("/v1/runs")).size(), 16u);
}

TEST_F(ServeRuns, ARunPastItsDeadlineIsStoredAsATimeoutAlsoWhenTheServerStops) {
  install(upper);
  std::string task;
  {
    Served s(home, {}, {"--timeout", "10"});
    ASSERT_TRUE(s.up()) << s.log();
    task = start(s, Value{{"tool", "upper"}, {"args", {{"input", "a"}}}, {"runtime", kBrowser}, {"timeoutMs", 1}})["task"]
               .get<std::string>();
    std::this_thread::sleep_for(std::chrono::milliseconds(10300));  // its timeout and the 10 s grace, no runs request since
    EXPECT_EQ(s.stop(SIGTERM), 0);
  }
  const Value tree = cli_json({"task", "tree", task});
  ASSERT_TRUE(tree.is_array()) << tree.dump();
  EXPECT_EQ(tree[0]["children"][0]["content"]["toolResult"]["error"]["code"], "timeout");
}

// The deadline: requests past the call's timeout are refused, and a run past
// timeout + grace is stored as a timeout at the next runs request (an
// in-process server, so the grace can be short).
TEST_F(ServeRuns, PastItsDeadlineARunTakesNoRequestsAndIsStoredAsATimeout) {
  install(upper);
  auto token = http::new_token();
  ASSERT_TRUE(token);
  auto server = http::Server::bind({.port = 0, .token = *token});
  ASSERT_TRUE(server) << server.error().describe();
  http::RunsOptions options;
  auto opened = store::Store::open((home.path() / "taskyon.db").string());
  ASSERT_TRUE(opened) << opened.error().describe();
  options.store = std::make_shared<store::Store>(std::move(*opened));
  options.grace = std::chrono::milliseconds(200);
  auto runs = http::mount_runs(**server, options);
  ASSERT_TRUE(runs) << runs.error().describe();
  std::thread serving([&] { (*server)->run(); });
  httplib::Client client("127.0.0.1", (*server)->port());
  const httplib::Headers auth = {{"Authorization", "Bearer " + *token}};
  auto post = [&](const std::string& path, const Value& body) { return client.Post(path, auth, body.dump(), "application/json"); };
  const Value run = body_of(post("/v1/runs", {{"tool", "upper"}, {"args", {{"input", "a"}}}, {"runtime", kBrowser}, {"timeoutMs", 100}}));
  const std::string id = run["run"].get<std::string>();
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  auto late = post("/v1/runs/" + id + "/requests", {{"op", "storage.get"}, {"args", {{"key", "k"}}}});
  EXPECT_EQ(late->status, 409) << late->body;
  EXPECT_EQ(body_of(late)["error"]["code"], "call_ended");
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  auto listed = body_of(client.Get("/v1/runs", auth));  // any runs request stores what is past its deadline
  EXPECT_TRUE(listed.is_array() && listed.empty()) << listed.dump();
  auto result = post("/v1/runs/" + id + "/result", {{"status", "ok"}, {"value", "A"}});
  EXPECT_EQ(result->status, 404);
  (*server)->stop();
  serving.join();
  const Value tree = cli_json({"task", "tree", run["task"].get<std::string>()});
  ASSERT_TRUE(tree.is_array()) << tree.dump();
  EXPECT_EQ(tree[0]["state"], "Error");
  EXPECT_EQ(tree[0]["children"][0]["content"]["toolResult"]["error"]["code"], "timeout");
}

}  // namespace
}  // namespace taskyon
