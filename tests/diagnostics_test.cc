// The diagnostics framework (src/taskyon/diagnostics/) and `tycli diagnostics`:
// the runner with test-local checks (outcomes, exceptions, order, own
// directories), selection by filter, the CLI's list/json/exit codes, and the
// coverage of DESIGN §7's contract table.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include "taskyon/diagnostics/builtin.h"
#include "taskyon/diagnostics/runner.h"
#include "test_util.h"

namespace taskyon::diagnostics {
namespace {

namespace fs = std::filesystem;

Check check(std::string contract, std::string name, std::function<Outcome(Env&)> run) {
  return Check{std::move(contract), std::move(name), "test check", std::move(run)};
}

std::vector<const Check*> all(const Registry& r) { return *select(r, {}); }

TEST(DiagnosticsRunner, ReportsPassFailSkipAndExceptionsAsFail) {
  Registry r;
  ASSERT_TRUE(r.add(check("R1", "passes", [](Env&) { return pass("fine"); })));
  ASSERT_TRUE(r.add(check("R1", "fails", [](Env&) -> Outcome {
    expect(1 + 1 == 3, "arithmetic is broken");
    return pass("unreachable");
  })));
  ASSERT_TRUE(r.add(check("R2", "skips", [](Env&) -> Outcome { skip_check("no Landlock: use Linux >= 5.13"); })));
  ASSERT_TRUE(r.add(check("R2", "throws", [](Env&) -> Outcome { throw std::runtime_error("boom"); })));
  ASSERT_TRUE(r.add(check("R2", "bad_result", [](Env& env) -> Outcome {
    need(env.store().resolve("no_such_tool"), "resolving");
    return pass("unreachable");
  })));
  const Report rep = run(all(r), {});
  ASSERT_EQ(rep.results.size(), 5u);
  EXPECT_EQ(rep.results[0].status, Status::pass);
  EXPECT_EQ(rep.results[1].status, Status::fail);
  EXPECT_EQ(rep.results[1].reason, "arithmetic is broken");
  EXPECT_EQ(rep.results[2].status, Status::skip);
  EXPECT_EQ(rep.results[3].status, Status::fail);
  EXPECT_EQ(rep.results[3].reason, "unexpected exception: boom");
  EXPECT_EQ(rep.results[4].status, Status::fail);
  EXPECT_NE(rep.results[4].reason.find("not_found"), std::string::npos) << rep.results[4].reason;
  EXPECT_EQ(rep.passed, 1);
  EXPECT_EQ(rep.failed, 3);
  EXPECT_EQ(rep.skipped, 1);
  EXPECT_FALSE(rep.ok());

  const auto rows = rep.by_contract();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].contract, "R1");
  EXPECT_EQ(rows[0].checks, 2);
  EXPECT_EQ(rows[1].failed, 2);
  EXPECT_EQ(rows[1].skipped, 1);

  EXPECT_EQ(progress_line(rep.results[1]).rfind("FAIL  tool_security_contracts.R1.fails (", 0), 0u);
  EXPECT_NE(progress_line(rep.results[1]).find(": arithmetic is broken"), std::string::npos);
  EXPECT_NE(summary_text(rep).find("FAILED: 3 check(s) failed"), std::string::npos);
  const auto j = report_json(rep);
  EXPECT_EQ(j["checks"][1]["status"], "fail");
  EXPECT_EQ(j["checks"][1]["name"], "tool_security_contracts.R1.fails");
  EXPECT_EQ(j["summary"]["fail"], 3);
  EXPECT_EQ(j["summary"]["ok"], false);
}

TEST(DiagnosticsRunner, AllPassingIsOk) {
  Registry r;
  ASSERT_TRUE(r.add(check("R1", "a", [](Env&) { return pass("a"); })));
  ASSERT_TRUE(r.add(check("R1", "b", [](Env&) { return skip("no Deno: npm install deno"); })));
  const Report rep = run(all(r), {});
  EXPECT_TRUE(rep.ok());
  EXPECT_EQ(report_json(rep)["summary"]["ok"], true);
}

