// The audit log: one row per capability decision (DESIGN §6: "every decision
// is written to an audit log"), append-only (the database refuses UPDATE, and
// DELETE but of rows older than a prune permit: prune_audit()).
// Bounded (issue 12.7): a target or reason longer than kMaxAuditText bytes is
// kept as its first kAuditTextPrefix bytes (whole UTF-8 characters), "…",
// and "sha256:" + the hex SHA-256 of the whole text; HostCapabilities writes
// at most kMaxAuditRowsPerCall refusals per call, then one row "N more refused".
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

inline constexpr std::size_t kMaxAuditText = 512;     // bytes of a stored target or reason
inline constexpr std::size_t kAuditTextPrefix = 160;  // bytes kept of a longer one, before its hash

// `text` as stored: itself when at most kMaxAuditText bytes, else its prefix,
// " … (N bytes, sha256:HEX)". append_audit applies it to target and reason.
std::string bounded_audit_text(std::string_view text);

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

// Removes the rows older than `before` (a stored time stamp, parse_since;
// exclusive) and appends one row recording the prune (capability
// "audit.prune", revision "host"). Returns how many rows were removed.
Result<std::int64_t> prune_audit(Store& store, std::string_view before);

namespace detail {
// The prune of one append-only log table ("audit_log", "sandbox_destructions").
Result<std::int64_t> prune_log(Store& store, std::string_view log, std::string_view before);
}  // namespace detail

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
