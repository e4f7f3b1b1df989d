// make bench: what containment costs at start (issue 11: the hardened cold
// start and warm call must not get more than 5% slower).
//   Containment/contained_exit   fork to exit of `node -e 0` with the production
//                                flags under contain(): the layers before issue
//                                11 (no sandbox uid, mount or PID namespace),
//                                every layer but the PID namespace, every layer;
//                                rotated in one run; counters: the median of each
//                                (ms), pidns_over_plain, all_over_before11
//   Containment/pool_cold_start  a new sandbox::Pool's first call on Node: the
//                                child's start, the tool's load and one call
//                                (the Pool's teardown is not timed)
//   Containment/pool_warm_call   one more call to the retained sandbox
//   Containment/warm_call_layers/other:N  a warm call to a retained sandbox
//                                with every layer and to one with other layers
//                                (compared_layers: 5-7 seccomp, Landlock, all
//                                kernel layers off), alternated call by call in
//                                one run, host and sandboxes on one CPU;
//                                counters: the median of each (µs), all_over_other
#include <benchmark/benchmark.h>

#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "taskyon/hardening/contain.h"
#include "taskyon/sandbox/pool.h"
#include "taskyon/sandbox/process.h"
#include "taskyon/sandbox/sandbox.h"

namespace {

using namespace taskyon;
using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Starts `node -e 0` under `policy` and waits for it to exit; ms, or -1.
double contained_exit_ms(sandbox::Launcher& launcher, const std::shared_ptr<const hardening::Policy>& policy,
                         const std::string& node, const std::string& workdir) {
  const sandbox::SpawnSpec spec{.policy = policy,
                                .argv = {node, "--max-old-space-size=256", "--experimental-permission",
                                         "--no-warnings", "--openssl-config=/dev/null", "-e", "0"},
                                .env = {},
                                .workdir = workdir,
                                .limits = {.data_bytes = (256ull + 512) << 20, .open_files = 256}};
  const auto start = Clock::now();
  auto child = launcher.spawn(spec);
  if (!child) return -1;
  pollfd p{(*child)->pidfd(), POLLIN, 0};
  while (::poll(&p, 1, -1) < 0) {
  }
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  const int status = (*child)->reap();
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? ms : -1;
}

void ContainedExit(benchmark::State& state) {
  auto node = sandbox::find_node("");
  if (!node) return state.SkipWithError("no node");
  // Before issue 11: no sandbox uid, mount namespace or PID namespace (its
  // seccomp rules cannot be switched off; they add a few BPF instructions).
  auto before = hardening::Policy::prepare(
      *node, {"/dev/null"}, hardening::Layers{.sandbox_uid = false, .mount_namespace = false, .pid_namespace = false});
  auto plain = hardening::Policy::prepare(*node, {"/dev/null"}, hardening::Layers{.pid_namespace = false});
  auto pidns = hardening::Policy::prepare(*node, {"/dev/null"}, hardening::Layers{});
  if (!before || !plain || !pidns) return state.SkipWithError("cannot prepare the policies");
  if (!(*pidns)->layers().pid_namespace) return state.SkipWithError("no PID namespace on this machine");
  char dir[] = "/tmp/taskyon-bench-XXXXXX";
  if (!::mkdtemp(dir)) return state.SkipWithError("mkdtemp");
  sandbox::Launcher launcher;
  const std::shared_ptr<const hardening::Policy>* policies[] = {&*before, &*plain, &*pidns};
  std::vector<double> times[3];
  int turn = 0;
  for (auto _ : state) {
    ++turn;  // rotate which goes first
    for (int k = 0; k < 3; ++k) {
      const int which = (turn + k) % 3;
      const double ms = contained_exit_ms(launcher, *policies[which], *node, dir);
      if (ms < 0) return state.SkipWithError("node -e 0 did not exit 0 under contain()");
      times[which].push_back(ms);
    }
  }
  std::filesystem::remove_all(dir);
  state.counters["before11_ms"] = median(times[0]);
  state.counters["plain_ms"] = median(times[1]);
  state.counters["pidns_ms"] = median(times[2]);
  state.counters["pidns_over_plain"] = median(times[2]) / median(times[1]);
  state.counters["all_over_before11"] = median(times[2]) / median(times[0]);
}
BENCHMARK(ContainedExit)->Name("Containment/contained_exit")->Unit(benchmark::kMillisecond)->Iterations(30);

sandbox::CallRequest request(int n) {
  sandbox::CallRequest r;
  r.tool = sandbox::ToolCode{"sha256:bench-containment", "(args) => args.n + 1"};
  r.args = json::Value{{"n", n}};
  return r;
}

void PoolColdStart(benchmark::State& state) {
  int n = 0;
  for (auto _ : state) {
    auto pool = std::make_unique<sandbox::Pool>();
    auto out = pool->call(request(++n));
    if (!out || out->status != sandbox::Status::ok) return state.SkipWithError("the first call failed");
    state.PauseTiming();
    pool.reset();
    state.ResumeTiming();
  }
}
BENCHMARK(PoolColdStart)->Name("Containment/pool_cold_start")->Unit(benchmark::kMillisecond)->Iterations(30);

void PoolWarmCall(benchmark::State& state) {
  sandbox::Pool pool;
  int n = 0;
  if (auto first = pool.call(request(n)); !first || first->status != sandbox::Status::ok) {
    return state.SkipWithError("the first call failed");
  }
  for (auto _ : state) {
    auto out = pool.call(request(++n));
    if (!out || out->status != sandbox::Status::ok) return state.SkipWithError("a warm call failed");
  }
}
BENCHMARK(PoolWarmCall)->Name("Containment/pool_warm_call")->Unit(benchmark::kMicrosecond)->MinTime(3.0);

// The layer set of warm_call_layers/N's second pool: 0 the layers before issue
// 11, 1-3 every layer but one of its three, 4 every layer (the control: its
// ratio is the noise of the alternation itself), 5 every layer but seccomp,
// 6 every layer but Landlock, 7 none of the kernel layers (issue 19: what the
// layers cost a warm call next to a plain Node child; tycli never does this).
hardening::Layers compared_layers(std::int64_t variant) {
  switch (variant) {
    case 0: return {.sandbox_uid = false, .mount_namespace = false, .pid_namespace = false};
    case 1: return {.sandbox_uid = false};
    case 2: return {.mount_namespace = false};
    case 3: return {.pid_namespace = false};
    case 5: return {.seccomp = false};
    case 6: return {.landlock = false};
    case 7:
      return {.namespaces = false, .landlock = false, .seccomp = false, .sandbox_uid = false,
              .mount_namespace = false, .pid_namespace = false};
    default: return {};
  }
}

void WarmCallLayers(benchmark::State& state) {
  // One placement for both: this thread, and so the sandboxes it starts
  // (affinity is inherited), on one CPU. Unpinned, which pool's child the
  // scheduler puts next to the host decides the figure (a pipe round trip is
  // ~3 µs on one CPU, 24-66 µs across): all-vs-all read 0.40 here.
  cpu_set_t saved, one;
  ::sched_getaffinity(0, sizeof saved, &saved);
  CPU_ZERO(&one);
  CPU_SET(::sched_getcpu(), &one);
  ::sched_setaffinity(0, sizeof one, &one);
  struct Restore {
    cpu_set_t& mask;
    ~Restore() { ::sched_setaffinity(0, sizeof mask, &mask); }
  } restore{saved};
  sandbox::RuntimeConfig compared;
  compared.layers = compared_layers(state.range(0));
  sandbox::Pool all, before(compared);
  int n = 0;
  for (sandbox::Pool* pool : {&all, &before})
    if (auto first = pool->call(request(n)); !first || first->status != sandbox::Status::ok)
      return state.SkipWithError("the first call failed");
  std::vector<double> all_us, before_us;
  auto timed = [&](sandbox::Pool& pool, std::vector<double>& into) {
    const auto start = std::chrono::steady_clock::now();
    auto out = pool.call(request(++n));
    into.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
    return out && out->status == sandbox::Status::ok;
  };
  for (auto _ : state) {
    const bool first_all = n % 4 == 0;  // alternate which goes first, so neither always follows the other
    if (!(first_all ? timed(all, all_us) && timed(before, before_us) : timed(before, before_us) && timed(all, all_us)))
      return state.SkipWithError("a warm call failed");
  }
  auto median = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  const double a = median(all_us), b = median(before_us);
  state.counters["all_us"] = a;
  state.counters["other_us"] = b;
  state.counters["all_over_other"] = a / b;
}
BENCHMARK(WarmCallLayers)
    ->Name("Containment/warm_call_layers")
    ->ArgName("other")  // 0 before issue 11, 1 no sandbox uid, 2 no mount namespace, 3 no PID namespace, 4 all,
                        // 5 no seccomp, 6 no Landlock, 7 no kernel layer
    ->DenseRange(0, 7)
    ->Unit(benchmark::kMicrosecond)
    ->MinTime(2.0);

}  // namespace