TEST(DiagnosticsRunner, ResultsComeInSelectionOrderWhateverOrderChecksEnd) {
  // Check 0 waits until every other check has ended, so it ends last; with
  // four threads the others end first. The callback still sees 0, 1, 2, 3.
  std::mutex mu;
  std::condition_variable cv;
  int ended = 0;
  Registry r;
  ASSERT_TRUE(r.add(check("R1", "c0", [&](Env&) {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return ended == 3; });
    return pass("last");
  })));
  for (const char* name : {"c1", "c2", "c3"}) {
    ASSERT_TRUE(r.add(check("R1", name, [&](Env&) {
      {
        std::lock_guard lock(mu);
        ++ended;
      }
      cv.notify_all();
      return pass("early");
    })));
  }
  std::vector<std::string> seen;
  RunOptions options;
  options.jobs = 4;
  options.on_result = [&](const CheckResult& res) { seen.push_back(res.name); };
  const Report rep = run(all(r), options);
  EXPECT_EQ(seen, (std::vector<std::string>{"tool_security_contracts.R1.c0", "tool_security_contracts.R1.c1",
                                            "tool_security_contracts.R1.c2", "tool_security_contracts.R1.c3"}));
  EXPECT_TRUE(rep.ok());
}

TEST(DiagnosticsRunner, EachCheckGetsItsOwnFreshDirectoryRemovedAfterwards) {
  testing::TempDir root;
  std::mutex mu;
  std::vector<fs::path> dirs;
  Registry r;
  for (const char* name : {"a", "b", "c"}) {
    ASSERT_TRUE(r.add(check("R1", name, [&](Env& env) {
      expect(fs::is_empty(env.dir()), "the directory is not empty");
      env.store();  // a real database file
      expect(fs::exists(env.dir() / "taskyon.db"), "no store file");
      std::lock_guard lock(mu);
      dirs.push_back(env.dir());
      return pass("ok");
    })));
  }
  RunOptions options;
  options.settings.temp_root = root.path();
  options.jobs = 2;
  const Report rep = run(all(r), options);
  EXPECT_TRUE(rep.ok()) << rep.results[0].reason;
  ASSERT_EQ(dirs.size(), 3u);
  EXPECT_EQ(std::set<fs::path>(dirs.begin(), dirs.end()).size(), 3u);
  for (const auto& d : dirs) {
    EXPECT_EQ(d.parent_path(), root.path());
    EXPECT_FALSE(fs::exists(d)) << d;
  }
}

TEST(DiagnosticsRunner, MissingNodeSkipsSaysHowToGetIt) {
  Registry r;
  ASSERT_TRUE(r.add(check("S1", "needs_node", [](Env& env) {
    env.pool();
    return pass("unreachable");
  })));
  RunOptions options;
  options.settings.node_path = "/nonexistent/node";
  const Report rep = run(all(r), options);
  EXPECT_EQ(rep.results[0].status, Status::skip) << rep.results[0].reason;
  EXPECT_NE(rep.results[0].reason.find("setup.sh"), std::string::npos) << rep.results[0].reason;
}

TEST(DiagnosticsRegistry, RefusesBadNamesAndDuplicates) {
  Registry r;
  EXPECT_TRUE(r.add(check("R1", "ok_name_2", [](Env&) { return pass(""); })));
  EXPECT_FALSE(r.add(check("R1", "ok_name_2", [](Env&) { return pass(""); })));
  EXPECT_FALSE(r.add(check("R1", "Bad-Name", [](Env&) { return pass(""); })));
  EXPECT_FALSE(r.add(check("", "x", [](Env&) { return pass(""); })));
  EXPECT_FALSE(r.add(check("R1", "no_function", nullptr)));
}

TEST(DiagnosticsSelect, FiltersAreSubstringsOfTheFullNameAnyOfThem) {
  Registry r;
  for (const auto& [contract, name] : std::vector<std::pair<std::string, std::string>>{
           {"R1", "alpha"}, {"R2", "beta"}, {"T1", "gamma"}})
    ASSERT_TRUE(r.add(check(contract, name, [](Env&) { return pass(""); })));
  EXPECT_EQ(select(r, {})->size(), 3u);
  EXPECT_EQ(select(r, {"tool_security_contracts"})->size(), 3u);
  auto two = select(r, {"R2.", "gamma"});
  ASSERT_TRUE(two);
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[0]->short_name, "beta");  // registry order, not filter order
  EXPECT_EQ((*two)[1]->short_name, "gamma");
  auto none = select(r, {"nothing_like_it"});
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, Errc::bad_usage);
  EXPECT_NE(none.error().message.find("\"nothing_like_it\""), std::string::npos);
}

