// tycli grant|revoke|secret|audit|settings|popup as a user runs them: real
// processes, a real store file, real exit codes and output (M8, M16, M17, T1).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "taskyon/registry/manifest.h"
#include "taskyon/store/secrets.h"
#include "taskyon/store/store.h"
#include "test_util.h"

namespace taskyon {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::run_tycli;

class CliGrants : public ::testing::Test {
 protected:
  testing::CommandResult tycli(const std::vector<std::string>& args) { return run_tycli(args, home.path()); }
  // Installs a JS tool (activated) and returns its revision id.
  std::string install(const std::string& name, const std::string& code) {
    const auto file = home.write(name + ".json", testing::js_tool(name, code).dump());
    auto r = tycli({"tool", "install", "--activate", file});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out.substr(r.out.find(' ') + 1, 71);
  }
  std::string install_trusted(const std::string& description) {
    const auto file = home.write("host.json", json::Value{{"name", "host"},
                                                          {"description", description},
                                                          {"parameters", {{"type", "object"}}},
                                                          {"execution", "trusted-native"},
                                                          {"native", "taskyon.sha256"}}
                                                  .dump());
    auto r = tycli({"tool", "install", "--activate", "--trust", file});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out.substr(r.out.find(' ') + 1, 71);
  }
  // `printf VALUE | tycli secret set …` through a shell: run_tycli gives stdin /dev/null.
  testing::CommandResult secret_set(const std::string& value, const std::vector<std::string>& args) {
    std::string cmd = "printf '%s' \"$1\" | \"$0\" secret set";
    for (std::size_t i = 0; i < args.size(); ++i) cmd += " \"$" + std::to_string(i + 2) + "\"";
    std::vector<std::string> argv = {"sh", "-c", cmd, TYCLI_PATH, value};
    argv.insert(argv.end(), args.begin(), args.end());
    return testing::run_command(argv, home.path());
  }
  testing::TempDir home;
};

TEST_F(CliGrants, GrantFetchShowsTheExactRevisionANameResolvedTo) {
  const auto a = install("api", "x => x");
  auto r = tycli({"grant", "fetch", "api", "HTTPS://API.Example.com:443/", "--access", "read", "--timeout-ms", "5000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "granted fetch read https://api.example.com to api " + a + " limits {\"total_timeout_ms\":5000}\n");
  auto ls = tycli({"--json", "grant", "list"});
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  auto v = json::parse(ls.out);
  ASSERT_TRUE(v);
  ASSERT_EQ(v->size(), 1u);
  EXPECT_EQ((*v)[0]["revision"], a);
  EXPECT_EQ((*v)[0]["origin"], "https://api.example.com");
  EXPECT_EQ((*v)[0]["access"], "read");
  EXPECT_EQ((*v)[0]["limits"]["total_timeout_ms"], 5000);
}

TEST_F(CliGrants, ANewRevisionListsNoGrantsSecretsOrPopups) {  // M17
  const auto a = install("api", "x => x");
  ASSERT_EQ(tycli({"grant", "fetch", "api", "https://api.example.com", "--access", "write"}).exit_code, 0);
  ASSERT_EQ(tycli({"grant", "storage", "api"}).exit_code, 0);
  ASSERT_EQ(secret_set("tok", {"api", "https://api.example.com", "TOKEN"}).exit_code, 0);
  const auto b = install("api", "x => [x]");
  ASSERT_NE(a, b);
  auto of_b = tycli({"grant", "list", "api"});
  ASSERT_EQ(of_b.exit_code, 0) << of_b.err;
  EXPECT_EQ(of_b.out, "no grants for " + b + "\n");
  EXPECT_EQ(tycli({"secret", "list", "api"}).out, "no secrets\n");
  auto of_a = tycli({"grant", "list", a});
  EXPECT_THAT(of_a.out, HasSubstr("https://api.example.com"));
  EXPECT_THAT(of_a.out, HasSubstr("storage"));
}

TEST_F(CliGrants, BadOriginsExit2WithAClearMessage) {
  install("api", "x => x");
  struct Case {
    std::string origin, says;
  };
  for (const auto& c : std::vector<Case>{{"http://api.example.com", "not https"},
                                         {"https://api.example.com/v1", "no path"},
                                         {"https://user:pass@api.example.com", "no user name or password"},
                                         {"https://api.example.com/?q=1", "no query"},
                                         {"api.example.com", "not a URL"}}) {
    auto r = tycli({"grant", "fetch", "api", c.origin, "--access", "read"});
    EXPECT_EQ(r.exit_code, 2) << c.origin;
    EXPECT_THAT(r.err, HasSubstr(c.says)) << c.origin;
    EXPECT_THAT(r.err, HasSubstr("[bad_usage]")) << c.origin;
    EXPECT_THAT(r.err, Not(HasSubstr("pass@"))) << c.origin;
  }
  EXPECT_EQ(tycli({"grant", "fetch", "api", "https://a.example", "--access", "execute"}).exit_code, 2);
  EXPECT_EQ(tycli({"grant", "fetch", "api", "https://a.example"}).exit_code, 2);  // --access is required
  auto zero = tycli({"grant", "fetch", "api", "https://a.example", "--access", "read", "--connect-timeout-ms", "0"});
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_THAT(zero.err, HasSubstr("--connect-timeout-ms"));
  auto unknown = tycli({"grant", "fetch", "nosuch", "https://a.example", "--access", "read"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_THAT(unknown.err, HasSubstr("[not_found]"));
  EXPECT_EQ(tycli({"grant", "list"}).out, "no grants\n");
}

TEST_F(CliGrants, RevokeIsIdempotentAndSaysWhatItDid) {
  const auto a = install("api", "x => x");
  ASSERT_EQ(tycli({"grant", "fetch", "api", "https://a.example", "--access", "read"}).exit_code, 0);
  auto r1 = tycli({"revoke", "fetch", "api", "https://a.example/", "--access", "read"});
  ASSERT_EQ(r1.exit_code, 0) << r1.err;
  EXPECT_EQ(r1.out, "revoked fetch read https://a.example of api " + a + "\n");
  auto r2 = tycli({"revoke", "fetch", "api", "https://a.example", "--access", "read"});
  ASSERT_EQ(r2.exit_code, 0);
  EXPECT_THAT(r2.out, HasSubstr("no grant to revoke"));
  auto rs = tycli({"--json", "revoke", "storage", "api"});
  ASSERT_EQ(rs.exit_code, 0);
  EXPECT_EQ((*json::parse(rs.out))["revoked"], false);
}

TEST_F(CliGrants, SecretsComeFromStdinAndAreNeverPrinted) {
  install("api", "x => x");
  const std::string value = "sk-live-Zq8!very-secret";
  auto set = secret_set(value + "\n", {"api", "https://api.example.com/", "TOKEN"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  EXPECT_THAT(set.out, HasSubstr("set secret TOKEN for https://api.example.com of api sha256:"));
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"secret", "list"}, {"--json", "secret", "list"}, {"secret", "list", "api"}, {"grant", "list"},
           {"--json", "audit"}}) {
    auto r = tycli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out + r.err, Not(HasSubstr("very-secret")));
  }
  EXPECT_THAT(tycli({"secret", "list"}).out, HasSubstr("TOKEN"));
  {
    auto st = store::Store::open((home.path() / "taskyon.db").string());
    ASSERT_TRUE(st);
    auto stored = store::secret_for(*st, st->resolve("api")->id, "https://api.example.com", "TOKEN");
    ASSERT_TRUE(stored && *stored);
    EXPECT_EQ(**stored, value);  // one trailing newline removed, nothing else
  }
  // A value is never taken from the command line.
  EXPECT_EQ(tycli({"secret", "set", "api", "https://api.example.com", "T2", "value"}).exit_code, 2);
  auto home_db = home.path() / "taskyon.db";
  EXPECT_EQ(std::filesystem::status(home_db).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  // The value is stored without the trailing newline, and a value with a CR
  // inside (header injection) is refused.
  auto crlf = secret_set("a\r\nX-Evil: 1", {"api", "https://api.example.com", "EVIL"});
  EXPECT_EQ(crlf.exit_code, 2);
  auto bad_origin = secret_set("v", {"api", "http://api.example.com", "T"});
  EXPECT_EQ(bad_origin.exit_code, 2);
  EXPECT_THAT(bad_origin.err, HasSubstr("not https"));
  auto del = tycli({"secret", "delete", "api", "https://api.example.com", "TOKEN"});
  ASSERT_EQ(del.exit_code, 0) << del.err;
  EXPECT_THAT(del.out, HasSubstr("deleted secret TOKEN"));
  EXPECT_EQ(tycli({"secret", "list"}).out, "no secrets\n");
}

TEST_F(CliGrants, SettingsSetShowHistoryAndCallsPinThem) {  // T1
  install("echo", "x => x");
  auto empty = tycli({"settings", "show", "echo"});
  ASSERT_EQ(empty.exit_code, 0) << empty.err;
  EXPECT_EQ(empty.out, "echo " + registry::empty_settings_revision() + "\n{}\n");
  const auto file = home.write("s.json", R"({ "units": "metric", "depth": 2 })");
  auto set = tycli({"settings", "set", "echo", file});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  const auto settings_rev = set.out.substr(5, 71);
  EXPECT_EQ(settings_rev, *json::content_id_of(json::Value{{"units", "metric"}, {"depth", 2}}));
  auto show = tycli({"settings", "show", "echo"});
  EXPECT_EQ(show.out, "echo " + settings_rev + "\n{\"depth\":2,\"units\":\"metric\"}\n");
  auto by_id = tycli({"--json", "settings", "show", settings_rev});
  ASSERT_EQ(by_id.exit_code, 0) << by_id.err;
  EXPECT_EQ((*json::parse(by_id.out))["value"]["units"], "metric");
  auto call = tycli({"--json", "call", "echo", "--args", R"({"input":"hi"})"});
  ASSERT_EQ(call.exit_code, 0) << call.err;
  EXPECT_THAT(call.out, HasSubstr(settings_rev));
  auto hist = tycli({"settings", "history", "echo"});  // a table: short ids, usable as input
  EXPECT_THAT(hist.out, HasSubstr(settings_rev.substr(0, 19) + "  (active)"));
  EXPECT_THAT(tycli({"--full-ids", "settings", "history", "echo"}).out, HasSubstr(settings_rev + "  (active)"));
  auto by_short = tycli({"settings", "show", settings_rev.substr(0, 19)});
  ASSERT_EQ(by_short.exit_code, 0) << by_short.err;
  EXPECT_EQ(by_short.out, settings_rev + "\n{\"depth\":2,\"units\":\"metric\"}\n");
  EXPECT_EQ(tycli({"settings", "show", "sha256:0000000000"}).exit_code, 2);  // too short a prefix
  EXPECT_EQ(tycli({"settings", "set", "nosuch", file}).exit_code, 2);
  EXPECT_EQ(tycli({"settings", "show", "nosuch"}).exit_code, 2);
  EXPECT_EQ(tycli({"settings", "set", "echo", home.write("a.json", "[1]")}).exit_code, 2);
  EXPECT_EQ(tycli({"settings", "set", "echo", home.write("d.json", R"({"a":1,"a":2})")}).exit_code, 2);
}

TEST_F(CliGrants, PopupGrantCheckAndAudit) {  // M16
  install("plain", "x => x");
  auto refused = tycli({"popup", "grant", "plain", "custom-html"});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_THAT(refused.err, HasSubstr("M16"));
  const auto host = install_trusted("v1");
  auto g = tycli({"popup", "grant", "host", "https://Docs.Example.com/"});
  ASSERT_EQ(g.exit_code, 0) << g.err;
  EXPECT_EQ(g.out, "granted popup https://docs.example.com to host " + host + "\n");
  EXPECT_EQ(tycli({"popup", "grant", "host", "http://docs.example.com"}).exit_code, 2);
  auto ok = tycli({"popup", "check", "host", "https://docs.example.com"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("allow"));
  for (const char* other : {"https://sub.docs.example.com", "https://docs.example.com:444", "custom-html",
                            "https://docs.example.com/page", "http://docs.example.com"}) {
    auto r = tycli({"popup", "check", "host", other});
    EXPECT_EQ(r.exit_code, 1) << other;
    EXPECT_THAT(r.out, HasSubstr("deny")) << other;
  }
  // A new revision of the host tool holds nothing (M17).
  install_trusted("v2");
  EXPECT_EQ(tycli({"popup", "check", "host", "https://docs.example.com"}).exit_code, 1);
  EXPECT_EQ(tycli({"popup", "check", host, "https://docs.example.com"}).exit_code, 0);
  auto audit = tycli({"--json", "audit", "--since", "1h"});
  ASSERT_EQ(audit.exit_code, 0) << audit.err;
  auto rows = json::parse(audit.out);
  ASSERT_TRUE(rows);
  ASSERT_EQ(rows->size(), 8u);
  EXPECT_EQ((*rows)[0]["capability"], "popup");
  EXPECT_EQ((*rows)[0]["verdict"], "allow");
  EXPECT_EQ((*rows)[1]["verdict"], "deny");
  auto of_host = tycli({"--json", "audit", "--revision", host, "--limit", "2"});
  EXPECT_EQ(json::parse(of_host.out)->size(), 2u);
  EXPECT_EQ(tycli({"audit", "--since", "yesterday"}).exit_code, 2);
  auto later = tycli({"audit", "--since", "2999-01-01"});
  EXPECT_THAT(later.out, HasSubstr("no capability decisions"));
  auto list = tycli({"popup", "list"});
  EXPECT_THAT(list.out, HasSubstr("https://docs.example.com"));
  auto rv = tycli({"popup", "revoke", "host", "https://docs.example.com"});
  EXPECT_EQ(rv.exit_code, 0);
  EXPECT_THAT(rv.out, HasSubstr("no permission to revoke"));  // "host" is now v2, which has none
}

}  // namespace
}  // namespace taskyon
