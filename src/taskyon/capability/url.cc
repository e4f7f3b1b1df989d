// The WHATWG URL Standard's basic URL parser (§4.4) for absolute URLs of the
// special schemes, with no base URL and no state override. The states keep the
// standard's names; where a state only consumes a run of code points (the
// authority, the port, the query) the run is found first and handled whole,
// which gives the same result as the code-point-at-a-time algorithm.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "taskyon/base/ascii.h"
#include "taskyon/capability/url.h"
#include "taskyon/capability/url_parts.h"

namespace taskyon::capability {
namespace {

using namespace std::string_view_literals;

// §1.3 percent-encode sets, on bytes. Every byte >= 0x80 (part of a non-ASCII
// code point) is in every set, so encoding byte by byte is UTF-8 percent-encoding.
using ByteSet = std::array<bool, 256>;

constexpr ByteSet make_set(std::string_view extra) {
  ByteSet set{};
  for (int c = 0; c < 256; ++c) set[c] = c < 0x20 || c > 0x7e;  // C0 control percent-encode set
  for (char c : extra) set[static_cast<unsigned char>(c)] = true;
  return set;
}

constexpr ByteSet kFragmentSet = make_set(" \"<>`");
constexpr ByteSet kQuerySet = make_set(" \"#<>");
constexpr ByteSet kSpecialQuerySet = make_set(" \"#<>'");
// The path set as Node's URL (ada 2.9) applies it: query set + ? ` { }.
constexpr ByteSet kPathSet = make_set(" \"#<>?`{}");
constexpr ByteSet kUserinfoSet = make_set(" \"#<>?`{}/:;=@[\\]^|");

// The bytes that end a path segment ('/', '\\', '?', '#') or that the path
// set encodes: a segment is copied up to the first of them in one append.
constexpr ByteSet kPathStop = [] {
  ByteSet set = kPathSet;  // holds '?' and '#' already
  set['/'] = set['\\'] = true;
  return set;
}();
constexpr bool is_path_delimiter(char c) { return c == '/' || c == '\\' || c == '?' || c == '#'; }

// The length of the longest prefix of `in` with no byte in `set`: eight
// lookups and one branch per step over long clean runs (a path or query of
// a few KiB is plain letters), then byte by byte.
std::size_t clean_prefix(std::string_view in, const ByteSet& set) {
  const auto* p = reinterpret_cast<const unsigned char*>(in.data());
  const std::size_t n = in.size();
  std::size_t i = 0;
  for (; n - i >= 8; i += 8) {
    unsigned hit = 0;
    for (std::size_t k = 0; k < 8; ++k) hit |= set[p[i + k]];
    if (hit) break;
  }
  while (i < n && !set[p[i]]) ++i;
  return i;
}

// Appends `in` with the set's bytes percent-encoded. A URL rarely needs
// encoding: the clean prefix is found first and, when it is all of `in`,
// appended whole. Otherwise the rest is written in place into room for every
// byte encoded (at most 3x; the string is then cut to what was written), so a
// run of 4096 '@' in a userinfo costs one allocation, not 4096 appends.
void append_encoded(std::string& out, std::string_view in, const ByteSet& set) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  const std::size_t clean = clean_prefix(in, set);
  if (clean == in.size()) {
    out.append(in);
    return;
  }
  const std::size_t at = out.size();
  out.resize_and_overwrite(at + clean + 3 * (in.size() - clean), [&](char* buf, std::size_t) {
    char* w = buf + at;
    std::memcpy(w, in.data(), clean);
    w += clean;
    for (std::size_t i = clean; i < in.size(); ++i) {
      const auto c = static_cast<unsigned char>(in[i]);
      if (set[c]) {
        w[0] = '%';
        w[1] = kHex[c >> 4];
        w[2] = kHex[c & 0xf];
        w += 3;
      } else {
        *w++ = static_cast<char>(c);
      }
    }
    return static_cast<std::size_t>(w - buf);
  });
}

using ascii::has_zero_byte;
using ascii::kHighBits;
using ascii::kOnes;
using ascii::load8;

// Nonzero when a byte of w is '/', '\\', '?' or '#' (EOF aside, what ends an
// authority or a path segment). '/' (0x2f) and '?' (0x3f) are the bytes b with b | 0x10 == 0x3f.
constexpr std::uint64_t has_delimiter(std::uint64_t w) {
  return has_zero_byte((w | kOnes * 0x10) ^ (kOnes * 0x3f)) | has_zero_byte(w ^ (kOnes * '\\')) |
         has_zero_byte(w ^ (kOnes * '#'));
}

// True when every byte is printable ASCII or DEL (0x20-0x7f). The "has a byte
// below 0x20" bit trick can flag a byte above a real hit but never misses
// one, so the answer for the whole input is exact.
bool printable_ascii(std::string_view s) {
  const char* p = s.data();
  const char* const end = p + s.size();
  std::uint64_t outside = 0;
  for (; end - p >= 8; p += 8) {
    const std::uint64_t w = load8(p);
    outside |= ((w - kOnes * 0x20) & ~w) | w;
  }
  for (; p != end; ++p) outside |= static_cast<unsigned char>(*p - 0x20) < 0x60 ? 0 : kHighBits;
  return (outside & kHighBits) == 0;
}

constexpr bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
constexpr bool is_digit(char c) { return c >= '0' && c <= '9'; }
using ascii::iequals;
using ascii::to_lower;

bool is_single_dot(std::string_view s) { return s == "." || iequals(s, "%2e"); }
bool is_double_dot(std::string_view s) {
  return s == ".." || iequals(s, ".%2e") || iequals(s, "%2e.") || iequals(s, "%2e%2e");
}
bool is_windows_drive_letter(std::string_view s) {
  return s.size() == 2 && is_alpha(s[0]) && (s[1] == ':' || s[1] == '|');
}

struct SchemeInfo {
  std::string_view name;
  Scheme kind;
  std::uint16_t default_port;
};
constexpr SchemeInfo kSpecial[] = {
    {"https", Scheme::https, 443}, {"http", Scheme::http, 80}, {"wss", Scheme::wss, 443},
    {"ws", Scheme::ws, 80},        {"ftp", Scheme::ftp, 21},   {"file", Scheme::file, 0},
};

std::uint16_t default_port_of(Scheme kind) {
  for (const auto& s : kSpecial)
    if (s.kind == kind) return s.default_port;
  return 0;
}

// The path as a serialized string ("/a/b") plus its segment count: appending
// and shortening never need the list itself.
class Path {
 public:
  Path(std::string& out, bool file) : out_(out), file_(file) {}

