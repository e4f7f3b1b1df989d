#include "cli_tree.h"

#include <algorithm>
#include <cctype>

namespace tycli {

namespace {

// "{a,b,c}" (CLI::IsMember's description) as its members; anything else: none.
std::vector<std::string> set_members(const std::string& description) {
  std::vector<std::string> out;
  if (description.size() < 3 || description.front() != '{' || description.back() != '}') return out;
  std::string item;
  for (char c : description.substr(1, description.size() - 2)) {
    if (c == ',') {
      out.push_back(item);
      item.clear();
    } else {
      item += c;
    }
  }
  out.push_back(item);
  return out;
}

std::string upper(std::string s) {
  std::ranges::transform(s, s.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}

OptionNode describe_option(CLI::Option& opt) {
  OptionNode node;
  for (const auto& s : opt.get_snames()) node.names.push_back("-" + s);
  for (const auto& l : opt.get_lnames()) node.names.push_back("--" + l);
  if (opt.get_positional()) node.positional = opt.get_name(true);
  node.description = opt.get_description();
  node.required = opt.get_required();
  node.repeatable = opt.get_expected_max() > 1;
  if (opt.get_expected_max() > 0 || opt.get_positional()) {  // a flag expects no value
    // "TEXT:{a,b}:FILE": the placeholder, then each validator's description.
    const std::string full = opt.get_type_name();
    std::string placeholder = full.substr(0, full.find(':'));
    for (std::size_t at = full.find(':'); at != std::string::npos;) {
      const std::size_t next = full.find(':', at + 1);
      const std::string d = full.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1);
      if (auto members = set_members(d); !members.empty()) node.choices = std::move(members);
      if (d.starts_with("FILE")) node.file = true;  // CLI::ExistingFile, or "FILE or -" (cli.h)
      at = next;
    }
    if (upper(placeholder).find("FILE") != std::string::npos) node.file = true;
    if (node.file) placeholder = "FILE";
    node.value = placeholder.empty() ? "VALUE" : placeholder;
  }
  return node;
}

CommandNode describe(CLI::App& app, const std::string& name, const std::string& path) {
  CommandNode node;
  node.name = name;
  node.path = path;
  node.description = app.get_description();
  for (CLI::Option* opt : app.get_options([](CLI::Option* o) { return !o->get_group().empty(); }))
    node.options.push_back(describe_option(*opt));
  for (CLI::App* sub : app.get_subcommands([](CLI::App* s) { return !s->get_name().empty() && !s->get_group().empty(); }))
    node.commands.push_back(describe(*sub, sub->get_name(), path + " " + sub->get_name()));
  return node;
}

}  // namespace

CommandNode describe_commands(CLI::App& app, const std::string& root_name) {
  return describe(app, root_name, root_name);
}

}  // namespace tycli
