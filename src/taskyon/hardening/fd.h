// An owned file descriptor, closed on destruction. The hardening layers hold
// the descriptors they prepare before fork (Landlock rulesets, the runtime's
// executable) in these; the sandbox's pipes use the same type.
#pragma once

namespace taskyon::hardening {

// An owned file descriptor (-1 when empty), closed on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&& other) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  int release() { int fd = fd_; fd_ = -1; return fd; }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

}  // namespace taskyon::hardening
