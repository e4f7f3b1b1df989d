// Issue 16 item 2: every stored result says which runtime (and version)
// produced it; `tycli call --task` on another runtime refuses unless asked.
// Real tycli processes, real node and deno children, a real SQLite store.
#include <gtest/gtest.h>

#include <regex>

#include "taskyon/registry/manifest.h"
#include "taskyon/sandbox/runtime.h"
#include "taskyon/sandbox/sandbox.h"
#include "taskyon/store/store.h"
#include "taskyon/tasks/compiler.h"
#include "test_util.h"

namespace taskyon {
namespace {

using json::Value;
using testing::run_tycli;
const std::string kExamples = std::string(TASKYON_SOURCE_DIR) + "/examples/tools/";

class RecordsRuntime : public ::testing::Test {
 protected:
  testing::CommandResult tycli(const std::vector<std::string>& args) { return run_tycli(args, home.path()); }
  Value json_of(const testing::CommandResult& r) {
    auto v = json::parse(r.out);
    EXPECT_TRUE(v) << r.out << r.err;
    return v ? *v : Value();
  }
  std::size_t results_of(const std::string& call) {
    auto tree = json_of(tycli({"--json", "task", "tree", call}));
    return tree.empty() ? 0 : tree[0]["children"].size();
  }
  // What `node --version` says for the node tycli finds (the first on PATH).
  std::string node_version() {
    auto r = testing::run_command({"node", "--version"}, home.path());
    return r.out.substr(0, r.out.find('\n'));
  }
  testing::TempDir home;
};

TEST_F(RecordsRuntime, ACallOnNodeRecordsNodeAndItsVersionAndADenoRerunIsRefusedNamingBoth) {
  auto deno = sandbox::find_deno("");
  if (!deno) GTEST_SKIP() << "deno is not installed: " << deno.error().describe();
  ASSERT_EQ(tycli({"tool", "install", kExamples + "add.json"}).exit_code, 0);
  auto first = tycli({"--json", "call", "add", "--args", R"({"num1": 1, "num2": 2})"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const auto out = json_of(first);
  const std::string task = out["task"];
  const Value node = {{"kind", "node"}, {"version", node_version()}};
  EXPECT_EQ(out["runtime"], node);
  EXPECT_TRUE(std::regex_match(node["version"].get<std::string>(), std::regex(R"(v\d+\.\d+\.\d+)")));

  // task show: the result's own record, and the call's (its latest result's), human and JSON.
  EXPECT_EQ(json_of(tycli({"--json", "task", "show", out["resultTask"]}))["runtime"], node);
  EXPECT_EQ(json_of(tycli({"--json", "task", "show", task}))["runtime"], node);
  EXPECT_EQ(json_of(tycli({"--json", "task", "show", out["resultTask"]}))["content"]["toolResult"]["runtime"], node);
  auto shown = tycli({"task", "show", task});
  EXPECT_NE(shown.out.find("runtime   node " + node_version() + "\n"), std::string::npos) << shown.out;

  // Re-run on Deno: refused, naming both runtimes, the flag that allows it; nothing stored.
  auto refused = tycli({"call", "--task", task, "--js-runtime", "deno"});
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("this call ran on node " + node_version()), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("--js-runtime deno would run it on deno 2."), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("--runtime-mismatch allow"), std::string::npos) << refused.err;
  EXPECT_EQ(refused.out, "");
  EXPECT_EQ(results_of(task), 1u);

  // Allowed when asked: the new result records Deno and its version.
  auto allowed = tycli({"--json", "call", "--task", task, "--js-runtime", "deno", "--runtime-mismatch", "allow"});
  ASSERT_EQ(allowed.exit_code, 0) << allowed.err;
  const auto on_deno = json_of(allowed);
  EXPECT_EQ(on_deno["result"], 3);
  EXPECT_EQ(on_deno["runtime"]["kind"], "deno");
  EXPECT_TRUE(std::regex_match(on_deno["runtime"]["version"].get<std::string>(), std::regex(R"(2\.\d+\.\d+)")))
      << on_deno["runtime"];
  EXPECT_NE(on_deno["resultTask"], out["resultTask"]);  // the runtime is part of the result's address
  EXPECT_EQ(results_of(task), 2u);
  EXPECT_EQ(json_of(tycli({"--json", "task", "show", task}))["runtime"], on_deno["runtime"]);

  // A runtime one of its results already ran on is no surprise: a plain (node)
  // re-run runs, though the last row is Deno's. Its result is the first one
  // again (same value, logs and runtime: one record, which keeps its row).
  auto back = tycli({"--json", "call", "--task", task});
  EXPECT_EQ(back.exit_code, 0) << back.err;
  EXPECT_EQ(back.err.find("--runtime-mismatch"), std::string::npos) << back.err;
  EXPECT_EQ(json_of(back)["resultTask"], out["resultTask"]);
  EXPECT_EQ(results_of(task), 2u);
}

TEST_F(RecordsRuntime, ARerunOnARuntimeNoResultRanOnIsRefusedWhateverTheOrder) {
  auto deno = sandbox::find_deno("");
  if (!deno) GTEST_SKIP() << "deno is not installed: " << deno.error().describe();
  ASSERT_EQ(tycli({"tool", "install", kExamples + "add.json"}).exit_code, 0);
  // First run on Deno: a later plain (node) re-run is the mismatch.
  const std::string task =
      json_of(tycli({"--json", "call", "add", "--js-runtime", "deno", "--args", R"({"num1": 1, "num2": 1})"}))["task"];
  auto back = tycli({"call", "--task", task});
  EXPECT_EQ(back.exit_code, 2);
  EXPECT_NE(back.err.find("this call ran on deno 2."), std::string::npos) << back.err;
  EXPECT_NE(back.err.find("--js-runtime node would run it on node v"), std::string::npos) << back.err;
  EXPECT_EQ(results_of(task), 1u);
}

TEST_F(RecordsRuntime, ARerunOnTheSameRuntimeRunsAndStoresTheSameResult) {
  ASSERT_EQ(tycli({"tool", "install", kExamples + "add.json"}).exit_code, 0);
  auto first = json_of(tycli({"--json", "call", "add", "--args", R"({"num1": 2, "num2": 2})"}));
  auto again = tycli({"--json", "call", "--task", first["task"]});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(json_of(again)["resultTask"], first["resultTask"]);  // same runtime, same result: one record
  EXPECT_EQ(again.err, "");
}

// A result stored before runtime records (no toolResult.runtime): shown as
// unknown, and re-run without a refusal; the new result records its runtime.
TEST_F(RecordsRuntime, AResultStoredBeforeRecordsShowsUnknownAndRerunsWithoutRefusal) {
  const std::string db = (home / "taskyon.db").string();
  std::string call_id, old_result;
  {
    auto st = store::Store::open(db);
    ASSERT_TRUE(st) << st.error().describe();
    auto manifest = registry::parse_manifest(*json::parse(
        R"({"name":"add","description":"Adds.","execution":"sandboxed-code","runtime":"javascript",
            "code":"({num1, num2}) => num1 + num2","parameters":{"type":"object",
            "properties":{"num1":{"type":"number"},"num2":{"type":"number"}}}})"));
    ASSERT_TRUE(manifest) << manifest.error().describe();
    ASSERT_TRUE(st->install(*manifest));
    auto compiled = tasks::compile(tasks::function_call("add", {{"num1", 1}, {"num2", 1}}), {{}, st->resolver()});
    ASSERT_TRUE(compiled) << compiled.error().describe();
    auto call = compiled->task;
    call.state = tasks::State::completed;
    call.id = *tasks::compute_id(call);
    tasks::Task result;
    result.parent_id = call.id;
    result.role = tasks::Role::tool;
    result.state = tasks::State::completed;
    result.content = {{"toolResult", {{"result", 2}, {"logs", Value::array()}}}};  // the shape before issue 16
    result.id = *tasks::compute_id(result);
    ASSERT_TRUE(st->put_tasks({call, result}));
    call_id = call.id;
    old_result = result.id;
  }
  auto shown = tycli({"task", "show", old_result});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find("runtime   unknown\n"), std::string::npos) << shown.out;
  EXPECT_EQ(json_of(tycli({"--json", "task", "show", call_id}))["runtime"], nullptr);

  auto rerun = tycli({"--json", "call", "--task", call_id, "--js-runtime", "node"});
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  EXPECT_EQ(json_of(rerun)["runtime"]["kind"], "node");
  EXPECT_EQ(json_of(tycli({"--json", "task", "show", call_id}))["runtime"]["kind"], "node");
}

TEST_F(RecordsRuntime, AResultClaimingAMalformedRuntimeIsRefusedByTheContentRules) {
  const auto check = [](const Value& runtime) -> Result<void> {
    tasks::Task result;
    result.parent_id = "sha256:" + std::string(64, 'a');
    result.role = tasks::Role::tool;
    result.state = tasks::State::completed;
    result.content = {{"toolResult", {{"result", 2}, {"logs", Value::array()}, {"runtime", runtime}}}};
    auto id = tasks::compute_id(result);
    if (!id) return std::unexpected(id.error());
    result.id = *id;
    return tasks::check_invariants(result);
  };
  for (const Value& bad : {Value{{"kind", "node"}}, Value{{"kind", "node"}, {"version", "v1"}, {"extra", 1}},
                           Value("node v22"), Value{{"kind", "python"}, {"version", "3"}, {"isolation", 1}}}) {
    auto r = check(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code, Errc::invalid_task) << bad;
    EXPECT_NE(r.error().describe().find("runtime"), std::string::npos) << r.error().describe();
  }
  auto ok = check({{"kind", "python"}, {"version", "3.11.7"}, {"isolation", "strict"}});
  EXPECT_TRUE(ok) << ok.error().describe();
}

TEST_F(RecordsRuntime, TheVersionIsAskedOncePerExecutableAndMatchesTheRuntime) {
  auto node = sandbox::find_node("");
  ASSERT_TRUE(node) << node.error().describe();
  auto v = sandbox::runtime_version(sandbox::JsRuntime::node, *node);
  ASSERT_TRUE(v) << v.error().describe();
  auto r = testing::run_command({*node, "--version"}, home.path());
  EXPECT_EQ(*v + "\n", r.out);
  EXPECT_EQ(sandbox::runtime_version(sandbox::JsRuntime::node, "/nonexistent/node").error().code,
            Errc::runtime_missing);
}

}  // namespace
}  // namespace taskyon
