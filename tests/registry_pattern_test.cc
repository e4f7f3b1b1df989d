// JSON Schema patterns through RE2 (registry/pattern.h): what std::regex
// crashed or hung on is refused at install or matched in linear time; what RE2
// cannot express is refused naming the construct and its pointer.
#include <gtest/gtest.h>

#include <string>

#include "taskyon/registry/manifest.h"
#include "taskyon/registry/pattern.h"
#include "taskyon/registry/schema.h"
#include "test_util.h"

namespace taskyon::registry {
namespace {

using json::Value;

Value with_pattern(const std::string& pattern) {
  return {{"type", "object"}, {"properties", {{"s", {{"type", "string"}, {"pattern", pattern}}}}}};
}

Value manifest_with(const Value& parameters) {
  Value m = testing::js_tool("p", "x => x");
  m["parameters"] = parameters;
  return m;
}

TEST(Patterns, DeeplyNestedGroupsAreRefusedAtInstallNamingThePointer) {
  const std::string deep = std::string(25000, '(') + "a" + std::string(25000, ')');  // a 50 KB pattern
  auto m = parse_manifest(manifest_with(with_pattern(deep)));
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code, Errc::invalid_manifest);
  EXPECT_EQ(m.error().where, "/parameters/properties/s/pattern");
  EXPECT_NE(m.error().message.find("at most 4096 bytes"), std::string::npos) << m.error().message;
  // Under the size limit, the nesting limit names itself.
  const std::string nested = std::string(100, '(') + "a" + std::string(100, ')');
  auto n = parse_manifest(manifest_with(with_pattern(nested)));
  ASSERT_FALSE(n);
  EXPECT_NE(n.error().message.find("nests groups deeper than 64"), std::string::npos) << n.error().message;
  // A schema stored before the check (validated directly) is refused, not a crash.
  auto v = validate_arguments(with_pattern(deep), {{"s", "a"}});
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().code, Errc::invalid_arguments);
}

TEST(Patterns, NestedQuantifiersMatchInLinearTime) {
  const Value params = with_pattern("^(a+)+$");
  ASSERT_TRUE(parse_manifest(manifest_with(params)));
  // std::regex backtracks 2^n here (33 characters took 90 s); RE2 does not.
  auto no = validate_arguments(params, {{"s", std::string(100000, 'a') + "b"}});
  ASSERT_FALSE(no);
  EXPECT_EQ(no.error().where, "/s");
  EXPECT_TRUE(validate_arguments(params, {{"s", std::string(1000000, 'a')}}));
}

TEST(Patterns, LongStringsUnderAPatternHaveNoCap) {  // std::regex overflowed its stack at 20 000
  const Value params = with_pattern("^(a|b)*$");
  EXPECT_TRUE(validate_arguments(params, {{"s", std::string(200000, 'a')}}));
  auto bad = validate_arguments(params, {{"s", std::string(200000, 'a') + "c"}});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().where, "/s");
  // Member names under patternProperties, and property names, too.
  const Value pp = {{"type", "object"}, {"patternProperties", {{"^(x+)+$", {{"type", "integer"}}}}}};
  auto wrong = validate_arguments(pp, {{std::string(100000, 'x'), "not an integer"}});
  ASSERT_FALSE(wrong);
  const Value names = {{"type", "object"}, {"propertyNames", {{"pattern", "^(y+)+$"}}}};
  EXPECT_FALSE(validate_arguments(names, {{std::string(100000, 'y') + "!", 1}}));
  EXPECT_TRUE(validate_arguments(names, {{std::string(100000, 'y'), 1}}));
}

TEST(Patterns, ConstructsWithoutALinearMatchAreRefusedNamingThem) {
  const std::pair<const char*, const char*> cases[] = {
      {"(a)\\1", "backreference (\\1)"},      {"(?<n>a)\\k<n>", "named backreference"},
      {"a(?=b)", "lookahead (?=…)"},          {"a(?!b)", "lookahead (?!…)"},
      {"(?<=a)b", "lookbehind (?<=…)"},       {"(?<!a)b", "lookbehind (?<!…)"},
      {"(?i)a", "inline flag group"},         {"[\\1]", "octal escape"},
  };
  for (const auto& [pattern, construct] : cases) {
    auto m = parse_manifest(manifest_with(with_pattern(pattern)));
    ASSERT_FALSE(m) << pattern;
    EXPECT_EQ(m.error().where, "/parameters/properties/s/pattern") << pattern;
    EXPECT_NE(m.error().message.find(construct), std::string::npos) << pattern << ": " << m.error().message;
  }
  // The pointer of a patternProperties key (escaped, RFC 6901) and of a nested subschema.
  auto pp = parse_manifest(manifest_with({{"type", "object"}, {"patternProperties", {{"a/(?=b)", true}}}}));
  ASSERT_FALSE(pp);
  EXPECT_EQ(pp.error().where, "/parameters/patternProperties/a~1(?=b)");
  auto nested = parse_manifest(manifest_with(
      {{"type", "object"}, {"properties", {{"s", {{"anyOf", {{{"pattern", "x"}}, {{"pattern", "(a)\\1"}}}}}}}}}));
  ASSERT_FALSE(nested);
  EXPECT_EQ(nested.error().where, "/parameters/properties/s/anyOf/1/pattern");
  // Data is not a schema: a "pattern" member inside const or enum is left alone.
  EXPECT_TRUE(parse_manifest(manifest_with({{"type", "object"}, {"const", {{"pattern", "(?=x)"}}}})));
  // A property named "pattern" is a property, not the keyword.
  EXPECT_TRUE(parse_manifest(manifest_with({{"type", "object"}, {"properties", {{"pattern", {{"type", "string"}}}}}})));
}

