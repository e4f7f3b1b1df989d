// Popup permissions (M16): in the browser, workers cannot open windows; a
// trusted host tool revision (one with a trust record, R6) may open a
// host-owned window only for a target it holds a permission for: exactly
// "custom-html" (a window showing the tool's own HTML) or one exact https
// origin (origin.h). Matching is exact: a sub-origin, another port, http or a
// URL with a path never matches. Keyed by revision (M17).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taskyon/base/error.h"
#include "taskyon/store/store.h"

namespace taskyon::store {

struct PopupPermission {
  std::string revision;
  std::string tool;
  std::string target;  // "custom-html" or "https://host[:port]"
  std::string granted_by;
  std::string granted_at;  // ISO 8601 UTC, ms
};

// Records (or re-records) a permission. Errc::bad_usage if the target is not
// exactly "custom-html" or a canonical https origin, or if the revision has no
// host authority (no trust record); Errc::not_found for an unknown revision.
Result<PopupPermission> grant_popup(Store& store, std::string_view revision, std::string_view target,
                                    std::string_view granted_by);
// True if a permission was removed; revoking an absent one succeeds (false).
Result<bool> revoke_popup(Store& store, std::string_view revision, std::string_view target);
Result<std::vector<PopupPermission>> popup_permissions(Store& store,
                                                       std::optional<std::string_view> revision = std::nullopt);

struct PopupDecision {
  bool allowed = false;
  std::string reason;  // one sentence: which rule decided
};

// The check the browser host calls before opening a window: allowed only if
// (revision, target) is recorded exactly. Every check is written to the audit
// log (capability "popup"). `task`: the call task, if known.
Result<PopupDecision> check_popup(Store& store, std::string_view revision, std::string_view target,
                                  const std::optional<std::string>& task = std::nullopt);
// check_popup(...).allowed.
Result<bool> popup_allowed(Store& store, std::string_view revision, std::string_view target);

}  // namespace taskyon::store
