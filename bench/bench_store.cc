// make bench: what the store costs per call, and whether a chain of calls
// grows linearly (issue 19: an extra call inside one process <= 0.1 ms;
// `tycli run` of 1000 chained calls linear).
//   Store/run_call/0         invoke::run_call of a trusted-native tool
//                            (taskyon.sha256: no sandbox, so what is left is
//                            resolve, compile, verify, store, audit; the
//                            revision compile read is lent to the call)
//   Store/run_call/1         the same with SQLite's own checkpoint on the
//                            calling thread (the baseline; see RunCall)
//   Store/run_call/2         as /0, the call reading its pinned revision again
//                            (as before the lending; a stored call re-run)
//   Store/chain              invoke::run_conversation of 1000 and of 10000
//                            chained calls (each the child of the previous
//                            result), each on a fresh store, alternated in one
//                            run (the first round is a warm-up); counters:
//                            per_call_1000_us, per_call_10000_us and their
//                            ratio long_x_short (1.0 when the cost of a call
//                            does not grow with the chain's length). Both
//                            lengths pass the store's first WAL checkpoint
//                            (store.h kCheckpointPages, about four pages a
//                            call): a shorter chain does not, and looks
//                            cheaper per call for it
//   Store/open_read/0        Store::open of an existing store, one revision
//                            read on it, and the Store's end: what a path
//                            that opened a Store per request paid (SQLite
//                            parses the whole schema on each new connection)
//   Store/open_read/1        the same read on a Store kept open (the floor)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <sys/resource.h>
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

// Process CPU time (every thread: the checkpointer's too), microseconds.
double process_cpu_us() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e6 +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// Arg 0: the store as it is (checkpoints on its own thread). Arg 1: the
// baseline, SQLite's own checkpoint at the same kCheckpointPages, run by the
// commit that reaches it (PRAGMA wal_autocheckpoint on the calling thread's
// connection, which replaces the store's hook): how the store checkpointed
// before. Arg 2: as 0, without lending the compiled revision to the call
// (it reads the revision it is pinned to again). Counters: worst_us, the
// slowest call; process_cpu_us, CPU time of the whole process per call.
void RunCall(benchmark::State& state) {
  TempStore t;
  if (state.range(0) == 1)
    (void)t.st->database().exec(fmt::format("PRAGMA wal_autocheckpoint = {}", store::kCheckpointPages));
  sandbox::Pool pool;
  invoke::Options options;
  std::size_t i = 0;
  double worst_us = 0;
  const double cpu0 = process_cpu_us();
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    auto compiled = tasks::compile(tasks::function_call("hash", {{"text", fmt::format("call {}", i++)}}),
                                   {{}, t.st->resolver()});
    if (!compiled) {
      state.SkipWithError(compiled.error().describe().c_str());
      break;
    }
    auto inv = invoke::run_call(*t.st, pool, compiled->task, options,
                                state.range(0) == 2 ? std::nullopt : std::optional(std::move(compiled->tool->tool)));
    if (!inv || !inv->ok()) {
      state.SkipWithError(inv ? inv->outcome.error.c_str() : inv.error().describe().c_str());
      break;
    }
    const auto took = std::chrono::steady_clock::now() - t0;
    worst_us = std::max(worst_us, std::chrono::duration<double, std::micro>(took).count());
  }
  state.counters["worst_us"] = worst_us;
  const auto calls = static_cast<double>(std::max<std::int64_t>(1, state.iterations()));
  state.counters["process_cpu_us"] = (process_cpu_us() - cpu0) / calls;
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(RunCall)->Name("Store/run_call")->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);

// The conversation of `n` chained calls to `hash`.
std::vector<tasks::ConversationEntry> chain_entries(std::size_t n) {
  std::vector<tasks::ConversationEntry> entries;
  for (std::size_t i = 0; i < n; ++i) {
    tasks::ConversationEntry e;
    e.draft = tasks::function_call("hash", {{"text", fmt::format("step {}", i)}});
    e.parent.kind = tasks::ParentRef::Kind::previous;
    entries.push_back(std::move(e));
  }
  return entries;
}

// Wall time of one run of `entries` on a fresh store, microseconds per call;
// a negative value when a call failed.
double chain_per_call_us(const std::vector<tasks::ConversationEntry>& entries) {
  TempStore t;
  sandbox::Pool pool;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = invoke::run_conversation(*t.st, pool, entries, invoke::Options{});
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  if (!r || !r->tools_ok()) return -1;
  return us / static_cast<double>(entries.size());
}

void Chain(benchmark::State& state) {
  const auto short_chain = chain_entries(1000);
  const auto long_chain = chain_entries(10000);
  double short_us = 0, long_us = 0;
  std::int64_t rounds = 0;
  for (auto _ : state) {
    const double s = chain_per_call_us(short_chain);
    const double l = chain_per_call_us(long_chain);
    if (s < 0 || l < 0) {
      state.SkipWithError("a call of the chain failed");
      return;
    }
    if (rounds++ == 0) continue;  // warm-up: page cache, allocator, first statements
    short_us += s;
    long_us += l;
  }
  if (rounds < 2) return;
  const double n = static_cast<double>(rounds - 1);
  state.counters["per_call_1000_us"] = short_us / n;
  state.counters["per_call_10000_us"] = long_us / n;
  state.counters["long_x_short"] = long_us / short_us;
}
BENCHMARK(Chain)->Name("Store/chain")->Iterations(4)->Unit(benchmark::kMillisecond);

// Store::open of an existing store and one read of a revision on it, then
// the Store's end, while another Store of the process keeps the file open (as
// a server does). Arg 1: the read only, on a Store kept open (the floor).
void OpenRead(benchmark::State& state) {
  TempStore t;
  const std::string path = (t.dir / "taskyon.db").string();
  const std::string id = t.st->resolve("hash")->id;
  for (auto _ : state) {
    if (state.range(0) == 1) {
      if (!t.st->revision(id)) state.SkipWithError("read failed");
      continue;
    }
    auto st = store::Store::open(path);
    if (!st || !st->revision(id)) state.SkipWithError("open failed");
  }
}
BENCHMARK(OpenRead)->Name("Store/open_read")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace
