#include "taskyon/store/schema.h"

#include <array>
#include <string_view>

#include <fmt/format.h>

namespace taskyon::store {
namespace {

constexpr std::string_view kMigration1 = R"sql(
CREATE TABLE revisions (
  id          TEXT PRIMARY KEY CHECK (id GLOB 'sha256:*' AND length(id) = 71),
  name        TEXT NOT NULL,
  execution   TEXT NOT NULL CHECK (execution IN ('sandboxed-code', 'trusted-native', 'external-service')),
  definition  TEXT NOT NULL,  -- RFC 8785 canonical JSON; id = sha256 over these bytes
  created_at  TEXT NOT NULL
);
CREATE INDEX revisions_by_name ON revisions(name);

CREATE TABLE bindings (
  seq          INTEGER PRIMARY KEY AUTOINCREMENT,
  name         TEXT NOT NULL,
  revision     TEXT NOT NULL REFERENCES revisions(id),
  activated_at TEXT NOT NULL
);
CREATE INDEX bindings_by_name ON bindings(name, seq);

CREATE TABLE tasks (
  id                TEXT PRIMARY KEY CHECK (id GLOB 'sha256:*' AND length(id) = 71),
  parent_id         TEXT REFERENCES tasks(id),
  role              TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
  kind              TEXT NOT NULL CHECK (kind IN ('message', 'functionCall', 'toolResult', 'toolDefinition')),
  content           TEXT NOT NULL,  -- RFC 8785 canonical JSON
  state             TEXT NOT NULL CHECK (state IN ('Open', 'Queued', 'In Progress', 'Completed', 'Cancelled', 'Error')),
  tool_revision     TEXT,
  settings_revision TEXT,
  created_at        TEXT NOT NULL
);
CREATE INDEX tasks_by_parent ON tasks(parent_id);

CREATE TRIGGER revisions_no_update BEFORE UPDATE ON revisions
BEGIN SELECT RAISE(ABORT, 'R2: stored revisions are immutable'); END;
CREATE TRIGGER revisions_no_delete BEFORE DELETE ON revisions
BEGIN SELECT RAISE(ABORT, 'R2: stored revisions are immutable'); END;
CREATE TRIGGER bindings_no_update BEFORE UPDATE ON bindings
BEGIN SELECT RAISE(ABORT, 'R3: binding history is append-only'); END;
CREATE TRIGGER bindings_no_delete BEFORE DELETE ON bindings
BEGIN SELECT RAISE(ABORT, 'R3: binding history is append-only'); END;
CREATE TRIGGER bindings_same_name BEFORE INSERT ON bindings
WHEN (SELECT name FROM revisions WHERE id = NEW.revision) IS NOT NEW.name
BEGIN SELECT RAISE(ABORT, 'R3: a binding must name a revision of the same tool name'); END;
CREATE TRIGGER tasks_no_update BEFORE UPDATE ON tasks
BEGIN SELECT RAISE(ABORT, 'T4: stored tasks are immutable'); END;
CREATE TRIGGER tasks_no_delete BEFORE DELETE ON tasks
BEGIN SELECT RAISE(ABORT, 'T4: stored tasks are immutable'); END;
CREATE TRIGGER tasks_call_pinned BEFORE INSERT ON tasks
WHEN NEW.kind = 'functionCall' AND NEW.state = 'Completed' AND NEW.tool_revision IS NULL
BEGIN SELECT RAISE(ABORT, 'T3: a completed function call must be pinned to a tool revision'); END;
)sql";

// Labels of a task (part of its identity): a canonical JSON array of strings.
constexpr std::string_view kMigration2 = R"sql(
ALTER TABLE tasks ADD COLUMN labels TEXT NOT NULL DEFAULT '[]';
)sql";

