#include "taskyon/sandbox/capability_runner.h"

#include <unistd.h>

#include <atomic>

#include <fmt/format.h>

#include "taskyon/base/workers.h"
#include "taskyon/sandbox/protocol.h"

namespace taskyon::sandbox {

struct CapabilityRunner::Job {
  std::uint64_t req = 0;
  CapabilityOp op = CapabilityOp::fetch;
  json::Value args;
  CancelToken cancel;     // this request's own: abort frame, or the call's end
  CapabilityReply reply;  // written by the helper before it wakes the owner
  bool stale = false;     // a request of ended call `stale_call`: refused_stale(), then "denied"
  std::uint64_t stale_call = 0;
  std::string stale_attribution;
  std::atomic<bool> done{false};      // the reply is written; set before the owner is woken
  std::atomic<bool> released{false};  // the helper no longer touches the runner (the owner woken)

  // Until the helper has let go of the runner: stop() and collect() may then
  // drop the job, and the runner go.
  void wait_released() const {
    while (!released.load(std::memory_order_acquire)) released.wait(false, std::memory_order_acquire);
  }
};

// The wake descriptor is the owner's (issue 19: an eventfd made and closed
// per call that made a request cost two system calls).
CapabilityRunner::CapabilityRunner(std::string_view revision, Capabilities* capabilities,
                                   std::chrono::steady_clock::time_point deadline, int wake_fd)
    : revision_(revision), capabilities_(capabilities), deadline_(deadline), wake_fd_(wake_fd) {}

CapabilityRunner::~CapabilityRunner() { stop(); }

void CapabilityRunner::enqueue(std::uint64_t req, CapabilityOp op, json::Value args, std::string& out,
                               std::size_t max_frame_bytes) {
  if (!capabilities_) {
    out += protocol::encode_cap_reply(
        req,
        CapabilityReply::failure("denied", fmt::format("this host grants no capabilities to this call ({} refused)",
                                                       capability_op_name(op))),
        max_frame_bytes);
    return;
  }
  if (queued_.size() >= kMaxQueuedRequests) {
    out += protocol::encode_cap_reply(
        req,
        CapabilityReply::failure("too_large", fmt::format("more than {} capability requests are waiting; wait for "
                                                          "some to finish",
                                                          kMaxQueuedRequests)),
        max_frame_bytes);
    return;
  }
  auto job = std::make_shared<Job>();
  job->req = req;
  job->op = op;
  job->args = std::move(args);
  queued_.push_back(std::move(job));
  start_next(out, max_frame_bytes);
}

void CapabilityRunner::enqueue_stale(std::uint64_t req, CapabilityOp op, json::Value args, std::uint64_t ended_call,
                                     std::string attribution, std::string& out, std::size_t max_frame_bytes) {
  const auto reply = CapabilityReply::failure(
      "denied", fmt::format("{} refused: this context belongs to call {}, which has ended (each call gets its own "
                            "context)",
                            capability_op_name(op), ended_call));
  if (!capabilities_ || queued_.size() >= kMaxQueuedRequests) {
    out += protocol::encode_cap_reply(req, reply, max_frame_bytes);
    return;
  }
  auto job = std::make_shared<Job>();
  job->req = req;
  job->op = op;
  job->args = std::move(args);
  job->stale = true;
  job->stale_call = ended_call;
  job->stale_attribution = std::move(attribution);
  job->reply = reply;
  queued_.push_back(std::move(job));
  start_next(out, max_frame_bytes);
}

void CapabilityRunner::start_next(std::string& out, std::size_t max_frame_bytes) {
  if (running_ || queued_.empty() || aborted_.size() >= kMaxAbortedRunning) return;
  running_ = std::move(queued_.front());
  queued_.pop_front();
  // On a reused thread of the process (base/workers.h; issue 19: a thread
  // started per request cost what the request's own work did). The helper
  // holds the job, so its last touch (the wake of a waiter) never lands on a
  // job that stop() or collect() has dropped.
  std::shared_ptr<Job> job = running_;
  const bool started = shared_workers().run([this, job] {
    if (job->stale) {
      capabilities_->refused_stale(revision_, job->op, job->args, job->stale_attribution);
    } else {
      job->reply = capabilities_->handle(revision_, job->op, job->args, job->cancel, deadline_);
    }
    job->done.store(true, std::memory_order_release);
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof one);
    job->released.store(true, std::memory_order_release);
    job->released.notify_all();
  });
  if (started) return;
  running_.reset();
  out += protocol::encode_cap_reply(job->req, CapabilityReply::failure("denied", "the host cannot serve requests now"),
                                    max_frame_bytes);
  start_next(out, max_frame_bytes);
}

void CapabilityRunner::abort(std::uint64_t req, std::string& out, std::size_t max_frame_bytes) {
  if (running_ && running_->req == req) {
    // Cancelled, and set aside: it ends when the transfer notices (libcurl
    // checks the flag about once a second), while the next request starts now.
    running_->cancel.cancel();
    aborted_.push_back(std::move(running_));
    start_next(out, max_frame_bytes);
    return;
  }
  for (auto it = queued_.begin(); it != queued_.end(); ++it) {
    if ((*it)->req == req) {
      queued_.erase(it);
      out += protocol::encode_cap_reply(
          req, CapabilityReply::failure("cancelled", "the request was aborted by its signal before it started"),
          max_frame_bytes);
      return;
    }
  }
}

void CapabilityRunner::collect(std::string& out, std::size_t max_frame_bytes) {
  for (auto it = aborted_.begin(); it != aborted_.end();) {
    if (!(*it)->done.load(std::memory_order_acquire)) {
      ++it;
      continue;
    }
    (*it)->wait_released();
    out += protocol::encode_cap_reply((*it)->req, (*it)->reply, max_frame_bytes);  // dropped by the harness
    it = aborted_.erase(it);
  }
  if (running_ && running_->done.load(std::memory_order_acquire)) {
    running_->wait_released();
    out += protocol::encode_cap_reply(running_->req, running_->reply, max_frame_bytes);
    running_.reset();
  }
  start_next(out, max_frame_bytes);
}

void CapabilityRunner::stop() {
  queued_.clear();
  if (running_) aborted_.push_back(std::move(running_));
  for (auto& job : aborted_) job->cancel.cancel();
  for (auto& job : aborted_) job->wait_released();
  aborted_.clear();  // their wakes stay in the owner's eventfd: a later poll drains them
}

}  // namespace taskyon::sandbox
