// sql::ReadTransaction (store/sqlite.h), on a real SQLite file in WAL mode:
// its reads see one snapshot, whatever another connection commits meanwhile;
// inside a transaction already open it leaves that transaction as it was; a
// statement still reading on the connection goes on where it was; and
// the store's resolver, which reads through one, leaves no transaction open.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>

#include "taskyon/registry/manifest.h"
#include "taskyon/store/sqlite.h"
#include "taskyon/store/store.h"
#include "test_util.h"

namespace taskyon::store::sql {
namespace {

std::int64_t count_rows(Database& db) {
  auto stmt = db.prepare("SELECT count(*) FROM t");
  if (!stmt) return -1;
  auto row = stmt->step();
  return row && *row ? stmt->integer(0) : -1;
}

struct TwoConnections {
  testing::TempDir dir;
  std::string path = (dir / "t.db").string();
  Database a = *Database::open(path);
  Database b = *Database::open(path);
  TwoConnections() {
    EXPECT_TRUE(a.exec("PRAGMA journal_mode = WAL; CREATE TABLE t(x); INSERT INTO t VALUES (1)"));
  }
};

TEST(ReadTransaction, ItsReadsSeeOneSnapshot) {
  TwoConnections c;
  {
    ReadTransaction reads(c.a);
    EXPECT_EQ(count_rows(c.a), 1);
    ASSERT_TRUE(c.b.exec("INSERT INTO t VALUES (2)"));
    EXPECT_EQ(count_rows(c.a), 1) << "a read inside it saw another connection's later commit";
  }
  EXPECT_EQ(count_rows(c.a), 2);
  // It ended: the connection writes again, as before.
  EXPECT_TRUE(c.a.exec("INSERT INTO t VALUES (3)"));
  EXPECT_EQ(count_rows(c.b), 3);
}

TEST(ReadTransaction, InsideAnOpenTransactionItLeavesThatTransactionOpen) {
  TwoConnections c;
  auto tx = Transaction::begin(c.a);
  ASSERT_TRUE(tx);
  ASSERT_TRUE(c.a.exec("INSERT INTO t VALUES (2)"));
  {
    ReadTransaction reads(c.a);
    EXPECT_EQ(count_rows(c.a), 2);
  }
  EXPECT_EQ(count_rows(c.b), 1) << "the outer transaction was committed early";
  EXPECT_TRUE(tx->commit());
  EXPECT_EQ(count_rows(c.b), 2);
}

TEST(ReadTransaction, AStatementStillReadingGoesOn) {
  TwoConnections c;
  ASSERT_TRUE(c.a.exec("INSERT INTO t VALUES (2)"));
  auto rows = c.a.prepare("SELECT x FROM t ORDER BY x");
  ASSERT_TRUE(rows);
  ASSERT_TRUE(*rows->step());
  EXPECT_EQ(rows->integer(0), 1);
  {
    ReadTransaction reads(c.a);
    EXPECT_EQ(count_rows(c.a), 2);
  }
  auto next = rows->step();
  ASSERT_TRUE(next && *next);
  EXPECT_EQ(rows->integer(0), 2) << "the statement was reset and started again";
}

TEST(ReadTransaction, TheResolverLeavesNoTransactionOpen) {
  testing::TempDir dir;
  auto st = Store::open((dir / "taskyon.db").string());
  ASSERT_TRUE(st) << st.error().describe();
  auto m = registry::parse_manifest({{"name", "hash"},
                                     {"description", "sha256"},
                                     {"parameters", {{"type", "object"}}},
                                     {"execution", "trusted-native"},
                                     {"native", "taskyon.sha256"}});
  ASSERT_TRUE(m);
  ASSERT_TRUE(st->install(*m, Activate::if_unbound, Trust{"test", "trusted-native taskyon.sha256"}));
  auto resolve = st->resolver();
  ASSERT_TRUE(resolve("hash"));
  EXPECT_FALSE(resolve("nothing-by-this-name"));
  // BEGIN fails inside a transaction: the resolver's reads ended theirs.
  EXPECT_TRUE(st->database().exec("BEGIN; COMMIT"));
}

// A write transaction whose COMMIT fails leaves no transaction open on its
// connection (a deferred foreign key, checked at COMMIT, keeps SQLite's
// transaction open): the connection's next write begins as usual. Since
// issue 19 a call lends its connection to its capability requests, so a
// request's failed commit must not break the call's own write.
TEST(WriteTransaction, AFailedCommitLeavesNoTransactionOpen) {
  TwoConnections c;
  ASSERT_TRUE(c.a.exec("PRAGMA foreign_keys = ON; CREATE TABLE p(id INTEGER PRIMARY KEY); "
                       "CREATE TABLE ch(p INTEGER REFERENCES p(id) DEFERRABLE INITIALLY DEFERRED)"));
  {
    auto tx = Transaction::begin(c.a);
    ASSERT_TRUE(tx);
    ASSERT_TRUE(c.a.exec("INSERT INTO ch VALUES (7)"));  // no parent 7: refused at COMMIT
    EXPECT_FALSE(tx->commit());
  }
  EXPECT_NE(sqlite3_get_autocommit(c.a.raw()), 0) << "the failed COMMIT left its transaction open";
  auto next = Transaction::begin(c.a);
  ASSERT_TRUE(next) << next.error().describe();
  ASSERT_TRUE(c.a.exec("INSERT INTO t VALUES (3)"));
  EXPECT_TRUE(next->commit());
  EXPECT_EQ(count_rows(c.b), 2);
}

}  // namespace
}  // namespace taskyon::store::sql
