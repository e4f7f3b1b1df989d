// Static files for a browser host page served by `tycli serve --page DIR`
// (issue 14 item 7; docs/serve.md "The page"). A browser cannot put an
// `Authorization` header on a page load, a module import or a wasm fetch, so
// the page's URL carries the token in its path:
//   GET|HEAD /page/TOKEN/REL     the regular file DIR/REL
// and every URL the page resolves relative to itself carries it too. The
// transport (server.h) admits such a request by that path token (H1, compared
// in constant time) and for GET/HEAD only; everywhere else the header is still
// required, so the path token opens nothing but these files.
// What is served, and what is 404 (never a hint of what exists):
//   * only REL whose segments are non-empty and do not start with '.' (no
//     `..`, no hidden files such as .git), with no NUL or backslash;
//   * only files whose real path (symlinks resolved) stays inside DIR's, that
//     are regular files at most kMaxPageFileBytes, opened without following a
//     last symlink, and whose extension has a type below (no .db, no .token,
//     no source files);
//   * answers carry `Referrer-Policy: no-referrer` (the token must not leave in
//     a Referer), `X-Content-Type-Options: nosniff`, `Cache-Control: no-store`,
//     and HTML a CSP that refuses framing, <base> and plugins.
#pragma once

#include <cstddef>
#include <string>

#include "taskyon/base/error.h"
#include "taskyon/http/server.h"

namespace taskyon::http {

inline constexpr std::size_t kMaxPageFileBytes = 64u << 20;  // Pyodide's core wasm is ~9 MiB

// The path under which the page lives: "/page/" + token + "/".
std::string page_prefix(std::string_view token);

// The Content-Type for a file name by its extension, or "" when such files are
// not served: .html .js .mjs .css .json .wasm .png .svg .txt .zip .whl .map.
std::string page_content_type(std::string_view file_name);

// Routes GET/HEAD /page/TOKEN/REL to the files of `root`. Errc::bad_usage
// (naming --page) when `root` is not a directory.
Result<void> mount_page(Server& server, const std::string& root);

}  // namespace taskyon::http
