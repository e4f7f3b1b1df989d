// CancelToken (sandbox/pool.h): its descriptor is made when first asked for,
// and a waiter on it never misses a cancel, whichever came first; a Watch
// lends it a descriptor of the waiter's own instead, woken only while the
// Watch lives.
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <poll.h>

#include "taskyon/sandbox/pool.h"

namespace {

using taskyon::sandbox::CancelToken;

std::size_t open_descriptors() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

bool readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN) != 0;
}

// Tokens made and copied, cancelled or not, but never waited on, hold no
// descriptor (issue 19: each cost a call an eventfd2 and a close).
TEST(CancelToken, ATokenNeverWaitedOnHoldsNoDescriptor) {
  const std::size_t before = open_descriptors();
  std::vector<CancelToken> tokens(64);
  for (std::size_t i = 0; i < tokens.size(); i += 2) tokens[i].cancel();
  EXPECT_EQ(open_descriptors(), before);
  EXPECT_TRUE(tokens[0].cancelled());
  EXPECT_FALSE(tokens[1].cancelled());
  const int fd = tokens[1].fd();
  ASSERT_GE(fd, 0);
  EXPECT_EQ(open_descriptors(), before + 1);
  EXPECT_EQ(CancelToken(tokens[1]).fd(), fd) << "copies share one descriptor";
  tokens.clear();
  EXPECT_EQ(open_descriptors(), before) << "the descriptor goes with the last copy";
}

TEST(CancelToken, ADescriptorAskedForAfterTheCancelIsReadable) {
  CancelToken token;
  token.cancel();
  ASSERT_GE(token.fd(), 0);
  EXPECT_TRUE(readable(token.fd(), 0));
}

TEST(CancelToken, ADescriptorAskedForBeforeTheCancelBecomesReadable) {
  CancelToken token;
  const int fd = token.fd();
  ASSERT_GE(fd, 0);
  EXPECT_FALSE(readable(fd, 0));
  token.cancel();
  EXPECT_TRUE(readable(fd, 0));
}

// A cancel racing with the descriptor's making: the waiter, which looked at
// the flag before it asked for the descriptor, is always woken.
TEST(CancelToken, ACancelRacingWithTheDescriptorIsNeverMissed) {
  for (int round = 0; round < 2000; ++round) {
    CancelToken token;
    std::thread canceller([&] { token.cancel(); });
    const bool seen_before = token.cancelled();
    const int fd = token.fd();
    ASSERT_GE(fd, 0);
    canceller.join();
    EXPECT_TRUE(seen_before || readable(fd, 0)) << "round " << round;
  }
}

// A waiter's own eventfd, drained as a sandbox's exchange drains it.
struct OwnFd {
  int fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  ~OwnFd() { ::close(fd); }
  void drain() const {
    std::uint64_t n = 0;
    [[maybe_unused]] const ssize_t got = ::read(fd, &n, sizeof n);
  }
};

// Issue 19: a sandbox watches each call's token with its own eventfd, so a
// call makes no descriptor; a cancel wakes it only while it is watched.
TEST(CancelToken, AWatchWakesTheWatchersDescriptorOnlyWhileItLives) {
  const OwnFd own;
  ASSERT_GE(own.fd, 0);
  const std::size_t before = open_descriptors();
  CancelToken unwatched;
  {
    const CancelToken::Watch watch(unwatched, own.fd);
    EXPECT_TRUE(watch.registered());
  }
  unwatched.cancel();
  EXPECT_FALSE(readable(own.fd, 0)) << "a cancel after the Watch was gone woke its descriptor";
  CancelToken watched;
  {
    const CancelToken::Watch watch(watched, own.fd);
    EXPECT_FALSE(readable(own.fd, 0));
    watched.cancel();
    EXPECT_TRUE(readable(own.fd, 0));
  }
  EXPECT_EQ(open_descriptors(), before) << "a watched token made a descriptor of its own";
  own.drain();
  EXPECT_FALSE(readable(own.fd, 0));
}

TEST(CancelToken, ASecondWatchOfOneTokenIsNotRegistered) {
  const OwnFd first, second;
  CancelToken token;
  const CancelToken::Watch a(token, first.fd);
  const CancelToken::Watch b(CancelToken(token), second.fd);  // a copy: the same token
  EXPECT_TRUE(a.registered());
  EXPECT_FALSE(b.registered());
  token.cancel();
  EXPECT_TRUE(readable(first.fd, 0));
  EXPECT_FALSE(readable(second.fd, 0));
  EXPECT_FALSE(CancelToken::Watch(CancelToken(), -1).registered());
}

// The watcher looks at the flag after making the Watch: a racing cancel is
// then either seen there or wakes the descriptor.
TEST(CancelToken, ACancelRacingWithAWatchIsNeverMissed) {
  const OwnFd own;
  for (int round = 0; round < 2000; ++round) {
    CancelToken token;
    std::thread canceller([&] { token.cancel(); });
    bool seen = false;
    {
      const CancelToken::Watch watch(token, own.fd);
      seen = token.cancelled() || readable(own.fd, 1000);
    }
    canceller.join();
    EXPECT_TRUE(seen) << "round " << round;
    own.drain();
  }
}

}  // namespace
