// CancelToken (sandbox/pool.h): its descriptor is made when first asked for,
// and a waiter on it never misses a cancel, whichever came first.
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

}  // namespace
