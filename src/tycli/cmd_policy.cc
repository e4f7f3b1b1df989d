// tycli policy check: explains what the fetch policy (capability/policy.h)
// decides for a URL and a method, through the code path the sandbox's fetch
// uses up to the grant check. It never makes the request.
//
// Names resolve through the system resolver, or with --resolve HOST:ADDR only
// to the addresses given (never live DNS then; a name with no --resolve entry
// resolves to nothing). Exit codes: 0 the request would go on to the grant
// check; 1 the policy refuses it (URL verdict deny, or method class reject);
// 2 bad usage.
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli.h"
#include "taskyon/capability/decision_json.h"
#include "taskyon/capability/policy.h"

namespace tycli {
namespace {

using taskyon::Errc;
using taskyon::Error;
using taskyon::json::Value;
namespace cap = taskyon::capability;

struct CheckArgs {
  std::string url;
  std::string method = "GET";
  std::vector<std::string> resolve;  // HOST:ADDR
};

struct Pin {
  std::string host;  // as the URL host parser serializes it, without one trailing dot
  cap::IpAddress address;
};

std::string without_trailing_dot(std::string host) {
  if (!host.empty() && host.back() == '.') host.pop_back();
  return host;
}

// "HOST:ADDR": everything after the first colon is the address.
taskyon::Result<Pin> parse_pin(const std::string& text) {
  const auto colon = text.find(':');
  if (colon == std::string::npos || colon == 0)
    return taskyon::fail(Errc::bad_usage, "--resolve wants HOST:ADDR, e.g. example.com:93.184.215.14", text);
  auto host = cap::parse_host(text.substr(0, colon));
  if (!host || host->kind != cap::HostKind::domain)
    return taskyon::fail(Errc::bad_usage, "--resolve: HOST must be a domain name", text);
  std::string address = text.substr(colon + 1);
  if (address.size() > 2 && address.front() == '[' && address.back() == ']') address = address.substr(1, address.size() - 2);
  auto ip = cap::IpAddress::parse(address);
  if (!ip)
    return taskyon::fail(Errc::bad_usage, "--resolve: ADDR must be an IPv4 (dotted decimal) or IPv6 address", text);
  return Pin{without_trailing_dot(host->domain), *ip};
}

// Every A and AAAA answer of the system resolver, in its order, each once.
std::vector<cap::IpAddress> resolve_live(const std::string& host, std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &list);
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> owned(list, &freeaddrinfo);
  std::vector<cap::IpAddress> out;
  if (rc != 0) {
    error = gai_strerror(rc);
    return out;
  }
  for (const addrinfo* ai = list; ai; ai = ai->ai_next) {
    std::optional<cap::IpAddress> a;
    if (ai->ai_family == AF_INET) {
      const auto* sin = reinterpret_cast<const sockaddr_in*>(ai->ai_addr);
      a = cap::IpAddress::v4(ntohl(sin->sin_addr.s_addr));
    } else if (ai->ai_family == AF_INET6) {
      const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(ai->ai_addr);
      cap::IpAddress::Pieces pieces{};
      for (int i = 0; i < 8; ++i)
        pieces[i] = static_cast<std::uint16_t>(sin6->sin6_addr.s6_addr[2 * i] << 8 | sin6->sin6_addr.s6_addr[2 * i + 1]);
      a = cap::IpAddress::v6(pieces);
    }
    if (a && std::find(out.begin(), out.end(), *a) == out.end()) out.push_back(*a);
  }
  return out;
}

int check(Globals& g, const CheckArgs& a) {
  std::vector<Pin> pins;
  for (const auto& text : a.resolve) {
    auto pin = parse_pin(text);
    if (!pin) return report(g, pin.error());
    pins.push_back(std::move(*pin));
  }

  bool resolved = false;
  std::vector<cap::IpAddress> answers;
  std::string resolve_error;
  const cap::Resolver resolver = [&](std::string_view host) {
    resolved = true;
    answers.clear();
    if (!a.resolve.empty()) {
      const std::string key = without_trailing_dot(std::string(host));
      for (const auto& pin : pins)
        if (pin.host == key) answers.push_back(pin.address);
    } else {
      answers = resolve_live(std::string(host), resolve_error);
    }
    return answers;
  };
  const cap::Decision d = cap::decide_url(a.url, a.method, resolver);
  const char* source = a.resolve.empty() ? "dns" : "--resolve";

  if (g.json) {
    Value out = cap::decision_json(d);
    if (resolved) {
      Value list = Value::array();
      for (const auto& ip : answers) list.push_back(ip.to_string());
      out["resolved"] = {{"by", source}, {"addresses", list}};
      if (!resolve_error.empty()) out["resolved"]["error"] = resolve_error;
    }
    print_json(out);
  } else {
    std::cout << fmt::format("verdict  {} ({})\n", cap::verdict_name(d.verdict), cap::reason_class_name(d.reason_class));
    std::cout << fmt::format("access   {} (method {}): {}\n", cap::access_name(d.access), cap::printable_bytes(d.method),
                             d.method_reason);
    std::cout << fmt::format("reason   {}\n", d.reason);
    if (!d.href.empty()) std::cout << fmt::format("url      {}\n", d.href);
    if (!d.origin.empty()) std::cout << fmt::format("origin   {}\n", d.origin);
    if (resolved) {
      std::string list;
      for (const auto& ip : answers) list += (list.empty() ? "" : ", ") + ip.to_string();
      std::cout << fmt::format("resolved {} (by {}{})\n", list.empty() ? "nothing" : list, source,
                               resolve_error.empty() ? "" : ": " + resolve_error);
    }
    std::cout << (d.admits() ? "request  goes on to the grant check\n" : "request  refused\n");
  }
  return d.admits() ? kExitOk : kExitToolFailed;
}

}  // namespace

void add_policy_commands(CLI::App& app, Globals& g) {
  auto* policy = app.add_subcommand("policy", "explain the fetch policy's decisions");
  policy->require_subcommand(1);

  auto ca = std::make_shared<CheckArgs>();
  auto* chk = policy->add_subcommand(
      "check",
      "print the verdict, access class and reason for fetching URL (never makes the request); "
      "exit 0 if the request would go on to the grant check, 1 if refused");
  chk->add_option("url", ca->url, "the URL exactly as tool code would pass it to fetch")->required();
  chk->add_option("--method", ca->method, "the request method as tool code would pass it (default GET)");
  chk->add_option("--resolve", ca->resolve,
                  "HOST:ADDR, repeatable: HOST resolves only to these addresses (IPv4 or IPv6; everything after "
                  "the first colon), and no name goes to live DNS")
      ->allow_extra_args(false);
  chk->callback([&g, ca] { g.exit_code = guarded(g, [&] { return check(g, *ca); }); });
}

}  // namespace tycli
