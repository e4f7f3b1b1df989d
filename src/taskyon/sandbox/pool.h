// Sandboxes that run sandboxed-code tools (DESIGN §5), and the pool that keeps
// them. A sandbox is one child process running a JS runtime (Node) with a
// host-owned harness (src/guest/node/bootstrap.js, compiled into the host) that
// loads one tool revision's code. The pool retains one sandbox per revision
// (S1), serializes the calls to each (S2), and destroys a sandbox when a call
// times out or fails at the runtime boundary (S4), on terminate() (S5), and
// after a disposable call (S6). Every destruction is recorded with its reason.
//
// Host <-> sandbox protocol (newline-delimited JSON on the child's stdin and
// stdout, each frame at most RuntimeConfig::max_frame_bytes):
//   host  -> child  {"type":"load","code":STRING}
//   child -> host   {"type":"ready"} | {"type":"load_error","message":STRING}
//   host  -> child  {"type":"call","id":N,"args":VALUE}   (a fresh sandbox's first one is written
//                   right behind the load frame; the harness runs it once loaded, never before)
//   child -> host   {"type":"log","id":N,"level":L,"text":STRING}   (0..n)
//   child -> host   {"type":"progress","id":N,"progress":NUMBER,"total":NUMBER|null,"message":STRING}
//                   (0..n; context.progress, handed to CallRequest::on_progress, not kept)
//   child -> host   {"type":"cap","id":N,"req":R,"op":OP,"args":OBJECT}      (0..n, see below)
//   child -> host   {"type":"abort","id":N,"req":R}       (the tool's AbortSignal fired for R)
//   host  -> child  {"type":"cap_result","req":R,"value":VALUE}
//                 | {"type":"cap_error","req":R,"code":CODE,"message":STRING}
//   child -> host   {"type":"result","id":N,"value":VALUE}
//                 | {"type":"error","id":N,"name":STRING,"message":STRING}
// Capability requests (DESIGN §6) are the only doors out: OP is one of
// capability_op_name(); R counts 1, 2, 3… over the sandbox's life. The host
// answers each exactly once, one at a time in order, and keeps reading frames
// while one runs, so an "abort" frame cancels the running request at once (or
// a queued one before it starts); the call's deadline bounds them all. A cap
// frame naming an earlier call of this sandbox (a saved context, S2) is
// refused ("denied"), audited under that earlier call through
// Capabilities::refused_stale, never under the current one. Any other frame,
// op, field, id, a value json::canonicalize refuses, or a malformed/oversized
// line is a runtime-boundary failure (M1): the sandbox is destroyed. The
// revision that owns a sandbox is bound to its pipes by the host; nothing a
// frame says about identity is read (M3).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taskyon/base/error.h"
#include "taskyon/hardening/contain.h"
#include "taskyon/json/json.h"

