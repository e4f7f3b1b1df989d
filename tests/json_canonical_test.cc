// canonicalize() against RFC 8785, and content ids (DESIGN §2).
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "taskyon/json/json.h"

namespace taskyon::json {
namespace {

namespace fs = std::filesystem;
using namespace std::string_literals;

const fs::path kJcs = fs::path(TASKYON_TESTDATA) / "jcs";

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << "cannot open " << path;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// "7b 22 ..." -> the bytes.
std::string from_hex(const std::string& text) {
  std::istringstream in(text);
  std::string out, byte;
  while (in >> byte) out.push_back(static_cast<char>(std::stoi(byte, nullptr, 16)));
  return out;
}

std::string canonical(const Value& v) {
  auto text = canonicalize(v);
  return text ? *text : "error: " + text.error().describe();
}

Error error_of(const Value& v) {
  auto text = canonicalize(v);
  if (text) {
    ADD_FAILURE() << "canonicalized, expected an error: " << *text;
    return Error{Errc::internal, "no error", ""};
  }
  return text.error();
}

// The RFC's examples: input/NAME.json canonicalizes to the bytes of
// output/NAME.json, and where the RFC gives them (§3.2.4) to outhex/NAME.txt.
TEST(JsonCanonical, Rfc8785Examples) {
  int cases = 0;
  for (const auto& entry : fs::directory_iterator(kJcs / "input")) {
    const std::string name = entry.path().stem().string();
    SCOPED_TRACE(name);
    auto value = parse(read_file(entry.path()));
    ASSERT_TRUE(value.has_value()) << value.error().describe();
    const std::string expected = read_file(kJcs / "output" / (name + ".json"));
    EXPECT_EQ(canonical(*value), expected);
    if (const fs::path hex = kJcs / "outhex" / (name + ".txt"); fs::exists(hex)) {
      EXPECT_EQ(canonical(*value), from_hex(read_file(hex)));
    }
    // Canonical text is a fixed point.
    auto again = parse(expected);
    ASSERT_TRUE(again.has_value()) << again.error().describe();
    EXPECT_EQ(canonical(*again), expected);
    ++cases;
  }
  EXPECT_EQ(cases, 2);
}

TEST(JsonCanonical, SortsByUtf16CodeUnitsNotUtf8Bytes) {
  // U+1F600 is D83D DE00 in UTF-16, so it sorts before U+E000 and U+FFFD,
  // though its UTF-8 bytes (F0 ...) sort after theirs (EE ..., EF ...).
  Value v = Value::object();
  v["\xEE\x80\x80"] = 1;          // U+E000
  v["\xF0\x9F\x98\x80"] = 2;      // U+1F600
  v["\xEF\xBF\xBD"] = 3;          // U+FFFD
  v["\xF0\x90\x80\x80"] = 4;      // U+10000
  v["\xED\x9F\xBF"] = 5;          // U+D7FF
  v["z"] = 6;
  EXPECT_EQ(canonical(v),
            "{\"z\":6,\"\xED\x9F\xBF\":5,\"\xF0\x90\x80\x80\":4,\"\xF0\x9F\x98\x80\":2,"
            "\"\xEE\x80\x80\":1,\"\xEF\xBF\xBD\":3}");
}

TEST(JsonCanonical, SortsPrefixesFirstAndNestedObjects) {
  auto v = parse(R"({"b": {"y": 1, "x": [{"d": 1, "c": 2}]}, "a": 0, "aa": 1, "": 2})");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(canonical(*v), R"({"":2,"a":0,"aa":1,"b":{"x":[{"c":2,"d":1}],"y":1}})");
}

TEST(JsonCanonical, EscapesStringsExactlyAsJcs) {
  std::string controls;
  for (char c = 0; c < 0x20; ++c) controls.push_back(c);
  EXPECT_EQ(canonical(Value(controls)),
            R"("\u0000\u0001\u0002\u0003\u0004\u0005\u0006\u0007\b\t\n\u000b\f\r\u000e\u000f)"
            R"(\u0010\u0011\u0012\u0013\u0014\u0015\u0016\u0017\u0018\u0019\u001a\u001b\u001c\u001d\u001e\u001f")");
  // Quote and backslash escaped; slash, DEL, U+2028, U+2029 and non-ASCII literal.
  const std::string literal = "/\x7F\xE2\x80\xA8\xE2\x80\xA9\xC3\xA9\xF0\x9F\x98\x80";
  EXPECT_EQ(canonical(Value("\"\\" + literal)), "\"\\\"\\\\" + literal + "\"");
}

// The writer copies eight plain bytes at once (canonical.cc): every character
// that needs an escape or a UTF-8 check, at every offset of a word and across
// word boundaries, in strings and in member names, must come out as the
// byte-at-a-time rule writes it, and a bad byte anywhere is still refused.
TEST(JsonCanonical, TheWordAtATimePathAgreesWithTheByteRuleAtEveryOffset) {
  const auto reference = [](const std::string& text) {
    std::string out = "\"";
    for (unsigned char c : text) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
          if (c < 0x20) {
            static constexpr char kHex[] = "0123456789abcdef";
            out += "\\u00";
            out += kHex[c >> 4];
            out += kHex[c & 0xF];
          } else {
            out += static_cast<char>(c);
          }
      }
    }
    return out + "\"";
  };
  const std::string specials[] = {"\"", "\\", "\n", "\x01", "\x1f", " ", "\x7f", "!", "#", "[", "]", "\x5b",
                                  "\xc3\xa9", "\xe2\x80\xa8", "\xf0\x9f\x98\x80", "\xef\xbf\xbf"};
  for (const std::string& special : specials) {
    for (std::size_t length : {1u, 7u, 8u, 9u, 15u, 16u, 17u, 24u, 31u, 32u, 33u, 47u, 48u, 49u}) {
      for (std::size_t at = 0; at + 1 <= length; ++at) {
        std::string text(length, 'a');
        text.replace(at, 1, special);
        const auto written = canonicalize(Value(text));
        ASSERT_TRUE(written) << text;
        EXPECT_EQ(*written, reference(text)) << "special " << reference(special) << " at " << at << " of " << length;
        const auto member = canonicalize(Value{{text, 1}});
        ASSERT_TRUE(member) << text;
        EXPECT_EQ(*member, "{" + reference(text) + ":1}");
        std::string bad(length, 'a');
        bad[at] = '\xff';
        EXPECT_FALSE(canonicalize(Value(bad))) << "0xff at " << at << " of " << length;
        EXPECT_FALSE(canonicalize(Value{{bad, 1}})) << "0xff in a name at " << at << " of " << length;
        std::string cut(length, 'a');
        cut[at] = '\xc3';  // a lead byte without its continuation (or before an ASCII byte)
        EXPECT_FALSE(canonicalize(Value(cut))) << "truncated at " << at << " of " << length;
      }
    }
  }
}

