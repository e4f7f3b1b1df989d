#include "taskyon/store/settings.h"

#include <fmt/format.h>

#include "taskyon/registry/manifest.h"
#include "taskyon/store/clock.h"

namespace taskyon::store {
namespace {

Result<void> require_tool_name(Store& store, std::string_view name) {
  if (!registry::is_valid_tool_name(name))
    return fail(Errc::bad_usage, fmt::format("\"{}\" is not a tool name (^[a-zA-Z0-9_-]{{1,64}}$)", name),
                std::string(name));
  auto any = store.database().prepare("SELECT 1 FROM revisions WHERE name = ?1 LIMIT 1");
  if (!any) return std::unexpected(any.error());
  any->bind(1, name);
  auto row = any->step();
  if (!row) return std::unexpected(row.error());
  if (!*row)
    return fail(Errc::not_found,
                fmt::format("no tool named \"{}\" is installed; install it before giving it settings", name),
                std::string(name));
  return {};
}

}  // namespace

Result<SettingsSetResult> set_settings(Store& store, std::string_view name, const json::Value& settings) {
  if (auto ok = require_tool_name(store, name); !ok) return std::unexpected(ok.error());
  if (!settings.is_object()) return fail(Errc::bad_usage, "tool settings are a JSON object", "/");
  auto canonical = json::canonicalize(settings);
  if (!canonical) return std::unexpected(canonical.error());
  if (canonical->size() > kMaxSettingsBytes)
    return fail(Errc::bad_usage,
                fmt::format("tool settings are at most {} bytes of canonical JSON; these have {}", kMaxSettingsBytes,
                            canonical->size()),
                "/");
  SettingsSetResult result{json::content_id(*canonical), false, false};

  auto tx = sql::Transaction::begin(store.database());
  if (!tx) return std::unexpected(tx.error());
  auto insert = store.database().prepare(
      "INSERT INTO settings_revisions(id, value, created_at) VALUES (?1, ?2, ?3) ON CONFLICT(id) DO NOTHING");
  if (!insert) return std::unexpected(insert.error());
  insert->bind(1, result.revision).bind(2, *canonical).bind(3, now_iso8601());
  if (auto r = insert->run(); !r) return std::unexpected(r.error());
  result.created = store.database().changes() == 1;
  auto current = settings_revision_for(store, name);
  if (!current) return std::unexpected(current.error());
  auto history = settings_history(store, name);
  if (!history) return std::unexpected(history.error());
  // Bind unless already bound to it; the first binding to {} is recorded too,
  // so the history shows that someone set empty settings.
  if (*current != result.revision || history->empty()) {
    auto bind = store.database().prepare("INSERT INTO settings_bindings(name, settings, bound_at) VALUES (?1, ?2, ?3)");
    if (!bind) return std::unexpected(bind.error());
    bind->bind(1, name).bind(2, result.revision).bind(3, now_iso8601());
    if (auto r = bind->run(); !r) return std::unexpected(r.error());
    result.bound = true;
  }
  if (auto r = tx->commit(); !r) return std::unexpected(r.error());
  return result;
}

Result<std::string> settings_revision_for(Store& store, std::string_view name) {
  auto stmt = store.database().prepare(
      "SELECT settings FROM settings_bindings WHERE name = ?1 ORDER BY seq DESC LIMIT 1");
  if (!stmt) return std::unexpected(stmt.error());
  stmt->bind(1, name);
  auto row = stmt->step();
  if (!row) return std::unexpected(row.error());
  if (!*row) return registry::empty_settings_revision();
  auto revision = stmt->text(0);
  // Never pin a settings revision whose stored value was edited (R2).
  if (auto value = settings_value(store, revision); !value) return std::unexpected(value.error());
  return revision;
}

Result<json::Value> settings_value(Store& store, std::string_view revision) {
  auto stmt = store.database().prepare("SELECT value FROM settings_revisions WHERE id = ?1");
  if (!stmt) return std::unexpected(stmt.error());
  stmt->bind(1, revision);
  auto row = stmt->step();
  if (!row) return std::unexpected(row.error());
  if (!*row) {
    if (revision == registry::empty_settings_revision()) return json::Value::object();
    return fail(Errc::not_found, fmt::format("no settings revision {}", revision), std::string(revision));
  }
  const auto text = stmt->text(0);
  // R2 for settings: the row must still hash to its id and be an object.
  if (json::content_id(text) != revision)
    return fail(Errc::integrity,
                fmt::format("settings revision {} is tampered: its stored value no longer hashes to its id", revision),
                std::string(revision));
  auto value = json::parse(text);
  if (!value || !value->is_object())
    return fail(Errc::integrity, fmt::format("settings revision {} is tampered: not a JSON object", revision),
                std::string(revision));
  return std::move(*value);
}

Result<std::vector<SettingsBinding>> settings_history(Store& store, std::string_view name) {
  auto stmt = store.database().prepare(
      "SELECT seq, name, settings, bound_at FROM settings_bindings WHERE name = ?1 ORDER BY seq");
  if (!stmt) return std::unexpected(stmt.error());
  stmt->bind(1, name);
  std::vector<SettingsBinding> out;
  for (;;) {
    auto row = stmt->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    out.push_back({stmt->integer(0), stmt->text(1), stmt->text(2), stmt->text(3)});
  }
  return out;
}

}  // namespace taskyon::store
