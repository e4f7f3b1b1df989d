#include "taskyon/store/store.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "taskyon/json/json.h"
#include "taskyon/native/native.h"
#include "taskyon/store/checkpointer.h"
#include "taskyon/store/clock.h"
#include "taskyon/store/modules.h"
#include "taskyon/store/schema.h"
#include "taskyon/store/settings.h"

namespace taskyon::store {
namespace {

bool is_hex(std::string_view s) {
  return !s.empty() && s.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

// "sha256:<hex>" or "<hex>" -> the hex part, if it is one.
std::optional<std::string_view> hex_part(std::string_view ref) {
  if (ref.starts_with("sha256:")) ref.remove_prefix(7);
  if (is_hex(ref) && ref.size() <= 64) return ref;
  return std::nullopt;
}

Result<void> check_installable(const registry::Manifest& manifest, const std::optional<Trust>& trust) {
  if (manifest.execution == registry::Execution::trusted_native) {  // P1: not offered on this machine
    if (auto why = native::unavailable(manifest.native)) return fail(Errc::runtime_missing, *why, "/native");
  }
  if (manifest.execution == registry::Execution::trusted_native && !native::find(manifest.native)) {
    std::string have;
    for (const auto& f : native::all()) have += (have.empty() ? "" : ", ") + f.id;
    return fail(Errc::invalid_manifest,
                fmt::format("R5: this host has no native function \"{}\" (it has: {}); only functions compiled into "
                            "the host can be bound",
                            manifest.native, have),
                "/native");
  }
  if (registry::needs_trust(manifest) && (!trust || trust->by.empty()))
    return fail(Errc::bad_usage, registry::trust_required_message(manifest), "/execution");
  return {};
}

Result<RevisionRecord> verify_revision(RevisionRecord r) {
  // R2: the row must still hash to its id, and still be a valid manifest.
  if (json::content_id(r.definition) != r.id)
    return fail(Errc::integrity,
                fmt::format("revision {} is tampered: its stored definition no longer hashes to its id", r.id), r.id);
  auto value = json::parse(r.definition);
  if (!value) return fail(Errc::integrity, fmt::format("revision {} is tampered: {}", r.id, value.error().message), r.id);
  auto manifest = registry::parse_manifest(*value);
  if (!manifest)
    return fail(Errc::integrity, fmt::format("revision {} is not a valid manifest: {}", r.id, manifest.error().describe()),
                r.id);
  if (registry::needs_trust(*manifest) && !r.trust)
    return fail(Errc::integrity,
                fmt::format("revision {} is tampered: it runs with host authority but has no trust record (R6)", r.id),
                r.id);
  if (manifest->name != r.name)
    return fail(Errc::integrity, fmt::format("revision {} is tampered: stored name differs from its definition", r.id),
                r.id);
  r.manifest = std::move(*manifest);
  return r;
}

// Per connection. WAL is a property of the file (set once, by open()).
// synchronous=NORMAL: see docs/tasks.md "Durability" for what it risks.
// Checkpoints: Checkpointer::watch (checkpointer.h), once the Store has the connection.
Result<void> set_pragmas(sql::Database& db, bool first) {
  // wal_autocheckpoint covers what runs before Checkpointer::watch replaces it
  // (Store::open's migration); watched connections checkpoint off the call path.
  const std::string pragmas[] = {"PRAGMA journal_mode = WAL", "PRAGMA foreign_keys = ON", "PRAGMA synchronous = NORMAL",
                                 fmt::format("PRAGMA wal_autocheckpoint = {}", kCheckpointPages)};
  for (const auto& pragma : pragmas) {
    if (!first && pragma.find("journal_mode") != std::string::npos) continue;
    auto stmt = db.prepare(pragma);
    if (!stmt) return std::unexpected(stmt.error());
    if (auto r = stmt->run(); !r) return std::unexpected(Error{r.error().code, r.error().message, db.path()});
  }
  return {};
}

// Revisions verified by this process, by id: the bytes that were verified and
// the record built from them (a row is re-verified when its bytes differ).
struct VerifiedRevisions {
  std::mutex m;
  std::unordered_map<std::string, std::shared_ptr<const RevisionRecord>> by_id;
};
VerifiedRevisions& verified_revisions() {
  static VerifiedRevisions v;
  return v;
}
constexpr std::size_t kMaxVerifiedRevisions = 4096;

bool same_trust(const std::optional<TrustRecord>& a, const std::optional<TrustRecord>& b) {
  if (!a || !b) return !a && !b;
  return a->by == b->by && a->at == b->at && a->reason == b->reason;
}

// A revision row: verified on its first read in this process; later reads of
// the very same bytes (definition, name, created_at, trust) reuse the record.
Result<RevisionRecord> load_revision(sql::Statement& stmt) {
  RevisionRecord r{stmt.text(0), stmt.text(1), stmt.text(2), stmt.text(3), {}, std::nullopt};
  if (auto by = stmt.optional_text(4)) r.trust = TrustRecord{*by, stmt.text(5), stmt.text(6)};
  auto& cache = verified_revisions();
  {
    std::lock_guard lock(cache.m);
    if (auto it = cache.by_id.find(r.id); it != cache.by_id.end()) {
      const RevisionRecord& known = *it->second;
      if (known.definition == r.definition && known.name == r.name && known.created_at == r.created_at &&
          same_trust(known.trust, r.trust))
        return known;
    }
  }
  auto verified = verify_revision(std::move(r));
  if (!verified) return verified;
  std::lock_guard lock(cache.m);
  if (cache.by_id.size() >= kMaxVerifiedRevisions) cache.by_id.clear();
  cache.by_id.insert_or_assign(verified->id, std::make_shared<const RevisionRecord>(*verified));
  return verified;
}

}  // namespace

struct Store::Connections {
  static constexpr std::size_t kMaxParked = 4;
  // Declared first, so it goes last: every connection it watches closes before it.
  std::unique_ptr<Checkpointer> checkpointer;  // read-write stores only
  std::string path;
  sql::Access access = sql::Access::read_write;
  int busy_ms = sql::kBusyRetryMs;
  std::mutex m;
  std::unordered_map<std::thread::id, std::unique_ptr<sql::Database>> by_thread;
  // Set aside by park() or a thread's end; the last one is taken first.
  std::vector<std::unique_ptr<sql::Database>> parked;

