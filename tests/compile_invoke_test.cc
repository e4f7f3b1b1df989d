// Compiled, pinned calls (T1) run their pinned revision after re-activation
// (T2), on a real store and real Node sandboxes.
#include <gtest/gtest.h>

#include "taskyon/invoke/invoke.h"
#include "taskyon/registry/manifest.h"
#include "taskyon/store/store.h"
#include "taskyon/tasks/compiler.h"
#include "test_util.h"

namespace taskyon {
namespace {

using json::Value;

class CallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::Store::open((dir / "taskyon.db").string());
    ASSERT_TRUE(s) << s.error().describe();
    st.emplace(std::move(*s));
  }
  std::string install(const std::string& code, store::Activate a = store::Activate::if_unbound) {
    auto r = st->install(*registry::parse_manifest(testing::js_tool("shout", code)), a);
    EXPECT_TRUE(r);
    return r->id;
  }
  Result<tasks::Compiled> compile(const std::string& tool, Value args) {
    return tasks::compile(tasks::function_call(tool, std::move(args)), {{}, st->resolver()});
  }

  testing::TempDir dir;
  std::optional<store::Store> st;
  sandbox::Pool pool;
};

TEST_F(CallTest, CompilationPinsToolAndSettingsRevisionsBeforeHashing) {  // T1
  const auto v1 = install("({input}) => input.toUpperCase()");
  auto c = compile("shout", {{"input", "hi"}});
  ASSERT_TRUE(c) << c.error().describe();
  EXPECT_EQ(c->task.tool_revision, v1);
  EXPECT_EQ(c->task.settings_revision, registry::empty_settings_revision());
  EXPECT_EQ(c->task.id, *tasks::compute_id(c->task));
  // The pin is part of the hash: the same call pinned elsewhere has another id.
  const auto v2 = install("({input}) => input + '!'", store::Activate::always);
  auto c2 = compile("shout", {{"input", "hi"}});
  ASSERT_TRUE(c2);
  EXPECT_EQ(c2->task.tool_revision, v2);
  EXPECT_NE(c2->task.id, c->task.id);
  EXPECT_EQ(c2->task.content, c->task.content);
}

TEST_F(CallTest, InvalidArgumentsAreRefusedBeforeAnythingRuns) {
  install("({input}) => input");
  auto c = compile("shout", {{"input", 42}});
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, Errc::invalid_arguments);
  EXPECT_EQ(c.error().where, "/input");
  EXPECT_TRUE(pool.live().empty());
}

TEST_F(CallTest, StoredCallRunsItsPinnedRevisionAfterReactivation) {  // T2
  install("({input}) => input.toUpperCase()");
  auto c = compile("shout", {{"input", "hi"}});
  ASSERT_TRUE(c);
  auto first = invoke::run_call(*st, pool, c->task, {});
  ASSERT_TRUE(first) << first.error().describe();
  EXPECT_EQ(first->outcome.value, "HI");

  install("({input}) => 'v2:' + input", store::Activate::always);
  auto by_name = compile("shout", {{"input", "hi"}});
  EXPECT_EQ(invoke::run_call(*st, pool, by_name->task, {})->outcome.value, "v2:hi");

  auto stored = st->task(c->task.id);
  ASSERT_TRUE(stored) << stored.error().describe();
  auto again = invoke::run_call(*st, pool, *stored, {});
  ASSERT_TRUE(again);
  EXPECT_EQ(again->outcome.value, "HI");
  EXPECT_EQ(again->tool.revision, *c->task.tool_revision);
}

