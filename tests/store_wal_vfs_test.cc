// The store's VFS shim (store/wal_vfs.h): a commit's WAL frames reach the OS
// in one write, and every commit is in the file when COMMIT returns — for a
// connection of the same process, for another process, and when the writing
// process dies at once — whatever the transaction's size, spilled pages and
// rollbacks included. On real SQLite files.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include <fmt/format.h>

#include "taskyon/store/sqlite.h"
#include "taskyon/store/wal_vfs.h"
#include "test_util.h"

namespace taskyon::store::sql {
namespace wal_vfs_test {

Database open_wal(const std::string& path) {
  auto db = Database::open(path);
  EXPECT_TRUE(db) << db.error().describe();
  EXPECT_TRUE(db->exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 0"));
  return std::move(*db);
}

// Rows of `bytes` characters each: "<key>:" then the key's digit repeated.
std::string row_text(int key, std::size_t bytes) {
  std::string s = fmt::format("{}:", key);
  s.resize(bytes, static_cast<char>('0' + key % 10));
  return s;
}

void insert(Database& db, int from, int count, std::size_t bytes) {
  for (int k = from; k < from + count; ++k) {
    auto st = db.prepare("INSERT INTO t(k, v) VALUES (?1, ?2)");
    ASSERT_TRUE(st) << st.error().describe();
    st->bind(1, std::int64_t{k}).bind(2, row_text(k, bytes));
    auto ran = st->run();
    ASSERT_TRUE(ran) << ran.error().describe();
  }
}

// The number of rows, after checking every row's text.
std::int64_t checked_rows(Database& db, std::size_t bytes) {
  auto st = db.prepare("SELECT k, v FROM t ORDER BY k");
  EXPECT_TRUE(st) << st.error().describe();
  std::int64_t n = 0;
  for (;;) {
    auto row = st->step();
    EXPECT_TRUE(row) << row.error().describe();
    if (!row || !*row) break;
    EXPECT_EQ(st->text(1), row_text(static_cast<int>(st->integer(0)), bytes)) << "row " << st->integer(0);
    ++n;
  }
  return n;
}

std::string integrity(Database& db) {
  auto st = db.prepare("PRAGMA integrity_check");
  EXPECT_TRUE(st);
  auto row = st->step();
  EXPECT_TRUE(row && *row);
  return st->text(0);
}

TEST(StoreWalWrites, ACommitOfManyPagesReachesTheLogInOneWrite) {
  testing::TempDir dir;
  Database db = open_wal((dir / "w.db").string());
  ASSERT_TRUE(db.exec("CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)"));
  auto tx = Transaction::begin(db);
  ASSERT_TRUE(tx);
  insert(db, 0, 15, 3000);  // 15 pages and more (about 64 KiB): 30 writes and more, unshimmed
  const std::uint64_t before = wal_file_writes();
  ASSERT_TRUE(tx->commit());
  EXPECT_EQ(wal_file_writes() - before, 1u);
  EXPECT_EQ(checked_rows(db, 3000), 15);
}

TEST(StoreWalWrites, EveryCommitIsSeenAtOnceByAnotherConnection) {
  testing::TempDir dir;
  const std::string path = (dir / "w.db").string();
  Database writer = open_wal(path);
  ASSERT_TRUE(writer.exec("CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)"));
  Database reader = open_wal(path);
  for (int round = 0; round < 60; ++round) {
    const std::size_t bytes = round % 3 == 0 ? 5000 : 40;  // overflow pages, or part of one
    ASSERT_TRUE(writer.exec("DELETE FROM t"));
    insert(writer, 0, round % 7 + 1, bytes);
    ASSERT_EQ(checked_rows(reader, bytes), round % 7 + 1) << "round " << round;
  }
}

// The child commits and ends at once (_exit: no close, nothing flushed on the
// way out); the parent must find every row of it.
TEST(StoreWalWrites, ACommitSurvivesItsProcessEndingRightAfterIt) {
  testing::TempDir dir;
  const std::string path = (dir / "w.db").string();
  {
    Database db = open_wal(path);
    ASSERT_TRUE(db.exec("CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)"));
  }
  for (const std::size_t bytes : {40u, 3000u, 9000u}) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto db = Database::open(path);
      if (!db || !db->exec("DELETE FROM t")) ::_exit(10);
      auto tx = Transaction::begin(*db);
      if (!tx) ::_exit(11);
      for (int k = 0; k < 12; ++k) {
        auto st = db->prepare("INSERT INTO t(k, v) VALUES (?1, ?2)");
        if (!st) ::_exit(12);
        st->bind(1, std::int64_t{k}).bind(2, row_text(k, bytes));
        if (!st->run()) ::_exit(13);
      }
      ::_exit(tx->commit() ? 0 : 14);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
    Database db = open_wal(path);
    EXPECT_EQ(checked_rows(db, bytes), 12) << bytes << "-byte rows";
    EXPECT_EQ(integrity(db), "ok");
  }
}

// A page cache of 8 pages makes SQLite write frames before the commit (not
// commit frames: they stay in the buffer); one transaction is rolled back
// after spilling, then one larger than the buffer commits.
TEST(StoreWalWrites, SpilledRolledBackAndOversizedTransactionsKeepTheLogWhole) {
  testing::TempDir dir;
  const std::string path = (dir / "w.db").string();
  Database db = open_wal(path);
  ASSERT_TRUE(db.exec("PRAGMA cache_size = 8; CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)"));
  insert(db, 0, 5, 3000);
  {
    auto tx = Transaction::begin(db);
    ASSERT_TRUE(tx);
    insert(db, 100, 60, 3000);  // spills
    // Ends without commit: rolled back.
  }
  EXPECT_EQ(checked_rows(db, 3000), 5);
  const std::size_t rows = 2 * kWalBufferMax / 3000 + 20;
  {
    auto tx = Transaction::begin(db);
    ASSERT_TRUE(tx);
    insert(db, 5, static_cast<int>(rows), 3000);
    ASSERT_TRUE(tx->commit());
  }
  Database other = open_wal(path);
  EXPECT_EQ(checked_rows(other, 3000), static_cast<std::int64_t>(5 + rows));
  EXPECT_EQ(integrity(other), "ok");
  ASSERT_TRUE(db.exec("PRAGMA wal_checkpoint(TRUNCATE)"));
  EXPECT_EQ(checked_rows(other, 3000), static_cast<std::int64_t>(5 + rows));
  EXPECT_EQ(integrity(other), "ok");
}

}  // namespace wal_vfs_test
}  // namespace taskyon::store::sql
