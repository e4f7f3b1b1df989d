#include "taskyon/store/origin.h"

#include <fmt/format.h>

#include "taskyon/capability/url.h"

namespace taskyon::store {

Result<std::string> canonical_origin(std::string_view input) {
  constexpr std::string_view kShape = "an origin is https://host[:port] with nothing after it but an optional \"/\"";
  auto url = capability::parse_url(input);
  if (!url)
    return fail(Errc::bad_usage, fmt::format("not a URL ({}); {}", url.error().message, kShape));
  if (url->has_credentials())
    return fail(Errc::bad_usage, fmt::format("an origin carries no user name or password; {}", kShape));
  if (url->kind != capability::Scheme::https)
    return fail(Errc::bad_usage,
                fmt::format("scheme \"{}\" is not https: grants are for https origins only (M4); {}", url->scheme,
                            kShape),
                std::string(input));
  if (url->path != "/")
    return fail(Errc::bad_usage, fmt::format("an origin has no path (\"{}\"); {}", url->path, kShape),
                std::string(input));
  if (url->query || url->fragment)
    return fail(Errc::bad_usage, fmt::format("an origin has no query or fragment; {}", kShape), std::string(input));
  if (!url->host.is_address() && url->host.kind != capability::HostKind::domain)
    return fail(Errc::bad_usage, fmt::format("an origin needs a host; {}", kShape), std::string(input));
  // The URL Standard accepts "*" in a domain, but a grant or a popup
  // permission names one exact origin: a pattern would read as a wildcard.
  if (url->host.kind == capability::HostKind::domain && url->host.domain.find('*') != std::string::npos)
    return fail(Errc::bad_usage, fmt::format("an origin names one exact host, not a pattern (\"*\"); {}", kShape),
                std::string(input));
  return url->origin();
}

Result<void> require_canonical_origin(std::string_view origin) {
  auto canonical = canonical_origin(origin);
  if (!canonical) return std::unexpected(canonical.error());
  if (*canonical != origin)
    return fail(Errc::bad_usage,
                fmt::format("origin \"{}\" is not in canonical form; its canonical form is \"{}\"", origin, *canonical),
                std::string(origin));
  return {};
}

Result<void> require_popup_target(std::string_view target) {
  if (target == kCustomHtml) return {};
  auto ok = require_canonical_origin(target);
  if (!ok)
    return fail(Errc::bad_usage,
                fmt::format("a popup target is \"custom-html\" or one exact https origin: {}", ok.error().message),
                ok.error().where);
  return {};
}

}  // namespace taskyon::store
