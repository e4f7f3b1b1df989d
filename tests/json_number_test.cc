// format_number against ECMAScript Number::toString: RFC 8785 Appendix B and
// the vectors that tests/testdata/jcs/gen_numbers.js took from node.
#include <bit>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "taskyon/json/json.h"
#include "taskyon/json/number_text.h"
#include "taskyon/sandbox/sandbox.h"
#include "test_util.h"

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

// Doubles of every kind write_number meets: any bit pattern, fractions across
// the fixed-form range and its edges (1e-6, 2^53, 1e21), and the short
// decimals programs make (cents, quarters, sums of tenths).
std::vector<double> many_doubles(std::size_t per_kind) {
  std::mt19937_64 random(19);
  std::vector<double> out;
  std::uniform_real_distribution<double> exponent(-7.5, 22.5), unit(1.0, 10.0);
  for (std::size_t i = 0; i < per_kind; ++i) {
    double bits = std::bit_cast<double>(random());
    if (std::isfinite(bits)) out.push_back(bits);
    const double scaled = unit(random) * std::pow(10.0, std::floor(exponent(random)));
    out.push_back(i % 2 ? scaled : -scaled);
    const auto n = static_cast<std::int64_t>(random() % 2000001) - 1000000;
    out.push_back(static_cast<double>(n) / 100);
    out.push_back(static_cast<double>(n) * 0.25 + 0.1 * static_cast<double>(i % 7));
    out.push_back(static_cast<double>(n) / std::pow(10.0, static_cast<double>(i % 12)));  // 0 to 11 places
    out.push_back(static_cast<double>(random() >> 17) / 1e6 + 1e-6 * static_cast<double>(i % 3));  // past 2^46
  }
  for (double edge : {1e-6, 1e-7, 9007199254740992.0, 70368744177664.0, 7036874417.7664, 1e21, 1e15, 123456.789e10,
                      0.1 + 0.2, 0.5, 1.0}) {
    double below = edge, above = edge;
    for (int k = 0; k < 64; ++k) {
      below = std::nextafter(below, 0.0);
      above = std::nextafter(above, INFINITY);
      out.insert(out.end(), {below, above, -below, -above, below + 0.5, above - 0.5});
    }
  }
  return out;
}

std::string number_text(double x, bool general) {
  char buf[detail::kNumberTextMax];
  const std::size_t n = general ? detail::write_number_general(buf, x) : detail::write_number(buf, x);
  return std::string(buf, n);
}

// write_number's short way (a decimal m / 10^k) must give what its general
// way gives, for every double it takes that way.
TEST(JsonNumber, TheShortWayAgreesWithTheGeneralOne) {
  int failures = 0;
  for (double x : many_doubles(400000)) {
    const std::string fast = number_text(x, false), general = number_text(x, true);
    if (fast != general && ++failures <= 20) {
      ADD_FAILURE() << fmt::format("{:a}: short way {}, general way {}", x, fast, general);
    }
  }
  EXPECT_EQ(failures, 0);
}

// And both must be what node's String(x) is (ECMA-262 Number::toString).
TEST(JsonNumber, AgreesWithNodeOnManyDoubles) {
  auto node = sandbox::find_node("");
  ASSERT_TRUE(node) << node.error().describe();
  taskyon::testing::TempDir home;
  const std::vector<double> numbers = many_doubles(20000);
  std::string bits;
  for (double x : numbers) bits += fmt::format("{:016x}\n", std::bit_cast<std::uint64_t>(x));
  const auto input = home.path() / "bits.txt";
  std::ofstream(input) << bits;
  const auto result = taskyon::testing::run_command(
      {*node, "-e",
       "const b = Buffer.alloc(8); const out = [];"
       "for (const h of require('fs').readFileSync(process.argv[1], 'utf8').trim().split('\\n')) {"
       "  b.writeBigUInt64BE(BigInt('0x' + h)); out.push(String(b.readDoubleBE(0))); }"
       "process.stdout.write(out.join('\\n') + '\\n');",
       input.string()},
      home.path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::istringstream lines(result.out);
  std::string expected;
  int failures = 0;
  std::size_t compared = 0;
  for (double x : numbers) {
    ASSERT_TRUE(std::getline(lines, expected)) << "node wrote " << compared << " lines of " << numbers.size();
    ++compared;
    if (formatted(x) != expected && ++failures <= 20) {
      ADD_FAILURE() << fmt::format("{:a}: node {}, ours {}", x, expected, formatted(x));
    }
  }
  EXPECT_EQ(compared, numbers.size());
  EXPECT_EQ(failures, 0);
}

}  // namespace
}  // namespace taskyon::json
