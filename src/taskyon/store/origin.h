// Origins as grants and popup permissions name them: the WHATWG URL Standard's
// ASCII serialization of an https URL's origin (§4.4 origin, §4.5 serialize an
// origin): "https://" + host (lower case, IDNA to ASCII, IPv6 in brackets) +
// ":" port only when it is not 443. "https://example.com",
// "https://xn--mnchen-3ya.de", "https://[::1]:8443".
#pragma once

#include <string>
#include <string_view>

#include "taskyon/base/error.h"

namespace taskyon::store {

// What a user may type for an origin, normalized with capability::parse_url:
// an https URL without credentials, path (a lone "/" is fine), query or
// fragment. "HTTPS://Example.COM:443/" -> "https://example.com".
// Errc::bad_usage naming what is wrong (http, a path, credentials, ...), with
// the input in `where` unless it holds credentials.
Result<std::string> canonical_origin(std::string_view input);

// OK if `origin` is already exactly its canonical form; Errc::bad_usage
// otherwise, naming the canonical form when there is one. Store functions
// take canonical origins only: a grant never matches by normalization.
Result<void> require_canonical_origin(std::string_view origin);

// A popup target (M16): exactly "custom-html", or a canonical https origin.
inline constexpr std::string_view kCustomHtml = "custom-html";
Result<void> require_popup_target(std::string_view target);

}  // namespace taskyon::store