TEST(JsonCanonical, WritesLiteralsAndEmptyContainers) {
  auto v = parse(R"([null, true, false, "", [], {}, [[]], {"a": {}}])");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(canonical(*v), R"([null,true,false,"",[],{},[[]],{"a":{}}])");
}

TEST(JsonCanonical, WritesNumbersAsEcmaScript) {
  EXPECT_EQ(canonical(Value{1e21, 1e-7, -0.0, 4.50, 100, -5, 0.1 + 0.2}),
            "[1e+21,1e-7,0,4.5,100,-5,0.30000000000000004]");
  EXPECT_EQ(canonical(Value(9007199254740992ULL)), "9007199254740992");
  // Exact doubles, written in JCS form; and that form itself, as parse() keeps it.
  EXPECT_EQ(canonical(Value(std::numeric_limits<std::int64_t>::min())), "-9223372036854776000");
  EXPECT_EQ(canonical(Value(std::uint64_t{1} << 60)), "1152921504606847000");
  EXPECT_EQ(canonical(Value(1152921504606847000ULL)), "1152921504606847000");
}

// Every canonical number text parses back (as parse() reads it) and
// canonicalizes to itself, including integer-looking forms past 2^53.
TEST(JsonCanonical, NumberTextIsAFixedPoint) {
  int checked = 0;
  for (const char* file : {"rfc8785_appendix_b.json", "numbers.json"}) {
    const auto rows = nlohmann::json::parse(read_file(kJcs / file));
    for (const auto& row : rows) {
      if (row.at("expected").is_null()) continue;
      const std::string text = row.at("expected");
      auto value = parse(text);
      ASSERT_TRUE(value.has_value()) << text << ": " << value.error().describe();
      EXPECT_EQ(canonical(*value), text);
      ++checked;
    }
  }
  EXPECT_GE(checked, 300);
}

