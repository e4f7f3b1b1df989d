// T1-T9: the task compiler, lexical scope and chat projection on a real store
// (tasks/, store/); T2 runs real Node sandboxes.
#include <optional>
#include <string>
#include <vector>

#include "taskyon/diagnostics/groups.h"
#include "taskyon/invoke/invoke.h"
#include "taskyon/tasks/chat.h"
#include "taskyon/tasks/compiler.h"

namespace taskyon::diagnostics {
namespace {

using json::Value;
using tasks::Role;

Value message(const std::string& text) { return {{"message", text}}; }
Value call(const std::string& name, Value args = Value::object()) {
  return {{"functionCall", {{"name", name}, {"arguments", std::move(args)}}}};
}
Value definition(const std::string& name, const std::string& code, const std::string& description = "d") {
  Value d = js_tool(name, code);
  d["description"] = description;
  return {{"toolDefinition", {{"definition", d}}}};
}

std::vector<tasks::Task> lineage_of(Env& env, const std::optional<std::string>& parent) {
  if (!parent) return {};
  return need(env.store().lineage(*parent), "the parent's lineage");
}

// Compiles a draft below `parent` in its lexical scope, as stored.
Result<tasks::Compiled> compile_at(Env& env, Role role, Value content, const std::optional<std::string>& parent) {
  return tasks::compile({role, std::move(content), {}, {}}, {lineage_of(env, parent), env.store().resolver()});
}

// Compiles and stores; FAILs the check on any error.
tasks::Task put(Env& env, Role role, Value content, const std::optional<std::string>& parent) {
  auto c = need(compile_at(env, role, std::move(content), parent), "compiling a draft");
  need(env.store().put_tasks({c.task}), "storing a task");
  return c.task;
}


tasks::Task unpinned_completed_call() {
  tasks::Task t;
  t.role = Role::assistant;
  t.content = call("echo", {{"input", "hi"}});
  t.state = tasks::State::completed;
  t.id = need(tasks::compute_id(t), "hash");
  return t;
}

Outcome pins_before_hashing(Env& env) {
  const auto v1 = install_js(env, "shout", "({input}) => input.toUpperCase()", store::Activate::always);
  auto c1 = need(compile_at(env, Role::assistant, call("shout", {{"input", "hi"}}), std::nullopt), "compile");
  expect(c1.task.tool_revision == v1, "the call is not pinned to the active revision");
  expect(c1.task.settings_revision == registry::empty_settings_revision(), "the settings revision is not pinned");
  expect(c1.task.id == need(tasks::compute_id(c1.task), "hash"), "the id is not the hash of the pinned task");
  const auto v2 = install_js(env, "shout", "({input}) => input + '!'", store::Activate::always);
  auto c2 = need(compile_at(env, Role::assistant, call("shout", {{"input", "hi"}}), std::nullopt), "compile");
  expect(c2.task.tool_revision == v2, "the call was not pinned to the newly active revision");
  expect(c2.task.content == c1.task.content && c2.task.id != c1.task.id,
         "the same call pinned to another revision has the same id: the pin is not hashed");
  return pass("calls carry toolRevision and settingsRevision, and both are inside the hashed id");
}

Outcome runs_pinned_revision(Env& env) {
  auto& st = env.store();
  install_js(env, "shout", "({input}) => input.toUpperCase()", store::Activate::always);
  auto c = need(compile_at(env, Role::assistant, call("shout", {{"input", "hi"}}), std::nullopt), "compile");
  auto first = need(invoke::run_call(st, env.pool(), c.task, {}), "first run");
  expect(first.outcome.value == "HI", "the first run gave " + first.outcome.value.dump() + " " + first.outcome.error);
  install_js(env, "shout", "({input}) => 'v2:' + input", store::Activate::always);
  auto by_name = need(compile_at(env, Role::assistant, call("shout", {{"input", "hi"}}), std::nullopt), "compile v2");
  auto second = need(invoke::run_call(st, env.pool(), by_name.task, {}), "run by name");
  expect(second.outcome.value == "v2:hi", "a new call by name did not run the activated revision");
  auto stored = need(st.task(c.task.id), "the stored first call");
  auto again = need(invoke::run_call(st, env.pool(), stored, {}), "re-run of the stored call");
  expect(again.outcome.value == "HI",
         "the stored call ran " + again.outcome.value.dump() + ", not its pinned revision");
  expect(again.tool.revision == *c.task.tool_revision, "the re-run used another revision");
  return pass("after re-activation a stored call still runs (in a real sandbox) the revision it was pinned to");
}

Outcome api_refuses_unpinned(Env& env) {
  auto r = env.store().put_tasks({unpinned_completed_call()});
  expect(!r, "the store accepted a completed function call without toolRevision");
  expect(r.error().code == Errc::invalid_task, "refused with " + r.error().describe());
  expect(query_int(env.store(), "SELECT COUNT(*) FROM tasks") == 0, "a task row was written anyway");
  return pass("the store refuses a Completed function call without toolRevision");
}

Outcome database_refuses_unpinned(Env& env) {
  const auto t = unpinned_completed_call();
  auto r = env.store().database().exec(
      "INSERT INTO tasks(id, role, kind, content, state, created_at) VALUES ('" + t.id +
      "', 'assistant', 'functionCall', '" + t.content.dump() + "', 'Completed', 'now')");
  expect(!r, "SQLite accepted a completed function call without toolRevision");
  return pass("the database itself refuses a Completed function call without toolRevision");
}

Outcome id_includes_parent(Env& env) {
  const auto a = put(env, Role::user, message("a"), std::nullopt);
  const auto b = put(env, Role::user, message("b"), std::nullopt);
  const auto under_a = put(env, Role::user, message("same"), a.id);
  const auto under_b = put(env, Role::user, message("same"), b.id);
  expect(under_a.id != under_b.id, "the same content under two parents has one id");
  auto unparented = under_a;
  unparented.parent_id.reset();
  expect(need(tasks::compute_id(unparented), "hash") != under_a.id, "the parent is not part of the id");
  return pass("the same content under different parents has different ids");
}

Outcome mismatched_id_refused(Env& env) {
  auto& st = env.store();
  auto t = put(env, Role::user, message("original"), std::nullopt);
  auto forged = t;
  forged.content = message("forged");  // the id of "original" on other content
  auto r = st.put_tasks({forged});
  expect(!r && r.error().code == Errc::integrity, "a task whose id is not its hash was accepted");
  need(st.database().exec("DROP TRIGGER tasks_no_update"), "dropping the update trigger");
  need(st.database().exec("UPDATE tasks SET content = '{\"message\":\"forged\"}' WHERE id = '" + t.id + "'"),
       "editing the row behind the store's back");
  auto loaded = st.task(t.id);
  expect(!loaded && loaded.error().code == Errc::integrity, "a tampered task row was returned as valid");
  return pass("a task whose id is not its hash is refused on write and reported when read");
}

Outcome scoped_to_descendants(Env& env) {
  const auto root = put(env, Role::user, message("root"), std::nullopt);
  const auto def = put(env, Role::system, definition("twice", "({input}) => input + input"), root.id);
  auto inside = need(compile_at(env, Role::assistant, call("twice", {{"input", "a"}}), def.id), "call below it");
  expect(inside.tool && inside.tool->defined_at == def.id, "the call below the definition did not resolve to it");
  const auto sibling = put(env, Role::user, message("other branch"), root.id);
  auto outside = compile_at(env, Role::assistant, call("twice", {{"input", "a"}}), sibling.id);
  expect(!outside && outside.error().code == Errc::not_found, "a sibling branch saw the definition");
  expect(!compile_at(env, Role::assistant, call("twice"), root.id), "the definition's parent saw it");
  install_js(env, "tag", "() => 'registry'", store::Activate::always);
  const auto outer = put(env, Role::system, definition("tag", "() => 'outer'"), std::nullopt);
  const auto inner = put(env, Role::system, definition("tag", "() => 'inner'"), outer.id);
  auto shadowed = need(compile_at(env, Role::assistant, call("tag"), inner.id), "call below two definitions");
  expect(shadowed.tool && shadowed.tool->defined_at == inner.id, "the nearest definition does not shadow");
  auto top = need(compile_at(env, Role::assistant, call("tag"), std::nullopt), "call at the root");
  expect(top.tool && !top.tool->defined_at, "a root call saw a tree definition instead of the registry");
  return pass("a definition is visible below it only, the nearest one shadowing outer ones and the registry");
}

Outcome never_enter_registry(Env& env) {
  auto& st = env.store();
  const auto before = query_int(st, "SELECT COUNT(*) FROM revisions");
  const auto def = put(env, Role::system, definition("local_only", "() => 1"), std::nullopt);
  const auto c = put(env, Role::assistant, call("local_only"), def.id);
  expect(query_int(st, "SELECT COUNT(*) FROM revisions") == before, "a tree definition added a revision row");
  expect(query_int(st, "SELECT COUNT(*) FROM bindings WHERE name = 'local_only'") == 0, "it got a binding");
  auto by_pin = st.revision(*c.tool_revision);
  expect(!by_pin && by_pin.error().code == Errc::not_found, "its revision is in the registry");
  expect(!st.resolve("local_only"), "its name resolves in the registry");
  return pass("defining and calling a tree tool adds no revision and no binding");
}

Outcome only_code_or_pinned_binding(Env& env) {
  const auto rev = install_js(env, "shout", "({input}) => input.toUpperCase()", store::Activate::always);
  Value native = js_tool("nat", "x");
  native.erase("code");
  native.erase("runtime");
  native["execution"] = "trusted-native";
  native["native"] = "taskyon.sha256";
  Value service = js_tool("svc", "x");
  service.erase("code");
  service.erase("runtime");
  service["execution"] = "external-service";
  service["service"] = {{"https", {{"url", "https://example.com/x"}}}};
  for (const auto& bad : {Value{{"toolDefinition", {{"definition", native}}}},
                          Value{{"toolDefinition", {{"definition", service}}}},
                          Value{{"toolDefinition", {{"binding", {{"revision", "shout"}}}}}},
                          Value{{"toolDefinition", {{"binding", {{"revision", rev.substr(0, 20)}}}}}}}) {
    auto r = compile_at(env, Role::system, bad, std::nullopt);
    expect(!r && r.error().code == Errc::invalid_task, "a tree definition was accepted: " + bad.dump());
  }
  const auto bound = put(env, Role::system, {{"toolDefinition", {{"binding", {{"revision", rev}}}}}}, std::nullopt);
  auto c = need(compile_at(env, Role::assistant, call("shout", {{"input", "x"}}), bound.id), "call via binding");
  expect(c.task.tool_revision == rev, "a binding to a full revision id did not pin that revision");
  return pass("native and service definitions, and bindings by name or prefix, are refused; a full id binds");
}

Outcome reduced_signatures(Env& env) {
  auto& st = env.store();
  install_js(env, "reg", "() => 0", store::Activate::always);
  const auto def = put(env, Role::system, definition("reg", "() => 'secret code body'", "inner description"),
                       std::nullopt);
  const auto msg = put(env, Role::user, message("hi"), def.id);
  auto visible = need(tasks::visible_tools(need(st.lineage(msg.id), "lineage"), st.resolver(),
                                           need(st.active_names(), "names")),
                      "visible tools");
  Value tools = tasks::tools_for_completion(visible);
  expect(tools.size() == 1, "expected one tool (the definition shadows the registry tool), got " + tools.dump());
  expect(tools[0].size() == 2 && tools[0]["type"] == "function", "a tool entry carries more than type and function");
  auto& f = tools[0]["function"];
  expect(f.size() == 3 && f.contains("name") && f.contains("description") && f.contains("parameters"),
         "the signature is not exactly name, description, parameters: " + f.dump());
  const std::string text = tools.dump();
  for (const char* leak : {"secret code body", "sandboxed-code", "sha256:", "execution"})
    expect(text.find(leak) == std::string::npos, std::string("the completion tools leak ") + leak);
  return pass("the provider's tools list has name, description and parameters only");
}

Outcome out_of_messages_and_copies(Env& env) {
  auto& st = env.store();
  const auto user = put(env, Role::user, message("hello"), std::nullopt);
  const auto def = put(env, Role::system, definition("hidden", "() => 'visible result'"), user.id);
  auto c = need(compile_at(env, Role::assistant, call("hidden"), def.id), "call").task;
  c.state = tasks::State::completed;
  tasks::Task result;
  result.role = Role::tool;
  result.parent_id = c.id;
  result.content = {{"toolResult", {{"result", "visible result"}, {"logs", Value::array()}}}};
  result.state = tasks::State::completed;
  result.id = need(tasks::compute_id(result), "hash");
  need(st.put_tasks({c, result}), "storing the call and its result");
  const auto done = put(env, Role::assistant, message("done"), result.id);
  auto path = need(st.lineage(done.id), "lineage");
  const Value messages = tasks::model_messages(path);
  for (const auto& text : {messages.dump(), tasks::copy_chat_json(path).dump(), tasks::copy_chat_markdown(path)}) {
    for (const std::string& leak : {std::string("() =>"), std::string("toolDefinition"), def.id.substr(7, 12),
                                    c.tool_revision->substr(7, 12)})
      expect(text.find(leak) == std::string::npos, "a model message or chat copy shows the definition: " + leak);
    expect(text.find("visible result") != std::string::npos, "the tool result is missing from " + text);
  }
  expect(messages.size() == 4, "expected 4 model messages (user, call, result, assistant), got " + messages.dump());
  return pass("model messages and JSON/Markdown copies leave the definition node out");
}

}  // namespace

void add_task_checks(Registry& r) {
  add(r, {"T1", "call_pins_revisions_before_hashing", "calls pin tool and settings revisions inside the hashed id",
          pins_before_hashing});
  add(r, {"T2", "stored_call_runs_pinned_revision", "after re-activation a stored call runs its pinned revision",
          runs_pinned_revision});
  add(r, {"T3", "api_refuses_completed_unpinned_call", "Store refuses a Completed call without toolRevision",
          api_refuses_unpinned});
  add(r, {"T3", "database_refuses_completed_unpinned_call", "SQLite refuses a Completed call without toolRevision",
          database_refuses_unpinned});
  add(r, {"T4", "task_id_includes_parent", "the same content under another parent has another id",
          id_includes_parent});
  add(r, {"T4", "mismatched_task_id_refused", "an id that is not the hash is refused on write and on read",
          mismatched_id_refused});
  add(r, {"T5", "definition_scoped_to_descendants", "definitions are visible below them only; nearest shadows",
          scoped_to_descendants});
  add(r, {"T6", "tree_definition_never_in_registry", "tree definitions add no revision and no binding",
          never_enter_registry});
  add(r, {"T7", "definition_holds_code_or_pinned_binding", "native/service definitions and loose bindings refused",
          only_code_or_pinned_binding});
  add(r, {"T8", "completion_gets_reduced_signatures", "the provider's tools list is name, description, parameters",
          reduced_signatures});
  add(r, {"T9", "definitions_out_of_messages_and_copies", "definition nodes stay out of model messages and copies",
          out_of_messages_and_copies});
}

}  // namespace taskyon::diagnostics