  void park(std::thread::id thread) {
    std::lock_guard lock(m);
    auto it = by_thread.find(thread);
    if (it == by_thread.end()) return;
    // One that could not be opened is dropped (the next thread tries again);
    // past kMaxParked, one closes.
    if (parked.size() < kMaxParked && it->second->raw() != nullptr) parked.push_back(std::move(it->second));
    by_thread.erase(it);
  }
};

namespace {

// Run when a thread ends: each Store it has a connection of gets it back
// parked (a Store already gone is skipped). One entry per Store.
struct ThreadEnd {
  std::vector<std::pair<std::weak_ptr<void>, std::function<void()>>> hooks;
  ~ThreadEnd() {
    for (auto& [_, hook] : hooks) hook();
  }
  void add(const std::shared_ptr<void>& owner, std::function<void()> hook) {
    std::erase_if(hooks, [&](const auto& h) {
      return h.first.expired() || (!h.first.owner_before(owner) && !owner.owner_before(h.first));
    });
    hooks.emplace_back(owner, std::move(hook));
  }
};
thread_local ThreadEnd thread_end;

}  // namespace

void Store::set_busy_limit(std::chrono::milliseconds limit) {
  std::lock_guard lock(conns_->m);
  conns_->busy_ms = static_cast<int>(limit.count());
  for (auto& [_, db] : conns_->by_thread) db->set_busy_limit(conns_->busy_ms);
  for (auto& db : conns_->parked) db->set_busy_limit(conns_->busy_ms);
}

void Store::park() { conns_->park(std::this_thread::get_id()); }

namespace {
// The Loan a Borrow of this thread holds (an empty one: none).
thread_local Store::Loan borrowed;
}  // namespace

Store::Loan Store::lend() {
  Loan loan;
  loan.db_ = &database();
  loan.owner_ = conns_.get();
  return loan;
}

Store::Borrow::Borrow(const Loan& loan) : previous_(borrowed) {
  if (loan.db_) borrowed = loan;
}
Store::Borrow::~Borrow() { borrowed = previous_; }

Store::Store(sql::Database db, sql::Access access) : conns_(std::make_shared<Connections>()) {
  conns_->path = db.path();
  conns_->access = access;
  if (access == sql::Access::read_write) {
    conns_->checkpointer = std::make_unique<Checkpointer>(conns_->path, kCheckpointPages, kWalLimitPages);
    conns_->checkpointer->watch(db);
  }
  conns_->by_thread.emplace(std::this_thread::get_id(), std::make_unique<sql::Database>(std::move(db)));
}
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() = default;

namespace {
// A new connection to `path` with its per-connection settings (a
// read-write store's first connection already migrated it), or a broken one
// saying why it could not be opened.
sql::Database open_connection(const std::string& path, sql::Access access, Checkpointer* checkpointer, int busy_ms) {
  auto db = sql::Database::open(path, access);
  if (db && access == sql::Access::read_write) {
    if (auto r = set_pragmas(*db, false); !r) db = std::unexpected(r.error());
    if (db && checkpointer) checkpointer->watch(*db);
  }
  sql::Database conn = db ? std::move(*db) : sql::Database::broken(db.error());
  if (busy_ms != sql::kBusyRetryMs) conn.set_busy_limit(busy_ms);
  return conn;
}
}  // namespace

sql::Database& Store::database() {
  auto& c = *conns_;
  if (borrowed.owner_ == &c) return *borrowed.db_;
  const auto me = std::this_thread::get_id();
  std::unique_lock lock(c.m);
  if (auto it = c.by_thread.find(me); it != c.by_thread.end()) {
    // One that could not be opened (no file descriptor left, say) is tried
    // again on each use: a thread that lives long (a server's worker) would
    // otherwise fail until it ended. Replaced in place, so a reference to it
    // (a Loan) stays valid.
    if (it->second->raw() == nullptr) *it->second = open_connection(c.path, c.access, c.checkpointer.get(), c.busy_ms);
    return *it->second;
  }
  std::unique_ptr<sql::Database> conn;
  if (!c.parked.empty()) {
    conn = std::move(c.parked.back());
    c.parked.pop_back();
  } else {
    conn = std::make_unique<sql::Database>(open_connection(c.path, c.access, c.checkpointer.get(), c.busy_ms));
  }
  auto& mine = *c.by_thread.emplace(me, std::move(conn)).first->second;
  lock.unlock();
  // A thread that ends (tycli mcp's per-call threads, a call's capability
  // threads) hands its connection on instead of keeping it until the Store goes.
  thread_end.add(conns_, [weak = std::weak_ptr<Connections>(conns_), me] {
    if (auto live = weak.lock()) live->park(me);
  });
  return mine;
}

Result<std::string> default_db_path() {
  namespace fs = std::filesystem;
  fs::path home;
  if (const char* t = std::getenv("TASKYON_HOME"); t && *t) {
    home = t;
  } else if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x) {
    home = fs::path(x) / "taskyon";
  } else if (const char* h = std::getenv("HOME"); h && *h) {
    home = fs::path(h) / ".local" / "share" / "taskyon";
  } else {
    return fail(Errc::io, "cannot find a data directory: set TASKYON_HOME, XDG_DATA_HOME or HOME, or pass --db PATH");
  }
  return (home / "taskyon.db").string();
}

Result<Store> Store::open(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::exists(parent, ec)) {
    fs::create_directories(parent, ec);
    if (ec && !fs::is_directory(parent))  // another process may have just made it
      return fail(Errc::io, fmt::format("cannot create the store's directory: {}", ec.message()), parent.string());
    fs::permissions(parent, fs::perms::owner_all, ec);
  }
  // A new database file is created readable by its owner only: it holds
  // secrets (secrets.h), and the file is their trust boundary.
  if (!fs::exists(path, ec)) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST)
      return fail(Errc::io, fmt::format("cannot create the store {}: {}", path, std::strerror(errno)), path);
    if (fd >= 0) ::close(fd);
  }
  auto db = sql::Database::open(path);
  if (!db) return std::unexpected(db.error());
  if (auto r = set_pragmas(*db, true); !r) return std::unexpected(r.error());
  if (auto r = migrate(*db); !r) return std::unexpected(Error{r.error().code, r.error().message, path});
  return Store(std::move(*db), sql::Access::read_write);
}