TEST(JsonCanonical, RefusesNanAndInfinity) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  Value v = {{"a", {1, nan}}};
  Error e = error_of(v);
  EXPECT_EQ(e.code, Errc::not_canonical);
  EXPECT_EQ(e.where, "/a/1");
  EXPECT_NE(e.message.find("NaN"), std::string::npos) << e.message;
  EXPECT_EQ(error_of(Value(inf)).code, Errc::not_canonical);
  EXPECT_EQ(error_of(Value{{"x", {{"y", -inf}}}}).where, "/x/y");
}

TEST(JsonCanonical, RefusesIntegersThatADoubleCannotHold) {
  EXPECT_EQ(error_of(Value(9007199254740993ULL)).code, Errc::not_canonical);
  EXPECT_EQ(error_of(Value(-9007199254740993LL)).code, Errc::not_canonical);
  const Error max = error_of(Value(std::numeric_limits<std::uint64_t>::max()));
  EXPECT_EQ(max.code, Errc::not_canonical);
  EXPECT_NE(max.message.find("18446744073709552000"), std::string::npos) << max.message;
  const Error e = error_of(Value{{"n", {0, 9007199254740995LL}}});
  EXPECT_EQ(e.where, "/n/1");
  EXPECT_NE(e.message.find("9007199254740995"), std::string::npos) << e.message;
}

TEST(JsonCanonical, RefusesInvalidUtf8WithPointer) {
  Value v = {{"ok", "fine"}, {"list", {"a", "b\xFF"}}};
  Error e = error_of(v);
  EXPECT_EQ(e.code, Errc::not_canonical);
  EXPECT_EQ(e.where, "/list/1");
  for (const std::string& bad : {"\xC0\xAF"s, "\xED\xA0\x80"s, "\xF4\x90\x80\x80"s, "\xE2\x82"s, "\x80"s}) {
    EXPECT_EQ(error_of(Value(bad)).code, Errc::not_canonical);
  }

  Value key = {{"a~/", {{"b\xFF" "c", 1}}}};
  e = error_of(key);
  EXPECT_EQ(e.code, Errc::not_canonical);
  EXPECT_EQ(e.where, "/a~0~1/b\\xffc");
}

TEST(JsonCanonical, RefusesBinary) {
  Value v = {{"bin", Value::binary({1, 2, 3})}};
  const Error e = error_of(v);
  EXPECT_EQ(e.code, Errc::not_canonical);
  EXPECT_EQ(e.where, "/bin");
}

