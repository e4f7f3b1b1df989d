// A fetch decision (policy.h) as JSON, one shape for `tycli policy check
// --json` and the C ABI (abi/abi.h), so the CLI and the browser host cannot
// drift apart.
#pragma once

#include <string>
#include <string_view>

#include "taskyon/capability/policy.h"
#include "taskyon/json/json.h"

namespace taskyon::capability {

// Printable ASCII as it is, every other byte as \xNN (lower-case hex): for
// echoing a method, which may be any bytes when it is not a token (M7).
std::string printable_bytes(std::string_view s);

// {"verdict","access","reasonClass","reason","method","methodReason","href",
//  "origin","host","admitted"}: names as policy.h spells them (the classes of
// ../shared/corpora/ssrf_public.json); href, origin and host null when empty.
json::Value decision_json(const Decision& d);

}  // namespace taskyon::capability
