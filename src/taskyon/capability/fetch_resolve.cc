// The system resolver for fetch(): getaddrinfo, A and AAAA (fetch.h), and
// its bound: each lookup on a worker of the process (base/workers.h) that the
// waiting fetch() leaves behind when its time runs out (fetch_parts.h,
// resolve_bounded): a lookup that never returns holds its thread, not the
// request, and no later lookup waits behind it.
// getaddrinfo_a was not chosen: gai_cancel cannot stop a lookup in progress
// either, and its completion needs signals or a thread anyway; libcurl's
// threaded resolver is unused because the transfer is pinned to addresses
// checked before it starts (CURLOPT_RESOLVE).
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "taskyon/base/workers.h"
#include "taskyon/capability/fetch_parts.h"

namespace taskyon::capability {

std::vector<IpAddress> resolve_system(std::string_view ascii_host) {
  std::vector<IpAddress> out;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  const std::string host(ascii_host);
  if (getaddrinfo(host.c_str(), nullptr, &hints, &list) != 0) return out;
  for (const addrinfo* ai = list; ai; ai = ai->ai_next) {
    IpAddress a;
    if (ai->ai_family == AF_INET && ai->ai_addrlen >= sizeof(sockaddr_in)) {
      sockaddr_in sin;
      std::copy_n(reinterpret_cast<const unsigned char*>(ai->ai_addr), sizeof sin, reinterpret_cast<unsigned char*>(&sin));
      a = IpAddress::v4(ntohl(sin.sin_addr.s_addr));
    } else if (ai->ai_family == AF_INET6 && ai->ai_addrlen >= sizeof(sockaddr_in6)) {
      sockaddr_in6 sin6;
      std::copy_n(reinterpret_cast<const unsigned char*>(ai->ai_addr), sizeof sin6, reinterpret_cast<unsigned char*>(&sin6));
      IpAddress::Pieces p{};
      for (std::size_t i = 0; i < 8; ++i)
        p[i] = static_cast<std::uint16_t>(sin6.sin6_addr.s6_addr[2 * i] << 8 | sin6.sin6_addr.s6_addr[2 * i + 1]);
      a = IpAddress::v6(p);
    } else {
      continue;
    }
    if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
  }
  freeaddrinfo(list);
  return out;
}

}  // namespace taskyon::capability

namespace taskyon::capability::detail {
namespace {

// One lookup, shared by the waiting fetch() and its worker.
struct Lookup {
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  std::vector<IpAddress> answers;
};

std::atomic<int> g_in_flight{0};

}  // namespace

std::expected<std::vector<IpAddress>, FetchFailure> resolve_bounded(std::string_view host, const Resolver& resolve,
                                                                    std::chrono::steady_clock::time_point until,
                                                                    const std::atomic<bool>* cancelled) {
  using Clock = std::chrono::steady_clock;
  if (cancelled && cancelled->load()) return std::unexpected(failure(kCancelled, "the call was cancelled"));
  if (Clock::now() >= until)
    return std::unexpected(failure(kTimeout, "the request's time ran out before its host was resolved"));
  if (g_in_flight.fetch_add(1) >= kMaxResolversInFlight) {
    g_in_flight.fetch_sub(1);
    return std::unexpected(failure(kNetwork, fmt::format("too many name resolutions are still running (at most {})",
                                                         kMaxResolversInFlight)));
  }
  auto lookup = std::make_shared<Lookup>();
  const bool started = shared_workers().run([lookup, name = std::string(host), resolve] {
    auto answers = resolve ? resolve(name) : resolve_system(name);
    {
      std::lock_guard lock(lookup->mutex);
      lookup->answers = std::move(answers);
      lookup->done = true;
    }
    lookup->done_cv.notify_all();
    g_in_flight.fetch_sub(1);
  });
  if (!started) {
    g_in_flight.fetch_sub(1);
    return std::unexpected(failure(kNetwork, "the host could not start a name resolution"));
  }
  std::unique_lock lock(lookup->mutex);
  while (!lookup->done) {
    if (cancelled && cancelled->load()) return std::unexpected(failure(kCancelled, "the call was cancelled"));
    const auto now = Clock::now();
    if (now >= until)
      return std::unexpected(failure(kTimeout, fmt::format("resolving host \"{}\" took longer than the request's "
                                                           "time",
                                                           host)));
    // Cancellation is a flag, not a notification: look at it every 20 ms.
    lookup->done_cv.wait_until(lock, std::min(until, now + std::chrono::milliseconds(20)));
  }
  return std::move(lookup->answers);
}

}  // namespace taskyon::capability::detail