  void append(std::string_view segment) {
    out_ += '/';
    out_ += segment;
    ++count_;
  }
  // Appends "/" + the clean run + the encoded rest; the caller then keeps it
  // (commit) or drops it.
  std::string_view stage(std::string_view clean, std::string_view rest) {
    staged_ = out_.size();
    out_ += '/';
    out_ += clean;
    if (!rest.empty()) append_encoded(out_, rest, kPathSet);
    return std::string_view(out_).substr(staged_ + 1);
  }
  void commit() { ++count_; }
  void drop() { out_.resize(staged_); }
  // §4.2 shorten a path: a file URL keeps a lone normalized drive letter.
  void shorten() {
    if (count_ == 0) return;
    if (file_ && count_ == 1 && out_.size() == 3 && is_alpha(out_[1]) && out_[2] == ':') return;
    out_.resize(out_.rfind('/'));
    --count_;
  }
  std::size_t size() const { return count_; }

 private:
  std::string& out_;
  bool file_;
  std::size_t count_ = 0;
  std::size_t staged_ = 0;
};

// A state's outcome: nothing, or the failure. The Url is built in place.
using Status = std::optional<Error>;

class Parser {
 public:
  Parser(std::string_view input, Url& url, detail::Userinfo userinfo)
      : s_(input), n_(input.size()), url_(url), userinfo_(userinfo) {}

  Status run() {
    // Scheme start and scheme states.
    if (n_ == 0 || !is_alpha(s_[0])) return failure("missing-scheme-non-relative-URL", "no scheme");
    std::size_t p = 0;
    while (p < n_ && (is_alpha(s_[p]) || is_digit(s_[p]) || s_[p] == '+' || s_[p] == '-' || s_[p] == '.')) ++p;
    if (p == n_ || s_[p] != ':') return failure("missing-scheme-non-relative-URL", "no scheme");
    url_.scheme.assign(s_.substr(0, p));
    for (char& c : url_.scheme) c = to_lower(c);
    ++p;
    for (const auto& info : kSpecial) {
      if (info.name == url_.scheme) {
        url_.kind = info.kind;
        break;
      }
    }
    if (!url_.special()) return std::nullopt;  // recognized, not parsed
    if (url_.kind == Scheme::file) return file_state(p);
    // Special authority slashes and special authority ignore slashes states.
    while (p < n_ && (s_[p] == '/' || s_[p] == '\\')) ++p;
    return authority_state(p);
  }

 private:
  char at(std::size_t i) const { return i < n_ ? s_[i] : '\0'; }
  // EOF, '/', '\\', '?', '#': where an authority (and its host and port) ends.
  bool ends_authority(std::size_t i) const { return i >= n_ || is_path_delimiter(s_[i]); }
  // The first i >= p where an authority or a path segment ends (EOF, '/',
  // '\\', '?', '#'); 8 bytes at a time, as an authority may be long
  // ("https://@@@@...@example.com/").
  std::size_t next_delimiter(std::size_t p) const {
    while (n_ - p >= 8 && !has_delimiter(load8(s_.data() + p))) p += 8;
    while (!ends_authority(p)) ++p;
    return p;
  }

