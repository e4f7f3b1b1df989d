// The store's VFS shim (store/wal_vfs.h): a commit's WAL frames reach the OS
// in one write, and every commit is in the file when COMMIT returns — for a
// connection of the same process, for another process, and when the writing
// process dies at once — whatever the transaction's size, transactions larger
// than their page cache and rollbacks included. On real SQLite files.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <optional>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
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
  if (!st) return -1;
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
  if (!st) return st.error().describe();
  auto row = st->step();
  if (!row) return row.error().describe();
  return *row ? st->text(0) : "no answer";
}

// Runs `body` in a forked child; the child's exit code, or -1 if it did not
// exit. The body ends the child itself with ::_exit(code) while its store is
// still open: nothing closed, nothing flushed on the way out (a body that
// returns exits with 99).
int exit_code_of_child(const std::function<void()>& body) {
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    body();
    ::_exit(99);
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
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
    ASSERT_EQ(exit_code_of_child([&] {
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
              }),
              0);
    Database db = open_wal(path);
    EXPECT_EQ(checked_rows(db, bytes), 12) << bytes << "-byte rows";
    EXPECT_EQ(integrity(db), "ok");
  }
}

std::int64_t count(Database& db, const std::string& sql) {
  auto st = db.prepare(sql);
  EXPECT_TRUE(st) << st.error().describe();
  if (!st) return -1;
  auto row = st->step();
  EXPECT_TRUE(row && *row);
  return row && *row ? st->integer(0) : -1;
}

// The shim's precondition (wal_vfs.h): no connection writes a frame before
// its commit, read-only ones included.
TEST(StoreWalWrites, NoConnectionSpillsPagesBeforeItsCommit) {
  testing::TempDir dir;
  const std::string path = (dir / "w.db").string();
  Database db = open_wal(path);
  EXPECT_EQ(count(db, "PRAGMA cache_spill"), 0);
  auto reader = Database::open(path, Access::read_only);
  ASSERT_TRUE(reader) << reader.error().describe();
  EXPECT_EQ(count(*reader, "PRAGMA cache_spill"), 0);
}

// Nothing else in the sources turns spilling back on or writes dirty pages
// before a commit (sqlite3_db_cacheflush writes them as frames).
TEST(StoreWalWrites, OnlyTheConnectionOpenerSaysHowPagesSpill) {
  const std::filesystem::path src = std::filesystem::path(TASKYON_SOURCE_DIR) / "src";
  for (const auto& entry : std::filesystem::recursive_directory_iterator(src)) {
    const auto name = entry.path().filename();
    if (!entry.is_regular_file() || name == "sqlite.cc" || name == "wal_vfs.h") continue;  // the opener, the rule
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (const char* word : {"cache_spill", "sqlite3_db_cacheflush"})
      EXPECT_EQ(text.find(word), std::string::npos) << entry.path() << " names " << word;
  }
}

// A transaction ten times its page cache that changes its pages again, with
// spilling turned on (the store never does): SQLite rewrites spilled frames in
// place and their checksums at the commit. In a child that ends at once after
// COMMIT.
TEST(StoreWalWrites, ATransactionLargerThanItsCacheSurvivesItsProcessEndingRightAfterIt) {
  testing::TempDir dir;
  const std::string path = (dir / "w.db").string();
  {
    Database db = open_wal(path);
    ASSERT_TRUE(db.exec("CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)"));
  }
  ASSERT_EQ(exit_code_of_child([&] {
              auto db = Database::open(path);
              if (!db || !db->exec("PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 0; PRAGMA cache_size = 10; "
                                   "PRAGMA cache_spill = ON"))
                ::_exit(10);
              const bool done =
                  db->exec("BEGIN; WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 300) "
                           "INSERT INTO t SELECT i, randomblob(1500) FROM c; UPDATE t SET v = randomblob(1500); "
                           "UPDATE t SET v = randomblob(1400) WHERE k % 3 = 0; COMMIT")
                      .has_value();
              ::_exit(done ? 0 : 11);
            }),
            0);
  Database db = open_wal(path);
  EXPECT_EQ(count(db, "SELECT count(*) FROM t"), 300);
  EXPECT_EQ(count(db, "SELECT count(*) FROM t WHERE length(v) = IIF(k % 3 = 0, 1400, 1500)"), 300);
  EXPECT_EQ(integrity(db), "ok");
}

