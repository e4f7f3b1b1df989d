// Native vs wasm (issue 14 item 1, DESIGN §9): every case of the SSRF corpus,
// the WHATWG URL vectors, the RFC 8785 vectors and the example manifests goes
// through the C ABI (abi/abi.h) twice, natively and in the wasm32-wasi module
// under Node (browser/core/core.mjs), and the answers must be the same bytes:
// verdicts, reason classes, reasons, hrefs, canonical text, ids, error codes
// and messages. SKIPs only when the module was not built (`make wasm`; make
// test builds it).
#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "taskyon/abi/abi.h"
#include "taskyon/json/json.h"
#include "test_util.h"

namespace {

namespace fs = std::filesystem;
using taskyon::json::Value;

const fs::path kSource = TASKYON_SOURCE_DIR;
const fs::path kTestdata = TASKYON_TESTDATA;

fs::path module_path() {
  if (const char* env = std::getenv("TASKYON_WASM_MODULE")) return env;
  return kSource / "build-wasm" / "taskyon_core.wasm";
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Value read_json(const fs::path& p) {
  auto v = taskyon::json::parse(read_file(p));
  if (!v) ADD_FAILURE() << p << ": " << v.error().describe();
  return v ? *v : Value();
}

struct Case {
  std::string id;     // where it comes from, for the failure message
  std::string fn;     // a method of browser/core/core.mjs
  std::string input;  // JSON text
};

using AbiFn = char* (*)(const char*, size_t, size_t*);
const std::map<std::string, AbiFn>& functions() {
  static const std::map<std::string, AbiFn> fns = {
      {"canonicalize", taskyon_canonicalize}, {"manifest", taskyon_manifest},
      {"validateArguments", taskyon_validate_arguments}, {"parseUrl", taskyon_parse_url},
      {"decideFetch", taskyon_decide_fetch}, {"compile", taskyon_compile},
      {"compileSubtasks", taskyon_compile_subtasks}, {"resolveInvocation", taskyon_resolve_invocation},
      {"checkTask", taskyon_check_task}, {"info", taskyon_info}};
  return fns;
}

std::string native(const Case& c) {
  size_t len = 0;
  char* out = functions().at(c.fn)(c.input.data(), c.input.size(), &len);
  std::string text(out, len);
  taskyon_free(out);
  return text;
}

void add_url(std::vector<Case>& cases, const std::string& id, const std::string& url, const std::string& method,
             const Value* dns) {
  cases.push_back({id + " parseUrl", "parseUrl", Value{{"url", url}}.dump()});
  cases.push_back({id + " decideFetch unresolved", "decideFetch", Value{{"url", url}, {"method", method}}.dump()});
  Value resolved = dns ? *dns : Value::array();
  cases.push_back(
      {id + " decideFetch", "decideFetch", Value{{"url", url}, {"method", method}, {"resolved", resolved}}.dump()});
}

std::string number_text(const std::string& bits_hex) {
  const std::uint64_t bits = std::strtoull(bits_hex.c_str(), nullptr, 16);
  double d;
  std::memcpy(&d, &bits, sizeof d);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  return buf;
}

Value native_value(const std::string& fn, const Value& input) {
  auto v = taskyon::json::parse(native({"", fn, input.dump()}));
  if (!v || !(*v)["ok"].get<bool>()) ADD_FAILURE() << fn << " " << input.dump().substr(0, 300) << ": " << (v ? v->dump() : "");
  return v ? (*v)["value"] : Value();
}

// The task compiler (compile, compileSubtasks, resolveInvocation, checkTask)
// over the example manifests as a registry table: every tool called with the
// argument shapes above, at the root and as a tool's subtasks, with a tree
// definition shadowing a registry tool, and each refusal a tool can earn.
void add_task_cases(std::vector<Case>& cases, const std::vector<fs::path>& manifests) {
  Value registry = Value::object();
  std::vector<std::string> names;
  for (const auto& p : manifests) {
    if (p.parent_path().filename() != "tools") continue;
    const Value m = read_json(p);
    const std::string name = m["name"].get<std::string>();
    registry[name] = {{"definition", m}};
    registry[native_value("manifest", m)["revision"].get<std::string>()] = {{"definition", m}};
    names.push_back(name);
  }
  registry["add"]["settingsRevision"] = native_value("canonicalize", Value{{"precision", 2}})["id"];
  auto add = [&](const std::string& id, const std::string& fn, const Value& input) {
    cases.push_back({id, fn, input.dump(-1, ' ', false, Value::error_handler_t::strict)});
  };
  const Value root_draft = {{"role", "user"}, {"content", {{"message", "add two numbers"}}}, {"labels", {"demo"}}};
  add("compile root message", "compile", {{"draft", root_draft}});
  const Value root = native_value("compile", {{"draft", root_draft}})["task"];
  const Value lineage0 = Value::array({root});
  // A tree definition below the root, shadowing "uppercase" for its descendants.
  Value shadow = read_json(kSource / "examples" / "revisions" / "uppercase-v2.json");
  const Value def_draft = {{"role", "assistant"}, {"content", {{"toolDefinition", {{"definition", shadow}}}}}};
  add("compile tree definition", "compile", {{"draft", def_draft}, {"lineage", lineage0}, {"registry", registry}});
  const Value definition = native_value("compile", {{"draft", def_draft}, {"lineage", lineage0}, {"registry", registry}})["task"];
  const Value lineage1 = Value::array({root, definition});
  for (const auto& name : names) {
    for (const Value& args : {Value::object(), Value{{"num1", 1}, {"num2", 2}}, Value{{"input", "x"}}, Value{{"step", 1}}}) {
      const Value draft = {{"role", "assistant"}, {"content", {{"functionCall", {{"name", name}, {"arguments", args}}}}}};
      add("compile call " + name + " " + args.dump(), "compile", {{"draft", draft}, {"lineage", lineage1}, {"registry", registry}});
    }
  }
  const Value call_draft = {{"role", "assistant"},
                            {"content", {{"functionCall", {{"name", "add"}, {"arguments", {{"num1", 1}, {"num2", 2}}}}}}}};
  const Value call = native_value("compile", {{"draft", call_draft}, {"lineage", lineage1}, {"registry", registry}})["task"];
  const Value lineage = Value::array({root, definition, call});
  for (const Value& bad : {Value{{"role", "user"}, {"content", {{"message", "x"}}}},
                           Value{{"role", "assistant"}, {"content", {{"functionCall", {{"name", "nope"}, {"arguments", Value::object()}}}}}},
                           Value{{"role", "tool"}, {"content", {{"message", "x"}}}}, Value(Value::array())})
    add("compile refused " + bad.dump(), "compile", {{"draft", bad}, {"lineage", lineage1}, {"registry", registry}});
  // createSubtasksResult as tool code sends it.
  Value drafts = Value::array();
  drafts.push_back({{"role", "assistant"}, {"content", {{"message", "a note"}}}, {"labels", {"t"}}});
  for (const auto& name : names)
    drafts.push_back({{"role", "assistant"},
                      {"content", {{"functionCall", {{"name", name}, {"arguments", Value{{"input", "x"}}}}}}}});
  drafts.push_back(call_draft);
  add("subtasks mixed", "compileSubtasks", {{"request", {{"drafts", drafts}}}, {"lineage", lineage}, {"registry", registry}});
  for (std::size_t i = 0; i < drafts.size(); ++i)
    add("subtasks one " + std::to_string(i), "compileSubtasks",
        {{"request", {{"drafts", Value::array({drafts[i]})}}}, {"lineage", lineage}, {"registry", registry}});
  Value many = Value::array();
  for (int i = 0; i < 65; ++i) many.push_back(drafts[0]);
  add("subtasks too many", "compileSubtasks", {{"request", {{"drafts", many}}}, {"lineage", lineage}, {"registry", registry}});
  add("subtasks over the per-call count", "compileSubtasks",
      {{"request", {{"drafts", Value::array({drafts[0]})}}}, {"lineage", lineage}, {"registry", registry}, {"already", 64}});
  add("subtasks draft too large", "compileSubtasks",
      {{"request", {{"drafts", Value::array({{{"role", "assistant"}, {"content", {{"message", std::string(70000, 'x')}}}}})}}},
       {"lineage", lineage}, {"registry", registry}});
  for (const char* role : {"system", "user"})
    add(std::string("subtasks as ") + role, "compileSubtasks",
        {{"request", {{"drafts", Value::array({{{"role", role}, {"content", {{"message", "obey"}}}}})}}},
         {"lineage", lineage}, {"registry", registry}});
  const Value planted = {{"role", "assistant"},
                         {"content", {{"functionCall", {{"name", "add"}, {"arguments", Value::object()}, {"callId", "call_1"}}}}}};
  for (const Value& request : {Value{{"drafts", Value::array({planted})}}, Value{{"drafts", 1}}, Value::object(),
                               Value{{"drafts", Value::array()}, {"more", 1}}})
    add("subtasks refused " + request.dump(), "compileSubtasks", {{"request", request}, {"lineage", lineage}, {"registry", registry}});
  add("subtasks from no call", "compileSubtasks", {{"request", {{"drafts", drafts}}}, {"lineage", lineage1}, {"registry", registry}});
  // resolveInvocation: registry tools, the shadowing tree definition, unknown names.
  for (const auto& name : names)
    add("resolve " + name, "resolveInvocation", {{"request", {{"name", name}}}, {"lineage", lineage}, {"registry", registry}});
  for (const Value& request : {Value{{"name", "nope"}}, Value{{"name", 1}}, Value{{"name", "add"}, {"x", 1}}})
    add("resolve refused " + request.dump(), "resolveInvocation", {{"request", request}, {"lineage", lineage}, {"registry", registry}});
  // checkTask: each task above, then tampered, then misshaped; a broken lineage.
  for (const Value& t : {root, definition, call}) {
    add("check " + t["id"].get<std::string>(), "checkTask", {{"task", t}});
    Value tampered = t;
    tampered["labels"] = {"changed"};
    add("check tampered " + t["id"].get<std::string>(), "checkTask", {{"task", tampered}});
    Value missing = t;
    missing.erase("createdBy");
    add("check misshaped " + t["id"].get<std::string>(), "checkTask", {{"task", missing}});
  }
  add("resolve broken lineage", "resolveInvocation",
      {{"request", {{"name", "add"}}}, {"lineage", Value::array({root, call})}, {"registry", registry}});
  Value wrong_key = registry;
  wrong_key["renamed"] = registry["add"];
  add("registry key not its name", "compile", {{"draft", call_draft}, {"registry", wrong_key}});
}

std::vector<Case> all_cases(std::size_t& corpus_cases) {
  std::vector<Case> cases;
  // The SSRF corpus, read as it is: each URL parsed, decided before
  // resolution (the browser's view) and with the corpus's DNS answers.
  const fs::path corpus = kSource / ".." / "shared" / "corpora" / "ssrf_public.json";
  for (const auto& c : read_json(corpus)) {
    const Value* dns = c.contains("dns") ? &c["dns"] : nullptr;
    add_url(cases, c.value("id", "?"), c.value("url", ""), c.value("method", "GET"), dns);
    ++corpus_cases;
  }
  // The WHATWG URL vectors, with every method class.
  std::size_t i = 0;
  const Value whatwg = read_json(kTestdata / "url" / "whatwg_vectors.json");
  for (const auto& v : whatwg["vectors"]) {
    static const char* kMethods[] = {"GET", "post", "TRACE", "b@d"};
    add_url(cases, "whatwg#" + std::to_string(i), v.value("input", ""), kMethods[i % 4], nullptr);
    ++i;
  }
  // RFC 8785: the input files, and every number vector as shortest-round-trip
  // text and as its expected form.
  for (const auto& e : fs::directory_iterator(kTestdata / "jcs" / "input"))
    cases.push_back({"jcs " + e.path().filename().string(), "canonicalize", read_file(e.path())});
  for (const char* file : {"numbers.json", "rfc8785_appendix_b.json"}) {
    for (const auto& n : read_json(kTestdata / "jcs" / file)) {
      if (!n["expected"].is_string()) continue;  // NaN, Infinity: no JSON text for them
      const std::string bits = n.value("bits", "");
      cases.push_back({std::string(file) + " " + bits, "canonicalize", "[" + number_text(bits) + "]"});
      cases.push_back({std::string(file) + " " + bits + " expected", "canonicalize", n["expected"].get<std::string>()});
    }
  }
  // Whole JSON documents (the corpora themselves), strings, errors.
  for (const fs::path& p : {corpus, kTestdata / "url" / "whatwg_vectors.json", kTestdata / "jcs" / "numbers.json"})
    cases.push_back({"document " + p.filename().string(), "canonicalize", read_file(p)});
  for (const char* text : {"{\"a\":1,\"a\":2}", "[1,", "9007199254740993", "\"\\ud800\"", "1e400", "\"é\\u2028\"",
                           "{\"\\u20ac\":1,\"\\r\":2,\"\\ud83d\\ude00\":3,\"1\":4}"})
    cases.push_back({std::string("jcs text ") + text, "canonicalize", text});
  // The example manifests: revision ids, and arguments checked against them.
  std::vector<fs::path> manifests;
  for (const char* dir : {"tools", "revisions"})
    for (const auto& e : fs::directory_iterator(kSource / "examples" / dir)) manifests.push_back(e.path());
  for (const auto& p : manifests) {
    const std::string id = p.filename().string();
    cases.push_back({id + " manifest", "manifest", read_file(p)});
    const Value m = read_json(p);
    Value strings = Value::object(), numbers = Value::object();
    const Value properties = m["parameters"].value("properties", Value::object());
    for (const auto& [name, _] : properties.items()) {
      strings[name] = "$.x";
      numbers[name] = 1.5;
    }
    for (const Value& args : {Value::object(), strings, numbers, Value(Value::array())})
      cases.push_back({id + " arguments " + args.dump(), "validateArguments",
                       Value{{"manifest", m}, {"arguments", args}}.dump()});
    Value broken = m;
    broken.erase("description");
    cases.push_back({id + " manifest without description", "manifest", broken.dump()});
  }
  add_task_cases(cases, manifests);
  cases.push_back({"shape", "decideFetch", "{\"url\":1}"});
  cases.push_back({"shape", "decideFetch", "{\"url\":\"https://example.com/\",\"resolved\":[\"0x7f.1\"]}"});
  cases.push_back({"shape", "validateArguments", "[]"});
  return cases;
}

TEST(WasmParity, NativeAndWasmAnswerTheSame) {
  const fs::path module = module_path();
  if (!fs::exists(module)) GTEST_SKIP() << "the wasm core is not built (" << module << "): run `make wasm`";
  std::size_t corpus_cases = 0;
  const std::vector<Case> cases = all_cases(corpus_cases);
  ASSERT_GE(corpus_cases, 200u) << "the SSRF corpus was not read";
  ASSERT_GE(cases.size(), 3000u);

  taskyon::testing::TempDir dir;
  Value list = Value::array();
  for (const auto& c : cases) list.push_back({{"fn", c.fn}, {"input", c.input}});
  const std::string cases_file = dir.write("cases.json", list.dump(-1, ' ', false, Value::error_handler_t::strict));
  auto r = taskyon::testing::run_command(
      {"node", (kSource / "tests" / "wasm_parity.mjs").string(), module.string(), cases_file}, dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto out = taskyon::json::parse(r.out);
  ASSERT_TRUE(out.has_value()) << out.error().describe() << "\n" << r.err;
  const Value& answers = (*out)["answers"];
  ASSERT_EQ(answers.size(), cases.size());
  // No case may trap: a trap would be an "internal" answer, never the native one.
  EXPECT_EQ((*out)["instances"], 1) << "the wasm core trapped on some case";

  std::size_t differ = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::string want = native(cases[i]);
    const std::string got = answers[i].get<std::string>();
    if (want != got && ++differ <= 20)
      ADD_FAILURE() << cases[i].id << " (" << cases[i].fn << " " << cases[i].input.substr(0, 200) << ")\n  native: "
                    << want << "\n  wasm:   " << got;
  }
  EXPECT_EQ(differ, 0u) << differ << " of " << cases.size() << " answers differ";
}

// The module's own description, and IDNA present in both builds.
TEST(WasmParity, BothBuildsHaveIdna) {
  const Case info{"info", "info", "null"};
  auto v = taskyon::json::parse(native(info));
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ((*v)["value"]["build"], "native");
  EXPECT_EQ((*v)["value"]["idna"], true);
  const Case idna{"idna", "decideFetch", R"({"url":"https://ⓛⓞⓒⓐⓛⓗⓞⓢⓣ/"})"};
  auto d = taskyon::json::parse(native(idna));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ((*d)["value"]["reasonClass"], "encoding_trick");
}

// The loader (browser/core/core.mjs): a trap is an "internal" answer and the
// next call runs in a fresh instance; a schema valijson cannot read traps in
// wasm (no exceptions there) where native says invalid_manifest.
TEST(WasmCore, TrapAnswersInternalAndTheNextCallWorks) {
  const fs::path module = module_path();
  if (!fs::exists(module)) GTEST_SKIP() << "the wasm core is not built (" << module << "): run `make wasm`";
  const std::string bad = R"({"parameters":{"type":"object","properties":{"a":{"type":"string","minLength":"x"}}},"arguments":{}})";
  const std::string script = R"(
    import { readFileSync } from 'node:fs';
    import { instantiate } from ')" + (kSource / "browser" / "core" / "core.mjs").string() + R"(';
    const core = await instantiate(readFileSync(process.argv[1]));
    const trapped = core.validateArguments(process.argv[2]);
    await core.ready();
    const after = core.decideFetch('{"url":"https://127.0.0.1/"}');
    console.log(JSON.stringify({ trapped, after, instances: core.instances(), stderr: core.lastStderr() }));
  )";
  auto r = taskyon::testing::run_command({"node", "--input-type=module", "-e", script, module.string(), bad}, kSource);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto out = taskyon::json::parse(r.out.substr(0, r.out.find_last_not_of('\n') + 1));
  ASSERT_TRUE(out.has_value()) << r.out << r.err;
  EXPECT_EQ((*out)["trapped"]["ok"], false);
  EXPECT_EQ((*out)["trapped"]["error"]["code"], "internal");
  EXPECT_EQ((*out)["instances"], 2);
  EXPECT_EQ((*out)["after"]["value"]["reasonClass"], "loopback");
  EXPECT_NE((*out)["stderr"].get<std::string>().find("minLength"), std::string::npos);
  // Natively the same input is an error value.
  auto native_answer = taskyon::json::parse(native({"bad schema", "validateArguments", bad}));
  ASSERT_TRUE(native_answer.has_value());
  EXPECT_EQ((*native_answer)["error"]["code"], "invalid_manifest");
}

// browser/core/policy.mjs: the decider a browser SandboxHost takes, from the
// module's answers (a refused name, a refused method, a domain before resolution).
TEST(WasmCore, DeciderRefusesWhatThePolicyRefuses) {
  const fs::path module = module_path();
  if (!fs::exists(module)) GTEST_SKIP() << "the wasm core is not built (" << module << "): run `make wasm`";
  const std::string script = R"(
    import { readFileSync } from 'node:fs';
    import { instantiate } from ')" + (kSource / "browser" / "core" / "core.mjs").string() + R"(';
    import { wasmDecider } from ')" + (kSource / "browser" / "core" / "policy.mjs").string() + R"(';
    const decide = wasmDecider(await instantiate(readFileSync(process.argv[1])));
    const out = [];
    for (const r of [{ url: 'https://example.com/a' }, { url: 'https://localhost./' }, { url: 'https://0x7f.1/' },
                     { url: 'https://example.com/', method: 'TRACE' }, { url: 'http://example.com/' }])
      out.push(await decide(r));
    console.log(JSON.stringify(out));
  )";
  auto r = taskyon::testing::run_command({"node", "--input-type=module", "-e", script, module.string()}, kSource);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto out = taskyon::json::parse(r.out.substr(0, r.out.find_last_not_of('\n') + 1));
  ASSERT_TRUE(out.has_value()) << r.out;
  ASSERT_EQ(out->size(), 5u);
  EXPECT_EQ((*out)[0]["allow"], true);
  EXPECT_EQ((*out)[0]["origin"], "https://example.com");
  EXPECT_EQ((*out)[1]["code"], "policy_loopback");
  EXPECT_EQ((*out)[2]["code"], "policy_encoding_trick");
  EXPECT_EQ((*out)[3]["code"], "policy_method");
  EXPECT_EQ((*out)[4]["code"], "policy_scheme");
}

// The native ABI itself: envelopes, shapes, ownership.
TEST(Abi, AnswersAreEnvelopesWithStableCodes) {
  auto call = [](const std::string& fn, const std::string& input) {
    auto v = taskyon::json::parse(native({fn, fn, input}));
    EXPECT_TRUE(v.has_value());
    return v ? *v : Value();
  };
  EXPECT_EQ(call("canonicalize", "{\"b\":1,\"a\":2}")["value"]["canonical"], "{\"a\":2,\"b\":1}");
  EXPECT_EQ(call("canonicalize", "{\"b\":1,\"a\":2}")["value"]["id"],
            *taskyon::json::content_id_of(Value{{"a", 2}, {"b", 1}}));
  EXPECT_EQ(call("canonicalize", "[1,")["error"]["code"], "invalid_json");
  EXPECT_EQ(call("canonicalize", "9007199254740993")["error"]["code"], "not_canonical");
  EXPECT_EQ(call("decideFetch", "{}")["error"]["code"], "bad_usage");
  EXPECT_EQ(call("decideFetch", "{}")["error"]["where"], "/url");
  EXPECT_EQ(call("decideFetch", R"({"url":"https://example.com/","resolved":["x"]})")["error"]["where"], "/resolved/0");
  const Value pending = call("decideFetch", R"({"url":"https://example.com/"})")["value"];
  EXPECT_EQ(pending["awaitingResolution"], true);
  EXPECT_EQ(pending["admitted"], true);
  const Value rebinding = call("decideFetch", R"({"url":"https://example.com/","resolved":["10.0.0.1"]})")["value"];
  EXPECT_EQ(rebinding["reasonClass"], "private");
  EXPECT_EQ(rebinding["awaitingResolution"], false);
  EXPECT_EQ(call("decideFetch", R"({"url":"https://example.com/","method":"TRACE"})")["value"]["access"], "reject");
  EXPECT_EQ(call("parseUrl", R"({"url":"https://u:p@EXAMPLE.com:443/a/../b?q#f"})")["value"],
            (Value{{"href", "https://u:p@example.com/b?q#f"}, {"origin", "https://example.com"}, {"scheme", "https"},
                   {"special", true}, {"host", "example.com"}, {"hostKind", "domain"}, {"hostInput", "EXAMPLE.com"},
                   {"port", nullptr}, {"path", "/b"}, {"query", "q"}, {"fragment", "f"}, {"hasCredentials", true}}));
  EXPECT_EQ(call("manifest", "{}")["error"]["code"], "invalid_manifest");
  // A null input pointer is empty text; the answer is NUL-terminated.
  size_t len = 0;
  char* out = taskyon_canonicalize(nullptr, 0, &len);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(std::strlen(out), len);
  EXPECT_NE(std::string(out, len).find("invalid_json"), std::string::npos);
  taskyon_free(out);
}

}  // namespace