Result<Store> Store::open_for_reading(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return open(path);
  auto db = sql::Database::open(path, sql::Access::read_only);
  if (!db) return std::unexpected(db.error());
  auto version = schema_version(*db);
  if (!version) return std::unexpected(version.error());
  if (*version < kSchemaVersion) {
    auto migrated = open(path);
    if (!migrated)
      return fail(migrated.error().code,
                  fmt::format("the store {} has schema version {}, older than this tycli's {}, and cannot be "
                              "migrated: {}",
                              path, *version, kSchemaVersion, migrated.error().message),
                  path);
    return migrated;
  }
  return Store(std::move(*db), sql::Access::read_only);
}

Result<InstallResult> Store::install(const registry::Manifest& manifest, Activate activate,
                                     const std::optional<Trust>& trust) {
  if (auto ok = check_installable(manifest, trust); !ok) return std::unexpected(ok.error());
  if (auto held = code_modules(*this, manifest.modules, manifest.code, module_kind(manifest)); !held)
    return std::unexpected(held.error());
  auto canonical = json::canonicalize(manifest.definition);
  if (!canonical) return std::unexpected(canonical.error());
  InstallResult result{json::content_id(*canonical), manifest.name, false, false, std::nullopt};

  auto tx = sql::Transaction::begin(database());
  if (!tx) return std::unexpected(tx.error());
  if (registry::needs_trust(manifest)) {
    auto t = database().prepare(
        "INSERT INTO trust(revision, trusted_by, trusted_at, reason) VALUES (?1, ?2, ?3, ?4) "
        "ON CONFLICT(revision) DO NOTHING");
    if (!t) return std::unexpected(t.error());
    t->bind(1, result.id).bind(2, trust->by).bind(3, now_iso8601()).bind(4, trust->reason);
    if (auto r = t->run(); !r) return std::unexpected(r.error());
  }
  auto insert = database().prepare(
      "INSERT INTO revisions(id, name, execution, definition, created_at) VALUES (?1, ?2, ?3, ?4, ?5) "
      "ON CONFLICT(id) DO NOTHING");
  if (!insert) return std::unexpected(insert.error());
  insert->bind(1, result.id).bind(2, manifest.name).bind(3, registry::execution_name(manifest.execution));
  insert->bind(4, *canonical).bind(5, now_iso8601());
  if (auto r = insert->run(); !r) return std::unexpected(r.error());
  result.created = database().changes() == 1;

  auto current = active(manifest.name);
  if (!current) return std::unexpected(current.error());
  const bool bind = activate == Activate::always ? (!*current || (*current)->revision != result.id) : !*current;
  if (bind) {
    auto b = database().prepare("INSERT INTO bindings(name, revision, activated_at) VALUES (?1, ?2, ?3)");
    if (!b) return std::unexpected(b.error());
    b->bind(1, manifest.name).bind(2, result.id).bind(3, now_iso8601());
    if (auto r = b->run(); !r) return std::unexpected(r.error());
    result.activated = true;
    result.active = result.id;
  } else if (*current) {
    result.active = (*current)->revision;
  }
  if (auto r = tx->commit(); !r) return std::unexpected(r.error());
  return result;
}

