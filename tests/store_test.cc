// The store on a real SQLite file: revisions (R1, R2, R4), bindings (R3),
// tasks and the invariants the database enforces by itself (T3, T4).
#include <gtest/gtest.h>

#include <cstdlib>

#include "taskyon/registry/manifest.h"
#include "taskyon/store/store.h"
#include "test_util.h"

namespace taskyon::store {
namespace {

using json::Value;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = Store::open((dir / "nested" / "taskyon.db").string());
    ASSERT_TRUE(s) << s.error().describe();
    st.emplace(std::move(*s));
  }
  registry::Manifest tool(const std::string& name, const std::string& code) {
    return *registry::parse_manifest(testing::js_tool(name, code));
  }
  std::int64_t count(const std::string& sql) {
    auto stmt = st->database().prepare(sql);
    EXPECT_TRUE(stmt);
    EXPECT_TRUE(*stmt->step());
    return stmt->integer(0);
  }
  Result<void> exec(const std::string& sql) { return st->database().exec(sql); }

  testing::TempDir dir;
  std::optional<Store> st;
};

TEST_F(StoreTest, InstallIsIdempotentByContent) {
  auto a = st->install(tool("echo", "x => x"));
  auto b = st->install(tool("echo", "x => x"));
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->id, b->id);
  EXPECT_TRUE(a->created);
  EXPECT_FALSE(b->created);
  EXPECT_EQ(count("SELECT COUNT(*) FROM revisions"), 1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM bindings"), 1);
}

TEST_F(StoreTest, StoresTheCanonicalDefinitionUnderItsHash) {  // R1
  auto a = st->install(tool("echo", "x => x"));
  auto rev = st->revision(a->id);
  ASSERT_TRUE(rev);
  EXPECT_EQ(json::content_id(rev->definition), a->id);
  EXPECT_EQ(rev->definition, *json::canonicalize(tool("echo", "x => x").definition));
}

TEST_F(StoreTest, FirstInstallActivatesLaterOnesOnlyWhenAsked) {
  auto v1 = st->install(tool("echo", "x => x"));
  auto v2 = st->install(tool("echo", "x => [x]"));
  ASSERT_TRUE(v1 && v2);
  EXPECT_TRUE(v1->activated);
  EXPECT_FALSE(v2->activated);
  EXPECT_EQ(st->resolve("echo")->id, v1->id);
  auto v3 = st->install(tool("echo", "x => [[x]]"), Activate::always);
  EXPECT_TRUE(v3->activated);
  EXPECT_EQ(st->resolve("echo")->id, v3->id);
}

TEST_F(StoreTest, ActivationChangesOnlyTheBinding) {  // R3
  auto v1 = st->install(tool("echo", "x => x"));
  auto v2 = st->install(tool("echo", "x => [x]"));
  auto before = count("SELECT COUNT(*) FROM revisions");
  auto b = st->activate("echo", v2->id);
  ASSERT_TRUE(b) << b.error().describe();
  EXPECT_EQ(st->resolve("echo")->id, v2->id);
  EXPECT_EQ(count("SELECT COUNT(*) FROM revisions"), before);
  EXPECT_TRUE(st->revision(v1->id));  // the old revision is still there, unchanged
  auto h = st->history("echo");
  ASSERT_TRUE(h);
  ASSERT_EQ(h->size(), 2u);
  EXPECT_EQ((*h)[0].revision, v1->id);
  EXPECT_EQ((*h)[1].revision, v2->id);
}

TEST_F(StoreTest, ActivatingAnotherToolsRevisionIsRefused) {
  auto other = st->install(tool("other", "x => x"));
  st->install(tool("echo", "x => x"));
  auto b = st->activate("echo", other->id);
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error().code, Errc::bad_usage);
  // and the database refuses it by itself too
  auto raw = exec("INSERT INTO bindings(name, revision, activated_at) VALUES ('echo', '" + other->id + "', 'now')");
  ASSERT_FALSE(raw);
  EXPECT_NE(raw.error().message.find("R3"), std::string::npos);
}

