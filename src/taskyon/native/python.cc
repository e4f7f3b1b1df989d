// executePython: detection (P1), the approval (P2), host mode, and the
// collection of a run's output. Strict mode is in python_strict.cc.
#include "taskyon/native/python.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "taskyon/base/sigpipe.h"
#include "taskyon/hardening/probe.h"
#include "taskyon/hardening/runtime_files.h"
#include "taskyon/modules/module.h"
#include "taskyon/native/python_internal.h"
#include "taskyon/sandbox/workdir.h"

extern char** environ;

namespace taskyon::native::python {

using json::Value;

namespace {

// Valid UTF-8 (RFC 3629 §3): every ill-formed sequence becomes U+FFFD.
std::string to_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  std::size_t i = 0;
  while (i < bytes.size()) {
    const auto b0 = static_cast<unsigned char>(bytes[i]);
    std::size_t len = b0 < 0x80 ? 1 : (b0 >> 5) == 0x6 ? 2 : (b0 >> 4) == 0xE ? 3 : (b0 >> 3) == 0x1E ? 4 : 0;
    bool ok = len != 0 && i + len <= bytes.size();
    for (std::size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(bytes[i + k]) & 0xC0) == 0x80;
    if (ok && len > 1) {
      std::uint32_t cp = b0 & (0xFF >> (len + 1));
      for (std::size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(bytes[i + k]) & 0x3F);
      const std::uint32_t min = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
      ok = cp >= min && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    }
    if (ok) {
      out.append(bytes.substr(i, len));
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const std::size_t end = std::min(text.find('\n'), text.size());
    out.emplace_back(text.substr(0, end));
    text.remove_prefix(std::min(end + 1, text.size()));
  }
  return out;
}

}  // namespace

namespace detail {
namespace {

constexpr std::chrono::milliseconds kDetectTimeout{10000};
constexpr std::size_t kDetectOutputBytes = 64 * 1024;

// A pipe whose ends are O_CLOEXEC and numbered 3 or above (so dup2 onto 0/1/2
// in the child never collides with another end).
bool make_pipe(sandbox::Fd& read_end, sandbox::Fd& write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return false;
  sandbox::Fd ends[2] = {sandbox::Fd(fds[0]), sandbox::Fd(fds[1])};
  for (sandbox::Fd& end : ends) {
    if (end.get() < 3) {
      const int moved = ::fcntl(end.get(), F_DUPFD_CLOEXEC, 3);
      if (moved < 0) return false;
      end.reset(moved);
    }
  }
  read_end = std::move(ends[0]);
  write_end = std::move(ends[1]);
  return true;
}

bool set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

Result<std::unique_ptr<sandbox::Child>> spawn_plain(const std::vector<std::string>& argv_in,
                                                    const std::vector<std::string>& env_in,
                                                    const std::string& workdir, bool no_new_privs,
                                                    const Staged* staged) {
  std::vector<std::string> argv_strings = argv_in, env_strings = env_in;
  std::vector<char*> argv = pointers(argv_strings), envp = pointers(env_strings);
  sandbox::Fd in_r, in_w, out_r, out_w, err_r, err_w;
  if (!make_pipe(in_r, in_w) || !make_pipe(out_r, out_w) || !make_pipe(err_r, err_w))
    return fail(Errc::internal, fmt::format("cannot create pipes: {}", std::strerror(errno)));
  sigset_t empty;
  sigemptyset(&empty);
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  const pid_t host = ::getpid();

  const pid_t pid = ::fork();
  if (pid < 0) return fail(Errc::internal, fmt::format("cannot fork: {}", std::strerror(errno)));
  if (pid == 0) {  // syscalls only until exec
    ::sigprocmask(SIG_SETMASK, &empty, nullptr);
    for (int sig = 1; sig < 32; ++sig)
      if (sig != SIGKILL && sig != SIGSTOP) ::sigaction(sig, &default_action, nullptr);
    if (::setsid() < 0) ::_exit(static_cast<int>(hardening::Step::setsid));
    if (::dup2(in_r.get(), 0) != 0 || ::dup2(out_w.get(), 1) != 1 || ::dup2(err_w.get(), 2) != 2)
      ::_exit(static_cast<int>(hardening::Step::dup_stdio));
    if (::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) ::_exit(static_cast<int>(hardening::Step::close_fds));
    if (staged) {
      // Root's authority builds the root; then the ids drop (which also
      // resets the parent-death signal: it is armed below).
      if (::syscall(SYS_unshare, CLONE_NEWNS) != 0 || !hardening::mounts::build_root(staged->root))
        ::_exit(static_cast<int>(hardening::Step::mount_root));
      if (!hardening::namespaces::drop_ids(staged->ids)) ::_exit(static_cast<int>(hardening::Step::drop_ids));
    } else if (!workdir.empty() && ::chdir(workdir.c_str()) != 0) {
      ::_exit(static_cast<int>(hardening::Step::chdir));
    }
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) ::_exit(static_cast<int>(hardening::Step::pdeathsig));
    if (::getppid() != host) ::_exit(static_cast<int>(hardening::Step::parent_gone));
    if (no_new_privs && ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
      ::_exit(static_cast<int>(hardening::Step::no_new_privs));
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(static_cast<int>(hardening::Step::execve));
  }
  in_r.reset();
  out_w.reset();
  err_w.reset();
  sandbox::Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (pidfd) ::fcntl(pidfd.get(), F_SETFD, FD_CLOEXEC);
  auto child = std::make_unique<sandbox::Child>(pid, std::move(pidfd), std::move(in_w), std::move(out_r),
                                                std::move(err_r));
  if (!set_nonblocking(child->stdin_fd()) || !set_nonblocking(child->stdout_fd()) ||
      !set_nonblocking(child->stderr_fd()))
    return fail(Errc::internal, fmt::format("cannot configure pipes: {}", std::strerror(errno)));
  return child;
}

Collected collect(sandbox::Child& child, std::string_view input, std::chrono::milliseconds timeout,
                  std::size_t max_bytes) {
  Collected c;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int in = child.stdin_fd();
  bool out_open = true, err_open = true, exited = false;
  std::size_t written = 0;
  bool in_open = true;
  auto close_stdin = [&] {
    if (!in_open) return;
    in_open = false;
    // The Child owns the descriptor: replacing it with /dev/null closes the
    // pipe's write end, so the child reads EOF after the program text.
    const int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (devnull >= 0) {
      ::dup3(devnull, in, O_CLOEXEC);  // the pipe's write end is closed: the child reads EOF
      ::close(devnull);
    }
  };
  if (input.empty()) close_stdin();
  char buf[65536];
  auto drain = [&](int fd, std::string& into, bool& open) {
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n > 0) {
        const std::size_t room = max_bytes > into.size() ? max_bytes - into.size() : 0;
        into.append(buf, std::min(room, static_cast<std::size_t>(n)));
        if (static_cast<std::size_t>(n) > room) {
          c.truncated = true;
          return;
        }
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n == 0) open = false;
      return;  // EOF or EAGAIN
    }
  };
  while ((out_open || err_open) && !exited && !c.truncated) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      c.timed_out = true;
      break;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
    pollfd fds[4];
    nfds_t n = 0;
    int i_in = -1, i_out = -1, i_err = -1, i_pid = -1;
    if (in_open) fds[i_in = static_cast<int>(n++)] = {in, POLLOUT, 0};
    if (out_open) fds[i_out = static_cast<int>(n++)] = {child.stdout_fd(), POLLIN, 0};
    if (err_open) fds[i_err = static_cast<int>(n++)] = {child.stderr_fd(), POLLIN, 0};
    if (child.pidfd() >= 0) fds[i_pid = static_cast<int>(n++)] = {child.pidfd(), POLLIN, 0};
    const int ready = ::poll(fds, n, static_cast<int>(std::min<long long>(left + 1, INT_MAX)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    if (i_in >= 0 && fds[i_in].revents != 0) {
      const ssize_t w = write_no_sigpipe(in, input.data() + written, input.size() - written);
      if (w > 0) written += static_cast<std::size_t>(w);
      if ((w < 0 && errno != EAGAIN && errno != EINTR) || written == input.size()) close_stdin();
    }
    if (i_out >= 0 && fds[i_out].revents != 0) drain(child.stdout_fd(), c.out, out_open);
    if (i_err >= 0 && fds[i_err].revents != 0) drain(child.stderr_fd(), c.err, err_open);
    if (i_pid >= 0 && fds[i_pid].revents != 0) exited = true;
  }
  if (exited && !c.truncated) {  // what it wrote just before it exited
    if (out_open) drain(child.stdout_fd(), c.out, out_open);
    if (err_open && !c.truncated) drain(child.stderr_fd(), c.err, err_open);
  }
  c.wait_status = child.reap();  // SIGKILL to the group first: nothing it started outlives the call
  return c;
}

Result<ScratchDir> ScratchDir::make(std::string_view prefix) {
  // sandbox/workdir.h: the owner's pid in the name, so a later tycli sweeps it if this one is killed.
  auto made = sandbox::make_owned_directory(prefix);
  if (!made) {
    auto e = made.error();
    e.code = Errc::io;
    return std::unexpected(std::move(e));
  }
  return ScratchDir(std::move(*made));
}

ScratchDir::~ScratchDir() {
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string first_line(std::string_view text) {
  const auto lines = lines_of(text);
  return lines.empty() ? std::string() : lines.front();
}

std::string find_on_path(std::string_view path_env, std::string_view name) {
  while (true) {
    const std::size_t colon = path_env.find(':');
    const std::string_view dir = path_env.substr(0, colon);
    if (!dir.empty() && dir.front() == '/') {
      std::string candidate = fmt::format("{}/{}", dir, name);
      struct stat st {};
      if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0)
        return candidate;
    }
    if (colon == std::string_view::npos) return {};
    path_env.remove_prefix(colon + 1);
  }
}

std::vector<std::string> python_argv(const Interpreter& python, PythonIsolation isolation,
                                     const std::vector<std::string>& sys_path) {
  // -I: isolated (no PYTHON* variables, no user site, no script or cwd directory on sys.path);
  // -B: writes no bytecode; -u: unbuffered, so output before a kill is kept; -: the program is stdin.
  std::vector<std::string> argv = isolation == PythonIsolation::strict
                                      ? std::vector<std::string>{python.executable, "-I", "-S", "-B", "-u", "-"}
                                      : std::vector<std::string>{python.executable, "-I", "-B", "-u", "-"};
  if (!sys_path.empty()) {  // -I ignores PYTHONPATH: the prelude puts the wheels' directories on sys.path
    argv.back() = "-c";
    argv.emplace_back(kSysPathPrelude);
    argv.insert(argv.end(), sys_path.begin(), sys_path.end());
  }
  return argv;
}

}  // namespace detail

namespace {

using detail::Collected;

std::vector<std::string> current_environment() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  return env;
}

// Writes `bytes` to a new file `path` (mode 0644 whatever the umask). The
// error's message is strerror's only: the caller names the file (the
// host's scratch path is nobody's business, and the tool sees this error).
Result<void> write_file(const std::string& path, std::string_view bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return fail(Errc::io, std::strerror(errno));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n < 0 ? errno : EIO;
      ::close(fd);
      return fail(Errc::io, std::strerror(error));
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fchmod(fd, 0644) != 0 || ::close(fd) != 0) return fail(Errc::io, std::strerror(errno));
  return {};
}

