// One sandbox: a Node child running the host's harness with one tool
// revision's code, in a private empty working directory. The Pool owns
// sandboxes through shared_ptr; one caller at a time uses load/call/idle_check
// (the Pool's per-revision mutex), while kill() may come from any thread.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taskyon/base/error.h"
#include "taskyon/hardening/contain.h"
#include "taskyon/sandbox/memory.h"
#include "taskyon/sandbox/pool.h"
#include "taskyon/sandbox/process.h"
#include "taskyon/sandbox/protocol.h"

namespace taskyon::sandbox {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

// The Node executable as an absolute path: `configured` when it is a path
// (absolute, or relative to the host's cwd), else the first executable regular
// file of that name (`node` when empty) on the host's PATH; empty and relative
// PATH entries are skipped. Errc::runtime_missing, saying how to install Node.
Result<std::string> find_node(std::string_view configured);

// The first `dir/name` on the host's PATH (default /usr/local/bin:/usr/bin:/bin)
// that `accept` takes; empty and relative entries are skipped (never the cwd).
std::optional<std::string> find_on_path(std::string_view name, bool (*accept)(const std::string& path));

// The child's argv: node, its flags, `-e <harness>`, then the harness limits.
//   --max-old-space-size=<heap_limit_mb>  V8 heap cap, MiB
//   --experimental-permission             Node 20 permission model, no --allow-*:
//                                         no fs, child_process, worker, addons
//   --experimental-vm-modules             vm.SourceTextModule/SyntheticModule and import()
//                                         answered by an importModuleDynamically callback: the
//                                         guest's ES module loader (docs/modules.md). It adds
//                                         no authority: the modules it makes run in the same
//                                         context, under the same permission model and layers
//   --no-warnings                         keeps the permission model's warning off fd 2
//   --openssl-config=/dev/null            OpenSSL reads no host configuration (Landlock
//                                         grants /dev/null, not /etc/ssl)
std::vector<std::string> node_argv(const std::string& node, const RuntimeConfig& config);

// The hardening policy of every Node sandbox child (src/taskyon/hardening/
// contain.h): Landlock grants read+execute on the Node executable and its ELF
// interpreter, read on its shared libraries, /etc/ld.so.cache and /dev/null,
// nothing else. Prepared once per (executable path, layers), then shared;
// `layers` other than all on only for the benchmarks (RuntimeConfig::layers).
// Errc::runtime_missing when `node` is not a readable ELF executable.
Result<std::shared_ptr<const hardening::Policy>> node_policy(const std::string& node,
                                                             const hardening::Layers& layers = {});

// Off-heap room above the V8 heap cap: RLIMIT_DATA = heap_limit_mb + this, MiB.
// Node needs about 48 MiB of it to start; Buffers, ArrayBuffers and
// WebAssembly memories of a tool share the rest.
inline constexpr std::uint64_t kNodeOffHeapMb = 256;

// The child's resource limits: RLIMIT_DATA as above, RLIMIT_NOFILE 256.
hardening::rlimits::Limits node_limits(const RuntimeConfig& config);

class Sandbox {
 public:
  // Makes the private directory (workdir.h make_workdir, mode 0700) and
  // starts the child in it: `runtime` is the executable of config.runtime
  // (runtime.h locate_runtime), started as prepare_launch() says (Node: an
  // empty environment, node_policy; Deno: deno_env, deno_policy, its argv
  // checked). Errc::runtime_missing when `runtime` is not an ELF executable;
  // Errc::internal when the policy, directory, pipes or fork fail.
  static Result<std::shared_ptr<Sandbox>> start(Launcher& launcher, const std::string& runtime,
                                                const RuntimeConfig& config, std::string revision, Mode mode);

  ~Sandbox();  // kills and reaps the child, removes the directory

  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;

  struct Loaded {
    Status status = Status::ok;     // ok (ready), tool_error (load_error), timeout, crashed, protocol_error
    std::string error;              // unless ok
    std::vector<LogEntry> logs;     // the child's stderr while loading
    std::optional<Error> machinery; // the child failed before exec (ExecStep): not the tool's doing
    std::size_t call_sent = 0;      // bytes of `then` written (all of it, unless the pipe was full)
  };

  // Sends the encoded load frame (protocol::encode_load) and waits for the reply.
  // `then`, when not empty, is the first call's frame, written right behind
  // the load frame without waiting for "ready": the harness runs that call
  // once its code is loaded (never before; dropped if the load fails), so a
  // fresh sandbox's first call costs one round trip, not two (issue 19).
  // call() then sends the rest of it (Loaded::call_sent) and, since the
  // runtime's fd 2 cannot be split at "ready", its logs begin with what fd 2
  // held while the load was answered (a load's own output was dropped on
  // success before; it now goes with the call that loaded the code). A
  // "ready" before the whole load frame was written is a protocol error.
  // A cancelled token ends the wait: Status::cancelled, the child killed.
  Loaded load(std::string_view load_frame, Deadline deadline, const CancelToken& cancel, std::string_view then = {});

