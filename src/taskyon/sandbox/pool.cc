#include "taskyon/sandbox/pool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "taskyon/sandbox/memory.h"
#include "taskyon/sandbox/process.h"
#include "taskyon/sandbox/protocol.h"
#include "taskyon/sandbox/sandbox.h"
#include "taskyon/sandbox/runtime.h"

namespace taskyon::sandbox {

std::string_view status_name(Status status) {
  switch (status) {
    case Status::ok: return "ok";
    case Status::tool_error: return "tool_error";
    case Status::timeout: return "timeout";
    case Status::crashed: return "crashed";
    case Status::protocol_error: return "protocol_error";
    case Status::cancelled: return "cancelled";
  }
  return "protocol_error";
}

namespace {

// One revision's retained sandbox and the mutex that serializes its calls (S2).
struct Slot {
  std::string revision;              // what the slot is keyed by (H3): revision and session
  std::string session;
  std::timed_mutex call_mu;          // held for a whole call, start and load included; waited for
                                     // with the call's deadline and cancellation (call_retained)
  std::shared_ptr<Sandbox> sandbox;  // guarded by Pool::Impl::mu; null when none is live
  std::uint64_t last_used = 0;       // guarded by Pool::Impl::mu; larger is more recent
  std::string code;                  // guarded by call_mu: the code `sandbox` was loaded with
};

// How often a call queued behind another on the same slot looks at its
// cancel token, and what an outcome that never got the slot says.
constexpr std::chrono::milliseconds kQueueSlice{10};
constexpr std::string_view kQueuedNote =
    "while it waited for its sandbox, busy with an earlier call of the same session (one call at a time per "
    "revision and session, S2)";

// The key of a (revision, session) slot; '\n' never occurs in a revision id.
std::string slot_key(std::string_view revision, std::string_view session) {
  std::string key(revision);
  key += '\n';
  key += session;
  return key;
}

// Why a sandbox is destroyed after a call that ended with `status`; empty: it is not.
std::string failure_reason(Status status) {
  switch (status) {
    case Status::timeout: return "timeout";
    case Status::crashed: return "crashed";
    case Status::protocol_error: return "protocol_error";
    case Status::cancelled: return "cancelled";
    default: return {};
  }
}

}  // namespace

struct Pool::Impl {
  explicit Impl(RuntimeConfig c) : config(std::move(c)) {}
  ~Impl() { stop_filler(); }

  const RuntimeConfig config;
  Launcher launcher;  // declared first, so it outlives every sandbox below
  mutable std::mutex mu;
  std::string node;  // resolved Node path, empty until found; guarded by mu
  std::map<std::string, std::shared_ptr<Slot>, std::less<>> slots;  // guarded by mu
  std::set<std::shared_ptr<Sandbox>> disposables;                   // guarded by mu
  std::vector<Destruction> destructions;                            // guarded by mu
  std::atomic<std::uint64_t> next_call_id{1};
  std::uint64_t use_clock = 0;  // guarded by mu
  std::function<void(const Destruction&)> observer;  // guarded by mu
  std::optional<std::string> interrupted;            // guarded by mu: interrupt()'s reason once called
  std::atomic<bool> interrupted_flag{false};
  // Pre-started sandboxes (RuntimeConfig::prestart): hardened, started, no
  // revision and no code yet; the filler thread keeps `prestart` of them.
  std::deque<std::shared_ptr<Sandbox>> spares;  // guarded by mu
  std::condition_variable filler_cv;            // with mu: a spare was taken, or the pool ends
  bool stopping = false;                        // guarded by mu: the pool is being destroyed
  std::thread filler;
  // enforce_budget's RSS readings (resident()), by sandbox; the weak_ptr
  // tells a reading of a sandbox that is gone from one of a new sandbox at
  // the same address.
  struct RssReading {
    std::weak_ptr<Sandbox> sandbox;
    std::uint64_t bytes = 0;
    Clock::time_point at;
  };
  std::mutex readings_mu;
  std::map<const Sandbox*, RssReading> readings;  // guarded by readings_mu

