// parse(): strict RFC 8259, and the guards over what nlohmann accepts silently.
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "taskyon/json/json.h"

namespace taskyon::json {
namespace {

using namespace std::string_literals;

Error error_of(std::string_view text, const ParseLimits& limits = {}) {
  auto value = parse(text, limits);
  if (value) {
    ADD_FAILURE() << "parsed, expected an error: " << value->dump();
    return Error{Errc::internal, "no error", ""};
  }
  return value.error();
}

bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

TEST(JsonParse, AcceptsStrictJson) {
  auto v = parse(R"( {"a": [1, -2, 3.5, true, false, null, "x\u00e9\ud83d\ude00"], "b": {}, "c": []} )");
  ASSERT_TRUE(v.has_value()) << v.error().describe();
  EXPECT_EQ((*v)["a"][0], 1);
  EXPECT_EQ((*v)["a"][1], -2);
  EXPECT_EQ((*v)["a"][2], 3.5);
  EXPECT_EQ((*v)["a"][3], true);
  EXPECT_TRUE((*v)["a"][5].is_null());
  EXPECT_EQ((*v)["a"][6], "x\xC3\xA9\xF0\x9F\x98\x80");
  EXPECT_TRUE((*v)["b"].is_object() && (*v)["b"].empty());
  EXPECT_TRUE((*v)["c"].is_array() && (*v)["c"].empty());
}

TEST(JsonParse, AcceptsScalarsAtTopLevel) {
  EXPECT_EQ(parse("\"s\"").value(), "s");
  EXPECT_EQ(parse(" 0 ").value(), 0);
  EXPECT_TRUE(parse("null").value().is_null());
}

TEST(JsonParse, RefusesDuplicateMemberAtTopLevel) {
  const Error e = error_of(R"({"a": 1, "b": 2, "a": 3})");
  EXPECT_EQ(e.code, Errc::invalid_json);
  EXPECT_EQ(e.where, "/a");
  EXPECT_TRUE(contains(e.message, "duplicate member name \"a\"")) << e.message;
}

TEST(JsonParse, RefusesDuplicateMemberNested) {
  const Error e = error_of(R"({"x": [{"k": 1}, {"k": 1, "k": 1}]})");
  EXPECT_EQ(e.code, Errc::invalid_json);
  EXPECT_EQ(e.where, "/x/1/k");
  EXPECT_TRUE(contains(e.message, "\"k\"")) << e.message;
  EXPECT_TRUE(contains(e.message, "/x/1")) << e.message;
}

TEST(JsonParse, RefusesDuplicateSpelledWithEscape) {
  const Error e = error_of(R"({"a": 1, "\u0061": 2})");
  EXPECT_EQ(e.code, Errc::invalid_json);
  EXPECT_EQ(e.where, "/a");
}

TEST(JsonParse, DuplicatePointerEscapesTildeAndSlash) {
  EXPECT_EQ(error_of(R"({"a/b": {"c~d": 1, "c~d": 2}})").where, "/a~1b/c~0d");
}

TEST(JsonParse, SameNameInDifferentObjectsIsFine) {
  auto v = parse(R"({"a": {"a": 1}, "b": [{"a": 2}, {"a": 3}]})");
  ASSERT_TRUE(v.has_value()) << v.error().describe();
  EXPECT_EQ((*v)["b"][1]["a"], 3);
}

TEST(JsonParse, RefusesLoneSurrogates) {
  for (std::string_view text : {R"("\ud800")", R"("\udbff x")", R"("\udc00")", R"("\udfff")", R"("\ud800\u0041")",
                                R"("\udc00\ud800")", R"({"\ud83d": 1})", R"(["ok", "\ude00"])"}) {
    const Error e = error_of(text);
    EXPECT_EQ(e.code, Errc::invalid_json) << text;
    EXPECT_TRUE(contains(e.message, "surrogate")) << text << ": " << e.message;
  }
}

TEST(JsonParse, RefusesInvalidUtf8) {
  for (const std::string& bad : {"\xFF"s, "\x80"s, "\xC0\xAF"s, "\xC1\xBF"s, "\xE0\x80\xAF"s, "\xED\xA0\x80"s,
                                "\xF4\x90\x80\x80"s, "\xF5\x80\x80\x80"s, "\xE2\x82"s, "\xF0\x9F\x98"s}) {
    EXPECT_EQ(error_of("\"" + bad + "\"").code, Errc::invalid_json) << "value";
    EXPECT_EQ(error_of("{\"k" + bad + "\": 1}").code, Errc::invalid_json) << "member name";
  }
  EXPECT_EQ(error_of("[\xFF]").code, Errc::invalid_json);
}

TEST(JsonParse, ErrorMessagesAreUtf8EvenForBadInput) {
  const Error e = error_of("\"\xFF\"");
  EXPECT_FALSE(contains(e.message, "\xFF")) << e.message;
  EXPECT_TRUE(contains(e.message, "\\xff")) << e.message;
}

TEST(JsonParse, SyntaxErrorNamesByteOffsetAndPointer) {
  const Error e = error_of(R"({"list": [1, 2, x]})");
  EXPECT_EQ(e.code, Errc::invalid_json);
  EXPECT_TRUE(contains(e.message, "at byte 16 (line 1, column 17):")) << e.message;
  EXPECT_EQ(e.where, "/list/2");
}

TEST(JsonParse, EnforcesDepthLimit) {
  const ParseLimits three{.max_depth = 3};
  EXPECT_TRUE(parse("[[[1]]]", three).has_value());
  EXPECT_TRUE(parse(R"({"a": {"b": [1]}})", three).has_value());
  const Error arrays = error_of("[[[[1]]]]", three);
  EXPECT_EQ(arrays.code, Errc::invalid_json);
  EXPECT_EQ(arrays.where, "/0/0/0");
  EXPECT_TRUE(contains(arrays.message, "deeper than 3")) << arrays.message;
  EXPECT_EQ(error_of(R"({"a": {"b": {"c": {}}}})", three).where, "/a/b/c");
}

TEST(JsonParse, DefaultDepthLimitIs512) {
  const auto nested = [](std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  EXPECT_TRUE(parse(nested(512)).has_value());
  EXPECT_EQ(error_of(nested(513)).code, Errc::invalid_json);
  EXPECT_EQ(error_of(nested(1'000'000)).code, Errc::invalid_json);  // no stack overflow
}

TEST(JsonParse, EnforcesSizeLimit) {
  const ParseLimits five{.max_bytes = 5};
  EXPECT_TRUE(parse("[1,2]", five).has_value());
  const Error e = error_of("[1, 2]", five);
  EXPECT_EQ(e.code, Errc::invalid_json);
  EXPECT_TRUE(contains(e.message, "6 bytes")) << e.message;
}

TEST(JsonParse, RefusesTrailingContent) {
  for (std::string_view text : {"{} x", "1 2", "[]]", "{}{}", "1,", "\"a\" \"b\"", "null null"}) {
    EXPECT_EQ(error_of(text).code, Errc::invalid_json) << text;
  }
}

TEST(JsonParse, RefusesNulByteThatNlohmannTakesForEndOfInput) {
  const Error e = error_of("[1]\0junk"s);
  EXPECT_EQ(e.code, Errc::invalid_json);
  EXPECT_TRUE(contains(e.message, "byte 3")) << e.message;
  EXPECT_EQ(error_of("1\0"s).code, Errc::invalid_json);
  EXPECT_EQ(error_of("\"a\0b\""s).code, Errc::invalid_json);
}

TEST(JsonParse, RefusesByteOrderMark) {
  EXPECT_EQ(error_of("\xEF\xBB\xBF[1]").code, Errc::invalid_json);
}

TEST(JsonParse, RefusesNonStrictSyntax) {
  for (std::string_view text :
       {"", "   ", "[1,]", R"({"a": 1,})", "01", "-01", "1.", ".5", "+1", "1e", "'a'", "{a: 1}", "[1 // c\n]",
        "/* c */ 1", "NaN", "Infinity", "-Infinity", "tru", "True", "\"a\tb\"", "\"\x01\"", R"("\x41")", R"("\u12")"}) {
    EXPECT_EQ(error_of(text).code, Errc::invalid_json) << text;
  }
}

TEST(JsonParse, RefusesIntegersThatADoubleCannotHold) {
  for (std::string_view text : {"9007199254740993", "-9007199254740993", "18014398509481985", "100000000000000000000000",
                                "18446744073709551615", "18446744073709551617", "-9223372036854775809"}) {
    const Error e = error_of(text);
    EXPECT_EQ(e.code, Errc::not_canonical) << text;
    EXPECT_TRUE(contains(e.message, text.substr(text[0] == '-' ? 1 : 0))) << e.message;
  }
  EXPECT_TRUE(contains(error_of("9007199254740993").message, "read as the IEEE 754 double 9007199254740992"));
  EXPECT_EQ(error_of(R"({"id": [1, 9007199254740993]})").where, "/id/1");
}

TEST(JsonParse, AcceptsIntegersThatADoubleHoldsExactly) {
  EXPECT_EQ(parse("9007199254740992").value(), 9007199254740992ULL);
  EXPECT_EQ(parse("-9007199254740992").value(), -9007199254740992LL);
  EXPECT_EQ(parse("9007199254740994").value(), 9007199254740994ULL);
  EXPECT_EQ(parse("-9223372036854775808").value(), INT64_MIN);
  EXPECT_EQ(parse("18446744073709551616").value(), 18446744073709551616.0);  // 2^64, past uint64
}

TEST(JsonParse, AcceptsIntegersSpelledInTheirCanonicalForm) {
  // Not exact, but already how RFC 8785 writes their double, so the text is
  // kept as written: canonical output must parse back.
  EXPECT_EQ(parse("1152921504606847000").value(), 1152921504606847000ULL);  // JCS form of 2^60
  EXPECT_EQ(parse("-1152921504606847000").value(), -1152921504606847000LL);
  EXPECT_EQ(parse("295147905179352830000").value(), 295147905179352830000.0);  // JCS form of 2^68
  // One digit off the canonical form is refused.
  EXPECT_EQ(error_of("1152921504606847001").code, Errc::not_canonical);
  EXPECT_EQ(error_of("295147905179352830001").code, Errc::not_canonical);
}

TEST(JsonParse, NumberOverflowIsAnErrorNotInfinity) {
  for (std::string_view text : {"1e400", "-1e400", "[1e309]", "1.8e308"}) {
    const Error e = error_of(text);
    EXPECT_EQ(e.code, Errc::not_canonical) << text;
    EXPECT_TRUE(contains(e.message, "overflow")) << e.message;
  }
  EXPECT_EQ(parse("1.7976931348623157e308").value(), 1.7976931348623157e308);
}

TEST(JsonParse, FractionsRoundToTheNearestDouble) {
  // Reading a decimal fraction as a double (RFC 8785 §3.2.2.3) is not a change
  // of value in JCS terms: JSON.parse does the same.
  EXPECT_EQ(parse("0.1").value(), 0.1);
  EXPECT_EQ(parse("1e-400").value(), 0.0);
}

}  // namespace
}  // namespace taskyon::json
