// make bench: what identities and sandboxes cost.
//   Canonicalize/ContentId   RFC 8785 + SHA-256 of a real manifest
//   SandboxCall/retained     one call in a warm, retained Node sandbox
//   SandboxCall/disposable   one call in a fresh sandbox (spawn + load + call + kill)
#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>

#include "taskyon/json/json.h"
#include "taskyon/sandbox/pool.h"

namespace {

using namespace taskyon;

json::Value example(const char* name) {
  std::ifstream in(std::string(TASKYON_SOURCE_DIR) + "/examples/tools/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return *json::parse(text.str());
}

void Canonicalize(benchmark::State& state) {
  const auto manifest = example("text_stats.json");
  std::size_t bytes = 0;
  for (auto _ : state) {
    auto c = json::canonicalize(manifest);
    bytes += c->size();
    benchmark::DoNotOptimize(c);
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
}
BENCHMARK(Canonicalize);

void ContentId(benchmark::State& state) {
  const auto manifest = example("text_stats.json");
  for (auto _ : state) benchmark::DoNotOptimize(json::content_id_of(manifest));
}
BENCHMARK(ContentId);

void SandboxCall(benchmark::State& state, sandbox::Mode mode) {
  sandbox::Pool pool;
  const auto manifest = example("add.json");
  sandbox::CallRequest request;
  request.tool = {*json::content_id_of(manifest), manifest["code"].get<std::string>()};
  request.args = {{"num1", 1}, {"num2", 2}};
  request.mode = mode;
  if (mode == sandbox::Mode::retained) (void)pool.call(request);  // warm up
  for (auto _ : state) {
    auto outcome = pool.call(request);
    if (!outcome || outcome->status != sandbox::Status::ok) state.SkipWithError("sandbox call failed");
  }
}
BENCHMARK_CAPTURE(SandboxCall, retained, sandbox::Mode::retained)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(SandboxCall, disposable, sandbox::Mode::disposable)->Unit(benchmark::kMillisecond);

}  // namespace
