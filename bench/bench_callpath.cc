// make bench: the sandbox call path against its peers (issue 19 item 6), in one
// run, each figure a ratio to a baseline measured in the same run.
//
//   CallPath/warm/same_cpu, CallPath/warm/cross_cpu
//       one round trip of `({a,b}) => a+b`, interleaved in blocks of kBlock:
//       the C pipe ping-pong floor (a forked child echoing a line), a plain
//       Node child with a line protocol, a plain Deno child likewise, and our
//       warm Pool::call (hardened, retained). Both processes of each pair are
//       pinned (sched_setaffinity, every thread of the child) to CPU 0
//       (same_cpu) or the host to CPU 0 and the child to CPU 1 (cross_cpu).
//       Counters: *_us (mean wall time per call), ours_x_floor, ours_x_node,
//       ours_x_deno, node_x_floor, host_cpu_us (the calling thread's CPU
//       time per Pool::call) and node_host_cpu_us (the same for the Node
//       peer's round trip), child_cpu_us and node_child_cpu_us (CPU time of
//       every thread of the sandbox's runtime, of the Node peer, per call:
//       /proc/PID/task/*/schedstat). CPU times barely move with the load of
//       other processes; wall times do. The blocks start after kTierUp calls
//       to each peer, during which the JIT tiers up: tierup_child_cpu_us and
//       node_tierup_child_cpu_us are the child CPU per call of that phase.
//   CallPath/arg100k/same_cpu, …/cross_cpu
//       a 100 KiB argument (an array of small objects), `({a,b}) => a.length+b`:
//       ours vs the plain Node child doing the same parse; ours_x_node, and
//       the CPU counters as above.
//   CallPath/cold
//       the first call of a revision in a fresh hardened sandbox (start, load,
//       call) vs `node -e 0` with the same empty environment; ours_x_node0.
//   CallPath/cold_prestarted
//       the first call of a new revision in a pool that keeps pre-started
//       sandboxes (RuntimeConfig::prestart = 2), spaced like calls in a
//       long-lived host, vs a warm call of the same pool; first_x_warm.
//   CallPath/warm_among_16
//       host CPU per warm call in a pool with 16 live sandboxes ÷ in a pool
//       with one (many_x_one): what a call spends on the sandboxes it does
//       not use; with the memory budget's readings kept 100 ms (the
//       default) and with none kept (0: every one read after every call).
//   CallPath/pss
//       PSS (/proc/PID/smaps_rollup) per retained sandbox with 20 retained vs
//       per plain Node child with 20 alive; ours_mib, node_mib, ours_x_node.
#include <benchmark/benchmark.h>
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "taskyon/json/json.h"
#include "taskyon/sandbox/memory.h"
#include "taskyon/sandbox/pool.h"
#include "taskyon/sandbox/runtime.h"

namespace {

using namespace taskyon;
using Clock = std::chrono::steady_clock;

constexpr int kBlock = 200;  // round trips of one peer before the next peer's turn
constexpr int kTierUp = 10000;  // round trips of each peer before CallPath/warm's blocks

const char* const kAddCode = "({a, b}) => a + b";
const char* const kLengthCode = "({a, b}) => a.length + b";

// The plain Node peer: a line protocol that parses each line, calls the same
// function and writes {"value":…} back with one blocking write.
const char* const kNodePeer = R"JS(
const fs = require('fs');
const f = eval(process.argv[1]);
let pending = '';
process.stdin.on('data', (chunk) => {
  pending += chunk;
  let nl;
  while ((nl = pending.indexOf('\n')) >= 0) {
    const line = pending.slice(0, nl);
    pending = pending.slice(nl + 1);
    const frame = JSON.parse(line);
    fs.writeSync(1, JSON.stringify({ id: frame.id, value: f(frame.args) }) + '\n');
  }
});
)JS";

