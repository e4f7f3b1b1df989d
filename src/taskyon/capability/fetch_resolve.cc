// The system resolver for fetch(): getaddrinfo, A and AAAA (fetch.h).
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <string>

#include "taskyon/capability/fetch.h"

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
