// Conformance of registry::validate_arguments with the official JSON Schema Test
// Suite, draft-07 (Debian package json-schema-test-suite, installed by
// scripts/setup.sh). One test per case of every file of the draft7 directory,
// optional/ included (see docs/json-schema.md): the call must succeed exactly
// when the case says "valid": true. Cases our validator gets wrong by design or
// through valijson 1.0 are listed, each with its reason, in
// testdata/schema/draft7_known_failures.json; they are skipped with that reason,
// and a listed case that passes, or that does not exist, is a failure, so the
// list cannot go stale.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "taskyon/json/json.h"
#include "taskyon/registry/schema.h"

namespace taskyon::registry {
namespace {

namespace fs = std::filesystem;
using json::Value;

// Where the Debian package puts the draft-07 vectors.
constexpr const char* kSuiteDir = "/usr/share/json-schema-test-suite/tests/draft7";
constexpr const char* kKnownFailuresFile = TASKYON_TESTDATA "/schema/draft7_known_failures.json";

struct Case {
  std::string name;   // the test's name: draft7_<file>_<group>_<test>, indices from 0
  std::string file;   // relative to kSuiteDir, e.g. "optional/format/email.json"
  std::string group;  // the group's "description"
  std::string test;   // the test's "description"
  Value schema;
  Value data;
  bool valid = false;
  std::string strict_error;  // why taskyon::json::parse refused the file, if it did
  std::string load_error;    // the suite could not be read: the case fails with this
};

void PrintTo(const Case& c, std::ostream* os) {
  if (c.file.empty())
    *os << c.name;
  else
    *os << c.file << " / " << c.group << " / " << c.test;
}

using Key = std::tuple<std::string, std::string, std::string>;  // file, group, test
Key key_of(const Case& c) { return {c.file, c.group, c.test}; }

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// "optional/format/date-time.json" -> "optional_format_date_time"
std::string identifier(std::string s) {
  if (s.ends_with(".json")) s.resize(s.size() - 5);
  for (auto& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

Case broken(const std::string& name, const std::string& why) {
  Case c;
  c.name = name;
  c.load_error = why;
  return c;
}

// Appends the cases of one suite file; on a malformed file, one failing case.
void load_file(const fs::path& path, const std::string& rel, std::vector<Case>& out) {
  const std::string text = read_text(path);
  const std::string stem = "draft7_" + identifier(rel);
  Value groups;
  std::string strict_error;
  // Files are read the way call arguments are read (strictly). A file the strict
  // parser refuses (optional/bignum.json: integers beyond 2^53) is read by
  // nlohmann as is, and its cases say so when they fail or are skipped.
  if (auto strict = json::parse(text)) {
    groups = std::move(*strict);
  } else {
    strict_error = strict.error().describe();
    try {
      groups = Value::parse(text);
    } catch (const std::exception& e) {
      out.push_back(broken(stem, rel + " is not JSON: " + e.what()));
      return;
    }
  }
  if (!groups.is_array() || groups.empty()) {
    out.push_back(broken(stem, rel + " is not a non-empty array of test groups"));
    return;
  }
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const Value& group = groups[g];
    if (!group.is_object() || !group.contains("schema") || !group.value("description", Value()).is_string() ||
        !group.value("tests", Value()).is_array()) {
      out.push_back(broken(stem + "_" + std::to_string(g), rel + ": group " + std::to_string(g) + " is malformed"));
      continue;
    }
    const Value& tests = group["tests"];
    for (std::size_t t = 0; t < tests.size(); ++t) {
      const Value& test = tests[t];
      const std::string name = stem + "_" + std::to_string(g) + "_" + std::to_string(t);
      if (!test.is_object() || !test.contains("data") || !test.value("description", Value()).is_string() ||
          !test.value("valid", Value()).is_boolean()) {
        out.push_back(broken(name, rel + ": test " + std::to_string(g) + "/" + std::to_string(t) + " is malformed"));
        continue;
      }
      Case c;
      c.name = name;
      c.file = rel;
      c.group = group["description"].get<std::string>();
      c.test = test["description"].get<std::string>();
      c.schema = group["schema"];
      c.data = test["data"];
      c.valid = test["valid"].get<bool>();
      c.strict_error = strict_error;
      out.push_back(std::move(c));
    }
  }
}

// Every case of every *.json file under kSuiteDir, in file order.
const std::vector<Case>& suite() {
  static const std::vector<Case> cases = [] {
    std::vector<Case> out;
    std::error_code ec;
    if (!fs::is_directory(kSuiteDir, ec)) {
      out.push_back(broken("draft7_suite_missing",
                           std::string("JSON Schema Test Suite not found at ") + kSuiteDir +
                               ": run scripts/setup.sh (it installs the Debian package json-schema-test-suite)"));
      return out;
    }
    std::vector<std::string> files;
    for (const auto& entry : fs::recursive_directory_iterator(kSuiteDir))
      if (entry.is_regular_file() && entry.path().extension() == ".json")
        files.push_back(fs::relative(entry.path(), kSuiteDir).generic_string());
    std::sort(files.begin(), files.end());
    if (files.empty()) out.push_back(broken("draft7_suite_empty", std::string("no *.json under ") + kSuiteDir));
    for (const auto& rel : files) load_file(fs::path(kSuiteDir) / rel, rel, out);
    return out;
  }();
  return cases;
}

struct KnownFailures {
  std::map<Key, std::string> why;
  std::string error;  // the list could not be read
};

// testdata/schema/draft7_known_failures.json: [{"file", "group", "test", "why"}].
const KnownFailures& known_failures() {
  static const KnownFailures known = [] {
    KnownFailures k;
    auto list = json::parse(read_text(kKnownFailuresFile));
    if (!list) {
      k.error = std::string(kKnownFailuresFile) + ": " + list.error().describe();
      return k;
    }
    if (!list->is_array()) {
      k.error = std::string(kKnownFailuresFile) + " is not an array";
      return k;
    }
    const std::set<std::string> fields{"file", "group", "test", "why"};
    for (std::size_t i = 0; i < list->size(); ++i) {
      const Value& e = (*list)[i];
      bool ok = e.is_object() && e.size() == fields.size();
      for (const auto& f : fields) ok = ok && e.contains(f) && e[f].is_string() && !e[f].get<std::string>().empty();
      if (!ok) {
        k.error = std::string(kKnownFailuresFile) + ": entry " + std::to_string(i) +
                  " must be exactly {\"file\", \"group\", \"test\", \"why\"}, all non-empty strings";
        return k;
      }
      Key key{e["file"].get<std::string>(), e["group"].get<std::string>(), e["test"].get<std::string>()};
      if (!k.why.emplace(key, e["why"].get<std::string>()).second) {
        k.error = std::string(kKnownFailuresFile) + ": entry " + std::to_string(i) + " is listed twice";
        return k;
      }
    }
    return k;
  }();
  return known;
}

class Draft7 : public ::testing::TestWithParam<Case> {};

TEST_P(Draft7, Case) {
  const Case& c = GetParam();
  ASSERT_TRUE(c.load_error.empty()) << c.load_error;
  const KnownFailures& known = known_failures();
  ASSERT_TRUE(known.error.empty()) << known.error;

  const auto result = validate_arguments(c.schema, c.data);
  // A refusal counts only if it is about the data: a schema valijson cannot load
  // (invalid_manifest) or a validator exception is not an answer.
  const bool accepted = result.has_value();
  const bool rejected = !accepted && result.error().code == Errc::invalid_arguments &&
                        !result.error().message.starts_with("arguments could not be validated");
  const bool conforms = c.valid ? accepted : rejected;

  std::string story = c.file + " / \"" + c.group + "\" / \"" + c.test + "\"\n  schema: " + c.schema.dump() +
                      "\n  data:   " + c.data.dump() + "\n  expected " + (c.valid ? "valid" : "invalid") + ", got " +
                      (accepted ? std::string("valid")
                                : std::string(code_name(result.error().code)) + ": " + result.error().describe());
  if (!c.strict_error.empty()) story += "\n  (taskyon::json::parse refuses this file: " + c.strict_error + ")";

  if (auto it = known.why.find(key_of(c)); it != known.why.end()) {
    if (conforms) {
      FAIL() << "listed in " << kKnownFailuresFile << " but passes now; remove the entry.\n  " << story;
    }
    GTEST_SKIP() << "known failure: " << it->second;
  }
  EXPECT_TRUE(conforms) << story;
}

INSTANTIATE_TEST_SUITE_P(JsonSchemaTestSuite, Draft7, ::testing::ValuesIn(suite()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(SchemaConformance, draft7SuiteIsInstalled) {
  std::error_code ec;
  ASSERT_TRUE(fs::is_directory(kSuiteDir, ec))
      << "JSON Schema Test Suite not found at " << kSuiteDir << ": run scripts/setup.sh";
  std::set<Key> seen;
  for (const Case& c : suite()) {
    EXPECT_TRUE(c.load_error.empty()) << c.name << ": " << c.load_error;
    // A known-failure entry names a case by its descriptions: they must be unique.
    if (c.load_error.empty()) {
      EXPECT_TRUE(seen.insert(key_of(c)).second) << c.name << " has the same descriptions as an earlier case";
    }
  }
}

TEST(SchemaConformance, draft7KnownFailuresAreRealCases) {
  const KnownFailures& known = known_failures();
  ASSERT_TRUE(known.error.empty()) << known.error;
  std::set<Key> cases;
  for (const Case& c : suite()) cases.insert(key_of(c));
  for (const auto& [key, why] : known.why) {
    const auto& [file, group, test] = key;
    EXPECT_TRUE(cases.contains(key)) << kKnownFailuresFile << " lists a case the suite does not have: " << file
                                     << " / \"" << group << "\" / \"" << test << "\"";
  }
}

}  // namespace
}  // namespace taskyon::registry
