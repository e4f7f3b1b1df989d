// The store's schema, as numbered migrations. A shipped migration is never
// edited; a change is a new migration. PRAGMA user_version holds the number of
// migrations applied. The database itself enforces the invariants (triggers),
// so a caller that bypasses the Store API cannot break them:
//   R2  revisions and bindings are append-only (no UPDATE, no DELETE)
//   R3  a binding names a revision of the same name
//   T3  a function call in state Completed has a tool revision
//   T4  tasks are append-only (ids are content hashes; the API checks them)
//   R6  a revision that gets host authority is stored only with a trust record
//   T1  settings revisions and their bindings are append-only
//   M16 only a revision with a trust record holds a popup permission
//       the audit log and the sandbox destruction log are append-only, but
//       for rows older than a prune permit written in the same transaction
//       store keys are created once (no UPDATE, no DELETE)
#pragma once

#include "taskyon/base/error.h"
#include "taskyon/store/sqlite.h"

namespace taskyon::store {

inline constexpr int kSchemaVersion = 6;

// Brings the database to kSchemaVersion, each step in its own transaction;
// safe when several processes migrate one new store at once.
// Errc::store if the file has a newer schema than this build knows.
Result<void> migrate(sql::Database& db);

// PRAGMA user_version; Errc::store if newer than kSchemaVersion.
Result<int> schema_version(sql::Database& db);

}  // namespace taskyon::store