TEST_F(StoreTest, LookupByNameFullIdAndPrefix) {  // R4
  auto v = st->install(tool("echo", "x => x"));
  const std::string hex = v->id.substr(7);
  EXPECT_EQ(st->resolve("echo")->id, v->id);
  EXPECT_EQ(st->resolve(v->id)->id, v->id);
  EXPECT_EQ(st->resolve(v->id.substr(0, 19))->id, v->id);
  EXPECT_EQ(st->resolve(hex.substr(0, 12))->id, v->id);
  auto short_prefix = st->resolve("sha256:" + hex.substr(0, 11));
  ASSERT_FALSE(short_prefix);
  EXPECT_EQ(short_prefix.error().code, Errc::bad_usage);
  // Without "sha256:" a short hex word may be a tool name ("add"): not found, saying both.
  auto short_word = st->resolve(hex.substr(0, 11));
  ASSERT_FALSE(short_word);
  EXPECT_EQ(short_word.error().code, Errc::not_found);
  EXPECT_NE(short_word.error().message.find("no tool named"), std::string::npos);
  EXPECT_NE(short_word.error().message.find("at least 12 hex digits"), std::string::npos);
  auto unknown = st->resolve("nosuchtool");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, Errc::not_found);
  EXPECT_EQ(st->resolve("sha256:" + std::string(64, '0')).error().code, Errc::not_found);
}

TEST_F(StoreTest, AmbiguousPrefixListsTheCandidates) {  // R4
  // Two ids sharing 12 hex digits cannot be made by hashing; plant them.
  const std::string a = "sha256:abcdefabcdef" + std::string(52, '1');
  const std::string b = "sha256:abcdefabcdef" + std::string(52, '2');
  for (const auto& id : {a, b})
    ASSERT_TRUE(exec("INSERT INTO revisions VALUES ('" + id + "', 'x', 'sandboxed-code', '{}', 'now')"));
  auto r = st->resolve("abcdefabcdef");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::ambiguous);
  EXPECT_NE(r.error().message.find(a), std::string::npos);
  EXPECT_NE(r.error().message.find(b), std::string::npos);
}

TEST_F(StoreTest, DatabaseRefusesChangesToRevisions) {  // R2
  auto v = st->install(tool("echo", "x => x"));
  auto upd = exec("UPDATE revisions SET definition = '{}' WHERE id = '" + v->id + "'");
  ASSERT_FALSE(upd);
  EXPECT_NE(upd.error().message.find("R2"), std::string::npos);
  auto del = exec("DELETE FROM revisions");
  ASSERT_FALSE(del);
  EXPECT_FALSE(exec("DELETE FROM bindings"));
  EXPECT_TRUE(st->revision(v->id));
}

TEST_F(StoreTest, RowEditedBehindTheStoresBackIsReportedTampered) {  // R2
  auto v = st->install(tool("echo", "x => x"));
  ASSERT_TRUE(exec("DROP TRIGGER revisions_no_update"));
  const auto evil = *json::canonicalize(tool("echo", "x => 666").definition);
  ASSERT_TRUE(exec("UPDATE revisions SET definition = '" + evil + "' WHERE id = '" + v->id + "'"));
  for (auto r : {st->revision(v->id), st->resolve("echo")}) {
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::integrity);
    EXPECT_NE(r.error().message.find("tampered"), std::string::npos);
  }
}

// Verified rows are remembered per process, but by their bytes: a row read
// (and verified) once and then edited is verified again and found tampered.
TEST_F(StoreTest, ARowEditedAfterAVerifiedReadIsStillReportedTampered) {  // R2
  auto v = st->install(tool("echo", "x => x"));
  ASSERT_TRUE(st->revision(v->id));
  ASSERT_TRUE(st->resolve("echo"));
  ASSERT_TRUE(exec("DROP TRIGGER revisions_no_update"));
  const auto evil = *json::canonicalize(tool("echo", "x => 666").definition);
  ASSERT_TRUE(exec("UPDATE revisions SET definition = '" + evil + "' WHERE id = '" + v->id + "'"));
  auto r = st->revision(v->id);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::integrity);
}

tasks::Task call_task(std::optional<std::string> pin, tasks::State state) {
  tasks::Task t;
  t.role = tasks::Role::assistant;
  t.content = {{"functionCall", {{"name", "echo"}, {"arguments", {{"input", "hi"}}}}}};
  t.state = state;
  t.tool_revision = std::move(pin);
  t.id = *tasks::compute_id(t);
  return t;
}

