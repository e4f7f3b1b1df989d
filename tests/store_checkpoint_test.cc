// When the store checkpoints its write-ahead log (store.h, kCheckpointPages),
// on a real SQLite file: not at SQLite's default of 1000 pages, on any of a
// Store's connections; at kCheckpointPages, by the commit that reaches it;
// and the log then restarts from its beginning, so its file stays bounded.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "taskyon/store/store.h"
#include "taskyon/tasks/task.h"
#include "test_util.h"

namespace taskyon::store {
namespace {

namespace fs = std::filesystem;

constexpr std::uintmax_t kFrameBytes = 4096 + 24;  // a page and its frame header in the log

// One user message of ~6 KiB: a few pages of the log per commit.
bool put_message(Store& st, int i) {
  tasks::Task t;
  t.role = tasks::Role::user;
  t.content = {{"message", fmt::format("{:06} {}", i, std::string(6000, 'x'))}};
  t.id = *tasks::compute_id(t);
  return st.put_tasks({t}).has_value();
}

std::uintmax_t size_of(const fs::path& file) {
  std::error_code ec;
  const auto n = fs::file_size(file, ec);
  return ec ? 0 : n;
}

TEST(StoreCheckpoint, ACommitCheckpointsAtKCheckpointPagesNotBefore) {
  testing::TempDir dir;
  const auto db = dir / "taskyon.db";
  const fs::path wal = db.string() + "-wal";
  auto st = Store::open(db.string());
  ASSERT_TRUE(st) << st.error().describe();
  const auto file_before = size_of(db);
  int written = 0;
  // Past SQLite's default, from a second thread (a connection Store::database
  // opens later): nothing is copied into the database file yet.
  std::thread([&] {
    while (size_of(wal) < 2000 * kFrameBytes && written < 20000) ASSERT_TRUE(put_message(*st, written++));
  }).join();
  EXPECT_EQ(size_of(db), file_before);
  // The commit that reaches kCheckpointPages copies the log (this thread's connection, open()'s own).
  while (size_of(db) == file_before && written < 20000) ASSERT_TRUE(put_message(*st, written++));
  const auto reached = size_of(wal);
  EXPECT_GE(reached, static_cast<std::uintmax_t>(kCheckpointPages) * kFrameBytes);
  EXPECT_LT(reached, static_cast<std::uintmax_t>(kCheckpointPages + 16) * kFrameBytes);
  EXPECT_GT(size_of(db), file_before + 1024 * 1024);
  // The log restarts from its beginning: as much again leaves its file as it was.
  for (int i = 0, n = written; i < n; ++i) ASSERT_TRUE(put_message(*st, written++));
  EXPECT_LE(size_of(wal), reached);
  // Every commit is there, for a connection opened after.
  auto other = Store::open(db.string());
  ASSERT_TRUE(other);
  auto stmt = other->database().prepare("SELECT count(*) FROM tasks");
  ASSERT_TRUE(stmt && *stmt->step());
  EXPECT_EQ(stmt->integer(0), written);
}

}  // namespace
}  // namespace taskyon::store
