#include "taskyon/tasks/conversation.h"

#include <fmt/format.h>

namespace taskyon::tasks {
namespace {

Result<ParentRef> parse_parent(const json::Value& entry, std::size_t i, const std::vector<ConversationEntry>& before) {
  const std::string at = fmt::format("/{}/parent", i);
  if (!entry.contains("parent")) return ParentRef{};
  const auto& p = entry["parent"];
  const auto earlier = [&](const json::Value& n) -> Result<std::size_t> {
    if (!n.is_number_integer() || n.get<std::int64_t>() < 0 || n.get<std::uint64_t>() >= i)
      return fail(Errc::invalid_task, fmt::format("a parent must be an earlier entry (0 to {})", i == 0 ? 0 : i - 1), at);
    return n.get<std::size_t>();
  };
  if (p.is_null()) return ParentRef{ParentRef::Kind::root, 0, {}};
  if (p.is_number()) {
    auto n = earlier(p);
    if (!n) return std::unexpected(n.error());
    return ParentRef{ParentRef::Kind::entry, *n, {}};
  }
  if (p.is_string()) return ParentRef{ParentRef::Kind::task, 0, p.get<std::string>()};
  if (p.is_object() && p.size() == 1 && p.contains("resultOf")) {
    auto n = earlier(p["resultOf"]);
    if (!n) return std::unexpected(n.error());
    if (!before[*n].draft.content.contains("functionCall"))
      return fail(Errc::invalid_task, fmt::format("entry {} is not a function call, so it has no result", *n),
                  at + "/resultOf");
    return ParentRef{ParentRef::Kind::result_of, *n, {}};
  }
  return fail(Errc::invalid_task,
              "parent must be null, an earlier entry's index, {\"resultOf\": index}, or a task id", at);
}

}  // namespace

Result<std::vector<ConversationEntry>> parse_conversation(const json::Value& file) {
  if (!file.is_array()) return fail(Errc::invalid_task, "a conversation file is a JSON array of drafts", "/");
  std::vector<ConversationEntry> out;
  for (std::size_t i = 0; i < file.size(); ++i) {
    const auto& e = file[i];
    const std::string at = fmt::format("/{}", i);
    auto draft = parse_draft(e, at, /*allow_parent=*/true);
    if (!draft) return std::unexpected(draft.error());
    ConversationEntry entry;
    entry.draft = std::move(*draft);
    auto parent = parse_parent(e, i, out);
    if (!parent) return std::unexpected(parent.error());
    entry.parent = std::move(*parent);
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace taskyon::tasks
