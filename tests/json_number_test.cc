// format_number against ECMAScript Number::toString: RFC 8785 Appendix B and
// the vectors that tests/testdata/jcs/gen_numbers.js took from node.
#include <bit>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "taskyon/json/json.h"

namespace taskyon::json {
namespace {

// Test data is read with plain nlohmann, not with the parser under test.
nlohmann::json read_vectors(const std::string& name) {
  std::ifstream in(std::string(TASKYON_TESTDATA) + "/jcs/" + name, std::ios::binary);
  EXPECT_TRUE(in) << "cannot open " << name;
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

double from_bits(const std::string& hex) { return std::bit_cast<double>(std::stoull(hex, nullptr, 16)); }

std::string formatted(double x) {
  auto text = format_number(x);
  return text ? *text : "error: " + text.error().message;
}

TEST(JsonNumber, Rfc8785AppendixB) {
  const auto rows = read_vectors("rfc8785_appendix_b.json");
  ASSERT_EQ(rows.size(), 26u);
  for (const auto& row : rows) {
    const std::string bits = row.at("bits");
    const double x = from_bits(bits);
    if (row.at("expected").is_null()) {
      auto text = format_number(x);
      ASSERT_FALSE(text.has_value()) << bits;
      EXPECT_EQ(text.error().code, Errc::not_canonical) << bits;
    } else {
      EXPECT_EQ(formatted(x), row.at("expected").get<std::string>()) << bits;
    }
  }
}

TEST(JsonNumber, GeneratedByNode) {
  const auto rows = read_vectors("numbers.json");
  ASSERT_GE(rows.size(), 300u);
  int failures = 0;
  for (const auto& row : rows) {
    const std::string bits = row.at("bits");
    const std::string expected = row.at("expected");
    const std::string got = formatted(from_bits(bits));
    if (got != expected && ++failures <= 20) {
      ADD_FAILURE() << "bits " << bits << ": expected " << expected << ", got " << got;
    }
  }
  EXPECT_EQ(failures, 0);
}

TEST(JsonNumber, LayoutSwitchPoints) {
  EXPECT_EQ(formatted(1e21), "1e+21");
  EXPECT_EQ(formatted(1e20), "100000000000000000000");
  EXPECT_EQ(formatted(123456789012345680000.0), "123456789012345680000");
  EXPECT_EQ(formatted(1e-7), "1e-7");
  EXPECT_EQ(formatted(0.000001), "0.000001");
  EXPECT_EQ(formatted(1.5e-7), "1.5e-7");
  EXPECT_EQ(formatted(0.5), "0.5");
  EXPECT_EQ(formatted(123.456), "123.456");
  EXPECT_EQ(formatted(1.5e300), "1.5e+300");
  EXPECT_EQ(formatted(0.1 + 0.2), "0.30000000000000004");
}

TEST(JsonNumber, SignsAndExtremes) {
  EXPECT_EQ(formatted(-0.0), "0");
  EXPECT_EQ(formatted(0.0), "0");
  EXPECT_EQ(formatted(-1e21), "-1e+21");
  EXPECT_EQ(formatted(-1e-7), "-1e-7");
  EXPECT_EQ(formatted(-0.5), "-0.5");
  EXPECT_EQ(formatted(-42.0), "-42");
  EXPECT_EQ(formatted(std::numeric_limits<double>::denorm_min()), "5e-324");
  EXPECT_EQ(formatted(std::numeric_limits<double>::max()), "1.7976931348623157e+308");
  EXPECT_EQ(formatted(std::numeric_limits<double>::min()), "2.2250738585072014e-308");
  EXPECT_EQ(formatted(9007199254740992.0), "9007199254740992");
}

TEST(JsonNumber, NonFiniteIsNotCanonical) {
  for (double x : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                   -std::numeric_limits<double>::infinity()}) {
    auto text = format_number(x);
    ASSERT_FALSE(text.has_value()) << x;
    EXPECT_EQ(text.error().code, Errc::not_canonical);
  }
  EXPECT_NE(format_number(-std::numeric_limits<double>::infinity()).error().message.find("-Infinity"),
            std::string::npos);
}

}  // namespace
}  // namespace taskyon::json
