// A thin RAII layer over the SQLite C API, internal to the store.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "taskyon/base/error.h"

struct sqlite3;
struct sqlite3_stmt;

namespace taskyon::store::sql {

class Statement;

class Database {
 public:
  static Result<Database> open(const std::string& path);
  Database(Database&&) noexcept;
  Database& operator=(Database&&) noexcept;
  ~Database();

  Result<void> exec(std::string_view sql);  // one or more statements, no results
  Result<Statement> prepare(std::string_view sql);
  std::int64_t changes() const;
  sqlite3* raw() const { return db_; }

 private:
  explicit Database(sqlite3* db) : db_(db) {}
  sqlite3* db_ = nullptr;
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

 private:
  friend class Database;
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
};

// Runs `sql` as a transaction: BEGIN IMMEDIATE … COMMIT, ROLLBACK on error.
class Transaction {
 public:
  static Result<Transaction> begin(Database& db);
  Result<void> commit();
  ~Transaction();
  Transaction(Transaction&& other) noexcept : db_(other.db_), open_(other.open_) { other.open_ = false; }

 private:
  explicit Transaction(Database& db) : db_(&db) {}
  Database* db_;
  bool open_ = true;
};

}  // namespace taskyon::store::sql
