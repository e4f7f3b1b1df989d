// The C ABI of abi.h: parse the input, call the rule, wrap the answer.
// Written for a build without exceptions (wasm/): no nlohmann accessor that
// throws (at(), get<>() on a wrong type) is used on input.
#include "taskyon/abi/abi.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taskyon/capability/decision_json.h"
#include "taskyon/capability/policy.h"
#include "taskyon/capability/url.h"
#include "taskyon/json/json.h"
#include "taskyon/registry/manifest.h"
#include "taskyon/registry/schema.h"
#include "taskyon/tasks/compiler.h"
#include "taskyon/tasks/task.h"
#include "taskyon/tasks/tool_requests.h"

namespace {

using taskyon::Errc;
using taskyon::Error;
using taskyon::json::Value;
namespace cap = taskyon::capability;
namespace reg = taskyon::registry;
namespace tasks = taskyon::tasks;

// Sorted members (nlohmann's std::map), no invalid UTF-8 can stop the dump.
std::string dump(const Value& v) { return v.dump(-1, ' ', false, Value::error_handler_t::replace); }

char* hand_out(const std::string& text, size_t* out_len) {
  char* out = taskyon_alloc(text.size() + 1);
  if (!out) {
    if (out_len) *out_len = 0;
    return nullptr;
  }
  std::memcpy(out, text.data(), text.size());
  out[text.size()] = '\0';
  if (out_len) *out_len = text.size();
  return out;
}

Value error_value(const Error& e) {
  return Value{{"ok", false},
               {"error", {{"code", std::string(taskyon::code_name(e.code))}, {"message", e.message}, {"where", e.where}}}};
}

template <typename Rule>
char* answer(const char* in, size_t in_len, size_t* out_len, Rule rule) {
  const std::string_view text = in ? std::string_view(in, in_len) : std::string_view();
  taskyon::Result<Value> r = [&]() -> taskyon::Result<Value> {
    auto input = taskyon::json::parse(text);
    if (!input) return std::unexpected(input.error());
    return rule(*input);
  }();
  return hand_out(dump(r ? Value{{"ok", true}, {"value", std::move(*r)}} : error_value(r.error())), out_len);
}

std::unexpected<Error> shape(std::string message, std::string where) {
  return taskyon::fail(Errc::bad_usage, std::move(message), std::move(where));
}

taskyon::Result<std::string> string_member(const Value& in, const char* name, const char* fallback = nullptr) {
  if (!in.is_object()) return shape("the input must be a JSON object", "");
  auto it = in.find(name);
  if (it == in.end()) {
    if (fallback) return std::string(fallback);
    return shape(std::string("the input needs \"") + name + "\" (a string)", std::string("/") + name);
  }
  if (!it->is_string()) return shape(std::string("\"") + name + "\" must be a string", std::string("/") + name);
  return it->get_ref<const std::string&>();
}

Value text_or_null(const std::string& s) { return s.empty() ? Value() : Value(s); }

std::string_view host_kind_name(cap::HostKind kind) {
  switch (kind) {
    case cap::HostKind::none: return "none";
    case cap::HostKind::empty: return "empty";
    case cap::HostKind::domain: return "domain";
    case cap::HostKind::ipv4: return "ipv4";
    case cap::HostKind::ipv6: return "ipv6";
  }
  return "none";
}

taskyon::Result<Value> rule_canonicalize(const Value& in) {
  auto text = taskyon::json::canonicalize(in);
  if (!text) return std::unexpected(text.error());
  std::string id = taskyon::json::content_id(*text);
  return Value{{"canonical", std::move(*text)}, {"id", std::move(id)}};
}

taskyon::Result<Value> rule_manifest(const Value& in) {
  auto m = reg::parse_manifest(in);
  if (!m) return std::unexpected(m.error());
  auto id = reg::revision_id(*m);
  if (!id) return std::unexpected(id.error());
  return Value{{"revision", *id},
               {"name", m->name},
               {"execution", std::string(reg::execution_name(m->execution))},
               {"needsTrust", reg::needs_trust(*m)}};
}

taskyon::Result<Value> rule_validate_arguments(const Value& in) {
  if (!in.is_object()) return shape("the input must be a JSON object", "");
  auto args = in.find("arguments");
  if (args == in.end()) return shape("the input needs \"arguments\"", "/arguments");
  Value parameters;
  if (auto def = in.find("manifest"); def != in.end()) {
    auto m = reg::parse_manifest(*def);  // checks the parameters schema too
    if (!m) return std::unexpected(m.error());
    parameters = std::move(m->parameters);
  } else if (auto p = in.find("parameters"); p != in.end()) {
    if (auto ok = reg::check_parameters_schema(*p); !ok) return std::unexpected(ok.error());
    parameters = *p;
  } else {
    return shape("the input needs \"parameters\" (a JSON Schema) or \"manifest\"", "/parameters");
  }
  if (auto ok = reg::validate_arguments(parameters, *args); !ok) return std::unexpected(ok.error());
  return Value{{"valid", true}};
}

taskyon::Result<Value> rule_parse_url(const Value& in) {
  auto text = string_member(in, "url");
  if (!text) return std::unexpected(text.error());
  auto url = cap::parse_url(*text);
  if (!url) return std::unexpected(url.error());
  return Value{{"href", text_or_null(url->href())},
               {"origin", text_or_null(url->origin())},
               {"scheme", url->scheme},
               {"special", url->special()},
               {"host", url->special() ? Value(url->host.serialize()) : Value()},
               {"hostKind", std::string(host_kind_name(url->host.kind))},
               {"hostInput", url->special() ? Value(url->host_input) : Value()},
               {"port", url->port ? Value(*url->port) : Value()},
               {"path", url->special() ? Value(url->path) : Value()},
               {"query", url->query ? Value(*url->query) : Value()},
               {"fragment", url->fragment ? Value(*url->fragment) : Value()},
               {"hasCredentials", url->has_credentials()}};
}

taskyon::Result<Value> rule_decide_fetch(const Value& in) {
  auto url = string_member(in, "url");
  if (!url) return std::unexpected(url.error());
  auto method = string_member(in, "method", "GET");
  if (!method) return std::unexpected(method.error());
  cap::Decision d;
  if (auto list = in.find("resolved"); list != in.end()) {
    if (!list->is_array()) return shape("\"resolved\" must be an array of IP address strings", "/resolved");
    std::vector<cap::IpAddress> answers;
    for (std::size_t i = 0; i < list->size(); ++i) {
      const Value& a = (*list)[i];
      auto ip = a.is_string() ? cap::IpAddress::parse(a.get_ref<const std::string&>()) : std::nullopt;
      if (!ip)
        return shape("\"resolved\" entries must be IPv4 (dotted decimal) or IPv6 address text",
                     "/resolved/" + std::to_string(i));
      answers.push_back(*ip);
    }
    d = cap::decide_url(*url, *method, answers);
  } else {
    d = cap::decide_url_unresolved(*url, *method);
  }
  Value out = cap::decision_json(d);
  out["awaitingResolution"] = d.awaiting_resolution;
  return out;
}

// ---------------------------------------------------------------- the task compiler

// The registry as a table the caller read from its store:
// {REF: {"definition": MANIFEST, "settingsRevision"?: "sha256:…"}}, REF a
// tool name (its active binding) or a full revision id. A REF not in it is
// not_found, as in a store without it.
taskyon::Result<tasks::ToolResolver> table_resolver(const Value& in) {
  auto it = in.find("registry");
  if (it == in.end()) return tasks::ToolResolver([](std::string_view ref) -> taskyon::Result<tasks::ResolvedTool> {
    return taskyon::fail(Errc::not_found, "no tool \"" + std::string(ref) + "\" in the registry");
  });
  if (!it->is_object()) return shape("\"registry\" must be an object {REF: {definition, settingsRevision?}}", "/registry");
  auto tools = std::make_shared<std::map<std::string, tasks::ResolvedTool, std::less<>>>();
  for (const auto& [ref, entry] : it->items()) {
    const std::string at = "/registry/" + ref;
    if (!entry.is_object() || !entry.contains("definition"))
      return shape("a registry entry is {definition, settingsRevision?}", at);
    for (const auto& [key, _] : entry.items())
      if (key != "definition" && key != "settingsRevision") return shape("unknown field \"" + key + "\"", at + "/" + key);
    auto m = reg::parse_manifest(entry["definition"]);
    if (!m) return std::unexpected(m.error());
    auto id = reg::revision_id(*m);
    if (!id) return std::unexpected(id.error());
    if (ref != m->name && ref != *id)
      return shape("a registry entry's key is its tool's name or its revision id (" + *id + ")", at);
    std::string settings = reg::empty_settings_revision();
    if (auto sr = entry.find("settingsRevision"); sr != entry.end()) {
      if (!sr->is_string() || !taskyon::json::is_content_id(sr->get_ref<const std::string&>()))
        return shape("settingsRevision must be a \"sha256:…\" id", at + "/settingsRevision");
      settings = sr->get<std::string>();
    }
    tools->insert_or_assign(ref, tasks::ResolvedTool{*id, std::move(settings), std::move(*m)});
  }
  return tasks::ToolResolver([tools](std::string_view ref) -> taskyon::Result<tasks::ResolvedTool> {
    if (auto found = tools->find(ref); found != tools->end()) return found->second;
    return taskyon::fail(Errc::not_found, "no tool \"" + std::string(ref) + "\" in the registry");
  });
}

// "lineage": [TASK…] in task JSON, root first, each one's parentId the one
// before it; every task re-hashed (tasks::parse_task).
taskyon::Result<std::vector<tasks::Task>> lineage_member(const Value& in, bool required) {
  auto it = in.find("lineage");
  std::vector<tasks::Task> out;
  if (it == in.end()) {
    if (required) return shape("the input needs \"lineage\" (the call's tasks, root first, the call last)", "/lineage");
    return out;
  }
  if (!it->is_array()) return shape("\"lineage\" must be an array of tasks, root first", "/lineage");
  for (std::size_t i = 0; i < it->size(); ++i) {
    const std::string at = "/lineage/" + std::to_string(i);
    auto t = tasks::parse_task((*it)[i]);
    if (!t) return taskyon::fail(t.error().code, t.error().message, at + t.error().where);
    const std::optional<std::string> parent = out.empty() ? std::nullopt : std::optional<std::string>(out.back().id);
    if (t->parent_id != parent)
      return shape(out.empty() ? "the lineage starts at a root (parentId null)" : "each task's parentId is the id of the one before it",
                   at + "/parentId");
    out.push_back(std::move(*t));
  }
  if (required && out.empty()) return shape("\"lineage\" needs at least the call", "/lineage");
  return out;
}

Value refusal_value(const tasks::ToolRequestRefusal& r) {
  return Value{{"refused", {{"code", r.code}, {"message", r.message}, {"detail", r.detail}}}};
}

// The call a request came from: the lineage's last task, a pinned function call.
taskyon::Result<tasks::Provenance> calling(const std::vector<tasks::Task>& lineage) {
  const tasks::Task& call = lineage.back();
  auto kind = tasks::content_kind(call.content);
  if (!kind || *kind != "functionCall" || !call.tool_revision)
    return shape("the lineage's last task must be the function call making the request (pinned)", "/lineage");
  return tasks::Provenance{call.id, *call.tool_revision};
}

taskyon::Result<Value> rule_compile(const Value& in) {
  if (!in.is_object()) return shape("the input must be a JSON object", "");
  auto draft_it = in.find("draft");
  if (draft_it == in.end()) return shape("the input needs \"draft\" ({role, content, labels?})", "/draft");
  auto registry = table_resolver(in);
  if (!registry) return std::unexpected(registry.error());
  auto lineage = lineage_member(in, false);
  if (!lineage) return std::unexpected(lineage.error());
  auto draft = tasks::parse_draft(*draft_it, "/draft");
  if (!draft) return std::unexpected(draft.error());
  auto compiled = tasks::compile(*draft, tasks::Scope{std::move(*lineage), std::move(*registry)});
  if (!compiled) return std::unexpected(compiled.error());
  Value tool;
  if (compiled->tool)
    tool = Value{{"revision", compiled->tool->tool.revision},
                 {"settingsRevision", compiled->tool->tool.settings_revision},
                 {"name", compiled->tool->tool.manifest.name},
                 {"definedAt", compiled->tool->defined_at ? Value(*compiled->tool->defined_at) : Value()}};
  return Value{{"task", tasks::task_json(compiled->task)}, {"tool", std::move(tool)}};
}

// The input of a tool request: {"request", "lineage" (the call last), "registry"?}.
struct ToolRequestInput {
  const Value* request;
  std::vector<tasks::Task> lineage;
  tasks::ToolResolver registry;
};

taskyon::Result<ToolRequestInput> tool_request_input(const Value& in, const char* shape_of_request) {
  if (!in.is_object()) return shape("the input must be a JSON object", "");
  auto request = in.find("request");
  if (request == in.end()) return shape(std::string("the input needs \"request\" (the tool's ") + shape_of_request + ")", "/request");
  auto registry = table_resolver(in);
  if (!registry) return std::unexpected(registry.error());
  auto lineage = lineage_member(in, true);
  if (!lineage) return std::unexpected(lineage.error());
  return ToolRequestInput{&*request, std::move(*lineage), std::move(*registry)};
}

taskyon::Result<Value> rule_compile_subtasks(const Value& in) {
  auto input = tool_request_input(in, "{drafts}");
  if (!input) return std::unexpected(input.error());
  std::size_t already = 0;
  if (auto a = in.find("already"); a != in.end()) {
    if (!a->is_number_unsigned()) return shape("\"already\" must be a count of subtasks", "/already");
    already = a->get<std::size_t>();
  }
  auto by = calling(input->lineage);
  if (!by) return std::unexpected(by.error());
  auto compiled = tasks::compile_tool_drafts(*input->request, *by,
                                             tasks::Scope{std::move(input->lineage), std::move(input->registry)}, already);
  if (!compiled) return refusal_value(compiled.error());
  Value out = Value::array();
  for (const auto& t : *compiled) out.push_back(tasks::task_json(t));
  return Value{{"tasks", std::move(out)}};
}

taskyon::Result<Value> rule_resolve_invocation(const Value& in) {
  auto input = tool_request_input(in, "{name}");
  if (!input) return std::unexpected(input.error());
  auto found = tasks::resolve_invocation(*input->request, input->lineage, input->registry);
  if (!found) return refusal_value(found.error());
  return Value{{"tool", found->tool.revision}, {"settingsRevision", found->tool.settings_revision}};
}

taskyon::Result<Value> rule_check_task(const Value& in) {
  if (!in.is_object() || !in.contains("task")) return shape("the input needs \"task\" (a task in its JSON form)", "/task");
  auto t = tasks::parse_task(in["task"]);
  if (!t) return taskyon::fail(t.error().code, t.error().message, "/task" + t.error().where);
  return Value{{"task", tasks::task_json(*t)}};
}

taskyon::Result<Value> rule_info(const Value&) {
#if defined(__wasm__)
  const char* build = "wasm32-wasi";
#else
  const char* build = "native";
#endif
  return Value{{"abi", 2}, {"idna", true}, {"build", build}};
}

}  // namespace

