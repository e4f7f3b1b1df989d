// make bench: what a 1 MiB library costs (issue 17: "load time of a 1 MB
// library cold and warm"), on Node, through sandbox::Pool with the module in
// the load frame exactly as a call with `modules` gets it.
//   Modules/cold/none      a new Pool's first call of a tool without modules (the baseline)
//   Modules/cold/lib_1mib  the same with a 1 MiB CommonJS module it require()s: the start,
//                          the load frame with the module, its evaluation, one call
//   Modules/cold/esm_1mib  the same library as an ES module (index.mjs) it import()s: the
//                          loader's vm.SourceTextModule path (docs/modules.md, "ES modules")
//   Modules/warm/lib_1mib  one more call to the retained sandbox, require() included
//                          (the module is kept: it is not evaluated again)
//   Modules/warm/esm_1mib  the same with import() of the kept ES module
// Report cold/lib_1mib and cold/esm_1mib / cold/none, and the warm ones in µs.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "taskyon/json/json.h"
#include "taskyon/sandbox/pool.h"

namespace {

using namespace taskyon;

enum class Lib { none, cjs, esm };

// About 1 MiB of JavaScript: many small functions, as a real library has;
// CommonJS (index.js) or the same as an ES module (index.mjs).
std::shared_ptr<const json::Value> one_mib_module(Lib kind) {
  std::string source = "'use strict';\nconst fns = {};\n";
  for (int i = 0; source.size() < (1u << 20); ++i)
    source += "fns.f" + std::to_string(i) + " = function (x) { const y = x * " + std::to_string(i % 97) +
              " + 1; return y > 1e9 ? y % 1000 : y + '" + std::string(20, 'a' + i % 26) + "'.length; };\n";
  const bool esm = kind == Lib::esm;
  source += esm ? "export const count = Object.keys(fns).length;\nexport const f1 = fns.f1;\n"
                : "module.exports = { count: Object.keys(fns).length, f1: fns.f1 };\n";
  const std::string file = esm ? "index.mjs" : "index.js";
  return std::make_shared<const json::Value>(json::Value{{"big", {{"main", file}, {"files", {{file, source}}}}}});
}

sandbox::CallRequest request(Lib kind, int n) {
  static const auto cjs = one_mib_module(Lib::cjs);
  static const auto esm = one_mib_module(Lib::esm);
  sandbox::CallRequest r;
  if (kind == Lib::cjs)
    r.tool = sandbox::ToolCode{"sha256:bench-modules-1mib", "({n}) => require('big').f1(n) + require('big').count", "big",
                               cjs};
  else if (kind == Lib::esm)
    r.tool = sandbox::ToolCode{"sha256:bench-modules-esm-1mib",
                               "async ({n}) => { const big = await import('big'); return big.f1(n) + big.count; }", "big",
                               esm};
  else
    r.tool = sandbox::ToolCode{"sha256:bench-modules-none", "({n}) => n + 1", "none"};
  r.args = json::Value{{"n", n}};
  return r;
}

void Cold(benchmark::State& state, Lib kind) {
  int n = 0;
  for (auto _ : state) {
    auto pool = std::make_unique<sandbox::Pool>();
    auto out = pool->call(request(kind, ++n));
    if (!out || out->status != sandbox::Status::ok)
      return state.SkipWithError(out ? out->error.c_str() : out.error().describe().c_str());
    state.PauseTiming();
    pool.reset();
    state.ResumeTiming();
  }
}
BENCHMARK_CAPTURE(Cold, none, Lib::none)->Name("Modules/cold/none")->Unit(benchmark::kMillisecond)->Iterations(20);
BENCHMARK_CAPTURE(Cold, lib_1mib, Lib::cjs)->Name("Modules/cold/lib_1mib")->Unit(benchmark::kMillisecond)->Iterations(20);
BENCHMARK_CAPTURE(Cold, esm_1mib, Lib::esm)->Name("Modules/cold/esm_1mib")->Unit(benchmark::kMillisecond)->Iterations(20);

void Warm(benchmark::State& state, Lib kind) {
  sandbox::Pool pool;
  int n = 0;
  if (auto first = pool.call(request(kind, n)); !first || first->status != sandbox::Status::ok)
    return state.SkipWithError("the first call failed");
  for (auto _ : state) {
    auto out = pool.call(request(kind, ++n));
    if (!out || out->status != sandbox::Status::ok) return state.SkipWithError("a warm call failed");
  }
}
BENCHMARK_CAPTURE(Warm, lib_1mib, Lib::cjs)->Name("Modules/warm/lib_1mib")->Unit(benchmark::kMicrosecond)->MinTime(2.0);
BENCHMARK_CAPTURE(Warm, esm_1mib, Lib::esm)->Name("Modules/warm/esm_1mib")->Unit(benchmark::kMicrosecond)->MinTime(2.0);

}  // namespace
