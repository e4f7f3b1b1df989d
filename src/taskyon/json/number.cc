// ECMAScript Number::toString(x) (ECMA-262 §6.1.6.1.20), the number form of
// RFC 8785 §3.2.2.3.
//
// The spec picks integers n, k, s with k >= 1, 10^(k-1) <= s < 10^k,
// s * 10^(n-k) == x and k as small as possible; among several such s the one
// closest to x (ECMA-262 Note 2, what every engine does). std::to_chars in
// shortest scientific form gives exactly that s (C++ [charconv.to.chars]:
// shortest round-trip, then closest, ties by round-to-nearest), as
// "d[.ddd]e±XX" where XX = n - 1. The layout below is ECMA-262 steps 6-10.
#include <charconv>
#include <cmath>
#include <cstring>
#include <string>
#include <system_error>

#include "taskyon/json/json.h"
#include "taskyon/json/number_text.h"

namespace taskyon::json {

namespace detail {

std::size_t write_number(char* out, double x) {
  if (x == 0) {  // step 2: +0 and -0
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
