// The bundled agent-loop example (examples/agent-loop/, run by `make demo`)
// runs end to end against the real tycli: tools listed in every format, the
// scripted model's three calls (valid, invalid arguments, a tool that throws)
// go in verbatim and the answers come back with the model's ids.
#include <gtest/gtest.h>

#include "test_util.h"

namespace taskyon {
namespace {

TEST(AgentLoopExample, RunsEndToEndWithTheModelsIds) {
  testing::TempDir home;
  std::filesystem::create_directories(home / "tmp");
  auto r = testing::run_command({"bash", std::string(TASKYON_SOURCE_DIR) + "/examples/agent-loop/agent-loop.sh", TYCLI_PATH},
                                home.path());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto has = [&](const std::string& s) { return r.out.find(s) != std::string::npos; };
  for (const char* format : {"--format openai-chat", "--format openai-responses", "--format anthropic", "--format mcp",
                             "--format openai-chat --strict"})
    EXPECT_TRUE(has(format)) << format;
  EXPECT_TRUE(has(R"("input_schema")"));
  EXPECT_TRUE(has(R"("inputSchema")"));
  // The valid call's answer, the invalid one's readable error, the throw.
  EXPECT_TRUE(has(R"({"content":"42","role":"tool","tool_call_id":"call_Wq7Zs2Ab"})")) << r.out;
  EXPECT_TRUE(has(R"("call_id":"call_Yt4Mn8Pq","output":"error invalid_arguments: )")) << r.out;
  EXPECT_TRUE(has(R"("is_error":true,"tool_use_id":"toolu_01XbC3dE")")) << r.out;
  EXPECT_TRUE(has("cannot divide by zero")) << r.out;
  // The transcript answers the model's ids, not taskyon's.
  const auto transcript = r.out.substr(r.out.rfind("The transcript"));
  for (const char* id : {"call_Wq7Zs2Ab", "call_Yt4Mn8Pq", "toolu_01XbC3dE"})
    EXPECT_NE(transcript.find(std::string("\"tool_call_id\": \"") + id + "\""), std::string::npos) << id << transcript;
}

}  // namespace
}  // namespace taskyon
