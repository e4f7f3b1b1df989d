// The RFC 8785 canonicalizer (json/json.h canonicalize) on any value nlohmann
// can hold. Input "c" + CBOR reaches what JSON text cannot (NaN, invalid
// UTF-8, binary, 2^64-1, deep nesting); any other input is read by nlohmann's
// lenient parser (duplicate names, 1e400). Never crashes; what it accepts
// parses back strictly (up to the parser's depth limit) to a fixed point with
// a content id.
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string>

#include "taskyon/json/json.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace taskyon;
  json::Value value;
  if (size > 0 && data[0] == 'c')
    try {  // nlohmann's CBOR reader throws out_of_range for huge declared sizes even with allow_exceptions=false
      value = json::Value::from_cbor(data + 1, data + size, /*strict=*/false, /*allow_exceptions=*/false,
                                     json::Value::cbor_tag_handler_t::ignore);
    } catch (const std::exception&) {
      return 0;
    }
  else
    value = json::Value::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return 0;
  auto canonical = json::canonicalize(value);
  if (!canonical) return 0;
  auto again = json::parse(*canonical);
  if (!again) {
    // By design the strict parser refuses nesting past ParseLimits::max_depth
    // (512); a deeper value can be canonicalized but not read back. Anything else is a bug.
    if (again.error().message.find("nesting deeper than") != std::string::npos) return 0;
    std::abort();
  }
  auto twice = json::canonicalize(*again);
  if (!twice || *twice != *canonical) std::abort();
  auto id = json::content_id_of(*again);
  if (!id || !json::is_content_id(*id)) std::abort();
  return 0;
}
