// The providers' tools lists (tasks/provider.h): each shape exactly, OpenAI
// strict mode, and `tycli chat tools` on the registry without --at.
#include <gtest/gtest.h>

#include "taskyon/registry/manifest.h"
#include "taskyon/tasks/chat.h"
#include "taskyon/tasks/provider.h"
#include "test_util.h"

namespace taskyon {
namespace {

using json::Value;
using tasks::Provider;

tasks::VisibleTool visible(const Value& definition) {
  auto m = registry::parse_manifest(definition);
  EXPECT_TRUE(m) << m.error().describe();
  return {{*registry::revision_id(*m), "sha256:" + std::string(64, '0'), *m}, std::nullopt};
}

const Value kAddParams = *json::parse(R"({"type": "object",
  "properties": {"num1": {"type": "number"}, "num2": {"type": "number"}}, "required": ["num1", "num2"]})");

Value add_tool() {
  return {{"name", "add"},
          {"description", "Adds two numbers."},
          {"parameters", kAddParams},
          {"execution", "sandboxed-code"},
          {"runtime", "javascript"},
          {"code", "({num1, num2}) => num1 + num2"}};
}

Value listed(Provider p, bool strict = false, const Value& tool = add_tool()) {
  auto out = tasks::tools_for_provider({visible(tool)}, p, strict);
  EXPECT_TRUE(out) << out.error().describe();
  return out ? out->tools : Value();
}

TEST(ChatFormats, OpenAiChatIsNestedAndTheDefaultShape) {
  const Value want = {{{"type", "function"},
                       {"function", {{"name", "add"}, {"description", "Adds two numbers."}, {"parameters", kAddParams}}}}};
  EXPECT_EQ(listed(Provider::openai_chat), want);
  EXPECT_EQ(tasks::tools_for_completion({visible(add_tool())}), want);  // --json without --format
}

TEST(ChatFormats, OpenAiResponsesIsFlatAndAlwaysSaysStrict) {
  const Value want = {{{"type", "function"},
                       {"name", "add"},
                       {"description", "Adds two numbers."},
                       {"parameters", kAddParams},
                       {"strict", false}}};  // the Responses API's default would be true
  EXPECT_EQ(listed(Provider::openai_responses), want);
}

TEST(ChatFormats, AnthropicUsesInputSchema) {
  const Value want = {{{"name", "add"}, {"description", "Adds two numbers."}, {"input_schema", kAddParams}}};
  EXPECT_EQ(listed(Provider::anthropic), want);
}

TEST(ChatFormats, McpIsTheToolsListEntry) {
  const Value want = {{{"name", "add"}, {"description", "Adds two numbers."}, {"inputSchema", kAddParams}}};
  EXPECT_EQ(listed(Provider::mcp), want);
  EXPECT_EQ(tasks::mcp_tool("x", "d", kAddParams, Value::object())["outputSchema"], Value::object());
  EXPECT_FALSE(tasks::mcp_tool("x", "d", kAddParams, Value()).contains("outputSchema"));
}

TEST(ChatFormats, StrictClosesEveryObjectSchema) {
  Value tool = add_tool();
  tool["parameters"] = *json::parse(R"({"type": "object", "required": ["point", "tags"], "properties": {
    "point": {"type": "object", "required": ["x"], "properties": {"x": {"type": "number"}}},
    "tags": {"type": "array", "items": {"type": "object", "required": ["k"], "properties": {"k": {"type": "string"}}}}}})");
  const auto chat = listed(Provider::openai_chat, true, tool);
  ASSERT_EQ(chat.size(), 1u);
  const auto& fn = chat[0]["function"];
  EXPECT_EQ(fn["strict"], true);
  EXPECT_EQ(fn["parameters"]["additionalProperties"], false);
  EXPECT_EQ(fn["parameters"]["properties"]["point"]["additionalProperties"], false);
  EXPECT_EQ(fn["parameters"]["properties"]["tags"]["items"]["additionalProperties"], false);
  const auto responses = listed(Provider::openai_responses, true, tool);
  EXPECT_EQ(responses[0]["strict"], true);
  EXPECT_EQ(responses[0]["parameters"], fn["parameters"]);
}