// The writer recurses for the first 64 levels and keeps an explicit stack
// below them: the same value must come out the same, and fail at the same
// place, either way. Each value is written as it is and under 70 levels of
// arrays and of objects (so all of it is past the recursion).
TEST(JsonCanonical, RecursiveAndDeepWritersAgree) {
  std::vector<Value> values;
  for (const auto& entry : fs::directory_iterator(kJcs / "input")) {
    auto v = parse(read_file(entry.path()));
    ASSERT_TRUE(v) << entry.path();
    values.push_back(*v);
  }
  Value reordered = Value::object();  // re-sorted from its third name on, at two levels
  for (const char* name : {"a", "\xED\x9F\xBF", "\xEE\x80\x80", "\xF0\x9F\x98\x80", "\xEF\xBF\xBD", "\xF0\x90\x80\x80"}) {
    reordered[name] = {{"x", 1}, {"\xEF\xBF\xBD", {1.5, "s\n"}}, {"\xF0\x9F\x98\x80", Value::array()}};
  }
  values.push_back(reordered);
  values.push_back({{"a", {0.1, 2.5e-7, -0.0, 1e21, 123.456}}, {"b", "\u00e9\u2028\"\\\x01"}, {"c", nullptr}, {"d", true}});
  // Errors: a bad name among names to re-sort, a bad name before them, a bad
  // string after a re-sort, NaN deep in an array.
  values.push_back({{"\xEE\x80\x80", 1}, {"\xFF", 2}});
  values.push_back({{"\xC3", 1}, {"\xEE\x80\x80", 2}});
  values.push_back({{"\xEE\x80\x80", {"ok", "b\xFF"}}, {"a", 1}});
  values.push_back({{"a", {{"b", {1, 2, std::nan("")}}}}});

  constexpr int kLevels = 70;
  for (const Value& value : values) {
    Value in_arrays = value, in_objects = value;
    std::string arrays_before, objects_before, arrays_where, objects_where;
    for (int i = 0; i < kLevels; ++i) {
      in_arrays = Value::array({std::move(in_arrays)});
      in_objects = Value{{"w", std::move(in_objects)}};
      arrays_before += "[";
      objects_before += "{\"w\":";
      arrays_where += "/0";
      objects_where += "/w";
    }
    const auto alone = canonicalize(value);
    const auto deep_arrays = canonicalize(in_arrays);
    const auto deep_objects = canonicalize(in_objects);
    if (alone) {
      ASSERT_TRUE(deep_arrays) << deep_arrays.error().describe();
      ASSERT_TRUE(deep_objects) << deep_objects.error().describe();
      EXPECT_EQ(*deep_arrays, arrays_before + *alone + std::string(kLevels, ']'));
      EXPECT_EQ(*deep_objects, objects_before + *alone + std::string(kLevels, '}'));
    } else {
      ASSERT_FALSE(deep_arrays) << *deep_arrays;
      ASSERT_FALSE(deep_objects) << *deep_objects;
      EXPECT_EQ(deep_arrays.error().where, arrays_where + alone.error().where);
      EXPECT_EQ(deep_objects.error().where, objects_where + alone.error().where);
      EXPECT_EQ(deep_arrays.error().message, alone.error().message);
    }
  }
  // The error values' own pointers, written by the recursive writer.
  EXPECT_EQ(error_of(values[values.size() - 4]).where, "/\\xff");
  EXPECT_EQ(error_of(values[values.size() - 3]).where, "/\\xc3");
  EXPECT_EQ(error_of(values[values.size() - 2]).where, "/\xEE\x80\x80/1");
  EXPECT_EQ(error_of(values[values.size() - 1]).where, "/a/b/2");
  const std::string inner = "{\"x\":1,\"\xF0\x9F\x98\x80\":[],\"\xEF\xBF\xBD\":[1.5,\"s\\n\"]}";
  std::string expected = "{";
  for (const char* name : {"a", "\xED\x9F\xBF", "\xF0\x90\x80\x80", "\xF0\x9F\x98\x80", "\xEE\x80\x80", "\xEF\xBF\xBD"}) {
    expected += std::string(expected.size() > 1 ? "," : "") + "\"" + name + "\":" + inner;
  }
  EXPECT_EQ(canonical(reordered), expected + "}");
}

// canonical_size counts what canonicalize writes, with the same errors;
// canonicalize_into appends after what a string held, and on an error leaves
// it as it was.
TEST(JsonCanonical, SizeAndIntoAgreeWithCanonicalize) {
  std::vector<Value> values = {Value(), Value("x"), Value::array(), Value{{"a", {1, 2.5, "\u00e9\n"}}},
                               Value(std::string(40000, 'z'))};
  for (const auto& entry : fs::directory_iterator(kJcs / "input")) values.push_back(*parse(read_file(entry.path())));
  for (const Value& v : values) {
    const auto text = canonicalize(v);
    ASSERT_TRUE(text);
    const auto size = canonical_size(v);
    ASSERT_TRUE(size);
    EXPECT_EQ(*size, text->size());
    std::string into = "held:";
    ASSERT_TRUE(canonicalize_into(v, into));
    EXPECT_EQ(into, "held:" + *text);
  }
  const Value bad = {{"a", std::string(20000, 'y')}, {"b", "\xFF"}};
  EXPECT_EQ(canonical_size(bad).error().where, "/b");
  std::string into = "held:";
  EXPECT_FALSE(canonicalize_into(bad, into));
  EXPECT_EQ(into, "held:");
}