// A transaction larger than its cache rolled back on one connection, then a
// commit on another, then the first closes: nothing of the first may land
// over the second's frames. Also with spilling turned on for the first (the
// store never does): SQLite then writes its frames before the rollback, and
// the shim must not keep them past the write lock.
TEST(StoreWalWrites, ARolledBackTransactionLeavesNothingToWriteOverAnotherConnectionsCommit) {
  testing::TempDir dir;
  const std::string path = (dir / "w.db").string();
  Database b = open_wal(path);
  ASSERT_TRUE(b.exec("CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB); CREATE TABLE u(k INTEGER PRIMARY KEY, v TEXT)"));
  for (const char* spill : {"OFF", "ON"}) {
    for (const int rows : {15, 40}) {
      SCOPED_TRACE(fmt::format("cache_spill {}, {} rows", spill, rows));
      ASSERT_TRUE(b.exec("DELETE FROM u; PRAGMA wal_checkpoint(TRUNCATE)"));
      {
        Database a = open_wal(path);
        ASSERT_TRUE(a.exec(fmt::format("PRAGMA cache_size = 10; PRAGMA cache_spill = {}", spill)));
        ASSERT_TRUE(a.exec(fmt::format("BEGIN; WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c "
                                       "WHERE i < {}) INSERT INTO t SELECT i, randomblob(3000) FROM c",
                                       rows)));
        ASSERT_TRUE(a.exec("ROLLBACK"));
        ASSERT_TRUE(b.exec("BEGIN; WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 400) "
                           "INSERT INTO u SELECT i, printf('row %d', i) FROM c; COMMIT"));
      }  // a closes
      Database c = open_wal(path);
      EXPECT_EQ(count(c, "SELECT count(*) FROM u WHERE v = printf('row %d', k)"), 400);
      EXPECT_EQ(count(c, "SELECT count(*) FROM t"), 0);
      EXPECT_EQ(integrity(c), "ok");
    }
  }
}