TEST(Patterns, EcmaSyntaxMeansWhatItMeansInJavaScript) {
  auto match = [](const std::string& pattern, const std::string& subject) {
    auto p = Pattern::compile(pattern);
    EXPECT_TRUE(p) << pattern << ": " << (p ? "" : p.error().message);
    return p && p->search(subject);
  };
  EXPECT_TRUE(match("^\\u00e9$", "\xc3\xa9"));       // \uXXXX
  EXPECT_TRUE(match("^.$", "\xc3\xa9"));             // one code point, not one byte
  EXPECT_FALSE(match("^.$", "\n"));                   // `.` excludes line terminators
  EXPECT_FALSE(match("^.$", "\xe2\x80\xa8"));         // U+2028 too
  EXPECT_TRUE(match("^[^]$", "\n"));                  // [^] is any character
  EXPECT_FALSE(match("[]", "a"));                     // [] matches nothing
  EXPECT_TRUE(match("^(?<year>\\d{4})-\\d\\d$", "2026-12"));  // named groups
  EXPECT_TRUE(match("^a\\/b$", "a/b"));               // escaped punctuation
  EXPECT_TRUE(match("^[[:a]+$", "[:a"));              // no POSIX classes in ECMA-262
  EXPECT_TRUE(match("^\\cJ$", "\n"));                 // control escapes
  EXPECT_TRUE(match("^\\p{Greek}+$", "\xce\xb1\xce\xb2"));
  EXPECT_FALSE(match("^\\d$", "\xd9\xa3"));           // \d is ASCII only
  EXPECT_TRUE(match("a$", "ba"));
  EXPECT_FALSE(match("a$", "a\n"));                   // $ is the end, not before a final newline
  EXPECT_TRUE(match("es", "test"));                   // unanchored, like RegExp.prototype.test
  EXPECT_TRUE(match("^\\s$", "\xc2\xa0"));            // \s includes Unicode white space (U+00A0)
  EXPECT_FALSE(match("^\\S$", "\xe3\x80\x80"));        // U+3000 is white space
  EXPECT_TRUE(match("^[\\s\\S]+$", "a \n\xc2\xa0"));    // the any-character idiom
}

TEST(Patterns, DateFormatsOfAnyLengthDoNotRecurse) {
  const Value params = {{"type", "object"}, {"properties", {{"d", {{"type", "string"}, {"format", "date"}}}}}};
  EXPECT_TRUE(validate_arguments(params, {{"d", std::string(200000, '1') + "-02-28"}}));
  EXPECT_FALSE(validate_arguments(params, {{"d", std::string(200000, '1') + "-02-30"}}));
  EXPECT_FALSE(validate_arguments(params, {{"d", std::string(200000, '1')}}));
}

}  // namespace
}  // namespace taskyon::registry

namespace taskyon::registry {
namespace {

// Found by fuzz_arguments: valijson 1.0 divides by an integer multipleOf
// unchecked (SIGFPE for 0) after casting the argument to int64 (undefined past
// INT64_MAX). draft-07 6.2.1 wants a number > 0; integer divisors are compared
// as doubles.
TEST(SchemaNumbers, MultipleOfMustBeGreaterThanZeroAndNeverDividesByAnInteger) {
  for (const Value& bad : {Value(0), Value(-3), Value(0.0), Value("2")}) {
    const Value params = {{"type", "object"}, {"properties", {{"v", {{"multipleOf", bad}}}}}};
    auto r = check_parameters_schema(params);
    ASSERT_FALSE(r) << bad.dump();
    EXPECT_EQ(r.error().code, Errc::invalid_manifest);
    EXPECT_EQ(r.error().where, "/parameters/properties/v/multipleOf");
  }
  const Value params = {{"type", "object"}, {"properties", {{"v", {{"multipleOf", 3}}}}}};
  ASSERT_TRUE(check_parameters_schema(params));
  EXPECT_TRUE(validate_arguments(params, {{"v", 9}}));
  EXPECT_FALSE(validate_arguments(params, {{"v", 10}}));
  (void)validate_arguments(params, {{"v", 1e300}});  // no int64 cast of 1e300 (UBSan: float-cast-overflow)
  EXPECT_TRUE(validate_arguments(params, {{"v", -9}}));
}

}  // namespace
}  // namespace taskyon::registry
