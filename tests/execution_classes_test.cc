// Execution classes (DESIGN §3): trusted-native tools need explicit, recorded
// trust (R6) and a native function the host really has (R5); external
// services are forwarded to a real MCP server from npm.
#include <gtest/gtest.h>

#include <regex>

#include "taskyon/external/mcp.h"
#include "taskyon/invoke/invoke.h"
#include "taskyon/native/native.h"
#include "taskyon/registry/manifest.h"
#include "taskyon/store/store.h"
#include "taskyon/tasks/compiler.h"
#include "test_util.h"

namespace taskyon {
namespace {

using json::Value;

const std::string kMcpServer =
    std::string(TASKYON_SOURCE_DIR) + "/node_modules/@modelcontextprotocol/server-everything/dist/index.js";

registry::Manifest native_manifest(const std::string& id) {
  return *registry::parse_manifest({{"name", "nat"},
                                    {"description", "d"},
                                    {"parameters", {{"type", "object"}}},
                                    {"execution", "trusted-native"},
                                    {"native", id}});
}

registry::Manifest mcp_manifest(const std::string& tool, Value parameters) {
  return *registry::parse_manifest(
      {{"name", tool},
       {"description", "d"},
       {"parameters", std::move(parameters)},
       {"execution", "external-service"},
       {"service", {{"mcp", {{"command", {"node", kMcpServer, "stdio"}}, {"tool", tool}}}}}});
}

class ExecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::Store::open((dir / "taskyon.db").string());
    ASSERT_TRUE(s) << s.error().describe();
    st.emplace(std::move(*s));
  }
  Result<invoke::Invocation> call(const std::string& tool, Value args) {
    auto c = tasks::compile(tasks::function_call(tool, std::move(args)), {{}, st->resolver()});
    if (!c) return std::unexpected(c.error());
    return invoke::run_call(*st, pool, c->task, {});
  }
  std::int64_t count(const std::string& sql) {
    auto stmt = st->database().prepare(sql);
    EXPECT_TRUE(stmt && *stmt->step());
    return stmt->integer(0);
  }

  testing::TempDir dir;
  std::optional<store::Store> st;
  sandbox::Pool pool;
};

TEST_F(ExecTest, UnknownNativeIdsAreRefusedAtInstall) {  // R5
  auto r = st->install(native_manifest("taskyon.no_such_function"), store::Activate::if_unbound,
                       store::Trust{"tester", "test"});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::invalid_manifest);
  EXPECT_NE(r.error().message.find("R5"), std::string::npos);
  EXPECT_NE(r.error().message.find("taskyon.sha256"), std::string::npos);  // says what the host has
  EXPECT_EQ(count("SELECT COUNT(*) FROM revisions"), 0);
}

TEST_F(ExecTest, TrustedNativeInstallNeedsExplicitTrustAndRecordsIt) {  // R6
  auto refused = st->install(native_manifest("taskyon.sha256"));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::bad_usage);
  EXPECT_NE(refused.error().message.find("--trust"), std::string::npos);
  EXPECT_EQ(count("SELECT COUNT(*) FROM revisions"), 0);

  auto ok = st->install(native_manifest("taskyon.sha256"), store::Activate::if_unbound, store::Trust{"alice", "review"});
  ASSERT_TRUE(ok) << ok.error().describe();
  auto rev = st->revision(ok->id);
  ASSERT_TRUE(rev && rev->trust);
  EXPECT_EQ(rev->trust->by, "alice");
  EXPECT_FALSE(rev->trust->at.empty());
}

