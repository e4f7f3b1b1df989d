// Argument validation (registry/schema.h): the input is strict JSON
// [parameters, arguments]; a parameters schema the install check accepts is
// then used to validate the arguments, as `tycli call` does. Never crashes or
// hangs (libFuzzer's -timeout catches a regex that backtracks).
#include <cstdint>
#include <string_view>

#include "taskyon/json/json.h"
#include "taskyon/registry/schema.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace taskyon;
  auto value = json::parse(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!value || !value->is_array() || value->size() != 2) return 0;
  const auto& parameters = (*value)[0];
  if (!registry::check_parameters_schema(parameters)) return 0;
  (void)registry::validate_arguments(parameters, (*value)[1]);
  return 0;
}
