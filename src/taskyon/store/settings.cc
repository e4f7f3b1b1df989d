#include "taskyon/store/settings.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <iterator>
#include <optional>

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

namespace {

constexpr std::string_view kIdentityKeyName = "settings-identity";

Result<std::optional<std::string>> read_key(Store& store) {
  auto stmt = store.database().prepare("SELECT value FROM store_keys WHERE name = ?1");
  if (!stmt) return std::unexpected(stmt.error());
  stmt->bind(1, kIdentityKeyName);
  auto row = stmt->step();
  if (!row) return std::unexpected(row.error());
  if (!*row) return std::optional<std::string>();
  return std::optional<std::string>(stmt->text(0));
}

std::string hex(const unsigned char* bytes, std::size_t n) {
  std::string out;
  out.reserve(2 * n);
  for (std::size_t i = 0; i < n; ++i) fmt::format_to(std::back_inserter(out), "{:02x}", bytes[i]);
  return out;
}

// The store's identity key (hex), made once: concurrent first uses agree,
// because the insert keeps the first key written.
Result<std::string> identity_key(Store& store) {
  auto key = read_key(store);
  if (!key) return std::unexpected(key.error());
  if (*key) return std::move(**key);
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return fail(Errc::store, "the system random generator failed");
  auto insert = store.database().prepare(
      "INSERT INTO store_keys(name, value, created_at) VALUES (?1, ?2, ?3) ON CONFLICT(name) DO NOTHING");
  if (!insert) return std::unexpected(insert.error());
  insert->bind(1, kIdentityKeyName).bind(2, hex(bytes, sizeof bytes)).bind(3, now_iso8601());
  if (auto r = insert->run(); !r) return std::unexpected(r.error());
  OPENSSL_cleanse(bytes, sizeof bytes);
  key = read_key(store);
  if (!key) return std::unexpected(key.error());
  if (!*key) return fail(Errc::store, "the store's identity key was not stored");
  return std::move(**key);
}

}  // namespace

namespace {

// "hmac-sha256:" + hex HMAC-SHA256(the store's identity key, label NUL part NUL part …).
Result<std::string> keyed_identity(Store& store, std::string_view label, std::initializer_list<std::string_view> parts) {
  auto key = identity_key(store);
  if (!key) return std::unexpected(key.error());
  std::string message(label);
  for (auto part : parts) (message += '\0') += part;
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (!HMAC(EVP_sha256(), key->data(), static_cast<int>(key->size()), reinterpret_cast<const unsigned char*>(message.data()),
            message.size(), mac, &length))
    return fail(Errc::store, "HMAC-SHA256 failed");
  OPENSSL_cleanse(key->data(), key->size());
  return std::string(kSettingsIdentityPrefix) + hex(mac, length);
}

}  // namespace

Result<std::string> settings_identity(Store& store, std::string_view tool_revision, std::string_view settings_revision) {
  return keyed_identity(store, "taskyon settings identity v1", {tool_revision, settings_revision});
}

Result<std::string> task_identity(Store& store, std::string_view task_id) {
  return keyed_identity(store, "taskyon task identity v1", {task_id});
}

Result<std::string> revision_identity(Store& store, std::string_view revision) {
  return keyed_identity(store, "taskyon revision identity v1", {revision});
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
