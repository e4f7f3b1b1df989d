// JSON Schema (draft-07) checks of tool parameters, through valijson.
// Schemas are resolved locally only: a remote "$ref" is an error, never a fetch.
#pragma once

#include <cstddef>
#include <string_view>

#include "taskyon/base/error.h"
#include "taskyon/json/json.h"

namespace taskyon::registry {

// A manifest's `parameters`: a JSON Schema object with "type": "object" (model
// providers call tools with an object of named arguments) that valijson accepts
// and whose patterns RE2 can match (pattern.h: no backreference or lookaround).
// Errc::invalid_manifest, `where` under "/parameters" (a pattern's own pointer).
Result<void> check_parameters_schema(const json::Value& parameters);

// Call arguments are at most this many bytes of canonical JSON, checked before
// validation (docs/limits.md); below the sandbox's 8 MiB frame.
inline constexpr std::size_t kMaxArgumentsBytes = 4u << 20;

// Validates call arguments against `parameters`. Patterns and the date formats
// are matched by RE2, in time linear in the string's length, with no length
// cap; integers above 2^63 - 1 are compared as doubles. Errc::invalid_arguments; the
// message lists each broken rule with the argument's JSON pointer
// (e.g. "/num1: value type is not allowed"), `where` the first pointer.
Result<void> validate_arguments(const json::Value& parameters, const json::Value& arguments);

// The same, with the compiled schema kept per process under `revision`, the
// content-addressed id of the manifest holding `parameters` (issue 19): the
// first call compiles, later calls only validate. An entry serves only a call
// whose `parameters` equal the ones it was compiled from (compared, so a wrong
// id never borrows another schema). A schema valijson refuses is not kept.
// At most kSchemaCacheEntries schemas, of at most kSchemaCacheBytes of JSON
// text together, are kept; the least recently used is dropped first, and a
// larger schema is compiled per call. Thread-safe.
Result<void> validate_arguments(const json::Value& parameters, const json::Value& arguments,
                                std::string_view revision);
inline constexpr std::size_t kSchemaCacheEntries = 256;
inline constexpr std::size_t kSchemaCacheBytes = 8u << 20;  // 8 MiB: 32 schemas at the 256 KiB `parameters` limit

// The number of compiled schemas kept, and dropping them all (tests, bench).
std::size_t schema_cache_size();
void clear_schema_cache();

}  // namespace taskyon::registry
