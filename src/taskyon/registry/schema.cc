#include "taskyon/registry/schema.h"
#include "taskyon/registry/schema_words.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include <fmt/format.h>

// valijson reports schema errors by exception only when asked; otherwise it
// aborts (wasm/, built without exceptions: a trap, docs/browser.md).
#if defined(__cpp_exceptions)
#define VALIJSON_USE_EXCEPTIONS 1
#endif
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include <re2/re2.h>

#include "taskyon/registry/pattern.h"

// valijson 1.0 (Debian) matches `pattern`, `patternProperties` and the date
// formats with std::regex, which recurses per character (a stack overflow on
// a long subject or a deeply nested pattern) and backtracks exponentially
// (`^(a+)+$`). It has no regex hook (later releases have ValidatorT<Engine>),
// so the three visits that use std::regex are explicitly specialized here for
// the two adapters validate_arguments instantiates, matching with RE2
// instead. Only this file instantiates valijson's visitor.
namespace taskyon::registry {
#if defined(__wasi__)
// wasm/ is single-threaded (wasi libc++ without threads has no std::mutex):
// the cache's locks guard nothing there.
struct Mutex {};
struct Held {
  explicit Held(Mutex&) {}
};
#else
using Mutex = std::mutex;
using Held = std::lock_guard<std::mutex>;
#endif
}  // namespace taskyon::registry

namespace taskyon::registry::valijson_re2 {

// The patterns compiled for the schema being validated on this thread: the
// call's own, or a cached schema's (shared by threads, hence the lock).
// Elements of an unordered_map keep their address when others are added.
struct Patterns {
  Mutex lock;
  std::unordered_map<std::string, Pattern> compiled;
};
thread_local Patterns* t_patterns = nullptr;

#if defined(__cpp_exceptions)
[[noreturn]] inline void raise(const std::string& message) { throw std::runtime_error(message); }
#else
// wasm/ builds without exceptions: a trap, after which the host re-instantiates.
[[noreturn]] inline void raise(const std::string&) { std::abort(); }
#endif

// Throws (valijson's error channel; validate_arguments catches it) when a
// stored schema has a pattern RE2 cannot match.
inline const Pattern& pattern(const std::string& ecma) {
  if (!t_patterns) raise("internal: pattern matched outside validate_arguments");
  {
    Held held(t_patterns->lock);
    if (auto it = t_patterns->compiled.find(ecma); it != t_patterns->compiled.end()) return it->second;
  }
  auto compiled = Pattern::compile(ecma);  // outside the lock: RE2 compiles in linear time, but not for free
  if (!compiled) raise(compiled.error().message);
  Held held(t_patterns->lock);
  return t_patterns->compiled.emplace(ecma, std::move(*compiled)).first->second;
}

// valijson's date, time and date-time shapes (RFC 3339), fully matched.
// Returns false when `s` has no such shape; else month and day for the range check.
inline bool date_shape(const std::string& format, const std::string& s, int& month, int& day) {
  static const RE2 date("([0-9]+)-(0[1-9]|1[012])-(0[1-9]|[12][0-9]|3[01])");
  static const RE2 time(
      "([01][0-9]|2[0-3]):([0-5][0-9]):([0-5][0-9]|60)(\\.[0-9]+)?(([Zz])|([\\+|\\-]([01][0-9]|2[0-3]):[0-5][0-9]))");
  static const RE2 datetime(
      "([0-9]+)-(0[1-9]|1[012])-(0[1-9]|[12][0-9]|3[01])[Tt]([01][0-9]|2[0-3]):([0-5][0-9]):([0-5][0-9]|60)"
      "(\\.[0-9]+)?(([Zz])|([\\+|\\-]([01][0-9]|2[0-3]):[0-5][0-9]))");
  month = 1;
  day = 1;
  if (format == "time") return RE2::FullMatch(s, time);
  return RE2::FullMatch(s, format == "date" ? date : datetime, nullptr, &month, &day);
}

}  // namespace taskyon::registry::valijson_re2

