#include "taskyon/host/views.h"

#include "taskyon/capability/policy.h"
#include "taskyon/invoke/runtime_record.h"

namespace taskyon::host {

using json::Value;

Value tool_list_json(const std::vector<store::ToolSummary>& tools) {
  Value out = Value::array();
  for (const auto& t : tools)
    out.push_back({{"name", t.name}, {"active", t.active_revision.empty() ? Value() : Value(t.active_revision)},
                   {"revisions", t.revisions}});
  return out;
}

Value tool_show_json(const store::RevisionRecord& rev, bool is_active) {
  Value out = {{"revision", rev.id}, {"name", rev.name}, {"createdAt", rev.created_at}, {"active", is_active},
               {"definition", rev.manifest.definition}};
  if (rev.trust) out["trust"] = {{"by", rev.trust->by}, {"at", rev.trust->at}, {"reason", rev.trust->reason}};
  return out;
}

Value install_json(const store::InstallResult& r) {
  return {{"name", r.name}, {"revision", r.id}, {"created", r.created}, {"activated", r.activated},
          {"active", r.active ? Value(*r.active) : Value()}};
}

Value invocation_json(const invoke::Invocation& inv) {
  const auto& o = inv.outcome;
  Value logs = inv.result.content["toolResult"]["logs"];
  Value out = {{"task", inv.call.id},
               {"resultTask", inv.result.id},
               {"tool", {{"name", inv.tool.manifest.name}, {"revision", inv.tool.revision}}},
               {"settingsRevision", inv.call.settings_revision.value_or("")},
               {"status", sandbox::status_name(o.status)},
               {"logs", logs},
               {"sandbox", {{"fresh", o.fresh_sandbox}, {"destroyed", o.destroyed ? Value(*o.destroyed) : Value()}}},
               {"durationMs", o.duration.count()},
               {"plantedBy", inv.call.created_by ? tasks::provenance_json(*inv.call.created_by) : Value()}};
  const auto& result = inv.result.content["toolResult"];
  out["runtime"] = result.contains("runtime") ? result["runtime"] : Value();  // invoke/runtime_record.h
  if (inv.ok())
    out["result"] = o.value;
  else
    out["error"] = {{"code", sandbox::status_name(o.status)}, {"message", o.error}};
  return out;
}

Result<Value> task_view(store::Store& store, const tasks::Task& task) {
  Value out = tasks::task_json(task);
  const auto kind = tasks::content_kind(task.content).value_or("");
  if (kind == "toolResult") out["runtime"] = invoke::recorded_runtime(task);
  if (kind == "functionCall") {
    auto children = store.children(task.id);
    if (!children) return std::unexpected(children.error());
    out["runtime"] = Value();
    for (const auto& c : *children)
      if (c.role == tasks::Role::tool) out["runtime"] = invoke::recorded_runtime(c);
  }
  return out;
}

Result<Value> tree_json(store::Store& store, const tasks::Task& root) {
  Value node = tasks::task_json(root);
  node["children"] = Value::array();
  auto children = store.children(root.id);
  if (!children) return std::unexpected(children.error());
  for (const auto& c : *children) {
    auto sub = tree_json(store, c);
    if (!sub) return sub;
    node["children"].push_back(std::move(*sub));
  }
  return node;
}

Value audit_row_json(const store::AuditEntry& e) {
  return {{"seq", e.seq},
          {"at", e.at},
          {"revision", e.revision},
          {"capability", e.capability},
          {"target", e.target},
          {"access", e.access.empty() ? Value() : Value(e.access)},
          {"verdict", capability::verdict_name(e.verdict)},
          {"reason", e.reason},
          {"task", e.task && !e.task->empty() ? Value(*e.task) : Value()}};  // no task: null, never ""
}

Value error_json(const Error& error) {
  Value e = {{"code", code_name(error.code)}, {"message", error.message}};
  if (!error.where.empty()) e["where"] = error.where;
  return {{"error", e}};
}

}  // namespace taskyon::host