  // Sends the encoded call frame (protocol::encode_call with `id`; what load()
  // has not sent of it when it was pipelined) and collects
  // logs up to the terminal frame, answering capability requests through
  // `capabilities` (null: each is "denied") with this sandbox's revision as the
  // identity (M3). Fills status, value, error, logs and logs_truncated; on
  // timeout or cancellation the child is already killed.
  // Capability requests run through a CapabilityRunner (capability_runner.h)
  // while frames keep being read; a cap frame naming one of the last
  // kPastCalls calls of this sandbox is refused (S2) and handed to
  // capabilities->refused_stale with that call's `attribution`.
  // `on_log` sees each log entry as it is kept, `on_progress` each progress
  // frame (CallRequest::on_log / on_progress), on this thread.
  CallOutcome call(std::uint64_t id, std::string_view call_frame, Deadline deadline, Capabilities* capabilities,
                   const CancelToken& cancel, std::string_view attribution = {},
                   const std::function<void(const LogEntry&)>& on_log = {},
                   const std::function<void(double, double, std::string_view)>& on_progress = {});

  // Between calls: why this sandbox must not take another call ("crashed":
  // the child is gone or closed fd 1; "protocol_error": it wrote to fd 1
  // outside a call; "terminated"), or nullopt. Discards stderr written
  // between calls.
  std::optional<std::string> idle_check();

  // From any thread, never waits: SIGKILLs the child. The first reason sticks;
  // a call in progress ends as crashed, naming it.
  void kill(std::string_view reason);
  std::optional<std::string> killed_reason() const;

  pid_t pid() const { return child_->runtime_pid(); }  // the runtime's host pid (process.h)
  // The sandbox's RSS, bytes, as memory.h resident_bytes() reads it, through
  // /proc/PID/statm opened once at start (one pread per reading: the memory
  // budget reads it after every call): the runtime's, plus, with a PID
  // namespace, its init's (a fork of the host holding a copy-on-write
  // snapshot of its memory). The init's is read until the sandbox has loaded
  // its code, then kept: by then the init only waits for the runtime, and a
  // process that runs no code maps no new pages (reclaim can only lower it),
  // so the kept figure stays at or above the truth. Never below
  // footprint()'s PSS. Safe from any thread; nullopt when the runtime is gone.
  std::optional<std::uint64_t> resident_bytes() const;
  // The sandbox's PSS and USS, bytes (memory.h footprint()): the runtime's
  // plus its init's, so the memory budget counts every process a sandbox
  // keeps alive. Walks their mappings: for when resident_bytes() is over.
  std::optional<Footprint> footprint() const;
  // Waits up to `wait_ms` until no process of this sandbox shares this host's
  // pages; true once none does, false on timeout. Its init (PID namespace)
  // shares them until it runs taskyon-init (Child::wait_init_exec(); an init
  // that could not exec waits as a fork of the host); the runtime has exec'd
  // by the time start() returns. Safe from any thread.
  bool wait_host_pages_unshared(int wait_ms) const;
  const std::string& workdir() const { return workdir_; }
  const std::string& revision() const { return revision_; }
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }  // before the sandbox is shared
  // A pre-started sandbox (pool.h RuntimeConfig::prestart) takes its
  // revision here, right before its load frame; under the pool's lock.
  void bind(std::string revision, std::string name) {
    revision_ = std::move(revision);
    name_ = std::move(name);
  }
  Mode mode() const { return mode_; }

 private:
  Sandbox(std::unique_ptr<Child> child, std::string workdir, std::string revision, Mode mode,
          const RuntimeConfig& config);

  struct LogBook;
  enum class End { done, timeout, closed, violation, cancelled };
  struct Ended {
    End how;
    std::string message;         // violation: what was wrong
    std::size_t first_sent = 0;  // bytes of the exchange's first frame(s) written
  };
  template <typename OnLine, typename OnWake>
  Ended exchange(std::string_view first, Deadline deadline, const CancelToken& cancel, OnLine&& on_line,
                 LogBook& logs, OnWake&& on_wake);
  std::string closed_message(std::string_view during);

  std::unique_ptr<Child> child_;
  std::string workdir_;
  std::string revision_;
  std::string name_;
  Mode mode_;
  std::size_t max_frame_bytes_;
  std::size_t max_log_bytes_;
  protocol::LineReader reader_;
  std::unique_ptr<char[]> chunk_;  // one read from a pipe (kChunk bytes), reused by every call
  Fd statm_;                       // /proc/PID/statm of the runtime, -1 if it could not be opened
  Fd init_statm_;                  // /proc/PID/statm of its init (PID namespace only), else -1
  Fd wake_;  // eventfd: a cancel of the running call, a finished capability request (exchange())
  std::atomic<bool> loaded_{false};                   // a load frame was answered "ready"
  mutable std::atomic<std::uint64_t> init_rss_{0};    // the init's RSS once loaded_, bytes; 0: not read yet
  bool stderr_open_ = true;
  std::string carried_stderr_;  // fd 2 as read during a pipelined load, for that call's logs (load())
  std::uint64_t last_req_ = 0;  // the last capability request number seen (they count 1, 2, 3… per sandbox)
  static constexpr std::size_t kPastCalls = 64;
  std::deque<std::pair<std::uint64_t, std::string>> past_calls_;  // (call id, attribution), oldest first
  mutable std::mutex kill_mu_;
  std::optional<std::string> killed_reason_;
};

}  // namespace taskyon::sandbox
