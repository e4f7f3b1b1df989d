// fetch(): the steps of fetch.h in order; the transfer is fetch_transfer.cc.
#include <fmt/format.h>

#include "taskyon/capability/fetch_parts.h"

namespace taskyon::capability {

using detail::failure;

FetchResult fetch(const HttpRequest& request, const FetchContext& context) {
  FetchResult result;
  auto refuse = [&](std::string_view code, std::string message) -> FetchResult& {
    result.response = std::unexpected(failure(code, std::move(message)));
    return result;
  };

  // 1-2. URL policy and method class, resolving once. The answers the
  // decision judged are kept: the transfer is pinned to exactly these.
  std::vector<IpAddress> checked;
  const Resolver resolve = [&](std::string_view host) {
    checked = context.resolve ? context.resolve(host) : resolve_system(host);
    return checked;
  };
  result.decision = decide_url(request.url, request.method, resolve, context.rules.allow);
  const Decision& d = result.decision;
  if (d.verdict != Verdict::allow) {
    if (d.reason_class == ReasonClass::malformed) return refuse(kInvalidRequest, d.reason);
    return refuse(kPolicyBlocked, d.reason);
  }
  if (d.access == Access::reject) {
    if (!detail::is_token(request.method))
      return refuse(kInvalidRequest, "the method is not an HTTP token (RFC 9110 §9.1)");
    return refuse(kPolicyBlocked, fmt::format("method {} is refused: {}", d.method, d.method_reason));
  }
  // A literal-address host was never resolved: it is its only address.
  if (checked.empty()) {
    auto host = parse_host(d.host);
    if (!host || !host->is_address()) return refuse(kNetwork, "internal: the checked URL has no address");
    checked.push_back(host->address);
  }

  // 3. Grant for (origin, access class).
  std::optional<FetchLimits> limits;
  if (context.grant) limits = context.grant(d.origin, d.access);
  if (!limits)
    return refuse(kDenied, fmt::format("no grant for {} access to {}", access_name(d.access), d.origin));

  // 4. Headers, then secrets (only now: the grant passed).
  auto headers = detail::check_headers(request.headers);
  if (!headers) return refuse(headers.error().code, std::move(headers.error().message));
  auto filled = detail::fill_secrets(std::move(*headers), d.origin, context.secret);
  if (!filled) return refuse(filled.error().code, std::move(filled.error().message));

  // 5. Request body.
  if (!request.body.empty() && (d.method == "GET" || d.method == "HEAD"))
    return refuse(kInvalidRequest, fmt::format("a {} request cannot have a body (Fetch standard)", d.method));
  if (request.body.size() > limits->max_request_bytes)
    return refuse(kTooLarge, fmt::format("the request body is {} bytes; the limit is {} bytes", request.body.size(),
                                         limits->max_request_bytes));

  // 6. The transfer.
  result.response = detail::transfer(d, request, *filled, checked, *limits, context);
  return result;
}

}  // namespace taskyon::capability
