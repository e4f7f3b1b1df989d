#include "taskyon/base/workers.h"

#include <algorithm>
#include <system_error>
#include <thread>
#include <utility>

namespace taskyon {

// An idle thread's place: run() hands it a job here and wakes it. Shared, so
// that run() may wake it after letting go of the lock even if the thread has
// already found the job and moved on.
struct Workers::Slot {
  std::condition_variable cv;
  std::function<void()> job;  // guarded by Workers::mu_
};

Workers::Workers(std::chrono::milliseconds idle_limit) : idle_limit_(idle_limit) {}

Workers::~Workers() { close(); }

bool Workers::run(std::function<void()> job) {
  std::shared_ptr<Slot> slot;
  {
    std::lock_guard lock(mu_);
    if (closed_) return false;
    if (idle_.empty()) {
      try {
        std::thread([this, job = std::move(job)]() mutable { loop(std::move(job)); }).detach();
      } catch (const std::system_error&) {
        return false;
      }
      ++threads_;  // before the thread can look: it takes mu_ only after its first job
      return true;
    }
    slot = std::move(idle_.back());
    idle_.pop_back();
    slot->job = std::move(job);
  }
  slot->cv.notify_one();
  return true;
}

void Workers::loop(std::function<void()> job) {
  const auto me = std::make_shared<Slot>();
  std::unique_lock lock(mu_, std::defer_lock);
  for (;;) {
    job();
    job = nullptr;  // what it holds is let go now, not when the next job comes
    lock.lock();
    if (closed_) break;
    idle_.push_back(me);
    me->cv.wait_for(lock, idle_limit_, [&] { return me->job != nullptr || closed_; });
    if (!me->job) {  // idle too long, or closed: run() can no longer pick this thread
      std::erase(idle_, me);
      break;
    }
    job = std::exchange(me->job, nullptr);
    lock.unlock();
  }
  --threads_;
  ended_.notify_all();  // under the lock: close() may return, and the set go, once it is let go
}

void Workers::close() {
  std::unique_lock lock(mu_);
  closed_ = true;
  for (const auto& slot : idle_) slot->cv.notify_one();
  ended_.wait(lock, [&] { return threads_ == 0; });
}

std::size_t Workers::idle() const {
  std::lock_guard lock(mu_);
  return idle_.size();
}

std::size_t Workers::threads() const {
  std::lock_guard lock(mu_);
  return threads_;
}

Workers& shared_workers() {
  static Workers* const workers = new Workers();  // never destroyed: see the header
  return *workers;
}

}  // namespace taskyon
