#include "taskyon/store/sqlite.h"

#include <sqlite3.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <random>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "taskyon/store/wal_vfs.h"

namespace taskyon::store::sql {

struct SqlHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// The connection and its statements that are not in use. Closed when the
// Database and every Statement made from it are gone.
struct Connection {
  sqlite3* db = nullptr;
  int busy_retry_ms = kBusyRetryMs;
  std::unordered_map<std::string, std::vector<sqlite3_stmt*>, SqlHash, std::equal_to<>> idle;
  ~Connection() {
    for (auto& [_, list] : idle)
      for (auto* s : list) sqlite3_finalize(s);
    sqlite3_close_v2(db);
  }
};

namespace {

// At most this many idle copies of one SQL text are kept (a nested read of the
// same statement needs a second one; more are finalized).
constexpr std::size_t kIdlePerSql = 4;

using Clock = std::chrono::steady_clock;

std::string file_of(sqlite3* db) {
  const char* f = db ? sqlite3_db_filename(db, "main") : nullptr;
  return f ? f : "";
}

// What to do about a failure, for people.
std::string hint_for(int code, int busy_ms = kBusyRetryMs) {
  switch (code & 0xff) {
    case SQLITE_READONLY:
      return "; the store is read-only: read commands (tool list, task tree, audit, …) work on it, writes need a "
             "writable file and directory";
    case SQLITE_CANTOPEN:
      return "; check that the file and its directory exist and are readable (and writable, for commands that write)";
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return fmt::format("; another process held the store for more than {} ms: try again", busy_ms);
    case SQLITE_FULL:
      return "; the disk is full";
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return "; the file is not a Taskyon store or is damaged (sqlite3 FILE 'PRAGMA integrity_check')";
    case SQLITE_IOERR:
      return "; the file system reported an I/O error";
    default:
      return "";
  }
}

std::unexpected<Error> sqlite_error(sqlite3* db, std::string_view doing, int busy_ms = kBusyRetryMs) {
  const int code = db ? sqlite3_extended_errcode(db) : SQLITE_NOMEM;
  return fail(Errc::store,
              fmt::format("{} failed: {}{}", doing, db ? sqlite3_errmsg(db) : "out of memory", hint_for(code, busy_ms)),
              file_of(db));
}

bool is_busy(int rc) { return (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED; }

// Before a busy write is run again. SQLite answers SQLITE_BUSY at once,
// without its busy handler, where waiting could deadlock (a connection that
// holds a read lock and asks for the write lock: sqlite3_busy_handler's
// documentation). Contenders that all retry at once can then keep one another
// out for good: 160 processes turning one new file to WAL did, for the whole
// kBusyRetryMs. A random pause, its ceiling doubling from 1 ms to 16 ms with
// the attempts, lets one of them through.
void pause_before_retry(int attempt) {
  thread_local std::minstd_rand random(static_cast<std::uint_fast32_t>(
      static_cast<std::uint64_t>(::getpid()) * 0x9E3779B97F4A7C15ull ^
      static_cast<std::uint64_t>(Clock::now().time_since_epoch().count()) ^
      std::hash<std::thread::id>{}(std::this_thread::get_id())));
  const int ceiling_us = 1000 << std::min(attempt, 4);
  std::uniform_int_distribution<int> pick(ceiling_us / 4, ceiling_us);
  std::this_thread::sleep_for(std::chrono::microseconds(pick(random)));
}

// SQLite does not wait for another connection's write lock while this
// connection holds a read snapshot (it would deadlock): before a write in
// autocommit mode, every other statement still active is reset.
void end_reads(sqlite3* db, sqlite3_stmt* except) {
  if (!sqlite3_get_autocommit(db)) return;
  for (sqlite3_stmt* s = sqlite3_next_stmt(db, nullptr); s; s = sqlite3_next_stmt(db, s))
    if (s != except && sqlite3_stmt_busy(s)) sqlite3_reset(s);
}

// "file:" URI of a path (RFC 3986 percent-encoding of what a URI gives meaning to).
std::string file_uri(const std::string& path, std::string_view query) {
  std::string out = "file:";
  for (unsigned char c : path) {
    if (c == '%' || c == '?' || c == '#' || c < 0x21 || c >= 0x7f) out += fmt::format("%{:02X}", c);
    else out += static_cast<char>(c);
  }
  out += query;
  return out;
}

// SQLite counts every allocation under a process-wide mutex unless told not
// to (SQLITE_CONFIG_MEMSTATUS, on by default); nothing here reads the counts
// (sqlite3_memory_used). It can be said only before SQLite initializes:
// later, SQLite answers SQLITE_MISUSE and keeps counting.
void skip_memory_statistics() {
  [[maybe_unused]] static const int once = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

Result<sqlite3*> open_raw(const std::string& name, int flags, const std::string& path) {
  skip_memory_statistics();
  sqlite3* db = nullptr;
  // The shim gathers a commit's WAL writes into one (wal_vfs.h); the default
  // VFS if it could not be set up.
  const int rc = sqlite3_open_v2(name.c_str(), &db, flags | SQLITE_OPEN_NOMUTEX, wal_gathering_vfs());
  if (rc != SQLITE_OK) {
    auto err = fail(Errc::store,
                    fmt::format("cannot open database: {}{}", db ? sqlite3_errmsg(db) : "out of memory", hint_for(rc)),
                    path);
    sqlite3_close(db);
    return err;
  }
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  sqlite3_extended_result_codes(db, 1);
  // No dirty page is written before its commit, so the WAL shim (wal_vfs.h)
  // sees frames only at a commit: a second layer under its own rules. A
  // transaction holds its changed pages in memory instead.
  if (const int spill = sqlite3_exec(db, "PRAGMA cache_spill = OFF", nullptr, nullptr, nullptr); spill != SQLITE_OK) {
    auto err = fail(Errc::store, fmt::format("cannot configure the connection: {}", sqlite3_errmsg(db)), path);
    sqlite3_close(db);
    return err;
  }
  return db;
}

// A read-only connection can read a WAL store only if it can use the WAL
// index (-shm); in a read-only directory without one, the file is opened
// immutable (nobody can be writing it there).
bool can_read(sqlite3* db) {
  return sqlite3_exec(db, "SELECT count(*) FROM sqlite_master", nullptr, nullptr, nullptr) == SQLITE_OK;
}

}  // namespace

Result<Database> Database::open(const std::string& path, Access access) {
  if (access == Access::read_write) {
    auto db = open_raw(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, path);
    if (!db) return std::unexpected(db.error());
    Database out(*db, path);
    if (out.read_only())
      return fail(Errc::store,
                  fmt::format("the store {} is read-only (its file, directory or file system) and this command writes "
                              "to it; read commands (tool list, task tree, audit, …) still work on it",
                              path),
                  path);
    return out;
  }
  auto db = open_raw(file_uri(path, "?mode=ro"), SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, path);
  if (!db) return std::unexpected(db.error());
  if (can_read(*db)) return Database(*db, path);
  sqlite3_close(*db);
  auto immutable = open_raw(file_uri(path, "?mode=ro&immutable=1"), SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, path);
  if (!immutable) return std::unexpected(immutable.error());
  Database out(*immutable, path);
  if (!can_read(*immutable)) return sqlite_error(*immutable, "reading the store");
  return out;
}

bool Database::read_only() const { return sqlite3_db_readonly(db_, "main") == 1; }

Database::Database(sqlite3* db, std::string path) : conn_(std::make_shared<Connection>()), db_(db), path_(std::move(path)) {
  conn_->db = db;
}
Database Database::broken(Error why) {
  Database out(nullptr, why.where);
  out.broken_ = std::move(why);
  return out;
}
Database::Database(Database&& other) noexcept
    : conn_(std::move(other.conn_)), db_(other.db_), path_(std::move(other.path_)), broken_(std::move(other.broken_)) {
  other.db_ = nullptr;
}
Database& Database::operator=(Database&& other) noexcept {
  std::swap(conn_, other.conn_);
  std::swap(db_, other.db_);
  std::swap(path_, other.path_);
  std::swap(broken_, other.broken_);
  return *this;
}
Database::~Database() = default;  // the Connection closes when its last Statement is gone too

void Database::set_busy_limit(int retry_ms) {
  if (!conn_ || !db_) return;
  conn_->busy_retry_ms = std::max(retry_ms, 0);
  sqlite3_busy_timeout(db_, std::min(kBusyTimeoutMs, conn_->busy_retry_ms));
}

std::size_t Database::prepared_count() const {
  std::size_t n = 0;
  if (db_)
    for (sqlite3_stmt* s = sqlite3_next_stmt(db_, nullptr); s; s = sqlite3_next_stmt(db_, s)) ++n;
  return n;
}

Result<void> Database::exec(std::string_view sql) {
  if (broken_) return std::unexpected(*broken_);
  const std::string text(sql);
  end_reads(db_, nullptr);
  const auto deadline = Clock::now() + std::chrono::milliseconds(conn_->busy_retry_ms);
  for (int attempt = 0;; ++attempt) {
    char* message = nullptr;
    const bool autocommit = sqlite3_get_autocommit(db_) != 0;
    const int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &message);
    if (rc == SQLITE_OK) return {};
    std::string m = message ? message : sqlite3_errmsg(db_);
    sqlite3_free(message);
    // Busy outside a transaction: nothing was done, so all of it is retried.
    if (is_busy(rc) && autocommit && sqlite3_get_autocommit(db_) && Clock::now() < deadline) {
      pause_before_retry(attempt);
      continue;
    }
    return fail(Errc::store,
                fmt::format("SQL failed: {}{}", m, hint_for(sqlite3_extended_errcode(db_), conn_->busy_retry_ms)),
                path_);
  }
}

Result<Statement> Database::prepare(std::string_view sql) {
  if (broken_) return std::unexpected(*broken_);
  auto it = conn_->idle.find(sql);
  if (it == conn_->idle.end()) it = conn_->idle.emplace(std::string(sql), std::vector<sqlite3_stmt*>()).first;
  auto& list = it->second;
  if (!list.empty()) {
    sqlite3_stmt* stmt = list.back();
    list.pop_back();
    return Statement(conn_, &list, db_, stmt);
  }
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &stmt, nullptr) !=
      SQLITE_OK)
    return sqlite_error(db_, fmt::format("preparing \"{}\"", sql));
  return Statement(conn_, &list, db_, stmt);
}