// Who trusted a revision that runs with host authority (R6), and when.
constexpr std::string_view kMigration3 = R"sql(
CREATE TABLE trust (
  revision   TEXT PRIMARY KEY CHECK (revision GLOB 'sha256:*' AND length(revision) = 71),
  trusted_by TEXT NOT NULL CHECK (length(trusted_by) > 0),
  trusted_at TEXT NOT NULL,
  reason     TEXT NOT NULL
);
CREATE TRIGGER trust_no_update BEFORE UPDATE ON trust
BEGIN SELECT RAISE(ABORT, 'R6: trust records are immutable'); END;
CREATE TRIGGER trust_no_delete BEFORE DELETE ON trust
BEGIN SELECT RAISE(ABORT, 'R6: trust records are immutable'); END;
CREATE TRIGGER revisions_trust_required BEFORE INSERT ON revisions
WHEN (NEW.execution = 'trusted-native'
      OR (NEW.execution = 'external-service' AND json_extract(NEW.definition, '$.service.mcp') IS NOT NULL))
  AND NOT EXISTS (SELECT 1 FROM trust WHERE revision = NEW.id)
BEGIN SELECT RAISE(ABORT, 'R6: a revision that runs with host authority needs a trust record'); END;
)sql";

// Issue 5 (DESIGN §6): what a revision is granted, its secrets, the audit log,
// per-tool storage, settings revisions, popup permissions and sandbox
// destructions. Grants, secrets and popup permissions name one revision
// (M8, M16, M17): a new revision under the same name inherits nothing.
// Storage data is keyed by tool name, so it outlives a revision (S7), but is
// reachable only through a storage grant of the calling revision.
constexpr std::string_view kMigration4 = R"sql(
CREATE TABLE fetch_grants (
  revision   TEXT NOT NULL REFERENCES revisions(id),
  origin     TEXT NOT NULL CHECK (origin GLOB 'https://?*' AND instr(substr(origin, 9), '/') = 0),
  access     TEXT NOT NULL CHECK (access IN ('read', 'write')),
  limits     TEXT NOT NULL DEFAULT '{}',  -- RFC 8785 canonical JSON object
  granted_by TEXT NOT NULL CHECK (length(granted_by) > 0),
  granted_at TEXT NOT NULL,
  PRIMARY KEY (revision, origin, access)
) WITHOUT ROWID;

