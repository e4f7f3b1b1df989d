// SIGTERM, SIGINT and SIGHUP while `call` or `run` hosts sandboxes (issue 18
// item 4, issue 12 item 10). The handler only writes the signal's number to a
// self-pipe (async-signal-safe); a watcher thread reads it and runs
// `on_signal` there: the commands fire the call's CancelToken and interrupt
// the pool (sandbox::Pool::interrupt), so the running call ends as cancelled,
// every sandbox is destroyed and recorded "interrupted", and the command
// stores what it has and returns exit_code(signal). A second signal while
// that runs ends tycli at once, by the signal's default action.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>

namespace tycli {

class Interruption {
 public:
  // Installs the handlers (the previous dispositions are kept) and starts the
  // watcher. `on_signal` runs on the watcher thread, once, with the signal.
  explicit Interruption(std::function<void(int)> on_signal);
  ~Interruption();  // restores the previous dispositions, stops the watcher
  Interruption(const Interruption&) = delete;
  Interruption& operator=(const Interruption&) = delete;

  int signal() const { return signal_.load(); }  // 0 until one arrived

  // 128 + the signal's number, the shells' convention: 129 SIGHUP, 130 SIGINT, 143 SIGTERM.
  static int exit_code(int signal) { return 128 + signal; }
  static std::string name(int signal);  // "SIGTERM"

 private:
  void watch();

  std::function<void(int)> on_signal_;
  std::atomic<int> signal_{0};
  int read_fd_ = -1;
  int stop_fd_ = -1;  // an eventfd: readable when the destructor wants the watcher gone
  std::thread watcher_;
};

}  // namespace tycli
