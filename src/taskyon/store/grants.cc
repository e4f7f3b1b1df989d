#include "taskyon/store/grants.h"

#include <array>

#include <fmt/format.h>

#include "taskyon/store/clock.h"
#include "taskyon/store/origin.h"

namespace taskyon::store {
namespace {

struct LimitField {
  std::string_view name;
  std::optional<std::int64_t> FetchLimits::*member;
  std::int64_t max;
};

constexpr std::array<LimitField, 4> kLimitFields = {{
    {"connect_timeout_ms", &FetchLimits::connect_timeout_ms, 600'000},
    {"total_timeout_ms", &FetchLimits::total_timeout_ms, 3'600'000},
    {"max_response_bytes", &FetchLimits::max_response_bytes, std::int64_t{1} << 30},
    {"max_request_bytes", &FetchLimits::max_request_bytes, std::int64_t{1} << 30},
}};

Result<void> require_access(Access access) {
  if (access == Access::reject)
    return fail(Errc::bad_usage, "a fetch grant is for access class \"read\" or \"write\"");
  return {};
}

Result<Access> parse_access(const std::string& text) {
  if (text == "read") return Access::read;
  if (text == "write") return Access::write;
  return fail(Errc::integrity, fmt::format("stored access class \"{}\" is neither read nor write", text));
}

Result<FetchGrant> load_fetch_grant(sql::Statement& s) {
  FetchGrant g;
  g.revision = s.text(0);
  g.tool = s.text(1);
  g.origin = s.text(2);
  auto access = parse_access(s.text(3));
  if (!access) return std::unexpected(access.error());
  g.access = *access;
  auto value = json::parse(s.text(4));
  if (!value) return fail(Errc::integrity, fmt::format("stored limits of a grant for {} are not JSON", g.revision));
  auto limits = parse_fetch_limits(*value);
  if (!limits)
    return fail(Errc::integrity, fmt::format("stored limits of a grant for {} are invalid: {}", g.revision,
                                             limits.error().describe()));
  g.limits = *limits;
  g.granted_by = s.text(5);
  g.granted_at = s.text(6);
  return g;
}

}  // namespace

Result<FetchLimits> parse_fetch_limits(const json::Value& value) {
  if (!value.is_object()) return fail(Errc::bad_usage, "fetch limits must be a JSON object", "");
  FetchLimits out;
  for (const auto& [key, v] : value.items()) {
    const LimitField* field = nullptr;
    for (const auto& f : kLimitFields)
      if (f.name == key) field = &f;
    if (!field)
      return fail(Errc::bad_usage,
                  fmt::format("unknown fetch limit \"{}\" (known: connect_timeout_ms, total_timeout_ms, "
                              "max_response_bytes, max_request_bytes)",
                              key),
                  "/" + key);
    if (!v.is_number_integer() || v.get<std::int64_t>() < 1 || v.get<std::int64_t>() > field->max)
      return fail(Errc::bad_usage, fmt::format("fetch limit {} must be an integer from 1 to {}", key, field->max),
                  "/" + key);
    out.*(field->member) = v.get<std::int64_t>();
  }
  return out;
}

json::Value fetch_limits_json(const FetchLimits& limits) {
  json::Value out = json::Value::object();
  for (const auto& f : kLimitFields)
    if (const auto& v = limits.*(f.member)) out[std::string(f.name)] = *v;
  return out;
}

Result<RevisionRecord> require_revision(Store& store, std::string_view revision) {
  if (!json::is_content_id(revision))
    return fail(Errc::bad_usage,
                fmt::format("\"{}\" is not a full revision id (\"sha256:\" + 64 hex digits); grants, secrets and "
                            "permissions name one exact revision",
                            revision),
                std::string(revision));
  return store.revision(revision);
}

Result<FetchGrant> grant_fetch(Store& store, std::string_view revision, std::string_view origin, Access access,
                               const FetchLimits& limits, std::string_view granted_by) {
  if (auto ok = require_access(access); !ok) return std::unexpected(ok.error());
  if (auto ok = require_canonical_origin(origin); !ok) return std::unexpected(ok.error());
  if (granted_by.empty()) return fail(Errc::bad_usage, "a grant records who made it: granted_by is empty");
  auto rev = require_revision(store, revision);
  if (!rev) return std::unexpected(rev.error());
  auto canonical = json::canonicalize(fetch_limits_json(limits));
  if (!canonical) return std::unexpected(canonical.error());
  FetchGrant g{rev->id, rev->name, std::string(origin), access, limits, std::string(granted_by), now_iso8601()};
  auto stmt = store.database().prepare(
      "INSERT INTO fetch_grants(revision, origin, access, limits, granted_by, granted_at) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(revision, origin, access) DO UPDATE SET "
      "limits = excluded.limits, granted_by = excluded.granted_by, granted_at = excluded.granted_at");
  if (!stmt) return std::unexpected(stmt.error());
  stmt->bind(1, g.revision).bind(2, g.origin).bind(3, capability::access_name(access)).bind(4, *canonical);
  stmt->bind(5, g.granted_by).bind(6, g.granted_at);
  if (auto r = stmt->run(); !r) return std::unexpected(r.error());
  return g;
}

Result<bool> revoke_fetch(Store& store, std::string_view revision, std::string_view origin, Access access) {
  if (auto ok = require_access(access); !ok) return std::unexpected(ok.error());
  if (auto ok = require_canonical_origin(origin); !ok) return std::unexpected(ok.error());
  auto stmt = store.database().prepare("DELETE FROM fetch_grants WHERE revision = ?1 AND origin = ?2 AND access = ?3");
  if (!stmt) return std::unexpected(stmt.error());
  stmt->bind(1, revision).bind(2, origin).bind(3, capability::access_name(access));
  if (auto r = stmt->run(); !r) return std::unexpected(r.error());
  return store.database().changes() > 0;
}

Result<std::optional<FetchLimits>> fetch_grant_for(Store& store, std::string_view revision, std::string_view origin,
                                                   Access access) {
  if (access == Access::reject) return std::optional<FetchLimits>();
  auto stmt = store.database().prepare(
      "SELECT limits FROM fetch_grants WHERE revision = ?1 AND origin = ?2 AND access = ?3");
  if (!stmt) return std::unexpected(stmt.error());
  stmt->bind(1, revision).bind(2, origin).bind(3, capability::access_name(access));
  auto row = stmt->step();
  if (!row) return std::unexpected(row.error());
  if (!*row) return std::optional<FetchLimits>();
  auto value = json::parse(stmt->text(0));
  if (!value) return fail(Errc::integrity, fmt::format("stored limits of a grant for {} are not JSON", revision));
  auto limits = parse_fetch_limits(*value);
  if (!limits)
    return fail(Errc::integrity,
                fmt::format("stored limits of a grant for {} are invalid: {}", revision, limits.error().describe()));
  return std::optional<FetchLimits>(*limits);
}

Result<std::vector<FetchGrant>> fetch_grants(Store& store, std::optional<std::string_view> revision) {
  auto stmt = store.database().prepare(
      "SELECT g.revision, coalesce(r.name, ''), g.origin, g.access, g.limits, g.granted_by, g.granted_at "
      "FROM fetch_grants g LEFT JOIN revisions r ON r.id = g.revision "
      "WHERE ?1 IS NULL OR g.revision = ?1 ORDER BY g.revision, g.origin, g.access");
  if (!stmt) return std::unexpected(stmt.error());
  stmt->bind_nullable(1, revision ? std::optional<std::string>(*revision) : std::nullopt);
  std::vector<FetchGrant> out;
  for (;;) {
    auto row = stmt->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    auto g = load_fetch_grant(*stmt);
    if (!g) return std::unexpected(g.error());
    out.push_back(std::move(*g));
  }
  return out;
}

Result<StorageGrant> grant_storage(Store& store, std::string_view revision, std::string_view granted_by) {
  if (granted_by.empty()) return fail(Errc::bad_usage, "a grant records who made it: granted_by is empty");
  auto rev = require_revision(store, revision);
  if (!rev) return std::unexpected(rev.error());
  StorageGrant g{rev->id, rev->name, std::string(granted_by), now_iso8601()};
  auto stmt = store.database().prepare(
      "INSERT INTO storage_grants(revision, granted_by, granted_at) VALUES (?1, ?2, ?3) "
      "ON CONFLICT(revision) DO UPDATE SET granted_by = excluded.granted_by, granted_at = excluded.granted_at");
  if (!stmt) return std::unexpected(stmt.error());
  stmt->bind(1, g.revision).bind(2, g.granted_by).bind(3, g.granted_at);
  if (auto r = stmt->run(); !r) return std::unexpected(r.error());
  return g;
}

Result<bool> revoke_storage(Store& store, std::string_view revision) {
  auto stmt = store.database().prepare("DELETE FROM storage_grants WHERE revision = ?1");
  if (!stmt) return std::unexpected(stmt.error());
  stmt->bind(1, revision);
  if (auto r = stmt->run(); !r) return std::unexpected(r.error());
  return store.database().changes() > 0;
}

Result<bool> has_storage_grant(Store& store, std::string_view revision) {
  auto stmt = store.database().prepare("SELECT 1 FROM storage_grants WHERE revision = ?1");
  if (!stmt) return std::unexpected(stmt.error());
  stmt->bind(1, revision);
  return stmt->step();
}

Result<std::vector<StorageGrant>> storage_grants(Store& store, std::optional<std::string_view> revision) {
  auto stmt = store.database().prepare(
      "SELECT g.revision, coalesce(r.name, ''), g.granted_by, g.granted_at "
      "FROM storage_grants g LEFT JOIN revisions r ON r.id = g.revision "
      "WHERE ?1 IS NULL OR g.revision = ?1 ORDER BY g.revision");
  if (!stmt) return std::unexpected(stmt.error());
  stmt->bind_nullable(1, revision ? std::optional<std::string>(*revision) : std::nullopt);
  std::vector<StorageGrant> out;
  for (;;) {
    auto row = stmt->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    out.push_back({stmt->text(0), stmt->text(1), stmt->text(2), stmt->text(3)});
  }
  return out;
}

}  // namespace taskyon::store
