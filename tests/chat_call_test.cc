// `tycli chat call`: a model's tool call handed back verbatim in each
// provider's shape, stored under --at with the model's own call id, and the
// role: tool answer in the provider's shape (real tycli, real sandboxes).
#include <gtest/gtest.h>

#include "taskyon/tasks/compiler.h"
#include "taskyon/tasks/provider.h"
#include "test_util.h"

namespace taskyon {
namespace {

using json::Value;

class ChatCall : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string src = TASKYON_SOURCE_DIR;
    auto r = tycli({"tool", "install", src + "/examples/tools/add.json", src + "/examples/agent-loop/divide.json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto run = tycli({"--json", "run", src + "/examples/agent-loop/conversation.json"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    root = (*json::parse(run.out))["roots"][0].get<std::string>();
  }
  testing::CommandResult tycli(const std::vector<std::string>& args) { return testing::run_tycli(args, home.path()); }
  // chat call --json: exit 0 and the parsed output.
  Value call(const std::string& at, const std::string& tool_call, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--json", "chat", "call", "--at", at, "--tool-call", tool_call};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = tycli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto v = json::parse(r.out);
    EXPECT_TRUE(v) << r.out << r.err;
    return v ? *v : Value();
  }
  Value messages(const std::string& at) { return *json::parse(tycli({"--json", "chat", "messages", "--at", at}).out); }
  testing::TempDir home;
  std::string root;
};

TEST_F(ChatCall, OpenAiChatCallRunsAndAnswersWithTheModelsId) {
  const auto out =
      call(root, R"({"id": "call_abc123", "type": "function", "function": {"name": "add", "arguments": "{\"num1\": 2, \"num2\": 40}"}})");
  EXPECT_EQ(out["ok"], true);
  EXPECT_EQ(out["message"], (Value{{"role", "tool"}, {"tool_call_id", "call_abc123"}, {"content", "42"}}));
  // Stored: the call under --at with the model's id, its result under the call.
  auto stored_call = *json::parse(tycli({"--json", "task", "show", out["call"].get<std::string>()}).out);
  EXPECT_EQ(stored_call["parentId"], root);
  EXPECT_EQ(stored_call["content"]["functionCall"]["callId"], "call_abc123");
  EXPECT_EQ(stored_call["state"], "Completed");
  auto stored_result = *json::parse(tycli({"--json", "task", "show", out["id"].get<std::string>()}).out);
  EXPECT_EQ(stored_result["parentId"], out["call"]);
  // Ids round-trip into chat messages.
  const auto m = messages(out["id"]);
  ASSERT_EQ(m.size(), 3u) << m.dump();
  EXPECT_EQ(m[1]["tool_calls"][0]["id"], "call_abc123");
  EXPECT_EQ(m[1]["tool_calls"][0]["function"]["arguments"], R"({"num1":2,"num2":40})");
  EXPECT_EQ(m[2]["tool_call_id"], "call_abc123");
}

TEST_F(ChatCall, ResponsesAndAnthropicCallsAnswerInTheirOwnShape) {
  const auto responses =
      call(root, R"({"type": "function_call", "id": "fc_1", "call_id": "call_resp_7", "name": "add", "arguments": "{\"num1\": 1, \"num2\": 2}"})");
  EXPECT_EQ(responses["message"],
            (Value{{"type", "function_call_output"}, {"call_id", "call_resp_7"}, {"output", "3"}}));
  const auto anthropic = call(responses["id"],
                              R"({"type": "tool_use", "id": "toolu_01A", "name": "divide", "input": {"dividend": 9, "divisor": 3}})");
  EXPECT_EQ(anthropic["message"]["role"], "user");
  EXPECT_EQ(anthropic["message"]["content"][0],
            (Value{{"type", "tool_result"}, {"tool_use_id", "toolu_01A"}, {"content", "3"}, {"is_error", false}}));
  // --format answers in another shape; the model's id stays.
  const auto as_chat = call(anthropic["id"],
                            R"({"type": "tool_use", "id": "toolu_02B", "name": "add", "input": {"num1": 1, "num2": 1}})",
                            {"--format", "openai-chat"});
  EXPECT_EQ(as_chat["message"]["tool_call_id"], "toolu_02B");
  const auto m = messages(as_chat["id"]);
  std::vector<std::string> ids;
  for (const auto& msg : m)
    if (msg.contains("tool_call_id")) ids.push_back(msg["tool_call_id"]);
  EXPECT_EQ(ids, (std::vector<std::string>{"call_resp_7", "toolu_01A", "toolu_02B"}));
}

TEST_F(ChatCall, SameCallTwiceWithTwoModelIdsIsTwoTasks) {
  const std::string body = R"("type": "function", "function": {"name": "add", "arguments": "{\"num1\": 1, \"num2\": 1}"}})";
  const auto a = call(root, R"({"id": "call_one", )" + body);
  const auto b = call(root, R"({"id": "call_two", )" + body);
  EXPECT_NE(a["call"], b["call"]);  // callId is hashed (docs/tasks.md)
}

