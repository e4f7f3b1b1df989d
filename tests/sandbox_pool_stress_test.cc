// One sandbox::Pool under load (issue 18 item 6): 8 threads x 200 calls over
// 4 revisions, real Node sandboxes. Every result is checked; each revision
// keeps one sandbox of its own (a per-sandbox random tag never shows up under
// two revisions), and the calls to one sandbox never overlap (S2): each call
// sees the sandbox's call counter one higher than the last.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "taskyon/sandbox/pool.h"

namespace taskyon::sandbox {
namespace {

using json::Value;

constexpr int kThreads = 8;
constexpr int kCallsPerThread = 200;
constexpr int kRevisions = 4;

std::string code_of(int r) {
  return fmt::format(R"JS(async (args) => {{
    globalThis.tag ??= Math.random().toString(36).slice(2) + '.' + Date.now();
    if (globalThis.busy) throw new Error('two calls at once in one sandbox');
    globalThis.busy = true;
    const count = (globalThis.count = (globalThis.count ?? 0) + 1);
    await new Promise((resolve) => setTimeout(resolve, 0));
    globalThis.busy = false;
    return {{ rev: {0}, tag: globalThis.tag, n: args.n * 2 + {0}, count }};
  }})JS",
                     r);
}

TEST(SandboxPoolStress, EightThreadsTwoHundredCallsFourRevisions) {
  Pool pool;
  std::mutex mu;
  std::map<std::string, std::set<int>> revisions_of_tag;  // tag -> revisions that answered with it
  std::map<int, std::vector<int>> counts_of_revision;     // revision -> counters seen
  std::map<int, std::set<int>> pids_of_revision;          // sampled from pool.sandboxes()
  std::vector<std::string> failures;
  std::atomic<int> ok{0};
  std::atomic<bool> done{false};

  std::thread sampler([&] {  // the pool's own view, while it works
    while (!done.load()) {
      std::map<std::string, int> live;
      for (const auto& s : pool.sandboxes()) {
        std::lock_guard lock(mu);
        if (++live[s.revision] > 1) failures.push_back("two live sandboxes for " + s.revision);
        pids_of_revision[s.revision.back() - '0'].insert(s.pid);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCallsPerThread; ++i) {
        const int r = (t + i) % kRevisions;
        const int n = t * 1000 + i;
        CallRequest request;
        request.tool = ToolCode{fmt::format("sha256:stress-{}", r), code_of(r), fmt::format("stress{}", r)};
        request.args = {{"n", n}};
        request.timeout = std::chrono::seconds(60);
        auto out = pool.call(request);
        std::lock_guard lock(mu);
        if (!out) {
          failures.push_back(fmt::format("thread {} call {}: {}", t, i, out.error().message));
          continue;
        }
        if (out->status != Status::ok) {
          failures.push_back(fmt::format("thread {} call {}: {} {}", t, i, status_name(out->status), out->error));
          continue;
        }
        const Value& v = out->value;
        if (v["rev"] != r || v["n"] != n * 2 + r) {
          failures.push_back(fmt::format("thread {} call {} on revision {}: wrong answer {}", t, i, r, v.dump()));
          continue;
        }
        revisions_of_tag[v["tag"].get<std::string>()].insert(r);
        counts_of_revision[r].push_back(v["count"].get<int>());
        ++ok;
      }
    });
  }
  for (auto& th : threads) th.join();
  done = true;
  sampler.join();

  for (const auto& f : failures) ADD_FAILURE() << f;
  EXPECT_EQ(ok.load(), kThreads * kCallsPerThread);
  for (const auto& [tag, revs] : revisions_of_tag) EXPECT_EQ(revs.size(), 1u) << "sandbox " << tag << " served several revisions";
  EXPECT_EQ(revisions_of_tag.size(), static_cast<std::size_t>(kRevisions)) << "each revision keeps one sandbox";
  for (int r = 0; r < kRevisions; ++r) {
    auto counts = counts_of_revision[r];
    std::sort(counts.begin(), counts.end());
    ASSERT_EQ(counts.size(), static_cast<std::size_t>(kThreads * kCallsPerThread / kRevisions));
    for (std::size_t k = 0; k < counts.size(); ++k) ASSERT_EQ(counts[k], static_cast<int>(k + 1)) << "revision " << r;
  }
  std::set<int> all_pids;
  for (const auto& [r, pids] : pids_of_revision) {
    EXPECT_EQ(pids.size(), 1u) << "revision " << r;
    for (int pid : pids) EXPECT_TRUE(all_pids.insert(pid).second) << "pid " << pid << " under two revisions";
  }
  EXPECT_TRUE(pool.destructions().empty()) << pool.destructions().front().reason;
  EXPECT_EQ(pool.live().size(), static_cast<std::size_t>(kRevisions));
}

}  // namespace
}  // namespace taskyon::sandbox
