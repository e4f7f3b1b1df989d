// A task is read back with the parser's depth limit (512), so nothing deeper
// may be stored: a result or arguments that wrapping in their members makes
// too deep are refused before they are hashed (tasks::check_content), and a
// tool's result that cannot be stored becomes the call's error, never a task
// the store later calls tampered (a hostile review stored 511-deep results
// through tycli call, /v1/call and a page's run; their trees became unreadable).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "served.h"
#include "taskyon/json/json.h"
#include "taskyon/tasks/task.h"
#include "test_util.h"

namespace taskyon {
namespace {

using ::testing::HasSubstr;
using json::Value;

Value nested(std::size_t depth) {  // depth 1 is [], 2 is [[]]; moved, never copied (a copy recurses)
  Value v = Value::array();
  for (std::size_t i = 1; i < depth; ++i) {
    Value outer = Value::array();
    outer.push_back(std::move(v));
    v = std::move(outer);
  }
  return v;
}

TEST(DeepContent, DepthIsCountedWithoutRecursionAndStopsPastTheLimit) {
  EXPECT_EQ(json::depth(Value(1)), 0u);
  EXPECT_EQ(json::depth(nested(1)), 1u);
  EXPECT_EQ(json::depth(Value{{"a", {{"b", nested(3)}}}}), 5u);
  EXPECT_EQ(json::depth(nested(20000), 512), 513u);  // no stack overflow, and it stops counting
}

TEST(DeepContent, ContentTheStoreCouldNotReadBackIsRefused) {
  const auto result = [](std::size_t depth) { return Value{{"toolResult", {{"result", nested(depth)}, {"logs", Value::array()}}}}; };
  EXPECT_TRUE(tasks::check_content(tasks::Role::tool, result(510)));  // 512 with its two members
  auto refused = tasks::check_content(tasks::Role::tool, result(511));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::invalid_task);
  EXPECT_THAT(refused.error().message, HasSubstr("deeper than 512"));
  // What parses back is what check_content admits: the stored form of 510 reads back.
  EXPECT_TRUE(json::parse(result(510).dump()));
  EXPECT_FALSE(json::parse(result(511).dump()));
}

class DeepCalls : public ::testing::Test {
 protected:
  testing::CommandResult tycli(const std::vector<std::string>& args) { return testing::run_tycli(args, home.path()); }
  testing::TempDir home;
};

TEST_F(DeepCalls, AResultTooDeepToReadBackIsStoredAsTheCallsError) {
  const Value tool = testing::js_tool("deep", "() => { let v = []; for (let i = 1; i < 511; i++) v = [v]; return v; }");
  ASSERT_EQ(tycli({"tool", "install", home.write("deep.json", tool.dump())}).exit_code, 0);
  auto call = tycli({"--json", "call", "deep", "--args", "{}"});
  EXPECT_EQ(call.exit_code, 1) << call.err;
  auto answer = json::parse(call.out);
  ASSERT_TRUE(answer) << call.out;
  EXPECT_EQ((*answer)["status"], "tool_error");
  EXPECT_THAT((*answer)["error"]["message"].get<std::string>(), HasSubstr("cannot be stored"));
  auto tree = tycli({"task", "tree", (*answer)["task"].get<std::string>()});
  EXPECT_EQ(tree.exit_code, 0) << tree.err;  // readable: nothing tampered
  EXPECT_THAT(tree.out, HasSubstr("[Error]"));
}

TEST_F(DeepCalls, ArgumentsTooDeepToReadBackAreRefusedBeforeAnythingIsStored) {
  const Value tool = testing::js_tool("open", "(a) => 1");
  Value schema = {{"type", "object"}};
  Value t = tool;
  t["parameters"] = schema;
  ASSERT_EQ(tycli({"tool", "install", home.write("open.json", t.dump())}).exit_code, 0);
  const auto args = home.write("args.json", Value{{"a", nested(510)}}.dump());  // 513 with arguments and functionCall
  auto call = tycli({"call", "open", "--args", "@" + args});
  EXPECT_EQ(call.exit_code, 2) << call.err;
  EXPECT_THAT(call.err, HasSubstr("deeper than 512"));
  EXPECT_EQ(tycli({"task", "tree"}).out.find("open("), std::string::npos);
}

}  // namespace
}  // namespace taskyon
