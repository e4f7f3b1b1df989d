// The transfer on libcurl (fetch.h step 6). Every option below is a rule;
// docs/fetch-policy.md "The request" says why each is there.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <curl/curl.h>

#include <algorithm>
#include <strings.h>

#include <cstring>
#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "taskyon/capability/fetch_parts.h"

namespace taskyon::capability::detail {
namespace {

using namespace std::string_view_literals;
using Clock = std::chrono::steady_clock;

struct EasyDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
using Easy = std::unique_ptr<CURL, EasyDeleter>;
using Slist = std::unique_ptr<curl_slist, SlistDeleter>;

bool append(Slist& list, const std::string& line) {
  curl_slist* next = curl_slist_append(list.get(), line.c_str());
  if (!next) return false;
  (void)list.release();
  list.reset(next);
  return true;
}

// What the callbacks share with transfer().
struct State {
  const std::atomic<bool>* cancelled = nullptr;
  std::size_t max_body = 0;
  std::span<const IpAddress> checked;
  std::span<const Cidr> allow;
  HttpResponse response;
  std::string_view abort_code;  // set by a callback that stopped the transfer
  std::string connect_refusal;  // set by the open-socket callback

  bool is_cancelled() const { return cancelled && cancelled->load(std::memory_order_relaxed); }
};

std::optional<IpAddress> peer_address(const curl_sockaddr* a) {
  if (a->family == AF_INET && a->addrlen >= sizeof(sockaddr_in)) {
    sockaddr_in sin;
    std::memcpy(&sin, &a->addr, sizeof sin);
    return IpAddress::v4(ntohl(sin.sin_addr.s_addr));
  }
  if (a->family == AF_INET6 && a->addrlen >= sizeof(sockaddr_in6)) {
    sockaddr_in6 sin6;
    std::memcpy(&sin6, &a->addr, sizeof sin6);
    IpAddress::Pieces p{};
    for (std::size_t i = 0; i < 8; ++i)
      p[i] = static_cast<std::uint16_t>(sin6.sin6_addr.s6_addr[2 * i] << 8 | sin6.sin6_addr.s6_addr[2 * i + 1]);
    return IpAddress::v6(p);
  }
  return std::nullopt;
}

// The connect-time check (M6, second line): curl calls this instead of
// socket(2) for every address it tries. The address must be one the decision
// checked, and must still pass the address rules (or the test-only allow rule).
curl_socket_t open_socket(void* clientp, curlsocktype purpose, curl_sockaddr* address) {
  auto* s = static_cast<State*>(clientp);
  if (purpose != CURLSOCKTYPE_IPCXN) {
    s->connect_refusal = "a socket that is not an outgoing IP connection";
    return CURL_SOCKET_BAD;
  }
  const std::optional<IpAddress> ip = peer_address(address);
  if (!ip) {
    s->connect_refusal = fmt::format("a connection of address family {} (only IPv4 and IPv6)", address->family);
    return CURL_SOCKET_BAD;
  }
  if (std::find(s->checked.begin(), s->checked.end(), *ip) == s->checked.end()) {
    s->connect_refusal = fmt::format("{}, an address the policy did not check (DNS rebinding?)", ip->to_string());
    return CURL_SOCKET_BAD;
  }
  const AddressRange& range = classify(*ip);
  if (range.cls != AddressClass::global && !admitted_by(*ip, s->allow)) {
    s->connect_refusal = fmt::format("{}, in {} {} ({})", ip->to_string(), range.prefix, range.name, range.source);
    return CURL_SOCKET_BAD;
  }
  return socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
}

std::string_view trim(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t' || v.back() == '\r' || v.back() == '\n'))
    v.remove_suffix(1);
  return v;
}

// Response headers as received: a status line starts a new header block (1xx
// interim responses are dropped with it); obs-fold lines join the previous value.
std::size_t on_header(char* data, std::size_t size, std::size_t count, void* userdata) {
  auto* s = static_cast<State*>(userdata);
  const std::size_t n = size * count;
  if (s->is_cancelled()) {
    s->abort_code = kCancelled;
    return 0;
  }
  std::string_view line(data, n);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  HttpResponse& r = s->response;
  if (line.starts_with("HTTP/"sv)) {
    r.headers.clear();
    r.status_text.clear();
    const auto sp1 = line.find(' ');
    const auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp2 != std::string_view::npos) r.status_text = trim(line.substr(sp2 + 1));
  } else if (line.empty()) {
    // end of a header block
  } else if ((line.front() == ' ' || line.front() == '\t') && !r.headers.empty()) {
    std::string& v = r.headers.back().value;
    if (!v.empty()) v += ' ';
    v += trim(line);
  } else if (const auto colon = line.find(':'); colon != std::string_view::npos) {
    r.headers.push_back(Header{std::string(line.substr(0, colon)), std::string(trim(line.substr(colon + 1)))});
  }
  return n;
}

// The body, with the size limit enforced as it streams (M12).
std::size_t on_body(char* data, std::size_t size, std::size_t count, void* userdata) {
  auto* s = static_cast<State*>(userdata);
  const std::size_t n = size * count;
  if (s->is_cancelled()) {
    s->abort_code = kCancelled;
    return 0;
  }
  if (n > s->max_body - s->response.body.size()) {
    s->abort_code = kTooLarge;
    return 0;
  }
  s->response.body.append(data, n);
  return n;
}

// Cancellation (M13): libcurl calls this at least once a second, and more
// often while data flows.
int on_progress(void* clientp, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* s = static_cast<State*>(clientp);
  if (s->is_cancelled()) {
    s->abort_code = kCancelled;
    return 1;
  }
  return 0;
}

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// "host:port:addr,[v6addr]" for CURLOPT_RESOLVE.
std::string resolve_entry(std::string_view host, unsigned port, std::span<const IpAddress> addresses) {
  std::string e = fmt::format("{}:{}:", host, port);
  for (std::size_t i = 0; i < addresses.size(); ++i) {
    if (i) e += ',';
    if (addresses[i].is_v6()) e += '[';
    e += addresses[i].to_string();
    if (addresses[i].is_v6()) e += ']';
  }
  return e;
}

}  // namespace