Result<Binding> Store::activate(std::string_view name, std::string_view revision_ref) {
  auto rev = resolve(revision_ref);
  if (!rev) return std::unexpected(rev.error());
  if (rev->name != name)
    return fail(Errc::bad_usage,
                fmt::format("revision {} is a revision of \"{}\", not of \"{}\"", rev->id, rev->name, name), rev->id);
  auto stmt = database().prepare("INSERT INTO bindings(name, revision, activated_at) VALUES (?1, ?2, ?3) RETURNING seq, activated_at");
  if (!stmt) return std::unexpected(stmt.error());
  stmt->bind(1, name).bind(2, rev->id).bind(3, now_iso8601());
  auto row = stmt->step();
  if (!row) return std::unexpected(row.error());
  return Binding{stmt->integer(0), std::string(name), rev->id, stmt->text(1)};
}

Result<std::string> Store::expand_prefix(std::string_view table, std::string_view ref, std::string_view column) {
  auto hex = hex_part(ref);
  if (!hex) return fail(Errc::not_found, fmt::format("\"{}\" is not a revision id or prefix", ref), std::string(ref));
  if (hex->size() < 12)
    return fail(Errc::bad_usage,
                fmt::format("prefix \"{}\" is too short: give at least 12 hex digits", ref), std::string(ref));
  const std::string lo = "sha256:" + std::string(*hex);
  auto stmt = database().prepare(
      fmt::format("SELECT DISTINCT {1} FROM {0} WHERE {1} >= ?1 AND {1} < ?2 ORDER BY {1} LIMIT 11", table, column));
  if (!stmt) return std::unexpected(stmt.error());
  stmt->bind(1, lo).bind(2, lo + "\x7f");
  std::vector<std::string> ids;
  for (;;) {
    auto row = stmt->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    ids.push_back(stmt->text(0));
  }
  if (ids.empty())
    return fail(Errc::not_found,
                fmt::format("no {} matches \"{}\"",
                            table == "tasks" && column == "id" ? "task"
                            : table == "settings_revisions"    ? "settings revision"
                            : table == "modules"               ? "module"
                                                               : "revision",
                            ref),
                std::string(ref));
  if (ids.size() > 1) {
    std::string list;
    for (const auto& id : ids) list += "\n  " + id;
    return fail(Errc::ambiguous, fmt::format("\"{}\" matches several ids; give more digits:{}", ref, list), std::string(ref));
  }
  return ids.front();
}

