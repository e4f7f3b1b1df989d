// make bench: argument validation against JSON Schema patterns (issue 18.1).
// RE2 matches in time linear in the string's length; std::regex took 2^n
// for `^(a+)+$` (33 characters: 90 s). Validation/pattern_nested/N validates
// a string of N 'a' followed by "b" (no match: the worst case for a
// backtracking engine); its bytes_per_second stays flat as N grows.
#include <benchmark/benchmark.h>

#include <string>

#include "taskyon/registry/schema.h"

namespace {

using namespace taskyon;

void pattern_nested(benchmark::State& state) {
  const json::Value params = {{"type", "object"},
                              {"properties", {{"s", {{"type", "string"}, {"pattern", "^(a+)+$"}}}}}};
  const json::Value args = {{"s", std::string(static_cast<std::size_t>(state.range(0)), 'a') + "b"}};
  for (auto _ : state) benchmark::DoNotOptimize(registry::validate_arguments(params, args));
  state.SetBytesProcessed(state.iterations() * state.range(0));
}
BENCHMARK(pattern_nested)->RangeMultiplier(10)->Range(10, 1000000)->Unit(benchmark::kMicrosecond);

// Issue 19: a call's arguments against its tool's schema, compiling the schema
// each time (Validation/compile_each_call) and from the per-process cache
// keyed by revision id (Validation/cached). Same schema, same arguments.
const taskyon::json::Value& call_schema() {
  static const taskyon::json::Value params = {
      {"type", "object"},
      {"properties",
       {{"num1", {{"type", "number"}, {"description", "first"}}},
        {"num2", {{"type", "number"}, {"description", "second"}}},
        {"label", {{"type", "string"}, {"pattern", "^[a-z]+$"}, {"maxLength", 64}}}}},
      {"required", {"num1", "num2"}},
      {"additionalProperties", false}};
  return params;
}

void compile_each_call(benchmark::State& state) {
  const json::Value args = {{"num1", 1}, {"num2", 2.5}, {"label", "sum"}};
  for (auto _ : state) benchmark::DoNotOptimize(registry::validate_arguments(call_schema(), args));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(compile_each_call)->Name("Validation/compile_each_call")->Unit(benchmark::kMicrosecond);

void cached(benchmark::State& state) {
  const json::Value args = {{"num1", 1}, {"num2", 2.5}, {"label", "sum"}};
  for (auto _ : state)
    benchmark::DoNotOptimize(registry::validate_arguments(call_schema(), args, "sha256:bench-validation-cached"));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(cached)->Name("Validation/cached")->Unit(benchmark::kMicrosecond);

}  // namespace
