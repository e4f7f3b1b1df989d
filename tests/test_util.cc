#include "test_util.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace taskyon::testing {

TempDir::TempDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/taskyon-test.XXXXXX";
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string TempDir::write(const std::string& name, const std::string& text) const {
  const auto p = path_ / name;
  std::ofstream(p, std::ios::binary) << text;
  return p.string();
}

namespace {

// fork + execve of tycli with the minimal environment; out/err are dup'ed onto 1/2.
int start(std::vector<std::string> argv_s, const std::filesystem::path& home, int out, int err,
          const Launch& launch = {}) {
  std::filesystem::create_directories(home / "tmp");
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::string home_env = "TASKYON_HOME=" + home.string();
  std::string tmp_env = "TMPDIR=" + (home / "tmp").string();
  const std::string path = !launch.path.empty() ? launch.path
                           : std::getenv("PATH") ? std::string(std::getenv("PATH"))
                                                 : std::string("/usr/bin:/bin");
  std::string path_env = "PATH=" + (launch.path_prefix.empty() ? "" : launch.path_prefix + ":") + path;
  std::vector<char*> envp = {home_env.data(), tmp_env.data(), path_env.data(), nullptr};
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    const int devnull = open("/dev/null", O_RDWR);
    dup2(devnull, 0);
    dup2(out >= 0 ? out : devnull, 1);
    dup2(err >= 0 ? err : devnull, 2);
    if (!launch.cwd.empty() && chdir(launch.cwd.c_str()) != 0) _exit(127);
    execvpe(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  return pid;
}

}  // namespace

int wait_exit(int pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::vector<std::string> tycli_argv(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {TYCLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

int spawn_tycli(const std::vector<std::string>& args, const std::filesystem::path& home, const std::string& log) {
  const int fd = log.empty() ? -1 : open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const int pid = start(tycli_argv(args), home, fd, fd);
  if (fd >= 0) close(fd);
  return pid;
}

int spawn_tycli_fds(const std::vector<std::string>& args, const std::filesystem::path& home, int out, int err) {
  return start(tycli_argv(args), home, out, err);
}

CommandResult run_tycli(const std::vector<std::string>& args, const std::filesystem::path& home) {
  return run_command(tycli_argv(args), home);
}

std::vector<json::Value> json_lines(const std::string& text) {
  std::vector<json::Value> values;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (auto v = json::parse(line)) values.push_back(std::move(*v));
  return values;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

CommandResult run_command(const std::vector<std::string>& argv, const std::filesystem::path& home) {
  return run_command(argv, home, Launch{});
}

int spawn_command(const std::vector<std::string>& argv, const std::filesystem::path& home, const Launch& launch,
                  const std::string& log) {
  const int fd = log.empty() ? -1 : open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const int pid = start(argv, home, fd, fd, launch);
  if (fd >= 0) close(fd);
  return pid;
}

CommandResult run_command(const std::vector<std::string>& argv, const std::filesystem::path& home,
                          const Launch& launch) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  const int pid = start(argv, home, out[1], err[1], launch);
  close(out[1]);
  close(err[1]);
  CommandResult r;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? r.out : r.err).append(buf, static_cast<std::size_t>(n));
      }
    }
  }
  r.exit_code = wait_exit(pid);
  return r;
}

json::Value js_tool(const std::string& name, const std::string& code) {
  return {{"name", name},
          {"description", "test tool " + name},
          {"parameters", {{"type", "object"}, {"properties", {{"input", {{"type", "string"}}}}}}},
          {"execution", "sandboxed-code"},
          {"runtime", "javascript"},
          {"code", code}};
}

std::vector<int> children_of(int parent) {
  std::vector<int> pids;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const auto name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto close = stat.rfind(')');  // the command name may hold spaces and parentheses
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state = 0;
    int ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent && state != 'Z') pids.push_back(std::stoi(name));
  }
  return pids;
}

std::vector<int> processes_in(const std::filesystem::path& dir) {
  std::vector<int> pids;
  const std::string prefix = dir.string();
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const auto name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code ec;
    const auto cwd = std::filesystem::read_symlink(entry.path() / "cwd", ec).string();
    if (!ec && cwd.starts_with(prefix)) pids.push_back(std::stoi(name));
  }
  return pids;
}

std::set<std::string> working_directories_in(const std::filesystem::path& dir) {
  std::set<std::string> cwds;
  for (int pid : processes_in(dir)) {
    std::error_code ec;
    auto cwd = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/cwd", ec);
    if (!ec) cwds.insert(cwd.string());
  }
  return cwds;
}

}  // namespace taskyon::testing
