// tycli grant fetch|storage|list, tycli revoke fetch|storage: what one tool
// revision may do outside its sandbox (DESIGN §6, M8, M17, S7). A REV is a
// tool name (its active revision), a full id or a unique prefix; output always
// names the full revision id a grant was recorded for.
#include <pwd.h>
#include <unistd.h>

#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "cli.h"
#include "taskyon/store/grants.h"
#include "taskyon/store/origin.h"

namespace tycli {

std::string os_user_name() {
  if (const passwd* pw = getpwuid(geteuid()); pw && pw->pw_name && *pw->pw_name) return pw->pw_name;
  return fmt::format("uid {}", geteuid());
}

namespace {

using taskyon::json::Value;
namespace store = taskyon::store;

struct FetchArgs {
  std::string rev;
  std::string origin;
  std::string access;
  long long connect_timeout_ms = 0;
  long long timeout_ms = 0;
  long long max_response_bytes = 0;
  long long max_request_bytes = 0;
  CLI::Option* connect_opt = nullptr;
  CLI::Option* timeout_opt = nullptr;
  CLI::Option* response_opt = nullptr;
  CLI::Option* request_opt = nullptr;
};

store::Access access_of(const std::string& text) {
  return text == "write" ? store::Access::write : store::Access::read;
}

Value fetch_grant_json(const store::FetchGrant& g) {
  return {{"kind", "fetch"},       {"revision", g.revision},     {"tool", g.tool},
          {"origin", g.origin},    {"access", taskyon::capability::access_name(g.access)},
          {"limits", store::fetch_limits_json(g.limits)},      {"grantedBy", g.granted_by},
          {"grantedAt", g.granted_at}};
}

Value storage_grant_json(const store::StorageGrant& g) {
  return {{"kind", "storage"}, {"revision", g.revision}, {"tool", g.tool}, {"grantedBy", g.granted_by},
          {"grantedAt", g.granted_at}};
}

// The limits given on the command line, as the JSON object grants store.
Value limits_json(const FetchArgs& a) {
  Value out = Value::object();
  if (a.connect_opt->count()) out["connect_timeout_ms"] = a.connect_timeout_ms;
  if (a.timeout_opt->count()) out["total_timeout_ms"] = a.timeout_ms;
  if (a.response_opt->count()) out["max_response_bytes"] = a.max_response_bytes;
  if (a.request_opt->count()) out["max_request_bytes"] = a.max_request_bytes;
  return out;
}

int grant_fetch(Globals& g, const FetchArgs& a) {
  auto origin = store::canonical_origin(a.origin);
  if (!origin) return report(g, origin.error());
  auto limits = store::parse_fetch_limits(limits_json(a));
  if (!limits) {
    auto e = limits.error();
    for (const auto& [field, flag] : {std::pair{"/connect_timeout_ms", "--connect-timeout-ms"},
                                      std::pair{"/total_timeout_ms", "--timeout-ms"},
                                      std::pair{"/max_response_bytes", "--max-response-bytes"},
                                      std::pair{"/max_request_bytes", "--max-request-bytes"}})
      if (e.where == field) e.where = flag;
    return report(g, e);
  }
  auto st = open_store(g);
  if (!st) return report(g, st.error());
  auto rev = st->resolve(a.rev);
  if (!rev) return report(g, rev.error());
  auto r = store::grant_fetch(*st, rev->id, *origin, access_of(a.access), *limits, os_user_name());
  if (!r) return report(g, r.error());
  if (g.json) {
    print_json(fetch_grant_json(*r));
  } else {
    const auto lim = store::fetch_limits_json(r->limits);
    std::cout << fmt::format("granted fetch {} {} to {} {}{}\n", a.access, r->origin, r->tool, r->revision,
                             lim.empty() ? "" : " limits " + lim.dump());
  }
  return kExitOk;
}

int grant_storage(Globals& g, const std::string& ref) {
  auto st = open_store(g);
  if (!st) return report(g, st.error());
  auto rev = st->resolve(ref);
  if (!rev) return report(g, rev.error());
  auto r = store::grant_storage(*st, rev->id, os_user_name());
  if (!r) return report(g, r.error());
  if (g.json)
    print_json(storage_grant_json(*r));
  else
    std::cout << fmt::format("granted storage of tool \"{}\" to {} {}\n", r->tool, r->tool, r->revision);
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
  auto fetch = store::fetch_grants(*st, revision);
  if (!fetch) return report(g, fetch.error());
  auto storage = store::storage_grants(*st, revision);
  if (!storage) return report(g, storage.error());
  if (g.json) {
    Value out = Value::array();
    for (const auto& f : *fetch) out.push_back(fetch_grant_json(f));
    for (const auto& s : *storage) out.push_back(storage_grant_json(s));
    print_json(out);
    return kExitOk;
  }
  if (fetch->empty() && storage->empty()) {
    std::cout << (revision ? fmt::format("no grants for {}\n", *revision) : std::string("no grants\n"));
    return kExitOk;
  }
  const std::size_t width = g.full_ids ? 71 : 19;
  std::cout << fmt::format("{:<8} {:<6} {:<32} {:<16} {:<{}} {}\n", "KIND", "ACCESS", "ORIGIN", "TOOL", "REVISION",
                           width, "LIMITS");
  for (const auto& f : *fetch) {
    const auto lim = store::fetch_limits_json(f.limits);
    std::cout << fmt::format("{:<8} {:<6} {:<32} {:<16} {:<{}} {}\n", "fetch",
                             taskyon::capability::access_name(f.access), f.origin, f.tool, table_id(g, f.revision),
                             width, lim.empty() ? "-" : lim.dump());
  }
  for (const auto& s : *storage)
    std::cout << fmt::format("{:<8} {:<6} {:<32} {:<16} {:<{}} {}\n", "storage", "-", "-", s.tool,
                             table_id(g, s.revision), width, "-");
  return kExitOk;
}

int revoke_fetch(Globals& g, const FetchArgs& a) {
  auto origin = store::canonical_origin(a.origin);
  if (!origin) return report(g, origin.error());
  auto st = open_store(g);
  if (!st) return report(g, st.error());
  auto rev = st->resolve(a.rev);
  if (!rev) return report(g, rev.error());
  auto removed = store::revoke_fetch(*st, rev->id, *origin, access_of(a.access));
  if (!removed) return report(g, removed.error());
  if (g.json)
    print_json({{"kind", "fetch"}, {"revision", rev->id}, {"tool", rev->name}, {"origin", *origin},
                {"access", a.access}, {"revoked", *removed}});
  else
    std::cout << fmt::format("{} fetch {} {} of {} {}\n", *removed ? "revoked" : "no grant to revoke:", a.access,
                             *origin, rev->name, rev->id);
  return kExitOk;
}

int revoke_storage(Globals& g, const std::string& ref) {
  auto st = open_store(g);
  if (!st) return report(g, st.error());
  auto rev = st->resolve(ref);
  if (!rev) return report(g, rev.error());
  auto removed = store::revoke_storage(*st, rev->id);
  if (!removed) return report(g, removed.error());
  if (g.json)
    print_json({{"kind", "storage"}, {"revision", rev->id}, {"tool", rev->name}, {"revoked", *removed}});
  else
    std::cout << fmt::format("{} storage of {} {} (stored data is kept)\n",
                             *removed ? "revoked" : "no grant to revoke:", rev->name, rev->id);
  return kExitOk;
}

constexpr const char* kRevHelp = "tool name (its active revision), revision id, or unique prefix (>= 12 hex digits)";
constexpr const char* kOriginHelp = "https://host[:port] (a trailing / is fine; no path, query or credentials)";
constexpr const char* kAccessHelp =
    "read (GET, HEAD, OPTIONS) or write (POST, PUT, PATCH, DELETE, other methods); a grant is for exactly one "
    "class: write does not imply read";

void add_fetch_target(CLI::App* cmd, FetchArgs& a) {
  cmd->add_option("rev", a.rev, kRevHelp)->required();
  cmd->add_option("origin", a.origin, kOriginHelp)->required();
  cmd->add_option("--access", a.access, kAccessHelp)->required()->check(CLI::IsMember({"read", "write"}));
}

}  // namespace

void add_grant_commands(CLI::App& app, Globals& g) {
  auto* grant = app.add_subcommand(
      "grant", "give one exact tool revision a capability (a new revision of the same name inherits nothing)");
  grant->require_subcommand(1);

  auto fa = std::make_shared<FetchArgs>();
  auto* fetch = grant->add_subcommand("fetch", "allow a revision to fetch from one https origin with one access class");
  add_fetch_target(fetch, *fa);
  fa->connect_opt = fetch->add_option("--connect-timeout-ms", fa->connect_timeout_ms,
                                      "connect timeout for this grant, ms (default: the fetch default)");
  fa->timeout_opt = fetch->add_option("--timeout-ms", fa->timeout_ms, "total request timeout for this grant, ms");
  fa->response_opt = fetch->add_option("--max-response-bytes", fa->max_response_bytes, "response body limit, bytes");
  fa->request_opt = fetch->add_option("--max-request-bytes", fa->max_request_bytes, "request body limit, bytes");
  fetch->callback([&g, fa] { g.exit_code = guarded(g, [&] { return grant_fetch(g, *fa); }); });

  auto sref = std::make_shared<std::string>();
  auto* storage = grant->add_subcommand(
      "storage", "allow a revision to use its tool name's key/value storage (data is kept per tool name)");
  storage->add_option("rev", *sref, kRevHelp)->required();
  storage->callback([&g, sref] { g.exit_code = guarded(g, [&] { return grant_storage(g, *sref); }); });

  auto lref = std::make_shared<std::string>();
  auto* ls = grant->add_subcommand("list", "fetch and storage grants, of all revisions or of one");
  ls->add_option("rev", *lref, kRevHelp);
  ls->callback([&g, lref] { g.exit_code = guarded(g, [&] { return list(g, *lref); }); });

  auto* revoke = app.add_subcommand("revoke", "remove a grant (succeeds, saying so, when there is none)");
  revoke->require_subcommand(1);
  auto ra = std::make_shared<FetchArgs>();
  auto* rfetch = revoke->add_subcommand("fetch", "remove a fetch grant for (revision, origin, access class)");
  add_fetch_target(rfetch, *ra);
  rfetch->callback([&g, ra] { g.exit_code = guarded(g, [&] { return revoke_fetch(g, *ra); }); });
  auto rsref = std::make_shared<std::string>();
  auto* rstorage = revoke->add_subcommand("storage", "remove a storage grant (the tool's stored data is kept)");
  rstorage->add_option("rev", *rsref, kRevHelp)->required();
  rstorage->callback([&g, rsref] { g.exit_code = guarded(g, [&] { return revoke_storage(g, *rsref); }); });
}

}  // namespace tycli
