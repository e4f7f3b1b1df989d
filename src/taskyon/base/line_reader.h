// A bounded reader of newline-delimited frames, for pipes from processes the
// host does not trust (sandboxes, external services).
#pragma once

#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <string_view>

namespace taskyon {

// Splits bytes into '\n'-terminated lines of at most max_frame_bytes - 1 bytes.
// It holds only bytes that actually arrived (at most the limit plus one fed
// chunk); a line over the limit puts the reader in the overflow state for good.
class LineReader {
 public:
  explicit LineReader(std::size_t max_frame_bytes) : max_line_(max_frame_bytes > 0 ? max_frame_bytes - 1 : 0) {}

  // Takes the next bytes. False when a line is (or has been) over the limit.
  bool feed(std::string_view bytes);

  // The next complete line, without its '\n'.
  std::optional<std::string> next();

  // True when bytes are held: complete lines not taken yet or a partial line.
  bool holds_bytes() const { return start_ < buffer_.size(); }

  bool overflowed() const { return overflow_; }

 private:
  std::size_t max_line_;
  std::string buffer_;
  std::size_t start_ = 0;       // bytes before this were handed out
  std::size_t line_begin_ = 0;  // start of the line not terminated yet
  std::deque<std::size_t> ends_;  // positions of '\n' of complete lines not handed out
  bool overflow_ = false;
};

}  // namespace taskyon