// The plain Deno peer, the same protocol.
const char* const kDenoPeer = R"JS(
const f = eval(Deno.args[0]);
const enc = new TextEncoder();
const dec = new TextDecoder();
const buf = new Uint8Array(1 << 20);
let pending = '';
for (;;) {
  const n = Deno.stdin.readSync(buf);
  if (n === null) break;
  pending += dec.decode(buf.subarray(0, n), { stream: true });
  let nl;
  while ((nl = pending.indexOf('\n')) >= 0) {
    const line = pending.slice(0, nl);
    pending = pending.slice(nl + 1);
    const frame = JSON.parse(line);
    const out = enc.encode(JSON.stringify({ id: frame.id, value: f(frame.args) }) + '\n');
    let off = 0;
    while (off < out.length) off += Deno.stdout.writeSync(out.subarray(off));
  }
}
)JS";

// Pins every thread of `pid` (0: this thread only) to `cpu`.
void pin(pid_t pid, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (pid == 0) {
    sched_setaffinity(0, sizeof set, &set);
    return;
  }
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      sched_setaffinity(static_cast<pid_t>(std::atoi(e->d_name)), sizeof set, &set);
    }
    closedir(d);
  }
}

void unpin_self() {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int i = 0; i < CPU_SETSIZE && i < 64; ++i) CPU_SET(i, &set);
  sched_setaffinity(0, sizeof set, &set);
}

// CPU time of every thread of `pid` so far, seconds (/proc/PID/task/*/schedstat,
// field 1: nanoseconds on a CPU). Unlike wall time it hardly moves with the
// load of other processes on the machine.
double process_cpu_seconds(pid_t pid) {
  double total = 0;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      if (FILE* f = std::fopen((dir + "/" + e->d_name + "/schedstat").c_str(), "r")) {
        unsigned long long ns = 0;
        if (std::fscanf(f, "%llu", &ns) == 1) total += static_cast<double>(ns) * 1e-9;
        std::fclose(f);
      }
    }
    closedir(d);
  }
  return total;
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// A child process on two pipes, speaking lines.
class LineChild {
 public:
  // argv[0] is an absolute path; env is empty.
  static std::unique_ptr<LineChild> spawn(const std::vector<std::string>& argv) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) return nullptr;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    char* env[] = {nullptr};
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), env);
    posix_spawn_file_actions_destroy(&actions);
    close(in[0]);
    close(out[1]);
    if (rc != 0) {
      close(in[1]);
      close(out[0]);
      return nullptr;
    }
    return std::unique_ptr<LineChild>(new LineChild(pid, in[1], out[0]));
  }

  // The floor: a forked child that echoes what it reads, nothing else.
  static std::unique_ptr<LineChild> echo() {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) return nullptr;
    const pid_t pid = fork();
    if (pid == 0) {
      char buf[1 << 16];
      for (;;) {
        const ssize_t n = read(in[0], buf, sizeof buf);
        if (n <= 0) _exit(0);
        if (write(out[1], buf, static_cast<std::size_t>(n)) != n) _exit(1);
      }
    }
    close(in[0]);
    close(out[1]);
    return std::unique_ptr<LineChild>(new LineChild(pid, in[1], out[0]));
  }

  ~LineChild() {
    close(to_);
    close(from_);
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }

  // Writes `line` (with its '\n') and reads one reply line; false on EOF.
  bool round_trip(const std::string& line) {
    if (write(to_, line.data(), line.size()) != static_cast<ssize_t>(line.size())) return false;
    for (;;) {
      const std::size_t nl = buffer_.find('\n');
      if (nl != std::string::npos) {
        last_.assign(buffer_, 0, nl);
        buffer_.erase(0, nl + 1);
        return true;
      }
      char chunk[1 << 16];
      const ssize_t n = read(from_, chunk, sizeof chunk);
      if (n <= 0) return false;
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
  }

  pid_t pid() const { return pid_; }
  const std::string& last() const { return last_; }

 private:
  LineChild(pid_t pid, int to, int from) : pid_(pid), to_(to), from_(from) {}
  pid_t pid_;
  int to_, from_;
  std::string buffer_, last_;
};

std::string node_exe() {
  auto found = sandbox::locate_runtime({});
  return found ? found->path : std::string();
}

std::string deno_exe() {
  sandbox::RuntimeConfig config;
  config.runtime = sandbox::JsRuntime::deno;
  auto found = sandbox::locate_runtime(config);
  return found ? found->path : std::string();
}

