// The server's listening socket (http::Server::bind): its accept backlog, read
// back from the kernel with sock_diag (what `ss -ltn` shows as Send-Q), and
// that no other socket can bind its port beside it.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "taskyon/http/server.h"

namespace taskyon {
namespace {

// The backlog of the TCP socket listening on 127.0.0.1:port (idiag_wqueue of
// a listener is its sk_max_ack_backlog), or nullopt when none is found.
std::optional<unsigned> listen_backlog(int port) {
  const int nl = ::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (nl < 0) return std::nullopt;
  struct {
    nlmsghdr header;
    inet_diag_req_v2 request;
  } ask{};
  ask.header.nlmsg_len = sizeof ask;
  ask.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  ask.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  ask.request.sdiag_family = AF_INET;
  ask.request.sdiag_protocol = IPPROTO_TCP;
  ask.request.idiag_states = 1u << TCP_LISTEN;
  std::optional<unsigned> found;
  if (::send(nl, &ask, sizeof ask, 0) == static_cast<ssize_t>(sizeof ask)) {
    alignas(nlmsghdr) char buffer[16384];
    for (bool done = false; !done;) {
      const ssize_t n = ::recv(nl, buffer, sizeof buffer, 0);
      if (n <= 0) break;
      int left = static_cast<int>(n);
      for (auto* h = reinterpret_cast<nlmsghdr*>(buffer); NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
        if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR) {
          done = true;
          break;
        }
        const auto* m = static_cast<const inet_diag_msg*>(NLMSG_DATA(h));
        if (ntohs(m->id.idiag_sport) == port && m->id.idiag_src[0] == htonl(INADDR_LOOPBACK)) found = m->idiag_wqueue;
      }
    }
  }
  ::close(nl);
  return found;
}

Result<std::unique_ptr<http::Server>> bound() { return http::Server::bind({.port = 0, .token = "t"}); }

// cpp-httplib as Debian builds it listens with a backlog of 5: 24 concurrent
// requests then lost some to resets after failed SYN cookies.
TEST(HttpListener, TheAcceptBacklogIsWideEnoughForABurstOfClients) {
  auto server = bound();
  ASSERT_TRUE(server) << server.error().describe();
  const auto backlog = listen_backlog((*server)->port());
  ASSERT_TRUE(backlog) << "no listener on 127.0.0.1:" << (*server)->port() << " in sock_diag";
  EXPECT_GE(*backlog, 128u);
}

// Only SO_REUSEADDR: with SO_REUSEPORT another process could bind the same
// port and be handed some of the server's connections, tokens included.
TEST(HttpListener, NoOtherSocketCanBindItsPort) {
  auto server = bound();
  ASSERT_TRUE(server) << server.error().describe();
  const int other = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(other, 0);
  const int yes = 1;
  ASSERT_EQ(::setsockopt(other, SOL_SOCKET, SO_REUSEPORT, &yes, sizeof yes), 0);
  ASSERT_EQ(::setsockopt(other, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes), 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>((*server)->port()));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int rc = ::bind(other, reinterpret_cast<const sockaddr*>(&address), sizeof address);
  const int error = errno;
  ::close(other);
  EXPECT_EQ(rc, -1);
  EXPECT_EQ(error, EADDRINUSE) << std::strerror(error);
}

}  // namespace
}  // namespace taskyon