  void start_filler() {
    if (config.prestart == 0) return;
    filler = std::thread([this] { fill(); });
  }

  void stop_filler() {
    {
      std::lock_guard lock(mu);
      stopping = true;
    }
    filler_cv.notify_all();
    if (filler.joinable()) filler.join();
  }

  // The filler thread: starts spares until there are `prestart`, then waits
  // for one to be taken. A spare is started only when the memory budget has
  // room for it (kSandboxStartBytes); a failure to start waits for the next
  // take (or 1 s), never spins.
  void fill() {
    std::unique_lock lock(mu);
    while (!stopping) {
      if (interrupted || spares.size() >= config.prestart) {
        filler_cv.wait(lock);
        continue;
      }
      lock.unlock();
      std::shared_ptr<Sandbox> spare;
      auto exe = node_path();
      if (exe && budget_has_room(kSandboxStartBytes)) {
        auto started = Sandbox::start(launcher, *exe, config, std::string(), Mode::retained);
        if (started) spare = std::move(*started);
      }
      if (spare) settle_after_fork(*spare);
      lock.lock();
      if (!spare) {
        filler_cv.wait_for(lock, std::chrono::seconds(1));
        continue;
      }
      if (stopping || interrupted) {
        const std::string reason = stopping ? std::string("shutdown") : *interrupted;
        record(*spare, reason);
        spare->kill(reason);
        lock.unlock();
        spare.reset();  // reaped outside the lock
        lock.lock();
        continue;
      }
      spares.push_back(std::move(spare));
    }
  }

  // The start forked this process, write-protecting its pages: make them
  // writable again here, on the filler thread, so that the next call's writes
  // take no page fault each (memory.h restore_write_access()). Once the init
  // has reported its exec (waited for up to 10 s, off every call's path; the
  // shutdown is looked for every 50 ms); one that waits as a fork is left
  // alone. Pages another start's fork still shares are skipped by the pass.
  void settle_after_fork(const Sandbox& spare) {
    for (int waited_ms = 0; waited_ms < 10'000; waited_ms += 50) {
      if (spare.wait_host_pages_unshared(50)) {
        restore_write_access();
        return;
      }
      std::lock_guard lock(mu);
      if (stopping) return;
    }
  }

  // A pre-started sandbox for a fresh call, or null. One that died or wrote
  // while it waited is destroyed (its reason recorded) and the next is tried.
  // The filler is not woken here: the caller wakes it once its call has
  // ended (refill_after, or Pool::refill), so starting the next spare — a
  // fork of this process — never competes with the first call it was kept for.
  std::shared_ptr<Sandbox> take_spare() {
    if (config.prestart == 0) return nullptr;
    for (;;) {
      std::shared_ptr<Sandbox> spare;
      {
        std::lock_guard lock(mu);
        if (spares.empty()) return nullptr;
        spare = std::move(spares.front());
        spares.pop_front();
      }
      auto why = spare->idle_check();
      if (!why) return spare;
      {
        std::lock_guard lock(mu);
        record(*spare, *why);
      }
      spare->kill(*why);
    }
  }

  // RSS (never below PSS) of every live sandbox plus `room` fits the budget.
  bool budget_has_room(std::uint64_t room) {
    if (config.memory_budget_bytes == 0) return true;
    std::vector<std::shared_ptr<Sandbox>> live;
    {
      std::lock_guard lock(mu);
      for (const auto& [_, slot] : slots)
        if (slot->sandbox) live.push_back(slot->sandbox);
      for (const auto& sandbox : disposables) live.push_back(sandbox);
      for (const auto& sandbox : spares) live.push_back(sandbox);
    }
    std::uint64_t total = room;
    for (const auto& sandbox : live) total += sandbox->resident_bytes().value_or(0);
    return total <= config.memory_budget_bytes;
  }

  // A call the pool will not run because it was interrupted.
  CallOutcome refused(bool fresh) const {
    CallOutcome outcome;
    outcome.status = Status::cancelled;
    outcome.error = "the call was interrupted: tycli is shutting down";
    outcome.fresh_sandbox = fresh;
    return outcome;
  }

