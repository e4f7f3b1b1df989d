#include "taskyon/sandbox/pool.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>

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
  std::mutex call_mu;                // held for a whole call, start and load included
  std::shared_ptr<Sandbox> sandbox;  // guarded by Pool::Impl::mu; null when none is live
  std::uint64_t last_used = 0;       // guarded by Pool::Impl::mu; larger is more recent
};

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

  // The memory budget (RuntimeConfig::memory_budget_bytes): destroys the
  // least recently used idle retained sandboxes, never `keep`, until the live
  // sandboxes' memory plus `room` fits, each recorded as "memory_budget".
  // The RSS sum (cheap, never below PSS) is read first; PSS only when RSS
  // says the budget may be exceeded. Measured without the lock; a sandbox
  // that changed meanwhile is left alone. Returns the ones it killed.
  std::vector<std::shared_ptr<Sandbox>> enforce_budget(const Slot* keep, std::uint64_t room) {
    if (config.memory_budget_bytes == 0) return {};
    struct Live {
      std::shared_ptr<Slot> slot;  // null: a disposable sandbox (in use, never evicted)
      std::shared_ptr<Sandbox> sandbox;
      std::uint64_t last_used = 0;
      std::uint64_t bytes = 0;
    };
    std::vector<Live> live;
    {
      std::lock_guard lock(mu);
      for (const auto& [_, slot] : slots)
        if (slot->sandbox) live.push_back({slot, slot->sandbox, slot->last_used, 0});
      for (const auto& sandbox : disposables) live.push_back({nullptr, sandbox, 0, 0});
    }
    const std::uint64_t budget = config.memory_budget_bytes;
    std::uint64_t total = 0;
    for (const Live& l : live) total += resident_bytes(l.sandbox->pid()).value_or(0);
    if (total + room <= budget) return {};
    total = 0;
    for (Live& l : live) total += l.bytes = proportional_bytes(l.sandbox->pid()).value_or(0);
    if (total + room <= budget) return {};
    std::sort(live.begin(), live.end(), [](const Live& a, const Live& b) { return a.last_used < b.last_used; });
    std::vector<std::shared_ptr<Sandbox>> doomed;
    {
      std::lock_guard lock(mu);
      for (const Live& l : live) {
        if (total + room <= budget) break;
        if (!l.slot || l.slot.get() == keep || l.slot->sandbox != l.sandbox || !l.slot->call_mu.try_lock()) continue;
        record(*l.sandbox, "memory_budget", l.slot->session);
        doomed.push_back(std::move(l.slot->sandbox));
        l.slot->call_mu.unlock();
        total -= std::min(total, l.bytes);
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
  Result<CallOutcome> run(Sandbox& sandbox, bool fresh, const CallRequest& request, const std::string& load_frame,
                          std::uint64_t id, const std::string& call_frame, Deadline deadline) {
    CallOutcome outcome;
    outcome.fresh_sandbox = fresh;
    if (fresh) {
      Sandbox::Loaded loaded = sandbox.load(load_frame, deadline, request.cancel);
      if (loaded.machinery) return std::unexpected(std::move(*loaded.machinery));
      if (loaded.status != Status::ok) {
        outcome.status = loaded.status;
        outcome.error = std::move(loaded.error);
        outcome.logs = std::move(loaded.logs);
        outcome.destroyed = loaded.status == Status::tool_error ? "load_error" : failure_reason(loaded.status);
        return outcome;
      }
    }
    CallOutcome called = sandbox.call(id, call_frame, deadline, request.capabilities, request.cancel, request.attribution,
                                      request.on_log, request.on_progress);
    called.fresh_sandbox = fresh;
    if (std::string reason = failure_reason(called.status); !reason.empty()) called.destroyed = std::move(reason);
    return called;
  }

  Result<CallOutcome> call_retained(const CallRequest& request, const std::string& node_exe,
                                    const std::string& load_frame, std::uint64_t id,
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
    std::lock_guard call_lock(slot->call_mu);
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
    if (fresh) {
      evict_for_room(slot.get());
      enforce_budget(slot.get(), kSandboxStartBytes);
      auto started = Sandbox::start(launcher, node_exe, config, request.tool.revision, Mode::retained);
      if (!started) return std::unexpected(std::move(started.error()));
      sandbox = std::move(*started);
      sandbox->set_name(request.tool.name);
      std::lock_guard lock(mu);
      if (interrupted) {  // interrupt() ran while this one started: it never takes the call
        record(*sandbox, *interrupted, request.session);
        sandbox->kill(*interrupted);
        auto outcome = refused(true);
        outcome.destroyed = *interrupted;
        return outcome;
      }
      slot->sandbox = sandbox;  // visible to terminate() and live() while it loads
    }
    auto outcome = run(*sandbox, fresh, request, load_frame, id, call_frame, deadline);
    if (!outcome) {
      retire(*slot, sandbox, "crashed");
      return outcome;
    }
    if (outcome->destroyed) outcome->destroyed = retire(*slot, sandbox, *outcome->destroyed);
    return outcome;
  }

  Result<CallOutcome> call_disposable(const CallRequest& request, const std::string& node_exe,
                                      const std::string& load_frame, std::uint64_t id,
                                      const std::string& call_frame, Deadline deadline) {
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
    auto outcome = run(*sandbox, /*fresh=*/true, request, load_frame, id, call_frame, deadline);
    std::string reason = outcome && outcome->destroyed ? *outcome->destroyed
                         : outcome                     ? std::string("disposable")
                                                       : std::string("crashed");
    {
      std::lock_guard lock(mu);
      if (disposables.erase(sandbox) > 0)
        record(*sandbox, reason);
      else if (auto killed = sandbox->killed_reason())  // interrupt() took it: its reason was recorded
        reason = *killed;
    }
    sandbox->kill(reason);
    if (outcome) outcome->destroyed = std::move(reason);
    return outcome;
  }
};

Pool::Pool(RuntimeConfig config) : impl_(std::make_unique<Impl>(std::move(config))) {}

Pool::~Pool() {
  std::vector<std::shared_ptr<Sandbox>> doomed;
  {
    std::lock_guard lock(impl_->mu);
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
    auto load_frame = protocol::encode_load(request.tool.code, impl_->config.max_frame_bytes);
    if (!load_frame) return std::unexpected(std::move(load_frame.error()));
    const std::uint64_t id = impl_->next_call_id.fetch_add(1);
    auto call_frame = protocol::encode_call(id, request.args, impl_->config.max_frame_bytes);
    if (!call_frame) return std::unexpected(std::move(call_frame.error()));

    if (impl_->interrupted_flag.load()) return impl_->refused(false);
    auto outcome = request.mode == Mode::disposable
                       ? impl_->call_disposable(request, *node, *load_frame, id, *call_frame, deadline)
                       : impl_->call_retained(request, *node, *load_frame, id, *call_frame, deadline);
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
      outcome->error = fmt::format("the call ran past its timeout of {} ms", request.timeout.count());
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

void Pool::interrupt(std::string_view reason) {
  std::vector<std::shared_ptr<Sandbox>> doomed;
  {
    std::lock_guard lock(impl_->mu);
    if (impl_->interrupted) return;
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
  }
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
  return infos;
}

std::vector<Destruction> Pool::destructions() const {
  std::lock_guard lock(impl_->mu);
  return impl_->destructions;
}

}  // namespace taskyon::sandbox