// A WAL as a killed process leaves it after a checkpoint restarted the log:
// the current generation (one frame), then stale frames of an older one.
void leave_wal_with_stale_tail(const std::string& path) {
  Database db = open_wal(path);
  ASSERT_TRUE(db.exec("CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'old'); "
                      "CREATE TABLE u(k INTEGER PRIMARY KEY, v TEXT); "
                      "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 200) "
                      "INSERT INTO u SELECT i, printf('%.*c', 300, 'a') FROM c; PRAGMA wal_checkpoint(TRUNCATE)"));
  ASSERT_TRUE(db.exec("UPDATE u SET v = printf('%.*c', 300, 'b'); PRAGMA wal_checkpoint(PASSIVE)"));
  ASSERT_TRUE(db.exec("UPDATE u SET v = printf('%.*c', 300, 'c') WHERE k = 1"));  // restarts the log
  sqlite3_db_config(db.raw(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);  // the WAL stays, as after a kill
}

// After recovery the last frame SQLite read is the first stale one, where the
// next commit goes. A one-page commit there, in a child that ends as soon as
// COMMIT returns: in locking_mode=EXCLUSIVE no lock is given back on the way,
// so only the write at the commit frame puts its page in the file.
TEST(StoreWalWrites, TheFirstCommitAfterRecoveryIsInTheFileWhenCommitReturns) {
  testing::TempDir dir;
  const std::string path = (dir / "w.db").string();
  leave_wal_with_stale_tail(path);
  ASSERT_EQ(exit_code_of_child([&] {
              auto db = Database::open(path);
              if (!db ||
                  !db->exec("PRAGMA locking_mode = EXCLUSIVE; PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 0"))
                ::_exit(10);
              ::_exit(db->exec("UPDATE t SET v = 'new' WHERE k = 1") ? 0 : 11);
            }),
            0);
  Database db = open_wal(path);
  auto st = db.prepare("SELECT v FROM t WHERE k = 1");
  ASSERT_TRUE(st);
  auto row = st->step();
  ASSERT_TRUE(row && *row);
  EXPECT_EQ(st->text(0), "new");
  EXPECT_EQ(integrity(db), "ok");
}

// locking_mode=EXCLUSIVE from the connection's first read: SQLite keeps the
// WAL index in heap memory and makes no lock or barrier call at all, so only
// the write at the commit frame puts a commit in the file before COMMIT
// returns. In a child that ends as soon as it does.
TEST(StoreWalWrites, AnExclusiveConnectionsCommitIsInTheFileWhenCommitReturns) {
  testing::TempDir dir;
  const std::string path = (dir / "w.db").string();
  {
    Database db = open_wal(path);
    ASSERT_TRUE(db.exec("CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)"));
  }
  ASSERT_EQ(exit_code_of_child([&] {
              auto db = Database::open(path);
              if (!db || !db->exec("PRAGMA locking_mode = EXCLUSIVE; PRAGMA synchronous = NORMAL; "
                                   "PRAGMA wal_autocheckpoint = 0"))
                ::_exit(10);
              for (int k = 0; k < 5; ++k) {
                auto st = db->prepare("INSERT INTO t(k, v) VALUES (?1, ?2)");
                if (!st) ::_exit(11);
                st->bind(1, std::int64_t{k}).bind(2, row_text(k, 3000));
                if (!st->run()) ::_exit(12);
              }
              ::_exit(0);
            }),
            0);
  Database db = open_wal(path);
  EXPECT_EQ(checked_rows(db, 3000), 5);
  EXPECT_EQ(integrity(db), "ok");
}

// locking_mode=EXCLUSIVE with spilling on: a rolled-back transaction's frames,
// then the connection back in NORMAL mode (which takes a read lock and never
// gives slot 0 back through a lock call), another connection's commit, and
// the first connection's close.
TEST(StoreWalWrites, AnExclusiveModeRollbackLeavesNothingToWriteOverAnotherConnectionsCommit) {
  testing::TempDir dir;
  const std::string path = (dir / "w.db").string();
  {
    Database setup = open_wal(path);
    ASSERT_TRUE(setup.exec("CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB); "
                           "CREATE TABLE u(k INTEGER PRIMARY KEY, v TEXT); PRAGMA wal_checkpoint(TRUNCATE)"));
  }
  std::optional<Database> b;  // opened once a is back in NORMAL mode: its lock would keep a out
  {
    Database a = open_wal(path);
    ASSERT_TRUE(a.exec("PRAGMA cache_size = 10; PRAGMA cache_spill = ON"));
    EXPECT_EQ(count(a, "SELECT count(*) FROM t"), 0);  // the log open, with shared memory
    ASSERT_TRUE(a.exec("PRAGMA locking_mode = EXCLUSIVE"));
    ASSERT_TRUE(a.exec("BEGIN; WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 15) "
                       "INSERT INTO t SELECT i, randomblob(3000) FROM c"));
    ASSERT_TRUE(a.exec("ROLLBACK"));
    ASSERT_TRUE(a.exec("PRAGMA locking_mode = NORMAL; BEGIN IMMEDIATE; COMMIT"));
    b.emplace(open_wal(path));
    ASSERT_TRUE(b->exec("BEGIN; WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 400) "
                        "INSERT INTO u SELECT i, printf('row %d', i) FROM c; COMMIT"));
  }  // a closes
  Database c = open_wal(path);
  EXPECT_EQ(count(c, "SELECT count(*) FROM u WHERE v = printf('row %d', k)"), 400);
  EXPECT_EQ(integrity(c), "ok");
}

// A transaction larger than its cache (spilling on) rewrites its frames'
// checksums at its commit, and the last thing it writes is the commit frame's
// header again, with no page after it. The next commit, of one page, must
// still be in the file when COMMIT returns: in locking_mode=EXCLUSIVE from the
// first read nothing but the write of its page puts it there (found by a third
// review: the rewritten header left the next commit's page buffered).
TEST(StoreWalWrites, AOnePageCommitAfterAChecksumRewriteIsInTheFileWhenCommitReturns) {
  testing::TempDir dir;
  const std::string path = (dir / "w.db").string();
  {
    Database db = open_wal(path);
    ASSERT_TRUE(db.exec("CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB); CREATE TABLE s(k INTEGER PRIMARY KEY, v TEXT); "
                        "INSERT INTO s VALUES (1, 'old')"));
  }
  ASSERT_EQ(exit_code_of_child([&] {
              auto db = Database::open(path);
              if (!db || !db->exec("PRAGMA locking_mode = EXCLUSIVE; PRAGMA synchronous = NORMAL; "
                                   "PRAGMA wal_autocheckpoint = 0; PRAGMA cache_size = 10; PRAGMA cache_spill = ON"))
                ::_exit(10);
              if (!db->exec("BEGIN; WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 300) "
                            "INSERT INTO t SELECT i, randomblob(1500) FROM c; UPDATE t SET v = randomblob(1500); COMMIT"))
                ::_exit(11);
              ::_exit(db->exec("UPDATE s SET v = 'new' WHERE k = 1") ? 0 : 12);
            }),
            0);
  Database db = open_wal(path);
  EXPECT_EQ(count(db, "SELECT count(*) FROM t"), 300);
  EXPECT_EQ(count(db, "SELECT count(*) FROM s WHERE v = 'new'"), 1) << "the acknowledged one-page commit was lost";
  EXPECT_EQ(integrity(db), "ok");
}

// At a lock change of the WAL index and at a barrier (the index is published
// around one) SQLite takes no error: a write of the buffer that fails there
// fails the WAL file's next call instead. Driven through the VFS's own
// methods on real files (a frame buffered, the default VFS's pwrite made to
// fail for the lock call or the barrier, then a sync of the log), since no
// path of SQLite's leaves a commit buffered at either.
ssize_t failing_pwrite(int, const void*, std::size_t, off_t) {  // pwrite(2)'s shape
  errno = EIO;
  return -1;
}

struct VfsFile {
  explicit VfsFile(sqlite3_vfs* vfs)
      : memory(std::make_unique<std::max_align_t[]>(static_cast<std::size_t>(vfs->szOsFile) / sizeof(std::max_align_t) + 1)) {}
  sqlite3_file* get() { return reinterpret_cast<sqlite3_file*>(memory.get()); }
  std::unique_ptr<std::max_align_t[]> memory;
};

TEST(StoreWalWrites, AWriteThatFailsWhereSqliteTakesNoErrorFailsTheLogsNextCall) {
  sqlite3_vfs* const shim = sqlite3_vfs_find(wal_gathering_vfs());
  sqlite3_vfs* const real = sqlite3_vfs_find(nullptr);
  ASSERT_NE(shim, nullptr);
  ASSERT_NE(shim, real);
  for (const bool at_lock : {false, true}) {
    SCOPED_TRACE(at_lock ? "a lock change of the WAL index" : "a barrier");
    testing::TempDir dir;
    const std::string path = (dir / "w.db").string();
    const sqlite3_filename name =
        sqlite3_create_filename(path.c_str(), (path + "-journal").c_str(), (path + "-wal").c_str(), 0, nullptr);
    ASSERT_NE(name, nullptr);
    VfsFile db(shim), wal(shim);
    int out = 0;
    ASSERT_EQ(shim->xOpen(shim, name, db.get(), SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, &out),
              SQLITE_OK);
    ASSERT_EQ(shim->xOpen(shim, sqlite3_filename_wal(name), wal.get(),
                          SQLITE_OPEN_WAL | SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, &out),
              SQLITE_OK);
    void volatile* index = nullptr;
    ASSERT_EQ(db.get()->pMethods->xShmMap(db.get(), 0, 32768, 1, &index), SQLITE_OK);
    // A frame that is not a commit's: its header ("database size after commit" 0), then its page.
    const std::string header(24, '\0'), page(4096, 'p');
    const std::uint64_t before = wal_file_writes();
    ASSERT_EQ(wal.get()->pMethods->xWrite(wal.get(), header.data(), 24, 32), SQLITE_OK);
    ASSERT_EQ(wal.get()->pMethods->xWrite(wal.get(), page.data(), 4096, 56), SQLITE_OK);
    EXPECT_EQ(wal_file_writes(), before) << "a frame that is not a commit's was written at once";
    const auto failing = reinterpret_cast<sqlite3_syscall_ptr>(&failing_pwrite);
    const bool pwrite = real->xSetSystemCall(real, "pwrite", failing) == SQLITE_OK;
    const bool pwrite64 = real->xSetSystemCall(real, "pwrite64", failing) == SQLITE_OK;
    if (at_lock) {  // the buffer's write fails here, and the lock is taken and given back
      EXPECT_EQ(db.get()->pMethods->xShmLock(db.get(), 3, 1, SQLITE_SHM_LOCK | SQLITE_SHM_SHARED), SQLITE_OK);
      EXPECT_EQ(db.get()->pMethods->xShmLock(db.get(), 3, 1, SQLITE_SHM_UNLOCK | SQLITE_SHM_SHARED), SQLITE_OK);
    } else {
      db.get()->pMethods->xShmBarrier(db.get());
    }
    if (pwrite) real->xSetSystemCall(real, "pwrite", nullptr);
    if (pwrite64) real->xSetSystemCall(real, "pwrite64", nullptr);
    EXPECT_TRUE(pwrite || pwrite64);
    EXPECT_EQ(wal_file_writes(), before + 1);
    EXPECT_NE(wal.get()->pMethods->xSync(wal.get(), SQLITE_SYNC_NORMAL), SQLITE_OK)
        << "the failed write was never reported";
    EXPECT_EQ(wal.get()->pMethods->xSync(wal.get(), SQLITE_SYNC_NORMAL), SQLITE_OK) << "reported once";
    wal.get()->pMethods->xClose(wal.get());
    db.get()->pMethods->xShmUnmap(db.get(), 1);
    db.get()->pMethods->xClose(db.get());
    sqlite3_free_filename(name);
  }
}

// One commit larger than the buffer goes in pieces; another connection reads
// it whole, before and after a checkpoint.
TEST(StoreWalWrites, ACommitLargerThanTheBufferIsWrittenWhole) {
  testing::TempDir dir;
  const std::string path = (dir / "w.db").string();
  Database db = open_wal(path);
  ASSERT_TRUE(db.exec("CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)"));
  const std::size_t rows = 2 * kWalBufferMax / 3000 + 20;
  const std::uint64_t before = wal_file_writes();
  {
    auto tx = Transaction::begin(db);
    ASSERT_TRUE(tx);
    insert(db, 0, static_cast<int>(rows), 3000);
    ASSERT_TRUE(tx->commit());
  }
  EXPECT_GE(wal_file_writes() - before, 3u);
  Database other = open_wal(path);
  EXPECT_EQ(checked_rows(other, 3000), static_cast<std::int64_t>(rows));
  EXPECT_EQ(integrity(other), "ok");
  ASSERT_TRUE(db.exec("PRAGMA wal_checkpoint(TRUNCATE)"));
  EXPECT_EQ(checked_rows(other, 3000), static_cast<std::int64_t>(rows));
  EXPECT_EQ(integrity(other), "ok");
}

}  // namespace wal_vfs_test
}  // namespace taskyon::store::sql