  // Makes room for one more retained sandbox: while max_live are alive,
  // destroys the least recently used one that no call holds. Busy sandboxes
  // are never evicted, so the cap can be exceeded while every one is in use.
  void evict_for_room(const Slot* keep) {
    std::vector<std::shared_ptr<Sandbox>> doomed;
    {
      std::lock_guard lock(mu);
      std::size_t alive = 0;
      for (const auto& [_, slot] : slots) alive += slot->sandbox ? 1 : 0;
      while (alive >= config.max_live) {
        Slot* victim = nullptr;
        for (const auto& [_, slot] : slots)
          if (slot.get() != keep && slot->sandbox && (!victim || slot->last_used < victim->last_used) &&
              slot->call_mu.try_lock()) {
            if (victim) victim->call_mu.unlock();
            victim = slot.get();
          }
        if (!victim) break;
        record(*victim->sandbox, "evicted", victim->session);
        doomed.push_back(std::move(victim->sandbox));
        victim->call_mu.unlock();
        --alive;
      }
    }
    for (const auto& sandbox : doomed) sandbox->kill("evicted");
  }

  // The RSS of a live sandbox as enforce_budget counts it: read from
  // /proc/PID/statm unless a reading younger than memory_reading_max_age
  // stands. A sandbox's reading is dropped when a call on it ends, so the
  // sandbox a call used is always read anew: a warm call reads one small
  // file, not one per live sandbox (issue 19). An idle sandbox's growth is
  // seen within that age; each child is bounded on its own by RLIMIT_DATA.
  std::uint64_t resident(const std::shared_ptr<Sandbox>& sandbox, Clock::time_point now) {
    {
      std::lock_guard lock(readings_mu);
      auto it = readings.find(sandbox.get());
      if (it != readings.end() && it->second.sandbox.lock() == sandbox &&
          now - it->second.at < config.memory_reading_max_age)
        return it->second.bytes;
    }
    const std::uint64_t bytes = sandbox->resident_bytes().value_or(0);
    std::lock_guard lock(readings_mu);
    readings[sandbox.get()] = RssReading{sandbox, bytes, now};
    return bytes;
  }

  void forget_reading(const Sandbox& sandbox) {
    std::lock_guard lock(readings_mu);
    readings.erase(&sandbox);
  }

  // Drops the readings of sandboxes that are gone, once they outnumber the
  // live ones.
  void prune_readings(std::size_t live) {
    std::lock_guard lock(readings_mu);
    if (readings.size() <= 2 * live + 8) return;
    std::erase_if(readings, [](const auto& entry) { return entry.second.sandbox.expired(); });
  }

