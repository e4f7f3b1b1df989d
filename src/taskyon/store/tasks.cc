// Task persistence: append-only rows whose ids are content addresses.
#include <array>
#include <memory>
#include <mutex>
#include <unordered_map>

#include <fmt/format.h>

#include "taskyon/json/json.h"
#include "taskyon/store/clock.h"
#include "taskyon/store/schema.h"
#include "taskyon/store/store.h"

namespace taskyon::store {
namespace {

constexpr std::string_view kTaskColumns =
    "id, parent_id, role, content, state, tool_revision, settings_revision, labels, created_by";

constexpr int kColumns = 9;

// Tasks verified by this process: the row's bytes (every column) and the task
// built from them. A later read of the same bytes reuses the task; a row
// whose bytes differ is verified again (and so found tampered).
struct VerifiedTask {
  std::array<std::optional<std::string>, kColumns> row;
  tasks::Task task;
};
struct VerifiedTasks {
  std::mutex m;
  std::unordered_map<std::string, std::shared_ptr<const VerifiedTask>> by_id;
};
VerifiedTasks& verified_tasks() {
  static VerifiedTasks v;
  return v;
}
constexpr std::size_t kMaxVerifiedTasks = 1 << 16;

bool same_row(const VerifiedTask& known, const sql::Statement& stmt) {
  for (int c = 0; c < kColumns; ++c) {
    const auto now = stmt.view(c);
    const auto& then = known.row[static_cast<std::size_t>(c)];
    if (now.has_value() != then.has_value() || (now && *now != *then)) return false;
  }
  return true;
}

// Rebuilds a task from a row and checks it still hashes to its id (R2, T4).
Result<tasks::Task> verify_task(sql::Statement& stmt) {
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
  auto labels = json::parse(stmt.text(7));
  if (!labels || !labels->is_array())
    return fail(Errc::integrity, fmt::format("task {} is tampered: its labels are not a JSON array", t.id), t.id);
  for (const auto& l : *labels) {
    if (!l.is_string()) return fail(Errc::integrity, fmt::format("task {} is tampered: a label is not a string", t.id), t.id);
    t.labels.push_back(l.get<std::string>());
  }
  if (auto created_by = stmt.optional_text(8)) {
    auto value = json::parse(*created_by);
    auto provenance = value ? tasks::parse_provenance(*value) : Result<tasks::Provenance>(std::unexpected(value.error()));
    if (!provenance)
      return fail(Errc::integrity, fmt::format("task {} is tampered: its createdBy is not valid", t.id), t.id);
    t.created_by = std::move(*provenance);
  }
  if (auto ok = tasks::check_invariants(t); !ok)
    return fail(Errc::integrity, fmt::format("task {} is tampered: {}", t.id, ok.error().message), t.id);
  return t;
}

Result<tasks::Task> load_task(sql::Statement& stmt) {
  auto& cache = verified_tasks();
  const auto id = stmt.view(0).value_or("");
  {
    std::lock_guard lock(cache.m);
    if (auto it = cache.by_id.find(std::string(id)); it != cache.by_id.end() && same_row(*it->second, stmt))
      return it->second->task;
  }
  auto t = verify_task(stmt);
  if (!t) return t;
  auto entry = std::make_shared<VerifiedTask>();
  for (int c = 0; c < kColumns; ++c) entry->row[static_cast<std::size_t>(c)] = stmt.optional_text(c);
  entry->task = *t;
  std::lock_guard lock(cache.m);
  if (cache.by_id.size() >= kMaxVerifiedTasks) cache.by_id.clear();
  cache.by_id.insert_or_assign(t->id, std::move(entry));
  return t;
}

constexpr std::string_view kInsertTask =
    "INSERT INTO tasks(id, parent_id, role, kind, content, state, tool_revision, settings_revision, created_at, "
    "labels, created_by) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) ON CONFLICT(id) DO NOTHING";

}  // namespace

Result<void> Store::prepare_task_writes() {
  (void)now_iso8601();
  {
    auto stmt = database().prepare(kInsertTask);  // back in the connection's cache when it goes
    if (!stmt) return std::unexpected(stmt.error());
  }
  auto tx = sql::Transaction::begin(database());
  if (!tx) return std::unexpected(tx.error());
  auto version = schema_version(database());
  if (!version) return std::unexpected(version.error());
  if (auto r = database().exec(fmt::format("PRAGMA user_version = {}", *version)); !r) return r;
  return tx->commit();
}

Result<void> Store::put_tasks(const std::vector<tasks::Task>& batch) {
  auto tx = sql::Transaction::begin(database());
  if (!tx) return std::unexpected(tx.error());
  for (const auto& t : batch) {
    if (auto ok = tasks::check_invariants(t); !ok) return ok;
    auto kind = tasks::content_kind(t.content);
    auto content = json::canonicalize(t.content);
    if (!content) return std::unexpected(content.error());
    auto stmt = database().prepare(kInsertTask);
    if (!stmt) return std::unexpected(stmt.error());
    stmt->bind(1, t.id).bind_nullable(2, t.parent_id).bind(3, tasks::role_name(t.role)).bind(4, *kind).bind(5, *content);
    stmt->bind(6, tasks::state_name(t.state)).bind_nullable(7, t.tool_revision).bind_nullable(8, t.settings_revision);
    stmt->bind(9, now_iso8601()).bind(10, *json::canonicalize(json::Value(t.labels)));
    std::optional<std::string> created_by;
    if (t.created_by) created_by = *json::canonicalize(tasks::provenance_json(*t.created_by));
    stmt->bind_nullable(11, created_by);
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
  auto stmt = database().prepare(fmt::format("SELECT {} FROM tasks WHERE id = ?1", kTaskColumns));
  if (!stmt) return std::unexpected(stmt.error());
  stmt->bind(1, id);
  auto row = stmt->step();
  if (!row) return std::unexpected(row.error());
  if (!*row) return fail(Errc::not_found, fmt::format("no task {}", id), id);
  return load_task(*stmt);
}

namespace {

Result<std::vector<tasks::Task>> load_all(Result<sql::Statement> stmt, std::optional<std::string_view> id) {
  if (!stmt) return std::unexpected(stmt.error());
  if (id) stmt->bind(1, *id);
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

}  // namespace

Result<std::vector<tasks::Task>> Store::children(std::string_view id) {
  return load_all(database().prepare(fmt::format("SELECT {} FROM tasks WHERE parent_id = ?1 ORDER BY rowid", kTaskColumns)),
                  id);
}

Result<std::vector<tasks::Task>> Store::roots() {
  return load_all(database().prepare(fmt::format("SELECT {} FROM tasks WHERE parent_id IS NULL ORDER BY rowid", kTaskColumns)),
                  std::nullopt);
}

Result<std::vector<tasks::Task>> Store::lineage(std::string_view id) {
  auto path = load_all(
      database().prepare(fmt::format("WITH RECURSIVE up(id, depth) AS ("
                              "  SELECT id, 0 FROM tasks WHERE id = ?1"
                              "  UNION ALL SELECT t.parent_id, up.depth + 1 FROM tasks t JOIN up ON t.id = up.id"
                              "  WHERE t.parent_id IS NOT NULL AND up.depth < 100000) "
                              "SELECT {} FROM tasks JOIN up USING (id) ORDER BY up.depth DESC",
                              kTaskColumns)),
      id);
  if (!path) return path;
  if (path->empty()) return fail(Errc::not_found, fmt::format("no task {}", id), std::string(id));
  if (path->front().parent_id)
    return fail(Errc::integrity, fmt::format("the lineage of {} is broken: {} is missing", id, *path->front().parent_id),
                std::string(id));
  return path;
}

Result<std::vector<std::string>> Store::active_names() {
  auto tools = this->tools();
  if (!tools) return std::unexpected(tools.error());
  std::vector<std::string> names;
  for (const auto& t : *tools)
    if (!t.active_revision.empty()) names.push_back(t.name);
  return names;
}

}  // namespace taskyon::store
