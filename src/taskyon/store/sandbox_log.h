// Sandbox destruction records (S3-S6): every destroyed sandbox, from every
// tycli process sharing the store, so `tycli sandbox log` can show why each
// one ended. Append-only (the database refuses UPDATE, and DELETE but of
// records older than a prune permit: prune_destructions()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taskyon/base/error.h"
#include "taskyon/store/store.h"

namespace taskyon::store {

struct Destruction {
  std::int64_t seq = 0;    // increasing
  std::string at;          // ISO 8601 UTC, ms
  std::string revision;    // the sandbox's revision "sha256:…"
  std::string tool;        // its tool name
  std::string reason;      // e.g. "timeout", "revision changed", "evicted (LRU)"
  std::int64_t pid = 0;    // the sandbox child's pid
};

// Appends a record stamped now.
Result<Destruction> record_destruction(Store& store, std::string_view revision, std::string_view tool,
                                       std::string_view reason, std::int64_t pid);

// The most recent `limit` records (0: all), optionally of one revision, oldest first.
Result<std::vector<Destruction>> destructions(Store& store, std::size_t limit = 100,
                                              const std::optional<std::string>& revision = std::nullopt);

// Removes the records older than `before` (a stored time stamp, see
// store::parse_since; exclusive). Returns how many were removed.
Result<std::int64_t> prune_destructions(Store& store, std::string_view before);

}  // namespace taskyon::store