std::int64_t Database::changes() const { return sqlite3_changes64(db_); }

Statement::Statement(Statement&& other) noexcept
    : conn_(std::move(other.conn_)), home_(other.home_), db_(other.db_), stmt_(other.stmt_), started_(other.started_) {
  other.stmt_ = nullptr;
  other.home_ = nullptr;
}
Statement& Statement::operator=(Statement&& other) noexcept {
  std::swap(conn_, other.conn_);
  std::swap(home_, other.home_);
  std::swap(db_, other.db_);
  std::swap(stmt_, other.stmt_);
  std::swap(started_, other.started_);
  return *this;
}
Statement::~Statement() {
  if (!stmt_) return;
  // Back to the connection's cache: no read left open, no value kept bound.
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  if (home_ && home_->size() < kIdlePerSql) home_->push_back(stmt_);
  else sqlite3_finalize(stmt_);
}

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
  const bool first = !started_;
  started_ = true;
  if (first && !sqlite3_stmt_readonly(stmt_)) end_reads(db_, stmt_);
  const int busy_ms = conn_ ? conn_->busy_retry_ms : kBusyRetryMs;
  const auto deadline = Clock::now() + std::chrono::milliseconds(busy_ms);
  for (int attempt = 0;; ++attempt) {
    const bool autocommit = sqlite3_get_autocommit(db_) != 0;
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    // A statement of its own (autocommit) that met a busy store before its
    // first row changed nothing: it is run again from the start.
    if (is_busy(rc) && first && autocommit && Clock::now() < deadline) {
      sqlite3_reset(stmt_);  // its read lock goes before the pause
      pause_before_retry(attempt);
      continue;
    }
    auto err = sqlite_error(db_, "a statement on the store", busy_ms);
    sqlite3_reset(stmt_);
    return err;
  }
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  started_ = false;
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
std::optional<std::string_view> Statement::view(int column) const {
  if (sqlite3_column_type(stmt_, column) == SQLITE_NULL) return std::nullopt;
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
  return std::string_view(p ? p : "", p ? static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column)) : 0);
}
std::int64_t Statement::integer(int column) const { return sqlite3_column_int64(stmt_, column); }

