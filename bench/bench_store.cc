// make bench: what the store costs per call, and whether a chain of calls
// grows linearly (issue 19: an extra call inside one process <= 0.1 ms;
// `tycli run` of 1000 chained calls linear).
//   Store/run_call           invoke::run_call of a trusted-native tool
//                            (taskyon.sha256: no sandbox, so what is left is
//                            resolve, compile, verify, store, audit)
//   Store/chain/100, /1000   invoke::run_conversation of N chained calls
//                            (each the child of the previous result), on a
//                            fresh store; counter per_call_us; the ratio of
//                            the two times should be ~10
#include <benchmark/benchmark.h>

#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <unistd.h>

#include "taskyon/invoke/conversation.h"
#include "taskyon/invoke/invoke.h"
#include "taskyon/registry/manifest.h"
#include "taskyon/sandbox/pool.h"
#include "taskyon/store/store.h"
#include "taskyon/tasks/compiler.h"

namespace {

namespace fs = std::filesystem;
using namespace taskyon;

struct TempStore {
  fs::path dir;
  std::optional<store::Store> st;
  TempStore() {
    char tmpl[] = "/tmp/taskyon-bench-XXXXXX";
    dir = ::mkdtemp(tmpl);
    st.emplace(*store::Store::open((dir / "taskyon.db").string()));
    auto m = registry::parse_manifest({{"name", "hash"},
                                       {"description", "sha256"},
                                       {"parameters", {{"type", "object"},
                                                       {"properties", {{"text", {{"type", "string"}}}}},
                                                       {"required", {"text"}}}},
                                       {"execution", "trusted-native"},
                                       {"native", "taskyon.sha256"}});
    (void)st->install(*m, store::Activate::if_unbound, store::Trust{"bench", "trusted-native taskyon.sha256"});
  }
  ~TempStore() {
    st.reset();
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

void RunCall(benchmark::State& state) {
  TempStore t;
  sandbox::Pool pool;
  invoke::Options options;
  std::size_t i = 0;
  for (auto _ : state) {
    auto compiled = tasks::compile(tasks::function_call("hash", {{"text", fmt::format("call {}", i++)}}),
                                   {{}, t.st->resolver()});
    if (!compiled) {
      state.SkipWithError(compiled.error().describe().c_str());
      break;
    }
    auto inv = invoke::run_call(*t.st, pool, compiled->task, options);
    if (!inv || !inv->ok()) {
      state.SkipWithError(inv ? inv->outcome.error.c_str() : inv.error().describe().c_str());
      break;
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(RunCall)->Name("Store/run_call")->Unit(benchmark::kMicrosecond);

void Chain(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<tasks::ConversationEntry> entries;
  for (std::size_t i = 0; i < n; ++i) {
    tasks::ConversationEntry e;
    e.draft = tasks::function_call("hash", {{"text", fmt::format("step {}", i)}});
    e.parent.kind = tasks::ParentRef::Kind::previous;
    entries.push_back(std::move(e));
  }
  for (auto _ : state) {
    state.PauseTiming();
    {
      TempStore t;
      sandbox::Pool pool;
      state.ResumeTiming();
      auto r = invoke::run_conversation(*t.st, pool, entries, invoke::Options{});
      state.PauseTiming();
      if (!r || !r->tools_ok()) state.SkipWithError(r ? "a call failed" : r.error().describe().c_str());
    }
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
}
BENCHMARK(Chain)->Name("Store/chain")->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
