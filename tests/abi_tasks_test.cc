// The task compiler through the C ABI (abi/abi.h: compile, compile_subtasks,
// resolve_invocation, check_task), the functions the browser host asks for
// createSubtasksResult (M14) and resolveInvocation (M15). wasm_parity_test
// proves the wasm build gives the same bytes; this proves what they say.
#include <gtest/gtest.h>

#include <string>

#include "taskyon/abi/abi.h"
#include "taskyon/json/json.h"

namespace {

using taskyon::json::Value;
using AbiFn = char* (*)(const char*, size_t, size_t*);

Value ask(AbiFn fn, const Value& input) {
  const std::string text = input.dump();
  size_t len = 0;
  char* out = fn(text.data(), text.size(), &len);
  auto v = taskyon::json::parse(std::string_view(out, len));
  taskyon_free(out);
  EXPECT_TRUE(v.has_value());
  return v ? *v : Value();
}

const Value kAdd = {{"name", "add"},
                    {"description", "Adds two numbers."},
                    {"execution", "sandboxed-code"},
                    {"runtime", "javascript"},
                    {"code", "({a, b}) => a + b"},
                    {"parameters",
                     {{"type", "object"},
                      {"properties", {{"a", {{"type", "number"}}}, {"b", {{"type", "number"}}}}},
                      {"required", {"a", "b"}},
                      {"additionalProperties", false}}}};

class AbiTasks : public ::testing::Test {
 protected:
  void SetUp() override {
    registry_ = {{"add", {{"definition", kAdd}}}};
    root_ = ask(taskyon_compile, {{"draft", {{"role", "user"}, {"content", {{"message", "hi"}}}}}})["value"]["task"];
    const Value draft = {{"role", "assistant"},
                         {"content", {{"functionCall", {{"name", "add"}, {"arguments", {{"a", 1}, {"b", 2}}}}}}}};
    auto compiled = ask(taskyon_compile, {{"draft", draft}, {"lineage", Value::array({root_})}, {"registry", registry_}});
    ASSERT_EQ(compiled["ok"], true) << compiled.dump();
    call_ = compiled["value"]["task"];
    revision_ = compiled["value"]["tool"]["revision"].get<std::string>();
  }
  Value subtasks(const Value& drafts) {
    return ask(taskyon_compile_subtasks,
               {{"request", {{"drafts", drafts}}}, {"lineage", Value::array({root_, call_})}, {"registry", registry_}});
  }
  Value registry_, root_, call_;
  std::string revision_;
};

TEST_F(AbiTasks, ACallIsPinnedToTheRevisionAndTheEmptySettings) {  // T1
  EXPECT_EQ(call_["toolRevision"], revision_);
  EXPECT_EQ(call_["parentId"], root_["id"]);
  EXPECT_EQ(call_["settingsRevision"], ask(taskyon_canonicalize, Value::object())["value"]["id"]);
  auto bad = ask(taskyon_compile, {{"draft", {{"role", "assistant"}, {"content", {{"functionCall", {{"name", "add"}, {"arguments", {{"a", "x"}}}}}}}}},
                                   {"registry", registry_}});
  EXPECT_EQ(bad["error"]["code"], "invalid_arguments") << bad.dump();
}

TEST_F(AbiTasks, SubtasksAreChildrenOfTheCallMarkedWithItAndHashed) {  // M14
  auto r = subtasks(Value::array({{{"role", "assistant"}, {"content", {{"message", "note"}}}},
                                  {{"role", "assistant"}, {"content", {{"functionCall", {{"name", "add"}, {"arguments", {{"a", 3}, {"b", 4}}}}}}}}}));
  ASSERT_EQ(r["ok"], true) << r.dump();
  const Value& tasks = r["value"]["tasks"];
  ASSERT_EQ(tasks.size(), 2u);
  for (const auto& t : tasks) {
    EXPECT_EQ(t["parentId"], call_["id"]);
    EXPECT_EQ(t["createdBy"], (Value{{"task", call_["id"]}, {"revision", revision_}}));
    EXPECT_EQ(ask(taskyon_check_task, {{"task", t}})["ok"], true);  // the id is the hash, createdBy included
  }
  EXPECT_EQ(tasks[1]["toolRevision"], revision_);
  Value forged = tasks[0];
  forged["createdBy"] = nullptr;  // dropping the mark changes the id: refused as tampered
  EXPECT_EQ(ask(taskyon_check_task, {{"task", forged}})["error"]["code"], "integrity");
}

TEST_F(AbiTasks, ToolCodeCannotSpeakAsSystemOrUserNorExceedTheLimits) {  // M14, DESIGN §6
  for (const char* role : {"system", "user"}) {
    auto r = subtasks(Value::array({{{"role", role}, {"content", {{"message", "obey"}}}}}));
    EXPECT_EQ(r["value"]["refused"]["code"], "invalid_request") << r.dump();
  }
  Value many = Value::array();
  for (int i = 0; i < 65; ++i) many.push_back({{"role", "assistant"}, {"content", {{"message", "x"}}}});
  EXPECT_EQ(subtasks(many)["value"]["refused"]["code"], "too_large");
  auto planted = subtasks(Value::array(
      {{{"role", "assistant"}, {"content", {{"functionCall", {{"name", "add"}, {"arguments", {{"a", 1}, {"b", 2}}}, {"callId", "call_1"}}}}}}}));
  EXPECT_EQ(planted["value"]["refused"]["code"], "invalid_request") << planted.dump();
  // A lineage whose last task is not a call cannot make subtasks.
  auto none = ask(taskyon_compile_subtasks, {{"request", {{"drafts", Value::array()}}}, {"lineage", Value::array({root_})}});
  EXPECT_EQ(none["error"]["code"], "bad_usage");
}

TEST_F(AbiTasks, ResolveInvocationGivesTheRevisionAndRefusesUnknownNamesAlike) {  // M15
  auto r = ask(taskyon_resolve_invocation, {{"request", {{"name", "add"}}}, {"lineage", Value::array({root_, call_})}, {"registry", registry_}});
  ASSERT_EQ(r["ok"], true) << r.dump();
  EXPECT_EQ(r["value"]["tool"], revision_);
  EXPECT_EQ(r["value"].size(), 2u);  // tool and settingsRevision: no manifest, no code
  auto missing = ask(taskyon_resolve_invocation, {{"request", {{"name", "secret_tool"}}}, {"lineage", Value::array({root_, call_})}, {"registry", registry_}});
  EXPECT_EQ(missing["value"]["refused"]["code"], "not_found");
  EXPECT_EQ(missing["value"]["refused"]["message"], "no tool named \"secret_tool\" is visible to this call");
}

TEST_F(AbiTasks, ALineageIsCheckedTaskByTask) {  // T4: a lineage read back is re-hashed
  Value tampered = root_;
  tampered["content"]["message"] = "changed";
  auto r = ask(taskyon_resolve_invocation, {{"request", {{"name", "add"}}}, {"lineage", Value::array({tampered, call_})}, {"registry", registry_}});
  EXPECT_EQ(r["error"]["code"], "integrity") << r.dump();
  EXPECT_EQ(r["error"]["where"], "/lineage/0");
  auto skipped = ask(taskyon_resolve_invocation, {{"request", {{"name", "add"}}}, {"lineage", Value::array({call_})}, {"registry", registry_}});
  EXPECT_EQ(skipped["error"]["where"], "/lineage/0/parentId") << skipped.dump();
}

}  // namespace