namespace valijson {

#define TASKYON_RE2_STRING_VISITS(ADAPTER)                                                                      \
  template <>                                                                                                   \
  bool ValidationVisitor<ADAPTER>::visit(const constraints::PatternConstraint& constraint) {                   \
    if ((m_strictTypes && !m_target.isString()) || !m_target.maybeString()) return true;                      \
    const std::string pattern(constraint.getPattern<std::string::allocator_type>());                            \
    if (taskyon::registry::valijson_re2::pattern(pattern).search(m_target.asString())) return true;            \
    if (m_results) m_results->pushError(m_context, "Failed to match regex specified by 'pattern' constraint."); \
    return false;                                                                                               \
  }                                                                                                             \
  template <>                                                                                                   \
  bool ValidationVisitor<ADAPTER>::visit(const constraints::FormatConstraint& constraint) {                    \
    const std::string s = m_target.asString();                                                                  \
    const std::string format = constraint.getFormat();                                                          \
    if (format != "date" && format != "time" && format != "date-time") return true;                           \
    int month = 0, day = 0;                                                                                     \
    if (taskyon::registry::valijson_re2::date_shape(format, s, month, day)) return validate_date_range(month, day); \
    if (m_results) m_results->pushError(m_context, "String should be a valid " + format);                      \
    return false;                                                                                               \
  }

TASKYON_RE2_STRING_VISITS(adapters::NlohmannJsonAdapter)
TASKYON_RE2_STRING_VISITS(adapters::StdStringAdapter)
#undef TASKYON_RE2_STRING_VISITS

// valijson's own visit, with 'patternProperties' matched by RE2.
template <>
bool ValidationVisitor<adapters::NlohmannJsonAdapter>::visit(const constraints::PropertiesConstraint& constraint) {
  using Adapter = adapters::NlohmannJsonAdapter;
  if ((m_strictTypes && !m_target.isObject()) || !m_target.maybeObject()) return true;
  bool validated = true;
  std::set<std::string> propertiesMatched;
  const typename Adapter::Object object = m_target.asObject();
  constraint.applyToProperties(ValidatePropertySubschemas(object, m_context, true, m_results != nullptr, true,
                                                          m_strictTypes, m_results, &propertiesMatched, &validated,
                                                          m_regexesCache));
  if (!validated && !m_results) return false;

  constraint.applyToPatternProperties([&](const auto& patternProperty, const Subschema* subschema) {
    const std::string patternPropertyStr(patternProperty.c_str());
    const auto& re = taskyon::registry::valijson_re2::pattern(patternPropertyStr);
    for (const typename Adapter::ObjectMember m : object) {
      if (!re.search(m.first)) continue;
      propertiesMatched.insert(m.first);
      std::vector<std::string> newContext = m_context;
      newContext.push_back("[" + m.first + "]");
      ValidationVisitor validator(m.second, newContext, m_strictTypes, m_results, m_regexesCache);
      if (validator.validateSchema(*subschema)) continue;
      if (m_results)
        m_results->pushError(m_context,
                             "Failed to validate against schema associated with pattern '" + patternPropertyStr + "'.");
      validated = false;
      return false;  // as valijson: the first failing property ends the patternProperties check
    }
    return true;
  });

  const Subschema* additionalPropertiesSubschema = constraint.getAdditionalPropertiesSubschema();
  if (!additionalPropertiesSubschema) {
    if (propertiesMatched.size() != m_target.getObjectSize()) {
      if (m_results) {
        std::string unwanted;
        for (const typename Adapter::ObjectMember m : object) {
          if (propertiesMatched.find(m.first) == propertiesMatched.end()) {
            unwanted = m.first;
            break;
          }
        }
        m_results->pushError(m_context,
                             "Object contains a property that could not be validated using 'properties' or "
                             "'additionalProperties' constraints: '" +
                                 unwanted + "'.");
      }
      return false;
    }
    return validated;
  }
  for (const typename Adapter::ObjectMember m : object) {
    if (propertiesMatched.find(m.first) != propertiesMatched.end()) continue;
    std::vector<std::string> newContext = m_context;
    newContext.push_back("[" + m.first + "]");
    ValidationVisitor validator(m.second, newContext, m_strictTypes, m_results, m_regexesCache);
    if (!validator.validateSchema(*additionalPropertiesSubschema)) {
      if (m_results) m_results->pushError(m_context, "Failed to validate against additional properties schema");
      validated = false;
    }
  }
  return validated;
}

}  // namespace valijson

