// The man(7) page of tycli, written from the command tree (cli_tree.h) and its
// --help texts. Text is escaped for roff: a line never starts with `.` or `'`,
// a backslash is \e, an option's hyphens are \- and non-ASCII is \[uXXXX].
#include <fmt/format.h>

#include <string>

#include "cli.h"
#include "cli_tree.h"

namespace tycli {

namespace {

// One UTF-8 sequence at s[i] as a code point; advances i past it (a bad byte: U+FFFD).
char32_t next_code_point(const std::string& s, std::size_t& i) {
  const auto b = static_cast<unsigned char>(s[i]);
  const int len = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1;
  if (len == 1 || i + len > s.size()) {
    ++i;
    return b < 0x80 ? b : 0xFFFD;
  }
  char32_t cp = b & (0x7F >> len);
  for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  i += len;
  return cp;
}

// Text for a roff text line: backslashes, hyphens of words that start with
// '-' (options: \-, so they copy as ASCII), non-ASCII, and a leading . or '.
std::string roff(const std::string& text) {
  std::string out;
  bool option_word = false;
  bool word_start = true;
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (static_cast<unsigned char>(c) >= 0x80) {
      out += fmt::format("\\[u{:04X}]", static_cast<unsigned>(next_code_point(text, i)));
      word_start = option_word = false;
      continue;
    }
    ++i;
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-' && (word_start || option_word)) {
      out += "\\-";
      option_word = true;
    } else {
      out += c == '\n' ? ' ' : c;
    }
    const bool separator = c == ' ' || c == '\n' || c == '(' || c == '`' || c == '"' || c == '[' || c == '|' ||
                           c == ',' || c == '=';
    if (separator) option_word = false;
    word_start = separator;
  }
  if (!out.empty() && (out.front() == '.' || out.front() == '\'')) out.insert(0, "\\&");
  return out;
}

// "-h, --help" in bold, the value in italics: .TP's tag line.
std::string option_tag(const OptionNode& o) {
  std::string tag;
  if (!o.positional.empty())
    return "\\fI" + roff(o.positional) + "\\fR" + (o.repeatable ? " ..." : "") +
           (o.choices.empty() ? "" : " (" + roff(fmt::format("{}", fmt::join(o.choices, "|"))) + ")");
  for (const auto& n : o.names) tag += (tag.empty() ? "" : ", ") + ("\\fB" + roff(n) + "\\fR");
  if (!o.choices.empty()) tag += " \\fI" + roff(fmt::format("{}", fmt::join(o.choices, "|"))) + "\\fR";
  else if (!o.value.empty()) tag += " \\fI" + roff(o.value) + "\\fR";
  return tag;
}

std::string option_text(const OptionNode& o) {
  std::string text = o.description;
  if (o.required && o.positional.empty()) text += " (required)";
  return roff(text);
}

void write_options(const std::vector<OptionNode>& options, std::string& out) {
  for (const auto& o : options) out += ".TP\n" + option_tag(o) + "\n" + option_text(o) + "\n";
}

std::string synopsis(const CommandNode& c) {
  std::string s = "\\fB" + roff(c.path) + "\\fR";
  bool has_options = false;
  for (const auto& o : c.options) {
    if (o.names.empty()) {
      const std::string arg = "\\fI" + roff(o.positional) + "\\fR" + (o.repeatable ? " ..." : "");
      s += o.required ? " " + arg : " [" + arg + "]";
    } else if (o.names.back() != "--help") {
      has_options = true;
    }
  }
  if (has_options) s.insert(s.find("\\fR") + 3, " [\\fIoptions\\fR]");
  if (!c.commands.empty()) s += " \\fIcommand\\fR";
  return s;
}

void write_commands(const CommandNode& c, std::string& out) {
  for (const auto& sub : c.commands) {
    out += ".SS \"" + roff(sub.path) + "\"\n";
    out += synopsis(sub) + "\n.br\n" + roff(sub.description) + "\n";
    std::vector<OptionNode> shown;
    for (const auto& o : sub.options)
      if (o.names.empty() || o.names.back() != "--help") shown.push_back(o);
    write_options(shown, out);
    write_commands(sub, out);
  }
}

}  // namespace

std::string man_page(const CommandNode& tree, const std::string& version) {
  std::string out;
  out += ".\\\" The man page of tycli, written by `tycli man` from its command tree and --help texts.\n";
  out += ".TH TYCLI 1 \"\" \"" + roff(version) + "\" \"User Commands\"\n";
  out += ".SH NAME\ntycli \\- Taskyon's tool registry, task compiler and sandbox host\n";
  out += ".SH SYNOPSIS\n\\fBtycli\\fR [\\fIglobal options\\fR] \\fIcommand\\fR [\\fIoptions\\fR] [\\fIarguments\\fR]\n";
  out += ".SH DESCRIPTION\n";
  out += roff("tycli stores tool definitions as immutable, content-addressed revisions, pins every tool call to one "
              "exact revision, and runs untrusted tool code in sandboxes (Node by default, Deno when selected) "
              "whose only doors out are narrow capabilities: grants, secrets, storage.") + "\n";
  out += ".PP\n" + roff("Every command takes --help. The global options below come before the command.") + "\n";
  out += ".SH \"GLOBAL OPTIONS\"\n";
  write_options(tree.options, out);
  out += ".SH COMMANDS\n";
  write_commands(tree, out);
  out += ".SH FILES\n";
  out += ".TP\n\\fI$TASKYON_HOME/taskyon.db\\fR\n" +
         roff("The SQLite store: revisions, activations, tasks, grants, secrets, the audit and sandbox logs "
              "(--db PATH names another).") + "\n";
  out += ".TP\n\\fI$TASKYON_HOME/config.json\\fR\n" +
         roff("Optional defaults of call, run and chat call: jsRuntime, denoPath, nodePath, sandboxMemoryBudgetMiB, timeout, "
              "pythonIsolation; a flag wins over its key, an unknown key is refused.") + "\n";
  out += ".SH ENVIRONMENT\n";
  out += ".TP\n.B TASKYON_HOME\n" + roff("The directory of the store and config.json (default $XDG_DATA_HOME/taskyon).") + "\n";
  out += ".TP\n.B XDG_DATA_HOME\n" + roff("Where TASKYON_HOME defaults to taskyon/ (default ~/.local/share).") + "\n";
  out += ".TP\n.B PATH\n" +
         roff("Where node and, when selected, deno are looked for; an installed tycli also finds the Deno installed "
              "with it in ../lib/taskyon/deno.") + "\n";
  out += ".SH \"EXIT STATUS\"\n";
  const auto status = [&](int code, const std::string& text) {
    out += fmt::format(".TP\n.B {}\n{}\n", code, roff(text));
  };
  status(kExitOk, "Success.");
  status(kExitToolFailed, "The tool ran and failed or was stopped (error, timeout, crash).");
  status(kExitBadInput, "Bad usage or bad input; the message says what and where.");
  status(kExitEnvironment, "The environment failed: database, files, a missing runtime, or a bug of tycli.");
  out += ".TP\n.B 128+N\n" +
         roff("call or run was interrupted by signal N (129 SIGHUP, 130 SIGINT, 143 SIGTERM) and ended cleanly: the "
              "running call stored as Cancelled, every sandbox destroyed.") + "\n";
  out += ".SH \"SEE ALSO\"\n\\fBnode\\fR(1), \\fBdeno\\fR(1), \\fBbwrap\\fR(1)\n";
  return out;
}

}  // namespace tycli