extern "C" {

char* taskyon_alloc(size_t size) { return static_cast<char*>(std::malloc(size ? size : 1)); }
void taskyon_free(char* buffer) { std::free(buffer); }

char* taskyon_canonicalize(const char* in, size_t in_len, size_t* out_len) {
  return answer(in, in_len, out_len, rule_canonicalize);
}
char* taskyon_manifest(const char* in, size_t in_len, size_t* out_len) { return answer(in, in_len, out_len, rule_manifest); }
char* taskyon_validate_arguments(const char* in, size_t in_len, size_t* out_len) {
  return answer(in, in_len, out_len, rule_validate_arguments);
}
char* taskyon_parse_url(const char* in, size_t in_len, size_t* out_len) {
  return answer(in, in_len, out_len, rule_parse_url);
}
char* taskyon_decide_fetch(const char* in, size_t in_len, size_t* out_len) {
  return answer(in, in_len, out_len, rule_decide_fetch);
}
char* taskyon_compile(const char* in, size_t in_len, size_t* out_len) { return answer(in, in_len, out_len, rule_compile); }
char* taskyon_compile_subtasks(const char* in, size_t in_len, size_t* out_len) {
  return answer(in, in_len, out_len, rule_compile_subtasks);
}
char* taskyon_resolve_invocation(const char* in, size_t in_len, size_t* out_len) {
  return answer(in, in_len, out_len, rule_resolve_invocation);
}
char* taskyon_check_task(const char* in, size_t in_len, size_t* out_len) {
  return answer(in, in_len, out_len, rule_check_task);
}
char* taskyon_info(const char* in, size_t in_len, size_t* out_len) { return answer(in, in_len, out_len, rule_info); }

}  // extern "C"
