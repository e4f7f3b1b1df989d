// R1-R6: the tool registry on a real SQLite store (store/store.h).
#include <string>

#include "taskyon/diagnostics/groups.h"
#include "taskyon/invoke/invoke.h"
#include "taskyon/native/native.h"
#include "taskyon/tasks/compiler.h"

namespace taskyon::diagnostics {
namespace {

using json::Value;

// RFC 8785 §3.2.2: the input, and the canonical bytes the RFC prints.
constexpr std::string_view kRfc8785Input = R"({
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
})";
constexpr std::string_view kRfc8785Output =
    "{\"literals\":[null,true,false],\"numbers\":[333333333.3333333,1e+30,4.5,0.002,1e-27],"
    "\"string\":\"\xE2\x82\xAC$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}";
// sha256sum of kRfc8785Output (coreutils), an independent computation.
constexpr std::string_view kRfc8785Id = "sha256:2d5e01a318d0f0879ab568c4be289c8b1f64ef8921a53c6277d5e069978baacb";

Outcome rfc8785_vector(Env&) {
  const Value v = need(json::parse(kRfc8785Input), "the RFC 8785 example does not parse");
  const std::string canonical = need(json::canonicalize(v), "the RFC 8785 example does not canonicalize");
  expect(canonical == kRfc8785Output, "canonical JSON differs from RFC 8785 §3.2.2: " + canonical);
  expect(json::content_id(canonical) == kRfc8785Id, "the content id is not SHA-256 of the canonical bytes");
  expect(need(json::content_id_of(v), "content_id_of") == kRfc8785Id, "content_id_of disagrees");
  return pass("RFC 8785 §3.2.2 canonicalizes byte for byte and its id is its SHA-256");
}

Outcome reordered_same_id(Env& env) {
  const std::string a = R"({"name":"add","description":"Adds.","execution":"sandboxed-code","runtime":"javascript",
    "parameters":{"type":"object","properties":{"a":{"type":"number"}}},"code":"({a}) => a + 1"})";
  const std::string b = R"({ "code" : "({a}) => a + 1", "runtime":"javascript",
      "parameters": {"properties": {"a": {"type":"number"}}, "type":"object"},
      "execution":"sandboxed-code","description":"Adds.","name":"add" })";
  auto install = [&](const std::string& text) {
    auto def = need(json::parse(text), "manifest text");
    return need(env.store().install(need(registry::parse_manifest(def), "manifest")), "install").id;
  };
  const std::string id_a = install(a), id_b = install(b);
  expect(id_a == id_b, "the same manifest reordered and re-indented got another revision id");
  auto rev = need(env.store().revision(id_a), "the stored revision");
  expect(json::content_id(rev.definition) == id_a, "the stored definition does not hash to its id");
  std::string changed = a;
  changed.replace(changed.find("a + 1"), 5, "a + 2");
  expect(install(changed) != id_a, "a changed manifest kept the old revision id");
  expect(query_int(env.store(), "SELECT COUNT(*) FROM revisions") == 2, "expected exactly two stored revisions");
  return pass("key order and white space do not change the id; one changed character does");
}

Outcome database_refuses_changes(Env& env) {
  auto& st = env.store();
  const auto id = need(st.install(js_manifest("echo", "x => x")), "install").id;
  auto upd = st.database().exec("UPDATE revisions SET definition = '{}' WHERE id = '" + id + "'");
  expect(!upd, "the database let a stored revision be updated");
  expect(!st.database().exec("DELETE FROM revisions"), "the database let a stored revision be deleted");
  expect(!st.database().exec("DELETE FROM bindings"), "the database let a binding be deleted");
  need(st.revision(id), "the revision after the refused changes");
  return pass("UPDATE and DELETE on revisions and bindings are refused by the database itself");
}

Outcome tampered_revision_detected(Env& env) {
  auto& st = env.store();
  const auto id = need(st.install(js_manifest("echo", "x => x")), "install").id;
  need(st.database().exec("DROP TRIGGER revisions_no_update"), "dropping the update trigger");
  const auto evil = need(json::canonicalize(js_tool("echo", "x => 666")), "canonical");
  need(st.database().exec("UPDATE revisions SET definition = '" + evil + "' WHERE id = '" + id + "'"),
       "editing the row behind the store's back");
  for (auto r : {st.revision(id), st.resolve("echo"), st.resolve(id)}) {
    expect(!r, "a tampered revision was returned as valid");
    expect(r.error().code == Errc::integrity, "a tampered revision gave " + r.error().describe());
  }
  return pass("a row edited behind the store's back is reported as integrity error by id and by name");
}

