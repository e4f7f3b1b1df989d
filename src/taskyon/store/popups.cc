#include "taskyon/store/popups.h"

#include <fmt/format.h>

#include "taskyon/store/audit.h"
#include "taskyon/store/clock.h"
#include "taskyon/store/grants.h"
#include "taskyon/store/origin.h"

namespace taskyon::store {

Result<PopupPermission> grant_popup(Store& store, std::string_view revision, std::string_view target,
                                    std::string_view granted_by) {
  if (auto ok = require_popup_target(target); !ok) return std::unexpected(ok.error());
  if (granted_by.empty()) return fail(Errc::bad_usage, "a permission records who made it: granted_by is empty");
  auto rev = require_revision(store, revision);
  if (!rev) return std::unexpected(rev.error());
  if (!rev->trust)
    return fail(Errc::bad_usage,
                fmt::format("M16: only a trusted host tool revision may open popups; {} (\"{}\") runs without host "
                            "authority (it has no trust record)",
                            rev->id, rev->name),
                rev->id);
  PopupPermission p{rev->id, rev->name, std::string(target), std::string(granted_by), now_iso8601()};
  auto stmt = store.database().prepare(
      "INSERT INTO popup_permissions(revision, target, granted_by, granted_at) VALUES (?1, ?2, ?3, ?4) "
      "ON CONFLICT(revision, target) DO UPDATE SET granted_by = excluded.granted_by, granted_at = excluded.granted_at");
  if (!stmt) return std::unexpected(stmt.error());
  stmt->bind(1, p.revision).bind(2, p.target).bind(3, p.granted_by).bind(4, p.granted_at);
  if (auto r = stmt->run(); !r) return std::unexpected(r.error());
  return p;
}

Result<bool> revoke_popup(Store& store, std::string_view revision, std::string_view target) {
  if (auto ok = require_popup_target(target); !ok) return std::unexpected(ok.error());
  auto stmt = store.database().prepare("DELETE FROM popup_permissions WHERE revision = ?1 AND target = ?2");
  if (!stmt) return std::unexpected(stmt.error());
  stmt->bind(1, revision).bind(2, target);
  if (auto r = stmt->run(); !r) return std::unexpected(r.error());
  return store.database().changes() > 0;
}

Result<std::vector<PopupPermission>> popup_permissions(Store& store, std::optional<std::string_view> revision) {
  auto stmt = store.database().prepare(
      "SELECT p.revision, coalesce(r.name, ''), p.target, p.granted_by, p.granted_at "
      "FROM popup_permissions p LEFT JOIN revisions r ON r.id = p.revision "
      "WHERE ?1 IS NULL OR p.revision = ?1 ORDER BY p.revision, p.target");
  if (!stmt) return std::unexpected(stmt.error());
  stmt->bind_nullable(1, revision ? std::optional<std::string>(*revision) : std::nullopt);
  std::vector<PopupPermission> out;
  for (;;) {
    auto row = stmt->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    out.push_back({stmt->text(0), stmt->text(1), stmt->text(2), stmt->text(3), stmt->text(4)});
  }
  return out;
}

Result<PopupDecision> check_popup(Store& store, std::string_view revision, std::string_view target,
                                  const std::optional<std::string>& task) {
  PopupDecision d;
  if (auto ok = require_popup_target(target); !ok) {
    d.reason = ok.error().message;
  } else {
    auto stmt = store.database().prepare("SELECT 1 FROM popup_permissions WHERE revision = ?1 AND target = ?2");
    if (!stmt) return std::unexpected(stmt.error());
    stmt->bind(1, revision).bind(2, target);
    auto row = stmt->step();
    if (!row) return std::unexpected(row.error());
    d.allowed = *row;
    d.reason = d.allowed ? fmt::format("M16: revision holds a popup permission for {}", target)
                         : fmt::format("M16: revision holds no popup permission for exactly {}", target);
  }
  AuditEntry e;
  e.revision = std::string(revision);
  e.capability = "popup";
  e.target = target.size() > 300 ? fmt::format("{}… ({} bytes)", target.substr(0, 256), target.size())
                                 : std::string(target);
  e.verdict = d.allowed ? capability::Verdict::allow : capability::Verdict::deny;
  e.reason = d.reason;
  e.task = task;
  if (auto a = append_audit(store, std::move(e)); !a) return std::unexpected(a.error());
  return d;
}

Result<bool> popup_allowed(Store& store, std::string_view revision, std::string_view target) {
  auto d = check_popup(store, revision, target);
  if (!d) return std::unexpected(d.error());
  return d->allowed;
}

}  // namespace taskyon::store
