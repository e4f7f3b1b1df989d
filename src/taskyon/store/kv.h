// Tool storage (S7): a small key/value store per tool NAME, reachable only by
// a revision holding a storage grant (grants.h). Keyed by name so that data
// outlives a revision (retained sandbox state is not durable, storage is);
// gated per revision so that a new revision sees it only once it is granted
// too (M17). Every operation is a capability decision and is written to the
// audit log (audit.h) as "storage.get|set|delete|list", target the key (the
// prefix for list), access read (get, list) or write (set, delete).
//
// Refusals are outcomes (outcome.h): `denied` without a grant, `invalid_request`
// for a key that is empty or not UTF-8, or a value RFC 8785 cannot represent,
// `too_large` past a quota. An Error means the database failed.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taskyon/base/error.h"
#include "taskyon/json/json.h"
#include "taskyon/store/outcome.h"
#include "taskyon/store/store.h"

namespace taskyon::store {

struct StorageQuota {
  std::size_t max_key_bytes = 256;          // UTF-8 bytes of one key
  std::size_t max_value_bytes = 64 * 1024;  // RFC 8785 canonical bytes of one value
  std::size_t max_keys = 1000;              // keys per tool name
  std::size_t max_total_bytes = 1u << 20;   // sum of key + canonical value bytes per tool name
};

// The value under `key`, or nullopt if there is none.
Result<Outcome<std::optional<json::Value>>> storage_get(Store& store, const Caller& caller, std::string_view key,
                                                        const StorageQuota& quota = {});
// Stores `value` (any JSON value, canonicalized) under `key`, replacing an old one.
Result<Outcome<void>> storage_set(Store& store, const Caller& caller, std::string_view key, const json::Value& value,
                                  const StorageQuota& quota = {});
// True if a value was removed.
Result<Outcome<bool>> storage_delete(Store& store, const Caller& caller, std::string_view key,
                                     const StorageQuota& quota = {});
// Keys starting with `prefix` (bytewise), sorted bytewise; "" lists all.
Result<Outcome<std::vector<std::string>>> storage_list(Store& store, const Caller& caller, std::string_view prefix);

}  // namespace taskyon::store