  // The memory budget (RuntimeConfig::memory_budget_bytes): destroys the
  // least recently used idle retained sandboxes, never `keep`, until the live
  // sandboxes' memory plus `room` fits, each recorded as "memory_budget".
  // The RSS sum (cheap, never below PSS) is read first; PSS only when RSS
  // says the budget may be exceeded. A destroyed sandbox takes its USS off
  // the sum, not its PSS: its share of the pages it shared with the others
  // (Node's executable) moves to them (memory.h Footprint). Measured without
  // the lock; a sandbox that changed meanwhile is left alone. Returns the
  // ones it killed.
  std::vector<std::shared_ptr<Sandbox>> enforce_budget(const Slot* keep, std::uint64_t room) {
    if (config.memory_budget_bytes == 0) return {};
    struct Live {
      std::shared_ptr<Slot> slot;  // null: a disposable sandbox (in use, never evicted) or a spare
      std::shared_ptr<Sandbox> sandbox;
      std::uint64_t last_used = 0;
      std::uint64_t frees = 0;  // USS: what destroying it takes off the PSS sum
      bool spare = false;       // pre-started, not loaded: the first to go
    };
    std::vector<Live> live;
    {
      std::lock_guard lock(mu);
      for (const auto& [_, slot] : slots)
        if (slot->sandbox) live.push_back({slot, slot->sandbox, slot->last_used, 0});
      for (const auto& sandbox : disposables) live.push_back({nullptr, sandbox, 0, 0});
      for (const auto& sandbox : spares) live.push_back({nullptr, sandbox, 0, 0, true});
    }
    const std::uint64_t budget = config.memory_budget_bytes;
    std::uint64_t total = 0;
    const auto now = Clock::now();
    for (const Live& l : live) total += resident(l.sandbox, now);
    prune_readings(live.size());
    if (total + room <= budget) return {};
    total = 0;
    for (Live& l : live) {
      const Footprint f = l.sandbox->footprint().value_or(Footprint{});
      total += f.proportional;
      l.frees = f.unique;
    }
    if (total + room <= budget) return {};
    std::sort(live.begin(), live.end(), [](const Live& a, const Live& b) {
      return a.spare != b.spare ? a.spare : a.last_used < b.last_used;
    });
    std::vector<std::shared_ptr<Sandbox>> doomed;
    {
      std::lock_guard lock(mu);
      for (const Live& l : live) {
        if (total + room <= budget) break;
        if (l.spare) {
          auto it = std::find(spares.begin(), spares.end(), l.sandbox);
          if (it == spares.end()) continue;  // taken meanwhile
          spares.erase(it);
          record(*l.sandbox, "memory_budget");
          doomed.push_back(l.sandbox);
          total -= std::min(total, l.frees);
          continue;
        }
        if (!l.slot || l.slot.get() == keep || l.slot->sandbox != l.sandbox || !l.slot->call_mu.try_lock()) continue;
        record(*l.sandbox, "memory_budget", l.slot->session);
        doomed.push_back(std::move(l.slot->sandbox));
        l.slot->call_mu.unlock();
        total -= std::min(total, l.frees);
      }
    }
    for (const auto& sandbox : doomed) sandbox->kill("memory_budget");
    return doomed;
  }

  Result<std::string> node_path() {
    std::lock_guard lock(mu);
    if (node.empty()) {
      auto found = locate_runtime(config);  // runtime.h: Node, or Deno when selected
      if (!found) return std::unexpected(std::move(found.error()));
      node = std::move(found->path);
    }
    return node;
  }

  void record(const Sandbox& sandbox, std::string reason, std::string session = {}) {  // under mu
    destructions.push_back(Destruction{sandbox.revision(), std::move(reason), std::chrono::system_clock::now(),
                                       sandbox.name(), static_cast<int>(sandbox.pid()), std::move(session)});
    if (observer) observer(destructions.back());
  }

  // Takes `sandbox` out of `slot` and records why, unless terminate() already
  // did; kills it either way. Returns the reason that was recorded.
  std::string retire(Slot& slot, const std::shared_ptr<Sandbox>& sandbox, std::string reason) {
    {
      std::lock_guard lock(mu);
      if (slot.sandbox == sandbox) {
        slot.sandbox.reset();
        if (interrupted) reason = *interrupted;  // its call ended because the host is going down
        record(*sandbox, reason, slot.session);
      } else if (auto killed = sandbox->killed_reason()) {
        reason = *killed;
      }
    }
    sandbox->kill(reason);
    return reason;
  }

