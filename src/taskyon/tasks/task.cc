#include "taskyon/tasks/task.h"

#include <array>
#include <utility>

#include <fmt/format.h>

namespace taskyon::tasks {
namespace {

constexpr std::array<std::pair<Role, std::string_view>, 4> kRoles = {{
    {Role::system, "system"}, {Role::user, "user"}, {Role::assistant, "assistant"}, {Role::tool, "tool"}}};

constexpr std::array<std::pair<State, std::string_view>, 6> kStates = {{{State::open, "Open"},
                                                                        {State::queued, "Queued"},
                                                                        {State::in_progress, "In Progress"},
                                                                        {State::completed, "Completed"},
                                                                        {State::cancelled, "Cancelled"},
                                                                        {State::error, "Error"}}};

constexpr std::array<std::string_view, 4> kKinds = {"message", "functionCall", "toolResult", "toolDefinition"};

}  // namespace

std::string_view role_name(Role role) {
  for (auto [r, n] : kRoles)
    if (r == role) return n;
  return "user";
}

std::string_view state_name(State state) {
  for (auto [s, n] : kStates)
    if (s == state) return n;
  return "Open";
}

Result<Role> parse_role(std::string_view name) {
  for (auto [r, n] : kRoles)
    if (n == name) return r;
  return fail(Errc::invalid_task, fmt::format("unknown role \"{}\" (expected system, user, assistant or tool)", name),
              "/role");
}

Result<State> parse_state(std::string_view name) {
  for (auto [s, n] : kStates)
    if (n == name) return s;
  return fail(Errc::invalid_task,
              fmt::format("unknown state \"{}\" (expected Open, Queued, In Progress, Completed, Cancelled or Error)", name),
              "/state");
}

Result<std::string> content_kind(const json::Value& content) {
  if (!content.is_object() || content.size() != 1)
    return fail(Errc::invalid_task, "task content must be an object with exactly one member naming its kind",
                "/content");
  const auto& key = content.begin().key();
  for (auto k : kKinds)
    if (k == key) return key;
  return fail(Errc::invalid_task,
              fmt::format("unknown content kind \"{}\" (expected message, functionCall, toolResult or toolDefinition)",
                          key),
              "/content/" + key);
}

json::Value task_json(const Task& t) {
  auto optional = [](const std::optional<std::string>& s) { return s ? json::Value(*s) : json::Value(); };
  return {{"id", t.id},
          {"parentId", optional(t.parent_id)},
          {"role", role_name(t.role)},
          {"state", state_name(t.state)},
          {"labels", t.labels},
          {"content", t.content},
          {"toolRevision", optional(t.tool_revision)},
          {"settingsRevision", optional(t.settings_revision)},
          {"createdBy", t.created_by ? provenance_json(*t.created_by) : json::Value()}};
}

json::Value provenance_json(const Provenance& p) { return {{"task", p.task}, {"revision", p.revision}}; }

Result<Provenance> parse_provenance(const json::Value& v) {
  if (!v.is_object() || v.size() != 2 || !v.contains("task") || !v["task"].is_string() || !v.contains("revision") ||
      !v["revision"].is_string() || !json::is_content_id(v["task"].get<std::string>()))
    return fail(Errc::invalid_task, "createdBy must be {task: \"sha256:…\", revision: string}", "/createdBy");
  return Provenance{v["task"].get<std::string>(), v["revision"].get<std::string>()};
}

Result<Task> parse_task(const json::Value& v) {
  static constexpr const char* kMembers[] = {"id", "parentId", "role", "state", "labels",
                                             "content", "toolRevision", "settingsRevision", "createdBy"};
  if (!v.is_object()) return fail(Errc::invalid_task, "a task must be an object (its task JSON form)", "");
  for (const auto& [key, _] : v.items()) {
    bool known = false;
    for (const char* m : kMembers) known = known || key == m;
    if (!known) return fail(Errc::invalid_task, fmt::format("unknown field \"{}\"", key), "/" + key);
  }
  for (const char* m : kMembers)
    if (!v.contains(m)) return fail(Errc::invalid_task, fmt::format("a task needs \"{}\" (null when absent)", m), std::string("/") + m);
  auto text = [&](const char* m, bool nullable) -> Result<std::optional<std::string>> {
    const auto& x = v[m];
    if (x.is_null() && nullable) return std::optional<std::string>();
    if (!x.is_string() || !json::is_content_id(x.get_ref<const std::string&>()))
      return fail(Errc::invalid_task, fmt::format("{} must be a \"sha256:…\" id{}", m, nullable ? " or null" : ""),
                  std::string("/") + m);
    return std::optional<std::string>(x.get<std::string>());
  };
  Task t;
  auto id = text("id", false);
  if (!id) return std::unexpected(id.error());
  t.id = **id;
  for (auto [member, slot] : {std::pair{"parentId", &t.parent_id}, std::pair{"toolRevision", &t.tool_revision},
                              std::pair{"settingsRevision", &t.settings_revision}}) {
    auto x = text(member, true);
    if (!x) return std::unexpected(x.error());
    *slot = std::move(*x);
  }
  if (!v["role"].is_string()) return fail(Errc::invalid_task, "role must be system, user, assistant or tool", "/role");
  auto role = parse_role(v["role"].get_ref<const std::string&>());
  if (!role) return fail(Errc::invalid_task, role.error().message, "/role");
  t.role = *role;
  if (!v["state"].is_string()) return fail(Errc::invalid_task, "state must be a string", "/state");
  auto state = parse_state(v["state"].get_ref<const std::string&>());
  if (!state) return fail(Errc::invalid_task, state.error().message, "/state");
  t.state = *state;
  if (!v["labels"].is_array()) return fail(Errc::invalid_task, "labels must be an array of strings", "/labels");
  for (const auto& l : v["labels"]) {
    if (!l.is_string()) return fail(Errc::invalid_task, "labels must be an array of strings", "/labels");
    t.labels.push_back(l.get<std::string>());
  }
  t.content = v["content"];
  if (!v["createdBy"].is_null()) {
    auto by = parse_provenance(v["createdBy"]);
    if (!by) return std::unexpected(by.error());
    t.created_by = std::move(*by);
  }
  if (auto ok = check_invariants(t); !ok) {
    // check_invariants names the task in `where`; here `where` is a pointer into `v`.
    const bool pointer = !ok.error().where.empty() && ok.error().where.front() == '/';
    return fail(ok.error().code, ok.error().message, pointer ? ok.error().where : "");
  }
  return t;
}

json::Value identity(const Task& task) {
  json::Value id = {{"role", role_name(task.role)}, {"content", task.content}};
  if (task.parent_id) id["parentId"] = *task.parent_id;
  if (!task.labels.empty()) id["labels"] = task.labels;
  if (task.tool_revision) id["toolRevision"] = *task.tool_revision;
  if (task.settings_revision) id["settingsRevision"] = *task.settings_revision;
  if (task.created_by) id["createdBy"] = provenance_json(*task.created_by);
  return id;
}

Result<std::string> compute_id(const Task& task) { return json::content_id_of(identity(task)); }

Result<void> check_invariants(const Task& task) {
  if (auto shape = check_content(task.role, task.content); !shape) return shape;
  const auto kind = content_kind(task.content);
  if (*kind == "functionCall" && task.state == State::completed && !task.tool_revision)
    return fail(Errc::invalid_task,
                "T3: a completed function call must be pinned to a tool revision (toolRevision is missing)",
                task.id);
  auto id = compute_id(task);
  if (!id) return std::unexpected(id.error());
  if (*id != task.id)
    return fail(Errc::integrity, fmt::format("T4: task id {} is not the hash of its content ({})", task.id, *id),
                task.id);
  return {};
}

}  // namespace taskyon::tasks
