// fetch(): the steps of fetch.h in order; the transfer is fetch_transfer.cc.
#include <fmt/format.h>

#include "taskyon/capability/fetch_parts.h"

namespace taskyon::capability {

using detail::failure;

FetchResult fetch(const HttpRequest& request, const FetchContext& context) {
  FetchResult result;
  auto refuse = [&](std::string_view code, std::string message, std::string detail = {}) -> FetchResult& {
    result.response = std::unexpected(failure(code, std::move(message)));
    result.response.error().detail = std::move(detail);
    return result;
  };

  // 1-2. URL policy and method class, without resolving anything (M6: no
  // name is resolved before the grant).
  result.decision = decide_url_unresolved(request.url, request.method, context.rules.allow);
  Decision& d = result.decision;
  if (d.verdict != Verdict::allow) {
    if (d.reason_class == ReasonClass::malformed) return refuse(kInvalidRequest, d.reason);
    return refuse(kPolicyBlocked, d.reason);
  }
  if (d.access == Access::reject) {
    if (!detail::is_token(request.method))
      return refuse(kInvalidRequest, "the method is not an HTTP token (RFC 9110 §9.1)");
    return refuse(kPolicyBlocked, fmt::format("method {} is refused: {}", d.method, d.method_reason));
  }

  // 3. Grant for (origin, access class).
  std::optional<FetchLimits> limits;
  if (context.grant) limits = context.grant(d.origin, d.access);
  if (!limits)
    return refuse(kDenied, fmt::format("no grant for {} access to {}", access_name(d.access), d.origin));

  // 3b. Only now the name is resolved, bounded by the request's timeout and
  // the call's deadline, and every answer judged. The tool is told which rule
  // refused, never the addresses (the audit log, `detail`, keeps them).
  std::vector<IpAddress> checked;
  if (d.awaiting_resolution) {
    auto until = std::chrono::steady_clock::now() + limits->total_timeout;
    if (context.deadline) until = std::min(until, *context.deadline);
    auto resolved = detail::resolve_bounded(d.host, context.resolve, until, context.cancelled);
    if (!resolved) return refuse(resolved.error().code, std::move(resolved.error().message));
    checked = std::move(*resolved);
    decide_addresses(d, checked, context.rules.allow);
    if (d.verdict != Verdict::allow) {
      if (d.reason_class == ReasonClass::unresolved) return refuse(kNetwork, d.reason);
      return refuse(kPolicyBlocked,
                    fmt::format("host \"{}\" resolves to a refused address ({}); the audit log names it", d.host,
                                reason_class_name(d.reason_class)),
                    d.reason);
    }
  } else {
    // A literal-address host is never resolved: it is its only address.
    auto host = parse_host(d.host);
    if (!host || !host->is_address()) return refuse(kNetwork, "internal: the checked URL has no address");
    checked.push_back(host->address);
  }

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