TEST_F(StoreTest, ApiRefusesACompletedCallWithoutToolRevision) {  // T3 (API)
  auto r = st->put_tasks({call_task(std::nullopt, tasks::State::completed)});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::invalid_task);
  EXPECT_NE(r.error().message.find("T3"), std::string::npos);
  EXPECT_EQ(count("SELECT COUNT(*) FROM tasks"), 0);
  EXPECT_TRUE(st->put_tasks({call_task(std::nullopt, tasks::State::open)}));  // not yet executed: allowed
}

TEST_F(StoreTest, DatabaseRefusesACompletedCallWithoutToolRevision) {  // T3 (database)
  auto r = exec(
      "INSERT INTO tasks(id, role, kind, content, state, created_at) VALUES ('sha256:" + std::string(64, 'a') +
      "', 'assistant', 'functionCall', '{}', 'Completed', 'now')");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("T3"), std::string::npos);
}

TEST_F(StoreTest, ApiRefusesATaskWhoseIdIsNotItsHash) {  // T4
  auto t = call_task("sha256:" + std::string(64, 'b'), tasks::State::completed);
  t.id = "sha256:" + std::string(64, 'c');
  auto r = st->put_tasks({t});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::integrity);
}

TEST_F(StoreTest, TasksAreAppendOnlyAndVerifiedWhenLoaded) {
  auto t = call_task("sha256:" + std::string(64, 'b'), tasks::State::completed);
  ASSERT_TRUE(st->put_tasks({t}));
  ASSERT_TRUE(st->put_tasks({t}));  // same content, same id: nothing duplicated
  EXPECT_EQ(count("SELECT COUNT(*) FROM tasks"), 1);
  EXPECT_EQ(st->task(t.id)->content, t.content);
  EXPECT_EQ(st->task(t.id.substr(0, 20))->id, t.id);
  EXPECT_FALSE(exec("UPDATE tasks SET state = 'Error'"));
  ASSERT_TRUE(exec("DROP TRIGGER tasks_no_update"));
  ASSERT_TRUE(exec("UPDATE tasks SET content = '{\"functionCall\":{\"arguments\":{},\"name\":\"echo\"}}'"));
  auto loaded = st->task(t.id);
  ASSERT_FALSE(loaded);
  EXPECT_EQ(loaded.error().code, Errc::integrity);
}

TEST(StorePath, FollowsTaskyonHomeThenXdgThenHome) {
  const std::string saved_home = std::getenv("HOME") ? std::getenv("HOME") : "";
  setenv("TASKYON_HOME", "/x/th", 1);
  EXPECT_EQ(*default_db_path(), "/x/th/taskyon.db");
  unsetenv("TASKYON_HOME");
  setenv("XDG_DATA_HOME", "/x/xdg", 1);
  EXPECT_EQ(*default_db_path(), "/x/xdg/taskyon/taskyon.db");
  unsetenv("XDG_DATA_HOME");
  setenv("HOME", "/x/home", 1);
  EXPECT_EQ(*default_db_path(), "/x/home/.local/share/taskyon/taskyon.db");
  setenv("HOME", saved_home.c_str(), 1);
}

TEST(StoreSchema, NewerSchemaIsRefusedClearly) {
  testing::TempDir dir;
  const auto path = (dir / "t.db").string();
  {
    auto s = Store::open(path);
    ASSERT_TRUE(s);
    ASSERT_TRUE(s->database().exec("PRAGMA user_version = 99"));
  }
  auto s = Store::open(path);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("newer"), std::string::npos);
}

}  // namespace
}  // namespace taskyon::store

namespace taskyon::store {
namespace {

TEST_F(StoreTest, ANameThatIsAlsoAnotherRevisionsPrefixIsAmbiguous) {  // R4
  auto a = st->install(tool("echo", "x => x"));
  const std::string prefix = a->id.substr(7, 12);
  auto b = st->install(tool(prefix, "x => [x]"));
  ASSERT_TRUE(a && b);
  auto r = st->resolve(prefix);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::ambiguous);
  EXPECT_EQ(st->resolve("sha256:" + prefix)->id, a->id);  // the explicit form is never a name
}

}  // namespace
}  // namespace taskyon::store