Result<std::string> Store::logged_revision(std::string_view ref) {
  if (json::is_content_id(ref)) return std::string(ref);
  auto rev = resolve(ref);
  if (rev) return rev->id;
  if (rev.error().code == Errc::not_found)
    if (auto pinned = expand_prefix("tasks", ref, "tool_revision"); pinned || pinned.error().code == Errc::ambiguous)
      return pinned;
  return std::unexpected(rev.error());
}

Result<RevisionRecord> Store::revision(std::string_view id) {
  auto stmt = database().prepare(
      "SELECT r.id, r.name, r.definition, r.created_at, t.trusted_by, t.trusted_at, t.reason "
      "FROM revisions r LEFT JOIN trust t ON t.revision = r.id WHERE r.id = ?1");
  if (!stmt) return std::unexpected(stmt.error());
  stmt->bind(1, id);
  auto row = stmt->step();
  if (!row) return std::unexpected(row.error());
  if (!*row) return fail(Errc::not_found, fmt::format("no revision {}", id), std::string(id));
  return load_revision(*stmt);
}

Result<RevisionRecord> Store::resolve(std::string_view ref) {
  if (json::is_content_id(ref)) return revision(ref);
  std::optional<Binding> bound;
  if (registry::is_valid_tool_name(ref)) {
    auto b = active(ref);
    if (!b) return std::unexpected(b.error());
    bound = *b;
  }
  const auto hex = hex_part(ref);
  const bool prefix_like = hex && hex->size() >= 12;
  if (bound && prefix_like) {
    auto other = expand_prefix("revisions", ref);
    if (other && *other != bound->revision)
      return fail(Errc::ambiguous,
                  fmt::format("\"{}\" is both a tool name (active {}) and a prefix of {}; write the full id or "
                              "\"sha256:\" before the prefix",
                              ref, bound->revision, *other),
                  std::string(ref));
  }
  if (bound) return revision(bound->revision);
  // A short hex word that could be a tool name ("add", "cafe") is taken for
  // one: "no tool named", saying what a prefix would need.
  if (hex && !prefix_like && registry::is_valid_tool_name(ref))
    return fail(Errc::not_found,
                fmt::format("no tool named \"{}\" (see `tycli tool list`); as a revision prefix it is too short: "
                            "give at least 12 hex digits",
                            ref),
                std::string(ref));
  if (hex) {
    auto id = expand_prefix("revisions", ref);
    if (!id) return std::unexpected(id.error());
    return revision(*id);
  }
  return fail(Errc::not_found, fmt::format("no tool named \"{}\" (see `tycli tool list`)", ref), std::string(ref));
}

