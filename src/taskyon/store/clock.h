// Wall-clock time stamps for stored rows.
#pragma once

#include <string>

namespace taskyon::store {

// Now, as ISO 8601 UTC with milliseconds: "2026-11-29T18:18:36.123Z".
std::string now_iso8601();

}  // namespace taskyon::store
