// Live output of running calls on stderr (issue 16 item 3): `tycli call` and
// `tycli run` print each console line and context.progress of a sandboxed
// tool as its frame arrives (sandbox::CallRequest::on_log / on_progress), and
// one line once a call has used 80 % of its --timeout.
//
// Human lines, tool text escaped for the terminal (taskyon/base/escape.h):
//   NAME: [LEVEL] TEXT
//   NAME: progress DONE/TOTAL MESSAGE        (DONE alone when no total was given)
//   tycli: NAME has run 8000 ms of its 10000 ms timeout; give it more with --timeout MS
// With --json, one JSON object per line instead (strings as JSON, UTF-8):
//   {"type":"log","tool":NAME,"level":LEVEL,"text":TEXT}
//   {"type":"progress","tool":NAME,"done":NUMBER,"total":NUMBER|null,"message":STRING}
//   {"type":"timeout_near","tool":NAME,"elapsedMs":N,"timeoutMs":N,"hint":"--timeout"}
// What is streamed is bounded by the sandbox: logs by RuntimeConfig::max_log_bytes
// per call (streamed bytes count against it), progress by kMaxProgressFrames
// and kMaxProgressMessageBytes. The stored record is unchanged (logs kept in
// the result as before). Lines come from the calling thread (logs, progress)
// and from one watch thread (the timeout line): one mutex orders them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "taskyon/invoke/invoke.h"
#include "taskyon/tasks/task.h"

namespace tycli {

class LiveOutput {
 public:
  // `json`: JSON lines (--json); `timeout`: the per-call timeout (--timeout).
  LiveOutput(bool json, std::chrono::milliseconds timeout);
  ~LiveOutput();  // ends a watch still running
  LiveOutput(const LiveOutput&) = delete;
  LiveOutput& operator=(const LiveOutput&) = delete;

  // Points options.on_log / on_progress at this printer (for every call run
  // with these options).
  void attach(taskyon::invoke::Options& options);

  // A call of `tool` (its name, as the prefix) starts now: starts the timeout
  // watch and resets streamed(). end() stops the watch.
  void begin(std::string_view tool);
  void end();

  // Log entries of the current call printed live: the first streamed() of
  // CallOutcome::logs (streamed entries are a prefix of them; the rest were
  // not streamed: a failed load's, a trusted-native or MCP tool's).
  std::size_t streamed() const { return streamed_; }

  // The name of a function-call task's tool, for begin(); `fallback` if none.
  static std::string tool_name(const taskyon::tasks::Task& call, std::string_view fallback);

  // Prints one line (a '\n' is added) under the same lock as the live lines.
  void line(std::string_view text);

 private:
  void log(const taskyon::sandbox::LogEntry& entry);
  void progress(double done, double total, std::string_view message);
  void watch(std::stop_token stop, std::chrono::steady_clock::time_point started);

  bool json_;
  std::chrono::milliseconds timeout_;
  std::mutex mu_;  // stderr, tool_
  std::string tool_;
  std::size_t streamed_ = 0;
  std::condition_variable_any wake_;
  std::jthread watcher_;
};

}  // namespace tycli
