// tycli as a user runs it: real processes, real exit codes, real output.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "test_util.h"

namespace taskyon {
namespace {

using testing::run_tycli;
const std::string kExamples = std::string(TASKYON_SOURCE_DIR) + "/examples/tools/";

class Cli : public ::testing::Test {
 protected:
  testing::CommandResult tycli(const std::vector<std::string>& args) { return run_tycli(args, home.path()); }
  std::string install(const std::string& file) {
    auto r = tycli({"tool", "install", file});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out.substr(r.out.find(' ') + 1, 71);
  }
  testing::TempDir home;
};

TEST_F(Cli, InstallPrintsNameAndRevisionPerFile) {
  auto r = tycli({"tool", "install", kExamples + "add.json", kExamples + "uppercase.json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::MatchesRegex("add sha256:[0-9a-f]{64}\nuppercase sha256:[0-9a-f]{64}\n"));
}

TEST_F(Cli, SameManifestReorderedAndReindentedHasTheSameRevision) {  // R1
  const auto a = install(kExamples + "add.json");
  const auto b = install(home.write("add-reordered.json", R"({"code":"({num1, num2}) => num1 + num2",
        "runtime":"javascript",   "execution":"sandboxed-code",
  "parameters":{"required":["num1","num2"],"properties":{"num2":{"description":"The second number.","type":"number"},
  "num1":{"type":"number","description":"The first number."}},"type":"object"},
        "description":"Adds two numbers.","name":"add"})"));
  EXPECT_EQ(a, b);
  const auto c = install(home.write("add-changed.json", R"({"code":"({num1, num2}) => num1 - num2",
        "runtime":"javascript","execution":"sandboxed-code",
  "parameters":{"required":["num1","num2"],"properties":{"num2":{"description":"The second number.","type":"number"},
  "num1":{"type":"number","description":"The first number."}},"type":"object"},
        "description":"Adds two numbers.","name":"add"})"));
  EXPECT_NE(a, c);
}

TEST_F(Cli, ManifestWithoutParametersExits2NamingThePointer) {
  auto r = tycli({"tool", "install", home.write("bad.json", R"({"name":"bad","description":"d",
      "execution":"sandboxed-code","runtime":"javascript","code":"() => 1"})")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/parameters"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(home / "taskyon.db"));  // nothing was stored, not even an empty store
}

TEST_F(Cli, DuplicateMembersInAManifestAreRefused) {
  auto r = tycli({"tool", "install", home.write("dup.json", R"({"name":"a","name":"b"})")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("dup.json"), std::string::npos) << r.err;
}

TEST_F(Cli, CallsTheDocumentedTools) {
  install(kExamples + "add.json");
  install(kExamples + "uppercase.json");
  auto add = tycli({"call", "add", "--args", R"({"num1": 2, "num2": 40})"});
  EXPECT_EQ(add.exit_code, 0) << add.err;
  EXPECT_EQ(add.out, "42\n");
  auto up = tycli({"call", "uppercase", "--args", R"({"input": "taskyon"})"});
  EXPECT_EQ(up.out, "\"TASKYON\"\n");
}

TEST_F(Cli, ArgumentsFromAFileAndSchemaErrors) {
  install(kExamples + "add.json");
  auto ok = tycli({"call", "add", "--args", "@" + home.write("args.json", R"({"num1": 1, "num2": 2})")});
  EXPECT_EQ(ok.out, "3\n") << ok.err;
  auto bad = tycli({"call", "add", "--args", R"({"num1": "one", "num2": 2})"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("/num1"), std::string::npos) << bad.err;
}

TEST_F(Cli, LogsAreCapturedNotMixedIntoTheResult) {
  install(kExamples + "counter.json");
  auto r = tycli({"call", "counter", "--args", "{}", "--args", R"({"step": 5})"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "{\n  \"count\": 1\n}\n{\n  \"count\": 6\n}\n");  // retained sandbox: state carries over
  EXPECT_NE(r.err.find("[log] counter is now 6"), std::string::npos) << r.err;
}

TEST_F(Cli, StoredCallRerunsOnItsPinnedRevision) {  // T2
  install(kExamples + "uppercase.json");
  auto first = tycli({"--json", "call", "uppercase", "--args", R"({"input": " a "})"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const auto task = json::parse(first.out)->at("task").get<std::string>();
  const auto v2 = install(std::string(TASKYON_SOURCE_DIR) + "/examples/revisions/uppercase-v2.json");
  ASSERT_EQ(tycli({"tool", "activate", "uppercase", v2.substr(0, 19)}).exit_code, 0);
  EXPECT_EQ(tycli({"call", "uppercase", "--args", R"({"input": " a "})"}).out, "\"A\"\n");
  auto again = tycli({"call", "--task", task});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, "\" A \"\n");
}

TEST_F(Cli, ShowPrintsTheCanonicalDefinitionAndHistoryTheBindings) {
  const auto id = install(kExamples + "add.json");
  auto show = tycli({"tool", "show", "add"});
  EXPECT_EQ(show.out.substr(0, 8), "{\"code\":");
  auto by_prefix = tycli({"tool", "show", id.substr(7, 12)});
  EXPECT_EQ(by_prefix.out, show.out);
  auto hist = tycli({"tool", "history", "add"});  // a table: short ids, --full-ids whole
  EXPECT_NE(hist.out.find(id.substr(0, 19) + "  (active)"), std::string::npos) << hist.out;
  EXPECT_NE(tycli({"--full-ids", "tool", "history", "add"}).out.find(id + "  (active)"), std::string::npos);
  auto unknown = tycli({"tool", "show", "nope"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("nope"), std::string::npos);
}

TEST_F(Cli, EndlessLoopTimesOutAndTheNextCallSucceeds) {
  install(home.write("stuck.json", testing::js_tool("stuck", "() => { while (true) {} }").dump()));
  install(kExamples + "add.json");
  auto r = tycli({"call", "stuck", "--timeout", "300"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("timeout"), std::string::npos) << r.err;
  EXPECT_TRUE(testing::processes_in(home.path()).empty());
  auto next = tycli({"call", "add", "--args", R"({"num1": 1, "num2": 1})"});
  EXPECT_EQ(next.exit_code, 0);
  EXPECT_EQ(next.out, "2\n");
}

TEST_F(Cli, JsonOutputCarriesIdsPinsAndStatus) {
  install(kExamples + "add.json");
  auto r = tycli({"--json", "call", "add", "--args", R"({"num1": 1, "num2": 2})"});
  auto v = json::parse(r.out);
  ASSERT_TRUE(v) << r.out;
  EXPECT_EQ((*v)["status"], "ok");
  EXPECT_EQ((*v)["result"], 3);
  EXPECT_TRUE(json::is_content_id((*v)["task"].get<std::string>()));
  EXPECT_TRUE(json::is_content_id((*v)["tool"]["revision"].get<std::string>()));
  EXPECT_TRUE(json::is_content_id((*v)["settingsRevision"].get<std::string>()));
  auto err = tycli({"--json", "tool", "show", "nope"});
  EXPECT_EQ(err.exit_code, 2);
  EXPECT_EQ((*json::parse(err.out))["error"]["code"], "not_found");
}

TEST_F(Cli, BadUsageExits2) {
  EXPECT_EQ(tycli({}).exit_code, 2);
  EXPECT_EQ(tycli({"call"}).exit_code, 2);
  EXPECT_EQ(tycli({"call", "x", "--timeout", "-5"}).exit_code, 2);
  EXPECT_EQ(tycli({"tool", "frobnicate"}).exit_code, 2);
}

// Nothing stays running after tycli is stopped by a signal mid-call.
void expect_no_sandbox_after_signal(const testing::TempDir& home, int sig) {
  const int pid = testing::spawn_tycli({"call", "stuck", "--timeout", "60000"}, home.path());
  std::vector<int> sandboxes;
  for (int i = 0; i < 200 && sandboxes.empty(); ++i) {  // wait for the sandbox to start
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    sandboxes = testing::processes_in(home.path());
  }
  ASSERT_FALSE(sandboxes.empty()) << "the sandbox never started";
  kill(pid, sig);
  EXPECT_EQ(testing::wait_exit(pid), 128 + sig);
  for (int i = 0; i < 100 && !testing::processes_in(home.path()).empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(testing::processes_in(home.path()).empty()) << "signal " << sig;
}

TEST_F(Cli, NothingStaysRunningAfterSigintOrSigterm) {
  install(home.write("stuck.json", testing::js_tool("stuck", "() => { while (true) {} }").dump()));
  expect_no_sandbox_after_signal(home, SIGINT);
  expect_no_sandbox_after_signal(home, SIGTERM);
}

}  // namespace
}  // namespace taskyon

namespace taskyon {
namespace {

const std::string kConversations = std::string(TASKYON_SOURCE_DIR) + "/examples/conversations/";

class CliTree : public Cli {
 protected:
  void SetUp() override {
    for (auto f : {"add", "uppercase", "text_stats", "json_path", "counter"}) install(kExamples + f + ".json");
  }
  testing::CommandResult sqlite(const std::string& sql) {
    return testing::run_command({"sqlite3", (home.path() / "taskyon.db").string(), sql}, home.path());
  }
  // The id of the task whose line in `tycli task tree` contains `needle`.
  std::string task_with(const std::string& needle) {
    auto tree = tycli({"--json", "task", "tree"});
    std::string found;
    std::function<void(const json::Value&)> walk = [&](const json::Value& n) {
      if (n["content"].dump().find(needle) != std::string::npos && found.empty()) found = n["id"];
      for (const auto& c : n["children"]) walk(c);
    };
    const auto roots = *json::parse(tree.out);
    for (const auto& root : roots) walk(root);
    EXPECT_FALSE(found.empty()) << needle;
    return found;
  }
};

TEST_F(CliTree, RunTwiceGivesTheSameIdsAndNoDuplicateRows) {
  auto first = tycli({"--json", "run", kConversations + "registry-tools.json"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const auto rows = sqlite("SELECT COUNT(*) FROM tasks").out;
  auto second = tycli({"--json", "run", kConversations + "registry-tools.json"});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  auto a = *json::parse(first.out), b = *json::parse(second.out);
  ASSERT_EQ(a["steps"].size(), b["steps"].size());
  for (std::size_t i = 0; i < a["steps"].size(); ++i) EXPECT_EQ(a["steps"][i]["task"], b["steps"][i]["task"]);
  EXPECT_EQ(b["created"], 0);
  EXPECT_EQ(b["callsRun"], 0);
  EXPECT_EQ(sqlite("SELECT COUNT(*) FROM tasks").out, rows);
}

TEST_F(CliTree, DatabaseRefusesAnUpdateWithTheTriggersMessage) {
  ASSERT_EQ(tycli({"run", kConversations + "scoped-tools.json"}).exit_code, 0);
  auto r = sqlite("UPDATE tasks SET state = 'Error'");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("T4: stored tasks are immutable"), std::string::npos) << r.err;
  auto d = sqlite("DELETE FROM revisions");
  EXPECT_NE(d.err.find("R2: stored revisions are immutable"), std::string::npos) << d.err;
}

TEST_F(CliTree, ARowEditedBehindTheStoresBackIsReportedTampered) {  // R2
  ASSERT_EQ(tycli({"run", kConversations + "scoped-tools.json"}).exit_code, 0);
  const auto id = task_with("German invoice shows");
  ASSERT_EQ(sqlite("DROP TRIGGER tasks_no_update; UPDATE tasks SET content = "
                   "'{\"message\":\"The German invoice shows 0,00.\"}' WHERE id = '" + id + "'")
                .exit_code,
            0);
  auto show = tycli({"task", "show", id});
  EXPECT_EQ(show.exit_code, 2);
  EXPECT_NE(show.err.find("tampered"), std::string::npos) << show.err;
  EXPECT_EQ(show.out, "");
  EXPECT_NE(tycli({"chat", "copy", "--at", id}).err.find("tampered"), std::string::npos);
}

TEST_F(CliTree, ChatMessagesAndCopiesCarryNoTraceOfDefinitions) {  // T9
  ASSERT_EQ(tycli({"run", kConversations + "scoped-tools.json"}).exit_code, 0);
  const auto at = task_with("German invoice shows");
  auto tree = *json::parse(tycli({"--json", "task", "tree"}).out);
  std::vector<std::string> definition_ids;
  std::function<void(const json::Value&)> walk = [&](const json::Value& n) {
    if (n["content"].contains("toolDefinition")) {
      definition_ids.push_back(n["id"]);
      definition_ids.push_back(*json::content_id_of(n["content"]["toolDefinition"]["definition"]));
    }
    for (const auto& c : n["children"]) walk(c);
  };
  walk(tree[0]);
  ASSERT_EQ(definition_ids.size(), 4u);
  for (const auto& args : std::vector<std::vector<std::string>>{{"chat", "messages", "--at", at},
                                                                {"--json", "chat", "messages", "--at", at},
                                                                {"chat", "copy", "--at", at},
                                                                {"chat", "copy", "--at", at, "--format", "json"}}) {
    auto r = tycli(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.find("toFixed"), std::string::npos) << r.out;  // no code
    EXPECT_EQ(r.out.find("toolDefinition"), std::string::npos);
    for (const auto& id : definition_ids) EXPECT_EQ(r.out.find(id.substr(7, 12)), std::string::npos) << id;
    EXPECT_NE(r.out.find("1.234.567,50"), std::string::npos) << r.out;
  }
  const auto tools = *json::parse(tycli({"--json", "chat", "tools", "--at", at}).out);
  for (const auto& t : tools) EXPECT_EQ(t["function"].size(), 3u);  // name, description, parameters (T8)
}

TEST_F(CliTree, SiblingBranchCallFailsNamingTheToolAndWhereItLooked) {
  auto r = tycli({"run", home.write("sibling.json", R"([
    {"role": "user", "content": {"message": "root"}},
    {"role": "system", "content": {"toolDefinition": {"definition": {"name": "only_here", "description": "d",
      "parameters": {"type": "object"}, "execution": "sandboxed-code", "runtime": "javascript", "code": "() => 1"}}}},
    {"role": "assistant", "parent": 0, "content": {"functionCall": {"name": "only_here", "arguments": {}}}}
  ])")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no tool named \"only_here\" is visible here: looked in 1 ancestor task(s)"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("sibling.json: /2"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace taskyon

namespace taskyon {
namespace {

const std::string kMcpCommand =
    std::string(TASKYON_SOURCE_DIR) + "/node_modules/@modelcontextprotocol/server-everything/dist/index.js";

class CliMcp : public Cli {
 protected:
  void SetUp() override {
    auto r = tycli({"tool", "import-mcp", "--trust", "--", "node", kMcpCommand, "stdio"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_NE(r.out.find("echo sha256:"), std::string::npos) << r.out;
  }
};

TEST(CliTrust, ImportAndNativeInstallWithoutTrustExit2AndExplain) {  // R6
  testing::TempDir home;
  auto imp = run_tycli({"tool", "import-mcp", "--", "node", kMcpCommand, "stdio"}, home.path());
  EXPECT_EQ(imp.exit_code, 2);
  EXPECT_NE(imp.err.find("--trust"), std::string::npos) << imp.err;
  const auto file = home.write("nat.json", R"({"name":"h","description":"d","parameters":{"type":"object"},
      "execution":"trusted-native","native":"taskyon.sha256"})");
  auto inst = run_tycli({"tool", "install", file}, home.path());
  EXPECT_EQ(inst.exit_code, 2);
  EXPECT_NE(inst.err.find("would run with tycli's own authority"), std::string::npos) << inst.err;
  EXPECT_NE(inst.err.find("review it as application code"), std::string::npos) << inst.err;
  auto ok = run_tycli({"tool", "install", "--trust", file}, home.path());
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  auto show = json::parse(run_tycli({"--json", "tool", "show", "h"}, home.path()).out);
  ASSERT_TRUE(show);
  EXPECT_FALSE((*show)["trust"]["by"].get<std::string>().empty());
  EXPECT_EQ(run_tycli({"call", "h", "--args", R"({"text":""})"}, home.path()).out,
            "\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\"\n");
}

TEST_F(CliMcp, CallsTheServersEchoTool) {
  auto r = tycli({"--json", "call", "echo", "--args", R"({"message": "hello MCP"})"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ((*json::parse(r.out))["result"]["content"][0]["text"], "Echo: hello MCP");
}

TEST_F(CliMcp, KillingTheServerMidCallIsAClearToolErrorAndNoHang) {
  const auto log = (home / "call.log").string();
  const int pid = testing::spawn_tycli({"call", "trigger-long-running-operation", "--timeout", "60000", "--args",
                                        R"({"duration": 30, "steps": 3})"},
                                       home.path(), log);
  std::vector<int> servers;
  for (int i = 0; i < 200 && servers.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    servers = testing::children_of(pid);
  }
  ASSERT_FALSE(servers.empty()) << "the MCP server never started";
  std::this_thread::sleep_for(std::chrono::milliseconds(2000));  // most likely mid-call by now; either way it must end
  kill(servers[0], SIGKILL);
  EXPECT_EQ(testing::wait_exit(pid), 1);
  std::ifstream in(log);
  const std::string said((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(said.find("crashed: the MCP server exited or closed its output during"), std::string::npos) << said;
}

TEST_F(CliMcp, ATimeoutEndsTheCallAndTheServer) {
  auto r = tycli({"call", "trigger-long-running-operation", "--timeout", "1500", "--args",
                  R"({"duration": 30, "steps": 3})"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("timeout"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace taskyon
