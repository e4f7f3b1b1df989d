#include "suggest.h"

#include <algorithm>
#include <cctype>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tycli {
namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), std::size_t{0});
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The visible subcommands of `app`, in the order --help lists them.
std::vector<std::string> subcommand_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); }))
    names.push_back(sub->get_name());
  return names;
}

// "tycli tool" for the command `app` within the program.
std::string command_path(const CLI::App& app) {
  std::vector<std::string> parts;
  for (const CLI::App* a = &app; a != nullptr; a = a->get_parent()) parts.push_back(a->get_parent() ? a->get_name() : "tycli");
  std::reverse(parts.begin(), parts.end());
  return fmt::format("{}", fmt::join(parts, " "));
}

// The long options ("--json") of `app` and of the commands above it (an
// option of a parent is accepted after a subcommand too), without --help.
std::vector<std::string> option_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* a = &app; a != nullptr; a = a->get_parent())
    for (const CLI::Option* opt : a->get_options())
      for (const auto& l : opt->get_lnames())
        if (l != "help" && std::find(names.begin(), names.end(), "--" + l) == names.end()) names.push_back("--" + l);
  return names;
}

}  // namespace

std::string plain_words(std::string message) {
  // "R6: text" -> "text (rule R6, docs/contracts.md)": a contract id means
  // nothing without the page that explains it.
  const bool has_id = message.size() > 4 && message[0] >= 'A' && message[0] <= 'Z' &&
                      std::isdigit(static_cast<unsigned char>(message[1])) != 0;
  if (!has_id) return message;
  std::size_t end = 2;
  if (std::isdigit(static_cast<unsigned char>(message[end])) != 0) ++end;
  if (message.compare(end, 2, ": ") != 0) return message;
  return fmt::format("{} (rule {}, docs/contracts.md)", message.substr(end + 2), message.substr(0, end));
}

std::string nearest_name(std::string_view word, const std::vector<std::string>& names) {
  if (word.empty()) return {};
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(1, std::min<std::size_t>(2, word.size() / 3 + 1)) + 1;
  for (const auto& name : names) {
    if (name.starts_with(word) && word.size() >= 2) return name;
    const std::size_t d = edit_distance(word, name);
    if (d < best_distance) {
      best_distance = d;
      best = name;
    }
  }
  return best;
}

std::string explain_parse_error(const CLI::App& app, const CLI::ParseError& error) {
  const bool missing = dynamic_cast<const CLI::RequiredError*>(&error) != nullptr;
  const bool extra = dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr;
  const CLI::App* deepest = &app;
  for (;;) {
    const auto parsed = deepest->get_subcommands();
    if (parsed.empty()) break;
    deepest = parsed.front();
  }
  const std::string path = command_path(*deepest);
  // CLI11's own words for the rest (a value that does not convert, one outside
  // its set, a missing option), pointed at the command's help.
  const std::string as_is = fmt::format("{} (see `{} --help`)", error.what(), path);
  // An unknown option is named, with the nearest one of this command or its parents.
  if (extra) {
    for (const CLI::App* a = deepest; a != nullptr; a = a->get_parent())
      for (const auto& left : a->remaining())
        if (left.starts_with("-") && left != "-" && left != "--") {
          const std::string option = left.substr(0, left.find('='));
          const auto names = option_names(*deepest);
          // An option of the command itself, written before the command's
          // name: `tycli --js-runtime deno call` left it with `tycli`.
          if (a != deepest && std::find(names.begin(), names.end(), option) != names.end())
            return fmt::format("`{}` is an option of `{}`: write it after `{}` (`{} {} …`)", option, path,
                               deepest->get_name(), path, option);
          const std::string near = nearest_name(option, names);
          return fmt::format("`{}` has no option `{}`{} (see `{} --help`)", path, option,
                             near.empty() ? "" : fmt::format(" (did you mean `{}`?)", near), path);
        }
  }
  if (!missing && !extra) return as_is;
  const auto names = subcommand_names(*deepest);
  if (names.empty()) return as_is;
  std::string word;
  // An unmatched word is left with the command that took it, or, through
  // fallthrough, with one of its parents.
  for (const CLI::App* a = deepest; a != nullptr && word.empty(); a = a->get_parent())
    for (const auto& left : a->remaining())
      if (!left.starts_with("-")) {
        word = left;
        break;
      }
  const std::string choices = fmt::format("{}", fmt::join(names, ", "));
  if (word.empty()) {
    if (!missing) return as_is;
    return fmt::format("`{}` needs a command: one of {} (see `{} --help`)", path, choices, path);
  }
  const std::string near = nearest_name(word, names);
  return fmt::format("`{} {}` is not a command{}; the commands of `{}` are {} (see `{} --help`)", path, word,
                     near.empty() ? "" : fmt::format(" (did you mean `{} {}`?)", path, near), path, choices, path);
}

}  // namespace tycli
