// `tycli policy check` as a user runs it: real process, exit codes, output.
// Names resolve only through --resolve here, never through live DNS. Skipped
// while the tycli under test has no `policy` command.
#include <gtest/gtest.h>

#include "taskyon/json/json.h"
#include "test_util.h"

namespace taskyon {
namespace {

using testing::run_tycli;

class CliPolicy : public ::testing::Test {
 protected:
  void SetUp() override {
    if (tycli({"policy", "check", "https://127.0.0.1/"}).out.find("verdict") == std::string::npos)
      GTEST_SKIP() << "tycli has no `policy` command yet";
  }
  testing::CommandResult tycli(const std::vector<std::string>& args) { return run_tycli(args, home.path()); }
  json::Value json_of(const testing::CommandResult& r) {
    auto v = json::parse(r.out);
    EXPECT_TRUE(v.has_value()) << r.out << r.err;
    return v.value_or(json::Value::object());
  }
  testing::TempDir home;
};

TEST_F(CliPolicy, AllowedUrlExits0AndShowsTheCanonicalUrl) {
  auto r = tycli({"policy", "check", "https://EXAMPLE.com:443/a/../b", "--resolve", "example.com:93.184.215.14"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("verdict  allow (ok)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("url      https://example.com/b"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("resolved 93.184.215.14 (by --resolve)"), std::string::npos) << r.out;
}

TEST_F(CliPolicy, DeniedUrlExits1NamingTheRange) {
  auto r = tycli({"policy", "check", "https://0x7f.1/", "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const auto v = json_of(r);
  EXPECT_EQ(v["verdict"], "deny");
  EXPECT_EQ(v["reasonClass"], "encoding_trick");
  EXPECT_EQ(v["access"], "read");
  EXPECT_EQ(v["href"], "https://127.0.0.1/");
  EXPECT_NE(v["reason"].get<std::string>().find("127.0.0.0/8"), std::string::npos) << v.dump();
  EXPECT_FALSE(v.contains("resolved"));  // a literal is never resolved
}

TEST_F(CliPolicy, ResolveTakesEveryAnswerAndOneBadAnswerRefuses) {
  auto r = tycli({"--json", "policy", "check", "https://mixed.example/", "--resolve", "mixed.example:93.184.215.14",
                  "--resolve", "mixed.example:fd00::1", "--resolve", "other.example:10.0.0.1"});
  EXPECT_EQ(r.exit_code, 1);
  const auto v = json_of(r);
  EXPECT_EQ(v["reasonClass"], "private");
  EXPECT_EQ(v["resolved"]["by"], "--resolve");
  EXPECT_EQ(v["resolved"]["addresses"], json::Value::parse(R"(["93.184.215.14","fd00::1"])"));
}

TEST_F(CliPolicy, NameWithoutResolveEntryResolvesToNothing) {
  auto r = tycli({"policy", "check", "https://example.com/", "--resolve", "example.org:93.184.215.14", "--json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(json_of(r)["reasonClass"], "unresolved");
}

TEST_F(CliPolicy, RejectedMethodExits1ThoughTheUrlIsAllowed) {
  auto r = tycli({"policy", "check", "https://example.com/", "--method", "trace", "--resolve",
                  "example.com:93.184.215.14", "--json"});
  EXPECT_EQ(r.exit_code, 1);
  const auto v = json_of(r);
  EXPECT_EQ(v["verdict"], "allow");
  EXPECT_EQ(v["access"], "reject");
  EXPECT_EQ(v["admitted"], false);
}

TEST_F(CliPolicy, BadResolveIsBadUsage) {
  EXPECT_EQ(tycli({"policy", "check", "https://example.com/", "--resolve", "example.com"}).exit_code, 2);
  EXPECT_EQ(tycli({"policy", "check", "https://example.com/", "--resolve", "example.com:0x7f.1"}).exit_code, 2);
  EXPECT_EQ(tycli({"policy", "check", "https://example.com/", "--resolve", ":1.2.3.4"}).exit_code, 2);
}

}  // namespace
}  // namespace taskyon