namespace taskyon::sandbox {

// The JavaScript runtime of the sandbox children (src/taskyon/sandbox/runtime.h):
// Node by default (N1), Deno only when selected (N2, N4).
enum class JsRuntime { node, deno };

inline constexpr std::uint64_t kDefaultMemoryBudgetBytes = 1ull << 30;  // RuntimeConfig::memory_budget_bytes
// Progress frames the host hands on per call, and the bytes of one message
// (cut at a UTF-8 boundary); later frames are dropped. The host enforces it,
// whatever the harness does (the guest core drops past the same count).
inline constexpr std::size_t kMaxProgressFrames = 1000;
inline constexpr std::size_t kMaxProgressMessageBytes = 4096;
inline constexpr std::uint64_t kSandboxStartBytes = 48ull << 20;        // room a fresh sandbox is given, bytes

struct RuntimeConfig {
  std::string node_path;                      // empty: the first `node` on PATH
  std::size_t max_frame_bytes = 8u << 20;     // one protocol line, bytes
  std::size_t max_log_bytes = 1u << 20;       // logs kept per call (console + stderr), bytes
  int heap_limit_mb = 256;                    // V8 --max-old-space-size, MiB
  std::size_t max_live = 16;                  // retained sandboxes alive at once; past it the least
                                              // recently used idle one is destroyed ("evicted")
  // The pool's memory budget: the sum of every live sandbox's memory (PSS,
  // /proc/PID/smaps_rollup), bytes; 0: none. Before a fresh sandbox starts
  // and after every call, the least recently used idle retained sandboxes
  // are destroyed ("memory_budget") until the sum (plus kSandboxStartBytes
  // for the one about to start) fits. Busy sandboxes are never destroyed for
  // it, so a running call may exceed it (each child is bounded by RLIMIT_DATA).
  std::uint64_t memory_budget_bytes = kDefaultMemoryBudgetBytes;
  // How long the budget counts an idle sandbox's last RSS reading
  // (/proc/PID/statm) instead of reading it again: after a call the pool
  // reads the sandbox it used and the ones read longer ago than this, not
  // every live one (issue 19). 0: every live one after every call.
  std::chrono::milliseconds memory_reading_max_age{100};
  JsRuntime runtime = JsRuntime::node;        // which runtime every sandbox of the pool runs
  std::string deno_path;                      // empty: `deno` on PATH, else the project-local install
                                              // (runtime.h find_deno)
  // Pre-started sandboxes (issue 19), for a long-lived host: how many
  // started, not yet loaded sandboxes the pool keeps ready, so the first call
  // of a revision skips the runtime's start; 0 (the default, the one-shot
  // CLI): none. A pool thread starts them at creation and after one is taken,
  // each exactly as a fresh sandbox is started (same hardening, environment,
  // limits, own directory) and only when the memory budget has room for
  // kSandboxStartBytes more. One takes its revision with its load frame, when
  // a retained call needs a fresh sandbox (M3: the host binds it). They count
  // in the memory budget (destroyed first, "memory_budget"), not in max_live;
  // listed by sandboxes() with an empty revision; destroyed with a recorded
  // reason ("shutdown", interrupt()'s, "crashed" when one died waiting).
  std::size_t prestart = 0;
  // The kernel layers every sandbox of the pool gets (hardening/contain.h).
  // tycli and the host never change it: all on, as this machine supports.
  // Only the benchmarks switch layers off, to measure what one costs a warm
  // call in the same run (bench/bench_containment.cc).
  hardening::Layers layers = {};
};

// What a sandbox runs. The revision is the identity bound to the channel.
struct ToolCode {
  std::string revision;  // "sha256:…" of the tool definition
  std::string code;      // a JS function expression, called as f(args, context)
  std::string name = {};  // the tool's name, for retire_superseded(); may be empty
  // The modules its code may require() (issue 17), handed over in the load
  // frame: {SPECIFIER: {"main": PATH, "files": {PATH: TEXT}}}; null: none.
  std::shared_ptr<const json::Value> modules = {};
};

// The typed capability requests tool code can make (DESIGN §6, issue 5).
enum class CapabilityOp {
  fetch,                   // args {"url","method","headers":[[n,v]…],"body":BASE64|null}
  create_subtasks_result,  // args {"drafts":[…]}
  resolve_invocation,      // args {"name":STRING}
  storage_get,             // args {"key":STRING}
  storage_set,             // args {"key":STRING,"value":JSON}
  storage_delete,          // args {"key":STRING}
  storage_list,            // args {"prefix":STRING}
};
// Wire spelling: "fetch", "createSubtasksResult", "resolveInvocation",
// "storage.get", "storage.set", "storage.delete", "storage.list".
std::string_view capability_op_name(CapabilityOp op);
std::optional<CapabilityOp> capability_op(std::string_view name);

// The answer to one capability request: a value, or an error with a stable
// code the tool sees as CapabilityError.code: "denied", "policy_blocked",
// "timeout", "too_large", "cancelled", "network", "invalid_request" (M13).
struct CapabilityReply {
  json::Value value;                // when ok()
  std::optional<std::string> code;  // set: an error
  std::string message;              // the error, for people

  bool ok() const { return !code.has_value(); }
  static CapabilityReply success(json::Value value) { return {std::move(value), std::nullopt, {}}; }
  static CapabilityReply failure(std::string code, std::string message) {
    return {json::Value(), std::move(code), std::move(message)};
  }
};

// An abort signal for one call, safe to fire from any thread, at any time
// (S5). Copies share one state. Once cancelled it stays cancelled.
class CancelToken {
  struct State;

 public:
  CancelToken();
  void cancel() const;
  bool cancelled() const;
  const std::atomic<bool>& flag() const;  // for code that polls (a fetch in progress)
  // Readable once cancelled (an eventfd, made by the first call: a token never
  // waited on holds no descriptor); -1 if none could be made.
  int fd() const;

  // While a Watch lives, cancel() also wakes `fd`: an eventfd of the
  // watcher's own, which it polls and drains and keeps open until the Watch
  // is gone (a sandbox's, for call after call: issue 19, no descriptor made
  // and closed per call). Look at cancelled() after making the Watch: a
  // cancel before it wakes nothing. One Watch per token at a time; a second
  // is not registered() and wakes nothing (poll fd() instead).
  class Watch {
   public:
    Watch(const CancelToken& token, int fd);
    ~Watch();
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;
    bool registered() const { return registered_; }

