// JSON Schema `pattern` / `patternProperties` (ECMA-262 regular expressions,
// draft-07 §4.3) matched by RE2 (Debian libre2): no recursion, and time linear
// in the subject's length. What RE2 cannot express (backreferences,
// lookaround) is refused when the schema is checked, naming the construct and
// the pattern's JSON pointer. docs/json-schema.md lists the translation;
// docs/limits.md the limits below.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "taskyon/base/error.h"
#include "taskyon/json/json.h"

namespace re2 {
class RE2;
}

namespace taskyon::registry {

inline constexpr std::size_t kMaxPatternBytes = 4096;    // one pattern, bytes of UTF-8
inline constexpr std::size_t kMaxPatternNesting = 64;    // groups inside groups
inline constexpr std::int64_t kMaxPatternProgramBytes = 2 << 20;  // RE2's compiled form (max_mem)

// A compiled pattern; copies share the compiled form.
class Pattern {
 public:
  // Translates `ecma` to RE2 syntax and compiles it. Errc::invalid_manifest,
  // the message naming the pattern and what is unsupported or too large.
  static Result<Pattern> compile(std::string_view ecma);
  // ECMA-262 RegExp.prototype.test semantics: a match anywhere (unanchored).
  bool search(std::string_view subject) const;

 private:
  std::shared_ptr<const re2::RE2> re_;
};

// The pattern in RE2 syntax: \uXXXX → \x{XXXX}, (?<n> → (?P<n>, `.` without
// line terminators, `[^]`, `[]`, \cX, \0. Errc::invalid_manifest for a
// backreference (\1, \k<n>), lookahead (?= (?!, lookbehind (?<= (?<!, an
// inline flag group, nesting deeper than kMaxPatternNesting or a pattern over
// kMaxPatternBytes.
Result<std::string> to_re2_syntax(std::string_view ecma);

// Compiles every `pattern` and `patternProperties` key in a schema; `where`
// of an error is the JSON pointer of the pattern under `pointer`, e.g.
// "/parameters/properties/s/pattern". Data keywords (enum, const, default,
// examples) are not looked into.
Result<void> check_schema_patterns(const json::Value& schema, const std::string& pointer);

}  // namespace taskyon::registry
