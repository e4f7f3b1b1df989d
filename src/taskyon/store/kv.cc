#include "taskyon/store/kv.h"

#include <algorithm>

#include <fmt/format.h>

#include "taskyon/store/audit.h"
#include "taskyon/store/clock.h"
#include "taskyon/store/grants.h"

namespace taskyon::store {
namespace {

using capability::Verdict;

// The decision before the operation: the calling revision's tool name if it
// holds a storage grant, else a denial. A revision that is not in the
// registry (a tree-defined tool) can hold no grant.
Result<Outcome<std::string>> granted_tool(Store& store, const Caller& caller) {
  auto granted = has_storage_grant(store, caller.revision);
  if (!granted) return std::unexpected(granted.error());
  if (!*granted)
    return Outcome<std::string>(refuse(
        "denied", fmt::format("revision {} has no storage grant (tycli grant storage REV)", caller.revision)));
  auto rev = store.revision(caller.revision);
  if (!rev) return std::unexpected(rev.error());
  return Outcome<std::string>(rev->name);
}

Outcome<void> check_key(std::string_view key, const StorageQuota& quota) {
  if (key.empty()) return refuse("invalid_request", "a storage key is a non-empty string");
  if (!json::canonicalize(json::Value(std::string(key))))
    return refuse("invalid_request", "a storage key must be valid UTF-8");
  if (key.size() > quota.max_key_bytes)
    return refuse("too_large",
                  fmt::format("a storage key is at most {} bytes of UTF-8; this one has {}", quota.max_key_bytes,
                              key.size()));
  return {};
}

// Writes the decision; the outcome's error message is the reason of a denial.
Result<void> audit(Store& store, const Caller& caller, std::string_view op, std::string_view target,
                   std::string_view access, const CapabilityError* refusal, std::string allow_reason) {
  AuditEntry e;
  e.revision = caller.revision;
  e.capability = fmt::format("storage.{}", op);
  // A refused key may be huge or not UTF-8: the log keeps a bounded prefix.
  e.target = target.size() > 300 ? fmt::format("{}… ({} bytes)", target.substr(0, 256), target.size())
                                 : std::string(target);
  e.access = std::string(access);
  e.verdict = refusal ? Verdict::deny : Verdict::allow;
  e.reason = refusal ? fmt::format("{}: {}", refusal->code, refusal->message) : std::move(allow_reason);
  e.task = caller.task;
  auto r = append_audit(store, std::move(e));
  if (!r) return std::unexpected(r.error());
  return {};
}

template <typename T>
Result<Outcome<T>> refused(Store& store, const Caller& caller, std::string_view op, std::string_view target,
                           std::string_view access, CapabilityError refusal) {
  if (auto a = audit(store, caller, op, target, access, &refusal, {}); !a) return std::unexpected(a.error());
  return Outcome<T>(std::unexpected(std::move(refusal)));
}

// One operation, its decision and its audit row in one write transaction:
// what the audit row says (found, removed, how many keys) is what the
// operation saw, no write is left unaudited, and the operation costs one
// commit and one set of locks, not one per statement (issue 19). A refusal
// commits too: its audit row is the point. A store error rolls it all back.
template <typename T, typename Decide>
Result<Outcome<T>> atomically(Store& store, Decide&& decide) {
  auto tx = sql::Transaction::begin(store.database());
  if (!tx) return std::unexpected(tx.error());
  Result<Outcome<T>> out = decide();
  if (!out) return out;
  if (auto c = tx->commit(); !c) return std::unexpected(c.error());
  return out;
}

}  // namespace

Result<Outcome<std::optional<json::Value>>> storage_get(Store& store, const Caller& caller, std::string_view key,
                                                        const StorageQuota& quota) {
  using Out = std::optional<json::Value>;
  return atomically<Out>(store, [&]() -> Result<Outcome<Out>> {
    auto tool = granted_tool(store, caller);
    if (!tool) return std::unexpected(tool.error());
    if (!*tool) return refused<Out>(store, caller, "get", key, "read", tool->error());
    if (auto k = check_key(key, quota); !k) return refused<Out>(store, caller, "get", key, "read", k.error());
    auto stmt = store.database().prepare("SELECT value FROM storage_items WHERE tool = ?1 AND key = ?2");
    if (!stmt) return std::unexpected(stmt.error());
    stmt->bind(1, **tool).bind(2, key);
    auto row = stmt->step();
    if (!row) return std::unexpected(row.error());
    Out value;
    if (*row) {
      auto v = json::parse(stmt->text(0));
      if (!v)
        return fail(Errc::integrity, fmt::format("stored value of \"{}\" key is not JSON", **tool), std::string(key));
      value = std::move(*v);
    }
    stmt->reset();  // the read ends before the audit row is written
    if (auto a = audit(store, caller, "get", key, "read", nullptr,
                       fmt::format("storage grant of {} ({})", **tool, value ? "found" : "no such key"));
        !a)
      return std::unexpected(a.error());
    return Outcome<Out>(std::move(value));
  });
}

Result<Outcome<void>> storage_set(Store& store, const Caller& caller, std::string_view key, const json::Value& value,
                                  const StorageQuota& quota) {
  return atomically<void>(store, [&]() -> Result<Outcome<void>> {
    auto tool = granted_tool(store, caller);
    if (!tool) return std::unexpected(tool.error());
    if (!*tool) return refused<void>(store, caller, "set", key, "write", tool->error());
    if (auto k = check_key(key, quota); !k) return refused<void>(store, caller, "set", key, "write", k.error());
    auto canonical = json::canonicalize(value);
    if (!canonical)
      return refused<void>(store, caller, "set", key, "write",
                           {"invalid_request", fmt::format("the value is not representable as canonical JSON: {}",
                                                           canonical.error().describe())});
    if (canonical->size() > quota.max_value_bytes)
      return refused<void>(store, caller, "set", key, "write",
                           {"too_large", fmt::format("a stored value is at most {} bytes of canonical JSON; this one "
                                                     "has {}",
                                                     quota.max_value_bytes, canonical->size())});
    // The tool's usage without the old value under this key, if any.
    auto usage = store.database().prepare(
        "SELECT count(*), coalesce(sum(length(CAST(key AS BLOB)) + length(CAST(value AS BLOB))), 0) "
        "FROM storage_items WHERE tool = ?1 AND key <> ?2");
    if (!usage) return std::unexpected(usage.error());
    usage->bind(1, **tool).bind(2, key);
    if (auto row = usage->step(); !row) return std::unexpected(row.error());
    const auto keys = static_cast<std::size_t>(usage->integer(0)) + 1;
    const auto bytes = static_cast<std::size_t>(usage->integer(1)) + key.size() + canonical->size();
    if (keys > quota.max_keys)
      return refused<void>(store, caller, "set", key, "write",
                           {"too_large", fmt::format("tool \"{}\" may store at most {} keys", **tool, quota.max_keys)});
    if (bytes > quota.max_total_bytes)
      return refused<void>(store, caller, "set", key, "write",
                           {"too_large", fmt::format("tool \"{}\" may store at most {} bytes (keys and canonical "
                                                     "values); this would make {}",
                                                     **tool, quota.max_total_bytes, bytes)});
    auto put = store.database().prepare(
        "INSERT INTO storage_items(tool, key, value, updated_at) VALUES (?1, ?2, ?3, ?4) "
        "ON CONFLICT(tool, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at");
    if (!put) return std::unexpected(put.error());
    put->bind(1, **tool).bind(2, key).bind(3, *canonical).bind(4, now_iso8601());
    if (auto r = put->run(); !r) return std::unexpected(r.error());
    if (auto a = audit(store, caller, "set", key, "write", nullptr,
                       fmt::format("storage grant of {} ({} keys, {} bytes in use)", **tool, keys, bytes));
        !a)
      return std::unexpected(a.error());
    return Outcome<void>();
  });
}

Result<Outcome<bool>> storage_delete(Store& store, const Caller& caller, std::string_view key,
                                     const StorageQuota& quota) {
  return atomically<bool>(store, [&]() -> Result<Outcome<bool>> {
    auto tool = granted_tool(store, caller);
    if (!tool) return std::unexpected(tool.error());
    if (!*tool) return refused<bool>(store, caller, "delete", key, "write", tool->error());
    if (auto k = check_key(key, quota); !k) return refused<bool>(store, caller, "delete", key, "write", k.error());
    auto stmt = store.database().prepare("DELETE FROM storage_items WHERE tool = ?1 AND key = ?2");
    if (!stmt) return std::unexpected(stmt.error());
    stmt->bind(1, **tool).bind(2, key);
    if (auto r = stmt->run(); !r) return std::unexpected(r.error());
    const bool removed = store.database().changes() > 0;
    if (auto a = audit(store, caller, "delete", key, "write", nullptr,
                       fmt::format("storage grant of {} ({})", **tool, removed ? "removed" : "no such key"));
        !a)
      return std::unexpected(a.error());
    return Outcome<bool>(removed);
  });
}

Result<Outcome<std::vector<std::string>>> storage_list(Store& store, const Caller& caller, std::string_view prefix) {
  using Out = std::vector<std::string>;
  return atomically<Out>(store, [&]() -> Result<Outcome<Out>> {
    auto tool = granted_tool(store, caller);
    if (!tool) return std::unexpected(tool.error());
    if (!*tool) return refused<Out>(store, caller, "list", prefix, "read", tool->error());
    auto stmt = store.database().prepare("SELECT key FROM storage_items WHERE tool = ?1");
    if (!stmt) return std::unexpected(stmt.error());
    stmt->bind(1, **tool);
    Out keys;
    for (;;) {
      auto row = stmt->step();
      if (!row) return std::unexpected(row.error());
      if (!*row) break;
      auto key = stmt->text(0);
      if (key.starts_with(prefix)) keys.push_back(std::move(key));
    }
    std::sort(keys.begin(), keys.end());
    if (auto a = audit(store, caller, "list", prefix, "read", nullptr,
                       fmt::format("storage grant of {} ({} keys)", **tool, keys.size()));
        !a)
      return std::unexpected(a.error());
    return Outcome<Out>(std::move(keys));
  });
}

}  // namespace taskyon::store
