// The task tree on a real store and real sandboxes: ids (T4), lexical scope
// of tree definitions (T5-T7), chat projection (T8, T9), and tycli run's
// idempotence.
#include <gtest/gtest.h>

#include "taskyon/invoke/conversation.h"
#include "taskyon/registry/manifest.h"
#include "taskyon/tasks/chat.h"
#include "taskyon/tasks/conversation.h"
#include "test_util.h"

namespace taskyon {
namespace {

using json::Value;

Value definition(const std::string& name, const std::string& code, const std::string& description = "d") {
  Value d = testing::js_tool(name, code);
  d["description"] = description;
  return {{"toolDefinition", {{"definition", d}}}};
}
Value message(const std::string& text) { return {{"message", text}}; }
Value call(const std::string& name, Value args = Value::object()) {
  return {{"functionCall", {{"name", name}, {"arguments", std::move(args)}}}};
}

class TreeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::Store::open((dir / "taskyon.db").string());
    ASSERT_TRUE(s) << s.error().describe();
    st.emplace(std::move(*s));
  }
  Result<invoke::RunReport> run(const Value& file) {
    auto entries = tasks::parse_conversation(file);
    if (!entries) return std::unexpected(entries.error());
    return invoke::run_conversation(*st, pool, *entries, {});
  }
  invoke::RunReport run_ok(const Value& file) {
    auto r = run(file);
    EXPECT_TRUE(r) << r.error().describe();
    return r ? *r : invoke::RunReport{};
  }
  std::int64_t count(const std::string& sql) {
    auto stmt = st->database().prepare(sql);
    EXPECT_TRUE(stmt && *stmt->step());
    return stmt->integer(0);
  }
  std::string install(const std::string& name, const std::string& code) {
    auto r = st->install(*registry::parse_manifest(testing::js_tool(name, code)), store::Activate::always);
    EXPECT_TRUE(r);
    return r->id;
  }

  testing::TempDir dir;
  std::optional<store::Store> st;
  sandbox::Pool pool;
};

TEST_F(TreeTest, TaskIdsHashTheParentToo) {  // T4
  auto r = run_ok(Value::array({
      {{"role", "user"}, {"content", message("a")}},
      {{"role", "user"}, {"content", message("b")}},
      {{"role", "user"}, {"content", message("same")}, {"parent", 0}},
      {{"role", "user"}, {"content", message("same")}, {"parent", 1}},
  }));
  ASSERT_EQ(r.steps.size(), 4u);
  EXPECT_NE(r.steps[2].task.id, r.steps[3].task.id);
  EXPECT_EQ(r.steps[2].task.content, r.steps[3].task.content);
  auto unparented = r.steps[2].task;
  unparented.parent_id.reset();
  EXPECT_NE(*tasks::compute_id(unparented), r.steps[2].task.id);
}

TEST_F(TreeTest, DefinitionIsVisibleToItsDescendantsOnly) {  // T5
  auto r = run_ok(Value::array({
      {{"role", "user"}, {"content", message("root")}},
      {{"role", "system"}, {"content", definition("twice", "({input}) => input + input")}},
      {{"role", "assistant"}, {"content", call("twice", {{"input", "ab"}})}},
  }));
  EXPECT_EQ(r.steps[2].result->content["toolResult"]["result"], "abab");

  // A sibling branch of the definition: the root's other child.
  auto sibling = run(Value::array({
      {{"role", "user"}, {"content", message("root")}},
      {{"role", "user"}, {"content", message("other branch")}},
      {{"role", "assistant"}, {"content", call("twice", {{"input", "ab"}})}},
  }));
  ASSERT_FALSE(sibling);
  EXPECT_EQ(sibling.error().code, Errc::not_found);
  EXPECT_NE(sibling.error().message.find("\"twice\""), std::string::npos) << sibling.error().message;
  EXPECT_NE(sibling.error().message.find("looked in 2 ancestor task(s)"), std::string::npos) << sibling.error().message;
  EXPECT_NE(sibling.error().message.find("registry"), std::string::npos);
  EXPECT_EQ(sibling.error().where.substr(0, 3), "/2:");
}

