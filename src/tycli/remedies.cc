#include "remedies.h"

#include <algorithm>
#include <iostream>

#include <fmt/format.h>

#include "taskyon/base/escape.h"

namespace tycli {
namespace {

using taskyon::invoke::MissingAuthority;

// A word a POSIX shell reads back as itself: bare when it is only safe
// characters, else in single quotes (names and origins come from tool code).
std::string shell_word(const std::string& word) {
  const bool bare = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("_.:/@%+=,-").find(c) != std::string_view::npos;
  });
  if (bare) return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

bool same(const MissingAuthority& a, const MissingAuthority& b) {
  return a.kind == b.kind && a.revision == b.revision && a.origin == b.origin && a.access == b.access &&
         a.secret == b.secret;
}

}  // namespace

Remedies::Remedies() : seen_(std::make_shared<Seen>()) {}

void Remedies::attach(taskyon::invoke::CapabilityOptions& options) {
  options.missing = [seen = seen_](const MissingAuthority& m) {
    std::lock_guard lock(seen->mu);
    if (seen->missing.size() >= 16) return;  // a tool refused a thousand times needs no thousand hints
    if (std::none_of(seen->missing.begin(), seen->missing.end(), [&](const auto& s) { return same(s, m); }))
      seen->missing.push_back(m);
  };
}

void Remedies::print(const Globals& g, taskyon::store::Store& store) {
  std::vector<MissingAuthority> missing;
  {
    std::lock_guard lock(seen_->mu);
    missing.swap(seen_->missing);
  }
  if (g.json) return;
  for (const auto& m : missing) {
    // The grant is per revision: the tool's name says it only while the name points there.
    auto active = store.active(m.tool);
    const std::string who =
        active && *active && (*active)->revision == m.revision ? shell_word(m.tool) : shell_word(m.revision);
    const std::string command =
        m.kind == MissingAuthority::Kind::grant
            ? fmt::format("tycli grant fetch {} {} --access {}", who, shell_word(m.origin),
                          taskyon::capability::access_name(m.access))
            : fmt::format("tycli secret set {} {} {} < FILE", who, shell_word(m.origin), shell_word(m.secret));
    const std::string what = m.kind == MissingAuthority::Kind::grant
                                 ? fmt::format("{} access to {}", taskyon::capability::access_name(m.access), m.origin)
                                 : fmt::format("the secret {} for {}", m.secret, m.origin);
    std::cerr << taskyon::escape_terminal(fmt::format("tycli: {} was refused; to allow it: {}", what, command)) << "\n";
  }
}

}  // namespace tycli