TEST(JsonCanonical, HandlesDeepProgrammaticValuesWithoutRecursion) {
  constexpr std::size_t kDepth = 200'000;
  Value v = Value::array();
  for (std::size_t i = 1; i < kDepth; ++i) {
    Value outer = Value::array();
    outer.push_back(std::move(v));
    v = std::move(outer);
  }
  EXPECT_EQ(canonical(v), std::string(kDepth, '[') + std::string(kDepth, ']'));

  Value o = 1;
  for (std::size_t i = 0; i < kDepth; ++i) {
    Value outer = Value::object();
    outer["k"] = std::move(o);
    o = std::move(outer);
  }
  std::string expected;
  for (std::size_t i = 0; i < kDepth; ++i) expected += "{\"k\":";
  expected += "1" + std::string(kDepth, '}');
  EXPECT_EQ(canonical(o), expected);
}

TEST(JsonHash, Sha256KnownAnswers) {
  // FIPS 180-4 examples.
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(content_id("abc"), "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(JsonHash, ContentIdIgnoresKeyOrderAndWhitespace) {
  auto compact = parse(R"({"name":"add","parameters":{"type":"object","required":["a","b"]},"n":1.50})");
  auto pretty = parse(R"(
    {
      "n" : 15e-1,
      "parameters" : { "required" : [ "a", "b" ],
                       "type" : "object" },
      "name" : "\u0061dd"
    })");
  ASSERT_TRUE(compact.has_value() && pretty.has_value());
  const auto a = content_id_of(*compact);
  const auto b = content_id_of(*pretty);
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_EQ(*a, *b);
  EXPECT_TRUE(is_content_id(*a)) << *a;
  EXPECT_EQ(*a, content_id(canonical(*compact)));
}

TEST(JsonHash, AnyChangeGivesANewId) {
  const auto id = [](std::string_view text) {
    auto v = parse(text);
    EXPECT_TRUE(v.has_value()) << text;
    return content_id_of(*v).value();
  };
  const std::string base = id(R"({"name":"add","code":"(a)=>a+1","n":[1,2]})");
  EXPECT_NE(base, id(R"({"name":"adc","code":"(a)=>a+1","n":[1,2]})"));   // a value
  EXPECT_NE(base, id(R"({"Name":"add","code":"(a)=>a+1","n":[1,2]})"));   // a name
  EXPECT_NE(base, id(R"({"name":"add","code":"(a)=>a+2","n":[1,2]})"));   // code
  EXPECT_NE(base, id(R"({"name":"add","code":"(a)=>a+1","n":[2,1]})"));   // array order
  EXPECT_NE(base, id(R"({"name":"add","code":"(a)=>a+1","n":[1,"2"]})")); // type
}

TEST(JsonHash, ContentIdOfPassesErrorsOn) {
  const auto id = content_id_of(Value{{"x", std::numeric_limits<double>::quiet_NaN()}});
  ASSERT_FALSE(id.has_value());
  EXPECT_EQ(id.error().code, Errc::not_canonical);
  EXPECT_EQ(id.error().where, "/x");
}

TEST(JsonHash, RecognisesContentIds) {
  const std::string hex(64, 'a');
  EXPECT_TRUE(is_content_id("sha256:" + hex));
  EXPECT_TRUE(is_content_id("sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"));
  EXPECT_FALSE(is_content_id("sha256:" + hex.substr(1)));
  EXPECT_FALSE(is_content_id("sha256:" + hex + "a"));
  EXPECT_FALSE(is_content_id("sha256:" + std::string(63, 'a') + "A"));
  EXPECT_FALSE(is_content_id("sha256:" + std::string(63, 'a') + "g"));
  EXPECT_FALSE(is_content_id("sha512:" + hex));
  EXPECT_FALSE(is_content_id(hex));
  EXPECT_FALSE(is_content_id(""));
}

}  // namespace
}  // namespace taskyon::json
