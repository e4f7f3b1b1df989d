// Issue 16 item 5, safer defaults, as a user meets them: real tycli
// processes, a real store (or none), a real config.json.
#include <gtest/gtest.h>

#include <filesystem>

#include "test_util.h"

namespace taskyon {
namespace {

using json::Value;
using testing::run_tycli;
const std::string kExamples = std::string(TASKYON_SOURCE_DIR) + "/examples/tools/";

class CliDefaults : public ::testing::Test {
 protected:
  testing::CommandResult tycli(const std::vector<std::string>& args) { return run_tycli(args, home.path()); }
  void config(const std::string& text) { home.write("config.json", text); }
  std::filesystem::path db() const { return home / "taskyon.db"; }
  testing::TempDir home;
};

TEST_F(CliDefaults, ReadCommandsRefuseAStoreThatDoesNotExistAndCreateNothing) {
  const std::string id = "sha256:" + std::string(64, 'a');
  const std::vector<std::vector<std::string>> reads = {
      {"tool", "list"},          {"tool", "show", "add"},   {"tool", "history", "add"},
      {"task", "show", id},      {"task", "tree"},          {"chat", "messages", "--at", id},
      {"audit"},                 {"sandbox", "log"},        {"grant", "list"},
      {"secret", "list"},        {"settings", "show", "x"}, {"--json", "tool", "list"}};
  for (const auto& args : reads) {
    auto r = tycli(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << " " << args[1] << ": " << r.out << r.err;
    const auto& text = args[0] == "--json" ? r.out : r.err;
    EXPECT_NE(text.find("there is no store at " + db().string()), std::string::npos) << text;
    EXPECT_NE(text.find("tycli tool install FILE"), std::string::npos) << text;
    EXPECT_FALSE(std::filesystem::exists(db())) << args[0] << " " << args[1] << " created the store";
  }
  // A mistyped --db names the path it was given.
  auto typo = tycli({"--db", (home / "tasyon.db").string(), "tool", "list"});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.err.find((home / "tasyon.db").string()), std::string::npos) << typo.err;
  EXPECT_FALSE(std::filesystem::exists(home / "tasyon.db"));
}

TEST_F(CliDefaults, WriteCommandsCreateTheStoreAndReadsThenWork) {
  auto installed = tycli({"tool", "install", kExamples + "add.json"});
  ASSERT_EQ(installed.exit_code, 0) << installed.err;
  EXPECT_TRUE(std::filesystem::exists(db()));
  auto listed = tycli({"tool", "list"});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("add"), std::string::npos);

  // Another write command on another missing store creates that one.
  const auto other = (home / "other.db").string();
  auto call = tycli({"--db", other, "call", "add"});
  EXPECT_EQ(call.exit_code, 2) << call.err;  // no tool "add" there: but the store is made
  EXPECT_TRUE(std::filesystem::exists(other));
  EXPECT_EQ(tycli({"--db", other, "tool", "list"}).exit_code, 0);
}

TEST_F(CliDefaults, AnUnknownConfigKeyIsRefusedNamingItAndTheKnownKeys) {
  ASSERT_EQ(tycli({"tool", "install", kExamples + "add.json"}).exit_code, 0);
  config(R"({"timout": 300})");
  auto r = tycli({"call", "add", "--args", R"({"num1": 1, "num2": 2})"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("unknown key \"timout\""), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\"timeout\""), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\"jsRuntime\""), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("config.json"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");

  config(R"({"pythonIsolation": "loose"})");
  r = tycli({"call", "add", "--args", R"({"num1": 1, "num2": 2})"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("\"pythonIsolation\" must be \"strict\" or \"host\""), std::string::npos) << r.err;
  config(R"({"timeout": -5})");
  r = tycli({"call", "add", "--args", R"({"num1": 1, "num2": 2})"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("\"timeout\" must be a whole number of milliseconds"), std::string::npos) << r.err;
}

TEST_F(CliDefaults, TheConfigTimeoutIsHonouredAndTheFlagWins) {
  const auto slow = home.write("slow.json", testing::js_tool("slow", R"(async () => {
      await new Promise((resolve) => setTimeout(resolve, 1500)); return "done"; })").dump());
  ASSERT_EQ(tycli({"tool", "install", slow}).exit_code, 0);
  config(R"({"timeout": 300})");
  auto timed_out = tycli({"--json", "call", "slow"});
  EXPECT_EQ(timed_out.exit_code, 1) << timed_out.err;
  auto out = json::parse(timed_out.out);
  ASSERT_TRUE(out) << timed_out.out;
  EXPECT_EQ((*out)["status"], "timeout");
  auto flag = tycli({"--json", "call", "slow", "--timeout", "10000"});
  EXPECT_EQ(flag.exit_code, 0) << flag.err;
  EXPECT_EQ(json::parse(flag.out).value()["result"], "done");
  config(R"({"timeout": 10000})");  // a longer one lets it finish
  EXPECT_EQ(tycli({"--json", "call", "slow"}).exit_code, 0);
}

TEST_F(CliDefaults, TheConfigNodePathIsUsed) {
  ASSERT_EQ(tycli({"tool", "install", kExamples + "add.json"}).exit_code, 0);
  config(R"({"nodePath": "/nonexistent/bin/node"})");
  auto r = tycli({"call", "add", "--args", R"({"num1": 1, "num2": 2})"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("/nonexistent/bin/node"), std::string::npos) << r.err;
}

TEST_F(CliDefaults, TheTestOnlyFlagsWarnOnEveryUse) {
  ASSERT_EQ(tycli({"tool", "install", kExamples + "add.json"}).exit_code, 0);
  for (int i = 0; i < 2; ++i) {
    auto r = tycli({"--fetch-allow-cidr", "127.0.0.1/32", "--fetch-allow-cidr", "::1/128", "call", "add", "--args",
                    R"({"num1": 1, "num2": 2})"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("tycli: warning: --fetch-allow-cidr 127.0.0.1/32 is for tests only"), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("tycli: warning: --fetch-allow-cidr ::1/128 is for tests only"), std::string::npos) << r.err;
  }
  const auto ca = home.write("ca.pem", "not really a certificate\n");
  auto r = tycli({"--fetch-ca-file", ca, "tool", "list"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("tycli: warning: --fetch-ca-file " + ca + " is for tests only"), std::string::npos) << r.err;
  auto quiet = tycli({"call", "add", "--args", R"({"num1": 1, "num2": 2})"});
  EXPECT_EQ(quiet.err.find("warning"), std::string::npos) << quiet.err;
}

}  // namespace
}  // namespace taskyon
