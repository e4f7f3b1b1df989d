// taskyon::Workers (base/workers.h): jobs run at once on a reused thread (the
// one idle last) or a new one, never behind a running job; idle threads end
// after their limit; close() waits for running jobs and refuses new ones.
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "taskyon/base/workers.h"

namespace workers_test {

using namespace std::chrono_literals;
using taskyon::Workers;

pid_t kernel_tid() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

template <typename Pred>
bool soon(Pred pred) {
  for (int i = 0; i < 1000 && !pred(); ++i) std::this_thread::sleep_for(2ms);
  return pred();
}

// Runs `job` and waits until it has run and its thread waits again.
pid_t run_and_settle(Workers& workers, std::size_t idle_after) {
  std::promise<pid_t> tid;
  auto got = tid.get_future();
  EXPECT_TRUE(workers.run([&tid] { tid.set_value(kernel_tid()); }));
  const pid_t t = got.get();
  EXPECT_TRUE(soon([&] { return workers.idle() == idle_after; }));
  return t;
}

TEST(Workers, JobsOneAfterAnotherRunOnOneThread) {
  Workers workers;
  std::set<pid_t> tids;
  for (int i = 0; i < 20; ++i) tids.insert(run_and_settle(workers, 1));
  EXPECT_EQ(tids.size(), 1u) << "a thread was started for a job although one was idle";
  EXPECT_EQ(workers.threads(), 1u);
  EXPECT_NE(*tids.begin(), kernel_tid());
}

TEST(Workers, AJobNeverWaitsBehindARunningOne) {
  Workers workers;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<pid_t> stuck_tid;
  ASSERT_TRUE(workers.run([&stuck_tid, released] {
    stuck_tid.set_value(kernel_tid());
    released.wait();
  }));
  const pid_t stuck = stuck_tid.get_future().get();
  std::promise<pid_t> next_tid;
  auto next = next_tid.get_future();
  ASSERT_TRUE(workers.run([&next_tid] { next_tid.set_value(kernel_tid()); }));
  ASSERT_EQ(next.wait_for(10s), std::future_status::ready) << "the second job waited behind the stuck one";
  EXPECT_NE(next.get(), stuck);
  EXPECT_EQ(workers.threads(), 2u);
  release.set_value();
}

TEST(Workers, TheThreadIdleLastTakesTheNextJob) {
  Workers workers;
  std::promise<void> release_a, release_b;
  std::shared_future<void> a_go = release_a.get_future().share(), b_go = release_b.get_future().share();
  std::promise<pid_t> a_tid, b_tid;
  ASSERT_TRUE(workers.run([&a_tid, a_go] {
    a_tid.set_value(kernel_tid());
    a_go.wait();
  }));
  ASSERT_TRUE(workers.run([&b_tid, b_go] {
    b_tid.set_value(kernel_tid());
    b_go.wait();
  }));
  const pid_t a = a_tid.get_future().get(), b = b_tid.get_future().get();
  release_a.set_value();
  ASSERT_TRUE(soon([&] { return workers.idle() == 1; }));
  release_b.set_value();
  ASSERT_TRUE(soon([&] { return workers.idle() == 2; }));
  EXPECT_EQ(run_and_settle(workers, 2), b) << "the warmest thread (idle last) takes the job";
  EXPECT_EQ(run_and_settle(workers, 2), b);
  EXPECT_NE(a, b);
}

TEST(Workers, AnIdleThreadEndsAfterItsLimitAndANewOneTakesLaterJobs) {
  Workers workers(30ms);
  auto run_once = [&] {
    std::promise<pid_t> tid;
    auto got = tid.get_future();
    EXPECT_TRUE(workers.run([&tid] { tid.set_value(kernel_tid()); }));
    return got.get();
  };
  const pid_t first = run_once();
  ASSERT_TRUE(soon([&] { return workers.threads() == 0; })) << "the idle thread outlived its limit";
  EXPECT_EQ(workers.idle(), 0u);
  const pid_t second = run_once();
  EXPECT_NE(first, second);
}

TEST(Workers, AJobsCapturesAreLetGoWhenItEnds) {
  Workers workers;
  auto held = std::make_shared<int>(7);
  std::promise<void> ran;
  auto done = ran.get_future();
  ASSERT_TRUE(workers.run([held, &ran] { ran.set_value(); }));
  done.get();
  ASSERT_TRUE(soon([&] { return workers.idle() == 1; }));
  EXPECT_EQ(held.use_count(), 1) << "an idle thread still holds its last job";
}

TEST(Workers, CloseWaitsForRunningJobsThenRefusesNewOnes) {
  Workers workers;
  std::atomic<bool> finished{false};
  std::promise<void> started, release;
  auto running = started.get_future();
  std::shared_future<void> go = release.get_future().share();
  ASSERT_TRUE(workers.run([&, go] {
    started.set_value();
    go.wait();
    std::this_thread::sleep_for(50ms);
    finished = true;
  }));
  running.get();
  run_and_settle(workers, 1);  // a second thread, idle: close() ends it
  release.set_value();
  workers.close();
  EXPECT_TRUE(finished) << "close() returned before the running job ended";
  EXPECT_EQ(workers.threads(), 0u);
  auto held = std::make_shared<int>(1);
  bool ran = false;
  EXPECT_FALSE(workers.run([held, &ran] { ran = true; }));
  EXPECT_FALSE(ran);
  EXPECT_EQ(held.use_count(), 1) << "a refused job is dropped, not kept";
  workers.close();  // idempotent
}

TEST(Workers, JobsFromManyThreadsAllRunOnce) {
  constexpr int kSubmitters = 4, kEach = 500;
  std::atomic<int> ran{0};
  {
    Workers workers;
    std::vector<std::thread> submitters;
    for (int s = 0; s < kSubmitters; ++s)
      submitters.emplace_back([&] {
        for (int i = 0; i < kEach; ++i) ASSERT_TRUE(workers.run([&ran] { ran.fetch_add(1); }));
      });
    for (auto& t : submitters) t.join();
    ASSERT_TRUE(soon([&] { return ran.load() == kSubmitters * kEach; }));
  }  // the destructor closes and waits
  EXPECT_EQ(ran.load(), kSubmitters * kEach);
}

}  // namespace workers_test
