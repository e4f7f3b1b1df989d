// When and where the store checkpoints its write-ahead log (store.h,
// kCheckpointPages; checkpointer.h), on a real SQLite file: not at SQLite's
// default of 1000 pages, on any of a Store's connections; at kCheckpointPages,
// by a thread of the Store, the committing call writing only its own frames;
// and under commits that never pause, the log still restarts from its
// beginning, so its file stays bounded.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "taskyon/store/store.h"
#include "taskyon/tasks/task.h"
#include "test_util.h"

namespace taskyon::store {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

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

// Bytes the calling thread has passed to write(2) and pwrite(2) so far
// (/proc/thread-self/io, "wchar"): what a commit on this thread wrote.
std::uint64_t written_by_this_thread() {
  std::ifstream io("/proc/thread-self/io");
  std::string key;
  std::uint64_t value = 0;
  while (io >> key >> value)
    if (key == "wchar:") return value;
  return 0;
}

// Salt-1 of the log's header (https://sqlite.org/fileformat.html, 4.1): it
// changes each time the log restarts from its beginning.
std::uint32_t wal_salt(const fs::path& wal) {
  std::ifstream f(wal, std::ios::binary);
  unsigned char h[20] = {};
  f.read(reinterpret_cast<char*>(h), sizeof h);
  return static_cast<std::uint32_t>(h[16]) << 24 | h[17] << 16 | h[18] << 8 | h[19];
}

// Commits messages until `done` says so; the most any one commit wrote on
// this thread, in bytes.
template <typename Done>
std::uint64_t commit_until(Store& st, int& written, Done done) {
  std::uint64_t most = 0;
  while (!done() && written < 60000) {
    const auto before = written_by_this_thread();
    if (!put_message(st, written++)) {
      ADD_FAILURE() << "commit " << written - 1 << " failed";
      break;
    }
    most = std::max(most, written_by_this_thread() - before);
  }
  return most;
}

// A new store, and where its database file and its log are.
class StoreCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists("/proc/thread-self/io")) << "needs per-thread I/O accounting";
    auto opened = Store::open(db.string());
    ASSERT_TRUE(opened) << opened.error().describe();
    st.emplace(std::move(*opened));
  }
  testing::TempDir dir;
  const fs::path db = dir / "taskyon.db";
  const fs::path wal = db.string() + "-wal";
  std::optional<Store> st;
};

TEST_F(StoreCheckpoint, TheCommitThatReachesKCheckpointPagesLeavesTheCopyToTheStoresThread) {
  const auto file_before = size_of(db);
  int written = 0;
  // Past SQLite's default, from a second thread (a connection Store::database
  // opens later): nothing is copied into the database file yet.
  std::thread([&] { commit_until(*st, written, [&] { return size_of(wal) >= 2000 * kFrameBytes; }); }).join();
  EXPECT_EQ(size_of(db), file_before);
  // Up to and past kCheckpointPages on open()'s own connection: no commit
  // writes more than its own frames (a copy of the log is megabytes).
  const auto most = commit_until(*st, written, [&] {
    return size_of(wal) >= static_cast<std::uintmax_t>(kCheckpointPages + 16) * kFrameBytes;
  });
  EXPECT_LT(most, 64 * kFrameBytes) << "a commit wrote " << most << " bytes itself";
  // The store's thread copies the log meanwhile.
  for (int i = 0; i < 600 && size_of(db) < file_before + 1024 * 1024; ++i) std::this_thread::sleep_for(50ms);
  EXPECT_GT(size_of(db), file_before + 1024 * 1024);
  // Every commit is there, for a connection opened after.
  auto other = Store::open(db.string());
  ASSERT_TRUE(other);
  auto stmt = other->database().prepare("SELECT count(*) FROM tasks");
  ASSERT_TRUE(stmt && *stmt->step());
  EXPECT_EQ(stmt->integer(0), written);
}

TEST_F(StoreCheckpoint, UnderCommitsThatNeverPauseTheLogKeepsRestarting) {
  int written = 0;
  commit_until(*st, written, [&] { return size_of(wal) > 0; });
  // Commits of at least three frames each (the message's two overflow pages
  // and a leaf) with no pause between them, until the log has restarted from
  // its beginning twice (or 20 000 commits, 15 times kWalLimitPages frames).
  // The store's thread is always behind the log's end, and a log restarts
  // only at a write that finds all of it copied: without a commit finishing
  // the thread's work (checkpointer.h), it would grow without end.
  std::uint32_t salt = wal_salt(wal);
  int restarts = 0;
  for (const int end = written + 20000; written < end && restarts < 2; ++written) {
    ASSERT_TRUE(put_message(*st, written));
    if (const auto now = wal_salt(wal); now != salt) {
      salt = now;
      ++restarts;
    }
  }
  EXPECT_EQ(restarts, 2);
  // Past kWalLimitPages only by what commits while a round of the thread holds
  // SQLite's checkpoint lock (a commit's own checkpoint is then refused).
  EXPECT_LT(size_of(wal), static_cast<std::uintmax_t>(2 * kWalLimitPages) * kFrameBytes);
  auto stmt = st->database().prepare("SELECT count(*) FROM tasks");
  ASSERT_TRUE(stmt && *stmt->step());
  EXPECT_EQ(stmt->integer(0), written);
}

}  // namespace
}  // namespace taskyon::store
