#include "taskyon/sandbox/sandbox.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <system_error>

#include <fmt/format.h>

#include "taskyon/base/sigpipe.h"
#include "taskyon/sandbox/capability_runner.h"
#include "taskyon/sandbox/guest.h"
#include "taskyon/sandbox/memory.h"
#include "taskyon/sandbox/runtime.h"
#include "taskyon/sandbox/workdir.h"

namespace taskyon::sandbox {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kChunk = 64u << 10;  // one read from a pipe, bytes

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// Length of the longest prefix of valid UTF-8 `text` of at most `max` bytes
// that does not split a sequence.
std::size_t utf8_prefix(std::string_view text, std::size_t max) {
  if (text.size() <= max) return text.size();
  std::size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  return n;
}

// `bytes` with every invalid UTF-8 sequence replaced by U+FFFD.
std::string valid_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  std::size_t i = 0;
  while (i < bytes.size()) {
    const auto b = static_cast<unsigned char>(bytes[i]);
    std::size_t len = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
    bool ok = len > 0 && i + len <= bytes.size();
    for (std::size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(bytes[i + k]) & 0xC0) == 0x80;
    if (ok && len > 1) {  // refuse overlong forms, surrogates and code points above U+10FFFF
      std::uint32_t cp = b & (0x7F >> len);
      for (std::size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(bytes[i + k]) & 0x3F);
      static constexpr std::uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
      ok = cp >= kMin[len] && cp <= 0x10FFFF && (cp < 0xD800 || cp > 0xDFFF);
    }
    if (ok) {
      out.append(bytes.substr(i, len));
      i += len;
    } else {
      out.append("\xEF\xBF\xBD");
      ++i;
    }
  }
  return out;
}

}  // namespace

// Logs of one call (or of a load), bounded by max_log_bytes of text in total.
struct Sandbox::LogBook {
  explicit LogBook(std::size_t max) : max_bytes(max) {}

  void add(std::string level, std::string text) {
    if (truncated) return;
    const std::size_t room = max_bytes - used;
    if (text.size() > room) {
      text.resize(utf8_prefix(text, room));
      truncated = true;
      if (text.empty()) return;
    }
    used += text.size();
    entries.push_back(LogEntry{std::move(level), std::move(text)});
    if (sink && *sink) (*sink)(entries.back());
  }

  // Raw bytes from the child's fd 2: one "stderr" entry per line.
  void add_stderr(std::string_view bytes) {
    if (raw_stderr) raw_stderr->append(bytes);
    if (truncated) return;
    for (;;) {
      const std::size_t newline = bytes.find('\n');
      if (newline == std::string_view::npos) break;
      stderr_line.append(bytes.substr(0, std::min(newline, max_bytes + 1)));
      flush_stderr();
      bytes.remove_prefix(newline + 1);
    }
    stderr_line.append(bytes.substr(0, std::min(bytes.size(), max_bytes + 1)));
    if (stderr_line.size() > max_bytes) flush_stderr();  // longer than the whole budget
  }

  void flush_stderr() {
    if (!stderr_line.empty()) add("stderr", valid_utf8(stderr_line));
    stderr_line.clear();
  }

  std::size_t max_bytes;
  const std::function<void(const LogEntry&)>* sink = nullptr;  // CallRequest::on_log, as entries are kept
  std::string* raw_stderr = nullptr;  // also gets every byte of fd 2 as read (a pipelined load)
  std::size_t used = 0;
  bool truncated = false;
  std::vector<LogEntry> entries;
  std::string stderr_line;  // a line from fd 2 without its '\n' yet
};

Result<std::string> find_node(std::string_view configured) {
  const std::string install =
      "Install Node.js 20 or newer (Debian/Ubuntu: `apt install nodejs`; elsewhere https://nodejs.org/) "
      "or put a `node` executable on PATH";
  std::string name = configured.empty() ? std::string("node") : std::string(configured);
  if (name.find('/') != std::string::npos) {
    std::error_code ec;
    fs::path path = fs::absolute(name, ec);
    if (!ec && is_executable_file(path.string())) return path.lexically_normal().string();
    return fail(Errc::runtime_missing,
                fmt::format("Node.js was not found: {} is not an executable file. {}", name, install), name);
  }
  if (auto found = find_on_path(name, is_executable_file)) return *found;
  const char* env_path = std::getenv("PATH");
  const std::string search = env_path ? env_path : "/usr/local/bin:/usr/bin:/bin";
  return fail(Errc::runtime_missing,
              fmt::format("Node.js was not found: no executable `{}` on PATH ({}). {}", name, search, install), name);
}