   private:
    std::shared_ptr<State> state_;
    bool registered_ = false;
  };

 private:
  std::shared_ptr<State> state_;
};

// The capability context of one call (S2: every call has its own). handle()
// runs on a helper thread of the pool while the calling thread keeps reading
// the sandbox's frames, one request at a time (never two at once); it must
// respect `deadline` (the call's) and `cancel` (fired when the tool aborts
// this request, or the call ends, times out or is cancelled). `revision` is
// the revision bound to the sandbox's channel by the host (M3), never anything
// the tool said.
class Capabilities {
 public:
  virtual ~Capabilities() = default;
  virtual CapabilityReply handle(std::string_view revision, CapabilityOp op, const json::Value& args,
                                 const CancelToken& cancel, std::chrono::steady_clock::time_point deadline) = 0;
  // A request that names an earlier, ended call of the same sandbox arrived
  // during this call: the pool refused it (S2). This records the refusal,
  // attributed to that ended call (`ended`: its CallRequest::attribution),
  // never to this one. Runs where handle() runs, in turn with it; must not act on `args`.
  virtual void refused_stale(std::string_view revision, CapabilityOp op, const json::Value& args,
                             std::string_view ended) {
    (void)revision, (void)op, (void)args, (void)ended;
  }
};

enum class Mode {
  retained,    // reuse (or start and keep) the revision's sandbox
  disposable,  // a fresh sandbox for this call alone, destroyed after it;
               // a retained sandbox of the same revision is left untouched
};

struct LogEntry {
  std::string level;  // "log", "info", "warn", "error", "debug", or "stderr"
  std::string text;
};

struct CallRequest {
  ToolCode tool;
  json::Value args = json::Value::object();
  std::chrono::milliseconds timeout{10000};  // wall clock, from the call's start
  Mode mode = Mode::retained;
  Capabilities* capabilities = nullptr;  // borrowed for the call; null: every request is "denied"
  CancelToken cancel;                    // fire it to abort the call: the sandbox is destroyed
  std::string attribution = {};          // who this call is (its task id), handed to refused_stale()
                                         // when a request of it arrives during a later call
  // The session the retained sandbox belongs to (H3): retained sandboxes are
  // keyed by (revision, session); empty (the one-shot CLI) is a session too.
  std::string session = {};
  // Called on the calling thread for each log frame (and stderr line) as it
  // arrives, before call() returns; the entry is also kept in CallOutcome::logs.
  // Exactly the kept entries are handed on, in order: streamed text counts
  // against max_log_bytes (UTF-8 bytes per call; the entry that crosses it is
  // cut at a UTF-8 boundary, later ones are dropped and logs_truncated set),
  // so a chatty tool, even one writing frames to its fds itself, costs the
  // caller at most that much. A stderr line is handed on at its '\n' (or at
  // the call's end). Not called for a load that fails (its logs are in the outcome).
  std::function<void(const LogEntry&)> on_log = {};
  // Called for each "progress" frame (context.progress(value, total?, message?))
  // as it arrives: value, total (NaN when not given), message; at most
  // kMaxProgressFrames per call, messages at most kMaxProgressMessageBytes.
  std::function<void(double, double, std::string_view)> on_progress = {};
  // For a caller with work of its own after the call (the long-lived host
  // stores the record and writes the reply): a spare (RuntimeConfig::prestart)
  // this call takes is replaced only when the caller calls Pool::refill(), so
  // starting the next spare, a fork of this process, does not slow that work.
  // false: replaced as soon as the call ends.
  bool refill_later = false;
};

// How a call ended. Only `ok` carries a value; the others carry a message.
enum class Status {
  ok,              // the tool returned; `value` holds its result (undefined -> null)
  tool_error,      // the tool threw or rejected, or its code failed to load
  timeout,         // the call ran past its timeout; the sandbox was killed
  crashed,         // the child exited or closed its pipes mid-call
  protocol_error,  // the child sent a malformed, oversized or unexpected frame
  cancelled,       // the caller aborted the call (CancelToken); the sandbox was killed
};

// Stable spelling: "ok", "tool_error", "timeout", "crashed", "protocol_error", "cancelled".
std::string_view status_name(Status status);

struct CallOutcome {
  Status status = Status::ok;
  json::Value value;                     // Status::ok only
  std::string error;                     // otherwise: what happened, for people
  std::vector<LogEntry> logs;            // captured console output and stderr
  bool logs_truncated = false;           // more than max_log_bytes were produced
  bool fresh_sandbox = false;            // a new sandbox was started for this call
  std::optional<std::string> destroyed;  // set when the sandbox was destroyed after the call: reason
  std::chrono::milliseconds duration{0};
};

// A live sandbox, for inspection (tests, diagnostics).
struct SandboxInfo {
  std::string revision;
  std::string name;     // the tool's name as the caller gave it
  Mode mode = Mode::retained;
  int pid = 0;          // the child's process id (also its process group id)
  std::string workdir;  // its private working directory, removed when it is destroyed
  std::string session = {};  // the session of a retained sandbox (CallRequest::session)
};

struct Destruction {
  std::string revision;
  std::string reason;  // "timeout", "crashed", "protocol_error", "load_error", "terminated", "disposable",
                       // "evicted", "memory_budget", "shutdown", "cancelled", "superseded", "interrupted"
  std::chrono::system_clock::time_point when;
  std::string name;    // the tool's name, when known
  int pid = 0;         // the child's process id
  std::string session = {};  // the session of a retained sandbox (CallRequest::session)
};

class Pool {
 public:
  explicit Pool(RuntimeConfig config = {});
  ~Pool();  // stops starting pre-started sandboxes, then destroys every sandbox:
            // SIGKILL to its process group, then reaped; no call may be
            // running on another thread
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  // Runs one call. A tool failure, timeout or boundary failure is an outcome,
  // not an Error; Error is for broken machinery only: Errc::runtime_missing
  // (no node), Errc::internal (fork/pipe failed) — and for a request no
  // sandbox can take: Errc::bad_usage (code not valid UTF-8 or larger than one
  // frame), Errc::invalid_arguments (args likewise); no sandbox is touched then.
  // The timeout covers starting and loading a fresh sandbox too. Safe from
  // several threads; calls to one revision's retained sandbox run one at a time.
  // A call waiting for that sandbox keeps its own timeout and cancellation: it
  // ends as timeout or cancelled while still queued, leaving the sandbox and
  // the call ahead of it alone (fresh_sandbox false, destroyed unset).
  Result<CallOutcome> call(const CallRequest& request);