CREATE TABLE storage_grants (
  revision   TEXT PRIMARY KEY REFERENCES revisions(id),
  granted_by TEXT NOT NULL CHECK (length(granted_by) > 0),
  granted_at TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE storage_items (
  tool       TEXT NOT NULL,  -- tool name, not revision: storage is durable across revisions (S7)
  key        TEXT NOT NULL CHECK (length(key) > 0),
  value      TEXT NOT NULL,  -- RFC 8785 canonical JSON
  updated_at TEXT NOT NULL,
  PRIMARY KEY (tool, key)
) WITHOUT ROWID;

CREATE TABLE secrets (
  revision TEXT NOT NULL REFERENCES revisions(id),
  origin   TEXT NOT NULL CHECK (origin GLOB 'https://?*' AND instr(substr(origin, 9), '/') = 0),
  name     TEXT NOT NULL,
  value    TEXT NOT NULL,  -- as given: the database file is the trust boundary
  set_by   TEXT NOT NULL CHECK (length(set_by) > 0),
  set_at   TEXT NOT NULL,
  PRIMARY KEY (revision, origin, name)
) WITHOUT ROWID;

CREATE TABLE audit_log (
  seq        INTEGER PRIMARY KEY AUTOINCREMENT,
  at         TEXT NOT NULL,
  revision   TEXT NOT NULL,  -- the channel's revision; tree-defined tools are not in `revisions`
  capability TEXT NOT NULL CHECK (length(capability) > 0),
  target     TEXT NOT NULL,
  access     TEXT NOT NULL CHECK (access IN ('', 'read', 'write')),
  verdict    TEXT NOT NULL CHECK (verdict IN ('allow', 'deny')),
  reason     TEXT NOT NULL,
  task       TEXT
);
CREATE INDEX audit_by_time ON audit_log(at);
CREATE INDEX audit_by_revision ON audit_log(revision, seq);
CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit: the audit log is append-only'); END;
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit: the audit log is append-only'); END;

CREATE TABLE settings_revisions (
  id         TEXT PRIMARY KEY CHECK (id GLOB 'sha256:*' AND length(id) = 71),
  value      TEXT NOT NULL,  -- RFC 8785 canonical JSON object; id = sha256 over these bytes
  created_at TEXT NOT NULL
);
CREATE TABLE settings_bindings (
  seq      INTEGER PRIMARY KEY AUTOINCREMENT,
  name     TEXT NOT NULL,
  settings TEXT NOT NULL REFERENCES settings_revisions(id),
  bound_at TEXT NOT NULL
);
CREATE INDEX settings_bindings_by_name ON settings_bindings(name, seq);
CREATE TRIGGER settings_revisions_no_update BEFORE UPDATE ON settings_revisions
BEGIN SELECT RAISE(ABORT, 'T1: stored settings revisions are immutable'); END;
CREATE TRIGGER settings_revisions_no_delete BEFORE DELETE ON settings_revisions
BEGIN SELECT RAISE(ABORT, 'T1: stored settings revisions are immutable'); END;
CREATE TRIGGER settings_bindings_no_update BEFORE UPDATE ON settings_bindings
BEGIN SELECT RAISE(ABORT, 'T1: settings binding history is append-only'); END;
CREATE TRIGGER settings_bindings_no_delete BEFORE DELETE ON settings_bindings
BEGIN SELECT RAISE(ABORT, 'T1: settings binding history is append-only'); END;

CREATE TABLE popup_permissions (
  revision   TEXT NOT NULL REFERENCES revisions(id),
  target     TEXT NOT NULL CHECK (target = 'custom-html'
                                  OR (target GLOB 'https://?*' AND instr(substr(target, 9), '/') = 0)),
  granted_by TEXT NOT NULL CHECK (length(granted_by) > 0),
  granted_at TEXT NOT NULL,
  PRIMARY KEY (revision, target)
) WITHOUT ROWID;
CREATE TRIGGER popup_needs_trust BEFORE INSERT ON popup_permissions
WHEN NOT EXISTS (SELECT 1 FROM trust WHERE revision = NEW.revision)
BEGIN SELECT RAISE(ABORT, 'M16: only a trusted host tool revision may hold a popup permission'); END;

CREATE TABLE sandbox_destructions (
  seq      INTEGER PRIMARY KEY AUTOINCREMENT,
  at       TEXT NOT NULL,
  revision TEXT NOT NULL,
  tool     TEXT NOT NULL,
  reason   TEXT NOT NULL,
  pid      INTEGER NOT NULL
);
CREATE INDEX sandbox_destructions_by_revision ON sandbox_destructions(revision, seq);
CREATE TRIGGER sandbox_destructions_no_update BEFORE UPDATE ON sandbox_destructions
BEGIN SELECT RAISE(ABORT, 'sandbox log: destruction records are append-only'); END;
CREATE TRIGGER sandbox_destructions_no_delete BEFORE DELETE ON sandbox_destructions
BEGIN SELECT RAISE(ABORT, 'sandbox log: destruction records are append-only'); END;
)sql";

