// http::ClientWatch (http/server.h): every watch of the process is polled by
// one thread, each calls on_gone once when its client has left, and none
// calls anything once destroyed.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "taskyon/http/server.h"

namespace {

using namespace std::chrono_literals;
using taskyon::http::ClientWatch;

std::size_t threads_now() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

struct Client {
  std::atomic<bool> gone{false};
  std::atomic<int> cancels{0};
  std::atomic<int> polls{0};
};

template <typename Pred>
bool eventually(Pred pred) {
  for (int i = 0; i < 400 && !pred(); ++i) std::this_thread::sleep_for(5ms);
  return pred();
}

TEST(ClientWatch, OneThreadPollsEveryWatchAndEachLeftClientIsCancelledOnce) {
  { ClientWatch warm([] { return false; }, [] {}, 1ms); }  // the polling thread exists from here on
  const std::size_t before = threads_now();
  constexpr int kClients = 32;
  std::vector<std::unique_ptr<Client>> clients;
  std::vector<std::unique_ptr<ClientWatch>> watches;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(std::make_unique<Client>());
    Client* c = clients.back().get();
    watches.push_back(std::make_unique<ClientWatch>(
        [c] {
          ++c->polls;
          return c->gone.load();
        },
        [c] { ++c->cancels; }, 5ms));
  }
  EXPECT_LE(threads_now(), before) << "a watch started a thread of its own";  // LE: another test's thread may end meanwhile
  ASSERT_TRUE(eventually([&] {
    for (const auto& c : clients)
      if (c->polls < 2) return false;
    return true;
  })) << "every watch is polled, again and again";
  for (int i = 0; i < kClients; i += 2) clients[i]->gone = true;
  ASSERT_TRUE(eventually([&] {
    for (int i = 0; i < kClients; i += 2)
      if (clients[i]->cancels == 0) return false;
    return true;
  }));
  std::this_thread::sleep_for(50ms);  // ten more periods: a left client is not polled or cancelled again
  for (int i = 0; i < kClients; ++i) EXPECT_EQ(clients[i]->cancels, i % 2 == 0 ? 1 : 0) << "client " << i;
  watches.clear();
  std::vector<int> polls;
  for (const auto& c : clients) polls.push_back(c->polls);
  std::this_thread::sleep_for(30ms);
  for (int i = 0; i < kClients; ++i) EXPECT_EQ(clients[i]->polls, polls[i]) << "client " << i << " polled after its watch";
}

// The destructor waits for a poll of its own watch that is running.
TEST(ClientWatch, DestructionWaitsForItsRunningPoll) {
  std::atomic<bool> in_poll{false}, poll_done{false};
  auto watch = std::make_unique<ClientWatch>(
      [&] {
        if (poll_done) return false;
        in_poll = true;
        std::this_thread::sleep_for(100ms);
        poll_done = true;
        return false;
      },
      [] {}, 1ms);
  ASSERT_TRUE(eventually([&] { return in_poll.load(); }));
  watch.reset();
  EXPECT_TRUE(poll_done) << "the watch was destroyed while its poll ran";
}

// The polling thread's voluntary context switches (its wake-ups), or -1.
long watch_thread_switches() {
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    if (!std::getline(comm, name) || name != "taskyon-watch") continue;
    std::ifstream status(task.path() / "status");
    for (std::string line; std::getline(status, line);)
      if (line.starts_with("voluntary_ctxt_switches:")) return std::stol(line.substr(24));
  }
  return -1;
}

// Issue 19: a request adds a watch to an empty set and removes it when it
// answers; one after another, they do not each wake the polling thread (it
// looks every 50 ms for a while after the last watch anyway: about 2 wake-ups
// here, against one per watch when each add woke it).
TEST(ClientWatch, WatchesOneAfterAnotherDoNotEachWakeThePollingThread) {
  { ClientWatch warm([] { return false; }, [] {}); }
  const long before = watch_thread_switches();
  ASSERT_GE(before, 0) << "no thread named taskyon-watch";
  constexpr int kRequests = 100;
  for (int i = 0; i < kRequests; ++i) {
    { ClientWatch watch([] { return false; }, [] {}); }
    std::this_thread::sleep_for(1ms);  // the next request comes once the thread waits again
  }
  const long woken = watch_thread_switches() - before;
  EXPECT_LT(woken, kRequests / 4) << woken << " wake-ups for " << kRequests << " watches";
}

}  // namespace
