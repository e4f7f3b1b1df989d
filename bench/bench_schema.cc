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

}  // namespace
