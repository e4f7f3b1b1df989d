// Internal to json/: ECMAScript Number::toString written into a buffer, the
// allocation-free core of format_number() (number.cc) used by the canonical
// writer (canonical.cc).
#pragma once

#include <cstddef>

namespace taskyon::json::detail {

inline constexpr std::size_t kNumberTextMax = 32;  // longest form is 25 bytes ("-0.000001234567890123456…")

// Writes Number::toString(x) of a FINITE double to `out` (kNumberTextMax
// bytes) and returns its length; 0 only if std::to_chars failed.
std::size_t write_number(char* out, double x);

// The same through std::to_chars's scientific form and ECMA-262's layout
// steps, for every finite double; write_number takes a shorter way for most
// numbers with a fraction and this one for the rest (tests compare the two).
std::size_t write_number_general(char* out, double x);

}  // namespace taskyon::json::detail