std::optional<std::string> find_on_path(std::string_view name, bool (*accept)(const std::string& path)) {
  const char* env_path = std::getenv("PATH");
  const std::string search = env_path ? env_path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t begin = 0;
  while (begin <= search.size()) {
    std::size_t end = search.find(':', begin);
    if (end == std::string::npos) end = search.size();
    const std::string dir = search.substr(begin, end - begin);
    begin = end + 1;
    if (dir.empty() || dir.front() != '/') continue;  // never resolve against the cwd
    std::string candidate = dir + "/" + std::string(name);
    if (accept(candidate)) return candidate;
  }
  return std::nullopt;
}

std::vector<std::string> node_argv(const std::string& node, const RuntimeConfig& config) {
  return {
      node,
      fmt::format("--max-old-space-size={}", config.heap_limit_mb),
      "--experimental-permission",
      "--experimental-vm-modules",
      "--no-warnings",
      "--openssl-config=/dev/null",
      "-e",
      std::string(guest::node_bootstrap()),
      std::to_string(config.max_frame_bytes),
      std::to_string(config.max_log_bytes),
      std::to_string(protocol::kMaxDepth),
  };
}

Result<std::shared_ptr<const hardening::Policy>> node_policy(const std::string& node, const hardening::Layers& layers) {
  static std::mutex mu;
  static std::map<std::pair<std::string, hardening::Layers>, std::shared_ptr<const hardening::Policy>> cache;
  std::lock_guard lock(mu);
  auto key = std::pair{node, layers};
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  // Every layer by default, the PID namespace included: the pool names a
  // sandbox by its runtime's host pid, which the child reports (Child::runtime_pid).
  auto policy = hardening::Policy::prepare(node, {"/dev/null"}, layers);
  if (!policy) return policy;
  cache.emplace(std::move(key), *policy);
  return *policy;
}

hardening::rlimits::Limits node_limits(const RuntimeConfig& config) {
  const std::uint64_t heap_mb = config.heap_limit_mb > 0 ? static_cast<std::uint64_t>(config.heap_limit_mb) : 0;
  return {.data_bytes = (heap_mb + kNodeOffHeapMb) << 20, .open_files = 256};
}

Sandbox::Sandbox(std::unique_ptr<Child> child, std::string workdir, std::string revision, Mode mode,
                 const RuntimeConfig& config)
    : child_(std::move(child)), workdir_(std::move(workdir)), revision_(std::move(revision)), mode_(mode),
      max_frame_bytes_(config.max_frame_bytes), max_log_bytes_(config.max_log_bytes),
      reader_(config.max_frame_bytes), chunk_(std::make_unique_for_overwrite<char[]>(kChunk)),
      // the runtime's own statm (in a PID namespace child_->pid() is its init)
      statm_(::open(fmt::format("/proc/{}/statm", child_->runtime_pid()).c_str(), O_RDONLY | O_CLOEXEC)),
      wake_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (child_->pid() != child_->runtime_pid())
    init_statm_.reset(::open(fmt::format("/proc/{}/statm", child_->pid()).c_str(), O_RDONLY | O_CLOEXEC));
}

namespace {

// Field 2 of an open /proc/PID/statm × the page size; nullopt once it is gone.
std::optional<std::uint64_t> statm_resident(const Fd& statm) {
  char text[128];
  const ssize_t n = ::pread(statm.get(), text, sizeof text - 1, 0);
  if (n <= 0) return std::nullopt;
  // "size resident shared …": the second number (from_chars: no locale, no
  // scanf machinery on the budget's per-call path).
  const char* const end = text + n;
  std::uint64_t size = 0, resident = 0;
  auto got = std::from_chars(text, end, size);
  if (got.ec != std::errc() || got.ptr == end || *got.ptr != ' ') return std::nullopt;
  got = std::from_chars(got.ptr + 1, end, resident);
  if (got.ec != std::errc()) return std::nullopt;
  static const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  return resident * page;
}

}  // namespace