// Issue 12: the store's own keys (the settings identities tools see, M15),
// who made a tool-made task (its creating call and revision, part of its
// identity), and pruning of the audit and sandbox logs: a DELETE is refused
// unless a prune permit, written in the same transaction by store::prune_*,
// covers the row's time.
constexpr std::string_view kMigration5 = R"sql(
CREATE TABLE store_keys (
  name       TEXT PRIMARY KEY,
  value      TEXT NOT NULL CHECK (length(value) = 64),  -- hex of 32 random bytes; never printed
  created_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE TRIGGER store_keys_no_update BEFORE UPDATE ON store_keys
BEGIN SELECT RAISE(ABORT, 'store keys are created once'); END;
CREATE TRIGGER store_keys_no_delete BEFORE DELETE ON store_keys
BEGIN SELECT RAISE(ABORT, 'store keys are created once'); END;

ALTER TABLE tasks ADD COLUMN created_by TEXT;  -- canonical JSON {"revision","task"}; NULL: not tool-made

CREATE TABLE prune_permits (
  log    TEXT PRIMARY KEY CHECK (log IN ('audit_log', 'sandbox_destructions')),
  before TEXT NOT NULL
) WITHOUT ROWID;
DROP TRIGGER audit_no_delete;
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit_log
WHEN NOT EXISTS (SELECT 1 FROM prune_permits WHERE log = 'audit_log' AND OLD.at < before)
BEGIN SELECT RAISE(ABORT, 'audit: the audit log is append-only; old rows leave only by tycli audit prune'); END;
DROP TRIGGER sandbox_destructions_no_delete;
CREATE TRIGGER sandbox_destructions_no_delete BEFORE DELETE ON sandbox_destructions
WHEN NOT EXISTS (SELECT 1 FROM prune_permits WHERE log = 'sandbox_destructions' AND OLD.at < before)
BEGIN SELECT RAISE(ABORT, 'sandbox log: destruction records are append-only; old ones leave only by prune'); END;
)sql";

// Issue 17: modules (modules/module.h), immutable like revisions (R2): a
// module's record and its files, each stored under the content id of its
// bytes and re-hashed on read (store/modules.h). And for every immutable
// table, a guard against INSERT OR REPLACE (below).
constexpr std::string_view kMigration6 = R"sql(
CREATE TABLE modules (
  id         TEXT PRIMARY KEY CHECK (id GLOB 'sha256:*' AND length(id) = 71),
  name       TEXT NOT NULL,
  version    TEXT NOT NULL,
  record     TEXT NOT NULL,  -- RFC 8785 canonical JSON; id = sha256 over these bytes
  created_at TEXT NOT NULL
);
CREATE INDEX modules_by_name ON modules(name);
CREATE TABLE module_files (
  id      TEXT PRIMARY KEY CHECK (id GLOB 'sha256:*' AND length(id) = 71),
  content TEXT NOT NULL  -- the file's bytes (UTF-8 text); id = sha256 over them
) WITHOUT ROWID;
CREATE TRIGGER modules_no_update BEFORE UPDATE ON modules
BEGIN SELECT RAISE(ABORT, 'R2: stored modules are immutable'); END;
CREATE TRIGGER modules_no_delete BEFORE DELETE ON modules
BEGIN SELECT RAISE(ABORT, 'R2: stored modules are immutable'); END;
CREATE TRIGGER module_files_no_update BEFORE UPDATE ON module_files
BEGIN SELECT RAISE(ABORT, 'R2: stored module files are immutable'); END;
CREATE TRIGGER module_files_no_delete BEFORE DELETE ON module_files
BEGIN SELECT RAISE(ABORT, 'R2: stored module files are immutable'); END;