// A call compiled just now runs the revision the compiler read and verified
// (issue 19: not read again). Shown by editing the row behind the store's
// back between compile and run: the lent tool runs what the pin names; a
// call without it, or lent another revision, reads the row and finds it
// tampered (R2).
TEST_F(CallTest, ACallCompiledJustNowRunsTheRevisionTheCompilerVerified) {
  const auto id = install("({input}) => input.toUpperCase()");
  auto c = compile("shout", {{"input", "hi"}});
  ASSERT_TRUE(c && c->tool);
  ASSERT_TRUE(st->database().exec("DROP TRIGGER revisions_no_update"));
  auto edit = st->database().prepare("UPDATE revisions SET definition = ?1 WHERE id = ?2");
  ASSERT_TRUE(edit);
  edit->bind(1, *json::canonicalize(testing::js_tool("shout", "() => 'evil'"))).bind(2, id);
  ASSERT_TRUE(edit->run());

  auto lent = invoke::run_call(*st, pool, c->task, {}, c->tool->tool);
  ASSERT_TRUE(lent) << lent.error().describe();
  EXPECT_EQ(lent->outcome.value, "HI");
  EXPECT_EQ(lent->tool.revision, id);

  auto read = invoke::run_call(*st, pool, c->task, {});
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().code, Errc::integrity);
  tasks::ResolvedTool other = c->tool->tool;
  other.revision = "sha256:" + std::string(64, '0');
  auto mismatched = invoke::run_call(*st, pool, c->task, {}, other);
  ASSERT_FALSE(mismatched);
  EXPECT_EQ(mismatched.error().code, Errc::integrity);
}

TEST_F(CallTest, CallAndResultAreStoredAsCompletedPinnedTasks) {
  install("({input}) => input.length");
  auto c = compile("shout", {{"input", "four"}});
  auto inv = invoke::run_call(*st, pool, c->task, {});
  ASSERT_TRUE(inv);
  auto call = st->task(c->task.id);
  ASSERT_TRUE(call);
  EXPECT_EQ(call->state, tasks::State::completed);
  EXPECT_TRUE(call->tool_revision);
  auto children = st->children(c->task.id);
  ASSERT_TRUE(children);
  ASSERT_EQ(children->size(), 1u);
  EXPECT_EQ((*children)[0].role, tasks::Role::tool);
  EXPECT_EQ((*children)[0].content["toolResult"]["result"], 4);
}

TEST_F(CallTest, AFailingToolIsAStoredErrorResultNotAnError) {
  install("() => { throw new TypeError('bad input shape'); }");
  auto c = compile("shout", Value::object());
  auto inv = invoke::run_call(*st, pool, c->task, {});
  ASSERT_TRUE(inv) << inv.error().describe();
  EXPECT_FALSE(inv->ok());
  EXPECT_EQ(inv->result.state, tasks::State::error);
  const auto& error = inv->result.content["toolResult"]["error"];
  EXPECT_EQ(error["code"], "tool_error");
  EXPECT_NE(error["message"].get<std::string>().find("bad input shape"), std::string::npos);
  EXPECT_EQ(st->task(c->task.id)->state, tasks::State::error);
}

TEST_F(CallTest, OtherExecutionClassesAreNotRunInTheSandbox) {
  // An HTTPS endpoint goes through the mediated fetch, never a sandbox; with
  // no grant (and, offline, no address for the name) it is a refused call.
  Value def = {{"name", "svc"}, {"description", "d"}, {"parameters", {{"type", "object"}}},
               {"execution", "external-service"}, {"service", {{"https", {{"url", "https://example.com/tool"}}}}}};
  ASSERT_TRUE(st->install(*registry::parse_manifest(def)));
  auto c = compile("svc", Value::object());
  ASSERT_TRUE(c);
  auto inv = invoke::run_call(*st, pool, c->task, {});
  ASSERT_TRUE(inv) << inv.error().describe();
  EXPECT_EQ(inv->outcome.status, sandbox::Status::tool_error);
  const bool refused = inv->outcome.error.starts_with("denied") || inv->outcome.error.starts_with("policy_blocked");
  EXPECT_TRUE(refused) << inv->outcome.error;
  EXPECT_TRUE(pool.live().empty());
  EXPECT_TRUE(pool.destructions().empty());  // no sandbox was ever started
}

}  // namespace
}  // namespace taskyon
