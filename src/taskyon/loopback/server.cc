// The loopback server's Node child (loopback.h).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <charconv>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "taskyon/base/spawn.h"
#include "taskyon/loopback/loopback.h"
#include "taskyon/sandbox/sandbox.h"

namespace taskyon::loopback {
namespace {

using Clock = std::chrono::steady_clock;

std::string log_tail(const std::filesystem::path& log) {
  std::ifstream in(log, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  if (text.size() > 600) text = "..." + text.substr(text.size() - 600);
  return text.empty() ? "(server.log is empty)" : text;
}

// The port in the child's first line, {"port":N}.
std::optional<std::uint16_t> parse_port(std::string_view line) {
  const auto at = line.find("\"port\":");
  if (at == std::string_view::npos) return std::nullopt;
  const char* begin = line.data() + at + 7;
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(begin, line.data() + line.size(), value);
  if (ec != std::errc() || end == begin || value == 0 || value > 65535) return std::nullopt;
  return static_cast<std::uint16_t>(value);
}

}  // namespace

Result<std::unique_ptr<HttpsServer>> HttpsServer::start(const ServerOptions& options) {
  auto node = sandbox::find_node(options.node);
  if (!node) return std::unexpected(node.error());
  auto certs = make_certificates(options.dns_name);
  if (!certs) return std::unexpected(certs.error());
  if (auto written = write_certificates(*certs, options.dir); !written) return std::unexpected(written.error());
  const auto script = options.dir / "https_server.js";
  {
    std::ofstream out(script, std::ios::binary | std::ios::trunc);
    out << https_server_js();
    if (!out) return fail(Errc::io, "cannot write the server script", script.string());
  }
  const auto log = options.dir / "server.log";

  int in_pipe[2], out_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0) return fail(Errc::internal, "pipe2 failed");
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    close(in_pipe[0]);
    close(in_pipe[1]);
    return fail(Errc::internal, "pipe2 failed");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_addopen(&actions, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  const std::string cert = (options.dir / "cert.pem").string(), key = (options.dir / "key.pem").string();
  std::vector<char*> argv = {const_cast<char*>(node->c_str()), const_cast<char*>(script.c_str()),
                             const_cast<char*>(cert.c_str()), const_cast<char*>(key.c_str()), nullptr};
  char* envp[] = {nullptr};  // Node needs no environment; proxies and the like stay out
  pid_t pid = -1;
  const SpawnAttributes attr;
  const int rc = posix_spawn(&pid, node->c_str(), &actions, attr.get(), argv.data(), envp);
  posix_spawn_file_actions_destroy(&actions);
  close(in_pipe[0]);
  close(out_pipe[1]);
  if (rc != 0) {
    close(in_pipe[1]);
    close(out_pipe[0]);
    return fail(Errc::internal, fmt::format("cannot start Node: {}", std::strerror(rc)), *node);
  }

  std::unique_ptr<HttpsServer> server(new HttpsServer());
  server->pid_ = pid;
  server->stdin_fd_ = in_pipe[1];
  server->ca_file_ = options.dir / "ca.pem";
  server->dns_name_ = options.dns_name;

  // Read {"port":N}\n, or fail (the destructor kills the child).
  std::string line;
  const auto until = Clock::now() + options.start_timeout;
  while (line.find('\n') == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    pollfd p{out_pipe[0], POLLIN, 0};
    const int ready = left > 0 ? poll(&p, 1, static_cast<int>(left)) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      close(out_pipe[0]);
      return fail(Errc::internal, "the loopback server did not report its port in time: " + log_tail(log));
    }
    char buf[256];
    const ssize_t n = read(out_pipe[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close(out_pipe[0]);
      return fail(Errc::internal, "the loopback server exited before listening: " + log_tail(log));
    }
    line.append(buf, static_cast<std::size_t>(n));
  }
  close(out_pipe[0]);  // the child writes nothing more to stdout
  const auto port = parse_port(line);
  if (!port) return fail(Errc::internal, "the loopback server reported no port: " + line.substr(0, 200));
  server->port_ = *port;
  return server;
}

HttpsServer::~HttpsServer() {
  if (stdin_fd_ >= 0) close(stdin_fd_);
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

std::string HttpsServer::origin() const { return fmt::format("https://127.0.0.1:{}", port_); }
std::string HttpsServer::url(std::string_view path) const { return origin() + std::string(path); }
std::string HttpsServer::named_url(std::string_view path) const {
  return fmt::format("https://{}:{}{}", dns_name_, port_, path);
}

}  // namespace taskyon::loopback
