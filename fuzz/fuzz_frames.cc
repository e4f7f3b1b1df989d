// The host <-> sandbox frame parser (sandbox/protocol.h): the bytes a hostile
// child writes to fd 1, through the bounded line reader into
// parse_load_reply and parse_call_reply. Never crashes; every value the
// parser accepts is canonicalizable (issue 12 item 6: nothing the host takes
// from a frame may fail later, when the call is hashed), and a capability
// reply always fits its frame.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "taskyon/json/json.h"
#include "taskyon/sandbox/protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace taskyon::sandbox;
  constexpr std::size_t kMaxFrame = 64u << 10;
  protocol::LineReader reader(kMaxFrame);
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // Fed in uneven chunks, as pipe reads arrive.
  for (std::size_t at = 0, step = 1; at < bytes.size(); at += step, step = step * 2 + 1) {
    if (!reader.feed(bytes.substr(at, step))) return 0;
    while (auto line = reader.next()) {
      (void)protocol::parse_load_reply(*line);
      auto frame = protocol::parse_call_reply(*line, 1);
      if (!frame) continue;
      if (frame->kind == protocol::Frame::Kind::result || frame->kind == protocol::Frame::Kind::cap) {
        if (!taskyon::json::canonicalize(frame->value)) std::abort();
      }
      if (frame->kind == protocol::Frame::Kind::cap) {
        auto reply = protocol::encode_cap_reply(frame->req, CapabilityReply::success(frame->value), kMaxFrame);
        if (reply.size() > kMaxFrame || reply.back() != '\n') std::abort();
      }
    }
  }
  return 0;
}
