// domain_to_ascii()'s simple-mapping fast path (host.cc simply_mapped:
// fullwidth and circled letters and digits, ideographic full stops) against
// libidn2 itself (domain_to_ascii_idn2) on every code point of the mapped
// ranges and their neighbours, in several positions, and on every non-ASCII
// host of the SSRF corpus and the WHATWG vectors: value or failure, equal.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "taskyon/capability/url.h"
#include "taskyon/capability/url_parts.h"
#include "taskyon/json/json.h"

namespace taskyon::capability {
namespace {

namespace fs = std::filesystem;

std::string utf8(char32_t cp) {
  std::string s;
  if (cp < 0x80) s += static_cast<char>(cp);
  else if (cp < 0x800) s += {static_cast<char>(0xc0 | cp >> 6), static_cast<char>(0x80 | (cp & 0x3f))};
  else
    s += {static_cast<char>(0xe0 | cp >> 12), static_cast<char>(0x80 | (cp >> 6 & 0x3f)),
          static_cast<char>(0x80 | (cp & 0x3f))};
  return s;
}

void expect_same(const std::string& domain) {
  SCOPED_TRACE("domain: " + domain);
  const auto fast = detail::domain_to_ascii(domain);
  const auto idn2 = detail::domain_to_ascii_idn2(domain);
  ASSERT_EQ(fast.has_value(), idn2.has_value()) << (fast ? *fast : std::string(fast.error())) << " vs "
                                                << (idn2 ? *idn2 : std::string(idn2.error()));
  if (fast) EXPECT_EQ(*fast, *idn2);
  else EXPECT_EQ(fast.error(), idn2.error());
}

TEST(IdnaFastPath, EveryMappedCodePointAgreesWithLibidn2) {
  std::vector<char32_t> cps;
  const std::pair<char32_t, char32_t> ranges[] = {
      {0xff0c, 0xff1b}, {0xff1f, 0xff3c}, {0xff3f, 0xff5c}, {0xff5f, 0xff63}, {0x24b4, 0x24eb}, {0x3000, 0x3004}};
  for (auto [lo, hi] : ranges)
    for (char32_t cp = lo; cp <= hi; ++cp) cps.push_back(cp);
  int fast = 0;
  for (char32_t cp : cps) {
    const std::string c = utf8(cp);
    for (const std::string& d : {c, "a" + c + "b.com", c + c + "." + c, "EX" + c + "ample.COM", "127" + c + "0" + c + "0" + c + "1",
                                 c + ".com", "x" + c + "-y", "xn" + c + "-abc", "a" + c + ".", c + "." + c + "." + c + "." + c}) {
      expect_same(d);
      fast += detail::domain_to_ascii(d) == detail::domain_to_ascii_idn2(d);
    }
  }
  EXPECT_GT(fast, 0);
}

TEST(IdnaFastPath, LengthsSeparatorsAndPunycodeAgreeWithLibidn2) {
  const std::string a = utf8(0xff41), dot = utf8(0x3002);
  for (int n : {1, 62, 63, 64, 65}) {
    std::string label;
    for (int i = 0; i < n; ++i) label += i % 2 ? "b" : a;
    expect_same(label + dot + "com");
  }
  std::string longest;
  for (int i = 0; i < 64; ++i) longest += a + "bc" + dot;  // 256 bytes once mapped
  expect_same(longest + "d");
  for (const std::string& d : {dot + a, a + dot + dot + "b", a + dot, utf8(0xff58) + utf8(0xff4e) + "--mnchen-3ya",
                               "xn--" + a, a + "_b", a + " b", a + "%41", a + utf8(0xe9), a + utf8(0x200b) + "b"})
    expect_same(d);
}

std::vector<std::string> urls_of(const fs::path& path, const char* list, const char* field) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << "cannot open " << path;
  std::stringstream text;
  text << in.rdbuf();
  auto doc = json::parse(text.str());
  EXPECT_TRUE(doc.has_value()) << path;
  std::vector<std::string> out;
  if (!doc) return out;
  const json::Value& items = list ? (*doc)[list] : *doc;
  for (const auto& v : items) out.push_back(v[field].get<std::string>());
  return out;
}

TEST(IdnaFastPath, CorpusAndVectorHostsAgreeWithLibidn2) {
  std::vector<std::string> urls =
      urls_of(fs::path(TASKYON_SOURCE_DIR) / ".." / "shared" / "corpora" / "ssrf_public.json", nullptr, "url");
  const auto vectors = urls_of(fs::path(TASKYON_TESTDATA) / "url" / "whatwg_vectors.json", "vectors", "input");
  urls.insert(urls.end(), vectors.begin(), vectors.end());
  int non_ascii = 0;
  for (const std::string& u : urls) {
    auto url = parse_url(u);
    if (!url || url->host_input.empty() || url->host_input.front() == '[') continue;
    const std::string& host = url->host_input;
    bool ascii = true;
    for (unsigned char c : host) ascii = ascii && c < 0x80;
    if (ascii || host.find('%') != std::string::npos || !detail::is_utf8(host)) continue;
    ++non_ascii;
    expect_same(host);
  }
  EXPECT_GE(non_ascii, 10);
}

}  // namespace
}  // namespace taskyon::capability