TEST_F(ChatCall, InvalidArgumentsAreStoredAsAResultTheModelReads) {
  // Not JSON.
  auto bad_json = call(root, R"({"id": "call_bad", "type": "function", "function": {"name": "add", "arguments": "{\"num1\": 2,"}})");
  EXPECT_EQ(bad_json["ok"], false);
  const std::string text = bad_json["message"]["content"];
  EXPECT_EQ(text.rfind("error invalid_arguments: the arguments (/function/arguments) are not valid JSON", 0), 0u) << text;
  EXPECT_EQ(bad_json["message"]["tool_call_id"], "call_bad");
  // Against the schema: the message names the JSON pointer.
  auto mismatch = call(root, R"({"type": "tool_use", "id": "toolu_bad", "name": "add", "input": {"num1": "two", "num2": 3}})");
  const std::string why = mismatch["message"]["content"][0]["content"];
  EXPECT_EQ(mismatch["message"]["content"][0]["is_error"], true);
  EXPECT_NE(why.find("tool \"add\": arguments do not match"), std::string::npos) << why;
  EXPECT_NE(why.find("/num1"), std::string::npos) << why;
  // Stored, answering the model's id, and not runnable again.
  const auto m = messages(mismatch["id"]);
  EXPECT_EQ(m.back()["tool_call_id"], "toolu_bad");
  EXPECT_EQ(m.back()["content"], why);
  auto stored = *json::parse(tycli({"--json", "task", "show", mismatch["call"].get<std::string>()}).out);
  EXPECT_EQ(stored["state"], "Error");
  EXPECT_EQ(stored["content"]["functionCall"]["arguments"]["num1"], "two");  // what the model sent
  EXPECT_NE(tycli({"call", "--task", mismatch["call"].get<std::string>()}).exit_code, 0);
}

TEST_F(ChatCall, UnknownToolIsAnsweredWithTheToolsThereAre) {
  auto out = call(root, R"({"type": "function_call", "call_id": "call_x", "name": "multiply", "arguments": "{}"})");
  EXPECT_EQ(out["ok"], false);
  const std::string text = out["message"]["output"];
  EXPECT_NE(text.find("error not_found: there is no tool \"multiply\" here"), std::string::npos) << text;
  EXPECT_NE(text.find("add, divide"), std::string::npos) << text;
}

TEST_F(ChatCall, AToolThatThrowsIsAnErrorResultForTheModel) {
  auto out = call(root, R"({"id": "call_div0", "type": "function", "function": {"name": "divide", "arguments": "{\"dividend\": 1, \"divisor\": 0}"}})");
  EXPECT_EQ(out["ok"], false);
  const std::string text = out["message"]["content"];
  EXPECT_NE(text.find("cannot divide by zero"), std::string::npos) << text;
  EXPECT_EQ(messages(out["id"]).back()["tool_call_id"], "call_div0");
}

TEST_F(ChatCall, WhatIsNoToolCallIsRefusedAndNothingStored) {
  const auto before = tycli({"--json", "task", "tree"}).out;
  for (const std::string bad : {R"({"role": "assistant"})", R"({"type": "function", "function": {"name": "add"}})",
                                R"({"type": "tool_use", "id": "toolu 1", "name": "add", "input": {}})", "[1]"}) {
    auto r = tycli({"chat", "call", "--at", root, "--tool-call", bad});
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_NE(r.err.find("--tool-call"), std::string::npos) << r.err;
  }
  auto mcp = tycli({"chat", "call", "--at", root, "--format", "mcp", "--tool-call",
                    R"({"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"num1": 1, "num2": 2}})"});
  EXPECT_EQ(mcp.exit_code, 2) << mcp.err;  // an MCP client's answer is a tools/call result
  EXPECT_NE(mcp.err.find("tools/call"), std::string::npos) << mcp.err;
  EXPECT_EQ(tycli({"--json", "task", "tree"}).out, before);
}

TEST_F(ChatCall, ReadsTheCallFromStdinAndFromAFile) {
  const std::string file = home.write("call.json", R"({"type": "tool_use", "id": "toolu_file", "name": "add", "input": {"num1": 5, "num2": 5}})");
  EXPECT_EQ(call(root, "@" + file)["message"]["content"][0]["content"], "10");
  auto r = testing::run_command({"sh", "-c", std::string(TYCLI_PATH) + " --json chat call --at " + root +
                                                 " --tool-call - < " + file},
                                home.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ((*json::parse(r.out))["message"]["content"][0]["tool_use_id"], "toolu_file");
}

TEST(ChatCallId, ToolCodeCannotGiveACallTheModelsId) {
  tasks::Draft planted{tasks::Role::assistant,
                       {{"functionCall", {{"name", "add"}, {"arguments", Value::object()}, {"callId", "call_forged"}}}},
                       {},
                       tasks::Provenance{"sha256:" + std::string(64, 'a'), "sha256:" + std::string(64, 'b')}};
  auto r = tasks::compile(planted, {{}, [](std::string_view) -> Result<tasks::ResolvedTool> {
                                      return fail(Errc::not_found, "no registry here");
                                    }});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::invalid_task);
  EXPECT_EQ(r.error().where, "/content/functionCall/callId");
}

TEST(ChatCallId, ACallIdIsPrintableAsciiWithoutSpaces) {
  EXPECT_TRUE(tasks::is_provider_call_id(Value("toolu_01XbC3dE")));
  EXPECT_FALSE(tasks::is_provider_call_id(Value("")));
  EXPECT_FALSE(tasks::is_provider_call_id(Value("call 1")));
  EXPECT_FALSE(tasks::is_provider_call_id(Value("call\x1b[2J")));
  EXPECT_FALSE(tasks::is_provider_call_id(Value(std::string(257, 'a'))));
  auto bad = tasks::check_content(tasks::Role::assistant,
                                  {{"functionCall", {{"name", "add"}, {"arguments", Value::object()}, {"callId", 7}}}});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().where, "/content/functionCall/callId");
}

}  // namespace
}  // namespace taskyon
