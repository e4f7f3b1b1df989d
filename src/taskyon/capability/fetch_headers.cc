// Request header rules (fetch.h step 4) and {{secret:NAME}} placeholders.
#include <array>

#include <fmt/format.h>

#include "taskyon/capability/fetch_parts.h"

namespace taskyon::capability {
namespace {

using namespace std::string_view_literals;

constexpr std::string_view kOpen = "{{secret:";
constexpr std::string_view kClose = "}}";
constexpr std::size_t kMaxSecretName = 128;

constexpr char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 0x20) : c; }

bool iequals_prefix(std::string_view s, std::string_view lower_prefix) {
  if (s.size() < lower_prefix.size()) return false;
  for (std::size_t i = 0; i < lower_prefix.size(); ++i)
    if (lower(s[i]) != lower_prefix[i]) return false;
  return true;
}

bool secret_name_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '-';
}

// The length of the placeholder's NAME at `s` (just after "{{secret:"), or 0
// when no well-formed placeholder starts there.
std::size_t secret_name_length(std::string_view s) {
  std::size_t n = 0;
  while (n < s.size() && n <= kMaxSecretName && secret_name_char(s[n])) ++n;
  if (n == 0 || n > kMaxSecretName || s.substr(n, kClose.size()) != kClose) return 0;
  return n;
}

bool has_forbidden_byte(std::string_view value) {
  return value.find_first_of("\r\n\0"sv) != std::string_view::npos;
}

// Header names are tool input: quote at most 64 bytes, escaping anything odd.
std::string shown(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 64)) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f || c == '"' || c == '\\') out += fmt::format("\\x{:02x}", u);
    else out += c;
  }
  if (s.size() > 64) out += "...";
  return out;
}

}  // namespace

const RefusedHeader* refused_header(std::string_view name) {
  for (const RefusedHeader& h : kRefusedHeaders) {
    if (h.prefix ? iequals_prefix(name, h.name) : name.size() == h.name.size() && iequals_prefix(name, h.name))
      return &h;
  }
  return nullptr;
}

namespace detail {

FetchFailure failure(std::string_view code, std::string message) {
  return FetchFailure{std::string(code), std::move(message), {}};
}

bool is_token(std::string_view s) {
  static constexpr auto kTchar = [] {
    std::array<bool, 256> t{};
    for (int c = '0'; c <= '9'; ++c) t[c] = true;
    for (int c = 'a'; c <= 'z'; ++c) t[c] = t[c - 0x20] = true;
    for (char c : std::string_view("!#$%&'*+-.^_`|~")) t[static_cast<unsigned char>(c)] = true;
    return t;
  }();
  if (s.empty()) return false;
  for (char c : s)
    if (!kTchar[static_cast<unsigned char>(c)]) return false;
  return true;
}

std::expected<std::vector<Header>, FetchFailure> check_headers(const std::vector<Header>& headers) {
  std::vector<Header> out;
  out.reserve(headers.size());
  for (const Header& h : headers) {
    if (!is_token(h.name))
      return std::unexpected(failure(kInvalidRequest, fmt::format("header name \"{}\" is not an HTTP token (RFC 9110 §5.6.2)", shown(h.name))));
    if (const RefusedHeader* refused = refused_header(h.name))
      return std::unexpected(failure(kPolicyBlocked, fmt::format("header \"{}\" is refused: {}", shown(h.name), refused->why)));
    std::string_view value = h.value;
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    if (has_forbidden_byte(value))
      return std::unexpected(failure(
          kInvalidRequest, fmt::format("the value of header \"{}\" holds CR, LF or NUL (RFC 9110 §5.5)", shown(h.name))));
    for (auto at = value.find(kOpen); at != std::string_view::npos; at = value.find(kOpen, at + 1)) {
      if (secret_name_length(value.substr(at + kOpen.size())) == 0)
        return std::unexpected(failure(
            kInvalidRequest,
            fmt::format("header \"{}\" has a malformed secret placeholder: write {{{{secret:NAME}}}}, NAME of "
                        "1-128 letters, digits, '_', '.', '-'",
                        shown(h.name))));
    }
    out.push_back(Header{h.name, std::string(value)});
  }
  return out;
}

std::expected<std::vector<Header>, FetchFailure> fill_secrets(std::vector<Header> headers, std::string_view origin,
                                                             const SecretLookup& secret) {
  for (Header& h : headers) {
    if (h.value.find(kOpen) == std::string::npos) continue;
    std::string filled;
    std::string_view rest = h.value;
    for (auto at = rest.find(kOpen); at != std::string_view::npos; at = rest.find(kOpen)) {
      filled.append(rest.substr(0, at));
      rest.remove_prefix(at + kOpen.size());
      const std::size_t n = secret_name_length(rest);  // check_headers() saw it well-formed
      const std::string_view name = rest.substr(0, n);
      std::optional<std::string> value;
      if (secret) value = secret(origin, name);
      if (!value)
        return std::unexpected(
            failure(kDenied, fmt::format("no secret \"{}\" is stored for {} (header \"{}\")", name, origin, h.name)));
      if (has_forbidden_byte(*value))
        return std::unexpected(failure(
            kInvalidRequest, fmt::format("secret \"{}\" cannot go into a header: it holds CR, LF or NUL", name)));
      filled.append(*value);
      rest.remove_prefix(n + kClose.size());
    }
    filled.append(rest);
    h.value = std::move(filled);
  }
  return headers;
}

}  // namespace detail
}  // namespace taskyon::capability