  // Failures never quote the input: a URL may carry credentials.
  static Status failure(std::string_view name, std::string_view what) {
    std::string message;
    message.reserve(name.size() + 2 + what.size());
    detail::append_all(message, name, ": "sv, what);
    return Error{Errc::bad_usage, std::move(message), {}};
  }

  Status authority_state(std::size_t p) {
    const std::size_t end = next_delimiter(p);
    // Every '@' ends the userinfo read so far; the last one ends it for good.
    // Earlier '@'s land in the userinfo as "%40", and the first ':' anywhere
    // before the last '@' separates username from password.
    const std::string_view authority = s_.substr(p, end - p);
    const auto at_sign = authority.rfind('@');
    std::size_t host_start = p;
    if (at_sign != std::string_view::npos) {
      const std::string_view userinfo = authority.substr(0, at_sign);
      const auto colon = userinfo.find(':');
      if (userinfo_ == detail::Userinfo::encoded) {
        append_encoded(url_.username, userinfo.substr(0, colon), kUserinfoSet);
        if (colon != std::string_view::npos) append_encoded(url_.password, userinfo.substr(colon + 1), kUserinfoSet);
      } else {
        url_.username.assign(userinfo.substr(0, colon));
        if (colon != std::string_view::npos) url_.password.assign(userinfo.substr(colon + 1));
      }
      host_start = p + at_sign + 1;
      if (host_start == end) return failure("host-missing", "credentials are followed by no host");
    }
    return host_state(host_start, end);
  }

  Status host_state(std::size_t p, std::size_t end) {
    // The host runs to the first ':' outside brackets. Without a '[' before
    // the first ':' that is simply the first ':'.
    const std::string_view authority = s_.substr(p, end - p);
    std::size_t colon = std::min(authority.find(':'), authority.size());
    if (authority.substr(0, colon).find('[') == std::string_view::npos) {
      colon += p;
    } else {
      bool inside_brackets = false;
      colon = end;
      for (std::size_t i = p; i < end; ++i) {
        if (s_[i] == ':' && !inside_brackets) {
          colon = i;
          break;
        }
        if (s_[i] == '[') inside_brackets = true;
        if (s_[i] == ']') inside_brackets = false;
      }
    }
    if (colon == p) return failure("host-missing", "the host is empty");
    url_.host_input.assign(s_.substr(p, colon - p));
    auto host = detail::parse_utf8_host(url_.host_input);
    if (!host) return failure_from(host.error());
    url_.host = std::move(*host);
    if (colon < end) {
      // Port state: only ASCII digits up to the end of the authority.
      std::uint32_t port = 0;
      bool any = false;
      for (std::size_t i = colon + 1; i < end; ++i) {
        if (!is_digit(s_[i])) return failure("port-invalid", "the port is not a number");
        port = port * 10 + static_cast<std::uint32_t>(s_[i] - '0');
        if (port > 65535) return failure("port-out-of-range", "the port is greater than 65535");
        any = true;
      }
      if (any && port != default_port_of(url_.kind)) url_.port = static_cast<std::uint16_t>(port);
    }
    return path_start_state(end);
  }

  Status file_state(std::size_t p) {
    url_.host.kind = HostKind::empty;
    if (at(p) == '/' || at(p) == '\\') {
      ++p;
      // File slash state.
      if (at(p) == '/' || at(p) == '\\') {
        ++p;
        // File host state.
        const std::size_t end = next_delimiter(p);
        const std::string_view buffer = s_.substr(p, end - p);
        if (is_windows_drive_letter(buffer)) return path_state(p);  // the drive letter starts the path
        if (!buffer.empty()) {
          url_.host_input.assign(buffer);
          auto host = detail::parse_utf8_host(buffer);
          if (!host) return failure_from(host.error());
          if (host->kind == HostKind::domain && host->domain == "localhost") host->kind = HostKind::empty;
          if (host->kind == HostKind::empty) host->domain.clear();
          url_.host = std::move(*host);
        }
        return path_start_state(end);
      }
    }
    return path_state(p);
  }

  // Path start state (special): one leading '/' or '\\' is the path's own.
  Status path_start_state(std::size_t p) {
    if (at(p) == '/' || at(p) == '\\') ++p;
    return path_state(p);
  }