namespace taskyon::registry {
namespace {

// valijson reports a path as {"<root>", "[num1]", "[0]"}; we speak JSON pointers.
std::string to_pointer(const std::vector<std::string>& context) {
  std::string out;
  for (const auto& part : context) {
    if (part == "<root>") continue;
    std::string p = part;
    if (p.size() >= 2 && p.front() == '[' && p.back() == ']') p = p.substr(1, p.size() - 2);
    if (p.size() >= 2 && p.front() == '"' && p.back() == '"') p = p.substr(1, p.size() - 2);
    out += "/" + p;
  }
  return out.empty() ? "/" : out;
}

// True if `longer` is a strict extension of `prefix`.
bool extends(const std::vector<std::string>& longer, const std::vector<std::string>& prefix) {
  return longer.size() > prefix.size() && std::equal(prefix.begin(), prefix.end(), longer.begin());
}

// The property a valijson summary line names ("… property name 'a'."), if any.
std::optional<std::string> summarized_property(const std::string& description) {
  static constexpr std::string_view kMarker = "property name '";
  const auto at = description.find(kMarker);
  if (at == std::string::npos) return std::nullopt;
  const auto begin = at + kMarker.size();
  const auto end = description.rfind('\'');
  if (end == std::string::npos || end < begin) return std::nullopt;
  return description.substr(begin, end - begin);
}

bool has_huge_unsigned(const json::Value& v) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX);
  if (v.is_structured())
    for (const auto& child : v)
      if (has_huge_unsigned(child)) return true;
  return false;
}

// valijson 1.0's nlohmann adapter reads unsigned integers as signed, so values
// above INT64_MAX wrap to negative numbers. JSON numbers are doubles anyway
// (RFC 8785 §3.2.2.3): such integers are compared as doubles instead.
void widen_huge_unsigned(json::Value& v) {
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
    v = static_cast<double>(v.get<std::uint64_t>());
  } else if (v.is_structured()) {
    for (auto& child : v) widen_huge_unsigned(child);
  }
}

// valijson 1.0's integer `multipleOf` divides with `%` after casting the
// argument to int64 (undefined for a double past INT64_MAX, SIGFPE for a zero
// divisor): every integer divisor is compared as a double instead, through
// remainder() (RFC 8785 §3.2.2.3: JSON numbers are doubles).
void widen_integer_multiple_of(json::Value& v) {
  if (v.is_object()) {
    for (auto& [key, child] : v.items()) {
      if (key == "multipleOf" && child.is_number_integer())
        child = child.is_number_unsigned() ? static_cast<double>(child.get<std::uint64_t>())
                                           : static_cast<double>(child.get<std::int64_t>());
      else
        widen_integer_multiple_of(child);
    }
  } else if (v.is_array()) {
    for (auto& child : v) widen_integer_multiple_of(child);
  }
}

Result<void> load(const json::Value& parameters, valijson::Schema& schema) {
#if defined(__cpp_exceptions)  // wasm/ builds without exceptions: valijson's throw is a trap there
  try {
#endif
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    valijson::adapters::NlohmannJsonAdapter adapter(parameters);
    parser.populateSchema(adapter, schema);  // no fetch function: remote $ref fails
#if defined(__cpp_exceptions)
  } catch (const std::exception& e) {
    return fail(Errc::invalid_manifest, fmt::format("\"parameters\" is not a valid JSON Schema: {}", e.what()),
                "/parameters");
  }
#endif
  return {};
}

