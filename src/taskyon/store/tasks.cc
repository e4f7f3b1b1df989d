// Task persistence: append-only rows whose ids are content addresses.
#include <fmt/format.h>

#include "taskyon/json/json.h"
#include "taskyon/store/clock.h"
#include "taskyon/store/store.h"

namespace taskyon::store {
namespace {

constexpr std::string_view kTaskColumns = "id, parent_id, role, content, state, tool_revision, settings_revision";

// Rebuilds a task from a row and checks it still hashes to its id (R2, T4).
Result<tasks::Task> load_task(sql::Statement& stmt) {
  tasks::Task t;
  t.id = stmt.text(0);
  t.parent_id = stmt.optional_text(1);
  auto role = tasks::parse_role(stmt.text(2));
  auto content = json::parse(stmt.text(3));
  auto state = tasks::parse_state(stmt.text(4));
  if (!role || !content || !state)
    return fail(Errc::integrity, fmt::format("task {} is tampered: a stored field is not valid", t.id), t.id);
  t.role = *role;
  t.content = std::move(*content);
  t.state = *state;
  t.tool_revision = stmt.optional_text(5);
  t.settings_revision = stmt.optional_text(6);
  if (auto ok = tasks::check_invariants(t); !ok)
    return fail(Errc::integrity, fmt::format("task {} is tampered: {}", t.id, ok.error().message), t.id);
  return t;
}

}  // namespace

Result<void> Store::put_tasks(const std::vector<tasks::Task>& batch) {
  auto tx = sql::Transaction::begin(db_);
  if (!tx) return std::unexpected(tx.error());
  for (const auto& t : batch) {
    if (auto ok = tasks::check_invariants(t); !ok) return ok;
    auto kind = tasks::content_kind(t.content);
    auto content = json::canonicalize(t.content);
    if (!content) return std::unexpected(content.error());
    auto stmt = db_.prepare(
        "INSERT INTO tasks(id, parent_id, role, kind, content, state, tool_revision, settings_revision, created_at) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT(id) DO NOTHING");
    if (!stmt) return std::unexpected(stmt.error());
    stmt->bind(1, t.id).bind_nullable(2, t.parent_id).bind(3, tasks::role_name(t.role)).bind(4, *kind).bind(5, *content);
    stmt->bind(6, tasks::state_name(t.state)).bind_nullable(7, t.tool_revision).bind_nullable(8, t.settings_revision);
    stmt->bind(9, now_iso8601());
    if (auto r = stmt->run(); !r) return fail(r.error().code, r.error().message, t.id);
  }
  return tx->commit();
}

Result<tasks::Task> Store::task(std::string_view id_or_prefix) {
  std::string id(id_or_prefix);
  if (!json::is_content_id(id)) {
    auto full = expand_prefix("tasks", id_or_prefix);
    if (!full) return std::unexpected(full.error());
    id = *full;
  }
  auto stmt = db_.prepare(fmt::format("SELECT {} FROM tasks WHERE id = ?1", kTaskColumns));
  if (!stmt) return std::unexpected(stmt.error());
  stmt->bind(1, id);
  auto row = stmt->step();
  if (!row) return std::unexpected(row.error());
  if (!*row) return fail(Errc::not_found, fmt::format("no task {}", id), id);
  return load_task(*stmt);
}

Result<std::vector<tasks::Task>> Store::children(std::string_view id) {
  auto stmt = db_.prepare(fmt::format("SELECT {} FROM tasks WHERE parent_id = ?1 ORDER BY created_at, id", kTaskColumns));
  if (!stmt) return std::unexpected(stmt.error());
  stmt->bind(1, id);
  std::vector<tasks::Task> out;
  for (;;) {
    auto row = stmt->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    auto t = load_task(*stmt);
    if (!t) return std::unexpected(t.error());
    out.push_back(std::move(*t));
  }
  return out;
}

}  // namespace taskyon::store
