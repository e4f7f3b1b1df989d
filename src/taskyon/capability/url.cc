// The WHATWG URL Standard's basic URL parser (§4.4) for absolute URLs of the
// special schemes, with no base URL and no state override. The states keep the
// standard's names; where a state only consumes a run of code points (the
// authority, the port, the query) the run is found first and handled whole,
// which gives the same result as the code-point-at-a-time algorithm.
#include <algorithm>
#include <array>
#include <cstdint>
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

// Appends runs of bytes outside the set whole; a URL rarely needs encoding.
void append_encoded(std::string& out, std::string_view in, const ByteSet& set) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  const char* p = in.data();
  const char* const end = p + in.size();
  while (p < end) {
    const char* const run = p;
    while (p < end && !set[static_cast<unsigned char>(*p)]) ++p;
    out.append(run, static_cast<std::size_t>(p - run));
    if (p == end) break;
    const auto c = static_cast<unsigned char>(*p++);
    const char escaped[3] = {'%', kHex[c >> 4], kHex[c & 0xf]};
    out.append(escaped, 3);
  }
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
  // Appends "/" + the encoded run; the caller then keeps it (commit) or drops it.
  std::string_view stage(std::string_view run) {
    staged_ = out_.size();
    out_ += '/';
    append_encoded(out_, run, kPathSet);
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
  Parser(std::string_view input, Url& url) : s_(input), n_(input.size()), url_(url) {}

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
  bool ends_authority(std::size_t i) const {
    if (i >= n_) return true;
    const char c = s_[i];
    return c == '/' || c == '\\' || c == '?' || c == '#';
  }

  // Failures never quote the input: a URL may carry credentials.
  static Status failure(std::string_view name, std::string_view what) {
    return Error{Errc::bad_usage, fmt::format("{}: {}", name, what), {}};
  }

  Status authority_state(std::size_t p) {
    std::size_t end = p;
    while (!ends_authority(end)) ++end;
    // Every '@' ends the userinfo read so far; the last one ends it for good.
    // Earlier '@'s land in the userinfo as "%40", and the first ':' anywhere
    // before the last '@' separates username from password.
    const std::string_view authority = s_.substr(p, end - p);
    const auto at_sign = authority.rfind('@');
    std::size_t host_start = p;
    if (at_sign != std::string_view::npos) {
      const std::string_view userinfo = authority.substr(0, at_sign);
      const auto colon = userinfo.find(':');
      append_encoded(url_.username, userinfo.substr(0, colon), kUserinfoSet);
      if (colon != std::string_view::npos) append_encoded(url_.password, userinfo.substr(colon + 1), kUserinfoSet);
      host_start = p + at_sign + 1;
      if (host_start == end) return failure("host-missing", "credentials are followed by no host");
    }
    return host_state(host_start, end);
  }

  Status host_state(std::size_t p, std::size_t end) {
    // The host runs to the first ':' outside brackets.
    bool inside_brackets = false;
    std::size_t colon = end;
    for (std::size_t i = p; i < end; ++i) {
      if (s_[i] == ':' && !inside_brackets) {
        colon = i;
        break;
      }
      if (s_[i] == '[') inside_brackets = true;
      if (s_[i] == ']') inside_brackets = false;
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
        std::size_t end = p;
        while (!ends_authority(end)) ++end;
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
      // A run of code points up to the next delimiter is one segment (the buffer).
      std::size_t end = p;
      while (end < n_ && s_[end] != '/' && s_[end] != '\\' && s_[end] != '?' && s_[end] != '#') ++end;
      const bool eof = end == n_;
      const char c = eof ? '\0' : s_[end];
      const bool slash = c == '/' || c == '\\';
      const bool first = path.size() == 0;
      const std::string_view buffer = path.stage(s_.substr(p, end - p));
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
};

// Runs the parser into one Result, returned by name (no Url is moved).
Result<Url> run_parser(std::string_view input) {
  Result<Url> result{std::in_place};
  if (Status failed = Parser(input, *result).run()) result = std::unexpected(std::move(*failed));
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
  if (input.size() > limits.max_input_bytes)
    return fail(Errc::bad_usage, fmt::format("url-too-long: the URL is longer than {} bytes", limits.max_input_bytes));
  // One pass finds the usual case: printable ASCII (and DEL) only, so valid
  // UTF-8 with no tab or newline; anything else takes the careful path.
  const bool plain = std::all_of(input.begin(), input.end(),
                                 [](char c) { return static_cast<unsigned char>(c - 0x20) < 0x60; });
  if (!plain && !detail::is_utf8(input)) return fail(Errc::bad_usage, "url-not-utf8: the URL is not valid UTF-8");
  // Pre-processing: strip leading and trailing C0 control or space; remove
  // every ASCII tab or newline.
  while (!input.empty() && static_cast<unsigned char>(input.front()) <= 0x20) input.remove_prefix(1);
  while (!input.empty() && static_cast<unsigned char>(input.back()) <= 0x20) input.remove_suffix(1);
  if (plain || std::none_of(input.begin(), input.end(), [](char c) { return c == '\t' || c == '\n' || c == '\r'; }))
    return run_parser(input);
  std::string cleaned;
  cleaned.reserve(input.size());
  for (char c : input)
    if (c != '\t' && c != '\n' && c != '\r') cleaned += c;
  return run_parser(cleaned);
}

}  // namespace taskyon::capability