// A parameters schema as valijson compiled it, with the patterns it has
// matched so far. Widened (widen_huge_unsigned, widen_integer_multiple_of)
// before compiling; widening is a no-op on a schema that needs none.
struct Compiled {
  json::Value parameters;  // as given (cached entries only): an entry serves only an equal schema
  json::Value widened;     // what `schema` was built from, kept while it lives
  std::size_t bytes = 0;   // the schema's JSON text: what the cache's byte bound counts
  valijson::Schema schema;
  valijson_re2::Patterns patterns;
};

// `for_cache`: keep a copy of `parameters` and its size for Cache (an
// uncached compile does not pay for either).
Result<std::shared_ptr<Compiled>> compile(const json::Value& parameters, bool for_cache) {
  auto compiled = std::make_shared<Compiled>();
  if (for_cache) {
    compiled->parameters = parameters;
    compiled->bytes = parameters.dump().size();
  }
  compiled->widened = parameters;
  widen_huge_unsigned(compiled->widened);
  widen_integer_multiple_of(compiled->widened);
  if (auto r = load(compiled->widened, compiled->schema); !r) return std::unexpected(r.error());
  return compiled;
}

// The process's compiled schemas by revision id, least recently used last.
class Cache {
 public:
  std::shared_ptr<Compiled> find(std::string_view revision, const json::Value& parameters) {
    Held held(lock_);
    auto it = index_.find(std::string(revision));
    if (it == index_.end()) return nullptr;
    // A revision id names its content, so the schema is equal; compared all
    // the same (a small tree walk, far below a compile), so that a caller
    // passing the wrong id gets a correct answer, not another tool's schema.
    if (it->second->second->parameters != parameters) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return it->second->second;
  }
  void put(std::string_view revision, std::shared_ptr<Compiled> compiled) {
    if (compiled->bytes > kSchemaCacheBytes) return;  // compiled per call, as without a cache
    Held held(lock_);
    std::string key(revision);
    if (auto it = index_.find(key); it != index_.end()) {
      bytes_ -= it->second->second->bytes;
      order_.erase(it->second);
      index_.erase(it);
    }
    bytes_ += compiled->bytes;
    order_.emplace_front(key, std::move(compiled));
    index_.emplace(std::move(key), order_.begin());
    while (order_.size() > kSchemaCacheEntries || bytes_ > kSchemaCacheBytes) {
      bytes_ -= order_.back().second->bytes;
      index_.erase(order_.back().first);
      order_.pop_back();
    }
  }
  std::size_t size() {
    Held held(lock_);
    return order_.size();
  }
  void clear() {
    Held held(lock_);
    index_.clear();
    order_.clear();
    bytes_ = 0;
  }

 private:
  using Entry = std::pair<std::string, std::shared_ptr<Compiled>>;
  Mutex lock_;
  std::list<Entry> order_;
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  std::size_t bytes_ = 0;
};

Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: no order-of-destruction hazard at exit
  return *c;
}