TEST_F(TreeTest, NearestDefinitionShadowsOuterOnesAndTheRegistry) {  // T5
  install("tag", "() => 'registry'");
  auto r = run_ok(Value::array({
      {{"role", "assistant"}, {"content", call("tag")}},
      {{"role", "system"}, {"content", definition("tag", "() => 'outer'")}, {"parent", nullptr}},
      {{"role", "assistant"}, {"content", call("tag")}},
      {{"role", "system"}, {"content", definition("tag", "() => 'inner'")}},
      {{"role", "assistant"}, {"content", call("tag")}},
  }));
  EXPECT_EQ(r.steps[0].result->content["toolResult"]["result"], "registry");
  EXPECT_EQ(r.steps[2].result->content["toolResult"]["result"], "outer");
  EXPECT_EQ(r.steps[4].result->content["toolResult"]["result"], "inner");
  EXPECT_NE(r.steps[2].task.tool_revision, r.steps[4].task.tool_revision);
}

// run_conversation keeps the positions of the definitions along its chain so
// that a call does not look at every ancestor (issue 19); what it keeps must
// find what a scan finds, for chained entries and for a branch whose lineage
// is loaded from the store.
TEST_F(TreeTest, KeptDefinitionPositionsFindWhatAScanFinds) {  // T5
  install("tag", "() => 'registry'");
  Value file = Value::array({{{"role", "system"}, {"content", definition("tag", "() => 'outer'")}}});
  for (int i = 0; i < 20; ++i) file.push_back({{"role", "user"}, {"content", message("m" + std::to_string(i))}});
  file.push_back({{"role", "system"}, {"content", definition("tag", "() => 'inner'")}});
  file.push_back({{"role", "user"}, {"content", message("after")}});
  file.push_back({{"role", "assistant"}, {"content", call("tag")}});                     // 23: chained
  file.push_back({{"role", "assistant"}, {"content", call("tag")}, {"parent", 5}});      // 24: a branch
  file.push_back({{"role", "assistant"}, {"content", call("tag")}, {"parent", nullptr}});  // 25: a new root
  auto r = run_ok(file);
  ASSERT_EQ(r.steps.size(), 26u);
  EXPECT_EQ(r.steps[23].result->content["toolResult"]["result"], "inner");
  EXPECT_EQ(r.steps[24].result->content["toolResult"]["result"], "outer");
  EXPECT_EQ(r.steps[25].result->content["toolResult"]["result"], "registry");

  // The functions themselves: the positions given are the definitions looked at.
  auto lineage = st->lineage(r.steps[22].task.id);
  ASSERT_TRUE(lineage) << lineage.error().describe();
  const tasks::Definitions kept = tasks::definitions_in(*lineage);
  ASSERT_EQ(kept, (tasks::Definitions{0, 21}));
  const auto at = [&](const tasks::Definitions* definitions) {
    auto found = tasks::resolve_in_scope("tag", *lineage, st->resolver(), definitions);
    EXPECT_TRUE(found) << found.error().describe();
    return found && found->defined_at ? *found->defined_at : std::string("registry");
  };
  EXPECT_EQ(at(nullptr), r.steps[21].task.id);
  EXPECT_EQ(at(&kept), r.steps[21].task.id);
  const tasks::Definitions outer_only{0};
  EXPECT_EQ(at(&outer_only), r.steps[0].task.id);
  const tasks::Definitions none;
  EXPECT_EQ(at(&none), "registry");
  // Positions that cannot be this lineage's (not a definition there, past its
  // end, not ascending) are not used: every ancestor is looked at instead.
  for (const tasks::Definitions& wrong : {tasks::Definitions{0, 22}, tasks::Definitions{0, 99},
                                          tasks::Definitions{21, 0}})
    EXPECT_EQ(at(&wrong), r.steps[21].task.id);
  auto pinned = tasks::pinned_in_lineage(*r.steps[23].task.tool_revision, *lineage, st->resolver(), &kept);
  ASSERT_TRUE(pinned) << pinned.error().describe();
  EXPECT_EQ(pinned->revision, *r.steps[23].task.tool_revision);
}