Outcome activation_changes_only_binding(Env& env) {
  auto& st = env.store();
  const auto v1 = need(st.install(js_manifest("echo", "x => x")), "install v1").id;
  const auto v2 = need(st.install(js_manifest("echo", "x => [x]")), "install v2").id;
  auto snapshot = [&] {
    std::string all;
    auto stmt = need(st.database().prepare("SELECT * FROM revisions ORDER BY id"), "select revisions");
    while (need(stmt.step(), "step")) all += stmt.text(0) + "|" + stmt.text(1) + "|" + stmt.text(3) + "\n";
    return all;
  };
  const std::string before = snapshot();
  expect(need(st.resolve("echo"), "resolve").id == v1, "the first install did not bind the name");
  need(st.activate("echo", v2), "activate v2");
  expect(snapshot() == before, "activation changed the revisions table");
  expect(need(st.resolve("echo"), "resolve").id == v2, "the name does not point to the activated revision");
  expect(need(st.revision(v1), "v1").id == v1, "the old revision is gone");
  auto history = need(st.history("echo"), "history");
  expect(history.size() == 2 && history[0].revision == v1 && history[1].revision == v2,
         "the binding history is not v1 then v2");
  const auto other = need(st.install(js_manifest("other", "x => x")), "install other").id;
  expect(!st.activate("echo", other), "a name was bound to another tool's revision");
  return pass("activation adds a binding and leaves every revision byte for byte as it was");
}

Outcome lookup_name_id_prefix(Env& env) {
  auto& st = env.store();
  const auto id = need(st.install(js_manifest("echo", "x => x")), "install").id;
  const std::string hex = id.substr(7);
  for (const std::string& ref : {std::string("echo"), id, id.substr(0, 19), hex.substr(0, 12), hex})
    expect(need(st.resolve(ref), "resolve " + ref).id == id, "lookup of " + ref + " found another revision");
  expect(!st.resolve(hex.substr(0, 11)), "an 11-digit prefix was accepted");
  auto unknown = st.resolve("no_such_tool");
  expect(!unknown && unknown.error().code == Errc::not_found, "an unknown name was not not_found");
  return pass("name, full id and 12-digit prefix find the revision; shorter prefixes and unknown names do not");
}

Outcome ambiguous_prefix_is_error(Env& env) {
  auto& st = env.store();
  // Two ids sharing 12 hex digits cannot be made by hashing: plant them.
  const std::string a = "sha256:abcdefabcdef" + std::string(52, '1');
  const std::string b = "sha256:abcdefabcdef" + std::string(52, '2');
  for (const auto& id : {a, b})
    need(st.database().exec("INSERT INTO revisions VALUES ('" + id + "', 'x', 'sandboxed-code', '{}', 'now')"),
         "planting a revision row");
  auto r = st.resolve("abcdefabcdef");
  expect(!r, "an ambiguous prefix resolved to one revision");
  expect(r.error().code == Errc::ambiguous, "an ambiguous prefix gave " + r.error().describe());
  expect(r.error().message.find(a) != std::string::npos && r.error().message.find(b) != std::string::npos,
         "the ambiguity error does not list both candidates");
  return pass("a prefix of two revisions is an ambiguous error listing both");
}

registry::Manifest native_manifest(const std::string& id) {
  return need(registry::parse_manifest({{"name", "nat"},
                                        {"description", "d"},
                                        {"parameters", {{"type", "object"}}},
                                        {"execution", "trusted-native"},
                                        {"native", id}}),
              "native manifest");
}

Outcome unknown_native_refused(Env& env) {
  auto r = env.store().install(native_manifest("taskyon.no_such_function"), store::Activate::if_unbound,
                               store::Trust{"diagnostics", "R5 check"});
  expect(!r, "a manifest naming an unknown native function was installed");
  expect(r.error().code == Errc::invalid_manifest, "unknown native id gave " + r.error().describe());
  expect(query_int(env.store(), "SELECT COUNT(*) FROM revisions") == 0, "a revision was stored anyway");
  return pass("a trusted-native manifest naming a function this host lacks is refused, even with trust");
}

