// Internal to json/: where the canonical writer (canonical.cc) puts its bytes.
// StringSink builds the text; Sha256Sink feeds the bytes to SHA-256 in 8 KiB
// blocks and never holds the whole text (content_id_of).
#pragma once

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include <openssl/evp.h>

namespace taskyon::json {

struct StringSink {
  std::string out;
  void push(char c) { out.push_back(c); }
  void append(std::string_view s) { out.append(s); }
};

class Sha256Sink {
 public:
  Sha256Sink() {
    if (!ctx_ || EVP_DigestInit_ex(ctx_, md(), nullptr) != 1) die();
  }
  Sha256Sink(const Sha256Sink&) = delete;
  Sha256Sink& operator=(const Sha256Sink&) = delete;
  ~Sha256Sink() { EVP_MD_CTX_free(ctx_); }

  void push(char c) {
    if (used_ == sizeof buf_) flush();
    buf_[used_++] = c;
  }
  void append(std::string_view s) {
    if (s.size() > sizeof buf_ - used_) {
      flush();
      if (s.size() >= sizeof buf_) {
        update(s.data(), s.size());
        return;
      }
    }
    std::memcpy(buf_ + used_, s.data(), s.size());
    used_ += s.size();
  }
  // Lower-case hex digest of every byte written; call once.
  std::string hex() {
    flush();
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    if (EVP_DigestFinal_ex(ctx_, digest, &length) != 1 || length != 32) die();
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out(64, '0');
    for (unsigned int i = 0; i < 32; ++i) {
      out[2 * i] = kDigits[digest[i] >> 4];
      out[2 * i + 1] = kDigits[digest[i] & 0xF];
    }
    return out;
  }

 private:
  // Fetched once per process (OpenSSL 3 looks the algorithm up otherwise).
  static const EVP_MD* md() {
    static const EVP_MD* sha256 = EVP_sha256();
    return sha256;
  }
  void flush() {
    if (used_) update(buf_, used_);
    used_ = 0;
  }
  void update(const void* p, std::size_t n) {
    if (EVP_DigestUpdate(ctx_, p, n) != 1) die();
  }
  // As sha256_hex (hash.cc): a host whose SHA-256 fails cannot go on.
  [[noreturn]] static void die() {
    std::fputs("taskyon: OpenSSL SHA-256 failed\n", stderr);
    std::abort();
  }
  EVP_MD_CTX* ctx_ = EVP_MD_CTX_new();
  std::size_t used_ = 0;
  char buf_[8192];
};

}  // namespace taskyon::json
