#include "taskyon/store/secrets.h"

#include <fmt/format.h>

#include "taskyon/store/clock.h"
#include "taskyon/store/grants.h"
#include "taskyon/store/origin.h"

namespace taskyon::store {

bool is_valid_secret_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

Result<SecretInfo> set_secret(Store& store, std::string_view revision, std::string_view origin,
                              std::string_view name, std::string_view value, std::string_view set_by) {
  if (!is_valid_secret_name(name))
    return fail(Errc::bad_usage, fmt::format("secret name \"{}\" must match ^[A-Za-z0-9_.-]{{1,64}}$", name),
                std::string(name));
  if (value.empty()) return fail(Errc::bad_usage, "a secret value is not empty", std::string(name));
  if (value.size() > kMaxSecretBytes)
    return fail(Errc::bad_usage, fmt::format("a secret value is at most {} bytes", kMaxSecretBytes), std::string(name));
  if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos)
    return fail(Errc::bad_usage,
                "a secret value must not contain CR, LF or NUL: it goes into a header field value (RFC 9110 §5.5)",
                std::string(name));
  if (set_by.empty()) return fail(Errc::bad_usage, "a secret records who set it: set_by is empty");
  if (auto ok = require_canonical_origin(origin); !ok) return std::unexpected(ok.error());
  auto rev = require_revision(store, revision);
  if (!rev) return std::unexpected(rev.error());
  SecretInfo info{rev->id, rev->name, std::string(origin), std::string(name), std::string(set_by), now_iso8601()};
  auto stmt = store.database().prepare(
      "INSERT INTO secrets(revision, origin, name, value, set_by, set_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6) "
      "ON CONFLICT(revision, origin, name) DO UPDATE SET value = excluded.value, set_by = excluded.set_by, "
      "set_at = excluded.set_at");
  if (!stmt) return std::unexpected(stmt.error());
  stmt->bind(1, info.revision).bind(2, info.origin).bind(3, info.name).bind(4, value);
  stmt->bind(5, info.set_by).bind(6, info.set_at);
  if (auto r = stmt->run(); !r) return std::unexpected(r.error());
  return info;
}

Result<bool> delete_secret(Store& store, std::string_view revision, std::string_view origin, std::string_view name) {
  if (auto ok = require_canonical_origin(origin); !ok) return std::unexpected(ok.error());
  auto stmt = store.database().prepare("DELETE FROM secrets WHERE revision = ?1 AND origin = ?2 AND name = ?3");
  if (!stmt) return std::unexpected(stmt.error());
  stmt->bind(1, revision).bind(2, origin).bind(3, name);
  if (auto r = stmt->run(); !r) return std::unexpected(r.error());
  return store.database().changes() > 0;
}

Result<std::vector<SecretInfo>> secret_names(Store& store, std::optional<std::string_view> revision) {
  auto stmt = store.database().prepare(
      "SELECT s.revision, coalesce(r.name, ''), s.origin, s.name, s.set_by, s.set_at "
      "FROM secrets s LEFT JOIN revisions r ON r.id = s.revision "
      "WHERE ?1 IS NULL OR s.revision = ?1 ORDER BY s.revision, s.origin, s.name");
  if (!stmt) return std::unexpected(stmt.error());
  stmt->bind_nullable(1, revision ? std::optional<std::string>(*revision) : std::nullopt);
  std::vector<SecretInfo> out;
  for (;;) {
    auto row = stmt->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    out.push_back({stmt->text(0), stmt->text(1), stmt->text(2), stmt->text(3), stmt->text(4), stmt->text(5)});
  }
  return out;
}

Result<std::optional<std::string>> secret_for(Store& store, std::string_view revision, std::string_view origin,
                                              std::string_view name) {
  auto stmt = store.database().prepare("SELECT value FROM secrets WHERE revision = ?1 AND origin = ?2 AND name = ?3");
  if (!stmt) return std::unexpected(stmt.error());
  stmt->bind(1, revision).bind(2, origin).bind(3, name);
  auto row = stmt->step();
  if (!row) return std::unexpected(row.error());
  if (!*row) return std::optional<std::string>();
  return std::optional<std::string>(stmt->text(0));
}

}  // namespace taskyon::store