std::expected<HttpResponse, FetchFailure> transfer(const Decision& decision, const HttpRequest& request,
                                                   const std::vector<Header>& headers,
                                                   std::span<const IpAddress> checked, const FetchLimits& limits,
                                                   const FetchContext& context) {
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;

  // The total timeout, capped by the sandbox call's deadline.
  milliseconds total = limits.total_timeout;
  if (context.deadline) {
    const auto left = duration_cast<milliseconds>(*context.deadline - Clock::now());
    if (left <= milliseconds(0)) return std::unexpected(failure(kTimeout, "the call's deadline passed before the request"));
    total = std::min(total, left);
  }
  total = std::max(total, milliseconds(1));  // 0 would mean "no timeout" to libcurl
  const milliseconds connect = std::clamp(limits.connect_timeout, milliseconds(1), total);

  if (context.cancelled && context.cancelled->load()) return std::unexpected(failure(kCancelled, "the call was cancelled"));

  global_init();
  Easy easy(curl_easy_init());
  if (!easy) return std::unexpected(failure(kNetwork, "libcurl could not start a transfer"));
  CURL* c = easy.get();

  State state;
  state.cancelled = context.cancelled;
  state.max_body = limits.max_response_bytes;
  state.checked = checked;
  state.allow = context.rules.allow;
  state.response.url = decision.href;

  // Pin the name to the checked addresses (M6). Literal-address URLs need no pin.
  auto host = parse_host(decision.host);
  if (!host) return std::unexpected(failure(kNetwork, "internal: the checked host does not parse"));
  Slist pins;
  if (host->kind == HostKind::domain) {
    auto url = parse_url(decision.href);
    const unsigned port = url ? url->port_or_default() : 443;
    const std::span<const IpAddress> pin =
        context.rules.unchecked_pin_for_tests.empty() ? checked : std::span<const IpAddress>(context.rules.unchecked_pin_for_tests);
    std::string name = host->domain;
    if (!append(pins, resolve_entry(name, port, pin))) return std::unexpected(failure(kNetwork, "out of memory"));
    if (name.size() > 1 && name.back() == '.') {  // libcurl may key its DNS cache with or without the dot
      name.pop_back();
      if (!append(pins, resolve_entry(name, port, pin))) return std::unexpected(failure(kNetwork, "out of memory"));
    }
  }

  // Request headers, plus two removals of libcurl defaults: no Expect:
  // 100-continue, and no invented Content-Type for a body.
  Slist list;
  bool has_content_type = false;
  for (const Header& h : headers) {
    has_content_type = has_content_type || (h.name.size() == 12 && strncasecmp(h.name.c_str(), "content-type", 12) == 0);
    if (!append(list, h.value.empty() ? h.name + ";" : h.name + ": " + h.value))
      return std::unexpected(failure(kNetwork, "out of memory"));
  }
  if (!append(list, "Expect:") || (!has_content_type && !append(list, "Content-Type:")))
    return std::unexpected(failure(kNetwork, "out of memory"));

  char errbuf[CURL_ERROR_SIZE] = {};
  bool ok = true;
  auto set = [&](CURLoption option, auto value) { ok = ok && curl_easy_setopt(c, option, value) == CURLE_OK; };

  // What is fetched: the canonical href, https only, exactly as serialized.
  set(CURLOPT_URL, decision.href.c_str());
  set(CURLOPT_PROTOCOLS_STR, "https");
  set(CURLOPT_REDIR_PROTOCOLS_STR, "https");
  set(CURLOPT_PATH_AS_IS, 1L);
  set(CURLOPT_FOLLOWLOCATION, 0L);  // M10
  set(CURLOPT_MAXREDIRS, 0L);
  // Where: the checked addresses only, each checked again at connect time (M6).
  if (pins) set(CURLOPT_RESOLVE, pins.get());
  set(CURLOPT_OPENSOCKETFUNCTION, &open_socket);
  set(CURLOPT_OPENSOCKETDATA, &state);
  // No ambient credentials or intermediaries (M9).
  set(CURLOPT_PROXY, "");
  set(CURLOPT_NOPROXY, "*");
  set(CURLOPT_NETRC, static_cast<long>(CURL_NETRC_IGNORED));
  set(CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BASIC));  // sent only with a user name, and none is ever set
  set(CURLOPT_UNRESTRICTED_AUTH, 0L);
  set(CURLOPT_COOKIEFILE, static_cast<const char*>(nullptr));  // no cookie engine
  // TLS: always verified; the test CA file replaces the system store.
  set(CURLOPT_SSL_VERIFYPEER, 1L);
  set(CURLOPT_SSL_VERIFYHOST, 2L);
  set(CURLOPT_SSLVERSION, static_cast<long>(CURL_SSLVERSION_TLSv1_2));
  if (!context.rules.ca_file.empty()) {
    set(CURLOPT_CAINFO, context.rules.ca_file.c_str());
    set(CURLOPT_CAPATH, static_cast<const char*>(nullptr));
  }
  // Limits (M11, M12) and cancellation (M13).
  set(CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(connect.count()));
  set(CURLOPT_TIMEOUT_MS, static_cast<long>(total.count()));
  set(CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(limits.max_response_bytes));
  set(CURLOPT_NOPROGRESS, 0L);
  set(CURLOPT_XFERINFOFUNCTION, &on_progress);
  set(CURLOPT_XFERINFODATA, &state);
  set(CURLOPT_NOSIGNAL, 1L);
  // The response, as received.
  set(CURLOPT_HTTP_CONTENT_DECODING, 0L);
  set(CURLOPT_HEADERFUNCTION, &on_header);
  set(CURLOPT_HEADERDATA, &state);
  set(CURLOPT_WRITEFUNCTION, &on_body);
  set(CURLOPT_WRITEDATA, &state);
  set(CURLOPT_ERRORBUFFER, errbuf);
  // The request.
  set(CURLOPT_HTTPHEADER, list.get());
  const std::string& method = decision.method;
  if (method == "GET") {
    set(CURLOPT_HTTPGET, 1L);
  } else if (method == "HEAD") {
    set(CURLOPT_NOBODY, 1L);
  } else {
    if (!request.body.empty() || method == "POST" || method == "PUT" || method == "PATCH") {
      set(CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
      set(CURLOPT_POSTFIELDS, request.body.data());
    }
    set(CURLOPT_CUSTOMREQUEST, method.c_str());
  }
  if (!ok) return std::unexpected(failure(kNetwork, "libcurl refused an option this build needs"));

  const CURLcode rc = curl_easy_perform(c);
  if (rc == CURLE_OK) {
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    state.response.status = static_cast<int>(status);
    return std::move(state.response);
  }
  if (state.abort_code == kCancelled) return std::unexpected(failure(kCancelled, "the call was cancelled during the request"));
  if (state.abort_code == kTooLarge || rc == CURLE_FILESIZE_EXCEEDED)
    return std::unexpected(failure(kTooLarge, fmt::format("the response body exceeds the limit of {} bytes",
                                                          limits.max_response_bytes)));
  // What the tool reads names no address (DESIGN §6); the detail, for the
  // audit log, keeps libcurl's words and the refused address.
  auto with_detail = [](FetchFailure f, std::string detail) {
    f.detail = std::move(detail);
    return std::unexpected(std::move(f));
  };
  if (!state.connect_refusal.empty() && rc == CURLE_COULDNT_CONNECT)
    return with_detail(failure(kPolicyBlocked, "refused at connect time: the connection went to an address the "
                                               "policy refuses or did not check (the audit log names it)"),
                       "refused at connect time: " + state.connect_refusal);
  if (rc == CURLE_OPERATION_TIMEDOUT)
    return with_detail(failure(kTimeout, fmt::format("the request timed out ({} ms connect, {} ms total)",
                                                     connect.count(), total.count())),
                       fmt::format("{} ({} ms connect, {} ms total)", errbuf[0] ? errbuf : curl_easy_strerror(rc),
                                   connect.count(), total.count()));
  return with_detail(failure(kNetwork, curl_easy_strerror(rc)),
                     fmt::format("{}: {}", curl_easy_strerror(rc), errbuf[0] ? errbuf : "no detail"));
}

}  // namespace taskyon::capability::detail
