// A thin RAII layer over the SQLite C API, internal to the store.
//
// Concurrency (several tycli processes on one file): a connection waits up to
// kBusyTimeoutMs for another's lock (busy_timeout), and a write that still
// finds the store busy is retried whole — BEGIN IMMEDIATE of a Transaction, or
// a single autocommit statement — after a random pause of 0.25-16 ms (SQLite
// returns some busy answers at once, and retries in lockstep can livelock),
// until kBusyRetryMs have passed; only then is it an Errc::store error. No read statement stays active across a write: a
// write in autocommit mode first resets every statement still active on the
// connection (SQLite cannot wait for a lock while its own connection holds a
// read snapshot), so read what a statement returned before writing.
// Every error names the database file (`where`) and says what to do.
//
// Statements are prepared once per connection: prepare() hands out a cached
// statement for the same SQL text (sqlite3_prepare_v3 with
// SQLITE_PREPARE_PERSISTENT the first time), and a Statement going out of
// scope is reset and its bindings cleared, then kept for the next prepare()
// of that text. Two live Statements never share one sqlite3_stmt.
//
// A Database (connection) belongs to one thread at a time (SQLITE_OPEN_NOMUTEX);
// Store keeps one connection per thread (store.h says why).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taskyon/base/error.h"

struct sqlite3;
struct sqlite3_stmt;

namespace taskyon::store::sql {

class Statement;
struct Connection;  // the sqlite3 handle and its idle prepared statements (sqlite.cc)

inline constexpr int kBusyTimeoutMs = 5000;  // one wait for another connection's lock
inline constexpr int kBusyRetryMs = 60000;   // all retries of one write together

enum class Access { read_write, read_only };

class Database {
 public:
  // read_write opens (creating) the file; a file the OS lets us only read is
  // Errc::store "read-only". read_only never writes, not even the WAL index
  // when its directory is read-only (SQLite's immutable mode then).
  static Result<Database> open(const std::string& path, Access access = Access::read_write);
  Database(Database&&) noexcept;
  Database& operator=(Database&&) noexcept;
  ~Database();

  Result<void> exec(std::string_view sql);  // one or more statements, no results
  Result<Statement> prepare(std::string_view sql);
  std::int64_t changes() const;
  sqlite3* raw() const { return db_; }
  bool read_only() const;
  const std::string& path() const { return path_; }
  // A connection that could not be opened: every exec/prepare returns `why`.
  static Database broken(Error why);
  // Statements compiled on this connection (cached, idle ones included).
  std::size_t prepared_count() const;
  // How long a write on this connection may wait for a busy store in all (ms;
  // default kBusyRetryMs; one wait is at most kBusyTimeoutMs of it). After it
  // the write is Errc::store "another process held the store for more than … ms".
  void set_busy_limit(int retry_ms);

 private:
  Database(sqlite3* db, std::string path);
  std::shared_ptr<Connection> conn_;
  sqlite3* db_ = nullptr;
  std::string path_;
  std::optional<Error> broken_;
};

// A prepared statement; bind with 1-based indexes; step() is true while a row is ready.
class Statement {
 public:
  Statement(Statement&&) noexcept;
  Statement& operator=(Statement&&) noexcept;
  ~Statement();

  Statement& bind(int index, std::string_view text);
  Statement& bind(int index, std::int64_t value);
  Statement& bind_nullable(int index, const std::optional<std::string>& text);  // NULL when empty
  Result<bool> step();
  Result<void> run();  // step to completion, no rows expected

  std::string text(int column) const;
  std::optional<std::string> optional_text(int column) const;
  std::int64_t integer(int column) const;
  // The column's bytes without a copy (nullopt for NULL); valid until the next step or reset.
  std::optional<std::string_view> view(int column) const;
  // Ends the statement's read (its current row is gone); step() starts again.
  void reset();

 private:
  friend class Database;
  Statement(std::shared_ptr<Connection> conn, std::vector<sqlite3_stmt*>* home, sqlite3* db, sqlite3_stmt* stmt)
      : conn_(std::move(conn)), home_(home), db_(db), stmt_(stmt) {}
  std::shared_ptr<Connection> conn_;       // keeps the connection open while the statement lives
  std::vector<sqlite3_stmt*>* home_ = nullptr;  // where the statement goes back to when done
  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
  bool started_ = false;  // stepped since prepare or reset
};

// Runs `sql` as a transaction: BEGIN IMMEDIATE … COMMIT, ROLLBACK on error.
// begin() takes the write lock first (retried while busy, see above), so
// nothing inside the transaction can meet a busy store.
class Transaction {
 public:
  static Result<Transaction> begin(Database& db);
  Result<void> commit();  // a failed COMMIT is rolled back: no transaction stays open
  ~Transaction();
  Transaction(Transaction&& other) noexcept : db_(other.db_), open_(other.open_) { other.open_ = false; }

 private:
  explicit Transaction(Database& db) : db_(&db) {}
  Database* db_;
  bool open_ = true;
};

// Several reads from one snapshot under one read lock: BEGIN (deferred) …
// COMMIT. Outside a transaction each statement takes and drops its own (in
// WAL mode, a lock of the -shm file: two fcntl calls and a look at the WAL
// index). Does nothing on a connection already in a transaction or with a
// statement still reading (its snapshot is already held, and stays so), or if
// BEGIN fails (the statements then read as before, each on its own). Nothing
// may write inside it: a write would turn it into a write transaction.
class ReadTransaction {
 public:
  explicit ReadTransaction(Database& db);
  ~ReadTransaction();  // ends it (COMMIT: a read-only transaction writes nothing)
  ReadTransaction(const ReadTransaction&) = delete;
  ReadTransaction& operator=(const ReadTransaction&) = delete;

 private:
  Database* db_ = nullptr;  // null when nothing was begun
};

}  // namespace taskyon::store::sql
