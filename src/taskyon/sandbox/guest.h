// Code that runs inside a sandbox, compiled into the host at build time
// (cmake/embed.cmake); it is never read from the source tree at run time.
#pragma once

#include <string_view>

namespace taskyon::guest {

// The Node harness, src/guest/node/bootstrap.js with the shared guest core
// (src/guest/common/core.js) inserted at its `// @include` line (UTF-8 text).
std::string_view node_bootstrap();

// The Deno harness, src/guest/deno/harness.js, likewise with the guest core.
std::string_view deno_harness();

}  // namespace taskyon::guest