TEST_F(TreeTest, TreeDefinitionsNeverEnterTheRegistry) {  // T6
  const auto before = count("SELECT COUNT(*) FROM revisions");
  auto r = run_ok(Value::array({
      {{"role", "system"}, {"content", definition("local_only", "() => 1")}},
      {{"role", "assistant"}, {"content", call("local_only")}},
  }));
  const auto pin = *r.steps[1].task.tool_revision;
  EXPECT_EQ(count("SELECT COUNT(*) FROM revisions"), before);
  EXPECT_EQ(count("SELECT COUNT(*) FROM bindings WHERE name = 'local_only'"), 0);
  EXPECT_EQ(st->revision(pin).error().code, Errc::not_found);
  EXPECT_EQ(st->resolve("local_only").error().code, Errc::not_found);
  // content-addressed all the same
  EXPECT_EQ(pin, *json::content_id_of(definition("local_only", "() => 1")["toolDefinition"]["definition"]));
}

TEST_F(TreeTest, TreeDefinitionsHoldOnlySandboxedCodeOrAPinnedBinding) {  // T7
  const auto rev = install("shout", "({input}) => input.toUpperCase()");
  Value native = testing::js_tool("nat", "x");
  native.erase("code");
  native.erase("runtime");
  native["execution"] = "trusted-native";
  native["native"] = "executePython";
  Value service = testing::js_tool("svc", "x");
  service.erase("code");
  service.erase("runtime");
  service["execution"] = "external-service";
  service["service"] = {{"https", {{"url", "https://example.com/x"}}}};
  for (const auto& bad : {Value{{"toolDefinition", {{"definition", native}}}},
                          Value{{"toolDefinition", {{"definition", service}}}},
                          Value{{"toolDefinition", {{"binding", {{"revision", "shout"}}}}}},
                          Value{{"toolDefinition", {{"binding", {{"revision", rev.substr(0, 20)}}}}}}}) {
    auto r = run(Value::array({{{"role", "system"}, {"content", bad}}}));
    ASSERT_FALSE(r) << bad.dump();
    EXPECT_EQ(r.error().code, Errc::invalid_task);
    EXPECT_NE(r.error().message.find("T7"), std::string::npos) << r.error().message;
  }
  EXPECT_EQ(count("SELECT COUNT(*) FROM tasks"), 0);
  auto ok = run_ok(Value::array({
      {{"role", "system"}, {"content", {{"toolDefinition", {{"binding", {{"revision", rev}}}}}}}},
      {{"role", "assistant"}, {"content", call("shout", {{"input", "hi"}})}},
  }));
  EXPECT_EQ(ok.steps[1].result->content["toolResult"]["result"], "HI");
}

TEST_F(TreeTest, ABindingPinsItsRevisionWhateverTheRegistrySaysLater) {  // T2 + T7
  const auto v1 = install("shout", "({input}) => input.toUpperCase()");
  install("shout", "({input}) => 'v2'");
  auto r = run_ok(Value::array({
      {{"role", "system"}, {"content", {{"toolDefinition", {{"binding", {{"revision", v1}}}}}}}},
      {{"role", "assistant"}, {"content", call("shout", {{"input", "hi"}})}},
      {{"role", "assistant"}, {"content", call("shout", {{"input", "hi"}})}, {"parent", nullptr}},
  }));
  EXPECT_EQ(r.steps[1].task.tool_revision, v1);
  EXPECT_EQ(r.steps[1].result->content["toolResult"]["result"], "HI");
  EXPECT_EQ(r.steps[2].result->content["toolResult"]["result"], "v2");
}

TEST_F(TreeTest, CompletionGetsReducedSignaturesOnly) {  // T8
  install("reg", "() => 0");
  auto r = run_ok(Value::array({
      {{"role", "system"}, {"content", definition("reg", "() => 'secret code body'", "inner description")}},
      {{"role", "user"}, {"content", message("hi")}},
  }));
  auto lineage = st->lineage(r.steps[1].task.id);
  auto visible = tasks::visible_tools(*lineage, st->resolver(), *st->active_names());
  ASSERT_TRUE(visible);
  const auto tools = tasks::tools_for_completion(*visible);
  ASSERT_EQ(tools.size(), 1u);  // the tree definition shadows the registry tool of the same name
  EXPECT_EQ(tools[0]["type"], "function");
  EXPECT_EQ(tools[0].size(), 2u);
  const auto& f = tools[0]["function"];
  EXPECT_EQ(f.size(), 3u);
  EXPECT_EQ(f["name"], "reg");
  EXPECT_EQ(f["description"], "inner description");
  EXPECT_TRUE(f.contains("parameters"));
  EXPECT_EQ(tools.dump().find("secret code body"), std::string::npos);
}