// `parameters`: the schema `compiled` was built from, for plain-words messages
// (schema_words.h); `as_given`: the arguments as the caller gave them, for the
// values those messages show (null: `arguments`, which may be widened).
Result<void> validate_compiled(Compiled& compiled, const json::Value& parameters, const json::Value& arguments,
                               const json::Value* as_given = nullptr) {
  if (has_huge_unsigned(arguments)) {
    json::Value a = arguments;
    widen_huge_unsigned(a);
    return validate_compiled(compiled, parameters, a, &arguments);
  }
  valijson::Validator validator;
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter target(arguments);
  struct Scope {
    explicit Scope(valijson_re2::Patterns* p) : saved(valijson_re2::t_patterns) { valijson_re2::t_patterns = p; }
    ~Scope() { valijson_re2::t_patterns = saved; }
    valijson_re2::Patterns* saved;
  } scope(&compiled.patterns);
#if defined(__cpp_exceptions)
  try {
#endif
    if (validator.validate(compiled.schema, target, &results)) return {};
#if defined(__cpp_exceptions)
  } catch (const std::exception& e) {
    return fail(Errc::invalid_arguments, fmt::format("arguments could not be validated: {}", e.what()), "/");
  }
#endif
  std::vector<valijson::ValidationResults::Error> errors(results.begin(), results.end());
  std::string message = "arguments do not match the tool's parameters:";
  std::string first;
  for (const auto& error : errors) {
    // valijson adds a summary for each parent of a failed property. Where a
    // deeper error says what broke, the summary is left out; where none does
    // (a `false` subschema), the summary is the only reason and is kept.
    if (error.description.starts_with("Failed to validate against schema associated with property") &&
        std::any_of(errors.begin(), errors.end(), [&](const auto& other) { return extends(other.context, error.context); }))
      continue;
    auto where = to_pointer(error.context);
    if (auto name = summarized_property(error.description)) where = (where == "/" ? "" : where) + "/" + *name;
    if (first.empty()) first = where;
    const auto parts = words::path_parts(error.context);
    message += fmt::format(" {}: {};", where,
                           words::plain(error.description, words::value_at(as_given ? *as_given : arguments, parts),
                                        words::schema_at(parameters, parts)));
  }
  message.pop_back();
  if (first.empty()) first = "/";
  return fail(Errc::invalid_arguments, message, first);
}

// Bounded before validation: valijson copies and walks the whole value.
// (A value RFC 8785 cannot represent is refused where the call is hashed.)
Result<void> check_size(const json::Value& arguments) {
  auto size = json::canonical_size(arguments);  // counted, not kept (issue 19)
  if (size && *size > kMaxArgumentsBytes)
    return fail(Errc::invalid_arguments,
                fmt::format("the arguments are {} bytes of canonical JSON; the limit is {} bytes (docs/limits.md)",
                            *size, kMaxArgumentsBytes),
                "/");
  return {};
}

}  // namespace

Result<void> check_parameters_schema(const json::Value& parameters) {
  if (!parameters.is_object())
    return fail(Errc::invalid_manifest, "\"parameters\" must be a JSON Schema object", "/parameters");
  auto type = parameters.find("type");
  if (type == parameters.end() || *type != "object")
    return fail(Errc::invalid_manifest,
                "\"parameters\" must have \"type\": \"object\" (tools take an object of named arguments)",
                "/parameters/type");
  valijson::Schema schema;
  if (auto r = load(parameters, schema); !r) return r;
  return check_schema_patterns(parameters, "/parameters");
}

Result<void> validate_arguments(const json::Value& parameters, const json::Value& arguments) {
  if (auto r = check_size(arguments); !r) return r;
  auto compiled = compile(parameters, /*for_cache=*/false);
  if (!compiled) return std::unexpected(compiled.error());
  return validate_compiled(**compiled, parameters, arguments);
}

Result<void> validate_arguments(const json::Value& parameters, const json::Value& arguments, std::string_view revision) {
  if (auto r = check_size(arguments); !r) return r;
  std::shared_ptr<Compiled> compiled = cache().find(revision, parameters);
  if (!compiled) {
    auto fresh = compile(parameters, /*for_cache=*/true);
    if (!fresh) return std::unexpected(fresh.error());  // a schema valijson refuses is never cached
    compiled = std::move(*fresh);
    cache().put(revision, compiled);
  }
  return validate_compiled(*compiled, parameters, arguments);
}

std::size_t schema_cache_size() { return cache().size(); }
void clear_schema_cache() { cache().clear(); }

}  // namespace taskyon::registry
