// tycli call with the fetch capability, as a user runs it: a tool that
// fetches from a real HTTPS server on loopback (admitted only by the test-only
// --fetch-allow-cidr/--fetch-ca-file), `tycli grant`, `tycli audit` and
// `tycli sandbox log` in separate processes on one store.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>

#include "taskyon/loopback/loopback.h"
#include "test_util.h"

namespace taskyon {
namespace {

using ::testing::HasSubstr;

class CliFetch : public ::testing::Test {
 protected:
  void SetUp() override {
    loopback::ServerOptions options;
    options.dir = server_dir.path();
    auto started = loopback::HttpsServer::start(options);
    ASSERT_TRUE(started) << started.error().describe();
    server = std::move(*started);
  }
  testing::CommandResult tycli(const std::vector<std::string>& args) { return testing::run_tycli(args, home.path()); }
  testing::CommandResult call(const std::string& tool, const std::string& url) {
    return tycli({"--json", "--fetch-allow-cidr", "127.0.0.1/32", "--fetch-ca-file", server->ca_file().string(),
                  "call", tool, "--args", json::Value{{"input", url}}.dump()});
  }

  testing::TempDir home, server_dir;
  std::unique_ptr<loopback::HttpsServer> server;
};

TEST_F(CliFetch, AGrantOpensOneOriginToOneRevisionAndEveryDecisionIsAudited) {
  const auto file = home.write("getter.json", testing::js_tool("getter", R"(async ({input}) => {
      try { const r = await fetch(input); return { status: r.status, body: await r.json() }; }
      catch (e) { return { code: e.code }; } })")
                                                  .dump());
  ASSERT_EQ(tycli({"tool", "install", file}).exit_code, 0);

  auto denied = call("getter", server->url("/ok"));
  ASSERT_EQ(denied.exit_code, 0) << denied.err;
  EXPECT_EQ(json::parse(denied.out).value()["result"]["code"], "denied");

  auto granted = tycli({"grant", "fetch", "getter", server->origin(), "--access", "read"});
  ASSERT_EQ(granted.exit_code, 0) << granted.err;
  auto ok = call("getter", server->url("/ok"));
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(json::parse(ok.out).value()["result"]["status"], 200) << ok.out;

  // Without the test-only rule, the loopback server is a private target.
  auto blocked = tycli({"--json", "call", "getter", "--args", json::Value{{"input", server->url("/ok")}}.dump()});
  ASSERT_EQ(blocked.exit_code, 0) << blocked.err;
  EXPECT_EQ(json::parse(blocked.out).value()["result"]["code"], "policy_blocked");

  auto audit = tycli({"--json", "audit"});
  ASSERT_EQ(audit.exit_code, 0) << audit.err;
  auto rows = json::parse(audit.out);
  ASSERT_TRUE(rows) << audit.out;
  std::vector<std::string> verdicts;
  for (const auto& row : *rows) verdicts.push_back(row["verdict"].get<std::string>());
  EXPECT_EQ(verdicts, (std::vector<std::string>{"deny", "allow", "deny"})) << audit.out;

  auto log = tycli({"sandbox", "log"});
  ASSERT_EQ(log.exit_code, 0) << log.err;
  EXPECT_THAT(log.out, HasSubstr("shutdown"));  // each tycli process's sandbox ends with it
  EXPECT_THAT(log.out, HasSubstr("getter"));
}

TEST_F(CliFetch, TestOnlyOptionsAreCheckedBeforeAnythingRuns) {
  auto r = tycli({"--fetch-allow-cidr", "127.0.0.1/8", "call", "x"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--fetch-allow-cidr"));
}

}  // namespace
}  // namespace taskyon
