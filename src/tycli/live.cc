#include "live.h"

#include <cmath>
#include <cstdint>
#include <iostream>

#include <fmt/format.h>

#include "taskyon/base/escape.h"
#include "taskyon/json/json.h"

namespace tycli {

using taskyon::escape_terminal;
using taskyon::json::Value;

namespace {

std::string json_line(const Value& v) { return v.dump(-1, ' ', false, Value::error_handler_t::replace); }

// A whole number as an integer (2, not 2.0), anything else as it is.
Value number(double d) {
  if (std::floor(d) == d && std::fabs(d) < 9007199254740992.0) return Value(static_cast<std::int64_t>(d));
  return Value(d);
}

}  // namespace

LiveOutput::LiveOutput(bool json, std::chrono::milliseconds timeout) : json_(json), timeout_(timeout) {}

LiveOutput::~LiveOutput() { end(); }

void LiveOutput::attach(taskyon::invoke::Options& options) {
  options.on_log = [this](const taskyon::sandbox::LogEntry& entry) { log(entry); };
  options.on_progress = [this](double done, double total, std::string_view message) {
    progress(done, total, message);
  };
}

std::string LiveOutput::tool_name(const taskyon::tasks::Task& call, std::string_view fallback) {
  const auto fc = call.content.find("functionCall");
  if (fc != call.content.end() && fc->is_object()) {
    const auto name = fc->find("name");
    if (name != fc->end() && name->is_string()) return name->get<std::string>();
  }
  return std::string(fallback);
}

void LiveOutput::begin(std::string_view tool) {
  end();
  {
    std::lock_guard lock(mu_);
    tool_ = std::string(tool);
    streamed_ = 0;
  }
  const auto started = std::chrono::steady_clock::now();
  watcher_ = std::jthread([this, started](std::stop_token stop) { watch(std::move(stop), started); });
}

void LiveOutput::end() {
  if (watcher_.joinable()) {
    watcher_.request_stop();
    watcher_.join();
  }
}

void LiveOutput::line(std::string_view text) {
  std::lock_guard lock(mu_);
  std::cerr << std::string(text) + "\n" << std::flush;
}

void LiveOutput::log(const taskyon::sandbox::LogEntry& entry) {
  std::lock_guard lock(mu_);
  ++streamed_;
  std::string out;
  if (json_)
    out = json_line({{"type", "log"}, {"tool", tool_}, {"level", entry.level}, {"text", entry.text}});
  else
    out = fmt::format("{}: [{}] {}", escape_terminal(tool_), escape_terminal(entry.level), escape_terminal(entry.text));
  std::cerr << out + "\n" << std::flush;
}

void LiveOutput::progress(double done, double total, std::string_view message) {
  std::lock_guard lock(mu_);
  std::string out;
  if (json_) {
    out = json_line({{"type", "progress"},
                     {"tool", tool_},
                     {"done", number(done)},
                     {"total", std::isnan(total) ? Value() : number(total)},
                     {"message", std::string(message)}});
  } else {
    out = fmt::format("{}: progress {}{}{}{}", escape_terminal(tool_), done,
                      std::isnan(total) ? std::string() : fmt::format("/{}", total), message.empty() ? "" : " ",
                      escape_terminal(message));
  }
  std::cerr << out + "\n" << std::flush;
}

void LiveOutput::watch(std::stop_token stop, std::chrono::steady_clock::time_point started) {
  const auto near = started + timeout_ * 8 / 10;
  std::unique_lock lock(mu_);
  if (wake_.wait_until(lock, stop, near, [] { return false; })) return;
  if (stop.stop_requested()) return;
  const auto elapsed =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
  std::string out;
  if (json_) {
    out = json_line({{"type", "timeout_near"},
                     {"tool", tool_},
                     {"elapsedMs", elapsed},
                     {"timeoutMs", timeout_.count()},
                     {"hint", "--timeout"}});
  } else {
    out = fmt::format("tycli: {} has run {} ms of its {} ms timeout; give it more with --timeout MS",
                      escape_terminal(tool_), elapsed, timeout_.count());
  }
  std::cerr << out + "\n" << std::flush;
}

}  // namespace tycli
