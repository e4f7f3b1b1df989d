// How the store configures SQLite for the process (store/sqlite.cc): no
// allocation statistics, which SQLite otherwise keeps under a process-wide
// mutex taken at every allocation of every connection (issue 19). Nothing in
// this project opens SQLite but sql::Database, so the setting is in place
// before SQLite initializes, in tycli and in this test binary alike.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "taskyon/store/sqlite.h"
#include "test_util.h"

namespace taskyon::store::sql {
namespace {

TEST(SqliteConfig, KeepsNoAllocationStatistics) {
  testing::TempDir dir;
  auto db = Database::open((dir / "t.db").string());
  ASSERT_TRUE(db) << db.error().describe();
  ASSERT_TRUE(db->exec("CREATE TABLE t(x TEXT); INSERT INTO t VALUES (hex(randomblob(10000)))"));
  // With statistics kept, this is the bytes SQLite holds now (a page cache,
  // the schema, the statement above): never 0 with a connection open.
  EXPECT_EQ(sqlite3_memory_used(), 0);
  EXPECT_EQ(sqlite3_memory_highwater(0), 0);
}

}  // namespace
}  // namespace taskyon::store::sql
