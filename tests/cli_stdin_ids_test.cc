// `-` for stdin wherever tycli takes a FILE (at most one per command), and
// short ids in tables that commands accept back as input (--full-ids: whole
// ids; --json: always whole). Real tycli processes on a real store.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "taskyon/store/store.h"
#include "test_util.h"

namespace {

namespace fs = std::filesystem;
using taskyon::testing::CommandResult;
using taskyon::testing::TempDir;

const std::string kSource = TASKYON_SOURCE_DIR;
const std::string kExamples = kSource + "/examples/";

class CliStdinIds : public ::testing::Test {
 protected:
  CommandResult tycli(const std::vector<std::string>& args) { return taskyon::testing::run_tycli(args, dir.path()); }

  // tycli with `input` on stdin (a regular file redirected by bash).
  CommandResult tycli_stdin(const std::string& input, const std::vector<std::string>& args) {
    const auto file = dir.write("stdin.txt", input);
    std::vector<std::string> argv = {"bash", "-c", "f=$1; shift; exec \"$@\" < \"$f\"", "bash", file, TYCLI_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    return taskyon::testing::run_command(argv, dir.path());
  }

  std::string read(const std::string& path) {
    auto r = taskyon::testing::run_command({"cat", path}, dir.path());
    return r.out;
  }

  // The id `tycli tool install FILE` prints for a file.
  std::string first_id(const std::string& out) {
    const auto at = out.find("sha256:");
    return at == std::string::npos ? std::string() : out.substr(at, 71);
  }

  TempDir dir;
};

TEST_F(CliStdinIds, ToolInstallReadsAManifestFromStdin) {
  const auto r = tycli_stdin(read(kExamples + "tools/add.json"), {"tool", "install", "-"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  TempDir other;
  const auto file = taskyon::testing::run_tycli({"tool", "install", kExamples + "tools/add.json"}, other.path());
  EXPECT_EQ(r.out, file.out);  // the same revision as from the file
  EXPECT_EQ(tycli({"call", "add", "--args", R"({"num1": 1, "num2": 2})"}).out, "3\n");
}

TEST_F(CliStdinIds, ArgsSettingsAndRunReadStdin) {
  std::vector<std::string> install = {"tool", "install"};
  for (const auto* name : {"add", "counter", "json_path", "text_stats", "uppercase"})
    install.push_back(kExamples + "tools/" + name + ".json");
  ASSERT_EQ(tycli(install).exit_code, 0);
  auto call = tycli_stdin(R"({"num1": 2, "num2": 40})", {"call", "add", "--args", "@-"});
  ASSERT_EQ(call.exit_code, 0) << call.err;
  EXPECT_EQ(call.out, "42\n");

  auto set = tycli_stdin(R"({"locale": "en-US"})", {"settings", "set", "uppercase", "-"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  EXPECT_NE(tycli({"settings", "show", "uppercase"}).out.find(R"({"locale":"en-US"})"), std::string::npos);

  const auto conversation = kExamples + "conversations/registry-tools.json";
  auto piped = tycli_stdin(read(conversation), {"--json", "run", "-"});
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  auto again = tycli({"--json", "run", conversation});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const auto roots = [](const std::string& out) { return out.substr(out.find("\"roots\"")); };
  EXPECT_EQ(roots(piped.out).substr(0, 90), roots(again.out).substr(0, 90));  // the same tasks: ids are content
}

TEST_F(CliStdinIds, ASecondDashIsRefusedBeforeAnythingChanges) {
  auto twice = tycli_stdin(read(kExamples + "tools/add.json"), {"tool", "install", "-", "-"});
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_NE(twice.err.find("stdin was already read"), std::string::npos) << twice.err;
  EXPECT_FALSE(fs::exists(dir / "taskyon.db"));  // nothing stored, not even a store

  ASSERT_EQ(tycli({"tool", "install", kExamples + "tools/add.json"}).exit_code, 0);
  auto args = tycli_stdin(R"({"num1": 2, "num2": 40})", {"call", "add", "--args", "@-", "--args", "@-"});
  EXPECT_EQ(args.exit_code, 2);
  EXPECT_NE(args.err.find("the --args file cannot be `-` too"), std::string::npos) << args.err;
  EXPECT_EQ(tycli({"task", "tree"}).out.find("call add"), std::string::npos);  // no call stored
}

TEST_F(CliStdinIds, BadInputOnStdinIsNamedStdin) {
  auto r = tycli_stdin("{", {"tool", "install", "-"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("stdin"), std::string::npos) << r.err;
  auto missing = tycli({"tool", "install", dir.path() / "no-such.json"});
  EXPECT_EQ(missing.exit_code, 2);  // a FILE still has to exist
}

TEST_F(CliStdinIds, TablesPrintShortIdsFullIdsAndJsonWholeOnes) {
  auto installed = tycli({"tool", "install", kExamples + "tools/add.json"});
  const auto id = first_id(installed.out);
  ASSERT_EQ(id.size(), 71u) << installed.out;
  const auto short_form = id.substr(0, 19);
  ASSERT_EQ(tycli({"grant", "storage", "add"}).exit_code, 0);
  for (const std::vector<std::string>& table : {std::vector<std::string>{"tool", "list"},
                                                std::vector<std::string>{"tool", "history", "add"},
                                                std::vector<std::string>{"grant", "list"}}) {
    const auto plain = tycli(table);
    EXPECT_NE(plain.out.find(short_form + " "), std::string::npos) << plain.out;
    EXPECT_EQ(plain.out.find(id), std::string::npos) << plain.out;
    std::vector<std::string> full = {"--full-ids"};
    full.insert(full.end(), table.begin(), table.end());
    EXPECT_NE(tycli(full).out.find(id), std::string::npos);
    std::vector<std::string> json = {"--json"};
    json.insert(json.end(), table.begin(), table.end());
    EXPECT_NE(tycli(json).out.find(id), std::string::npos);
  }
  // No table is wider than its ids need.
  EXPECT_LT(tycli({"tool", "list"}).out.find('\n'), 60u);
}

TEST_F(CliStdinIds, ShortIdsFromTablesAreAcceptedAsInput) {
  ASSERT_EQ(tycli({"tool", "install", kExamples + "tools/add.json"}).exit_code, 0);
  const auto list = tycli({"tool", "list"}).out;
  const auto revision = list.substr(list.find("sha256:"), 19);
  EXPECT_EQ(tycli({"tool", "show", revision}).exit_code, 0);
  ASSERT_EQ(tycli({"call", "add", "--args", R"({"num1": 2, "num2": 40})"}).exit_code, 0);
  const auto tree = tycli({"task", "tree"}).out;
  const auto task = tree.substr(tree.find("sha256:"), 19);  // the first line: the call
  auto shown = tycli({"task", "show", task});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find("functionCall"), std::string::npos);
  auto again = tycli({"call", "--task", task});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, "42\n");
}

// A tool defined in the task tree is in no registry table, yet `sandbox log`
// and `audit` print its short id: --revision takes that short id back.
TEST_F(CliStdinIds, AShortIdOfATreeDefinedRevisionFiltersTheLogs) {
  ASSERT_EQ(tycli({"tool", "install", kExamples + "tools/add.json"}).exit_code, 0);
  auto run = tycli({"run", kExamples + "conversations/scoped-tools.json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto log = tycli({"sandbox", "log"}).out;
  const auto line_at = log.find("format_amount");
  ASSERT_NE(line_at, std::string::npos) << log;
  const auto revision = log.substr(log.find("sha256:", line_at), 19);
  auto filtered = tycli({"sandbox", "log", "--revision", revision});
  ASSERT_EQ(filtered.exit_code, 0) << filtered.err;
  EXPECT_NE(filtered.out.find("format_amount"), std::string::npos) << filtered.out;
  auto audited = tycli({"audit", "--revision", revision});
  EXPECT_EQ(audited.exit_code, 0) << audited.err;
  auto unknown = tycli({"sandbox", "log", "--revision", "sha256:000000000000"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("no revision matches"), std::string::npos) << unknown.err;
}

// A tool name made of hex letters is a name while it is shorter than a prefix.
TEST_F(CliStdinIds, AnUnknownHexLetterNameIsAMissingToolNotAShortPrefix) {
  ASSERT_EQ(tycli({"tool", "install", kExamples + "tools/uppercase.json"}).exit_code, 0);
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"call", "add"}, std::vector<std::string>{"tool", "show", "cafe"}}) {
    auto r = tycli(command);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("no tool named"), std::string::npos) << r.err;
  }
  auto short_prefix = tycli({"tool", "show", "sha256:abc"});
  EXPECT_EQ(short_prefix.exit_code, 2);
  EXPECT_NE(short_prefix.err.find("too short"), std::string::npos) << short_prefix.err;
}

TEST_F(CliStdinIds, AnAmbiguousShortIdIsRefusedListingTheCandidates) {
  ASSERT_EQ(tycli({"tool", "install", kExamples + "tools/add.json"}).exit_code, 0);
  // Two ids sharing 12 hex digits cannot be made by hashing: planted in the real store file.
  const std::string a = "sha256:abcdefabcdef" + std::string(52, '1');
  const std::string b = "sha256:abcdefabcdef" + std::string(52, '2');
  {
    auto st = taskyon::store::Store::open((dir / "taskyon.db").string());
    ASSERT_TRUE(st);
    for (const auto& id : {a, b})
      ASSERT_TRUE(st->database().exec("INSERT INTO revisions VALUES ('" + id + "', 'x', 'sandboxed-code', '{}', 'now')"));
  }
  auto r = tycli({"tool", "show", "sha256:abcdefabcdef"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(a), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(b), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("give more digits"), std::string::npos) << r.err;
}

}  // namespace
