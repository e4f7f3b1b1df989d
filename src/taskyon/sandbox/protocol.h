// The host <-> sandbox frames of pool.h, one JSON object per line: encoding of
// host frames, strict validation of child frames, and a bounded line reader.
//
// Sizes: a frame is at most `max_frame_bytes` bytes including its '\n'
// (RuntimeConfig::max_frame_bytes). Child frames are also refused when they
// nest deeper than kMaxDepth arrays/objects (checked before parsing).
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>

#include "taskyon/base/error.h"
#include "taskyon/base/line_reader.h"
#include "taskyon/json/json.h"
#include "taskyon/sandbox/pool.h"

namespace taskyon::sandbox::protocol {

// Deepest nesting of arrays/objects accepted in a child frame (the frame
// object itself is level 1); the harness refuses deeper results first.
inline constexpr std::size_t kMaxDepth = 512;

// {"type":"load","code":CODE[,"modules":MODULES]}\n, MODULES as ToolCode's
// (pool.h). Errc::bad_usage when the code or a module is not valid UTF-8 or
// the frame would exceed max_frame_bytes.
Result<std::string> encode_load(std::string_view code, std::size_t max_frame_bytes,
                                const json::Value* modules = nullptr);

// {"type":"call","id":ID,"args":ARGS}\n with ARGS in RFC 8785 form.
// Errc::invalid_arguments when json::canonicalize refuses the args (invalid
// UTF-8, NaN or ±Infinity, an integer a double cannot hold: JSON.parse would
// change it) or the frame would exceed max_frame_bytes.
Result<std::string> encode_call(std::uint64_t id, const json::Value& args, std::size_t max_frame_bytes);
// The same frame written into `line` (emptied first; empty again on an
// error). Its capacity is kept: a caller that reuses one string allocates,
// and the kernel maps, a large frame's memory once, not per call.
Result<void> encode_call_into(std::string& line, std::uint64_t id, const json::Value& args,
                              std::size_t max_frame_bytes);

// Why a child frame was refused, for people.
struct Violation {
  std::string message;
};

struct Frame {
  enum class Kind { ready, load_error, log, result, error, cap, abort, progress };
  Kind kind = Kind::ready;
  std::string level;    // log: "log" | "info" | "warn" | "error" | "debug"
  std::string text;     // log: the text; load_error and error: the message
  std::string name;     // error: the thrown value's name, e.g. "TypeError"
  json::Value value;    // result; cap: the request's args (an object)
  std::uint64_t req = 0;           // cap, abort: the request number
  std::uint64_t call = 0;          // cap, abort: the call id the frame names (the sandbox checks it)
  CapabilityOp op = CapabilityOp::fetch;  // cap
  double progress = 0;                    // progress: the value
  std::optional<double> total;            // progress: the total, when given
};

// A reply to `load`: exactly {"type":"ready"} or {"type":"load_error","message":STRING}.
std::expected<Frame, Violation> parse_load_reply(std::string_view line);

// A frame during call `id`: exactly
//   {"type":"log","id":ID,"level":LEVEL,"text":STRING}
//   {"type":"progress","id":ID,"progress":NUMBER,"total":NUMBER|null,"message":STRING}  (text = message)
//   {"type":"result","id":ID,"value":VALUE}
//   {"type":"error","id":ID,"name":STRING,"message":STRING}
//   {"type":"cap","id":C,"req":R,"op":OP,"args":OBJECT}   OP: capability_op_name()
//   {"type":"abort","id":C,"req":R}                        the tool's AbortSignal fired for R
// with ID the unsigned integer `id` and C, R unsigned integers: a cap or abort
// frame may name an earlier call (Frame::call), which the sandbox refuses as a
// stale context (S2). Lines are parsed by json::parse, so every accepted value
// can be canonicalized (json.h: canonicalize accepts whatever parse accepts;
// fuzz/fuzz_frames.cc and fuzz_json_parse.cc hold both to it). A result frame
// exactly as the harness writes it has only its value parsed. Anything else
// (an unknown op included: there is no generic RPC, M1) is a Violation.
std::expected<Frame, Violation> parse_call_reply(std::string_view line, std::uint64_t id);

// {"type":"cap_result","req":R,"value":VALUE}\n or, for a failed reply,
// {"type":"cap_error","req":R,"code":CODE,"message":STRING}\n. A value that
// does not fit in max_frame_bytes (or holds invalid UTF-8) becomes a cap_error
// "too_large" (or "invalid_request"); the message is cut to fit.
std::string encode_cap_reply(std::uint64_t req, const CapabilityReply& reply, std::size_t max_frame_bytes);

// The bounded line reader (base/line_reader.h) the host reads child frames with.
using LineReader = taskyon::LineReader;

}  // namespace taskyon::sandbox::protocol
