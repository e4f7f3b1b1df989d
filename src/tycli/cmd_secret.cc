// tycli secret set|list|delete: values the host may put into a header of a
// granted request to one origin, per exact revision (M17). A value is read
// from stdin, never from the command line (argv is visible to every local
// user in /proc), and is never printed.
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <iostream>
#include <iterator>
#include <memory>

#include <fmt/format.h>

#include "cli.h"
#include "taskyon/store/origin.h"
#include "taskyon/store/secrets.h"

namespace tycli {
namespace {

using taskyon::json::Value;
namespace store = taskyon::store;

struct SecretArgs {
  std::string rev;
  std::string origin;
  std::string name;
};

// stdin up to EOF (a pipe or file), or one line typed without echo on a TTY;
// one trailing "\n" or "\r\n" is removed.
taskyon::Result<std::string> read_value(const std::string& name) {
  std::string value;
  if (::isatty(STDIN_FILENO)) {
    std::cerr << fmt::format("value of secret {} (not echoed): ", name) << std::flush;
    termios old{};
    const bool tty = ::tcgetattr(STDIN_FILENO, &old) == 0;
    if (tty) {
      termios quiet = old;
      quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
      ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
    }
    std::getline(std::cin, value);  // one line: the terminal bounds its length
    if (tty) ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
    std::cerr << "\n";
  } else {
    auto all = read_bounded_stdin(kMaxSecretInputBytes, "the secret");
    if (!all) return std::unexpected(all.error());
    value = std::move(*all);
  }
  if (value.ends_with('\n')) value.pop_back();
  if (value.ends_with('\r')) value.pop_back();
  return value;
}

// The database file is the secrets' trust boundary: say so when others can read it.
void warn_if_readable_by_others(const Globals& g) {
  std::string path = g.db_path;
  if (path.empty()) {
    auto p = store::default_db_path();
    if (!p) return;
    path = *p;
  }
  struct stat sb {};
  if (::stat(path.c_str(), &sb) == 0 && (sb.st_mode & 077) != 0)
    std::cerr << fmt::format("tycli: warning: {} is readable by other users (mode {:o}) and holds secrets; "
                             "run `chmod 600 {}`\n",
                             path, sb.st_mode & 0777, path);
}

Value info_json(const store::SecretInfo& s) {
  return {{"revision", s.revision}, {"tool", s.tool},    {"origin", s.origin},
          {"name", s.name},         {"setBy", s.set_by}, {"setAt", s.set_at}};
}

int set(Globals& g, const SecretArgs& a) {
  auto origin = store::canonical_origin(a.origin);
  if (!origin) return report(g, origin.error());
  if (!store::is_valid_secret_name(a.name))
    return report(g, {taskyon::Errc::bad_usage,
                      fmt::format("secret name \"{}\" must match ^[A-Za-z0-9_.-]{{1,64}}$", a.name), "NAME"});
  auto st = open_store(g);
  if (!st) return report(g, st.error());
  auto rev = st->resolve(a.rev);
  if (!rev) return report(g, rev.error());
  const auto value = read_value(a.name);
  if (!value) return report(g, value.error());
  auto r = store::set_secret(*st, rev->id, *origin, a.name, *value, os_user_name());
  if (!r) return report(g, r.error());
  warn_if_readable_by_others(g);
  if (g.json)
    print_json(info_json(*r));
  else
    std::cout << fmt::format("set secret {} for {} of {} {}\n", r->name, r->origin, r->tool, r->revision);
  return kExitOk;
}

int list(Globals& g, const std::string& ref) {
  auto st = open_store(g, StoreUse::read);
  if (!st) return report(g, st.error());
  std::optional<std::string> revision;
  if (!ref.empty()) {
    auto rev = st->resolve(ref);
    if (!rev) return report(g, rev.error());
    revision = rev->id;
  }
  auto names = store::secret_names(*st, revision);
  if (!names) return report(g, names.error());
  if (g.json) {
    Value out = Value::array();
    for (const auto& s : *names) out.push_back(info_json(s));
    print_json(out);
    return kExitOk;
  }
  if (names->empty()) {
    std::cout << "no secrets\n";
    return kExitOk;
  }
  const std::size_t width = g.full_ids ? 71 : 19;
  std::cout << fmt::format("{:<24} {:<32} {:<16} {:<{}} {}\n", "NAME", "ORIGIN", "TOOL", "REVISION", width, "SET AT");
  for (const auto& s : *names)
    std::cout << fmt::format("{:<24} {:<32} {:<16} {:<{}} {}\n", s.name, s.origin, s.tool, table_id(g, s.revision),
                             width, s.set_at);
  return kExitOk;
}

int remove(Globals& g, const SecretArgs& a) {
  auto origin = store::canonical_origin(a.origin);
  if (!origin) return report(g, origin.error());
  auto st = open_store(g);
  if (!st) return report(g, st.error());
  auto rev = st->resolve(a.rev);
  if (!rev) return report(g, rev.error());
  auto removed = store::delete_secret(*st, rev->id, *origin, a.name);
  if (!removed) return report(g, removed.error());
  if (g.json)
    print_json({{"revision", rev->id}, {"origin", *origin}, {"name", a.name}, {"deleted", *removed}});
  else
    std::cout << fmt::format("{} secret {} for {} of {} {}\n", *removed ? "deleted" : "no secret to delete:", a.name,
                             *origin, rev->name, rev->id);
  return kExitOk;
}

void add_target(CLI::App* cmd, SecretArgs& a) {
  cmd->add_option("rev", a.rev, "tool name (its active revision), revision id, or unique prefix")->required();
  cmd->add_option("origin", a.origin, "https://host[:port]: the only origin the secret is sent to")->required();
  cmd->add_option("name", a.name, "secret name, ^[A-Za-z0-9_.-]{1,64}$")->required();
}

}  // namespace

void add_secret_commands(CLI::App& app, Globals& g) {
  auto* secret = app.add_subcommand(
      "secret", "secrets per (revision, origin, name); tool code never sees them, the host puts them into headers");
  secret->require_subcommand(1);

  auto sa = std::make_shared<SecretArgs>();
  auto* set_cmd = secret->add_subcommand(
      "set", "store a secret; the value is read from stdin (one trailing newline removed), never from arguments");
  add_target(set_cmd, *sa);
  set_cmd->callback([&g, sa] { g.exit_code = guarded(g, [&] { return set(g, *sa); }); });

  auto lref = std::make_shared<std::string>();
  auto* ls = secret->add_subcommand("list", "secret names (never values), of all revisions or of one");
  ls->add_option("rev", *lref, "tool name, revision id, or unique prefix");
  ls->callback([&g, lref] { g.exit_code = guarded(g, [&] { return list(g, *lref); }); });

  auto da = std::make_shared<SecretArgs>();
  auto* del = secret->add_subcommand("delete", "remove a secret (succeeds, saying so, when there is none)");
  add_target(del, *da);
  del->callback([&g, da] { g.exit_code = guarded(g, [&] { return remove(g, *da); }); });
}

}  // namespace tycli
