#include "taskyon/store/sqlite.h"

#include <sqlite3.h>

#include <fmt/format.h>

namespace taskyon::store::sql {
namespace {

std::unexpected<Error> sqlite_error(sqlite3* db, std::string_view doing) {
  return fail(Errc::store, fmt::format("{} failed: {}", doing, db ? sqlite3_errmsg(db) : "out of memory"));
}

}  // namespace

Result<Database> Database::open(const std::string& path) {
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                                 nullptr);
  if (rc != SQLITE_OK) {
    auto err = fail(Errc::store, fmt::format("cannot open database: {}", db ? sqlite3_errmsg(db) : "out of memory"),
                    path);
    sqlite3_close(db);
    return err;
  }
  sqlite3_busy_timeout(db, 5000);
  sqlite3_extended_result_codes(db, 1);
  return Database(db);
}

Database::Database(Database&& other) noexcept : db_(other.db_) { other.db_ = nullptr; }
Database& Database::operator=(Database&& other) noexcept {
  std::swap(db_, other.db_);
  return *this;
}
Database::~Database() { sqlite3_close(db_); }

Result<void> Database::exec(std::string_view sql) {
  char* message = nullptr;
  const std::string text(sql);
  if (sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
    std::string m = message ? message : sqlite3_errmsg(db_);
    sqlite3_free(message);
    return fail(Errc::store, fmt::format("SQL failed: {}", m));
  }
  return {};
}

Result<Statement> Database::prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr) != SQLITE_OK)
    return sqlite_error(db_, fmt::format("preparing \"{}\"", sql));
  return Statement(db_, stmt);
}

std::int64_t Database::changes() const { return sqlite3_changes64(db_); }

Statement::Statement(Statement&& other) noexcept : db_(other.db_), stmt_(other.stmt_) { other.stmt_ = nullptr; }
Statement& Statement::operator=(Statement&& other) noexcept {
  std::swap(db_, other.db_);
  std::swap(stmt_, other.stmt_);
  return *this;
}
Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement& Statement::bind(int index, std::string_view text) {
  sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  return *this;
}
Statement& Statement::bind(int index, std::int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
  return *this;
}
Statement& Statement::bind_nullable(int index, const std::optional<std::string>& text) {
  if (text) return bind(index, std::string_view(*text));
  sqlite3_bind_null(stmt_, index);
  return *this;
}

Result<bool> Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return fail(Errc::store, fmt::format("database refused the change: {}", sqlite3_errmsg(db_)));
}

Result<void> Statement::run() {
  for (;;) {
    auto more = step();
    if (!more) return std::unexpected(more.error());
    if (!*more) return {};
  }
}

std::string Statement::text(int column) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
  return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column))) : std::string();
}
std::optional<std::string> Statement::optional_text(int column) const {
  if (sqlite3_column_type(stmt_, column) == SQLITE_NULL) return std::nullopt;
  return text(column);
}
std::int64_t Statement::integer(int column) const { return sqlite3_column_int64(stmt_, column); }

Result<Transaction> Transaction::begin(Database& db) {
  if (auto r = db.exec("BEGIN IMMEDIATE"); !r) return std::unexpected(r.error());
  return Transaction(db);
}
Result<void> Transaction::commit() {
  open_ = false;
  return db_->exec("COMMIT");
}
Transaction::~Transaction() {
  if (open_) (void)db_->exec("ROLLBACK");
}

}  // namespace taskyon::store::sql
