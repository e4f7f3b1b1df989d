// Internal to json/: where the canonical writer (canonical.cc) puts its bytes.
// Both sinks collect the text in a 16 KiB buffer and hand it on in blocks of
// up to that size: StringSink to a std::string, Sha256Sink to SHA-256 (it
// never holds the whole text; content_id_of). The writer asks for room(n) and
// formats straight into the buffer, so a number or a short member name costs
// one bounds check and no copy. AppendSink appends to a string the caller
// owns instead (canonicalize_into).
#pragma once

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include <openssl/evp.h>

namespace taskyon::json {

// Drain: a base with drain(const char*, std::size_t), called with every byte
// once, in order.
template <typename Drain>
class BufferedSink : public Drain {
 public:
  static constexpr std::size_t kSize = 16384;

  // At least n <= kSize writable bytes; wrote(k) keeps the first k of them.
  char* room(std::size_t n) {
    if (kSize - used_ < n) flush();
    return buf_ + used_;
  }
  void wrote(std::size_t k) { used_ += k; }

  void push(char c) {
    if (used_ == kSize) flush();
    buf_[used_++] = c;
  }
  void append(const char* p, std::size_t n) {
    if (n > kSize - used_) {
      flush();
      if (n >= kSize) {
        this->drain(p, n);
        return;
      }
    }
    std::memcpy(buf_ + used_, p, n);
    used_ += n;
  }
  void append(std::string_view s) { append(s.data(), s.size()); }

  // Hands on what is buffered; the writer calls it once at the end.
  void flush() {
    if (used_) this->drain(buf_, used_);
    used_ = 0;
  }

 private:
  std::size_t used_ = 0;
  char buf_[kSize];
};

struct StringDrain {
  std::string out;
  void drain(const char* p, std::size_t n) { out.append(p, n); }
};
using StringSink = BufferedSink<StringDrain>;

// Appends to a string the caller owns (canonicalize_into).
struct AppendDrain {
  std::string* out = nullptr;
  void drain(const char* p, std::size_t n) { out->append(p, n); }
};
using AppendSink = BufferedSink<AppendDrain>;

class Sha256Drain {
 public:
  Sha256Drain() {
    if (!ctx_ || EVP_DigestInit_ex(ctx_, md(), nullptr) != 1) die();
  }
  Sha256Drain(const Sha256Drain&) = delete;
  Sha256Drain& operator=(const Sha256Drain&) = delete;
  ~Sha256Drain() { EVP_MD_CTX_free(ctx_); }

  void drain(const char* p, std::size_t n) {
    if (EVP_DigestUpdate(ctx_, p, n) != 1) die();
  }
  // Lower-case hex digest of every byte drained; call once, after flush().
  std::string hex() {
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
  // As sha256_hex (hash.cc): a host whose SHA-256 fails cannot go on.
  [[noreturn]] static void die() {
    std::fputs("taskyon: OpenSSL SHA-256 failed\n", stderr);
    std::abort();
  }
  EVP_MD_CTX* ctx_ = EVP_MD_CTX_new();
};
using Sha256Sink = BufferedSink<Sha256Drain>;

}  // namespace taskyon::json
