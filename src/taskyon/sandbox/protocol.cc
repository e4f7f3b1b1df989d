#include "taskyon/sandbox/protocol.h"

#include <charconv>
#include <cstring>
#include <initializer_list>

#include <fmt/format.h>

namespace taskyon::sandbox::protocol {

namespace {

// Serializes `frame` as one line; nullopt when a string is not valid UTF-8.
std::optional<std::string> dump_line(const json::Value& frame) {
  try {
    std::string line = frame.dump(-1, ' ', false, json::Value::error_handler_t::strict);
    line.push_back('\n');
    return line;
  } catch (const json::Value::exception&) {
    return std::nullopt;
  }
}

// Deepest array/object nesting of JSON text, without parsing it; stops early
// once past `limit`.
std::size_t depth_of(std::string_view text, std::size_t limit) {
  std::size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest && (deepest = depth) > limit) return deepest;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

std::unexpected<Violation> violation(std::string message) {
  return std::unexpected(Violation{std::move(message)});
}

// Parses a frame object and checks its "type"; nullopt-like failure as a Violation.
std::expected<json::Value, Violation> parse_object(std::string_view line) {
  if (depth_of(line, kMaxDepth) > kMaxDepth) {
    return violation(fmt::format("a frame nests deeper than {} levels", kMaxDepth));
  }
  // json::parse (json.h) is the strict parser every stored value goes
  // through: duplicate names, invalid UTF-8 and numbers that RFC 8785 cannot
  // write back unchanged (18446744073709551615, 1e400) are refused here, so
  // whatever a frame carries can be canonicalized and hashed (issue 12 item 6).
  auto parsed = json::parse(line, json::ParseLimits{.max_depth = kMaxDepth, .max_bytes = line.size() + 1});
  if (!parsed) return violation("a frame is not strict, canonicalizable JSON: " + parsed.error().message.substr(0, 200));
  json::Value frame = std::move(*parsed);
  if (!frame.is_object()) return violation("a frame is not a JSON object");
  auto type = frame.find("type");
  if (type == frame.end() || !type->is_string()) return violation("a frame has no string \"type\"");
  return frame;
}

// True when `frame` has exactly the members `names` ("type" included).
bool has_exactly(const json::Value& frame, std::initializer_list<const char*> names) {
  if (frame.size() != names.size()) return false;
  for (const char* name : names) {
    if (!frame.contains(name)) return false;
  }
  return true;
}

Frame make_frame(Frame::Kind kind) {
  Frame frame;
  frame.kind = kind;
  return frame;
}

bool is_string_member(const json::Value& frame, const char* name) { return frame.at(name).is_string(); }

}  // namespace

Result<std::string> encode_load(std::string_view code, std::size_t max_frame_bytes, const json::Value* modules) {
  json::Value frame{{"type", "load"}, {"code", std::string(code)}};
  if (modules && !modules->is_null()) frame["modules"] = *modules;
  auto line = dump_line(frame);
  if (!line) return fail(Errc::bad_usage, "the tool code or a module is not valid UTF-8");
  if (line->size() > max_frame_bytes) {
    return fail(Errc::bad_usage, fmt::format("the tool code{} {} not fit in one {}-byte frame",
                                             modules ? " and its modules" : "", modules ? "do" : "does", max_frame_bytes));
  }
  return std::move(*line);
}

Result<void> encode_call_into(std::string& line, std::uint64_t id, const json::Value& args,
                              std::size_t max_frame_bytes) {
  // The args are written straight into the frame by the canonical writer (no
  // copy of their DOM or of their text; a fifth faster than nlohmann's dump):
  // what tool code receives is what the call's task hashed, and a value JSON
  // cannot carry unchanged is refused, never rounded by the harness's
  // JSON.parse (DESIGN §2).
  line.clear();
  line.append(R"({"args":)");
  if (auto written = json::canonicalize_into(args, line); !written) {
    line.clear();
    const Error& e = written.error();
    if (e.code != Errc::not_canonical) return std::unexpected(e);
    return fail(Errc::invalid_arguments,
                fmt::format("the call arguments cannot be sent as JSON: {}", e.message),
                e.where);
  }
  char digits[24];
  const char* const digits_end = std::to_chars(digits, digits + sizeof digits, id).ptr;
  line.append(R"(,"id":)").append(digits, static_cast<std::size_t>(digits_end - digits)).append(R"(,"type":"call"})" "\n");
  if (line.size() > max_frame_bytes) {
    line.clear();
    return fail(Errc::invalid_arguments,
                fmt::format("the call arguments do not fit in one {}-byte frame", max_frame_bytes));
  }
  return {};
}

Result<std::string> encode_call(std::uint64_t id, const json::Value& args, std::size_t max_frame_bytes) {
  std::string line;
  if (auto written = encode_call_into(line, id, args, max_frame_bytes); !written)
    return std::unexpected(std::move(written.error()));
  return line;
}

std::expected<Frame, Violation> parse_load_reply(std::string_view line) {
  auto frame = parse_object(line);
  if (!frame) return std::unexpected(std::move(frame.error()));
  const std::string& type = frame->at("type").get_ref<const std::string&>();
  if (type == "ready") {
    if (!has_exactly(*frame, {"type"})) return violation("a \"ready\" frame has extra members");
    return make_frame(Frame::Kind::ready);
  }
  if (type == "load_error") {
    if (!has_exactly(*frame, {"type", "message"}) || !is_string_member(*frame, "message")) {
      return violation("a \"load_error\" frame must be exactly {type, message: string}");
    }
    Frame out = make_frame(Frame::Kind::load_error);
    out.text = frame->at("message").get<std::string>();
    return out;
  }
  return violation(fmt::format("unexpected frame type \"{}\" while loading", type));
}

namespace {

// The frame that ends nearly every call, exactly as the harness writes it:
// {"type":"result","id":ID,"value":VALUE}, with ID the call's id in decimal
// and VALUE one strict JSON value nesting at most kMaxDepth - 1 deep (the
// frame is level 1). Only VALUE is parsed (issue 19: no DOM of the frame, no
// depth pre-scan). Anything else, even a frame the full path accepts (white
// space, other member order), is nullopt and goes the full path, which
// decides it; so this path accepts nothing the full one would refuse, and
// gives what it would give.
std::optional<Frame> plain_result(std::string_view line, std::uint64_t id) {
  constexpr std::string_view head = R"({"type":"result","id":)";
  constexpr std::string_view value_key = R"(,"value":)";
  if (!line.starts_with(head) || !line.ends_with('}')) return std::nullopt;
  line.remove_prefix(head.size());
  char digits[24];
  const auto printed = std::to_chars(digits, digits + sizeof digits, id);
  const std::string_view id_text(digits, static_cast<std::size_t>(printed.ptr - digits));
  if (!line.starts_with(id_text)) return std::nullopt;
  line.remove_prefix(id_text.size());
  if (!line.starts_with(value_key)) return std::nullopt;
  line.remove_prefix(value_key.size());
  line.remove_suffix(1);
  auto value = json::parse(line, json::ParseLimits{.max_depth = kMaxDepth - 1, .max_bytes = line.size() + 1});
  if (!value) return std::nullopt;
  Frame out = make_frame(Frame::Kind::result);
  out.value = std::move(*value);
  return out;
}

}  // namespace

std::expected<Frame, Violation> parse_call_reply(std::string_view line, std::uint64_t id) {
  if (auto result = plain_result(line, id)) return std::move(*result);
  auto frame = parse_object(line);
  if (!frame) return std::unexpected(std::move(frame.error()));
  const std::string type = frame->at("type").get<std::string>();
  auto id_matches = [&] {
    const json::Value& got = frame->at("id");
    return got.is_number_unsigned() && got.get<std::uint64_t>() == id;
  };
  if (type == "log") {
    if (!has_exactly(*frame, {"type", "id", "level", "text"}) || !is_string_member(*frame, "level") ||
        !is_string_member(*frame, "text")) {
      return violation("a \"log\" frame must be exactly {type, id, level: string, text: string}");
    }
    if (!id_matches()) return violation("a \"log\" frame names another call id");
    std::string level = frame->at("level").get<std::string>();
    if (level != "log" && level != "info" && level != "warn" && level != "error" && level != "debug") {
      return violation("a \"log\" frame has an unknown level");
    }
    Frame out = make_frame(Frame::Kind::log);
    out.level = std::move(level);
    out.text = frame->at("text").get<std::string>();
    return out;
  }
  if (type == "progress") {
    const auto& f = *frame;
    if (!has_exactly(f, {"type", "id", "progress", "total", "message"}) || !f.at("progress").is_number() ||
        !(f.at("total").is_number() || f.at("total").is_null()) || !is_string_member(f, "message")) {
      return violation("a \"progress\" frame must be exactly {type, id, progress: number, total: number|null, message: string}");
    }
    if (!id_matches()) return violation("a \"progress\" frame names another call id");
    Frame out = make_frame(Frame::Kind::progress);
    out.progress = f.at("progress").get<double>();
    if (f.at("total").is_number()) out.total = f.at("total").get<double>();
    out.text = f.at("message").get<std::string>();
    return out;
  }
  if (type == "result") {
    if (!has_exactly(*frame, {"type", "id", "value"})) {
      return violation("a \"result\" frame must be exactly {type, id, value}");
    }
    if (!id_matches()) return violation("a \"result\" frame names another call id");
    Frame out = make_frame(Frame::Kind::result);
    out.value = std::move(frame->at("value"));
    return out;
  }
  if (type == "error") {
    if (!has_exactly(*frame, {"type", "id", "name", "message"}) || !is_string_member(*frame, "name") ||
        !is_string_member(*frame, "message")) {
      return violation("an \"error\" frame must be exactly {type, id, name: string, message: string}");
    }
    if (!id_matches()) return violation("an \"error\" frame names another call id");
    Frame out = make_frame(Frame::Kind::error);
    out.text = frame->at("message").get<std::string>();
    out.name = frame->at("name").get<std::string>();
    return out;
  }
  if (type == "cap") {
    if (!has_exactly(*frame, {"type", "id", "req", "op", "args"}) || !is_string_member(*frame, "op") ||
        !frame->at("args").is_object() || !frame->at("req").is_number_unsigned()) {
      return violation("a \"cap\" frame must be exactly {type, id, req: unsigned, op: string, args: object}");
    }
    if (!frame->at("id").is_number_unsigned()) return violation("a \"cap\" frame's id is not an unsigned integer");
    const std::string& name = frame->at("op").get_ref<const std::string&>();
    auto op = capability_op(name);
    if (!op) return violation(fmt::format("unknown capability \"{}\": there is no generic RPC", name.substr(0, 40)));
    Frame out = make_frame(Frame::Kind::cap);
    out.op = *op;
    out.call = frame->at("id").get<std::uint64_t>();
    out.req = frame->at("req").get<std::uint64_t>();
    out.value = std::move(frame->at("args"));
    return out;
  }
  if (type == "abort") {
    if (!has_exactly(*frame, {"type", "id", "req"}) || !frame->at("id").is_number_unsigned() ||
        !frame->at("req").is_number_unsigned()) {
      return violation("an \"abort\" frame must be exactly {type, id: unsigned, req: unsigned}");
    }
    Frame out = make_frame(Frame::Kind::abort);
    out.call = frame->at("id").get<std::uint64_t>();
    out.req = frame->at("req").get<std::uint64_t>();
    return out;
  }
  return violation(fmt::format("unexpected frame type \"{}\" during a call", type.substr(0, 40)));
}

std::string encode_cap_reply(std::uint64_t req, const CapabilityReply& reply, std::size_t max_frame_bytes) {
  auto error_line = [&](std::string_view code, std::string message) {
    for (;;) {
      auto line = dump_line(json::Value{{"type", "cap_error"}, {"req", req}, {"code", std::string(code)},
                                        {"message", message}});
      if (!line) {
        message = "the host's error message was not valid UTF-8";
        continue;
      }
      if (line->size() <= max_frame_bytes || message.empty()) return std::move(*line);
      message.resize(message.size() / 2);
      while (!message.empty() && (static_cast<unsigned char>(message.back()) & 0xC0) == 0x80) message.pop_back();
      if (!message.empty() && static_cast<unsigned char>(message.back()) >= 0xC0) message.pop_back();
    }
  };
  if (!reply.ok()) return error_line(*reply.code, reply.message);
  auto line = dump_line(json::Value{{"type", "cap_result"}, {"req", req}, {"value", reply.value}});
  if (!line) return error_line("invalid_request", "the reply held a string that is not valid UTF-8");
  if (line->size() > max_frame_bytes) {
    return error_line("too_large", fmt::format("the reply does not fit in one {}-byte frame", max_frame_bytes));
  }
  return std::move(*line);
}

}  // namespace taskyon::sandbox::protocol