std::optional<std::uint64_t> Sandbox::resident_bytes() const {
  auto runtime = statm_ ? statm_resident(statm_) : sandbox::resident_bytes(pid());
  if (!runtime) return std::nullopt;  // the runtime is gone
  if (init_statm_) {
    std::uint64_t init = init_rss_.load(std::memory_order_relaxed);
    if (init == 0) {
      init = statm_resident(init_statm_).value_or(0);
      if (loaded_.load(std::memory_order_relaxed)) init_rss_.store(init, std::memory_order_relaxed);
    }
    *runtime += init;
  }
  return runtime;
}

bool Sandbox::wait_host_pages_unshared(int wait_ms) const { return child_->wait_init_exec(wait_ms); }

std::optional<Footprint> Sandbox::footprint() const {
  auto runtime = sandbox::footprint(pid());
  if (!runtime) return std::nullopt;
  if (init_statm_) {
    const Footprint init = sandbox::footprint(child_->pid()).value_or(Footprint{});
    runtime->proportional += init.proportional;
    runtime->unique += init.unique;
  }
  return runtime;
}

Result<std::shared_ptr<Sandbox>> Sandbox::start(Launcher& launcher, const std::string& runtime,
                                                const RuntimeConfig& config, std::string revision, Mode mode) {
  std::error_code ec;
  auto workdir = make_workdir();  // workdir.h: the owner's pid in the name, for the sweep
  if (!workdir) return std::unexpected(std::move(workdir.error()));
  std::string pattern = std::move(*workdir);
  auto launch = prepare_launch(runtime, config, pattern);  // runtime.h: node or deno
  if (!launch) {
    fs::remove_all(pattern, ec);
    return std::unexpected(std::move(launch.error()));
  }
  SpawnSpec spec{.policy = std::move(launch->policy),
                 .argv = std::move(launch->argv),
                 .env = std::move(launch->env),
                 .workdir = pattern,
                 .limits = launch->limits};
  auto child = launcher.spawn(spec);
  if (!child) {
    fs::remove_all(pattern, ec);
    return std::unexpected(std::move(child.error()));
  }
  std::shared_ptr<Sandbox> sandbox(new Sandbox(std::move(*child), std::move(pattern), std::move(revision), mode, config));
  if (!sandbox->wake_) {  // the sandbox's destructor kills its child and removes its directory
    return fail(Errc::internal, "cannot make the sandbox's wake descriptor (eventfd failed)");
  }
  return sandbox;
}

Sandbox::~Sandbox() {
  child_.reset();  // SIGKILL to the group, then reaped
  std::error_code ec;
  fs::remove_all(workdir_, ec);
}

void Sandbox::kill(std::string_view reason) {
  {
    std::lock_guard lock(kill_mu_);
    if (!killed_reason_) killed_reason_ = std::string(reason);
  }
  child_->kill();
}

std::optional<std::string> Sandbox::killed_reason() const {
  std::lock_guard lock(kill_mu_);
  return killed_reason_;
}

