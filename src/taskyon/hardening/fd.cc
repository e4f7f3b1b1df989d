#include "taskyon/hardening/fd.h"

#include <unistd.h>

namespace taskyon::hardening {

Fd& Fd::operator=(Fd&& other) noexcept {
  if (this != &other) reset(other.release());
  return *this;
}

void Fd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

}  // namespace taskyon::hardening