TEST_F(ExecTest, DatabaseRefusesAnUntrustedHostAuthorityRevision) {  // R6 (database)
  const auto def = *json::canonicalize(native_manifest("taskyon.sha256").definition);
  auto r = st->database().exec("INSERT INTO revisions VALUES ('" + json::content_id(def) + "', 'nat', 'trusted-native', '" +
                               def + "', 'now')");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("R6"), std::string::npos);
  ASSERT_TRUE(st->database().exec("DROP TRIGGER revisions_trust_required"));
  ASSERT_TRUE(st->database().exec("INSERT INTO revisions VALUES ('" + json::content_id(def) +
                                  "', 'nat', 'trusted-native', '" + def + "', 'now')"));
  auto loaded = st->revision(json::content_id(def));
  ASSERT_FALSE(loaded);
  EXPECT_EQ(loaded.error().code, Errc::integrity);
}

TEST_F(ExecTest, NativeToolsRunInTheHostNeverInASandbox) {
  ASSERT_TRUE(st->install(native_manifest("taskyon.sha256"), store::Activate::if_unbound, store::Trust{"a", "b"}));
  auto inv = call("nat", {{"text", "abc"}});
  ASSERT_TRUE(inv) << inv.error().describe();
  EXPECT_EQ(inv->outcome.value, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_TRUE(pool.live().empty());
  EXPECT_TRUE(pool.destructions().empty());
}

TEST_F(ExecTest, SerializedFormsCarryTheDefinitionNotTheImplementation) {  // R5
  for (const auto& f : native::all()) {
    const auto text = native::manifest_for(f, "x").dump();
    EXPECT_FALSE(std::regex_search(text, std::regex("0x[0-9a-fA-F]{6,}"))) << text;  // no address
    const auto m = registry::parse_manifest(native::manifest_for(f, "x"));
    ASSERT_TRUE(m) << m.error().describe();
    EXPECT_EQ(m->definition.size(), 5u);  // name, description, parameters, execution, native id: nothing else
  }
}

TEST_F(ExecTest, McpToolsAreForwardedAndBothSidesValidated) {
  ASSERT_TRUE(st->install(mcp_manifest("echo", {{"type", "object"},
                                                {"properties", {{"message", {{"type", "string"}}}}},
                                                {"required", {"message"}}}),
                          store::Activate::if_unbound, store::Trust{"a", "b"}));
  auto inv = call("echo", {{"message", "through MCP"}});
  ASSERT_TRUE(inv) << inv.error().describe();
  ASSERT_TRUE(inv->ok()) << inv->outcome.error;
  EXPECT_EQ(inv->outcome.value["content"][0]["text"], "Echo: through MCP");
  auto bad = call("echo", {{"message", 5}});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, Errc::invalid_arguments);
}

TEST_F(ExecTest, McpListsTheServersTools) {
  auto tools = external::list_tools({{"node", kMcpServer, "stdio"}, ""}, std::chrono::seconds(20));
  ASSERT_TRUE(tools) << tools.error().describe();
  bool echo = false;
  for (const auto& t : *tools) echo = echo || (t.name == "echo" && t.input_schema["type"] == "object");
  EXPECT_TRUE(echo);
}

TEST_F(ExecTest, McpStructuredResultsAreCheckedAgainstTheOutputSchema) {
  const Value params = {{"type", "object"}, {"properties", {{"location", {{"type", "string"}}}}}};
  const Value wrong_schema = {{"type", "object"}, {"required", {"no_such_field"}}};
  auto out = external::call_tool({{"node", kMcpServer, "stdio"}, ""}, "get-structured-content", {{"location", "New York"}},
                                 wrong_schema, std::chrono::seconds(20));
  ASSERT_TRUE(out) << out.error().describe();
  EXPECT_EQ(out->status, sandbox::Status::protocol_error);
  EXPECT_NE(out->error.find("outputSchema"), std::string::npos) << out->error;
}

TEST_F(ExecTest, AServerThatCannotStartIsAClearError) {
  auto out = external::call_tool({{"/nonexistent/mcp-server"}, ""}, "x", Value::object(), Value(), std::chrono::seconds(5));
  ASSERT_FALSE(out);
  EXPECT_NE(out.error().message.find("cannot start"), std::string::npos);
}

}  // namespace
}  // namespace taskyon