// A directory `path` (mode 0755 whatever the umask): readable by the
// sandbox's uid, whose root binds it. strerror's message only, as above.
Result<void> make_dir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) return fail(Errc::io, std::strerror(errno));
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return fail(Errc::io, std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) return fail(Errc::io, std::strerror(ENOTDIR));
  if (::chmod(path.c_str(), 0755) != 0) return fail(Errc::io, std::strerror(errno));
  return {};
}

// The wheels' files under <scratch>/wheels/<N>/ (N: 0, 1, … in NAME order);
// those directories, for sys.path. Each path is checked again by the rule
// `module add` and store::code_modules apply (modules::check_wheel_path),
// and an error names the wheel and its file, never the scratch directory.
Result<std::vector<std::string>> unpack_wheels(const Value& wheels, const std::string& scratch) {
  std::vector<std::string> dirs;
  if (!wheels.is_object() || wheels.empty()) return dirs;
  const std::string top = scratch + "/wheels";
  const auto unpacking = [](const std::string& name, const std::string& path, const Error& e) {
    return fail(Errc::io, fmt::format("cannot unpack the wheel {}{}{}: {}", name, path.empty() ? "" : "'s file ", path,
                                      e.message),
                "/modules/" + name);
  };
  if (auto made = make_dir(top); !made)
    return fail(Errc::io, "cannot make the directory the wheels are unpacked to: " + made.error().message);
  for (const auto& [name, wheel] : wheels.items()) {
    const std::string dir = top + "/" + std::to_string(dirs.size());
    if (auto made = make_dir(dir); !made) return unpacking(name, "", made.error());
    if (!wheel.is_object() || !wheel.contains("files") || !wheel.at("files").is_object())
      return fail(Errc::internal, "a wheel without files", name);
    for (const auto& [path, text] : wheel.at("files").items()) {
      if (!text.is_string()) return fail(Errc::internal, "a wheel's file is not text", name + "/" + path);
      if (auto ok = modules::check_wheel_path(path); !ok)
        return fail(Errc::bad_usage, fmt::format("the wheel {} cannot be unpacked: {}", name, ok.error().message),
                    "/modules/" + name);
      for (std::size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1))
        if (auto made = make_dir(dir + "/" + path.substr(0, slash)); !made)
          return unpacking(name, path.substr(0, slash) + "/", made.error());
      if (auto written = write_file(dir + "/" + path, text.get_ref<const std::string&>()); !written)
        return unpacking(name, path, written.error());
    }
    dirs.push_back(dir);
  }
  return dirs;
}