  // Destroys the retained sandbox of `revision`, if any (S5). Never waits on the
  // child: it is SIGKILLed at once; a call running in it ends as Status::crashed
  // with `destroyed` set to `reason`.
  void terminate(std::string_view revision, std::string_view reason = "terminated");

  // A session ended (H3): destroys, at once, every retained sandbox of
  // `session`, each recorded as `reason`; a call running in one ends as
  // Status::crashed with `destroyed` = reason (cancel its token first to have
  // it end as cancelled).
  void close_session(std::string_view session, std::string_view reason = "session_closed");

  // A new revision was activated under `name` (S3): destroys, at once, every
  // retained sandbox of that name whose revision is not `active`, recorded as
  // "superseded". A pinned call to an older revision later gets a fresh one.
  void retire_superseded(std::string_view name, std::string_view active);

  // Starts replacing the spares calls took (CallRequest::refill_later), on the
  // pool's own thread; returns at once. Nothing happens without RuntimeConfig::prestart.
  void refill();

  // Ends the pool's work for good (the host got SIGTERM/SIGINT/SIGHUP): every
  // live sandbox, retained or disposable, is SIGKILLed at once and recorded
  // as `reason`; a call running in one ends as Status::cancelled with
  // `destroyed` = reason, and every later call ends as Status::cancelled
  // without starting a sandbox. From any thread; never waits on a child (the
  // caller's thread reaps and removes the directories as calls end).
  // `then`, if given, runs once the pool is marked interrupted and before any
  // kill (tycli cancels its call token there): a call that ends meanwhile is
  // recorded as `reason` too, never as "cancelled".
  void interrupt(std::string_view reason = "interrupted", const std::function<void()>& then = {});
  bool interrupted() const;

  // The configuration every sandbox of the pool is started with (its runtime, limits).
  const RuntimeConfig& config() const;

  // Called for every destruction, as it is recorded, under the pool's lock:
  // it must be quick, must not call back into the Pool, and must stay valid
  // until the Pool is destroyed (its destructor reports "shutdown" ones).
  void on_destruction(std::function<void(const Destruction&)> observer);

  // Revisions with a live retained sandbox (one entry per (revision, session)).
  std::vector<std::string> live() const;

  // Every live sandbox, retained ones, disposable ones in use, and
  // pre-started ones (RuntimeConfig::prestart: empty revision and name).
  std::vector<SandboxInfo> sandboxes() const;

  // Every destruction so far, oldest first.
  std::vector<Destruction> destructions() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace taskyon::sandbox