// --- The contract table ------------------------------------------------------

// The ids of DESIGN's contract tables (§7, and §8's H and §9's B), in order,
// read from the file itself.
std::vector<std::string> design_contract_ids() {
  const fs::path design = fs::path(TASKYON_SOURCE_DIR) / ".." / "shared" / "DESIGN.md";
  std::ifstream in(design);
  EXPECT_TRUE(in) << "cannot read " << design << " (shared/ sits beside the repository, in CI too)";
  std::vector<std::string> ids;
  std::string line;
  bool in_section = false;
  const std::regex row(R"(^\|\s*([A-Z][0-9]+)\s*\|)");
  while (std::getline(in, line)) {
    if (line.starts_with("## "))
      in_section = line.find("Contracts") != std::string::npos || line.find("long-lived host") != std::string::npos ||
                   line.find("browser host") != std::string::npos;
    std::smatch m;
    if (in_section && std::regex_search(line, m, row)) ids.push_back(m[1]);
  }
  return ids;
}

TEST(DiagnosticsCoverage, EveryDesignContractIsCoveredOrListedAsNotYetCoveredNeverBoth) {
  const auto ids = design_contract_ids();
  ASSERT_EQ(ids.size(), 60u);
  std::vector<std::string> table;
  for (const auto& c : contracts()) table.emplace_back(c.id);
  EXPECT_EQ(table, ids) << "builtin.cc's contract table differs from DESIGN §7–§9";

  std::set<std::string> covered;
  for (const auto& c : builtin().checks()) covered.insert(c.contract);
  const std::set<std::string> missing(not_yet_covered().begin(), not_yet_covered().end());
  EXPECT_EQ(missing.size(), not_yet_covered().size()) << "an id is listed twice";
  std::string left;
  for (const auto& id : ids) {
    EXPECT_TRUE(covered.contains(id) != missing.contains(id))
        << id << (covered.contains(id) ? " has a check and is also listed as not yet covered"
                                       : " has no check and is not listed as not yet covered");
    if (missing.contains(id)) left += " " + id;
  }
  for (const auto& id : covered) EXPECT_TRUE(std::find(ids.begin(), ids.end(), id) != ids.end()) << id;
  std::cout << "not yet covered:" << left << "\n";
}

// docs/contracts.md is the users' copy of the table (a clone has no ../shared):
// one row per contract with its text, and every check named in its row.
TEST(DiagnosticsCoverage, TheUsersContractPageNamesEveryContractAndCheck) {
  const fs::path page = fs::path(TASKYON_SOURCE_DIR) / "docs" / "contracts.md";
  std::ifstream in(page);
  ASSERT_TRUE(in) << "cannot read " << page;
  std::map<std::string, std::string> rows;
  std::string line;
  const std::regex row(R"(^\|\s*([A-Z][0-9]+)\s*\|\s*(.*?)\s*\|(.*)\|\s*$)");
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, row)) rows[m[1]] = std::string(m[2]) + "\n" + std::string(m[3]);
  }
  for (const auto& c : contracts()) {
    auto it = rows.find(std::string(c.id));
    ASSERT_NE(it, rows.end()) << c.id << " has no row in docs/contracts.md";
    EXPECT_TRUE(it->second.starts_with(std::string(c.text) + "\n")) << c.id << ": the text differs from DESIGN";
  }
  for (const auto& check : builtin().checks()) {
    auto it = rows.find(check.contract);
    ASSERT_NE(it, rows.end()) << check.contract;
    EXPECT_NE(it->second.find("`" + check.short_name + "`"), std::string::npos)
        << "docs/contracts.md's " << check.contract << " row does not name the check " << check.short_name;
  }
  EXPECT_EQ(rows.size(), contracts().size()) << "docs/contracts.md has a row for an unknown id";
}

