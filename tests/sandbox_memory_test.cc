// The pool's memory budget (RuntimeConfig::memory_budget_bytes; issue 12
// item 8), against real Node children: the sum of the live sandboxes' memory
// stays inside the budget because the least recently used idle ones are
// destroyed ("memory_budget"), and calls keep working. The sum is measured
// here independently of the pool (the Pss line of /proc/PID/smaps_rollup).
// And the host's own pages after a fork (memory.h restore_write_access()),
// and the harness text every Node sandbox holds copies of.
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "taskyon/sandbox/guest.h"
#include "taskyon/sandbox/memory.h"
#include "taskyon/sandbox/pool.h"
#include "taskyon/sandbox/runtime.h"
#include "test_util.h"

namespace taskyon::sandbox {
namespace {

using namespace std::chrono_literals;
using json::Value;

constexpr std::uint64_t kMiB = 1ull << 20;

std::uint64_t pss_of(int pid) {
  std::ifstream rollup("/proc/" + std::to_string(pid) + "/smaps_rollup");
  for (std::string line; std::getline(rollup, line);) {
    if (!line.starts_with("Pss:")) continue;
    std::istringstream fields(line.substr(4));
    std::uint64_t kib = 0;
    fields >> kib;
    return kib * 1024;
  }
  return 0;
}

std::uint64_t live_pss(const Pool& pool) {
  std::uint64_t sum = 0;
  for (const auto& info : pool.sandboxes()) sum += pss_of(info.pid);
  return sum;
}

CallOutcome call(Pool& pool, const std::string& revision, const std::string& code, Value args = Value::object()) {
  CallRequest r;
  r.tool = ToolCode{revision, code, "holder"};
  r.args = std::move(args);
  r.timeout = 20s;
  auto outcome = pool.call(r);
  EXPECT_TRUE(outcome) << outcome.error().describe();
  return outcome ? *outcome : CallOutcome{};
}

// Each tool keeps ~40 MiB of touched memory in its retained sandbox.
const std::string kHolder =
    "(args) => { globalThis.held = Buffer.alloc(40 * 1024 * 1024, args.fill); "
    "globalThis.calls = (globalThis.calls ?? 0) + 1; return globalThis.calls; }";

TEST(PoolMemoryBudget, TwentyRetainedSandboxesHoldingFortyMiBStayInsideTheBudget) {
  RuntimeConfig config;
  config.memory_budget_bytes = 256 * kMiB;
  Pool pool(config);
  for (int i = 0; i < 20; ++i) {
    const CallOutcome o = call(pool, "sha256:memory-" + std::to_string(i), kHolder, {{"fill", i + 1}});
    ASSERT_EQ(o.status, Status::ok) << o.error;
    EXPECT_EQ(o.value, 1);
    const std::uint64_t sum = live_pss(pool);
    EXPECT_LE(sum, config.memory_budget_bytes) << "after call " << i << ": " << (sum / kMiB) << " MiB in "
                                               << pool.sandboxes().size() << " sandboxes";
  }
  std::size_t by_budget = 0;
  for (const auto& d : pool.destructions()) {
    by_budget += d.reason == "memory_budget" ? 1 : 0;
    EXPECT_TRUE(d.reason == "memory_budget") << d.revision << ": " << d.reason;  // not the 16-sandbox cap
  }
  EXPECT_GE(by_budget, 20u - pool.live().size());
  EXPECT_GE(pool.live().size(), 1u);  // the budget holds a few of them, not none
  // The most recently used one is still there with its state; an evicted one starts again.
  EXPECT_EQ(call(pool, "sha256:memory-19", kHolder, {{"fill", 1}}).value, 2);
  const CallOutcome again = call(pool, "sha256:memory-0", kHolder, {{"fill", 1}});
  EXPECT_EQ(again.status, Status::ok) << again.error;
  EXPECT_TRUE(again.fresh_sandbox);
  EXPECT_EQ(again.value, 1);
  EXPECT_LE(live_pss(pool), config.memory_budget_bytes);
}

// Destroying a sandbox takes its USS off the live sandboxes' PSS sum, not its
// PSS: its share of the pages it shared with the others (Node's executable)
// moves to them. Fifteen small retained sandboxes, then a call that leaves
// its own sandbox over the budget by about eight small ones' PSS: the pool
// must destroy enough of them that the sum, measured here afterwards, fits.
// Counting each destroyed one's PSS as freed left it 16 MiB over (204 MiB
// against 188, 8 destroyed); counting its USS leaves 184 (11 destroyed).
TEST(PoolMemoryBudget, ADestroyedSandboxFreesItsUniquePagesOnly) {
  constexpr int kSmall = 15;  // with the grower, max_live (16)
  const std::string small = "() => 1";
  const std::string grower = "({mib}) => { globalThis.held = Buffer.alloc(mib * 1024 * 1024, 1); return mib; }";
  std::uint64_t smalls = 0;  // the small sandboxes' PSS sum, in a pool without a budget
  {
    RuntimeConfig unbounded;
    unbounded.memory_budget_bytes = 0;
    Pool measuring(unbounded);
    for (int i = 0; i < kSmall; ++i) call(measuring, "sha256:unique-" + std::to_string(i), small);
    smalls = live_pss(measuring);
  }
  ASSERT_GT(smalls, 0u);
  const std::uint64_t each = smalls / kSmall;
  RuntimeConfig config;
  // Room for the smalls, and for the grower to start (kSandboxStartBytes) with
  // 8 MiB for the inits and the noise of PSS readings: no destruction before.
  config.memory_budget_bytes = smalls + kSandboxStartBytes + 8 * kMiB;
  Pool pool(config);
  for (int i = 0; i < kSmall; ++i) ASSERT_EQ(call(pool, "sha256:unique-" + std::to_string(i), small).status, Status::ok);
  ASSERT_TRUE(pool.destructions().empty());
  // After its call the grower holds about `each` + mib: over the budget by
  // each + mib - 56 MiB, which is 8 × each.
  const std::uint64_t mib = (7 * each + 56 * kMiB + kMiB - 1) / kMiB;
  const CallOutcome grown = call(pool, "sha256:unique-grower", grower, {{"mib", static_cast<std::int64_t>(mib)}});
  ASSERT_EQ(grown.status, Status::ok) << grown.error;
  EXPECT_FALSE(grown.destroyed);  // the call's own sandbox goes last, and it fits
  const std::uint64_t sum = live_pss(pool);
  const std::size_t left = pool.live().size();
  EXPECT_LE(sum, config.memory_budget_bytes)
      << (sum / kMiB) << " MiB in " << left << " sandboxes against " << (config.memory_budget_bytes / kMiB)
      << " MiB; " << pool.destructions().size() << " destroyed, a small one's PSS was " << (each / kMiB) << " MiB";
  EXPECT_GE(left, 2u);  // the grower and a small one: not everything destroyed
  for (const auto& d : pool.destructions()) EXPECT_EQ(d.reason, "memory_budget") << d.revision;
}

// A sandbox that alone exceeds the budget after its call is destroyed too,
// and its outcome says so.
TEST(PoolMemoryBudget, ASandboxOverTheBudgetOnItsOwnIsDestroyedAfterItsCall) {
  RuntimeConfig config;
  // Below the 40 MiB of private memory the tool holds, whatever share of
  // Node's pages the child's PSS gets on a machine running other Node processes.
  config.memory_budget_bytes = 32 * kMiB;
  Pool pool(config);
  const CallOutcome o = call(pool, "sha256:memory-big", kHolder, {{"fill", 7}});
  ASSERT_EQ(o.status, Status::ok) << o.error;
  EXPECT_EQ(o.destroyed, "memory_budget");
  EXPECT_TRUE(pool.live().empty());
  ASSERT_FALSE(pool.destructions().empty());
  EXPECT_EQ(pool.destructions().back().reason, "memory_budget");
}

// The budget reuses an idle sandbox's RSS reading (here for a minute: the
// growing call takes longer than the default 100 ms), but never the reading
// of the sandbox a call just used: a warm call that grows its sandbox after
// a call that did not is counted at its own end.
TEST(PoolMemoryBudget, AWarmCallThatGrowsIsCountedAtItsEnd) {
  const std::string grower =
      "({mib}) => { if (mib) globalThis.held = Buffer.alloc(mib * 1024 * 1024, 1); return mib; }";
  std::uint64_t resident = 0;  // a sandbox's RSS after a call that holds nothing
  {
    Pool measuring;
    ASSERT_EQ(call(measuring, "sha256:memory-grower", grower, {{"mib", 0}}).status, Status::ok);
    for (const auto& info : measuring.sandboxes()) resident += resident_bytes(info.pid).value_or(0);
  }
  ASSERT_GT(resident, 0u);
  RuntimeConfig config;
  config.memory_budget_bytes = resident + 40 * kMiB;
  config.memory_reading_max_age = std::chrono::minutes(1);
  Pool pool(config);
  const CallOutcome small = call(pool, "sha256:memory-grower", grower, {{"mib", 0}});
  ASSERT_EQ(small.status, Status::ok) << small.error;
  ASSERT_FALSE(small.destroyed) << *small.destroyed;
  const CallOutcome grown = call(pool, "sha256:memory-grower", grower, {{"mib", 120}});
  ASSERT_EQ(grown.status, Status::ok) << grown.error;
  EXPECT_FALSE(grown.fresh_sandbox);
  EXPECT_EQ(grown.destroyed, "memory_budget");
  EXPECT_TRUE(pool.live().empty());
}

TEST(PoolMemoryBudget, ZeroMeansNoBudget) {
  RuntimeConfig config;
  config.memory_budget_bytes = 0;
  Pool pool(config);
  EXPECT_EQ(call(pool, "sha256:memory-a", kHolder, {{"fill", 1}}).value, 1);
  EXPECT_EQ(call(pool, "sha256:memory-a", kHolder, {{"fill", 1}}).value, 2);
  EXPECT_TRUE(pool.destructions().empty());
}

TEST(PoolMemoryBudget, MeasuresAChildFromProc) {
  RuntimeConfig config;
  Pool pool(config);
  call(pool, "sha256:memory-m", kHolder, {{"fill", 3}});
  ASSERT_EQ(pool.sandboxes().size(), 1u);
  const int pid = pool.sandboxes().front().pid;
  const auto rss = resident_bytes(pid), pss = proportional_bytes(pid);
  ASSERT_TRUE(rss && pss);
  EXPECT_GE(*pss, 40 * kMiB);  // the touched buffer is private memory
  EXPECT_GE(*rss, *pss);       // RSS is the cheap upper bound
  EXPECT_FALSE(resident_bytes(0x3fffffff));
}

// smaps_rollup needs ptrace access to the process; statm does not. Read by
// a thread that dropped root (setresuid on that thread alone), another
// user's process's footprint() comes from statm: PSS its RSS, USS its
// resident anonymous pages only, never the file pages it shares (counting
// those as freed is the eviction error ADestroyedSandboxFreesItsUniquePagesOnly
// shows). Here USS stays at or below what smaps_rollup says to root.
TEST(ProcessFootprint, WithoutPtraceAccessOnlyAnonymousPagesCountAsFreed) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root, to read another user's process as a second user";
  pid_t pid = 0;
  char arg0[] = "sleep", arg1[] = "60";
  char* argv[] = {arg0, arg1, nullptr};
  ASSERT_EQ(::posix_spawnp(&pid, "sleep", nullptr, nullptr, argv, environ), 0);
  ::usleep(200'000);  // past its dynamic loader: its pages settle
  bool rollup_readable = true, dropped = false;
  std::optional<Footprint> as_other;
  std::thread([&] {
    dropped = ::syscall(SYS_setresuid, 65534, 65534, 65534) == 0;  // this thread's credentials only
    if (!dropped) return;
    rollup_readable = std::ifstream("/proc/" + std::to_string(pid) + "/smaps_rollup").is_open();
    as_other = footprint(pid);
  }).join();
  const auto as_root = footprint(pid);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  ASSERT_TRUE(dropped);
  ASSERT_FALSE(rollup_readable);
  ASSERT_TRUE(as_other && as_root);
  EXPECT_GE(as_other->proportional, as_root->proportional);  // RSS bounds PSS
  EXPECT_GT(as_other->unique, 0u);  // its stack and heap
  EXPECT_LE(as_other->unique, as_root->unique) << "RSS " << as_other->proportional << ", PSS " << as_root->proportional;
  EXPECT_LT(as_other->unique, as_other->proportional);  // libc's pages are not its to free
}

TEST(PoolMemoryBudget, TheConfigFileSetsTheBudgetAndRefusesNonsense) {
  taskyon::testing::TempDir home;
  const std::string file = (home / "config.json").string();
  std::ofstream(file) << R"({"sandboxMemoryBudgetMiB": 300})";
  RuntimeConfig config;
  ASSERT_TRUE(select_runtime(config, "", file));
  EXPECT_EQ(config.memory_budget_bytes, 300 * kMiB);
  for (const char* bad : {R"({"sandboxMemoryBudgetMiB": -1})", R"({"sandboxMemoryBudgetMiB": "1G"})",
                          R"({"sandboxMemoryBudgetMiB": 1.5})", R"({"sandboxMemoryBudgetMiB": 99999999})"}) {
    std::ofstream(file) << bad;
    RuntimeConfig untouched;
    const auto r = select_runtime(untouched, "", file);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code, Errc::bad_usage);
    EXPECT_NE(r.error().message.find("sandboxMemoryBudgetMiB"), std::string::npos) << r.error().message;
    EXPECT_EQ(untouched.memory_budget_bytes, kDefaultMemoryBudgetBytes);
  }
}

// A sandbox's runtime gets its harness as argv text (node -e, deno's data:
// URL) and keeps several copies of it. V8 holds a source with one character
// above 0x7F at two bytes a character, and at that size each copy takes pages
// of its own: 7.8-7.9 MiB of private memory per Node harness, 6.9 with only
// those characters replaced (cmake/embed_file.cmake also refuses to build it).
TEST(GuestCode, TheEmbeddedHarnessesArePrintableAscii) {
  const std::pair<const char*, std::string_view> harnesses[] = {{"node", guest::node_bootstrap()},
                                                                {"deno", guest::deno_harness()}};
  for (const auto& [name, code] : harnesses) {
    ASSERT_FALSE(code.empty()) << name;
    const auto bad = std::find_if(code.begin(), code.end(), [](unsigned char c) {
      return c > 0x7e || (c < 0x20 && c != '\n' && c != '\t');
    });
    EXPECT_EQ(bad, code.end()) << name << " harness, byte " << (bad - code.begin());
  }
}

// This process's anonymous RSS, bytes (RssAnon of /proc/self/status).
std::uint64_t own_anonymous_rss() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.starts_with("RssAnon:")) return std::stoull(line.substr(8)) * 1024;
  return 0;
}