Result<std::optional<Binding>> Store::active(std::string_view name) {
  auto stmt = database().prepare(
      "SELECT seq, name, revision, activated_at FROM bindings WHERE name = ?1 ORDER BY seq DESC LIMIT 1");
  if (!stmt) return std::unexpected(stmt.error());
  stmt->bind(1, name);
  auto row = stmt->step();
  if (!row) return std::unexpected(row.error());
  if (!*row) return std::optional<Binding>();
  return std::optional<Binding>(Binding{stmt->integer(0), stmt->text(1), stmt->text(2), stmt->text(3)});
}

Result<std::vector<Binding>> Store::history(std::string_view name) {
  auto stmt = database().prepare("SELECT seq, name, revision, activated_at FROM bindings WHERE name = ?1 ORDER BY seq");
  if (!stmt) return std::unexpected(stmt.error());
  stmt->bind(1, name);
  std::vector<Binding> out;
  for (;;) {
    auto row = stmt->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    out.push_back({stmt->integer(0), stmt->text(1), stmt->text(2), stmt->text(3)});
  }
  if (out.empty()) {
    auto any = database().prepare("SELECT 1 FROM revisions WHERE name = ?1 LIMIT 1");
    if (!any) return std::unexpected(any.error());
    any->bind(1, name);
    auto row = any->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) return fail(Errc::not_found, fmt::format("no tool named \"{}\"", name), std::string(name));
  }
  return out;
}

Result<std::vector<ToolSummary>> Store::tools() {
  auto stmt = database().prepare(
      "SELECT r.name, COUNT(*), "
      "  (SELECT b.revision FROM bindings b WHERE b.name = r.name ORDER BY b.seq DESC LIMIT 1) "
      "FROM revisions r GROUP BY r.name ORDER BY r.name");
  if (!stmt) return std::unexpected(stmt.error());
  std::vector<ToolSummary> out;
  for (;;) {
    auto row = stmt->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    out.push_back({stmt->text(0), stmt->optional_text(2).value_or(""), stmt->integer(1)});
  }
  return out;
}

tasks::ToolResolver Store::resolver() {
  return [this](std::string_view ref) -> Result<tasks::ResolvedTool> {
    // The revision and its settings from one snapshot, under one read lock.
    sql::ReadTransaction reads(database());
    auto rev = resolve(ref);
    if (!rev) return std::unexpected(rev.error());
    auto settings = settings_revision_for(*this, rev->name);
    if (!settings) return std::unexpected(settings.error());
    return tasks::ResolvedTool{rev->id, std::move(*settings), std::move(rev->manifest)};
  };
}

}  // namespace taskyon::store