  Status path_state(std::size_t p) {
    Path path(url_.path, url_.kind == Scheme::file);
    while (true) {
      // A run of code points up to the next delimiter is one segment (the
      // buffer). One scan finds its end when nothing in it needs encoding;
      // the part after a byte that does is encoded on its own.
      const std::size_t clean = p + clean_prefix(s_.substr(p), kPathStop);
      const std::size_t end = next_delimiter(clean);
      const bool eof = end == n_;
      const char c = eof ? '\0' : s_[end];
      const bool slash = c == '/' || c == '\\';
      const bool first = path.size() == 0;
      const std::string_view buffer = path.stage(s_.substr(p, clean - p), s_.substr(clean, end - clean));
      if (buffer.size() <= 6 && is_double_dot(buffer)) {
        path.drop();
        path.shorten();
        if (!slash) path.append("");
      } else if (buffer.size() <= 3 && is_single_dot(buffer)) {
        path.drop();
        if (!slash) path.append("");
      } else {
        if (url_.kind == Scheme::file && first && is_windows_drive_letter(buffer)) url_.path.back() = ':';
        path.commit();
      }
      if (eof) return std::nullopt;
      p = end + 1;
      if (c == '?') return query_state(p);
      if (c == '#') return fragment_state(p);
    }
  }

  Status query_state(std::size_t p) {
    const auto hash = s_.find('#', p);
    const std::size_t end = hash == std::string_view::npos ? n_ : hash;
    url_.query.emplace();
    append_encoded(*url_.query, s_.substr(p, end - p), kSpecialQuerySet);
    if (hash == std::string_view::npos) return std::nullopt;
    return fragment_state(hash + 1);
  }

  Status fragment_state(std::size_t p) {
    url_.fragment.emplace();
    append_encoded(*url_.fragment, s_.substr(p), kFragmentSet);
    return std::nullopt;
  }

  static Status failure_from(Error e) {
    e.where.clear();
    return e;
  }

  std::string_view s_;
  std::size_t n_;
  Url& url_;
  detail::Userinfo userinfo_;
};

// Runs the parser into one Result, returned by name (no Url is moved).
Result<Url> run_parser(std::string_view input, detail::Userinfo userinfo) {
  Result<Url> result{std::in_place};
  if (Status failed = Parser(input, *result, userinfo).run()) result = std::unexpected(std::move(*failed));
  return result;
}

}  // namespace

std::uint16_t Url::default_port() const { return default_port_of(kind); }

std::string Url::href() const {
  if (!special()) return {};
  std::string out;
  out.reserve(scheme.size() + 3 + username.size() + password.size() + host.domain.size() + 8 + path.size() +
              (query ? query->size() + 1 : 0) + (fragment ? fragment->size() + 1 : 0));
  out += scheme;
  out += "://"sv;
  if (has_credentials()) {
    out += username;
    if (!password.empty()) {
      out += ':';
      out += password;
    }
    out += '@';
  }
  host.append_to(out);
  if (port) fmt::format_to(std::back_inserter(out), ":{}", *port);
  out += path;
  if (query) {
    out += '?';
    out += *query;
  }
  if (fragment) {
    out += '#';
    out += *fragment;
  }
  return out;
}

std::string Url::origin() const {
  if (!special() || kind == Scheme::file) return {};
  std::string out = scheme;
  out += "://"sv;
  host.append_to(out);
  if (port) fmt::format_to(std::back_inserter(out), ":{}", *port);
  return out;
}

Result<Url> parse_url(std::string_view input, const UrlLimits& limits) {
  return detail::parse_url_with(input, limits, detail::Userinfo::encoded);
}

Result<Url> detail::parse_url_with(std::string_view input, const UrlLimits& limits, Userinfo userinfo) {
  if (input.size() > limits.max_input_bytes)
    return fail(Errc::bad_usage, fmt::format("url-too-long: the URL is longer than {} bytes", limits.max_input_bytes));
  // One pass finds the usual case: printable ASCII (and DEL) only, so valid
  // UTF-8 with no tab or newline; anything else takes the careful path.
  const bool plain = printable_ascii(input);
  if (!plain && !detail::is_utf8(input)) return fail(Errc::bad_usage, "url-not-utf8: the URL is not valid UTF-8");
  // Pre-processing: strip leading and trailing C0 control or space; remove
  // every ASCII tab or newline.
  while (!input.empty() && static_cast<unsigned char>(input.front()) <= 0x20) input.remove_prefix(1);
  while (!input.empty() && static_cast<unsigned char>(input.back()) <= 0x20) input.remove_suffix(1);
  if (plain || std::none_of(input.begin(), input.end(), [](char c) { return c == '\t' || c == '\n' || c == '\r'; }))
    return run_parser(input, userinfo);
  std::string cleaned;
  cleaned.reserve(input.size());
  for (char c : input)
    if (c != '\t' && c != '\n' && c != '\r') cleaned += c;
  return run_parser(cleaned, userinfo);
}

}  // namespace taskyon::capability
