#include "taskyon/base/line_reader.h"

#include <cstring>

namespace taskyon {

bool LineReader::feed(std::string_view bytes) {
  if (overflow_) return false;
  if (ends_.empty() && start_ > 0) {  // everything handed out: drop it
    buffer_.erase(0, start_);
    line_begin_ -= start_;
    start_ = 0;
  }
  const std::size_t scan_from = buffer_.size();
  buffer_.append(bytes);
  bool too_long = false;
  for (std::size_t pos = scan_from; pos < buffer_.size();) {
    const void* hit = std::memchr(buffer_.data() + pos, '\n', buffer_.size() - pos);
    if (!hit) break;
    const std::size_t end = static_cast<const char*>(hit) - buffer_.data();
    if (end - line_begin_ > max_line_) {
      too_long = true;
      break;
    }
    ends_.push_back(end);
    line_begin_ = end + 1;
    pos = end + 1;
  }
  if (too_long || buffer_.size() - line_begin_ > max_line_) {
    overflow_ = true;
    std::string().swap(buffer_);
    ends_.clear();
    start_ = line_begin_ = 0;
    return false;
  }
  return true;
}

std::optional<std::string> LineReader::next() {
  if (overflow_ || ends_.empty()) return std::nullopt;
  const std::size_t end = ends_.front();
  ends_.pop_front();
  std::string line = buffer_.substr(start_, end - start_);
  start_ = end + 1;
  return line;
}

}  // namespace taskyon
