// The strict JSON parser (json/json.h parse): never crashes, and whatever it
// accepts canonicalizes, and the canonical text parses back to the same text.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "taskyon/json/json.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace taskyon;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto value = json::parse(text);
  if (!value) return 0;
  auto canonical = json::canonicalize(*value);
  if (!canonical) std::abort();  // json.h: what parse accepts canonicalizes (the sandbox's frames rely on it)
  auto again = json::parse(*canonical);
  if (!again) std::abort();  // canonical text must parse
  auto twice = json::canonicalize(*again);
  if (!twice || *twice != *canonical) std::abort();  // and be a fixed point
  return 0;
}
