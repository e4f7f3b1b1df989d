// The audit log: one row per capability decision (DESIGN §6: "every decision
// is written to an audit log"), append-only (the database refuses UPDATE and
// DELETE by trigger). Rows are never pruned by tycli.
//
// capability: "fetch", "storage.get", "storage.set", "storage.delete",
// "storage.list", "resolveInvocation", "createSubtasksResult", "popup", …
// target: the origin (fetch), the key or prefix (storage), the tool name
// (resolveInvocation), "custom-html" or the origin (popup).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taskyon/base/error.h"
#include "taskyon/capability/policy.h"
#include "taskyon/store/store.h"

namespace taskyon::store {

struct AuditEntry {
  std::int64_t seq = 0;    // set by append, increasing
  std::string at;          // set by append: ISO 8601 UTC, ms
  std::string revision;    // the channel's revision (M3)
  std::string capability;  // non-empty
  std::string target;
  std::string access;      // "read", "write", or "" when the capability has no access class
  capability::Verdict verdict = capability::Verdict::deny;
  std::string reason;      // one sentence: which rule decided
  std::optional<std::string> task;  // the call task being run, if known
};

// Appends `entry` (its seq and at are ignored and set here) and returns it as
// stored. Errc::bad_usage for an empty capability or an access class other
// than "", "read", "write".
Result<AuditEntry> append_audit(Store& store, AuditEntry entry);

struct AuditQuery {
  std::optional<std::string> since;     // ISO 8601 UTC as stored (see parse_since); inclusive
  std::optional<std::string> revision;  // full id
  std::size_t limit = 100;              // the most recent `limit` rows; 0: all
};

// Matching rows, oldest first.
Result<std::vector<AuditEntry>> query_audit(Store& store, const AuditQuery& query);

// A --since argument as a stored time stamp ("2026-11-29T18:18:36.123Z"):
// an ISO 8601 UTC date or date-time ("2026-11-29", "2026-11-29T18:18Z",
// "2026-11-29T18:18:36Z", "2026-11-29T18:18:36.123Z"; a time needs the "Z"),
// or a duration before `now`: a positive integer and s, m, h or d ("10m",
// "2h", "1d"). Errc::bad_usage otherwise.
Result<std::string> parse_since(std::string_view text,
                                std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

// A time point as stored: ISO 8601 UTC with milliseconds.
std::string iso8601(std::chrono::system_clock::time_point t);

}  // namespace taskyon::store
