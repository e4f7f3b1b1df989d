// SHA-256 (FIPS 180-4) through OpenSSL's EVP interface, and content ids
// (DESIGN §2: "sha256:" + 64 lower-case hex digits over canonical JSON).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <openssl/evp.h>

#include "taskyon/json/json.h"

namespace taskyon::json {
namespace {

constexpr std::string_view kPrefix = "sha256:";

}  // namespace

std::string sha256_hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr) != 1 || length != 32) {
    // No Result to carry this, and a wrong or empty hash would silently
    // break every content address: a host without SHA-256 cannot go on.
    std::fputs("taskyon: OpenSSL EVP_Digest(SHA-256) failed\n", stderr);
    std::abort();
  }
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * length);
  for (unsigned int i = 0; i < length; ++i) {
    out.push_back(hex[digest[i] >> 4]);
    out.push_back(hex[digest[i] & 0xF]);
  }
  return out;
}

std::string content_id(std::string_view canonical_bytes) {
  return std::string(kPrefix) + sha256_hex(canonical_bytes);
}

bool is_content_id(std::string_view id) {
  if (!id.starts_with(kPrefix) || id.size() != kPrefix.size() + 64) return false;
  id.remove_prefix(kPrefix.size());
  return id.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

}  // namespace taskyon::json
