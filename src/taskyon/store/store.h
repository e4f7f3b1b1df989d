// The persistent store: tool revisions, name bindings with their history, and
// tasks, in one SQLite file (WAL mode). Every row read back is verified against
// its content address; a row edited behind the store's back is reported as
// Errc::integrity ("tampered"), never used (R2).
//
// What revisions are granted (DESIGN §6) lives beside this class as free
// functions taking a Store&, one header each: grants.h (fetch and storage
// grants), kv.h (tool storage), secrets.h, audit.h, settings.h (settings
// revisions), popups.h (M16), sandbox_log.h; origin.h normalizes origins and
// outcome.h is the refusal type capabilities return to tool code.
// docs/grants.md describes the tables and the tycli commands.
//
// Threads: a Store may be used from several threads at once. Each thread gets
// its own SQLite connection (opened on its first use, kept until the Store
// goes), as SQLite recommends (https://sqlite.org/threadsafe.html, "each
// thread its own connection"): WAL lets those connections read in parallel
// while one writes, a transaction belongs to the thread that began it, and no
// connection-wide mutex serializes readers behind a writer. The Store object
// itself (open, move, destroy) is not to be raced with its own use. One
// exception to "its own": a thread may lend its connection to helpers while
// it waits for them (lend() below).
// Busy: another connection's lock (thread or process) is waited for, bounded
// (sql::kBusyTimeoutMs per wait, sql::kBusyRetryMs per write, sqlite.h);
// after the bound the caller gets Errc::store "held the store for more than
// … ms", never a bare SQLITE_BUSY.
// Durability: WAL with synchronous=NORMAL (docs/tasks.md, "Durability"); a
// commit's WAL frames go to the OS in one write (wal_vfs.h).
// Checkpoints: the commit that brings the write-ahead log to kCheckpointPages
// wakes a thread that copies it into the database file and syncs both; no
// call waits for it (below, checkpointer.h).
// Verified rows are remembered per process (revisions and tasks, keyed by
// their content address together with the stored bytes): a row is hashed and
// parsed on its first read, and a later read of the same bytes reuses that
// work; a row whose bytes changed is verified again (and so found tampered).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taskyon/base/error.h"
#include "taskyon/registry/manifest.h"
#include "taskyon/store/sqlite.h"
#include "taskyon/tasks/compiler.h"
#include "taskyon/tasks/task.h"

namespace taskyon::store {

// Pages (4 KiB) in the write-ahead log at which a commit has it checkpointed
// (copied into the database file, both synced) by a thread of the Store, not
// by the committing call (checkpointer.h; SQLite's default is 1000, inline).
// At 4000, a log of up to 16 MiB, a page that many calls change (an index
// leaf, the tasks table's last page) is copied once for four times as many
// calls, and the checkpoint's two fdatasync calls come a quarter as often
// (bench/bench_store.cc; docs/tasks.md, "Durability").
inline constexpr int kCheckpointPages = 4000;
// Pages in the log at which a commit checkpoints it itself, whatever the
// thread did (it is failing, or calls commit faster than it copies): the bound
// on the log's file (kWalLimitPages × 4 KiB), passed only by what is committed
// while a round of the thread holds SQLite's checkpoint lock.
inline constexpr int kWalLimitPages = 4 * kCheckpointPages;

// An explicit decision to give a revision host authority (R6).
struct Trust {
  std::string by;      // who: the OS user name, or what a caller passes
  std::string reason;  // what was trusted, e.g. "trusted-native taskyon.sha256"
};

struct TrustRecord {
  std::string by;
  std::string at;  // ISO 8601 UTC, ms
  std::string reason;
};

struct RevisionRecord {
  std::string id;          // "sha256:…"
  std::string name;
  std::string definition;  // RFC 8785 canonical JSON (the hashed bytes)
  std::string created_at;  // ISO 8601 UTC, ms
  registry::Manifest manifest;
  std::optional<TrustRecord> trust;  // set for revisions with host authority
};

struct Binding {
  std::int64_t seq = 0;      // order of activation, increasing
  std::string name;
  std::string revision;
  std::string activated_at;  // ISO 8601 UTC, ms
};

struct ToolSummary {
  std::string name;
  std::string active_revision;
  std::int64_t revisions = 0;  // revisions stored under the name
};

struct InstallResult {
  std::string id;
  std::string name;
  bool created = false;    // false: the revision was already stored (install is idempotent)
  bool activated = false;  // the name now points to this revision because of this install
  std::optional<std::string> active;  // the name's active revision after the install
};

enum class Activate { if_unbound, always };

// $TASKYON_HOME/taskyon.db; TASKYON_HOME defaults to $XDG_DATA_HOME/taskyon,
// else ~/.local/share/taskyon. Errc::io if HOME is unset too.
Result<std::string> default_db_path();

class Store {
 public:
  // Opens (creating if absent, with parent directories, the file mode 0600)
  // and migrates. A store the OS lets us only read is Errc::store naming the
  // path ("read-only"); many processes may open a new store at once.
  static Result<Store> open(const std::string& path);
  // For commands that only read: opens an existing, migrated store read-only
  // (a read-only file, directory or mount works); a missing or older store is
  // opened as open() does. Writes then fail as read-only, naming the path.
  static Result<Store> open_for_reading(const std::string& path);

  // Stores a validated manifest as a revision (idempotent by content) and, by
  // default, activates it when its name has no binding yet. A manifest that
  // gets host authority (registry::needs_trust) needs `trust`, which is
  // recorded (R6; Errc::bad_usage without it); a trusted-native manifest must
  // name a native function this host has (R5; Errc::invalid_manifest); every
  // module its `modules` names must be stored (store/modules.h code_modules).
  Result<InstallResult> install(const registry::Manifest& manifest, Activate activate = Activate::if_unbound,
                                const std::optional<Trust>& trust = std::nullopt);

