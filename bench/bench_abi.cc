// make bench: the C ABI (abi/abi.h) natively, the baseline for the wasm core
// in Node (bench/wasm_core.mjs runs the same inputs through the module and
// this benchmark in the same run, and reports the ratio).
//   AbiDecideFetch   taskyon_decide_fetch over the eight literal-address URLs of
//                    bench_policy.cc, JSON text in and out (parse, decide, dump)
//   AbiManifest      taskyon_manifest on examples/tools/add.json (validate + revision id)
#include <benchmark/benchmark.h>

#include <array>
#include <fstream>
#include <sstream>
#include <string>

#include "taskyon/abi/abi.h"

namespace {

// The inputs bench/wasm_core.mjs uses too (keep them the same).
const std::array<std::string, 8> kInputs = {
    R"({"url":"https://93.184.215.14/"})",
    R"({"url":"https://127.0.0.1/admin"})",
    R"({"url":"https://[2606:4700:4700::1111]/dns-query"})",
    R"({"url":"https://169.254.169.254/latest/meta-data/"})",
    R"({"url":"https://0x7f.1/"})",
    R"({"url":"https://[::ffff:127.0.0.1]/"})",
    R"({"url":"https://8.8.8.8:8443/path?q=1"})",
    R"({"url":"https://10.0.0.1/"})",
};

void AbiDecideFetch(benchmark::State& state) {
  std::size_t i = 0;
  for (auto _ : state) {
    const std::string& in = kInputs[i++ % kInputs.size()];
    size_t len = 0;
    char* out = taskyon_decide_fetch(in.data(), in.size(), &len);
    benchmark::DoNotOptimize(out);
    taskyon_free(out);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(AbiDecideFetch);

void AbiManifest(benchmark::State& state) {
  std::ifstream f(std::string(TASKYON_SOURCE_DIR) + "/examples/tools/add.json");
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string in = ss.str();
  for (auto _ : state) {
    size_t len = 0;
    char* out = taskyon_manifest(in.data(), in.size(), &len);
    benchmark::DoNotOptimize(out);
    taskyon_free(out);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(AbiManifest);

}  // namespace
