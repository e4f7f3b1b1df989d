// Issue 16 item 4: messages that say what to do. Unknown and missing commands
// are named with the nearest one and the list to choose from; contract ids
// point at the page that explains them; no message names a C++ member. Real
// tycli processes.
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "test_util.h"
#include "suggest.h"

namespace taskyon {
namespace {

using testing::run_tycli;

class CliMessages : public ::testing::Test {
 protected:
  testing::CommandResult tycli(const std::vector<std::string>& args) { return run_tycli(args, home.path()); }
  testing::TempDir home;
};

TEST_F(CliMessages, AMistypedCommandIsNamedWithTheNearestOne) {
  const auto top = tycli({"tol", "list"});
  EXPECT_EQ(top.exit_code, 2);
  EXPECT_NE(top.err.find("`tycli tol` is not a command (did you mean `tycli tool`?)"), std::string::npos) << top.err;
  EXPECT_EQ(top.err.find("A subcommand is required"), std::string::npos) << top.err;
  // One level down: the word fell through to the parent, and is still found.
  const auto sub = tycli({"tool", "lst"});
  EXPECT_EQ(sub.exit_code, 2);
  EXPECT_NE(sub.err.find("(did you mean `tycli tool list`?)"), std::string::npos) << sub.err;
  EXPECT_NE(sub.err.find("install, list, show"), std::string::npos) << sub.err;
  // Nothing near: no guess, but the list.
  const auto far = tycli({"frobnicate"});
  EXPECT_EQ(far.exit_code, 2);
  EXPECT_EQ(far.err.find("did you mean"), std::string::npos) << far.err;
  EXPECT_NE(far.err.find("the commands of `tycli` are tool, module, call"), std::string::npos) << far.err;
}

TEST_F(CliMessages, AMistypedOptionIsNamedWithTheNearestOneAndOtherParseErrorsPointAtHelp) {
  const auto near = tycli({"call", "--timout", "5", "add"});
  EXPECT_EQ(near.exit_code, 2);
  EXPECT_NE(near.err.find("tycli: error: `tycli call` has no option `--timout` (did you mean `--timeout`?)"),
            std::string::npos)
      << near.err;
  // A global option is among the candidates after a subcommand, and `=VALUE` is not part of the name.
  const auto global = tycli({"tool", "list", "--jsn=1"});
  EXPECT_NE(global.err.find("has no option `--jsn` (did you mean `--json`?)"), std::string::npos) << global.err;
  // A command's own option written before the command is placed, not "suggested" as itself.
  const auto early = tycli({"--js-runtime", "deno", "call", "add"});
  EXPECT_EQ(early.exit_code, 2);
  EXPECT_NE(early.err.find("`--js-runtime` is an option of `tycli call`: write it after `call` (`tycli call --js-runtime …`)"),
            std::string::npos)
      << early.err;
  const auto far = tycli({"call", "--frobnicate", "add"});
  EXPECT_NE(far.err.find("`tycli call` has no option `--frobnicate` (see `tycli call --help`)"), std::string::npos)
      << far.err;
  // CLI11's words for the rest, as tycli errors, pointed at the command's help.
  const auto conversion = tycli({"call", "--timeout", "abc", "add"});
  EXPECT_EQ(conversion.exit_code, 2);
  EXPECT_NE(conversion.err.find("tycli: error: Could not convert: --timeout = abc (see `tycli call --help`)"),
            std::string::npos)
      << conversion.err;
  const auto required = tycli({"grant", "fetch", "api", "https://a.example"});
  EXPECT_EQ(required.exit_code, 2);
  EXPECT_NE(required.err.find("tycli: error: --access is required (see `tycli grant fetch --help`)"),
            std::string::npos)
      << required.err;
  EXPECT_EQ(required.err.find("Run with --help"), std::string::npos) << required.err;
}

TEST_F(CliMessages, AMistypedToolNameIsNamedWithTheNearestActiveTool) {
  const auto file = home.write("uppercase.json", testing::js_tool("uppercase", "({input}) => input.toUpperCase()").dump());
  ASSERT_EQ(tycli({"tool", "install", file}).exit_code, 0);
  const auto near = tycli({"call", "upercase", "--args", R"({"input":"x"})"});
  EXPECT_EQ(near.exit_code, 2);
  EXPECT_NE(near.err.find("no tool named \"upercase\""), std::string::npos) << near.err;
  EXPECT_NE(near.err.find("(did you mean `tycli call uppercase`?)"), std::string::npos) << near.err;
  const auto far = tycli({"call", "zzz"});
  EXPECT_EQ(far.err.find("did you mean"), std::string::npos) << far.err;
}

TEST_F(CliMessages, AMissingCommandListsTheChoices) {
  const auto r = tycli({"chat"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("`tycli chat` needs a command: one of tools, messages, copy"), std::string::npos) << r.err;
  // --json: the same words as an error object on stdout.
  const auto j = tycli({"--json", "sandbox"});
  EXPECT_EQ(j.exit_code, 2);
  const auto doc = json::parse(j.out);
  ASSERT_TRUE(doc.has_value()) << j.out;
  EXPECT_EQ((*doc)["error"]["code"], "bad_usage");
  EXPECT_NE((*doc)["error"]["message"].get<std::string>().find("explain, log"), std::string::npos);
}

TEST_F(CliMessages, ACallWithNeitherToolNorTaskSaysWhatToGive) {
  const auto none = tycli({"call"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_EQ(none.err.find("not both"), std::string::npos) << none.err;
  EXPECT_NE(none.err.find("name the tool to call"), std::string::npos) << none.err;
  EXPECT_NE(none.err.find("`tycli tool list`"), std::string::npos) << none.err;
  const auto both = tycli({"call", "add", "--task", "sha256:00"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("not both"), std::string::npos) << both.err;
}

TEST_F(CliMessages, AContractIdPointsAtThePageThatExplainsIt) {
  // An MCP stdio server without --trust is refused by rule R6.
  const auto r = tycli({"tool", "import-mcp", "--", "/bin/true"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err.find("error: R6:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(rule R6, docs/contracts.md)"), std::string::npos) << r.err;
  EXPECT_EQ(tycli::plain_words("R6: review it"), "review it (rule R6, docs/contracts.md)");
  EXPECT_EQ(tycli::plain_words("M16: x"), "x (rule M16, docs/contracts.md)");
  EXPECT_EQ(tycli::plain_words("Rx: not an id"), "Rx: not an id");
  EXPECT_EQ(tycli::plain_words("R123: too long"), "R123: too long");
}

TEST(CliMessagesSource, NoMessageNamesACppMember) {
  // Every string literal of the product's sources: none says `Type::member`
  // (a user cannot set RuntimeConfig::node_path; they can set "nodePath").
  const std::regex literal(R"re("(?:[^"\\\n]|\\.)*")re");
  const std::regex member(R"re([A-Z][A-Za-z]+::[a-z_]+)re");
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(std::string(TASKYON_SOURCE_DIR) + "/src")) {
    if (entry.path().extension() != ".cc") continue;
    ++files;
    std::ifstream in(entry.path());
    std::size_t number = 0;
    for (std::string line; std::getline(in, line);) {
      ++number;
      for (std::sregex_iterator it(line.begin(), line.end(), literal), end; it != end; ++it) {
        if (it->position() > 0 && line[it->position() - 1] == ')') break;  // the end of a raw string begun above
        EXPECT_FALSE(std::regex_search(it->str(), member)) << entry.path() << ":" << number << ": " << it->str();
      }
    }
  }
  EXPECT_GT(files, 50u);
}

TEST(Suggest, NearestNameTakesPrefixesAndSmallEdits) {
  const std::vector<std::string> names{"install", "list", "show", "activate", "history"};
  EXPECT_EQ(tycli::nearest_name("lst", names), "list");
  EXPECT_EQ(tycli::nearest_name("hist", names), "history");
  EXPECT_EQ(tycli::nearest_name("shwo", names), "show");
  EXPECT_EQ(tycli::nearest_name("zzzzzz", names), "");
  EXPECT_EQ(tycli::nearest_name("", names), "");
}

}  // namespace
}  // namespace taskyon

namespace taskyon {
namespace {

// The first line of `text` holding `marker`, from the marker on.
std::string line_with(const std::string& text, const std::string& marker) {
  const auto at = text.find(marker);
  if (at == std::string::npos) return {};
  return text.substr(at + marker.size(), text.find('\n', at) - at - marker.size());
}

// Splits a printed command into words (the hint quotes only what needs it; these need none).
std::vector<std::string> words_of(const std::string& command) {
  std::vector<std::string> out;
  std::istringstream in(command);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

class CliRemedies : public CliMessages {
 protected:
  void SetUp() override {
    const auto fetcher = testing::js_tool(
        "getter", "async ({input}, context) => { const r = await context.fetch('https://127.0.0.1:47/x', "
                  "input ? { headers: { authorization: 'Bearer {{secret:TOKEN}}' } } : {}); return r.status; }");
    ASSERT_EQ(tycli({"tool", "install", home.write("getter.json", fetcher.dump())}).exit_code, 0);
  }
};

TEST_F(CliRemedies, ARefusedFetchIsFollowedByTheGrantThatAllowsIt) {
  // A literal loopback address (admitted by the test-only flag): nothing is resolved, nothing listens.
  const std::string allow = "--fetch-allow-cidr=127.0.0.1/32";
  const auto denied = tycli({allow, "call", "getter", "--args", R"({"input": ""})"});
  EXPECT_EQ(denied.exit_code, 1) << denied.err;
  const std::string command = line_with(denied.err, "to allow it: ");
  EXPECT_EQ(command, "tycli grant fetch getter https://127.0.0.1:47 --access read") << denied.err;
  // The printed command, run as printed, lifts exactly that refusal.
  auto words = words_of(command);
  ASSERT_GT(words.size(), 1u);
  words.erase(words.begin());
  ASSERT_EQ(tycli(words).exit_code, 0);
  const auto again = tycli({allow, "call", "getter", "--args", R"({"input": ""})"});
  EXPECT_EQ(again.err.find("grant fetch"), std::string::npos) << again.err;
  // With the grant, a missing secret is the refusal, and its command is said.
  const auto secret = tycli({allow, "call", "getter", "--args", R"({"input": "s"})"});
  EXPECT_EQ(line_with(secret.err, "to allow it: "), "tycli secret set getter https://127.0.0.1:47 TOKEN < FILE")
      << secret.err;
  // --json prints no hints (the audit log records the refusals).
  const auto quiet = tycli({allow, "--json", "call", "getter", "--args", R"({"input": "s"})"});
  EXPECT_EQ(quiet.err.find("to allow it"), std::string::npos) << quiet.err;
}

TEST_F(CliRemedies, ATimeoutNamesTheOptionThatGivesMoreTime) {
  ASSERT_EQ(tycli({"tool", "install", home.write("spin.json", testing::js_tool("spin", "() => { for (;;) {} }").dump())})
                .exit_code,
            0);
  const auto r = tycli({"call", "spin", "--timeout", "300", "--args", R"({"input": ""})"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("timeout"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--timeout MS"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace taskyon
