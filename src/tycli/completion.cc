// Shell completion scripts written from the command tree (cli_tree.h). Each
// script holds the tree as data — per command path its subcommands, options,
// the options that take a value, and those values' completions — and one
// small function that walks the words typed so far through it.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cli_tree.h"

namespace tycli {

namespace {

// What a shell needs to know at one command path.
struct Level {
  const CommandNode* node = nullptr;
  std::vector<const OptionNode*> visible;  // its named options and its ancestors' (CLI11 fallthrough)
  bool file_positional = false;
  std::vector<std::string> positional_choices;  // the fixed values of its positionals (completion SHELL)
};

void flatten(const CommandNode& node, std::vector<const OptionNode*> inherited, std::vector<Level>& out) {
  Level level;
  level.node = &node;
  std::vector<const OptionNode*> own;
  for (const auto& o : node.options) {
    if (!o.names.empty()) own.push_back(&o);
    else if (o.file) level.file_positional = true;
    else level.positional_choices.insert(level.positional_choices.end(), o.choices.begin(), o.choices.end());
  }
  level.visible = own;
  for (const OptionNode* o : inherited) {  // a command's own option of the same name (--help) hides its parent's
    const bool hidden = std::ranges::any_of(own, [o](const OptionNode* mine) {
      return std::ranges::find_first_of(mine->names, o->names) != mine->names.end();
    });
    if (!hidden) level.visible.push_back(o);
  }
  out.push_back(level);
  for (const auto& sub : node.commands) flatten(sub, level.visible, out);
}

std::vector<Level> levels(const CommandNode& tree) {
  std::vector<Level> out;
  flatten(tree, {}, out);
  return out;
}

std::string join(const std::vector<std::string>& words, const char* sep = " ") {
  return fmt::format("{}", fmt::join(words, sep));
}

// The value completion of an option: "@file", or its choices, or "" (free text).
std::string value_words(const OptionNode& o) { return o.file ? "@file" : join(o.choices); }

// POSIX single quotes (bash, zsh).
std::string sh_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// fish single quotes: \\ and \' are the only escapes.
std::string fish_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\\' || c == '\'') out += '\\';
    out += c;
  }
  return out + "'";
}

// One line of a --help text, for a shell's description column.
std::string one_line(const std::string& s) {
  std::string out;
  for (char c : s) out += (c == '\n' || c == '\t') ? ' ' : c;
  return out;
}

// The tables both POSIX-like shells share: an associative array per kind.
std::string sh_tables(const std::vector<Level>& all, const std::string& declare) {
  std::string cmds, opts, takes, vals;
  for (const Level& l : all) {
    const std::string& path = l.node->path;
    std::vector<std::string> names, options, taking;
    for (const auto& c : l.node->commands) names.push_back(c.name);
    names.insert(names.end(), l.positional_choices.begin(), l.positional_choices.end());
    cmds += fmt::format("  [{}]={}\n", sh_quote(path), sh_quote(join(names) + (l.file_positional ? " @file" : "")));
    for (const OptionNode* o : l.visible) {
      options.insert(options.end(), o->names.begin(), o->names.end());
      if (o->value.empty()) continue;
      for (const auto& n : o->names) {
        taking.push_back(n);
        vals += fmt::format("  [{}]={}\n", sh_quote(path + " " + n), sh_quote(value_words(*o)));
      }
    }
    opts += fmt::format("  [{}]={}\n", sh_quote(path), sh_quote(join(options)));
    takes += fmt::format("  [{}]={}\n", sh_quote(path), sh_quote(" " + join(taking) + " "));
  }
  return fmt::format("{0} _tycli_cmds=(\n{1})\n{0} _tycli_opts=(\n{2})\n{0} _tycli_takes=(\n{3})\n{0} _tycli_vals=(\n{4})\n",
                     declare, cmds, opts, takes, vals);
}

std::string bash_script(const CommandNode& tree) {
  return "# bash completion for tycli, written by `tycli completion bash` from its command tree.\n" +
         sh_tables(levels(tree), "declare -gA") + R"(
# The command path of the words before the cursor, then what fits at the cursor.
_tycli() {
  local cur=${COMP_WORDS[COMP_CWORD]} cpath=tycli i w
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=${COMP_WORDS[i]}
    if [[ $w == -- ]]; then  # the rest belongs to another program (import-mcp -- COMMAND): its files
      mapfile -t COMPREPLY < <(compgen -f -- "$cur")
      return 0
    elif [[ ${_tycli_takes[$cpath]} == *" $w "* ]]; then
      ((i++))
    elif [[ -n ${_tycli_cmds["$cpath $w"]+set} ]]; then
      cpath="$cpath $w"
    fi
  done
  local prev=${COMP_WORDS[COMP_CWORD-1]}
  # --opt=VALUE: bash splits it into --opt, = and the value.
  if [[ $prev == = ]] && ((COMP_CWORD > 2)); then
    prev=${COMP_WORDS[COMP_CWORD-2]}
  fi
  if ((COMP_CWORD > 1)) && [[ ${_tycli_takes[$cpath]} == *" $prev "* ]]; then
    local values=${_tycli_vals["$cpath $prev"]}
    if [[ $values == @file ]]; then
      mapfile -t COMPREPLY < <(compgen -f -- "$cur")  # one name per line: names may hold spaces
    else
      COMPREPLY=($(compgen -W "$values" -- "$cur"))
    fi
    return 0
  fi
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "${_tycli_opts[$cpath]}" -- "$cur"))
    return 0
  fi
  local words=${_tycli_cmds[$cpath]}
  COMPREPLY=($(compgen -W "${words//@file/}" -- "$cur"))
  if [[ $words == *@file* ]]; then
    mapfile -t -O "${#COMPREPLY[@]}" COMPREPLY < <(compgen -f -- "$cur")
  fi
  return 0
}
complete -o filenames -F _tycli tycli
)";
}

