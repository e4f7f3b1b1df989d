// Grants: what one tool revision may do outside its sandbox (DESIGN §6).
//
// A grant names one exact revision ("sha256:…", which must be stored:
// Errc::not_found otherwise), never a tool name: a new revision under the same
// name inherits nothing (M17). Kinds:
//   fetch    (revision, origin, access class) (M8). The origin is canonical
//            (origin.h); the access class is read (GET, HEAD, OPTIONS) or
//            write (every other allowed method), and a grant is for exactly
//            one class: write does not imply read. Optional per-grant limits.
//   storage  (revision): the revision may use its tool name's key/value store
//            (kv.h, S7).
// Grants are mutable policy: grant is an upsert (granting again replaces the
// limits and records the new who/when), revoke deletes and is idempotent
// (revoking what is not granted succeeds and reports that nothing changed).
// Functions, not Store methods, so the store's core stays about revisions and
// tasks; all take the Store they act on.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taskyon/base/error.h"
#include "taskyon/capability/policy.h"
#include "taskyon/json/json.h"
#include "taskyon/store/store.h"

namespace taskyon::store {

using capability::Access;

// Per-grant fetch limits; an absent field means the fetch module's default.
// JSON form (unknown members refused; each a positive integer up to its
// maximum): {"connect_timeout_ms", "total_timeout_ms", "max_response_bytes",
// "max_request_bytes"}.
struct FetchLimits {
  std::optional<std::int64_t> connect_timeout_ms;  // 1 .. 600000 (10 min)
  std::optional<std::int64_t> total_timeout_ms;    // 1 .. 3600000 (1 h)
  std::optional<std::int64_t> max_response_bytes;  // 1 .. 2^30 (1 GiB)
  std::optional<std::int64_t> max_request_bytes;   // 1 .. 2^30 (1 GiB)

  bool operator==(const FetchLimits&) const = default;
};

// Errc::bad_usage naming the member (JSON pointer in `where`).
Result<FetchLimits> parse_fetch_limits(const json::Value& value);
json::Value fetch_limits_json(const FetchLimits& limits);  // only the fields that are set

struct FetchGrant {
  std::string revision;
  std::string tool;  // the revision's tool name, for people
  std::string origin;
  Access access = Access::read;
  FetchLimits limits;
  std::string granted_by;
  std::string granted_at;  // ISO 8601 UTC, ms
};

struct StorageGrant {
  std::string revision;
  std::string tool;
  std::string granted_by;
  std::string granted_at;
};

// The stored, verified revision a grant, secret or permission names: a full id
// ("sha256:" + 64 hex; Errc::bad_usage for names and prefixes, which callers
// resolve first with Store::resolve), Errc::not_found if it is not stored.
Result<RevisionRecord> require_revision(Store& store, std::string_view revision);

// Records (or replaces) a fetch grant. Errc::bad_usage for a non-canonical
// origin or access class reject; Errc::not_found for an unknown revision.
Result<FetchGrant> grant_fetch(Store& store, std::string_view revision, std::string_view origin, Access access,
                               const FetchLimits& limits, std::string_view granted_by);
// True if a grant was removed, false if there was none.
Result<bool> revoke_fetch(Store& store, std::string_view revision, std::string_view origin, Access access);
// The grant's limits if (revision, origin, access) is granted, exactly: no
// other origin, port or access class answers (M8). What the fetch module asks.
Result<std::optional<FetchLimits>> fetch_grant_for(Store& store, std::string_view revision, std::string_view origin,
                                                   Access access);
// All fetch grants, or those of one revision; by revision, origin, access.
Result<std::vector<FetchGrant>> fetch_grants(Store& store, std::optional<std::string_view> revision = std::nullopt);

Result<StorageGrant> grant_storage(Store& store, std::string_view revision, std::string_view granted_by);
Result<bool> revoke_storage(Store& store, std::string_view revision);
Result<bool> has_storage_grant(Store& store, std::string_view revision);
Result<std::vector<StorageGrant>> storage_grants(Store& store,
                                                 std::optional<std::string_view> revision = std::nullopt);

}  // namespace taskyon::store