TEST(ChatFormats, StrictLeavesAToolWithAnOptionalPropertyNonStrictAndSaysWhy) {
  Value tool = add_tool();
  tool["name"] = "counter";
  tool["parameters"] = *json::parse(R"({"type": "object", "properties": {"step": {"type": "integer"}}})");
  auto out = tasks::tools_for_provider({visible(add_tool()), visible(tool)}, Provider::openai_chat, true);
  ASSERT_TRUE(out);
  EXPECT_EQ(out->tools[0]["function"]["strict"], true);
  EXPECT_EQ(out->tools[1]["function"]["strict"], false);
  EXPECT_EQ(out->tools[1]["function"]["parameters"], tool["parameters"]);  // unchanged
  ASSERT_EQ(out->not_strict.size(), 1u);
  EXPECT_EQ(out->not_strict[0].tool, "counter");
  EXPECT_EQ(out->not_strict[0].reason.where, "/properties/step");
  EXPECT_NE(out->not_strict[0].reason.message.find("optional"), std::string::npos);
}

TEST(ChatFormats, StrictRefusesWhatWouldChangeTheSchemasMeaning) {
  const auto why = [](const char* schema) {
    auto r = tasks::strict_parameters(*json::parse(schema));
    return r ? std::string("accepted") : r.error().where;
  };
  EXPECT_EQ(why(R"({"type": "object", "additionalProperties": {"type": "number"}})"), "/additionalProperties");
  EXPECT_EQ(why(R"({"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}, {"type": "number"}]}},
                    "required": ["a"]})"),
            "/properties/a/oneOf");
  EXPECT_EQ(why(R"({"type": "string"})"), "");
  EXPECT_EQ(why(R"({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"],
                    "additionalProperties": true})"),
            "accepted");
}

TEST(ChatFormats, StrictIsForOpenAiOnly) {
  auto r = tasks::tools_for_provider({visible(add_tool())}, Provider::anthropic, true);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::bad_usage);
}

class ChatToolsCli : public ::testing::Test {
 protected:
  testing::CommandResult tycli(const std::vector<std::string>& args) { return testing::run_tycli(args, home.path()); }
  testing::TempDir home;
};

TEST_F(ChatToolsCli, WithoutAtListsTheRegistrysActiveToolsInEachFormat) {
  const std::string examples = std::string(TASKYON_SOURCE_DIR) + "/examples/tools/";
  ASSERT_EQ(tycli({"tool", "install", examples + "add.json", examples + "counter.json"}).exit_code, 0);
  const auto list = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"chat", "tools"});
    auto r = tycli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto v = json::parse(r.out);
    EXPECT_TRUE(v) << r.out;
    return std::pair{v ? *v : Value(), r.err};
  };
  EXPECT_EQ(list({"--format", "anthropic"}).first[0]["name"], "add");
  EXPECT_EQ(list({"--format", "anthropic"}).first[1]["name"], "counter");
  EXPECT_TRUE(list({"--format", "mcp"}).first[0].contains("inputSchema"));
  EXPECT_EQ(list({"--format", "openai-responses"}).first[0]["name"], "add");
  auto json_default = tycli({"--json", "chat", "tools"});
  EXPECT_EQ(*json::parse(json_default.out), list({"--format", "openai-chat"}).first);
  auto [strict, err] = list({"--format", "openai-chat", "--strict"});
  EXPECT_EQ(strict[0]["function"]["strict"], true);
  EXPECT_EQ(strict[1]["function"]["strict"], false);  // counter's step is optional
  EXPECT_NE(err.find("tool \"counter\" is listed with \"strict\": false"), std::string::npos) << err;
  EXPECT_NE(err.find("/properties/step"), std::string::npos) << err;
  auto bad = tycli({"chat", "tools", "--format", "gemini"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("openai-responses"), std::string::npos) << bad.err;
  EXPECT_EQ(tycli({"chat", "tools", "--format", "mcp", "--strict"}).exit_code, 2);
}

}  // namespace
}  // namespace taskyon
