#include "taskyon/http/page.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <string_view>
#include <utility>

#include <fmt/format.h>

namespace taskyon::http {

namespace {

constexpr std::array<std::pair<std::string_view, std::string_view>, 12> kTypes = {{
    {".html", "text/html; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".mjs", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".json", "application/json"},
    {".wasm", "application/wasm"},
    {".png", "image/png"},
    {".svg", "image/svg+xml"},
    {".txt", "text/plain; charset=utf-8"},
    {".zip", "application/zip"},
    {".whl", "application/zip"},
    {".map", "application/json"},
}};

// The page's own CSP header: no framing of the host page, no <base>, no
// plugins. Scripts are the page's business (its sandboxes carry their own CSP).
constexpr std::string_view kHtmlCsp = "frame-ancestors 'none'; base-uri 'none'; object-src 'none'";

bool safe_relative(std::string_view rel) {
  if (rel.empty() || rel.find('\0') != std::string_view::npos || rel.find('\\') != std::string_view::npos) return false;
  std::size_t at = 0;
  while (at <= rel.size()) {
    const std::size_t end = std::min(rel.find('/', at), rel.size());
    const std::string_view segment = rel.substr(at, end - at);
    if (segment.empty() || segment.front() == '.') return false;
    at = end + 1;
  }
  return true;
}

Response not_found() { return Response::error(404, "not_found", "no such file in the page (docs/serve.md)"); }

// The bytes of root/rel under the rules of page.h, or 404.
Response serve_file(const std::filesystem::path& root, std::string_view rel) {
  if (!safe_relative(rel)) return not_found();
  const std::string type = page_content_type(rel);
  if (type.empty()) return not_found();
  std::error_code ec;
  const std::filesystem::path real = std::filesystem::canonical(root / std::string(rel), ec);
  if (ec) return not_found();
  const std::string& r = real.native();
  const std::string& base = root.native();
  if (r.size() <= base.size() || r.compare(0, base.size(), base) != 0 || r[base.size()] != '/') return not_found();
  const int fd = ::open(r.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return not_found();
  struct stat st {};
  Response out;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<std::size_t>(st.st_size) > kMaxPageFileBytes) {
    ::close(fd);
    return not_found();
  }
  out.body.resize(static_cast<std::size_t>(st.st_size));
  std::size_t got = 0;
  while (got < out.body.size()) {
    const ssize_t n = ::read(fd, out.body.data() + got, out.body.size() - got);
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (got != out.body.size()) return Response::error(500, "io", "the file changed while it was read");
  out.content_type = type;
  out.headers = {{"Referrer-Policy", "no-referrer"}, {"X-Content-Type-Options", "nosniff"}};
  if (type.starts_with("text/html")) out.headers.push_back({"Content-Security-Policy", std::string(kHtmlCsp)});
  return out;
}

}  // namespace

std::string page_prefix(std::string_view token) { return fmt::format("/page/{}/", token); }

std::string page_content_type(std::string_view file_name) {
  const std::size_t slash = file_name.rfind('/');
  const std::string_view base = slash == std::string_view::npos ? file_name : file_name.substr(slash + 1);
  const std::size_t dot = base.rfind('.');
  if (dot == std::string_view::npos || dot == 0) return "";
  const std::string_view ext = base.substr(dot);
  for (const auto& [e, type] : kTypes)
    if (e == ext) return std::string(type);
  return "";
}

Result<void> mount_page(Server& server, const std::string& root) {
  std::error_code ec;
  const std::filesystem::path real = std::filesystem::canonical(root, ec);
  if (ec || !std::filesystem::is_directory(real, ec))
    return fail(Errc::bad_usage, fmt::format("--page {}: not a directory", root), "--page");
  server.handle("GET", "/page/[0-9a-f]{64}/(.*)", [real](const Request& req) {
    return serve_file(real, req.params.empty() ? std::string_view() : std::string_view(req.params[0]));
  });
  return {};
}

}  // namespace taskyon::http