-- INSERT OR REPLACE of a row that exists deletes it without firing DELETE
-- triggers (unless the connection turned recursive_triggers on), so every
-- immutable or append-only table also ignores an insert of a key it holds:
-- a REPLACE changes nothing, ON CONFLICT DO NOTHING stays what it was.
CREATE TRIGGER revisions_no_replace BEFORE INSERT ON revisions WHEN EXISTS (SELECT 1 FROM revisions WHERE id = NEW.id)
BEGIN SELECT RAISE(IGNORE); END;
CREATE TRIGGER bindings_no_replace BEFORE INSERT ON bindings WHEN EXISTS (SELECT 1 FROM bindings WHERE seq = NEW.seq)
BEGIN SELECT RAISE(IGNORE); END;
CREATE TRIGGER tasks_no_replace BEFORE INSERT ON tasks WHEN EXISTS (SELECT 1 FROM tasks WHERE id = NEW.id)
BEGIN SELECT RAISE(IGNORE); END;
CREATE TRIGGER trust_no_replace BEFORE INSERT ON trust WHEN EXISTS (SELECT 1 FROM trust WHERE revision = NEW.revision)
BEGIN SELECT RAISE(IGNORE); END;
CREATE TRIGGER audit_log_no_replace BEFORE INSERT ON audit_log WHEN EXISTS (SELECT 1 FROM audit_log WHERE seq = NEW.seq)
BEGIN SELECT RAISE(IGNORE); END;
CREATE TRIGGER settings_revisions_no_replace BEFORE INSERT ON settings_revisions WHEN EXISTS (SELECT 1 FROM settings_revisions WHERE id = NEW.id)
BEGIN SELECT RAISE(IGNORE); END;
CREATE TRIGGER settings_bindings_no_replace BEFORE INSERT ON settings_bindings WHEN EXISTS (SELECT 1 FROM settings_bindings WHERE seq = NEW.seq)
BEGIN SELECT RAISE(IGNORE); END;
CREATE TRIGGER sandbox_destructions_no_replace BEFORE INSERT ON sandbox_destructions WHEN EXISTS (SELECT 1 FROM sandbox_destructions WHERE seq = NEW.seq)
BEGIN SELECT RAISE(IGNORE); END;
CREATE TRIGGER store_keys_no_replace BEFORE INSERT ON store_keys WHEN EXISTS (SELECT 1 FROM store_keys WHERE name = NEW.name)
BEGIN SELECT RAISE(IGNORE); END;
CREATE TRIGGER modules_no_replace BEFORE INSERT ON modules WHEN EXISTS (SELECT 1 FROM modules WHERE id = NEW.id)
BEGIN SELECT RAISE(IGNORE); END;
CREATE TRIGGER module_files_no_replace BEFORE INSERT ON module_files WHEN EXISTS (SELECT 1 FROM module_files WHERE id = NEW.id)
BEGIN SELECT RAISE(IGNORE); END;
)sql";

constexpr std::array<std::string_view, kSchemaVersion> kMigrations = {kMigration1, kMigration2, kMigration3, kMigration4,
                                                                      kMigration5, kMigration6};

}  // namespace

Result<int> schema_version(sql::Database& db) {
  auto stmt = db.prepare("PRAGMA user_version");
  if (!stmt) return std::unexpected(stmt.error());
  auto row = stmt->step();
  if (!row) return std::unexpected(row.error());
  const auto version = static_cast<int>(stmt->integer(0));
  stmt->reset();  // no read may stay open across the write lock below
  if (version > kSchemaVersion)
    return fail(Errc::store,
                fmt::format("the store's schema version {} is newer than this tycli knows ({}); use a newer tycli",
                            version, kSchemaVersion),
                db.path());
  return version;
}

Result<void> migrate(sql::Database& db) {
  for (;;) {
    auto seen = schema_version(db);
    if (!seen) return std::unexpected(seen.error());
    if (*seen == kSchemaVersion) return {};
    // Another process may be migrating the same new store: the version is
    // read again under the write lock, and each step applied exactly once.
    auto tx = sql::Transaction::begin(db);
    if (!tx) return std::unexpected(tx.error());
    auto v = schema_version(db);
    if (!v) return std::unexpected(v.error());
    if (*v < kSchemaVersion) {
      if (auto r = db.exec(kMigrations[static_cast<std::size_t>(*v)]); !r) return r;
      if (auto r = db.exec(fmt::format("PRAGMA user_version = {}", *v + 1)); !r) return r;
    }
    if (auto r = tx->commit(); !r) return r;
  }
}

}  // namespace taskyon::store
