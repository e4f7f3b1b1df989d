// The manifest parser (registry/manifest.h): strict JSON text, then
// parse_manifest and revision_id. Never crashes; an accepted manifest has a
// content id.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "taskyon/json/json.h"
#include "taskyon/registry/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace taskyon;
  auto value = json::parse(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!value) return 0;
  auto manifest = registry::parse_manifest(*value);
  if (!manifest) return 0;
  auto id = registry::revision_id(*manifest);
  if (!id || !json::is_content_id(*id)) std::abort();
  (void)registry::needs_trust(*manifest);
  return 0;
}
