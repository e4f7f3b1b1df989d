// Internal to json/: where the canonical writer (canonical.cc) puts its bytes.
// StringSink writes into a std::string (canonicalize, canonicalize_into),
// CountSink only counts (canonical_size);
// Sha256Sink collects the text in a 16 KiB buffer and hands it to SHA-256 in
// blocks (it never holds the whole text; content_id_of). The writer asks for
// room(n) and formats straight into it, so a number or a short member name
// costs one bounds check and no copy.
#pragma once

#include <algorithm>
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

// Writes straight into a string, after what it already held: no buffer to
// copy from. room(n) grows the string by doubling without filling the new
// bytes (resize_and_overwrite); flush() trims it to what was written.
class StringSink {
 public:
  static constexpr std::size_t kSize = 16384;  // as BufferedSink: the most one room() asks for

  explicit StringSink(std::string& out) : out_(out) {
    const std::size_t held = out.size();
    grow(held, kSize);
  }

  char* room(std::size_t n) {
    if (static_cast<std::size_t>(end_ - at_) < n) grow(static_cast<std::size_t>(at_ - out_.data()), n);
    return at_;
  }
  void wrote(std::size_t k) { at_ += k; }
  void push(char c) { *room(1) = c, ++at_; }
  void append(const char* p, std::size_t n) {
    std::memcpy(room(n), p, n);
    at_ += n;
  }
  void append(std::string_view s) { append(s.data(), s.size()); }
  void flush() { out_.resize(static_cast<std::size_t>(at_ - out_.data())); }

 private:
  // At least n bytes of room after the first `used`.
  [[gnu::noinline]] void grow(std::size_t used, std::size_t n) {
    const std::size_t size = std::max(out_.size() * 2, used + std::max(n, kSize));
    out_.resize_and_overwrite(size, [](char*, std::size_t k) { return k; });  // the new bytes are written before read
    at_ = out_.data() + used;
    end_ = out_.data() + out_.size();
  }

  std::string& out_;
  char* at_ = nullptr;
  char* end_ = nullptr;
};

// Counts the bytes and keeps none: room() hands out the same scratch buffer.
class CountSink {
 public:
  static constexpr std::size_t kSize = 16384;

  char* room(std::size_t) { return scratch_; }
  void wrote(std::size_t k) { count_ += k; }
  void push(char) { ++count_; }
  void append(const char*, std::size_t n) { count_ += n; }
  void append(std::string_view s) { count_ += s.size(); }
  void flush() {}
  std::size_t count() const { return count_; }

 private:
  std::size_t count_ = 0;
  char scratch_[kSize];
};

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