TEST_F(TreeTest, DefinitionNodesStayOutOfModelMessagesAndCopies) {  // T9
  auto r = run_ok(Value::array({
      {{"role", "user"}, {"content", message("hello")}},
      {{"role", "system"}, {"content", definition("hidden", "() => 'visible result'")}},
      {{"role", "assistant"}, {"content", call("hidden")}},
      {{"role", "assistant"}, {"content", message("done")}},
  }));
  auto path = st->lineage(r.steps[3].task.id);
  ASSERT_TRUE(path);
  const auto def_id = r.steps[1].task.id;
  const auto def_rev = *r.steps[2].task.tool_revision;
  const auto messages = tasks::model_messages(*path).dump();
  const auto copy_json = tasks::copy_chat_json(*path).dump();
  const auto copy_md = tasks::copy_chat_markdown(*path);
  for (const auto& text : {messages, copy_json, copy_md}) {
    EXPECT_EQ(text.find("() =>"), std::string::npos) << text;
    EXPECT_EQ(text.find("toolDefinition"), std::string::npos) << text;
    EXPECT_EQ(text.find(def_id.substr(7, 12)), std::string::npos) << text;
    EXPECT_EQ(text.find(def_rev.substr(7, 12)), std::string::npos) << text;
    EXPECT_NE(text.find("visible result"), std::string::npos) << text;
  }
  EXPECT_EQ(tasks::model_messages(*path).size(), 4u);  // user, call, result, assistant
}

TEST_F(TreeTest, RunningTheSameConversationTwiceReusesEverything) {
  const Value file = Value::array({
      {{"role", "user"}, {"content", message("count")}},
      {{"role", "system"}, {"content", definition("tick", "() => (globalThis.n = (globalThis.n ?? 0) + 1)")}},
      {{"role", "assistant"}, {"content", call("tick")}},
      {{"role", "assistant"}, {"content", call("tick")}},
  });
  auto first = run_ok(file);
  const auto rows = count("SELECT COUNT(*) FROM tasks");
  EXPECT_EQ(rows, 6);
  EXPECT_FALSE(first.steps[3].outcome->fresh_sandbox);  // tree tools are retained per revision like any other
  EXPECT_EQ(first.steps[3].result->content["toolResult"]["result"], 2);
  auto second = run_ok(file);
  EXPECT_EQ(count("SELECT COUNT(*) FROM tasks"), rows);
  for (std::size_t i = 0; i < first.steps.size(); ++i) {
    EXPECT_EQ(first.steps[i].task.id, second.steps[i].task.id);
    EXPECT_TRUE(second.steps[i].reused);
    EXPECT_FALSE(second.steps[i].outcome);
  }
  EXPECT_EQ(second.steps[3].result->id, first.steps[3].result->id);
}

TEST_F(TreeTest, ConversationFilesAreCheckedBeforeAnythingRuns) {
  const std::vector<std::pair<Value, std::string>> bad = {
      {Value::array({{{"role", "user"}, {"content", message("a")}, {"parent", 0}}}), "/0/parent"},
      {Value::array({{{"role", "user"}, {"content", message("a")}},
                     {{"role", "user"}, {"content", message("b")}, {"parent", {{"resultOf", 0}}}}}),
       "/1/parent/resultOf"},
      {Value::array({{{"role", "tool"}, {"content", {{"toolResult", {{"result", 1}, {"logs", Value::array()}}}}}}}),
       "/0/content/toolResult"},
      {Value::array({{{"role", "user"}, {"content", call("x")}}}), "/0/role"},
      {Value::array({{{"role", "user"}, {"content", message("a")}, {"colour", "red"}}}), "/0/colour"},
  };
  for (const auto& [file, where] : bad) {
    auto r = tasks::parse_conversation(file);
    ASSERT_FALSE(r) << file.dump();
    EXPECT_EQ(r.error().where, where) << r.error().describe();
  }
}

}  // namespace
}  // namespace taskyon