std::unique_ptr<LineChild> node_peer(const char* code) {
  const std::string node = node_exe();
  if (node.empty()) return nullptr;
  return LineChild::spawn({node, "-e", kNodePeer, code});
}

std::unique_ptr<LineChild> deno_peer(const char* code) {
  const std::string deno = deno_exe();
  if (deno.empty()) return nullptr;
  return LineChild::spawn({deno, "eval", "--quiet", kDenoPeer, code});
}

sandbox::CallRequest add_request(std::string revision, const char* code, json::Value args) {
  sandbox::CallRequest request;
  request.tool = {std::move(revision), code, "bench"};
  request.args = std::move(args);
  return request;
}

pid_t sandbox_pid(const sandbox::Pool& pool, const std::string& revision) {
  for (const auto& info : pool.sandboxes())
    if (info.revision == revision) return info.pid;
  return 0;
}

// Mean wall time of `block` round trips of `step`, microseconds.
template <typename Step>
double block_us(int block, Step&& step, bool& ok) {
  const auto t0 = Clock::now();
  for (int i = 0; i < block && ok; ++i) ok = step();
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / block;
}

// placement 0: everything on CPU 0; 1: the host on CPU 0, every child on CPU 1.
void Warm(benchmark::State& state) {
  const bool cross = state.range(0) == 1;
  const int child_cpu = cross ? 1 : 0;
  if (cross && std::thread::hardware_concurrency() < 2) {
    state.SkipWithError("needs two CPUs");
    return;
  }
  sandbox::Pool pool;
  auto request = add_request("sha256:bench-warm", kAddCode, {{"a", 1}, {"b", 2}});
  auto first = pool.call(request);
  if (!first || first->status != sandbox::Status::ok) {
    state.SkipWithError("the sandbox call failed");
    return;
  }
  auto floor = LineChild::echo();
  auto node = node_peer(kAddCode);
  auto deno = deno_peer(kAddCode);
  const std::string frame = R"({"id":1,"args":{"a":1,"b":2}})" "\n";
  bool ok = floor && node && node->round_trip(frame);
  if (deno && !deno->round_trip(frame)) deno.reset();
  if (!ok) {
    state.SkipWithError("a peer did not start");
    return;
  }
  pin(0, 0);
  pin(floor->pid(), child_cpu);
  pin(node->pid(), child_cpu);
  if (deno) pin(deno->pid(), child_cpu);
  pin(sandbox_pid(pool, request.tool.revision), child_cpu);
  const pid_t ours_pid = sandbox_pid(pool, request.tool.revision);
  // The runtimes' JIT tiers up during the first thousands of calls (its
  // optimizing compiler runs on the child's other threads): that phase is
  // measured on its own, child CPU only, and the blocks below start after it.
  const auto ours_call = [&] {
    auto outcome = pool.call(request);
    return outcome && outcome->status == sandbox::Status::ok && outcome->value == 3;
  };
  double g0 = process_cpu_seconds(node->pid());
  block_us(kTierUp, [&] { return node->round_trip(frame); }, ok);
  const double node_tierup_s = process_cpu_seconds(node->pid()) - g0;
  if (deno) block_us(kTierUp, [&] { return deno->round_trip(frame); }, ok);
  g0 = process_cpu_seconds(ours_pid);
  block_us(kTierUp, ours_call, ok);
  const double ours_tierup_s = process_cpu_seconds(ours_pid) - g0;
  double floor_us = 0, node_us = 0, deno_us = 0, ours_us = 0, cpu_s = 0, node_host_s = 0;
  double node_child_s = 0, ours_child_s = 0;
  std::int64_t rounds = 0;
  for (auto _ : state) {
    if (!ok) break;
    floor_us += block_us(kBlock, [&] { return floor->round_trip(frame); }, ok);
    double c0 = thread_cpu_seconds();
    g0 = process_cpu_seconds(node->pid());
    node_us += block_us(kBlock, [&] { return node->round_trip(frame); }, ok);
    node_host_s += thread_cpu_seconds() - c0;
    node_child_s += process_cpu_seconds(node->pid()) - g0;
    if (deno) deno_us += block_us(kBlock, [&] { return deno->round_trip(frame); }, ok);
    c0 = thread_cpu_seconds(), g0 = process_cpu_seconds(ours_pid);
    ours_us += block_us(kBlock, ours_call, ok);
    cpu_s += thread_cpu_seconds() - c0;
    ours_child_s += process_cpu_seconds(ours_pid) - g0;
    ++rounds;
    if (!ok) {
      state.SkipWithError("a round trip failed");
      break;
    }
  }
  unpin_self();
  if (!ok && rounds == 0) state.SkipWithError("a round trip failed");
  if (rounds == 0) return;
  const double n = static_cast<double>(rounds);
  state.counters["tierup_child_cpu_us"] = ours_tierup_s * 1e6 / kTierUp;
  state.counters["node_tierup_child_cpu_us"] = node_tierup_s * 1e6 / kTierUp;
  state.counters["floor_us"] = floor_us / n;
  state.counters["node_us"] = node_us / n;
  state.counters["ours_us"] = ours_us / n;
  state.counters["host_cpu_us"] = cpu_s * 1e6 / (n * kBlock);
  state.counters["node_host_cpu_us"] = node_host_s * 1e6 / (n * kBlock);
  state.counters["child_cpu_us"] = ours_child_s * 1e6 / (n * kBlock);
  state.counters["node_child_cpu_us"] = node_child_s * 1e6 / (n * kBlock);
  state.counters["ours_x_floor"] = ours_us / floor_us;
  state.counters["ours_x_node"] = ours_us / node_us;
  state.counters["node_x_floor"] = node_us / floor_us;
  if (deno) {
    state.counters["deno_us"] = deno_us / n;
    state.counters["ours_x_deno"] = ours_us / deno_us;
  }
}
BENCHMARK(Warm)->Name("CallPath/warm")->ArgName("cross_cpu")->Arg(0)->Arg(1)->Iterations(20)->Unit(benchmark::kMillisecond);

