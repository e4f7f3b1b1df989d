// The WHATWG URL parser (capability/url.h): never crashes, and a parsed
// special URL's href parses again to the same href and origin (the policy
// judges the parsed value and libcurl gets href(): they must agree).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "taskyon/capability/url.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace taskyon;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto url = capability::parse_url(text);
  if (!url || !url->special()) return 0;
  const std::string href = url->href();
  auto again = capability::parse_url(href);
  if (!again) std::abort();
  if (again->href() != href || again->origin() != url->origin()) std::abort();
  return 0;
}