  // Points `name` at `revision` (R3: only the binding changes). The revision
  // must be stored under that name (Errc::bad_usage otherwise).
  Result<Binding> activate(std::string_view name, std::string_view revision_ref);

  // Lookup by name (active binding), full id, or unique prefix of >= 12 hex
  // digits, with or without "sha256:" (R4). Errc::not_found, Errc::ambiguous
  // (the message lists the candidates), Errc::integrity if tampered.
  Result<RevisionRecord> resolve(std::string_view ref);
  Result<RevisionRecord> revision(std::string_view id);
  Result<std::optional<Binding>> active(std::string_view name);
  Result<std::vector<Binding>> history(std::string_view name);
  Result<std::vector<ToolSummary>> tools();

  // A resolver for the compiler, pinning tool and settings revisions (T1): the
  // revision `ref` resolves to, and the settings revision bound to its tool
  // name (settings.h; the empty settings revision when none is bound).
  tasks::ToolResolver resolver();

  // Stores tasks in one transaction. Each must pass tasks::check_invariants
  // (T3, T4); a task already stored under the same id is left as it is
  // (ids are content addresses). The parent must be stored or in the batch.
  Result<void> put_tasks(const std::vector<tasks::Task>& batch);
  // What a long-lived host's first stored call would otherwise do on its own
  // path (issue 19), on the calling thread's connection: prepares put_tasks'
  // statement without running it, has the clock read the time zone glibc
  // loads once (even for UTC), and commits one write (user_version set to
  // its own value), which starts the write-ahead log if it is empty: the WAL
  // header's fsync and the connection's first fsync of the store's directory
  // (SQLite) are paid here. Changes no stored value. Errors as put_tasks'
  // (Errc::store: a store busy past the busy limit, or not writable).
  Result<void> prepare_task_writes();
  Result<tasks::Task> task(std::string_view id_or_prefix);
  Result<std::vector<tasks::Task>> children(std::string_view id);
  // The task and its ancestors, root first, each verified (R2, T4).
  Result<std::vector<tasks::Task>> lineage(std::string_view id);
  // Tasks without a parent, oldest first.
  Result<std::vector<tasks::Task>> roots();
  // Names with an active binding, sorted.
  Result<std::vector<std::string>> active_names();

  // The calling thread's connection (see "Threads" above). A connection that
  // cannot be opened is returned broken: its exec/prepare give the error, and
  // the thread's next database() tries to open it again (the same object).
  sql::Database& database();
  // Sets the calling thread's connection aside, with its prepared statements;
  // the next thread without a connection of its own takes it instead of
  // opening one (the last parked first; at most 4 are kept, one that could
  // not be opened never). A thread's connections are parked this way when the
  // thread ends, too: threads that come and go (one per MCP call, one per
  // capability request) reuse connections instead of each opening one and
  // leaving it behind. park() hands it on before then (the long-lived host
  // gives back a call connection on a thread that lives on).
  void park();

  // Lending the calling thread's connection (issue 19). A call's capability
  // requests run on helper threads while the call's own thread waits for its
  // sandbox; with a connection each, every commit of one emptied the other's
  // page cache (SQLite drops a connection's cache when another changed the
  // WAL), and each call read its pages again (about 9 reads from disk).
  // lend() returns the calling thread's connection as a Loan; while a Borrow
  // of it lives, database() on the Borrow's thread returns the lent
  // connection for this Store. Not checked, the lender's to keep: the lending
  // thread does not use the store while a Borrow lives, Borrows of one Loan
  // do not overlap (invoke::HostCapabilities holds its lock around each), and
  // none outlives the lender's use of the Store. A thread holds one Borrow
  // at a time: one made inside another (of another Store's Loan) hides the
  // outer one until it ends.
  class Loan {
   public:
    Loan() = default;

   private:
    friend class Store;
    const void* owner_ = nullptr;  // the Store's Connections
    sql::Database* db_ = nullptr;
  };
  Loan lend();
  class Borrow {
   public:
    explicit Borrow(const Loan& loan);  // an empty Loan (default): borrows nothing
    ~Borrow();
    Borrow(const Borrow&) = delete;
    Borrow& operator=(const Borrow&) = delete;

   private:
    Loan previous_;
  };
  // The bound on waiting for a busy store (sql::Database::set_busy_limit), for
  // every connection of this Store, current and future. Default sql::kBusyRetryMs.
  void set_busy_limit(std::chrono::milliseconds limit);

  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;
  ~Store();

  // The full id in `column` of `table` ("revisions", "tasks" or
  // "settings_revisions" by their "id"; "tasks" by "tool_revision": the
  // revisions calls pinned, tree-defined ones too) that `ref` ("sha256:"
  // optional, >= 12 hex digits) is a prefix of. Errc::bad_usage for fewer
  // digits, not_found for none, ambiguous (listing up to 11 candidates) for several.
  Result<std::string> expand_prefix(std::string_view table, std::string_view ref, std::string_view column = "id");

  // The revision a filter of the logs (audit, sandbox log) names: a full id
  // as given (a tree-defined tool is in no registry table); else resolve()'s
  // answer; else, when resolve() finds nothing, the revision a stored call
  // pinned that `ref` is a prefix of (the short ids the log tables print).
  // Errors: resolve()'s; Errc::ambiguous from the pinned revisions.
  Result<std::string> logged_revision(std::string_view ref);

 private:
  struct Connections;
  Store(sql::Database db, sql::Access access);
  std::shared_ptr<Connections> conns_;  // shared: a thread's end finds them (store.cc)
};

}  // namespace taskyon::store