// A 100 KiB argument: an array of small objects.
json::Value big_args() {
  json::Value a = json::Value::array();
  std::size_t bytes = 0;
  for (int i = 0; bytes < (100u << 10); ++i) {
    json::Value item = {{"k", i}, {"v", "abcdefgh"}};
    bytes += item.dump().size() + 1;
    a.push_back(std::move(item));
  }
  return {{"a", std::move(a)}, {"b", 1}};
}

void Arg100k(benchmark::State& state) {
  const int child_cpu = state.range(0) == 1 ? 1 : 0;
  sandbox::Pool pool;
  auto request = add_request("sha256:bench-100k", kLengthCode, big_args());
  const std::string frame = json::Value{{"id", 1}, {"args", request.args}}.dump() + "\n";
  auto first = pool.call(request);
  auto node = node_peer(kLengthCode);
  if (!first || first->status != sandbox::Status::ok || !node || !node->round_trip(frame)) {
    state.SkipWithError("a peer did not start");
    return;
  }
  pin(0, 0);
  pin(node->pid(), child_cpu);
  pin(sandbox_pid(pool, request.tool.revision), child_cpu);
  constexpr int kBig = 20;
  const pid_t ours_pid = sandbox_pid(pool, request.tool.revision);
  double node_us = 0, ours_us = 0, cpu_s = 0, node_host_s = 0, node_child_s = 0, ours_child_s = 0;
  std::int64_t rounds = 0;
  bool ok = true;
  for (auto _ : state) {
    double c0 = thread_cpu_seconds(), g0 = process_cpu_seconds(node->pid());
    node_us += block_us(kBig, [&] { return node->round_trip(frame); }, ok);
    node_host_s += thread_cpu_seconds() - c0;
    node_child_s += process_cpu_seconds(node->pid()) - g0;
    c0 = thread_cpu_seconds(), g0 = process_cpu_seconds(ours_pid);
    ours_us += block_us(kBig, [&] {
      auto outcome = pool.call(request);
      return outcome && outcome->status == sandbox::Status::ok;
    }, ok);
    cpu_s += thread_cpu_seconds() - c0;
    ours_child_s += process_cpu_seconds(ours_pid) - g0;
    ++rounds;
    if (!ok) {
      state.SkipWithError("a round trip failed");
      break;
    }
  }
  unpin_self();
  if (rounds == 0) return;
  const double n = static_cast<double>(rounds);
  state.counters["node_us"] = node_us / n;
  state.counters["ours_us"] = ours_us / n;
  state.counters["host_cpu_us"] = cpu_s * 1e6 / (n * kBig);
  state.counters["node_host_cpu_us"] = node_host_s * 1e6 / (n * kBig);
  state.counters["child_cpu_us"] = ours_child_s * 1e6 / (n * kBig);
  state.counters["node_child_cpu_us"] = node_child_s * 1e6 / (n * kBig);
  state.counters["ours_x_node"] = ours_us / node_us;
}
BENCHMARK(Arg100k)->Name("CallPath/arg100k")->ArgName("cross_cpu")->Arg(0)->Arg(1)->Iterations(10)->Unit(benchmark::kMillisecond);