  // Loads the code into a fresh sandbox (when `fresh`) and runs the call.
  // Sets outcome.destroyed to the reason the sandbox must go, if it must; the
  // caller destroys it.
  // `load_crashed`, if given, is set when the sandbox died while loading.
  Result<CallOutcome> run(Sandbox& sandbox, bool fresh, const CallRequest& request, std::string_view load_frame,
                          std::uint64_t id, const std::string& call_frame, Deadline deadline,
                          bool* load_crashed = nullptr) {
    CallOutcome outcome;
    outcome.fresh_sandbox = fresh;
    std::size_t call_sent = 0;  // bytes of the call frame sent behind the load frame
    if (fresh) {
      Sandbox::Loaded loaded = sandbox.load(load_frame, deadline, request.cancel, call_frame);
      call_sent = loaded.call_sent;
      if (loaded.machinery) return std::unexpected(std::move(*loaded.machinery));
      if (load_crashed) *load_crashed = loaded.status == Status::crashed;
      if (loaded.status != Status::ok) {
        outcome.status = loaded.status;
        outcome.error = std::move(loaded.error);
        outcome.logs = std::move(loaded.logs);
        outcome.destroyed = loaded.status == Status::tool_error ? "load_error" : failure_reason(loaded.status);
        return outcome;
      }
    }
    CallOutcome called = sandbox.call(id, std::string_view(call_frame).substr(call_sent), deadline,
                                      request.capabilities, request.cancel, request.attribution, request.on_log,
                                      request.on_progress);
    called.fresh_sandbox = fresh;
    forget_reading(sandbox);  // it may have grown: enforce_budget reads it anew
    if (std::string reason = failure_reason(called.status); !reason.empty()) called.destroyed = std::move(reason);
    return called;
  }

  // Puts `sandbox` (a bound spare, or when null one started here) into
  // `slot`, visible to terminate() and live() while it loads. Returns the
  // outcome to give instead when it cannot: the start failed, or interrupt()
  // ran meanwhile (it never takes the call).
  std::optional<Result<CallOutcome>> install(Slot& slot, const CallRequest& request, const std::string& node_exe,
                                             std::shared_ptr<Sandbox>& sandbox) {
    if (!sandbox) {
      enforce_budget(&slot, kSandboxStartBytes);
      auto started = Sandbox::start(launcher, node_exe, config, request.tool.revision, Mode::retained);
      if (!started) return std::unexpected(std::move(started.error()));
      sandbox = std::move(*started);
      sandbox->set_name(request.tool.name);
    }
    std::lock_guard lock(mu);
    if (interrupted) {
      record(*sandbox, *interrupted, request.session);
      sandbox->kill(*interrupted);
      auto outcome = refused(true);
      outcome.destroyed = *interrupted;
      return outcome;
    }
    slot.sandbox = sandbox;
    return std::nullopt;
  }

  Result<CallOutcome> call_retained(const CallRequest& request, const std::string& node_exe, std::uint64_t id,
                                    const std::string& call_frame, Deadline deadline) {
    std::shared_ptr<Slot> slot;
    {
      std::lock_guard lock(mu);
      auto& entry = slots[slot_key(request.tool.revision, request.session)];
      if (!entry) {
        entry = std::make_shared<Slot>();
        entry->revision = request.tool.revision;
        entry->session = request.session;
      }
      entry->last_used = ++use_clock;
      slot = entry;
    }
    // A call queued behind another call of the same (revision, session) waits
    // no longer than its own deadline and ends as soon as it is cancelled (or
    // the pool is interrupted): the wait is taken in short slices so that the
    // cancel token is looked at between them. The sandbox is not touched.
    std::unique_lock call_lock(slot->call_mu, std::defer_lock);
    while (!call_lock.try_lock_until(std::min(deadline, Clock::now() + kQueueSlice))) {
      const bool cancelled = request.cancel.cancelled() || interrupted_flag.load();
      if (!cancelled && Clock::now() < deadline) continue;
      CallOutcome outcome;
      outcome.status = cancelled ? Status::cancelled : Status::timeout;
      outcome.error = cancelled ? "the call was cancelled " + std::string(kQueuedNote) : std::string(kQueuedNote);
      return outcome;
    }
    std::shared_ptr<Sandbox> sandbox;
    {
      std::lock_guard lock(mu);
      sandbox = slot->sandbox;
    }
    if (sandbox) {
      if (auto why = sandbox->idle_check()) {
        retire(*slot, sandbox, *why);
        sandbox.reset();
      }
    }
    const bool fresh = !sandbox;
    // The load frame is encoded once per sandbox (issue 19): only a fresh one
    // needs it; a warm call whose code differs from what its sandbox loaded
    // has it checked all the same (bad_usage before the sandbox is used).
    std::string load_frame;
    if (fresh || slot->code != request.tool.code) {
      auto encoded = protocol::encode_load(request.tool.code, config.max_frame_bytes, request.tool.modules.get());
      if (!encoded) return std::unexpected(std::move(encoded.error()));
      load_frame = std::move(*encoded);
    }
    bool from_spare = false;
    // Wakes the filler when this call ends, if it took or tried a spare
    // (unless its caller does it later: CallRequest::refill_later).
    struct RefillAfter {
      std::condition_variable* cv = nullptr;
      ~RefillAfter() {
        if (cv) cv->notify_all();
      }
    } refill_after;
    if (fresh) {
      evict_for_room(slot.get());
      if (config.prestart > 0 && !request.refill_later) refill_after.cv = &filler_cv;
      sandbox = take_spare();
      from_spare = sandbox != nullptr;
      if (sandbox) {
        std::lock_guard lock(mu);
        sandbox->bind(request.tool.revision, request.tool.name);  // M3: the host binds it, with its load frame
      }
      slot->code = request.tool.code;
      if (auto refusal = install(*slot, request, node_exe, sandbox)) return std::move(*refusal);
    }
    for (;;) {
      bool load_crashed = false;
      auto outcome = run(*sandbox, fresh, request, load_frame, id, call_frame, deadline, &load_crashed);
      if (!outcome) {
        retire(*slot, sandbox, "crashed");
        return outcome;
      }
      if (outcome->destroyed) outcome->destroyed = retire(*slot, sandbox, *outcome->destroyed);
      // A spare that died before it could take the code (killed while idle,
      // an instant the idle check can miss) never costs the call: it is
      // logged as crashed and the call gets, once, a sandbox started for it.
      if (!(from_spare && load_crashed) || request.cancel.cancelled() || Clock::now() >= deadline) return outcome;
      from_spare = false;
      sandbox.reset();
      if (auto refusal = install(*slot, request, node_exe, sandbox)) return std::move(*refusal);
    }
  }