// Writes `first` (then any frames on_line/on_extra append to `out`) to the
// child's stdin while reading its stdout (frames, handed to on_line) and
// stderr (into `logs`), until on_line reports the terminal frame, the deadline
// passes, `cancel` fires, the child closes fd 1 or exits, or a frame is
// refused. `wake_` is polled too: `cancel` wakes it (a Watch) and so does a
// finished capability request, after which on_wake(out) runs (it may append
// frames to `out`); wakes for nothing (a late one of an earlier call) only
// cost a poll. on_line(std::string line, std::string& out) ->
// std::expected<bool, protocol::Violation>: true for the terminal frame; it
// may append frames to `out` (capability replies), which are written in order.
// The common case costs one write (the frame fits in the pipe: written before
// any poll), one blocking poll and one read of fd 1 (issue 19), plus the read
// of fd 2 that finish() makes; the read buffer is the sandbox's own.
template <typename OnLine, typename OnWake>
Sandbox::Ended Sandbox::exchange(std::string_view first, Deadline deadline, const CancelToken& cancel,
                                 OnLine&& on_line, LogBook& logs, OnWake&& on_wake) {
  char* const chunk = chunk_.get();
  std::string out;     // frames due after `first`
  std::size_t sent = 0;  // bytes of `out` written
  bool stdin_open = true;
  auto want_write = [&] { return stdin_open && (!first.empty() || sent < out.size()); };

  // Writes what is due until the pipe is full; false when fd 0 is gone (EPIPE).
  auto flush = [&]() -> bool {
    while (want_write()) {
      const std::string_view due = !first.empty() ? first : std::string_view(out).substr(sent);
      const ssize_t n = write_no_sigpipe(child_->stdin_fd(), due.data(), due.size());
      if (n > 0) {
        if (!first.empty()) {
          first.remove_prefix(static_cast<std::size_t>(n));
        } else if ((sent += static_cast<std::size_t>(n)) == out.size()) {
          out.clear();  // all written: later replies start a fresh buffer
          sent = 0;
        }
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return true;  // the pipe is full: poll for POLLOUT
      stdin_open = false;
      return false;
    }
    return true;
  };
  // EPIPE: frames for the child can no longer arrive. If it exited, the
  // pidfd says so; if it only closed fd 0, it broke the protocol.
  auto input_closed = [&]() -> std::optional<Ended> {
    pollfd gone{child_->pidfd(), POLLIN, 0};
    if (child_->pidfd() < 0 || ::poll(&gone, 1, 50) == 0) {
      return Ended{End::violation, "the sandbox closed its protocol input (fd 0)"};
    }
    return std::nullopt;
  };

  // Hands every complete line to on_line; nullopt when the exchange goes on.
  std::size_t last_line = 0;  // bytes of the last line handed on, '\n' included
  auto take_lines = [&]() -> std::optional<Ended> {
    while (auto line = reader_.next()) {
      last_line = line->size() + 1;
      auto taken = on_line(std::move(*line), out);
      if (!taken) return Ended{End::violation, std::move(taken.error().message)};
      if (*taken) return Ended{End::done, {}};
    }
    return std::nullopt;
  };
  // Reads what the child wrote to fd 1 until it would block, at most `rounds` reads.
  std::size_t last_read = 0;  // bytes of the last read of fd 1
  auto read_stdout = [&](int rounds) -> std::optional<Ended> {
    for (int i = 0; i < rounds; ++i) {
      const ssize_t n = ::read(child_->stdout_fd(), chunk, kChunk);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return std::nullopt;
      if (n <= 0) return Ended{End::closed, {}};
      last_read = static_cast<std::size_t>(n);
      if (!reader_.feed(std::string_view(chunk, static_cast<std::size_t>(n)))) {
        return Ended{End::violation, fmt::format("the sandbox sent a line longer than {} bytes", max_frame_bytes_)};
      }
      if (auto ended = take_lines()) return ended;
    }
    return std::nullopt;
  };
  auto read_stderr = [&](int rounds) {
    for (int i = 0; i < rounds && stderr_open_; ++i) {
      const ssize_t n = ::read(child_->stderr_fd(), chunk, kChunk);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;
      if (n <= 0) {
        stderr_open_ = false;
        return;
      }
      logs.add_stderr(std::string_view(chunk, static_cast<std::size_t>(n)));
    }
  };
  const std::size_t first_size = first.size();
  auto finish = [&](Ended ended, bool stderr_seen = false) {
    if (!stderr_seen) read_stderr(16);  // what the child wrote to fd 2 just before its last frame
    logs.flush_stderr();
    ended.first_sent = first_size - first.size();
    return ended;
  };

  const CancelToken::Watch watch(cancel, wake_.get());  // the flag is looked at below, after this
  const int cancel_fd = watch.registered() ? -1 : cancel.fd();  // another exchange watches the token
  if (auto ended = take_lines()) return finish(std::move(*ended));  // lines held from before
  if (!flush()) {
    if (auto ended = input_closed()) return finish(std::move(*ended));
  }
  for (;;) {
    if (cancel.cancelled()) return finish(Ended{End::cancelled, {}});
    const auto now = Clock::now();
    if (now >= deadline) return finish(Ended{End::timeout, {}});
    pollfd fds[6];
    int count = 0;
    const int out_at = count;  // fd 1 before fd 2: see read_stderr in finish()
    fds[count++] = {child_->stdout_fd(), POLLIN, 0};
    const int err_at = stderr_open_ ? count : -1;
    if (err_at >= 0) fds[count++] = {child_->stderr_fd(), POLLIN, 0};
    const int in_at = want_write() ? count : -1;
    if (in_at >= 0) fds[count++] = {child_->stdin_fd(), POLLOUT, 0};
    const int pid_at = child_->pidfd() >= 0 ? count : -1;
    if (pid_at >= 0) fds[count++] = {child_->pidfd(), POLLIN, 0};
    const int wake_at = count;  // a cancel (checked above) or a finished request
    fds[count++] = {wake_.get(), POLLIN, 0};
    if (cancel_fd >= 0) fds[count++] = {cancel_fd, POLLIN, 0};
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
    const int ready = ::poll(fds, static_cast<nfds_t>(count), static_cast<int>(std::min<long long>(left, INT_MAX)));
    if (ready < 0) {
      if (errno == EINTR) continue;
      return finish(Ended{End::closed, {}});
    }
    if (in_at >= 0 && fds[in_at].revents != 0 && !flush()) {
      if (auto ended = input_closed()) return finish(std::move(*ended));
    }
    if (fds[wake_at].revents != 0) {
      std::uint64_t wakes = 0;
      [[maybe_unused]] const ssize_t n = ::read(wake_.get(), &wakes, sizeof wakes);
      on_wake(out);  // may append frames to `out`
    }
    const bool stderr_quiet = err_at < 0 || fds[err_at].revents == 0;
    if (!stderr_quiet) read_stderr(1);
    if (fds[out_at].revents != 0) {
      const bool held = reader_.holds_bytes();
      if (auto ended = read_stdout(1)) {
        // The terminal frame alone in one read, with nothing held before it,
        // written in one piece (at most PIPE_BUF bytes: atomic): it was all in
        // the pipe when this poll looked, so everything the child wrote to
        // fd 2 before it was too, and this poll found fd 2 empty. Reading
        // fd 2 again would only answer EAGAIN (issue 19: a syscall per call).
        const bool stderr_seen = stderr_quiet && ended->how == End::done && !held && last_read == last_line &&
                                 last_read <= PIPE_BUF;
        return finish(std::move(*ended), stderr_seen);
      }
    }
    if (pid_at >= 0 && fds[pid_at].revents != 0) {
      // The child exited: take whatever it wrote before, then it is closed.
      if (auto ended = read_stdout(INT_MAX)) return finish(std::move(*ended));
      return finish(Ended{End::closed, {}});
    }
    if (!flush()) {  // replies on_line or on_extra appended go out before the next wait
      if (auto ended = input_closed()) return finish(std::move(*ended));
    }
  }
}

std::string Sandbox::closed_message(std::string_view during) {
  const int status = child_->reap();
  if (auto reason = killed_reason()) {
    return fmt::format("the sandbox was destroyed {} ({})", during, *reason);
  }
  return fmt::format("the sandbox {} {}", describe_wait_status(status), during);
}

Sandbox::Loaded Sandbox::load(std::string_view load_frame, Deadline deadline, const CancelToken& cancel,
                              std::string_view then) {
  Loaded loaded;
  std::string frames;
  carried_stderr_.clear();
  if (!then.empty()) {
    frames.reserve(load_frame.size() + then.size());
    frames.append(load_frame).append(then);
  }
  LogBook logs(max_log_bytes_);
  // With a pipelined call, fd 2 may already hold what that call wrote: every
  // byte read here is kept for it too, and it gets them all if the load
  // succeeds (a failed load keeps them as its own logs, as before).
  if (!then.empty()) logs.raw_stderr = &carried_stderr_;
  auto on_line = [&](std::string line, std::string&) -> std::expected<bool, protocol::Violation> {
    auto frame = protocol::parse_load_reply(line);
    if (!frame) return std::unexpected(std::move(frame.error()));
    if (frame->kind == protocol::Frame::Kind::load_error) {
      loaded.status = Status::tool_error;
      loaded.error = "the tool code did not load: " + frame->text;
    }
    return true;
  };
  Ended ended = exchange(then.empty() ? load_frame : std::string_view(frames), deadline, cancel, on_line, logs,
                         [](std::string&) {});
  loaded.logs = std::move(logs.entries);
  if (ended.how == End::done && ended.first_sent < load_frame.size()) {
    ended = Ended{End::violation, "the sandbox answered before it had read its load frame"};
  }
  loaded.call_sent = ended.first_sent > load_frame.size() ? ended.first_sent - load_frame.size() : 0;
  switch (ended.how) {
    case End::done:
      loaded_.store(true, std::memory_order_relaxed);
      break;
    case End::cancelled:
      kill("cancelled");
      loaded.status = Status::cancelled;
      loaded.error = "the call was cancelled while the tool code loaded";
      break;
    case End::timeout:
      kill("timeout");
      loaded.status = Status::timeout;
      loaded.error = "loading the tool code ran past the call's timeout";
      break;
    case End::violation:
      kill("protocol_error");
      loaded.status = Status::protocol_error;
      loaded.error = "protocol error while loading the tool code: " + ended.message;
      break;
    case End::closed: {
      loaded.status = Status::crashed;
      loaded.error = closed_message("while loading the tool code");
      const int status = child_->reap();
      if (!killed_reason() && WIFEXITED(status)) {
        const std::string_view step = exec_step_name(WEXITSTATUS(status));
        if (step == "execve") {
          loaded.machinery = Error{Errc::runtime_missing, "the Node executable could not be started (execve failed)",
                                   {}};
        } else if (!step.empty()) {
          loaded.machinery =
              Error{Errc::internal, fmt::format("the sandbox could not be set up: {} failed", step), {}};
        }
      }
      break;
    }
  }
  return loaded;
}

CallOutcome Sandbox::call(std::uint64_t id, std::string_view call_frame, Deadline deadline, Capabilities* capabilities,
                          const CancelToken& cancel, std::string_view attribution,
                          const std::function<void(const LogEntry&)>& on_log,
                          const std::function<void(double, double, std::string_view)>& on_progress) {
  CallOutcome outcome;
  LogBook logs(max_log_bytes_);
  logs.sink = &on_log;
  if (!carried_stderr_.empty()) {  // fd 2 as read while this call's load frame was answered
    logs.add_stderr(carried_stderr_);
    carried_stderr_.clear();
  }
  CapabilityRunner runner(revision_, capabilities, deadline, wake_.get());
  std::size_t progress_frames = 0;
  auto on_line = [&](std::string line, std::string& out) -> std::expected<bool, protocol::Violation> {
    auto frame = protocol::parse_call_reply(line, id);
    if (!frame) return std::unexpected(std::move(frame.error()));
    switch (frame->kind) {
      case protocol::Frame::Kind::cap: {
        if (frame->req != last_req_ + 1) {
          return std::unexpected(protocol::Violation{
              fmt::format("a \"cap\" frame has request number {} where {} was due", frame->req, last_req_ + 1)});
        }
        last_req_ = frame->req;
        if (frame->call != id) {
          // S2: a context of an ended call of this sandbox (saved, or used from
          // a timer) is refused and recorded under that call; a call id this
          // sandbox never ran is a forged frame.
          auto past = std::find_if(past_calls_.begin(), past_calls_.end(),
                                   [&](const auto& p) { return p.first == frame->call; });
          if (past == past_calls_.end()) {
            return std::unexpected(protocol::Violation{
                fmt::format("a \"cap\" frame names call {}, which this sandbox is not running and never ran",
                            frame->call)});
          }
          runner.enqueue_stale(frame->req, frame->op, std::move(frame->value), frame->call, past->second, out,
                               max_frame_bytes_);
          return false;
        }
        runner.enqueue(frame->req, frame->op, std::move(frame->value), out, max_frame_bytes_);
        return false;
      }
      case protocol::Frame::Kind::abort: {
        if (frame->req > last_req_) {
          return std::unexpected(protocol::Violation{
              fmt::format("an \"abort\" frame names request {}, which was never made", frame->req)});
        }
        if (frame->call == id) runner.abort(frame->req, out, max_frame_bytes_);
        return false;  // an abort of an ended call's request: that request ended with its call
      }
      case protocol::Frame::Kind::log:
        logs.add(std::move(frame->level), std::move(frame->text));
        return false;
      case protocol::Frame::Kind::progress:
        if (on_progress && progress_frames++ < kMaxProgressFrames) {
          frame->text.resize(utf8_prefix(frame->text, kMaxProgressMessageBytes));
          on_progress(frame->progress, frame->total.value_or(std::nan("")), frame->text);
        }
        return false;
      case protocol::Frame::Kind::result:
        outcome.status = Status::ok;
        outcome.value = std::move(frame->value);
        return true;
      default:  // error: parse_call_reply yields nothing else
        outcome.status = Status::tool_error;
        outcome.error = frame->name + ": " + frame->text;
        return true;
    }
  };
  auto on_done = [&](std::string& out) { runner.collect(out, max_frame_bytes_); };
  Ended ended = exchange(call_frame, deadline, cancel, on_line, logs, on_done);
  switch (ended.how) {
    case End::done:
      break;
    case End::cancelled:
      kill("cancelled");
      outcome.status = Status::cancelled;
      outcome.error = "the call was cancelled";
      break;
    case End::timeout:
      kill("timeout");
      outcome.status = Status::timeout;
      outcome.error = "the call ran past its timeout";
      break;
    case End::violation:
      kill("protocol_error");
      outcome.status = Status::protocol_error;
      outcome.error = "protocol error: " + ended.message;
      break;
    case End::closed:
      outcome.status = Status::crashed;
      outcome.error = closed_message("during the call");
      break;
  }
  // Whatever the host still does for this call stops now (its request is
  // cancelled, queued ones dropped); nothing outlives the call.
  runner.stop();
  past_calls_.emplace_back(id, std::string(attribution));
  if (past_calls_.size() > kPastCalls) past_calls_.pop_front();
  outcome.logs = std::move(logs.entries);
  outcome.logs_truncated = logs.truncated;
  return outcome;
}

std::optional<std::string> Sandbox::idle_check() {
  if (killed_reason()) return std::string("terminated");
  if (reader_.overflowed() || reader_.holds_bytes()) return std::string("protocol_error");
  // One poll that does not wait: nothing ready is the common case (issue 19).
  pollfd fds[3];
  nfds_t count = 0;
  const int pid_at = child_->pidfd() >= 0 ? static_cast<int>(count) : -1;
  if (pid_at >= 0) fds[count++] = {child_->pidfd(), POLLIN, 0};
  const int out_at = static_cast<int>(count);
  fds[count++] = {child_->stdout_fd(), POLLIN, 0};
  const int err_at = stderr_open_ ? static_cast<int>(count) : -1;
  if (err_at >= 0) fds[count++] = {child_->stderr_fd(), POLLIN, 0};
  int ready;
  do {
    ready = ::poll(fds, count, 0);
  } while (ready < 0 && errno == EINTR);
  if (ready < 0) return std::string("crashed");
  if (ready == 0) return std::nullopt;
  if (pid_at >= 0 && fds[pid_at].revents != 0) return std::string("crashed");
  if (fds[out_at].revents != 0) {
    char byte;
    ssize_t n;
    do {
      n = ::read(child_->stdout_fd(), &byte, 1);
    } while (n < 0 && errno == EINTR);
    if (n > 0) return std::string("protocol_error");
    if (n == 0 || errno != EAGAIN) return std::string("crashed");
  }
  if (err_at >= 0 && fds[err_at].revents != 0) {
    for (int i = 0; i < 16 && stderr_open_; ++i) {  // stderr between calls belongs to no call
      const ssize_t n = ::read(child_->stderr_fd(), chunk_.get(), kChunk);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) break;
      if (n == 0) stderr_open_ = false;
    }
  }
  return std::nullopt;
}

}  // namespace taskyon::sandbox