int exit_code_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return -1;
}

}  // namespace

Result<Interpreter> detect_python(std::string_view path_env) {
  const std::string command = detail::find_on_path(path_env, "python3");
  if (command.empty()) return fail(Errc::runtime_missing, "no executable python3 on PATH");
  constexpr const char* kAsk =
      "import sys\nprint(sys.version.split()[0])\nprint(sys.executable)\nfor p in sys.path: print(p)\n";
  auto child = detail::spawn_plain({command, "-I", "-S", "-c", kAsk}, current_environment(), "");
  if (!child) return std::unexpected(child.error());
  const Collected c = detail::collect(**child, "", detail::kDetectTimeout, detail::kDetectOutputBytes);
  if (c.timed_out || !WIFEXITED(c.wait_status) || WEXITSTATUS(c.wait_status) != 0) {
    const auto first = lines_of(c.err);
    return fail(Errc::runtime_missing,
                fmt::format("{} did not answer `python3 -I -S -c …` ({}{}{})", command,
                            c.timed_out ? "no answer within 10 s" : sandbox::describe_wait_status(c.wait_status),
                            first.empty() ? "" : ": ", first.empty() ? "" : first.front()),
                command);
  }
  const auto lines = lines_of(c.out);
  if (lines.size() < 2 || !lines[0].starts_with("3.") || lines[1].empty() || lines[1].front() != '/')
    return fail(Errc::runtime_missing, fmt::format("{} is not a Python 3 interpreter", command), command);
  char real[PATH_MAX];
  if (::realpath(lines[1].c_str(), real) == nullptr)
    return fail(Errc::runtime_missing, fmt::format("{} names {} as its executable, which does not resolve: {}",
                                                   command, lines[1], std::strerror(errno)),
                command);
  if (auto elf = hardening::elf_interpreter(real); !elf)
    return fail(Errc::runtime_missing, fmt::format("{} runs {}, which is not an ELF executable", command, real),
                command);
  Interpreter py{command, real, lines[0], {}};
  for (std::size_t i = 2; i < lines.size(); ++i) {
    struct stat st {};
    if (!lines[i].empty() && lines[i].front() == '/' && ::stat(lines[i].c_str(), &st) == 0) py.path.push_back(lines[i]);
  }
  return py;
}

