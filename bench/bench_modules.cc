// make bench: what a 1 MiB library costs (issue 17: "load time of a 1 MB
// library cold and warm"), on Node, through sandbox::Pool with the module in
// the load frame exactly as a call with `modules` gets it.
//   Modules/cold/none      a new Pool's first call of a tool without modules (the baseline)
//   Modules/cold/lib_1mib  the same with a 1 MiB CommonJS module it require()s: the start,
//                          the load frame with the module, its evaluation, one call
//   Modules/warm/lib_1mib  one more call to the retained sandbox, require() included
//                          (the module is kept: it is not evaluated again)
// Report cold/lib_1mib / cold/none, and warm/lib_1mib in µs.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "taskyon/json/json.h"
#include "taskyon/sandbox/pool.h"

namespace {

using namespace taskyon;

// About 1 MiB of CommonJS: many small functions, as a real library has.
std::shared_ptr<const json::Value> one_mib_module() {
  std::string source = "'use strict';\nconst fns = {};\n";
  for (int i = 0; source.size() < (1u << 20); ++i)
    source += "fns.f" + std::to_string(i) + " = function (x) { const y = x * " + std::to_string(i % 97) +
              " + 1; return y > 1e9 ? y % 1000 : y + '" + std::string(20, 'a' + i % 26) + "'.length; };\n";
  source += "module.exports = { count: Object.keys(fns).length, f1: fns.f1 };\n";
  return std::make_shared<const json::Value>(
      json::Value{{"big", {{"main", "index.js"}, {"files", {{"index.js", source}}}}}});
}

sandbox::CallRequest request(bool with_module, int n) {
  static const auto big = one_mib_module();
  sandbox::CallRequest r;
  if (with_module)
    r.tool = sandbox::ToolCode{"sha256:bench-modules-1mib", "({n}) => require('big').f1(n) + require('big').count", "big",
                               big};
  else
    r.tool = sandbox::ToolCode{"sha256:bench-modules-none", "({n}) => n + 1", "none"};
  r.args = json::Value{{"n", n}};
  return r;
}

void Cold(benchmark::State& state, bool with_module) {
  int n = 0;
  for (auto _ : state) {
    auto pool = std::make_unique<sandbox::Pool>();
    auto out = pool->call(request(with_module, ++n));
    if (!out || out->status != sandbox::Status::ok)
      return state.SkipWithError(out ? out->error.c_str() : out.error().describe().c_str());
    state.PauseTiming();
    pool.reset();
    state.ResumeTiming();
  }
}
BENCHMARK_CAPTURE(Cold, none, false)->Name("Modules/cold/none")->Unit(benchmark::kMillisecond)->Iterations(20);
BENCHMARK_CAPTURE(Cold, lib_1mib, true)->Name("Modules/cold/lib_1mib")->Unit(benchmark::kMillisecond)->Iterations(20);

void Warm(benchmark::State& state) {
  sandbox::Pool pool;
  int n = 0;
  if (auto first = pool.call(request(true, n)); !first || first->status != sandbox::Status::ok)
    return state.SkipWithError("the first call failed");
  for (auto _ : state) {
    auto out = pool.call(request(true, ++n));
    if (!out || out->status != sandbox::Status::ok) return state.SkipWithError("a warm call failed");
  }
}
BENCHMARK(Warm)->Name("Modules/warm/lib_1mib")->Unit(benchmark::kMicrosecond)->MinTime(2.0);

}  // namespace
