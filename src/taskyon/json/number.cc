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
#include <string>
#include <system_error>

#include "taskyon/json/json.h"

namespace taskyon::json {

Result<std::string> format_number(double x) {
  if (std::isnan(x)) {
    return fail(Errc::not_canonical, "NaN has no JSON form (RFC 8785 §3.2.2.3)");
  }
  if (std::isinf(x)) {
    return fail(Errc::not_canonical,
                std::string(x > 0 ? "Infinity" : "-Infinity") +
                    " has no JSON form (RFC 8785 §3.2.2.3)");
  }
  if (x == 0) return std::string("0");  // step 2: +0 and -0

  std::string out;
  if (x < 0) {  // step 3
    out.push_back('-');
    x = -x;
  }

  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  if (ec != std::errc()) return fail(Errc::internal, "std::to_chars failed on a finite double");

  // Split "d.ddde±XX" into the digits of s and the exponent n - 1.
  std::string digits;
  const char* p = buf;
  for (; p != end && *p != 'e'; ++p) {
    if (*p != '.') digits.push_back(*p);
  }
  int exponent = 0;
  if (p == end || std::from_chars(p + (p[1] == '+' ? 2 : 1), end, exponent).ec != std::errc()) {
    return fail(Errc::internal, "std::to_chars gave no exponent");
  }
  const int k = static_cast<int>(digits.size());
  const int n = exponent + 1;

  if (k <= n && n <= 21) {  // step 6: integer, padded with zeros
    out += digits;
    out.append(static_cast<std::size_t>(n - k), '0');
  } else if (0 < n && n <= 21) {  // step 7: point inside the digits
    out.append(digits, 0, static_cast<std::size_t>(n));
    out.push_back('.');
    out.append(digits, static_cast<std::size_t>(n));
  } else if (-6 < n && n <= 0) {  // step 8: leading "0.000"
    out += "0.";
    out.append(static_cast<std::size_t>(-n), '0');
    out += digits;
  } else {  // steps 9 and 10: exponent form
    out.push_back(digits[0]);
    if (k > 1) {
      out.push_back('.');
      out.append(digits, 1);
    }
    out.push_back('e');
    out.push_back(n - 1 < 0 ? '-' : '+');
    out += std::to_string(n - 1 < 0 ? 1 - n : n - 1);
  }
  return out;
}

}  // namespace taskyon::json