std::string zsh_script(const CommandNode& tree) {
  const auto all = levels(tree);
  std::string descriptions;  // "path word" -> description, for _describe
  for (const Level& l : all) {
    for (const auto& c : l.node->commands)
      descriptions += fmt::format("  [{}]={}\n", sh_quote(l.node->path + " " + c.name), sh_quote(one_line(c.description)));
    for (const OptionNode* o : l.visible)
      for (const auto& n : o->names)
        descriptions += fmt::format("  [{}]={}\n", sh_quote(l.node->path + " " + n), sh_quote(one_line(o->description)));
  }
  return "#compdef tycli\n# zsh completion for tycli, written by `tycli completion zsh` from its command tree.\n" +
         sh_tables(all, "typeset -gA") + "typeset -gA _tycli_desc=(\n" + descriptions + ")\n" + R"(
# "word:description" entries of `path`'s words, for _describe.
_tycli_described() {
  local p=$1 w d; shift
  reply=()
  for w in "$@"; do
    d=${_tycli_desc[$p $w]}
    reply+=("${w//:/\\:}:$d")
  done
}

_tycli() {
  local cpath=tycli i w
  for ((i = 2; i < CURRENT; i++)); do
    w=${words[i]}
    if [[ ${_tycli_takes[$cpath]} == *" $w "* ]]; then
      ((i++))
    elif (( ${+_tycli_cmds[$cpath $w]} )); then
      cpath="$cpath $w"
    fi
  done
  local prev=${words[CURRENT-1]} cur=${words[CURRENT]}
  local -a reply
  if ((CURRENT > 2)) && [[ ${_tycli_takes[$cpath]} == *" $prev "* ]]; then
    local values=${_tycli_vals[$cpath $prev]}
    if [[ $values == @file ]]; then
      _files
    elif [[ -n $values ]]; then
      compadd -- ${=values}
    fi
    return
  fi
  if [[ $cur == -* ]]; then
    _tycli_described "$cpath" ${=_tycli_opts[$cpath]}
    _describe -t options 'option' reply
    return
  fi
  local cmds=${_tycli_cmds[$cpath]}
  _tycli_described "$cpath" ${=${cmds//@file/}}
  ((${#reply})) && _describe -t commands 'command' reply
  [[ $cmds == *@file* ]] && _files
  return 0
}

if [[ $funcstack[1] == _tycli ]]; then
  _tycli "$@"
else
  compdef _tycli tycli
fi
)";
}

std::string fish_script(const CommandNode& tree) {
  const auto all = levels(tree);
  std::vector<std::string> paths, takes;
  for (const Level& l : all) {
    paths.push_back(fish_quote(l.node->path));
    for (const OptionNode* o : l.visible)
      if (!o->value.empty())
        for (const auto& n : o->names) takes.push_back(fish_quote(l.node->path + " " + n));
  }
  std::string out = "# fish completion for tycli, written by `tycli completion fish` from its command tree.\n";
  out += "set -g __tycli_paths " + join(paths) + "\n";
  out += "set -g __tycli_takes " + join(takes) + "\n";
  out += R"(
# The command path of the words before the cursor ("tycli tool").
function __tycli_path
    set -l words (commandline -opc)
    set -l path tycli
    set -l skip 0
    for w in $words[2..-1]
        if test $skip = 1
            set skip 0
        else if contains -- "$path $w" $__tycli_takes
            set skip 1
        else if contains -- "$path $w" $__tycli_paths
            set path "$path $w"
        end
    end
    echo $path
end

function __tycli_at
    test (__tycli_path) = "$argv[1]"
end

complete -c tycli -e
)";
  for (const Level& l : all) {
    const std::string cond = fish_quote("__tycli_at " + fish_quote(l.node->path));
    if (!l.file_positional) out += fmt::format("complete -c tycli -n {} -f\n", cond);
    for (const auto& c : l.node->commands)
      out += fmt::format("complete -c tycli -n {} -f -a {} -d {}\n", cond, fish_quote(c.name),
                         fish_quote(one_line(c.description)));
    if (!l.positional_choices.empty())
      out += fmt::format("complete -c tycli -n {} -f -a {}\n", cond, fish_quote(join(l.positional_choices)));
    for (const OptionNode* o : l.visible) {
      std::string spec;
      for (const auto& n : o->names)
        spec += n.starts_with("--") ? " -l " + fish_quote(n.substr(2)) : " -s " + fish_quote(n.substr(1));
      if (!o->value.empty()) spec += o->file ? " -r -F" : " -r -f";
      if (!o->choices.empty()) spec += " -a " + fish_quote(join(o->choices));
      out += fmt::format("complete -c tycli -n {}{} -d {}\n", cond, spec, fish_quote(one_line(o->description)));
    }
  }
  return out;
}

}  // namespace

std::string completion_script(const CommandNode& tree, const std::string& shell) {
  if (shell == "bash") return bash_script(tree);
  if (shell == "zsh") return zsh_script(tree);
  if (shell == "fish") return fish_script(tree);
  return {};
}

}  // namespace tycli