Result<Transaction> Transaction::begin(Database& db) {
  if (auto r = db.exec("BEGIN IMMEDIATE"); !r) return std::unexpected(r.error());
  return Transaction(db);
}
Result<void> Transaction::commit() {
  open_ = false;
  auto committed = db_->exec("COMMIT");
  // A COMMIT that fails may leave the transaction open (SQLITE_BUSY, a
  // deferred foreign key): it is rolled back, so that the connection's next
  // write can begin (a lent connection is the call's own, store.h).
  if (!committed && db_->raw() != nullptr && sqlite3_get_autocommit(db_->raw()) == 0) (void)db_->exec("ROLLBACK");
  return committed;
}
Transaction::~Transaction() {
  if (open_) (void)db_->exec("ROLLBACK");
}

ReadTransaction::ReadTransaction(Database& db) {
  sqlite3* raw = db.raw();
  if (raw == nullptr || sqlite3_get_autocommit(raw) == 0) return;
  // A statement still reading holds the connection's snapshot already, and
  // BEGIN through exec() would reset it.
  for (sqlite3_stmt* s = sqlite3_next_stmt(raw, nullptr); s; s = sqlite3_next_stmt(raw, s))
    if (sqlite3_stmt_busy(s)) return;
  if (db.exec("BEGIN")) db_ = &db;
}
ReadTransaction::~ReadTransaction() {
  if (db_ == nullptr) return;
  if (!db_->exec("COMMIT")) (void)db_->exec("ROLLBACK");
}

}  // namespace taskyon::store::sql