TEST(DiagnosticsCoverage, BuiltinChecksAreNamedAndDescribed) {
  const auto& checks = builtin().checks();
  ASSERT_FALSE(checks.empty());
  const std::regex name(R"(^tool_security_contracts\.[RTSNPMHB][0-9]+\.[a-z0-9_]+$)");
  for (const auto& c : checks) {
    EXPECT_TRUE(std::regex_match(c.name(), name)) << c.name();
    EXPECT_FALSE(c.description.empty()) << c.name();
    EXPECT_FALSE(contract_text(c.contract).empty()) << c.name();
  }
}

// --- tycli diagnostics as a user runs it -------------------------------------

class CliDiagnostics : public ::testing::Test {
 protected:
  testing::CommandResult tycli(const std::vector<std::string>& args) { return testing::run_tycli(args, home.path()); }
  testing::TempDir home;
};

TEST_F(CliDiagnostics, ListShowsEveryCheckAndWhatIsNotYetCovered) {
  auto r = tycli({"diagnostics", "--list"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const auto& c : builtin().checks()) EXPECT_NE(r.out.find(c.name() + "\n"), std::string::npos) << c.name();
  for (auto id : not_yet_covered()) {
    EXPECT_TRUE(std::regex_search(r.out, std::regex("\n  " + std::string(id) + " +not yet covered: "))) << id;
    EXPECT_EQ(r.out.find("tool_security_contracts." + std::string(id) + "."), std::string::npos) << id;
  }
  EXPECT_EQ(r.out.find("PASS"), std::string::npos);  // nothing ran
  EXPECT_FALSE(std::filesystem::exists(home / "taskyon.db"));  // the user's store is never touched
}

TEST_F(CliDiagnostics, ListJsonAndFilters) {
  auto r = tycli({"diagnostics", "--list", "--json", "--filter", ".R4.", "--filter", ".T3."});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = json::parse(r.out);
  ASSERT_TRUE(doc) << r.out;
  ASSERT_FALSE((*doc)["checks"].empty());
  for (const auto& c : (*doc)["checks"]) {
    const auto contract = c["contract"].get<std::string>();
    EXPECT_TRUE(contract == "R4" || contract == "T3") << c.dump();
  }
  EXPECT_EQ((*doc)["notYetCovered"].size(), not_yet_covered().size());
}

TEST_F(CliDiagnostics, RunsTheSelectedChecksWithAProgressLineEachAndASummary) {
  auto r = tycli({"diagnostics", "--filter", ".R2."});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("PASS  tool_security_contracts.R2.tampered_revision_detected ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nR2 "), std::string::npos) << r.out;  // the summary row
  EXPECT_NE(r.out.find("OK: no check failed"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(".R1."), std::string::npos) << r.out;
}

TEST_F(CliDiagnostics, JsonIsOneDocument) {
  auto r = tycli({"--json", "diagnostics", "--filter", "R4.", "--filter", "M7."});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto doc = json::parse(r.out);
  ASSERT_TRUE(doc) << r.out;
  ASSERT_EQ((*doc)["checks"].size(), (*doc)["summary"]["total"].get<std::size_t>());
  for (const auto& c : (*doc)["checks"]) {
    EXPECT_EQ(c["status"], "pass") << c.dump();
    EXPECT_TRUE(c["ms"].is_number_integer());
    EXPECT_FALSE(c["reason"].get<std::string>().empty());
  }
  EXPECT_EQ((*doc)["summary"]["ok"], true);
}

TEST_F(CliDiagnostics, AFilterThatMatchesNothingIsBadUsage) {
  auto r = tycli({"diagnostics", "--filter", "no_such_check"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no check name contains \"no_such_check\""), std::string::npos) << r.err;
}

TEST_F(CliDiagnostics, AFailingCheckMakesTheExitCode1) {
  // A "node" that is no JavaScript runtime: the sandbox checks run it and fail.
  auto r = tycli({"diagnostics", "--filter", ".S1.", "--node", "/bin/true"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("FAIL  tool_security_contracts.S1."), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FAILED: 1 check(s) failed"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace taskyon::diagnostics
