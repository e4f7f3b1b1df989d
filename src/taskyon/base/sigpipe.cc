#include "taskyon/base/sigpipe.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

namespace taskyon {

ssize_t write_no_sigpipe(int fd, const void* data, std::size_t size) noexcept {
  sigset_t pipe_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  thread_local bool blocked = false;
  if (!blocked) {
    pthread_sigmask(SIG_BLOCK, &pipe_set, nullptr);
    blocked = true;
  }
  const ssize_t n = ::write(fd, data, size);
  const int saved = errno;
  if (n < 0 && saved == EPIPE) {  // the SIGPIPE this write raised stays pending: consume it
    const struct timespec zero = {0, 0};
    while (sigtimedwait(&pipe_set, nullptr, &zero) < 0 && errno == EINTR) {
    }
  }
  errno = saved;
  return n;
}

}  // namespace taskyon
