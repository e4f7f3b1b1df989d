// wasm/ only: the part of OpenSSL's EVP digest interface that json/ uses
// (hash.cc, canonical_sink.h), over a portable SHA-256 (FIPS 180-4), so the
// shared sources stay as they are. OpenSSL is not built for wasm32-wasi;
// the native build keeps it. The parity test (tests/wasm_parity_test.cc)
// compares every content id of this SHA-256 with OpenSSL's.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#define EVP_MAX_MD_SIZE 64

struct EVP_MD {
  int unused;
};
struct ENGINE;

struct EVP_MD_CTX {
  std::uint32_t h[8];
  std::uint64_t bytes;
  unsigned char block[64];
  std::size_t used;
};

namespace taskyon_wasm_sha256 {

inline std::uint32_t rotr(std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

inline void compress(EVP_MD_CTX* c, const unsigned char* p) {
  static constexpr std::uint32_t k[64] = {
      0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
      0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
      0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
      0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
      0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
      0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
      0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
      0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
  std::uint32_t w[64];
  for (int i = 0; i < 16; ++i)
    w[i] = std::uint32_t(p[4 * i]) << 24 | std::uint32_t(p[4 * i + 1]) << 16 | std::uint32_t(p[4 * i + 2]) << 8 |
           std::uint32_t(p[4 * i + 3]);
  for (int i = 16; i < 64; ++i) {
    const std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    const std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  std::uint32_t a = c->h[0], b = c->h[1], cc = c->h[2], d = c->h[3], e = c->h[4], f = c->h[5], g = c->h[6],
                h = c->h[7];
  for (int i = 0; i < 64; ++i) {
    const std::uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
    const std::uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & cc) ^ (b & cc));
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = cc;
    cc = b;
    b = a;
    a = t1 + t2;
  }
  c->h[0] += a;
  c->h[1] += b;
  c->h[2] += cc;
  c->h[3] += d;
  c->h[4] += e;
  c->h[5] += f;
  c->h[6] += g;
  c->h[7] += h;
}

}  // namespace taskyon_wasm_sha256

inline const EVP_MD* EVP_sha256() {
  static const EVP_MD md{0};
  return &md;
}
inline EVP_MD_CTX* EVP_MD_CTX_new() { return new EVP_MD_CTX{}; }
inline void EVP_MD_CTX_free(EVP_MD_CTX* c) { delete c; }
inline int EVP_DigestInit_ex(EVP_MD_CTX* c, const EVP_MD*, ENGINE*) {
  static constexpr std::uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                          0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::memcpy(c->h, iv, sizeof iv);
  c->bytes = 0;
  c->used = 0;
  return 1;
}
inline int EVP_DigestUpdate(EVP_MD_CTX* c, const void* data, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  c->bytes += n;
  while (n) {
    const std::size_t take = n < 64 - c->used ? n : 64 - c->used;
    std::memcpy(c->block + c->used, p, take);
    c->used += take;
    p += take;
    n -= take;
    if (c->used == 64) {
      taskyon_wasm_sha256::compress(c, c->block);
      c->used = 0;
    }
  }
  return 1;
}
inline int EVP_DigestFinal_ex(EVP_MD_CTX* c, unsigned char* out, unsigned int* length) {
  const std::uint64_t bits = c->bytes * 8;
  const unsigned char one = 0x80, zero = 0;
  EVP_DigestUpdate(c, &one, 1);
  while (c->used != 56) EVP_DigestUpdate(c, &zero, 1);
  unsigned char tail[8];
  for (int i = 0; i < 8; ++i) tail[i] = static_cast<unsigned char>(bits >> (56 - 8 * i));
  EVP_DigestUpdate(c, tail, 8);
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 4; ++j) out[4 * i + j] = static_cast<unsigned char>(c->h[i] >> (24 - 8 * j));
  if (length) *length = 32;
  return 1;
}
inline int EVP_Digest(const void* data, std::size_t n, unsigned char* out, unsigned int* length, const EVP_MD* md,
                      ENGINE*) {
  EVP_MD_CTX c;
  EVP_DigestInit_ex(&c, md, nullptr);
  EVP_DigestUpdate(&c, data, n);
  return EVP_DigestFinal_ex(&c, out, length);
}
