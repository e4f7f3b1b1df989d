// The capability requests of one sandbox call, run off the thread that reads
// the sandbox's frames (pool.h protocol; issue 12 item 3): one request at a
// time on a helper thread (a reused worker of the process, base/workers.h),
// the others queued in order, so that the reading
// thread sees an "abort" frame, the call's deadline and its cancellation while
// a request runs. Each request has its own CancelToken: an abort frame fires
// it (the fetch stops, capability/fetch.h FetchContext::cancelled) and sets the
// request aside to finish, so the next one starts at once: Capabilities::handle
// may thus run for an aborted request and the next one at the same time (the
// pool.h contract says "one at a time" for requests that are not aborted;
// invoke::HostCapabilities locks its store uses for the overlap);
// stop() fires every token when the call ends for any reason, then waits.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>

#include "taskyon/json/json.h"
#include "taskyon/sandbox/pool.h"

namespace taskyon::sandbox {

// Requests a call may have queued behind the running one; more are answered
// "too_large" at once.
inline constexpr std::size_t kMaxQueuedRequests = 64;
// Aborted requests still finishing (their transfer not yet stopped) while the
// next one runs; past it the next waits.
inline constexpr std::size_t kMaxAbortedRunning = 4;

class CapabilityRunner {
 public:
  // `capabilities` null: every request is answered "denied" at once.
  // `wake_fd`: an eventfd of the owner's (a sandbox's), open for longer than
  // the runner lives; a helper that has finished a request writes it, and
  // the owner, once it polls readable, drains it and calls collect(). It may
  // be woken for nothing (a cancel, an earlier call's late wake): collect()
  // then does nothing.
  CapabilityRunner(std::string_view revision, Capabilities* capabilities,
                   std::chrono::steady_clock::time_point deadline, int wake_fd);
  ~CapabilityRunner();  // stop()
  CapabilityRunner(const CapabilityRunner&) = delete;
  CapabilityRunner& operator=(const CapabilityRunner&) = delete;

  // A new request: started at once when none runs, else queued. Replies that
  // are due now (refusals) are appended to `out` as cap frames.
  void enqueue(std::uint64_t req, CapabilityOp op, json::Value args, std::string& out, std::size_t max_frame_bytes);

  // A request that names ended call `ended_call` (S2): queued like the others
  // (the store is used by one thread at a time), it only records the refusal
  // through Capabilities::refused_stale(`attribution`) and is answered "denied".
  void enqueue_stale(std::uint64_t req, CapabilityOp op, json::Value args, std::uint64_t ended_call,
                     std::string attribution, std::string& out, std::size_t max_frame_bytes);

  // The tool aborted request `req`: a running one is cancelled (its reply
  // follows through collect()), a queued one is dropped and answered
  // "cancelled"; an answered one is left alone.
  void abort(std::uint64_t req, std::string& out, std::size_t max_frame_bytes);

  // After `wake_fd` became readable: appends the finished request's reply to
  // `out` and starts the next queued one.
  void collect(std::string& out, std::size_t max_frame_bytes);

  // The call ended: cancels the running request and waits for it, drops the
  // queue. Idempotent.
  void stop();

 private:
  struct Job;
  void start_next(std::string& out, std::size_t max_frame_bytes);

  std::string revision_;
  Capabilities* capabilities_;
  std::chrono::steady_clock::time_point deadline_;
  int wake_fd_;  // the owner's eventfd, written by a helper when it is done
  std::shared_ptr<Job> running_;
  std::deque<std::shared_ptr<Job>> aborted_;  // cancelled, still finishing
  std::deque<std::shared_ptr<Job>> queued_;
};

}  // namespace taskyon::sandbox