const Result<Interpreter>& interpreter() {
  static const Result<Interpreter> found = [] {
    const char* path = std::getenv("PATH");
    return detect_python(path ? path : "");
  }();
  return found;
}

std::string approval_question(PythonIsolation isolation) {
  if (isolation == PythonIsolation::strict)
    return "Run Python code in the strict sandbox for this session? It gets no network, cannot write files and "
           "reads only the Python installation. [y/N]";
  return "Run Python code with your own OS permissions for this session? This code can read and change your "
         "files, use your network and run programs as you (you chose --python-isolation host; the default, "
         "strict, contains it). [y/N]";
}

Result<Value> execute(const Interpreter& python, std::string_view code, PythonIsolation isolation,
                      std::chrono::milliseconds timeout, const std::string& helper, const Value* wheels) {
  auto workdir = detail::ScratchDir::make(sandbox::kPythonWorkdirPrefix);
  if (!workdir) return std::unexpected(workdir.error());
  // The wheels go to a scratch directory of their own: without bubblewrap
  // the sandbox's root is a tmpfs mounted on `workdir`, which would hide
  // anything below it from the binds that build that root.
  std::optional<detail::ScratchDir> wheel_dir;
  Result<std::vector<std::string>> sys_path;
  if (wheels != nullptr && wheels->is_object() && !wheels->empty()) {
    auto made = detail::ScratchDir::make(sandbox::kPythonWorkdirPrefix);
    if (!made) return std::unexpected(made.error());
    wheel_dir.emplace(std::move(*made));
    sys_path = unpack_wheels(*wheels, wheel_dir->path());
    if (!sys_path) return std::unexpected(sys_path.error());
  }
  sandbox::Launcher launcher;  // declared before the child: it must outlive it
  Result<std::unique_ptr<sandbox::Child>> child =
      isolation == PythonIsolation::strict
          ? detail::spawn_strict(python, helper, workdir->path(), launcher, *sys_path)
          : detail::spawn_plain(detail::python_argv(python, isolation, *sys_path),
                                {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"}, workdir->path());
  if (!child) return std::unexpected(child.error());
  const Collected c = detail::collect(**child, code, timeout, kMaxOutputBytes);
  child->reset();
  if (c.timed_out)
    return fail(Errc::bad_usage,
                fmt::format("timeout: the Python code ran past its {} ms limit; its process group was killed",
                            timeout.count()));
  const int exit_code = exit_code_of(c.wait_status);
  if (WIFEXITED(c.wait_status)) {
    if (auto step = hardening::step_name(exit_code); !step.empty())
      return fail(Errc::internal, fmt::format("the Python process could not start: {} failed (exit code {}){}{}",
                                              step, exit_code, c.err.empty() ? "" : ": ",
                                              detail::first_line(c.err)));
  }
  return Value{{"stdout", to_utf8(c.out)},
               {"stderr", to_utf8(c.err)},
               {"exitCode", exit_code},
               {"truncated", c.truncated},
               {"isolation", isolation_name(isolation)}};
}

Session::Settings session_settings(bool approve_python, std::string_view isolation) {
  Session::Settings s;
  if (approve_python) s.preapproved.insert(std::string(kPythonId));
  s.ask = ask_on_terminal();
  s.python_isolation = isolation == "host" ? PythonIsolation::host : PythonIsolation::strict;
  s.warn = [](std::string_view line) { std::fprintf(stderr, "tycli: warning: %.*s\n", static_cast<int>(line.size()), line.data()); };
  return s;
}

std::string host_mode_warning(bool preapproved) {
  return fmt::format("{} runs with --python-isolation host: your own OS permissions, not a sandbox (the code can read "
                     "and change your files, use your network and run programs as you){}",
                     kPythonId, preapproved ? "; approved for this process by --approve-python, without a prompt" : "");
}

NativeFunction function() {
  Value parameters = {
      {"type", "object"},
      {"properties",
       {{"code",
         {{"type", "string"},
          {"description", "A complete Python 3 program; print what you want to see (stdout and stderr are returned)"}}}}},
      {"required", {"code"}},
      {"additionalProperties", false}};
  return {std::string(kPythonId),
          "Runs a Python 3 program in the local python3 interpreter (offered only where one is installed; asks the "
          "user before its first run in a session). By default in the strict sandbox: no network, no writes, reads "
          "only the Python installation; it refuses to run where a layer of that sandbox is missing. In host mode "
          "(an explicit choice of the user) it has the user's authority: it can read and change the user's files, "
          "use the network and run programs as the user. Returns {stdout, stderr, exitCode, truncated, isolation}.",
          std::move(parameters), [](const Value& args, const Context& context) -> Result<Value> {
            const auto& found = interpreter();
            if (!found) return std::unexpected(found.error());
            const Value& code = args.contains("code") ? args.at("code") : Value();
            if (!code.is_string()) return fail(Errc::invalid_arguments, "\"code\" must be a string", "/code");
            const auto& text = code.get_ref<const std::string&>();
            if (text.size() > kMaxCodeBytes)
              return fail(Errc::invalid_arguments,
                          fmt::format("\"code\" has {} bytes; the limit is {}", text.size(), kMaxCodeBytes), "/code");
            if (!context.session)
              return fail(Errc::bad_usage,
                          fmt::format("P2: {} needs your approval before its first run in a session: {}", kPythonId,
                                      kHowToApprove));
            const PythonIsolation isolation = context.session->python_isolation();
            if (isolation == PythonIsolation::strict) {  // never ask for what cannot run
              if (const auto& strict = strict_available(); !strict) return std::unexpected(strict.error());
            }
            if (auto approved = context.session->approve(std::string(kPythonId), approval_question(isolation),
                                                         kHowToApprove);
                !approved)
              return std::unexpected(approved.error());
            if (isolation == PythonIsolation::host)
              context.session->warn_once("python-host",
                                         host_mode_warning(context.session->preapproved(std::string(kPythonId))));
            return execute(*found, text, isolation, context.timeout, context.session->helper(),
                           context.modules ? context.modules.get() : nullptr);
          }};
}

}  // namespace taskyon::native::python