  Result<CallOutcome> call_disposable(const CallRequest& request, const std::string& node_exe, std::uint64_t id,
                                      const std::string& call_frame, Deadline deadline) {
    auto load_frame = protocol::encode_load(request.tool.code, config.max_frame_bytes, request.tool.modules.get());
    if (!load_frame) return std::unexpected(std::move(load_frame.error()));
    auto started = Sandbox::start(launcher, node_exe, config, request.tool.revision, Mode::disposable);
    if (!started) return std::unexpected(std::move(started.error()));
    std::shared_ptr<Sandbox> sandbox = std::move(*started);
    sandbox->set_name(request.tool.name);
    {
      std::lock_guard lock(mu);
      if (interrupted) {
        record(*sandbox, *interrupted);
        sandbox->kill(*interrupted);
        auto outcome = refused(true);
        outcome.destroyed = *interrupted;
        return outcome;
      }
      disposables.insert(sandbox);
    }
    auto outcome = run(*sandbox, /*fresh=*/true, request, *load_frame, id, call_frame, deadline);
    std::string reason = outcome && outcome->destroyed ? *outcome->destroyed
                         : outcome                     ? std::string("disposable")
                                                       : std::string("crashed");
    {
      std::lock_guard lock(mu);
      if (disposables.erase(sandbox) > 0) {
        if (interrupted) reason = *interrupted;  // as in retire()
        record(*sandbox, reason);
      }
      else if (auto killed = sandbox->killed_reason())  // interrupt() took it: its reason was recorded
        reason = *killed;
    }
    sandbox->kill(reason);
    if (outcome) outcome->destroyed = std::move(reason);
    return outcome;
  }
};

Pool::Pool(RuntimeConfig config) : impl_(std::make_unique<Impl>(std::move(config))) { impl_->start_filler(); }

const RuntimeConfig& Pool::config() const { return impl_->config; }

Pool::~Pool() {
  impl_->stop_filler();
  std::vector<std::shared_ptr<Sandbox>> doomed;
  {
    std::lock_guard lock(impl_->mu);
    for (auto& spare : impl_->spares) {
      impl_->record(*spare, "shutdown");
      doomed.push_back(std::move(spare));
    }
    impl_->spares.clear();
    for (auto& [key, slot] : impl_->slots) {
      if (!slot->sandbox) continue;
      impl_->record(*slot->sandbox, "shutdown", slot->session);
      doomed.push_back(std::move(slot->sandbox));
    }
    for (const auto& sandbox : impl_->disposables) {
      impl_->record(*sandbox, "shutdown");
      doomed.push_back(sandbox);
    }
    impl_->disposables.clear();
  }
  for (const auto& sandbox : doomed) sandbox->kill("shutdown");  // all signalled before any is reaped
  doomed.clear();                                                 // reaped, directories removed
}

Result<CallOutcome> Pool::call(const CallRequest& request) {
  try {
    const auto started = Clock::now();
    const Deadline deadline = started + request.timeout;
    auto node = impl_->node_path();
    if (!node) return std::unexpected(std::move(node.error()));
    const std::uint64_t id = impl_->next_call_id.fetch_add(1);
    // The frame goes into this thread's reused string (issue 19: a fresh one
    // per call cost a 100 KiB argument its allocation and page faults each
    // time); one above 1 MiB is given back after the call. A call made from
    // inside a call on this thread (an on_log callback) gets its own.
    thread_local std::string reused_frame;
    thread_local bool reused_busy = false;
    std::string own_frame;
    const bool reuse = !reused_busy;
    std::string& call_frame = reuse ? reused_frame : own_frame;
    struct Release {
      bool reuse;
      ~Release() {
        if (!reuse) return;
        reused_busy = false;
        if (reused_frame.capacity() > (1u << 20)) std::string().swap(reused_frame);
      }
    } release{reuse};
    if (reuse) reused_busy = true;
    if (auto written = protocol::encode_call_into(call_frame, id, request.args, impl_->config.max_frame_bytes); !written)
      return std::unexpected(std::move(written.error()));

    if (impl_->interrupted_flag.load()) return impl_->refused(false);
    auto outcome = request.mode == Mode::disposable
                       ? impl_->call_disposable(request, *node, id, call_frame, deadline)
                       : impl_->call_retained(request, *node, id, call_frame, deadline);
    if (!outcome) return outcome;
    // After every call: back inside the budget. The sandbox just used is the
    // most recently used, so it goes last.
    for (const auto& evicted : impl_->enforce_budget(nullptr, 0)) {
      if (request.mode == Mode::retained && !outcome->destroyed && evicted->revision() == request.tool.revision)
        outcome->destroyed = "memory_budget";
    }
    if (outcome->status != Status::ok && impl_->interrupted_flag.load()) {  // killed by interrupt(), or cancelled
      outcome->status = Status::cancelled;
      outcome->error = "the call was interrupted: tycli is shutting down";
    } else if (outcome->status == Status::timeout) {
      outcome->error = fmt::format("the call ran past its timeout of {} ms{}", request.timeout.count(),
                                   outcome->error == kQueuedNote ? " " + outcome->error : std::string());
    }
    outcome->duration = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
    return outcome;
  } catch (const std::exception& e) {
    return fail(Errc::internal, fmt::format("sandbox call failed: {}", e.what()), request.tool.revision);
  }
}

void Pool::terminate(std::string_view revision, std::string_view reason) {
  std::vector<std::shared_ptr<Sandbox>> doomed;  // one per session holding the revision
  {
    std::lock_guard lock(impl_->mu);
    for (auto& [key, slot] : impl_->slots) {
      if (slot->revision != revision || !slot->sandbox) continue;
      impl_->record(*slot->sandbox, std::string(reason), slot->session);
      doomed.push_back(std::move(slot->sandbox));
    }
  }
  for (const auto& sandbox : doomed) sandbox->kill(reason);
  // Reaped here unless a call still holds it; that call ends when the child dies.
}

void Pool::close_session(std::string_view session, std::string_view reason) {
  std::vector<std::shared_ptr<Sandbox>> doomed;
  {
    std::lock_guard lock(impl_->mu);
    for (auto it = impl_->slots.begin(); it != impl_->slots.end();) {
      auto& slot = it->second;
      if (slot->session != session) {
        ++it;
        continue;
      }
      if (slot->sandbox) {
        impl_->record(*slot->sandbox, std::string(reason), slot->session);
        doomed.push_back(std::move(slot->sandbox));
      }
      it = impl_->slots.erase(it);  // a call holding the slot keeps its shared_ptr
    }
  }
  for (const auto& sandbox : doomed) sandbox->kill(reason);
}

void Pool::refill() {
  if (impl_->config.prestart == 0) return;
  {
    std::lock_guard lock(impl_->mu);
    if (impl_->spares.size() >= impl_->config.prestart) return;  // a warm call took none: no wake-up
  }
  impl_->filler_cv.notify_all();
}

void Pool::retire_superseded(std::string_view name, std::string_view active) {
  std::vector<std::shared_ptr<Sandbox>> doomed;
  {
    std::lock_guard lock(impl_->mu);
    for (auto& [key, slot] : impl_->slots) {
      if (!slot->sandbox || slot->sandbox->name() != name || slot->revision == active) continue;
      impl_->record(*slot->sandbox, "superseded", slot->session);
      doomed.push_back(std::move(slot->sandbox));
    }
  }
  for (const auto& sandbox : doomed) sandbox->kill("superseded");
}

void Pool::interrupt(std::string_view reason, const std::function<void()>& then) {
  std::vector<std::shared_ptr<Sandbox>> doomed;
  [&] {
    std::lock_guard lock(impl_->mu);
    if (impl_->interrupted) return;  // an earlier interrupt() killed everything
    impl_->interrupted = std::string(reason);
    impl_->interrupted_flag.store(true);
    for (auto& [key, slot] : impl_->slots) {
      if (!slot->sandbox) continue;
      impl_->record(*slot->sandbox, std::string(reason), slot->session);
      doomed.push_back(std::move(slot->sandbox));
    }
    for (const auto& sandbox : impl_->disposables) {
      impl_->record(*sandbox, std::string(reason));
      doomed.push_back(sandbox);
    }
    impl_->disposables.clear();
    for (auto& spare : impl_->spares) {
      impl_->record(*spare, std::string(reason));
      doomed.push_back(std::move(spare));
    }
    impl_->spares.clear();
  }();
  impl_->filler_cv.notify_all();
  if (then) then();  // outside the lock: it may call back into the pool
  for (const auto& sandbox : doomed) sandbox->kill(reason);
  // Each is reaped (its directory removed) here unless a call still holds it;
  // that call ends when its child dies and drops the last reference.
}

bool Pool::interrupted() const { return impl_->interrupted_flag.load(); }

void Pool::on_destruction(std::function<void(const Destruction&)> observer) {
  std::lock_guard lock(impl_->mu);
  impl_->observer = std::move(observer);
}

std::vector<std::string> Pool::live() const {
  std::lock_guard lock(impl_->mu);
  std::vector<std::string> revisions;
  for (const auto& [key, slot] : impl_->slots) {
    if (slot->sandbox) revisions.push_back(slot->revision);
  }
  return revisions;
}

std::vector<SandboxInfo> Pool::sandboxes() const {
  std::lock_guard lock(impl_->mu);
  std::vector<SandboxInfo> infos;
  auto add = [&](const Sandbox& sandbox, const std::string& session) {
    infos.push_back(SandboxInfo{sandbox.revision(), sandbox.name(), sandbox.mode(), static_cast<int>(sandbox.pid()),
                                sandbox.workdir(), session});
  };
  for (const auto& [key, slot] : impl_->slots) {
    if (slot->sandbox) add(*slot->sandbox, slot->session);
  }
  for (const auto& sandbox : impl_->disposables) add(*sandbox, std::string());
  for (const auto& sandbox : impl_->spares) add(*sandbox, std::string());
  return infos;
}

std::vector<Destruction> Pool::destructions() const {
  std::lock_guard lock(impl_->mu);
  return impl_->destructions;
}

}  // namespace taskyon::sandbox
