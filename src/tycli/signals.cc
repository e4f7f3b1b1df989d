#include "signals.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <stdexcept>

namespace tycli {
namespace {

constexpr int kSignals[] = {SIGTERM, SIGINT, SIGHUP};

// One Interruption at a time owns the handlers (a command hosts one pool).
std::atomic<int> g_write_fd{-1};
struct sigaction g_previous[3];

extern "C" void on_signal_handler(int signal) {
  const int saved = errno;
  const unsigned char byte = static_cast<unsigned char>(signal);
  const int fd = g_write_fd.load(std::memory_order_relaxed);
  if (fd >= 0) (void)!::write(fd, &byte, 1);  // non-blocking: a full pipe already holds a signal
  errno = saved;
}

}  // namespace

Interruption::Interruption(std::function<void(int)> on_signal) : on_signal_(std::move(on_signal)) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) throw std::runtime_error("pipe2 failed: " + std::string(std::strerror(errno)));
  read_fd_ = fds[0];
  g_write_fd.store(fds[1]);
  stop_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd_ < 0) throw std::runtime_error("eventfd failed: " + std::string(std::strerror(errno)));
  struct sigaction action {};
  action.sa_handler = on_signal_handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &action, &g_previous[i]);
  watcher_ = std::thread([this] { watch(); });
}

Interruption::~Interruption() {
  for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &g_previous[i], nullptr);
  const std::uint64_t one = 1;
  (void)!::write(stop_fd_, &one, sizeof one);
  if (watcher_.joinable()) watcher_.join();
  const int w = g_write_fd.exchange(-1);
  ::close(w);
  ::close(read_fd_);
  ::close(stop_fd_);
}

void Interruption::watch() {
  for (;;) {
    pollfd fds[2] = {{read_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents) return;
    unsigned char byte = 0;
    while (::read(read_fd_, &byte, 1) == 1) {
      if (signal_.load() == 0) {
        signal_.store(byte);
        on_signal_(byte);
      } else {
        // A second signal while the first is handled: the user insists. The
        // default action ends the process; the next tycli sweeps what is left.
        ::signal(byte, SIG_DFL);
        ::raise(byte);
      }
    }
  }
}

std::string Interruption::name(int signal) {
  switch (signal) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    default: return "signal " + std::to_string(signal);
  }
}

}  // namespace tycli
