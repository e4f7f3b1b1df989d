// Crash safety (issue 18 item 6): tycli is kill -9'd at random points while it
// writes — a tool install, a call with storage writes, a grant, an
// activation, a conversation run — and after every kill the store must hold:
// PRAGMA integrity_check is "ok", every revision and task row re-hashes
// through the store's own read path (Store::revision, Store::task), and the
// task invariants hold (T3: a completed call has a tool revision; T4: every
// parent exists; a tool result hangs under a function call). Then the next
// tycli works on the store.
//
// TASKYON_CRASH_TRIALS sets the number of trials (default 100; `make soak`
// runs 1000); TASKYON_CRASH_SEED replays a run (the seed is printed).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "taskyon/store/sqlite.h"
#include "taskyon/store/store.h"
#include "test_util.h"

namespace taskyon::testing {
namespace {

using json::Value;

std::vector<std::string> column(store::Store& st, const std::string& query) {
  std::vector<std::string> out;
  auto stmt = st.database().prepare(query);
  EXPECT_TRUE(stmt) << stmt.error().message;
  if (!stmt) return out;
  for (;;) {
    auto row = stmt->step();
    EXPECT_TRUE(row) << row.error().message;
    if (!row || !*row) break;
    out.push_back(stmt->text(0));
  }
  return out;
}

// Every check of the file comment; `trial` names the failure.
void check_store(const std::filesystem::path& db, const std::string& trial) {
  auto st = store::Store::open(db.string());
  ASSERT_TRUE(st) << trial << ": " << st.error().message;
  EXPECT_EQ(column(*st, "PRAGMA integrity_check"), std::vector<std::string>{"ok"}) << trial;
  EXPECT_TRUE(column(*st, "PRAGMA foreign_key_check").empty()) << trial;
  for (const auto& id : column(*st, "SELECT id FROM revisions")) {
    auto r = st->revision(id);
    EXPECT_TRUE(r) << trial << ": revision " << id << ": " << r.error().message;
  }
  for (const auto& id : column(*st, "SELECT id FROM tasks")) {
    auto t = st->task(id);
    EXPECT_TRUE(t) << trial << ": task " << id << ": " << t.error().message;
  }
  EXPECT_TRUE(column(*st, "SELECT id FROM tasks WHERE kind = 'functionCall' AND state = 'Completed' AND "
                          "tool_revision IS NULL")
                  .empty())
      << trial << ": T3";
  EXPECT_TRUE(column(*st, "SELECT id FROM tasks c WHERE parent_id IS NOT NULL AND NOT EXISTS "
                          "(SELECT 1 FROM tasks p WHERE p.id = c.parent_id)")
                  .empty())
      << trial << ": T4 (a parent is missing)";
  EXPECT_TRUE(column(*st, "SELECT r.id FROM tasks r JOIN tasks p ON p.id = r.parent_id WHERE r.kind = 'toolResult' "
                          "AND p.kind <> 'functionCall'")
                  .empty())
      << trial << ": a tool result outside a call";
  EXPECT_TRUE(column(*st, "SELECT b.seq FROM bindings b WHERE NOT EXISTS (SELECT 1 FROM revisions r WHERE r.id = "
                          "b.revision)")
                  .empty())
      << trial << ": a binding to no revision";
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

TEST(CrashSafety, KillNineDuringWritesKeepsTheStoreWhole) {
  const int trials = env_int("TASKYON_CRASH_TRIALS", 100);
  const unsigned seed = static_cast<unsigned>(env_int("TASKYON_CRASH_SEED", static_cast<int>(std::random_device{}() & 0x7fffffff)));
  std::cout << fmt::format("[ crash ] {} trials, TASKYON_CRASH_SEED={}\n", trials, seed);
  std::mt19937 rng(seed);

  TempDir home;
  const auto db = home / "taskyon.db";
  // A tool that writes its storage many times per call, granted; a plain one to activate revisions of.
  auto writer = js_tool("writer", "async (args, context) => { for (let i = 0; i < 40; i++) "
                                  "await context.storage.set('k' + (i % 7), {i, input: args.input}); return 'ok'; }");
  ASSERT_EQ(run_tycli({"tool", "install", home.write("writer.json", writer.dump())}, home.path()).exit_code, 0);
  auto g = run_tycli({"grant", "storage", "writer"}, home.path());
  ASSERT_EQ(g.exit_code, 0) << g.err;

  int killed = 0, finished = 0;
  std::array<long, 5> span_us{};  // wall time of one whole run of each operation
  for (int trial = 0; trial < trials; ++trial) {
    const int op = static_cast<int>(rng() % 5);
    const std::string tag = fmt::format("t{}-{}", trial, rng() % 100000);
    std::vector<std::string> args;
    switch (op) {
      case 0: {  // install several new revisions (each a new name)
        std::vector<std::string> files;
        for (int k = 0; k < 4; ++k)
          files.push_back(home.write(fmt::format("new{}.json", k),
                                     js_tool(fmt::format("n{}x{}", trial, k), "() => '" + tag + "'").dump()));
        args = {"tool", "install"};
        args.insert(args.end(), files.begin(), files.end());
        break;
      }
      case 1:  // a call whose tool writes storage, twice in one retained sandbox
        args = {"call", "writer", "--args", Value{{"input", tag}}.dump(), "--args", Value{{"input", tag + "b"}}.dump()};
        break;
      case 2:  // grants on the writer's revision
        args = {"grant", "fetch", "writer", fmt::format("https://{}.example", tag), "--access",
                rng() % 2 ? "read" : "write"};
        break;
      case 3:  // activation: a new revision of one name, activated
        args = {"tool", "install", "--activate",
                home.write("act.json", js_tool("flip", "() => '" + tag + "'").dump())};
        break;
      default: {  // a conversation: messages and calls appended to the tree
        const Value conversation = Value::array({
            {{"role", "user"}, {"content", {{"message", "crash " + tag}}}},
            {{"role", "assistant"},
             {"content", {{"functionCall", {{"name", "writer"}, {"arguments", {{"input", tag}}}}}}}},
            {{"role", "assistant"}, {"content", {{"message", "wrote " + tag}}}},
        });
        args = {"run", home.write("conv.json", conversation.dump())};
      }
    }
    // Kill somewhere inside the operation's own run time: the first run of each
    // kind is timed whole (not killed), so the kills land mid-run on a fast or a
    // loaded machine alike.
    if (span_us[op] == 0) {
      const auto start = std::chrono::steady_clock::now();
      ASSERT_EQ(wait_exit(spawn_tycli(args, home.path())), 0) << "calibration run of op " << op;
      span_us[op] = std::max<long>(
          1000, std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count());
      check_store(db, fmt::format("calibration of op {}", op));
    }
    const int pid = spawn_tycli(args, home.path());
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % span_us[op]));
    const bool was_running = ::kill(pid, SIGKILL) == 0;
    const int exit = wait_exit(pid);
    (exit == 128 + SIGKILL && was_running ? killed : finished) += 1;
    check_store(db, fmt::format("trial {} (op {}, seed {})", trial, op, seed));
    if (::testing::Test::HasFailure()) break;
  }
  std::cout << fmt::format("[ crash ] {} killed mid-run, {} finished first\n", killed, finished);
  EXPECT_GT(killed, trials / 4) << "most kills should land while tycli runs";

  // The next tycli works on the store, and sweeps the work directories the kills left.
  auto list = run_tycli({"tool", "list"}, home.path());
  EXPECT_EQ(list.exit_code, 0) << list.err;
  auto call = run_tycli({"call", "writer", "--args", R"({"input":"after"})"}, home.path());
  EXPECT_EQ(call.exit_code, 0) << call.err;
  auto tree = run_tycli({"task", "tree"}, home.path());
  EXPECT_EQ(tree.exit_code, 0) << tree.err;
  std::size_t left = 0;
  for (const auto& e : std::filesystem::directory_iterator(home / "tmp"))
    left += e.path().filename().string().starts_with("taskyon-sandbox-") ? 1 : 0;
  EXPECT_EQ(left, 0u) << "work directories left after the next tycli";
}

}  // namespace
}  // namespace taskyon::testing
