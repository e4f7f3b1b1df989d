// Strict JSON and RFC 8785 (JCS) canonical JSON; content addresses.
//
// Values are nlohmann::json. Parsing is strict: RFC 8259 syntax, valid UTF-8,
// no lone surrogates in \u escapes, and no duplicate member names at any depth
// (nlohmann keeps the last silently; we refuse). Canonicalization follows
// RFC 8785: members sorted by UTF-16 code units (§3.2.3), numbers as ECMAScript
// Number.prototype.toString (§3.2.2.3), minimal string escaping (§3.2.2.2).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "taskyon/base/error.h"

namespace taskyon::json {

using Value = nlohmann::json;

struct ParseLimits {
  std::size_t max_depth = 512;            // nesting of arrays and objects
  std::size_t max_bytes = 64u << 20;      // input text length, bytes
};

// Parses strict JSON text. Errors (Errc::invalid_json) say what was wrong and
// where: the byte offset in the message, and in `where` the JSON pointer of the
// value being read (of the duplicate member for duplicate names). Refused too:
// a byte order mark, NUL bytes, nesting deeper than max_depth, text longer than
// max_bytes.
//
// RFC 8785 §3.2.2.3 reads every number as an IEEE 754 double, and we never
// change a value silently, so Errc::not_canonical for a number beyond the
// double range (1e400) and for an integer literal that reading as a double
// would change (9007199254740993, |n| > 2^53). An integer literal passes if
// its double is that integer exactly, or if the literal already is the RFC 8785
// form of its double (1152921504606847000, how JCS writes 2^60): canonical
// text always parses back. Integers keep nlohmann's integer types; fractions
// and exponents are read as the nearest double (1e-400 is 0), as JSON.parse does.
// Whatever parse() accepts, canonicalize() accepts (the sandbox's frame
// parser relies on it; fuzz/fuzz_json_parse.cc holds parse to it).
Result<Value> parse(std::string_view text, const ParseLimits& limits = {});

// The nesting depth of `value`: 0 for a scalar, 1 for [] or {}, 2 for [[]].
// Counted without recursion, and it stops counting past `stop_after` (the
// answer is then stop_after + 1): a value built elsewhere must still parse
// back within ParseLimits::max_depth once stored.
std::size_t depth(const Value& value, std::size_t stop_after = ParseLimits{}.max_depth);

// RFC 8785 canonical serialization (UTF-8 bytes). Errc::not_canonical for NaN,
// ±Infinity, invalid UTF-8 in a string or member name, binary values, and
// integers that writing as a double would change (the same rule as parse(), so
// canonicalize(parse(canonical text)) is that text again); the error's `where`
// is the JSON pointer of the offending value (bytes of a member name that are
// not UTF-8 shown as \xNN). Any nesting depth: the writer recurses for the
// first 64 levels only.
Result<std::string> canonicalize(const Value& value);

// canonicalize(), appended to `out` (its capacity kept: a caller that reuses
// one string allocates a large text's memory once). On an error `out` holds
// what it held before.
Result<void> canonicalize_into(const Value& value, std::string& out);

// The length in bytes of canonicalize(value), with the same errors, without
// keeping the text (a size limit checked before anything else is done).
Result<std::size_t> canonical_size(const Value& value);

// ECMAScript Number::toString(x) (ECMA-262 §6.1.6.1.20) for a finite double:
// "1e+21", "1e-7", "0.30000000000000004", "0" for -0, "5e-324".
// Errc::not_canonical for NaN and ±Infinity.
Result<std::string> format_number(double x);

// Lower-case hex SHA-256 (FIPS 180-4, through OpenSSL EVP) of the bytes.
std::string sha256_hex(std::string_view bytes);

// A content address: "sha256:" + 64 lower-case hex digits over the bytes.
std::string content_id(std::string_view canonical_bytes);

// content_id(canonicalize(value)).
Result<std::string> content_id_of(const Value& value);

// True if `id` has the form "sha256:" + 64 lower-case hex digits.
bool is_content_id(std::string_view id);

}  // namespace taskyon::json