// `node -e 0`, empty environment, to its exit: microseconds.
double node_e0_us(const std::string& node) {
  const auto t0 = Clock::now();
  auto child = LineChild::spawn({node, "-e", "0"});
  if (!child) return 0;
  int status = 0;
  waitpid(child->pid(), &status, 0);
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

void Cold(benchmark::State& state) {
  const std::string node = node_exe();
  sandbox::Pool pool;
  double node_us = 0, ours_us = 0;
  std::int64_t rounds = 0, n = 0;
  for (auto _ : state) {
    node_us += node_e0_us(node);
    auto request = add_request("sha256:bench-cold-" + std::to_string(n++), kAddCode, {{"a", 1}, {"b", 2}});
    const auto t0 = Clock::now();
    auto outcome = pool.call(request);
    ours_us += std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    if (!outcome || outcome->status != sandbox::Status::ok || !outcome->fresh_sandbox) {
      state.SkipWithError("the cold call failed");
      break;
    }
    pool.terminate(request.tool.revision, "bench");
    ++rounds;
  }
  if (rounds == 0) return;
  state.counters["node_e0_ms"] = node_us / 1000 / static_cast<double>(rounds);
  state.counters["ours_ms"] = ours_us / 1000 / static_cast<double>(rounds);
  state.counters["ours_x_node0"] = ours_us / node_us;
}
BENCHMARK(Cold)->Name("CallPath/cold")->Iterations(15)->Unit(benchmark::kMillisecond);

void ColdPrestarted(benchmark::State& state) {
  sandbox::RuntimeConfig config;
  config.prestart = 2;
  sandbox::Pool pool(config);
  auto warm = add_request("sha256:bench-warm", kAddCode, {{"a", 1}, {"b", 2}});
  if (auto first = pool.call(warm); !first || first->status != sandbox::Status::ok) {
    state.SkipWithError("the sandbox call failed");
    return;
  }
  double first_us = 0, warm_us = 0;
  std::int64_t rounds = 0, n = 0;
  for (auto _ : state) {
    state.PauseTiming();
    // A long-lived host between two tools' first calls: the pool refills.
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    state.ResumeTiming();
    // The warm call first: right after a first call the pool is starting
    // the next spare, which would slow the warm call, not the first one.
    auto request = add_request("sha256:bench-prestarted-" + std::to_string(n++), kAddCode, {{"a", 1}, {"b", 2}});
    auto t0 = Clock::now();
    auto again = pool.call(warm);
    warm_us += std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    t0 = Clock::now();
    auto outcome = pool.call(request);
    first_us += std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    if (!outcome || outcome->status != sandbox::Status::ok || !again || again->status != sandbox::Status::ok) {
      state.SkipWithError("a call failed");
      break;
    }
    pool.terminate(request.tool.revision, "bench");
    ++rounds;
  }
  if (rounds == 0) return;
  state.counters["first_us"] = first_us / static_cast<double>(rounds);
  state.counters["warm_us"] = warm_us / static_cast<double>(rounds);
  state.counters["first_x_warm"] = first_us / warm_us;
}
BENCHMARK(ColdPrestarted)->Name("CallPath/cold_prestarted")->Iterations(10)->Unit(benchmark::kMillisecond);

// Host CPU per warm call (the calling thread's) in a pool with one live
// sandbox and in one with 16 (the default max_live), the same placement
// (everything on CPU 0); many_x_one = the ratio. What a call does for the
// other live sandboxes (the memory budget's RSS readings) shows here; the
// argument is RuntimeConfig::memory_reading_max_age in ms (0: every live
// sandbox's statm read after every call).
void WarmAmong(benchmark::State& state) {
  constexpr int kLive = 16;
  sandbox::RuntimeConfig config;
  config.memory_reading_max_age = std::chrono::milliseconds(state.range(0));
  sandbox::Pool one(config), many(config);
  const auto request = add_request("sha256:bench-among-0", kAddCode, {{"a", 1}, {"b", 2}});
  bool ok = one.call(request).has_value() && many.call(request).has_value();
  for (int i = 1; i < kLive && ok; ++i) {
    auto other = many.call(add_request("sha256:bench-among-" + std::to_string(i), kAddCode, {{"a", 1}, {"b", 2}}));
    ok = other && other->status == sandbox::Status::ok;
  }
  if (!ok || many.sandboxes().size() != kLive) {
    state.SkipWithError("the sandboxes did not start");
    return;
  }
  pin(0, 0);
  for (const auto* pool : {&one, &many})
    for (const auto& info : pool->sandboxes()) pin(info.pid, 0);
  double one_s = 0, many_s = 0;
  std::int64_t calls = 0;
  const auto call = [&](sandbox::Pool& pool) {
    auto outcome = pool.call(request);
    return outcome && outcome->status == sandbox::Status::ok;
  };
  for (auto _ : state) {
    double c0 = thread_cpu_seconds();
    block_us(kBlock, [&] { return call(one); }, ok);
    one_s += thread_cpu_seconds() - c0;
    c0 = thread_cpu_seconds();
    block_us(kBlock, [&] { return call(many); }, ok);
    many_s += thread_cpu_seconds() - c0;
    calls += kBlock;
    if (!ok) {
      state.SkipWithError("a call failed");
      break;
    }
  }
  unpin_self();
  if (calls == 0) return;
  state.counters["one_live_host_cpu_us"] = one_s * 1e6 / static_cast<double>(calls);
  state.counters["16_live_host_cpu_us"] = many_s * 1e6 / static_cast<double>(calls);
  state.counters["many_x_one"] = many_s / one_s;
}
BENCHMARK(WarmAmong)->Name("CallPath/warm_among_16")->ArgName("reading_max_age_ms")->Arg(100)->Arg(0)->Iterations(10)->Unit(benchmark::kMillisecond);

void Pss(benchmark::State& state) {
  constexpr int kCount = 20;
  for (auto _ : state) {
    sandbox::RuntimeConfig config;
    config.max_live = kCount + 4;
    sandbox::Pool pool(config);
    std::vector<std::string> revisions;
    for (int i = 0; i < kCount; ++i) {
      auto request = add_request("sha256:bench-pss-" + std::to_string(i), kAddCode, {{"a", 1}, {"b", 2}});
      auto outcome = pool.call(request);
      if (!outcome || outcome->status != sandbox::Status::ok) {
        state.SkipWithError("a call failed");
        return;
      }
    }
    std::vector<std::unique_ptr<LineChild>> peers;
    const std::string frame = R"({"id":1,"args":{"a":1,"b":2}})" "\n";
    for (int i = 0; i < kCount; ++i) {
      peers.push_back(node_peer(kAddCode));
      if (!peers.back() || !peers.back()->round_trip(frame)) {
        state.SkipWithError("a node peer failed");
        return;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    double ours = 0, node = 0;
    for (const auto& info : pool.sandboxes()) ours += static_cast<double>(sandbox::proportional_bytes(info.pid).value_or(0));
    for (const auto& peer : peers) node += static_cast<double>(sandbox::proportional_bytes(peer->pid()).value_or(0));
    state.counters["ours_mib"] = ours / kCount / (1 << 20);
    state.counters["node_mib"] = node / kCount / (1 << 20);
    state.counters["ours_x_node"] = ours / node;
  }
}
BENCHMARK(Pss)->Name("CallPath/pss")->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