Outcome native_code_never_crosses(Env& env) {
  expect(!native::all().empty(), "this host has no native function to check");
  for (const auto& f : native::all()) {
    const auto m = need(registry::parse_manifest(native::manifest_for(f, "x")), "manifest of " + f.id);
    expect(m.definition.size() == 5, "the serialized form of " + f.id + " carries more than its definition");
  }
  // Run one through the path every call takes: it must never reach a sandbox.
  const native::NativeFunction* f = native::find("taskyon.sha256");
  expect(f != nullptr, "this host has no taskyon.sha256 native function");
  auto& st = env.store();
  need(st.install(need(registry::parse_manifest(native::manifest_for(*f, "nat")), "manifest"),
                  store::Activate::if_unbound, store::Trust{"diagnostics", "R5 check"}),
       "install taskyon.sha256");
  sandbox::Pool pool;  // needs no runtime until a sandbox starts
  auto compiled = need(tasks::compile(tasks::function_call("nat", {{"text", "abc"}}), {{}, st.resolver()}),
                       "compiling a call");
  auto ran = need(invoke::run_call(st, pool, compiled.task, {}), "running taskyon.sha256");
  expect(ran.ok() && ran.outcome.value == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
         "the native call did not return SHA-256(\"abc\"): " + ran.outcome.value.dump() + ran.outcome.error);
  expect(pool.sandboxes().empty() && pool.destructions().empty(), "a native tool call started a sandbox");
  return pass("native manifests hold only name, description, parameters, execution and id; calls never "
              "reach a sandbox");
}

Outcome trusted_native_needs_trust(Env& env) {
  auto& st = env.store();
  const std::string id = "taskyon.sha256";
  auto refused = st.install(native_manifest(id));
  expect(!refused, "a trusted-native tool was installed without trust");
  expect(refused.error().code == Errc::bad_usage, "install without trust gave " + refused.error().describe());
  expect(query_int(st, "SELECT COUNT(*) FROM revisions") == 0, "a revision was stored without trust");
  const auto ok = need(st.install(native_manifest(id), store::Activate::if_unbound,
                                  store::Trust{"diagnostics-user", "R6 check"}),
                       "install with trust");
  auto rev = need(st.revision(ok.id), "the trusted revision");
  expect(rev.trust && rev.trust->by == "diagnostics-user" && !rev.trust->at.empty(), "the trust was not recorded");
  return pass("install without --trust is refused; with it, who and when are recorded");
}

Outcome database_refuses_untrusted(Env& env) {
  auto& st = env.store();
  const auto def = need(json::canonicalize(native_manifest("taskyon.sha256").definition), "canonical");
  auto r = st.database().exec("INSERT INTO revisions VALUES ('" + json::content_id(def) +
                              "', 'nat', 'trusted-native', '" + def + "', 'now')");
  expect(!r, "the database stored a trusted-native revision without a trust record");
  return pass("the database itself refuses a host-authority revision without a trust record");
}

}  // namespace

void add_registry_checks(Registry& r) {
  add(r, {"R1", "rfc8785_vector_hashes_to_its_id", "RFC 8785 §3.2.2 canonicalizes byte for byte; id = SHA-256",
          rfc8785_vector});
  add(r, {"R1", "reordered_manifest_same_id", "the same manifest reordered has the same id; a changed one, another",
          reordered_same_id});
  add(r, {"R2", "database_refuses_revision_changes", "UPDATE/DELETE of revisions and bindings refused by SQLite",
          database_refuses_changes});
  add(r, {"R2", "tampered_revision_detected", "a row edited behind the store's back is an integrity error",
          tampered_revision_detected});
  add(r, {"R3", "activation_changes_only_binding", "activating v2 leaves the revisions table unchanged",
          activation_changes_only_binding});
  add(r, {"R4", "lookup_by_name_id_and_prefix", "name, full id, 12+ digit prefix; shorter or unknown refused",
          lookup_name_id_prefix});
  add(r, {"R4", "ambiguous_prefix_is_error", "a prefix of two revisions is an error listing both",
          ambiguous_prefix_is_error});
  add(r, {"R5", "unknown_native_id_refused", "a trusted-native manifest naming no host function is refused",
          unknown_native_refused});
  add(r, {"R5", "native_code_never_crosses", "native manifests carry only the id; calls never reach a sandbox",
          native_code_never_crosses});
  add(r, {"R6", "trusted_native_needs_recorded_trust", "install without trust refused; with it, recorded",
          trusted_native_needs_trust});
  add(r, {"R6", "database_refuses_untrusted_native", "SQLite refuses a trusted-native row without trust",
          database_refuses_untrusted});
}

}  // namespace taskyon::diagnostics