// restore_write_access() gives no page of its own to memory only read (the
// shared zero page, which mincore() counts as resident) and keeps contents:
// 16 MiB read, never written, stays out of the RSS.
TEST(HostPages, RestoringWriteAccessAddsNoPageAndChangesNoByte) {
  if (!can_restore_write_access()) GTEST_SKIP() << "the kernel has no MADV_POPULATE_WRITE (Linux 5.14)";
  constexpr std::size_t kBytes = 16u << 20, kPage = 4096;
  void* read_only = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  void* written = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(read_only, MAP_FAILED);
  ASSERT_NE(written, MAP_FAILED);
  ASSERT_EQ(::madvise(read_only, kBytes, MADV_NOHUGEPAGE), 0);
  auto* zeros = static_cast<volatile unsigned char*>(read_only);
  auto* bytes = static_cast<volatile unsigned char*>(written);
  unsigned sum = 0;
  for (std::size_t i = 0; i < kBytes; i += kPage) {
    sum += zeros[i];
    bytes[i] = static_cast<unsigned char>(i / kPage);
  }
  EXPECT_EQ(sum, 0u);
  const std::uint64_t before = own_anonymous_rss();
  EXPECT_GE(restore_write_access(), kBytes);  // the written block at least
  const std::uint64_t after = own_anonymous_rss();
  EXPECT_LT(after, before + (4u << 20)) << "RssAnon " << before << " -> " << after;
  bool same = true;
  for (std::size_t i = 0; i < kBytes; i += kPage) same = same && bytes[i] == static_cast<unsigned char>(i / kPage);
  EXPECT_TRUE(same);
  ::munmap(read_only, kBytes);
  ::munmap(written, kBytes);
}

}  // namespace
}  // namespace taskyon::sandbox
