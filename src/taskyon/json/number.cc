// ECMAScript Number::toString(x) (ECMA-262 §6.1.6.1.20), the number form of
// RFC 8785 §3.2.2.3.
//
// The spec picks integers n, k, s with k >= 1, 10^(k-1) <= s < 10^k,
// s * 10^(n-k) == x and k as small as possible; among several such s the one
// closest to x (ECMA-262 Note 2, what every engine does). std::to_chars in
// shortest scientific form gives exactly that s (C++ [charconv.to.chars]:
// shortest round-trip, then closest, ties by round-to-nearest), as
// "d[.ddd]e±XX" where XX = n - 1. The layout below is ECMA-262 steps 6-10.
// Most fractions take a shorter way first (write_short_decimal).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <string>
#include <system_error>

#include "taskyon/json/json.h"
#include "taskyon/json/number_text.h"

namespace taskyon::json {

namespace detail {
namespace {

// A double that is m / 10^k for a small k (prices, coordinates, measurements:
// most fractions in JSON) is written as m's digits with a point put in,
// without std::to_chars's shortest-digits search. With |m| < 2^46 the gap
// between doubles near x is below 10^-k / 64, so at most one k-digit decimal
// rounds to x, and x * 10^k lies within 1/64 of it; m / 10^k == x (one
// correctly rounded division, both exact doubles) proves that it does. The
// least such k gives the fewest digits, which is ECMA-262's s (steps 5-8:
// x >= 1e-6, so the layout is fixed-point); nothing else has that many.
constexpr double kFixedFrom = 1e-6;
constexpr double kShortBelow = 70368744177664.0;  // 2^46
constexpr double kPowersOfTen[] = {1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8};

std::size_t write_short_decimal(char* out, double x) {
  const double magnitude = std::fabs(x);
  if (!(magnitude >= kFixedFrom)) return 0;
  for (int k = 0; k < static_cast<int>(std::size(kPowersOfTen)); ++k) {
    const double scaled = magnitude * kPowersOfTen[k];
    if (scaled >= kShortBelow) return 0;
    const double m = static_cast<double>(static_cast<std::int64_t>(scaled + 0.5));  // nearest (cvttsd2si, no libm)
    if (std::fabs(scaled - m) > 1.0 / 64 || m / kPowersOfTen[k] != magnitude) continue;
    char digits[24];
    const char* const end = std::to_chars(digits, digits + sizeof digits, static_cast<std::int64_t>(m)).ptr;
    const int length = static_cast<int>(end - digits);
    char* o = out;
    if (x < 0) *o++ = '-';
    if (length > k) {  // step 7 (k == 0: an integer, step 6)
      std::memcpy(o, digits, static_cast<std::size_t>(length - k));
      o += length - k;
      if (k > 0) *o++ = '.';
    } else {  // step 8: "0.", zeros, the digits
      *o++ = '0';
      *o++ = '.';
      std::memset(o, '0', static_cast<std::size_t>(k - length));
      o += k - length;
    }
    const int fraction = std::min(k, length);
    std::memcpy(o, end - fraction, static_cast<std::size_t>(fraction));
    return static_cast<std::size_t>(o + fraction - out);
  }
  return 0;
}

}  // namespace

std::size_t write_number(char* out, double x) {
  if (x == 0) {  // step 2: +0 and -0
    out[0] = '0';
    return 1;
  }
  if (const std::size_t length = write_short_decimal(out, x)) return length;
  return write_number_general(out, x);
}

std::size_t write_number_general(char* out, double x) {
  if (x == 0) {
    out[0] = '0';
    return 1;
  }
  char* o = out;
  if (x < 0) {  // step 3
    *o++ = '-';
    x = -x;
  }
  char buf[kNumberTextMax];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  if (ec != std::errc()) return 0;

  // Split "d.ddde±XX" into the digits of s and the exponent n - 1.
  char digits[24];
  int k = 0;
  const char* p = buf;
  for (; p != end && *p != 'e'; ++p) {
    if (*p != '.') digits[k++] = *p;
  }
  if (p == end) return 0;
  int exponent = 0;
  if (std::from_chars(p + (p[1] == '+' ? 2 : 1), end, exponent).ec != std::errc()) return 0;
  const int n = exponent + 1;
  const auto put = [&](const char* from, int count) {
    std::memcpy(o, from, static_cast<std::size_t>(count));
    o += count;
  };

  if (k <= n && n <= 21) {  // step 6: integer, padded with zeros
    put(digits, k);
    std::memset(o, '0', static_cast<std::size_t>(n - k));
    o += n - k;
  } else if (0 < n && n <= 21) {  // step 7: point inside the digits
    put(digits, n);
    *o++ = '.';
    put(digits + n, k - n);
  } else if (-6 < n && n <= 0) {  // step 8: leading "0.000"
    *o++ = '0';
    *o++ = '.';
    std::memset(o, '0', static_cast<std::size_t>(-n));
    o += -n;
    put(digits, k);
  } else {  // steps 9 and 10: exponent form
    *o++ = digits[0];
    if (k > 1) {
      *o++ = '.';
      put(digits + 1, k - 1);
    }
    *o++ = 'e';
    *o++ = n - 1 < 0 ? '-' : '+';
    o = std::to_chars(o, out + kNumberTextMax, n - 1 < 0 ? 1 - n : n - 1).ptr;
  }
  return static_cast<std::size_t>(o - out);
}

}  // namespace detail

Result<std::string> format_number(double x) {
  if (std::isnan(x)) {
    return fail(Errc::not_canonical, "NaN has no JSON form (RFC 8785 §3.2.2.3)");
  }
  if (std::isinf(x)) {
    return fail(Errc::not_canonical,
                std::string(x > 0 ? "Infinity" : "-Infinity") +
                    " has no JSON form (RFC 8785 §3.2.2.3)");
  }
  char buf[detail::kNumberTextMax];
  const std::size_t length = detail::write_number(buf, x);
  if (length == 0) return fail(Errc::internal, "std::to_chars failed on a finite double");
  return std::string(buf, length);
}

}  // namespace taskyon::json
