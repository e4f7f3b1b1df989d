// Secrets: values a tool revision may have the host put into a request header
// for one origin (issue 5 item 4), keyed by (revision, origin, name) (M17: a
// new revision inherits none). Tool code never receives a value: it writes a
// placeholder, and the fetch module substitutes the value only in a request
// to that origin that its grant allows.
//
// Values are stored as given in the database: the database file is the trust
// boundary (Store::open creates it mode 0600; anyone who can read the file can
// read the secrets). No function here returns values except secret_for, which
// the fetch module alone calls; listings carry names only.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taskyon/base/error.h"
#include "taskyon/store/store.h"

namespace taskyon::store {

// A name is ^[A-Za-z0-9_.-]{1,64}$ (it appears inside a placeholder).
bool is_valid_secret_name(std::string_view name);
// A value is 1 .. kMaxSecretBytes bytes without CR, LF or NUL: it becomes part
// of a header field value (RFC 9110 §5.5 forbids CR, LF and NUL there).
inline constexpr std::size_t kMaxSecretBytes = 8192;

struct SecretInfo {  // never the value
  std::string revision;
  std::string tool;
  std::string origin;
  std::string name;
  std::string set_by;
  std::string set_at;  // ISO 8601 UTC, ms
};

// Sets (or replaces) a secret. Errc::bad_usage for a bad name, value or
// non-canonical origin (origin.h); Errc::not_found for an unknown revision.
Result<SecretInfo> set_secret(Store& store, std::string_view revision, std::string_view origin,
                              std::string_view name, std::string_view value, std::string_view set_by);
// True if a secret was removed; deleting an absent secret succeeds (false).
Result<bool> delete_secret(Store& store, std::string_view revision, std::string_view origin, std::string_view name);
// Names of all secrets, or of one revision's; by revision, origin, name.
Result<std::vector<SecretInfo>> secret_names(Store& store, std::optional<std::string_view> revision = std::nullopt);
// The value for exactly (revision, origin, name), or nullopt.
Result<std::optional<std::string>> secret_for(Store& store, std::string_view revision, std::string_view origin,
                                              std::string_view name);

}  // namespace taskyon::store
