// Signals and leftovers (issue 18 item 4, issue 12 item 10), black-box on the
// real tycli: SIGTERM, SIGINT and SIGHUP during a stuck call end tycli with
// 128 + N, the sandboxes destroyed and logged "interrupted", no work
// directory left, the call stored as Cancelled; and a kill -9'd tycli's work
// directory is removed by the next tycli, which says so.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "taskyon/sandbox/workdir.h"
#include "test_util.h"

namespace taskyon::testing {
namespace {

namespace fs = std::filesystem;
using json::Value;

std::string comm_of(int pid) {
  std::string comm;
  std::getline(std::ifstream("/proc/" + std::to_string(pid) + "/comm"), comm);
  return comm;
}

// Work directories under the hosts' TMPDIR (run_tycli: home/tmp).
std::vector<std::string> workdirs(const fs::path& home) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(home / "tmp", ec))
    if (e.path().filename().string().starts_with("taskyon-sandbox-")) found.push_back(e.path().string());
  return found;
}

// Waits (bounded) until a sandbox under home/tmp has set its process title to
// `title`: the tool reached its stuck point. No sleep decides an outcome.
bool wait_for_title(const fs::path& home, const std::string& title) {
  for (int i = 0; i < 600; ++i) {
    for (int pid : processes_in(home / "tmp"))
      if (comm_of(pid) == title) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

std::string sql(const fs::path& home, const std::string& query) {
  auto r = run_command({"sqlite3", (home / "taskyon.db").string(), query}, home);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

Value sandbox_log(const fs::path& home) {
  auto r = run_tycli({"--json", "sandbox", "log", "--limit", "0"}, home);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return Value::parse(r.out);
}

int count_reason(const Value& log, const std::string& reason) {
  int n = 0;
  for (const auto& d : log) n += d["reason"] == reason ? 1 : 0;
  return n;
}

// A tool whose call blocks for good after saying so in its process title.
void install_stuck(const TempDir& home) {
  auto file = home.write("stuck.json", js_tool("stuck", "async () => { process.title = 'tystuck'; "
                                                        "await new Promise(() => {}); }")
                                           .dump());
  auto r = run_tycli({"tool", "install", file}, home.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

class SignalDuringCall : public ::testing::TestWithParam<int> {};

TEST_P(SignalDuringCall, EndsCleanlyAndStoresTheCallAsCancelled) {
  const int signal = GetParam();
  TempDir home;
  install_stuck(home);
  const std::string log = (home / "call.log").string();
  const int pid = spawn_tycli({"call", "stuck", "--timeout", "60000"}, home.path(), log);
  ASSERT_TRUE(wait_for_title(home.path(), "tystuck")) << "the stuck tool never ran";
  ASSERT_EQ(workdirs(home.path()).size(), 1u);
  ::kill(pid, signal);
  EXPECT_EQ(wait_exit(pid), 128 + signal);

  std::ifstream in(log);
  const std::string output((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(output.find("interrupted by " + std::string(signal == SIGTERM ? "SIGTERM" : signal == SIGINT ? "SIGINT" : "SIGHUP")),
            std::string::npos) << output;
  EXPECT_TRUE(workdirs(home.path()).empty()) << "a work directory was left";
  EXPECT_TRUE(processes_in(home / "tmp").empty()) << "a sandbox outlived tycli";
  const Value destroyed = sandbox_log(home.path());
  EXPECT_EQ(count_reason(destroyed, "interrupted"), 1) << destroyed.dump();
  EXPECT_EQ(destroyed.size(), 1u) << destroyed.dump();
  EXPECT_EQ(sql(home.path(), "SELECT kind, state FROM tasks ORDER BY kind"),
            "functionCall|Cancelled\ntoolResult|Cancelled\n");
  EXPECT_NE(sql(home.path(), "SELECT content FROM tasks WHERE kind = 'toolResult'").find("\"code\":\"cancelled\""),
            std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Signals, SignalDuringCall, ::testing::Values(SIGTERM, SIGINT, SIGHUP),
                         [](const auto& info) { return std::string(info.param == SIGTERM ? "SIGTERM"
                                                                    : info.param == SIGINT ? "SIGINT" : "SIGHUP"); });

// `tycli run`: the first call's retained sandbox and the stuck one are both
// destroyed "interrupted"; the entries after the stuck call never run.
TEST(CliSignals, SigintDuringRunDestroysEveryRetainedSandbox) {
  TempDir home;
  install_stuck(home);
  auto quick = home.write("quick.json", js_tool("quick", "() => 'done'").dump());
  ASSERT_EQ(run_tycli({"tool", "install", quick}, home.path()).exit_code, 0);
  const Value conversation = Value::array({
      {{"role", "user"}, {"content", {{"message", "go"}}}},
      {{"role", "assistant"}, {"content", {{"functionCall", {{"name", "quick"}, {"arguments", Value::object()}}}}}},
      {{"role", "assistant"}, {"content", {{"functionCall", {{"name", "stuck"}, {"arguments", Value::object()}}}}}},
      {{"role", "assistant"}, {"content", {{"functionCall", {{"name", "quick"}, {"arguments", {{"input", "x"}}}}}}}},
  });
  auto file = home.write("conv.json", conversation.dump());
  const int pid = spawn_tycli({"run", file, "--timeout", "60000"}, home.path(), (home / "run.log").string());
  ASSERT_TRUE(wait_for_title(home.path(), "tystuck"));
  ::kill(pid, SIGINT);
  EXPECT_EQ(wait_exit(pid), 130);
  EXPECT_TRUE(workdirs(home.path()).empty());
  const Value destroyed = sandbox_log(home.path());
  EXPECT_EQ(count_reason(destroyed, "interrupted"), 2) << destroyed.dump();
  EXPECT_EQ(destroyed.size(), 2u) << destroyed.dump();
  // quick ran and completed; stuck was cancelled; the last entry never ran.
  EXPECT_EQ(sql(home.path(), "SELECT state, count(*) FROM tasks WHERE kind = 'functionCall' GROUP BY state ORDER BY state"),
            "Cancelled|1\nCompleted|1\n");
}

// kill -9 leaves the work directory (nothing runs in tycli); the next tycli,
// whatever its command, removes it and says how many it removed.
TEST(CliSignals, NextTycliRemovesTheDirectoryOfAKilledOne) {
  TempDir home;
  install_stuck(home);
  const int pid = spawn_tycli({"call", "stuck", "--timeout", "60000"}, home.path());
  ASSERT_TRUE(wait_for_title(home.path(), "tystuck"));
  ::kill(pid, SIGKILL);
  EXPECT_EQ(wait_exit(pid), 128 + SIGKILL);
  for (int i = 0; i < 200 && !processes_in(home / "tmp").empty(); ++i)  // the child dies with its parent
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  const auto left = workdirs(home.path());
  ASSERT_EQ(left.size(), 1u) << "SIGKILL should have left the directory for the sweep";
  EXPECT_NE(left[0].find("taskyon-sandbox-" + std::to_string(pid) + "-"), std::string::npos) << left[0];

  auto r = run_tycli({"tool", "list"}, home.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("removed 1 stale sandbox work directory"), std::string::npos) << r.err;
  EXPECT_TRUE(workdirs(home.path()).empty());
  auto again = run_tycli({"tool", "list"}, home.path());
  EXPECT_EQ(again.err.find("removed"), std::string::npos) << again.err;  // said once, when it happened
}

// The sweep itself: only directories of this user whose owner is gone.
TEST(SandboxWorkdirs, SweepRemovesOnlyDirectoriesOfGoneOwners) {
  TempDir tmp;
  const auto me = std::to_string(::getpid());
  const auto start = std::to_string(sandbox::process_start_time(::getpid()).value());
  fs::create_directories(tmp / ("taskyon-sandbox-" + me + "-" + start + "-aaaaaa"));          // live owner
  fs::create_directories(tmp / ("taskyon-sandbox-" + me + "-1-bbbbbb"));                      // pid reused
  fs::create_directories(tmp / "taskyon-sandbox-999999999-5-cccccc/inner/deeper");            // no such pid
  fs::create_directories(tmp / "taskyon-python-999999999-7-ffffff");                          // executePython's
  fs::create_directories(tmp / "taskyon-sandbox-Xq3k9Z");                                     // old shape
  fs::create_directories(tmp / "elsewhere");
  std::ofstream(tmp / "elsewhere" / "keep") << "x";
  fs::create_directory_symlink(tmp / "elsewhere", tmp / "taskyon-sandbox-999999998-5-dddddd");  // a symlink
  std::ofstream(tmp / "taskyon-sandbox-999999997-5-eeeeee") << "a file";

  const auto sweep = sandbox::sweep_stale_workdirs(tmp.path().string());
  EXPECT_EQ(sweep.removed, 3u);
  EXPECT_EQ(sweep.failed, 0u);
  EXPECT_TRUE(fs::exists(tmp / ("taskyon-sandbox-" + me + "-" + start + "-aaaaaa")));
  EXPECT_FALSE(fs::exists(tmp / ("taskyon-sandbox-" + me + "-1-bbbbbb")));
  EXPECT_FALSE(fs::exists(tmp / "taskyon-sandbox-999999999-5-cccccc"));
  EXPECT_FALSE(fs::exists(tmp / "taskyon-python-999999999-7-ffffff"));
  EXPECT_TRUE(fs::exists(tmp / "taskyon-sandbox-Xq3k9Z"));
  EXPECT_TRUE(fs::is_symlink(tmp / "taskyon-sandbox-999999998-5-dddddd"));
  EXPECT_TRUE(fs::exists(tmp / "elsewhere" / "keep"));
  EXPECT_TRUE(fs::exists(tmp / "taskyon-sandbox-999999997-5-eeeeee"));
}

TEST(SandboxWorkdirs, NamesCarryTheOwnersPidAndStartTime) {
  TempDir tmp;  // the sweep below must see only this test's directory, not the shared /tmp
  const char* old_tmpdir = std::getenv("TMPDIR");
  const std::string saved = old_tmpdir ? old_tmpdir : "";
  ::setenv("TMPDIR", tmp.path().c_str(), 1);
  auto dir = sandbox::make_workdir();
  if (old_tmpdir)
    ::setenv("TMPDIR", saved.c_str(), 1);
  else
    ::unsetenv("TMPDIR");
  ASSERT_TRUE(dir) << dir.error().message;
  const auto name = fs::path(*dir).filename().string();
  EXPECT_EQ(fs::path(*dir).parent_path(), tmp.path());
  EXPECT_TRUE(name.starts_with("taskyon-sandbox-" + std::to_string(::getpid()) + "-" +
                               std::to_string(sandbox::process_start_time(::getpid()).value()) + "-"))
      << name;
  EXPECT_EQ(fs::status(*dir).permissions() & fs::perms::all, fs::perms::owner_all);
  EXPECT_EQ(sandbox::sweep_stale_workdirs(fs::path(*dir).parent_path().string()).removed, 0u) << "its owner lives";
  fs::remove(*dir);
}

}  // namespace
}  // namespace taskyon::testing
