// Internal to src/taskyon/capability: the pieces of fetch() (fetch.h), one
// file each: fetch_headers.cc (header rules and secret placeholders),
// fetch_transfer.cc (libcurl), fetch_resolve.cc (getaddrinfo), fetch.cc (order).
#pragma once

#include <expected>
#include <span>
#include <string_view>
#include <vector>

#include "taskyon/capability/fetch.h"

namespace taskyon::capability::detail {

FetchFailure failure(std::string_view code, std::string message);

// RFC 9110 §5.6.2 token (method names, header names).
bool is_token(std::string_view s);

// Step 4a: names are tokens and not refused, values hold no CR, LF or NUL, and
// every "{{secret:" starts a well-formed placeholder. Values are normalized
// (leading and trailing spaces and tabs removed, Fetch standard "normalize").
std::expected<std::vector<Header>, FetchFailure> check_headers(const std::vector<Header>& headers);

// Step 4b: replaces each {{secret:NAME}} (NAME: 1-128 of A-Z a-z 0-9 _ . -)
// with SecretLookup(origin, NAME). Unknown -> denied; a secret that would put
// CR, LF or NUL into a header -> invalid_request. Messages name the secret,
// never its value.
std::expected<std::vector<Header>, FetchFailure> fill_secrets(std::vector<Header> headers, std::string_view origin,
                                                             const SecretLookup& secret);

// Step 3b: `resolve` (empty: resolve_system) for `host` on a worker thread
// of the process (base/workers.h shared_workers), waited for until `until` or `*cancelled`. getaddrinfo cannot be
// interrupted, so a lookup that outlives its bound finishes (and is dropped)
// on its worker; at most kMaxResolversInFlight such workers exist at once
// (more: network). Failures: timeout, cancelled, network.
inline constexpr int kMaxResolversInFlight = 16;
std::expected<std::vector<IpAddress>, FetchFailure> resolve_bounded(std::string_view host, const Resolver& resolve,
                                                                    std::chrono::steady_clock::time_point until,
                                                                    const std::atomic<bool>* cancelled);

// Step 6: the transfer, pinned to `checked` (the addresses the decision judged).
std::expected<HttpResponse, FetchFailure> transfer(const Decision& decision, const HttpRequest& request,
                                                   const std::vector<Header>& headers,
                                                   std::span<const IpAddress> checked, const FetchLimits& limits,
                                                   const FetchContext& context);

}  // namespace taskyon::capability::detail
