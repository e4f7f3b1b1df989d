// Per-tool settings revisions (DESIGN §2, M15, T1). A settings object is a
// JSON object, content-addressed like a manifest: its settings revision is
// "sha256:" + hex SHA-256 of its RFC 8785 canonical form, so the empty object
// is registry::empty_settings_revision(). Settings revisions are immutable;
// a tool NAME is bound to one, with the history kept (like tool bindings).
// The compiler pins the name's bound settings revision into every call (T1,
// through Store::resolver()); a name never bound has the empty settings.
// Tool code never sees a settings revision: it sees settings_identity(),
// an HMAC keyed by a per-store secret (M15, docs/grants.md); the host reads
// the value by revision (settings_value).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "taskyon/base/error.h"
#include "taskyon/json/json.h"
#include "taskyon/store/store.h"

namespace taskyon::store {

inline constexpr std::size_t kMaxSettingsBytes = 256 * 1024;  // canonical bytes of one settings object

struct SettingsBinding {
  std::int64_t seq = 0;  // order of binding, increasing
  std::string name;
  std::string revision;  // settings revision "sha256:…"
  std::string bound_at;  // ISO 8601 UTC, ms
};

struct SettingsSetResult {
  std::string revision;
  bool created = false;  // false: this settings object was already stored
  bool bound = false;    // false: the name was already bound to it (nothing appended)
};

// Stores `settings` (a JSON object, at most kMaxSettingsBytes canonical) and
// binds `name` to it. Errc::bad_usage if it is not an object or too large, or
// the name is not a valid tool name; Errc::not_found if no tool revision is
// stored under `name` (install the tool first: settings for a mistyped name
// would silently apply to nothing); Errc::not_canonical for values RFC 8785
// cannot represent.
Result<SettingsSetResult> set_settings(Store& store, std::string_view name, const json::Value& settings);

// The settings revision bound to `name` (verified like settings_value), or
// registry::empty_settings_revision() when the name was never bound.
Result<std::string> settings_revision_for(Store& store, std::string_view name);

// The settings object of a settings revision, verified against its id (R2:
// Errc::integrity if tampered); the empty settings revision is {} whether
// stored or not. Errc::not_found for an unknown id.
Result<json::Value> settings_value(Store& store, std::string_view revision);

// What tool code is shown in place of `settings_revision` pinned with
// `tool_revision` (resolveInvocation, the tasks createSubtasksResult returns):
// "hmac-sha256:" + 64 hex of HMAC-SHA256, keyed by this store's identity key,
// over "taskyon settings identity v1", the tool revision and the settings
// revision. Stable within a store; different for the same settings under
// another tool revision; without the key (32 random bytes made once per store
// by RAND_bytes, kept in the database, never printed) nobody can check a
// guess of the settings against it. Errc::store if the key cannot be made.
inline constexpr std::string_view kSettingsIdentityPrefix = "hmac-sha256:";
Result<std::string> settings_identity(Store& store, std::string_view tool_revision, std::string_view settings_revision);

// The same for a task id and a tool revision (labels "taskyon task identity
// v1" and "taskyon revision identity v1"): every task id in a call's subtree
// hashes the call's settings revision, and a revision id is a plain hash of
// its manifest, so either shown as it is would let a tool confirm a guess of
// settings or of another tool's code (M14, M15, docs/grants.md).
Result<std::string> task_identity(Store& store, std::string_view task_id);
Result<std::string> revision_identity(Store& store, std::string_view revision);

// The name's binding history, oldest first (empty if never bound).
Result<std::vector<SettingsBinding>> settings_history(Store& store, std::string_view name);

}  // namespace taskyon::store
