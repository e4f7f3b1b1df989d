// Reused threads for short units of work: an MCP tools/call, a sandbox
// call's capability request, a fetch's name resolution (issue 19: on this
// machine a thread started per unit cost a clone, a stack whose pages fault
// in again, and the signal-mask calls around it; a reused thread costs a
// wake-up). A job runs at once: on the thread that went idle last (its stack
// and caches are the warmest), or on a new thread when none is idle. No job
// ever waits behind another, so a job may block (a stuck resolver, a long
// fetch) without holding up the next. A thread ends once it has been idle for
// `idle_limit`.
//
// A job runs on a thread that earlier jobs used: what a job changes on its
// thread stays (a blocked SIGPIPE, base/sigpipe.h, which is why programs the
// host starts get their own mask, base/spawn.h; a store connection, which
// is the point). Jobs must not throw; one that does ends the process
// (std::terminate), as it would on a thread of its own.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace taskyon {

class Workers {
 public:
  static constexpr std::chrono::milliseconds kDefaultIdleLimit{10'000};

  explicit Workers(std::chrono::milliseconds idle_limit = kDefaultIdleLimit);
  ~Workers();  // close()
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  // Runs `job` on an idle thread or a new one. False, and `job` is not run
  // (it is destroyed before run returns), when the set is closed or no
  // thread could be started.
  bool run(std::function<void()> job);

  // Refuses new jobs, ends idle threads, and waits until every thread has
  // finished its job and ended. Not from a job of this set. Idempotent.
  void close();

  std::size_t idle() const;     // threads waiting for a job (for tests)
  std::size_t threads() const;  // threads not yet ended (for tests)

 private:
  struct Slot;
  void loop(std::function<void()> job);

  const std::chrono::milliseconds idle_limit_;
  mutable std::mutex mu_;
  std::condition_variable ended_;
  std::vector<std::shared_ptr<Slot>> idle_;  // guarded by mu_; the last went idle last
  std::size_t threads_ = 0;                  // guarded by mu_
  bool closed_ = false;                      // guarded by mu_
};

// The process's set for work that is not a connection's own (capability
// requests, name resolutions). Never closed: a thread stuck in a job (a
// resolver that does not return) does not hold up the process's exit.
Workers& shared_workers();

}  // namespace taskyon
