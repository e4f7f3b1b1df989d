// Modules for tool code (issue 17, docs/modules.md): read from a real npm
// tarball (`npm pack` of the papaparse package set-up installs), a package
// directory and a bundle; stored by content id in a real SQLite store;
// required by real Node and Deno sandboxes from what the load frame carries.
#include <fcntl.h>
#include <poll.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "taskyon/modules/module.h"
#include "taskyon/registry/manifest.h"
#include "taskyon/store/modules.h"
#include "test_util.h"

namespace taskyon::testing {
namespace {

namespace fs = std::filesystem;
using json::Value;

const fs::path kPapaparse = fs::path(TASKYON_SOURCE_DIR) / "node_modules/papaparse";

Value run_json(const std::vector<std::string>& args, const fs::path& home) {
  std::vector<std::string> all = {"--json"};
  all.insert(all.end(), args.begin(), args.end());
  auto r = run_tycli(all, home);
  auto v = json::parse(r.out);
  return v && r.exit_code == 0 ? *v : Value("tycli failed (" + std::to_string(r.exit_code) + "): " + r.err + r.out);
}

Value tool_with(const std::string& name, const std::string& code, const Value& modules) {
  Value t = js_tool(name, code);
  t["modules"] = modules;
  return t;
}

class Modules : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kPapaparse / "package.json")) GTEST_SKIP() << "node_modules/papaparse is missing (scripts/setup.sh)";
  }
  // Adds `source` (with extra `tycli module add` options); the module's id.
  std::string add(const std::string& source, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"module", "add", source};
    args.insert(args.end(), extra.begin(), extra.end());
    const Value added = run_json(args, home.path());
    EXPECT_TRUE(added.is_object()) << added.dump();
    return added.is_object() ? added["id"].get<std::string>() : std::string();
  }
  std::string install(const Value& tool) {
    auto r = run_tycli({"--json", "tool", "install", home.write(tool["name"].get<std::string>() + ".json", tool.dump())},
                       home.path());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto v = json::parse(r.out);
    return v && v->is_array() && !v->empty() ? (*v)[0]["revision"].get<std::string>() : std::string();
  }
  TempDir home;
};

TEST_F(Modules, AnNpmTarballAndItsPackageDirectoryAreTheSameFilesAndTheTarballKeepsItsIntegrity) {
  auto packed = run_command({"npm", "pack", kPapaparse.string(), "--pack-destination", home.path().string()}, home.path());
  ASSERT_EQ(packed.exit_code, 0) << packed.err;
  const std::string tgz = (home / "papaparse-5.7.1.tgz").string();
  ASSERT_TRUE(fs::exists(tgz)) << packed.out;
  auto from_tgz = modules::read_module(tgz);
  auto from_dir = modules::read_module(kPapaparse);
  ASSERT_TRUE(from_tgz.has_value()) << from_tgz.error().describe();
  ASSERT_TRUE(from_dir.has_value()) << from_dir.error().describe();
  EXPECT_EQ(from_tgz->name, "papaparse");
  EXPECT_EQ(from_tgz->version, "5.7.1");
  EXPECT_EQ(from_tgz->main, "papaparse.js");
  EXPECT_TRUE(from_tgz->integrity.starts_with("sha512-")) << from_tgz->integrity;
  EXPECT_EQ(from_tgz->files, from_dir->files) << "npm pack holds what the directory holds";
  EXPECT_FALSE(from_tgz->files.contains("README.md")) << "only .js/.cjs/.json are kept";

  const std::string id = add(tgz);
  ASSERT_TRUE(json::is_content_id(id)) << id;
  const Value shown = run_json({"module", "show", id.substr(0, 19)}, home.path());
  EXPECT_EQ(shown["integrity"], from_tgz->integrity) << shown.dump();
  EXPECT_EQ(shown["record"]["files"].size(), from_tgz->files.size());
  // Adding the same bytes again stores nothing new.
  const Value again = run_json({"module", "add", tgz}, home.path());
  EXPECT_EQ(again["id"], id);
  EXPECT_EQ(again["created"], false);
}

// R1 for modules: one changed byte of a module changes its id, and with it
// the revision id of a manifest that names it.
TEST_F(Modules, OneChangedByteChangesTheModuleIdAndTheRevisionId) {
  const std::string a = add(home.write("counter.js", "module.exports = 1;\n"), {"--name", "counter"});
  const std::string b = add(home.write("counter2.js", "module.exports = 2;\n"), {"--name", "counter"});
  ASSERT_FALSE(a.empty());
  EXPECT_NE(a, b);
  const std::string code = "() => require('counter')";
  const std::string ra = install(tool_with("counted", code, {{"counter", a}}));
  const std::string rb = install(tool_with("counted", code, {{"counter", b}}));
  EXPECT_NE(ra, rb);
  EXPECT_EQ(run_json({"call", ra}, home.path())["result"], 1);
  EXPECT_EQ(run_json({"call", rb}, home.path())["result"], 2);
}

TEST_F(Modules, AManifestNamingAModuleTheStoreLacksIsRefusedNamingIt) {
  const std::string absent = "sha256:" + std::string(64, 'a');
  auto r = run_tycli({"tool", "install", home.write("t.json", tool_with("t", "() => 1", {{"left-pad", absent}}).dump())},
                     home.path());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("left-pad (" + absent + ")"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tycli module add"), std::string::npos) << r.err;
  auto bad = registry::parse_manifest(tool_with("t", "() => 1", {{"Not/A Name", absent}}));
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().where, "/modules/Not/A Name");
  auto not_an_id = registry::parse_manifest(tool_with("t", "() => 1", {{"x", "papaparse@5"}}));
  ASSERT_FALSE(not_an_id.has_value());
  EXPECT_EQ(not_an_id.error().where, "/modules/x");
}

// R2 for modules: the store refuses to change one, and a file changed behind
// its back (the triggers dropped, as a local attacker with the file could) is
// refused when read, so no sandbox ever gets it.
TEST_F(Modules, ATamperedStoredModuleIsRefusedOnRead) {
  const std::string id = add(kPapaparse.string());
  const std::string rev = install(tool_with("csv", "({text}) => require('papaparse').parse(text).data", {{"papaparse", id}}));
  ASSERT_FALSE(rev.empty());
  const std::string db = (home / "taskyon.db").string();
  auto refused = run_command({"sqlite3", db, "UPDATE module_files SET content = 'x'"}, home.path());
  EXPECT_NE(refused.err.find("immutable"), std::string::npos) << refused.err;
  auto tampered = run_command(
      {"sqlite3", db, "DROP TRIGGER module_files_no_update; UPDATE module_files SET content = content || ' ' WHERE id IN "
                      "(SELECT id FROM module_files LIMIT 1)"},
      home.path());
  ASSERT_EQ(tampered.exit_code, 0) << tampered.err;
  auto shown = run_tycli({"module", "show", id}, home.path());
  EXPECT_NE(shown.exit_code, 0);
  EXPECT_NE(shown.err.find("does not hash to its id (tampered)"), std::string::npos) << shown.err;
  auto call = run_tycli({"call", "csv", "--args", R"({"text":"a,b"})"}, home.path());
  EXPECT_NE(call.exit_code, 0);
  EXPECT_NE(call.err.find("tampered"), std::string::npos) << call.err;
}

// A tarball is one package directory: a file outside it (a "..", "/" or a
// second directory first) refuses the whole archive; a later entry of the
// same path replaces an earlier one, as npm's extraction does; a path that is
// not a regular file is refused before anything reads it.
TEST_F(Modules, ATarballIsOnePackageDirectoryAndItsLastEntryOfAPathWins) {
  auto tarball = [&](const std::string& name, const Value& entries) {
    const std::string path = (home / name).string();
    auto r = run_command({"python3", "-c",
                          "import io, json, sys, tarfile\n"
                          "t = tarfile.open(sys.argv[1], 'w:gz')\n"
                          "for name, text in json.loads(sys.argv[2]):\n"
                          "    data = text.encode()\n"
                          "    info = tarfile.TarInfo(name); info.size = len(data)\n"
                          "    t.addfile(info, io.BytesIO(data))\n"
                          "t.close()\n",
                          path, entries.dump()},
                         home.path());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return path;
  };
  const std::string pkg = R"({"name":"p","version":"1.0.0"})";
  for (const auto& [name, entries] : std::vector<std::pair<std::string, Value>>{
           {"dotdot.tgz", Value::array({Value::array({"../package.json", pkg}), Value::array({"../index.js", "1"})})},
           {"absolute.tgz", Value::array({Value::array({"/package.json", pkg}), Value::array({"/index.js", "1"})})},
           {"two.tgz", Value::array({Value::array({"package/package.json", pkg}), Value::array({"evil/index.js", "1"})})},
           {"inside.tgz", Value::array({Value::array({"package/package.json", pkg}),
                                        Value::array({"package/a/../../x.js", "1"})})}}) {
    auto m = modules::read_module(tarball(name, entries));
    EXPECT_FALSE(m.has_value()) << name << " was read";
    if (!m) {
      EXPECT_EQ(m.error().code, Errc::bad_usage) << name << ": " << m.error().describe();
    }
  }
  auto dup = modules::read_module(tarball(
      "dup.tgz", Value::array({Value::array({"package/package.json", pkg}), Value::array({"package/index.js", "'first'"}),
                               Value::array({"package/index.js", "'last'"})})));
  ASSERT_TRUE(dup.has_value()) << dup.error().describe();
  EXPECT_EQ(dup->files.at("index.js"), "'last'");
  ASSERT_EQ(::mkfifo((home / "fifo.tgz").c_str(), 0600), 0);
  auto fifo = modules::read_module(home / "fifo.tgz");  // would block forever if it were read
  ASSERT_FALSE(fifo.has_value());
  EXPECT_EQ(fifo.error().code, Errc::bad_usage);
}

// The load frame is JSON: a module that would not fit in it escaped (a
// control character takes 6 bytes) is refused at install, not at every call.
TEST_F(Modules, CodeAndModulesThatWouldNotFitTheLoadFrameAreRefusedAtInstall) {
  const std::string id = add(home.write("controls.js", "module.exports = '" + std::string(1600u << 10, '\x01') + "';\n"),
                             {"--name", "controls"});
  ASSERT_FALSE(id.empty());
  auto r = run_tycli({"tool", "install", home.write("t.json", tool_with("t", "() => 1", {{"controls", id}}).dump())},
                     home.path());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("as JSON in the sandbox's load frame"), std::string::npos) << r.err;
}

// R2 against INSERT OR REPLACE, whose implicit delete fires no DELETE
// trigger: every immutable table ignores an insert of a key it holds.
TEST_F(Modules, InsertOrReplaceChangesNoImmutableRowAndATamperedModuleIsListedAsUnusable) {
  const std::string id = add(home.write("one.js", "module.exports = 1;\n"), {"--name", "one"});
  add(home.write("two.js", "module.exports = 2;\n"), {"--name", "two"});
  const std::string rev = install(tool_with("t", "() => require('one')", {{"one", id}}));
  const std::string db = (home / "taskyon.db").string();
  auto sql = [&](const std::string& q) { return run_command({"sqlite3", db, q}, home.path()); };
  for (const char* q : {
           "INSERT OR REPLACE INTO module_files(id, content) SELECT id, 'pwned' FROM module_files",
           "INSERT OR REPLACE INTO modules SELECT id, name, version, '{}', created_at FROM modules",
           "INSERT OR REPLACE INTO revisions SELECT id, name, execution, '{}', created_at FROM revisions",
           "INSERT OR REPLACE INTO bindings SELECT seq, name, revision, 'then' FROM bindings",
           "REPLACE INTO tasks(id, role, kind, content, state, created_at) SELECT id, role, kind, '{}', state, created_at FROM tasks"}) {
    auto r = sql(q);
    EXPECT_EQ(r.exit_code, 0) << q << ": " << r.err;  // accepted, and changes nothing:
  }
  EXPECT_EQ(sql("SELECT count(*) FROM module_files WHERE content = 'pwned'").out, "0\n");
  EXPECT_EQ(sql("SELECT count(*) FROM revisions WHERE definition = '{}'").out, "0\n");
  EXPECT_EQ(sql("SELECT count(*) FROM bindings WHERE activated_at = 'then'").out, "0\n");
  EXPECT_EQ(run_json({"call", rev}, home.path())["result"], 1);
  // Tampered behind the triggers: listed as unusable, the other module still listed.
  ASSERT_EQ(sql("DROP TRIGGER module_files_no_update; UPDATE module_files SET content = 'module.exports = 3;\n' "
                "WHERE content = 'module.exports = 1;\n'").exit_code,
            0);
  auto list = run_tycli({"--json", "module", "list"}, home.path());
  auto listed = json::parse(list.out);
  ASSERT_TRUE(listed && listed->is_array() && listed->size() == 2) << list.out << list.err;
  int unusable = 0;
  for (const auto& m : *listed) unusable += m.contains("problem") ? 1 : 0;
  EXPECT_EQ(unusable, 1) << list.out;
  auto again = run_tycli({"module", "add", home.write("one.js", "module.exports = 1;\n"), "--name", "one"}, home.path());
  EXPECT_NE(again.exit_code, 0) << "adding it again says the stored copy is tampered: " << again.out;
  EXPECT_NE(again.err.find("tampered"), std::string::npos) << again.err;
}

// `tycli module add DIR` listed a package's files and then read each by
// path, so a file swapped for a link in between was followed and a host
// file stored as the package's (hostile review F5). fanotify makes the swap
// happen exactly in between: tycli's open of the first of three marked
// files waits until the test has replaced the other two with links to a
// canary outside the package. What is read is what was opened beneath the
// directory without following a link, so the links are left out and the
// canary is never stored. Needs fanotify permission events
// (CAP_SYS_ADMIN); skipped without.
TEST_F(Modules, AFileSwappedForALinkWhileADirectoryIsReadIsNeverFollowed) {
  const fs::path pkg = home / "swap";
  fs::create_directories(pkg);
  home.write("swap/package.json", R"({"name":"swap","version":"1.0.0","main":"index.js"})");
  home.write("swap/index.js", "module.exports = 'index';\n");
  const std::vector<std::string> marked = {"a.js", "b.js", "c.js"};
  for (const auto& f : marked) home.write("swap/" + f, "module.exports = '" + f + "';\n");
  const std::string canary = home.write("canary.js", "module.exports = 'host secret F5';\n");
  const int fan = ::fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC, O_RDONLY | O_CLOEXEC);
  if (fan < 0) GTEST_SKIP() << "fanotify permission events are not available here: " << std::strerror(errno);
  std::map<ino_t, std::string> names;
  for (const auto& f : marked) {
    ASSERT_EQ(::fanotify_mark(fan, FAN_MARK_ADD, FAN_OPEN_PERM, AT_FDCWD, (pkg / f).c_str()), 0) << std::strerror(errno);
    struct stat st {};
    ASSERT_EQ(::stat((pkg / f).c_str(), &st), 0);
    names[st.st_ino] = f;
  }
  const std::string log = (home / "add.log").string();
  const int pid = spawn_tycli({"--json", "module", "add", pkg.string()}, home.path(), log);
  int swapped = 0, status = -1;
  while (status == -1) {
    pollfd ready{fan, POLLIN, 0};
    if (::poll(&ready, 1, 50) > 0) {
      alignas(fanotify_event_metadata) char buffer[4096];
      ssize_t length = ::read(fan, buffer, sizeof buffer);
      for (auto* e = reinterpret_cast<fanotify_event_metadata*>(buffer); length > 0 && FAN_EVENT_OK(e, length);
           e = FAN_EVENT_NEXT(e, length)) {
        if (e->fd < 0) continue;
        struct stat st {};
        ::fstat(e->fd, &st);
        if (swapped == 0) {
          for (const auto& f : marked) {
            if (names[st.st_ino] == f) continue;
            const fs::path link = pkg / (f + ".link");
            ::symlink(canary.c_str(), link.c_str());
            ::rename(link.c_str(), (pkg / f).c_str());
            ++swapped;
          }
        }
        const fanotify_response allow{e->fd, FAN_ALLOW};
        EXPECT_EQ(::write(fan, &allow, sizeof allow), static_cast<ssize_t>(sizeof allow));
        ::close(e->fd);
      }
    }
    int st = 0;
    if (::waitpid(pid, &st, WNOHANG) == pid) status = st;
  }
  ::close(fan);
  EXPECT_EQ(swapped, 2) << "tycli opened none of the marked files: " << read_file(log);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << read_file(log);
  auto added = json::parse(read_file(log));
  ASSERT_TRUE(added && added->is_object()) << read_file(log);
  auto held = run_command({"sqlite3", (home / "taskyon.db").string(),
                           "SELECT count(*) FROM module_files WHERE content LIKE '%host secret F5%'"},
                          home.path());
  EXPECT_EQ(held.out, "0\n") << "the canary was stored through a link: " << read_file(log);
  const Value shown = run_json({"module", "show", (*added)["id"].get<std::string>()}, home.path());
  ASSERT_TRUE(shown.is_object()) << shown.dump();
  EXPECT_EQ(shown.dump().find("host secret"), std::string::npos) << shown.dump();
}

// Loading, on each runtime: a real npm package from memory; a module body is
// evaluated once per retained sandbox (the second call reuses it); require()
// reaches nothing but the declared modules and, on Node, the safe builtins.
class ModulesOn : public Modules, public ::testing::WithParamInterface<std::string> {};

TEST_P(ModulesOn, ARealPackageLoadsOnceAndNothingUndeclaredIsReachable) {
  const std::string runtime = GetParam();
  const std::string papaparse = add(kPapaparse.string());
  fs::create_directories(home / "counter");
  home.write("counter/package.json", R"({"name":"counter","version":"1.0.0","main":"index.js"})");
  home.write("counter/helper.js", "module.exports = 'helped';\n");
  home.write("counter/index.js",
             "globalThis.evaluations = (globalThis.evaluations || 0) + 1;\n"
             "const helper = require('./helper');\n"
             "module.exports = { evaluations: () => globalThis.evaluations, helper,\n"
             "  reach: (what) => { try { require(what); return 'loaded'; } catch (e) { return e.code; } } };\n");
  const std::string counter = add((home / "counter").string());
  ASSERT_FALSE(papaparse.empty() || counter.empty());
  install(tool_with("csv",
                    "({text}) => { const Papa = require('papaparse'); const c = require('counter'); "
                    "return {rows: Papa.parse(text, {header: true}).data, evaluations: c.evaluations(), helper: c.helper}; }",
                    {{"papaparse", papaparse}, {"counter", counter}}));
  auto r = run_tycli({"--json", "call", "csv", "--js-runtime", runtime, "--args", R"({"text":"a,b\n1,2"})", "--args",
                      R"({"text":"a\n3"})"},
                     home.path());
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const std::vector<Value> calls = json_lines(r.out);
  ASSERT_EQ(calls.size(), 2u) << r.out;
  EXPECT_EQ(calls[0]["result"]["rows"], Value::parse(R"([{"a":"1","b":"2"}])")) << r.out;
  EXPECT_EQ(calls[0]["result"]["helper"], "helped");
  EXPECT_EQ(calls[1]["result"]["rows"], Value::parse(R"([{"a":"3"}])")) << r.out;
  EXPECT_EQ(calls[1]["sandbox"]["fresh"], false) << "the second call ran in the retained sandbox";
  EXPECT_EQ(calls[0]["result"]["evaluations"], 1);
  EXPECT_EQ(calls[1]["result"]["evaluations"], 1) << "the second call reused the loaded module";

  // Another revision declaring only `counter`: papaparse (another
  // revision's module), builtins outside the safe list, paths out of a
  // module and absolute paths are refused, from tool code and from inside a module.
  install(tool_with("probe",
                    "() => { const c = require('counter'); const tool = (what) => { try { require(what); return 'loaded'; } "
                    "catch (e) { return e.code; } }; const all = ['papaparse', 'fs', 'node:fs', 'child_process', "
                    "'node:child_process', 'vm', 'module', 'worker_threads', '/etc/passwd', './x', '../x', "
                    "'counter/../../etc/passwd', 'counter/helper', 'util']; const out = {}; "
                    "for (const w of all) out[w] = [tool(w), c.reach(w)]; "
                    "const gbm = (w) => { try { process.getBuiltinModule(w); return 'loaded'; } catch (e) { return e.code; } }; "
                    "const g = {}; for (const n of ['module', 'exports']) g[n] = typeof globalThis[n]; "
                    "let gbmMessage = ''; try { process.getBuiltinModule('fs'); } catch (e) { gbmMessage = e.message; } "
                    "return {required: out, globals: g, gbmMessage, root: require('counter/') === c, "
                    "resolved: require.resolve('counter/helper'), "
                    "builtin: {child_process: gbm('child_process'), fs: gbm('node:fs'), util: gbm('util')}}; }",
                    {{"counter", counter}}));
  const Value probe = run_json({"call", "probe", "--js-runtime", runtime}, home.path());
  ASSERT_TRUE(probe.is_object() && probe.contains("result")) << probe.dump();
  // process.getBuiltinModule (Node >= 20.16, Deno 2) follows the same list.
  const Value& builtin = probe["result"]["builtin"];
  EXPECT_EQ(builtin["child_process"], "ERR_TASKYON_MODULE_REFUSED") << builtin.dump();
  EXPECT_EQ(builtin["fs"], "ERR_TASKYON_MODULE_REFUSED") << builtin.dump();
  EXPECT_EQ(builtin["util"], runtime == "node" ? "loaded" : "ERR_TASKYON_MODULE_REFUSED") << builtin.dump();
  // `node -e` leaves `module` (a Module, with createRequire and _load) and
  // `exports` on the global object: gone in a revision with modules.
  EXPECT_EQ(probe["result"]["globals"], (Value{{"exports", "undefined"}, {"module", "undefined"}})) << probe.dump();
  EXPECT_NE(probe["result"]["gbmMessage"].get<std::string>().find("process.getBuiltinModule(\"fs\") is refused"),
            std::string::npos) << probe.dump();
  EXPECT_EQ(probe["result"]["root"], true) << "require('counter/') is its main";
  EXPECT_EQ(probe["result"]["resolved"], "/modules/counter/helper.js");
  const Value& got = probe["result"]["required"];
  ASSERT_EQ(got.size(), 14u) << probe.dump();
  for (const auto& [what, results] : got.items()) {
    const std::string expected = what == "counter/helper" || (what == "util" && runtime == "node")
                                     ? "loaded"
                                     : "ERR_TASKYON_MODULE_REFUSED";
    EXPECT_EQ(results[0], expected) << "tool code: require('" << what << "') on " << runtime;
    if (what != "./x" && what != "../x")  // relative: inside counter these are its own (absent) files
      EXPECT_EQ(results[1], expected) << "inside a module: require('" << what << "') on " << runtime;
    else
      EXPECT_EQ(results[1], "ERR_TASKYON_MODULE_REFUSED") << what;
  }
}

// A malicious module is just tool code: what its body tries — writing a
// file, spawning a process, the network — meets the same permission model,
// kernel layers and mediated fetch as tool code (the escape suites), and
// the canary on the host is never written.
TEST_P(ModulesOn, AModuleIsToolCodeUnderTheSameLayers) {
  const std::string runtime = GetParam();
  const fs::path canary = home / "canary";
  const std::string evil = add(home.write("evil.js", R"JS(
module.exports = async function attempts(canary) {
  const out = {};
  const t = async (k, f) => { try { await f(); out[k] = 'done'; } catch (e) { out[k] = 'denied'; } };
  await t('denoWrite', () => Deno.writeTextFileSync(canary, 'x'));
  await t('importFs', async () => (await import('node:fs')).writeFileSync(canary, 'x'));
  await t('spawn', async () => (await import('node:child_process')).execSync('touch ' + canary));
  await t('denoCommand', () => new Deno.Command('touch', { args: [canary] }).outputSync());
  await t('requireFs', () => require('fs').writeFileSync(canary, 'x'));
  await t('fetch', async () => { const r = await fetch('https://example.com/'); if (!r.ok) throw new Error(); });
  return out;
};
)JS"),
                                {"--name", "evil"});
  install(tool_with("victim", "({canary}) => require('evil')(canary)", {{"evil", evil}}));
  const Value out = run_json({"call", "victim", "--js-runtime", runtime, "--args", Value{{"canary", canary.string()}}.dump()},
                             home.path());
  ASSERT_TRUE(out.is_object() && out["result"].is_object()) << out.dump();
  for (const auto& [attempt, result] : out["result"].items())
    EXPECT_EQ(result, "denied") << attempt << " on " << runtime << ": " << out.dump();
  EXPECT_EQ(out["result"].size(), 6u) << out.dump();
  EXPECT_FALSE(fs::exists(canary)) << "a module wrote the host's canary";
}

// The bundled example (make demo) names papaparse by the id `tycli module
// add node_modules/papaparse` gives: the lock file pins the package's bytes,
// so the id is the same on every machine.
TEST_P(ModulesOn, TheBundledExampleRunsOnThePackageSetUpInstalls) {
  const std::string id = add(kPapaparse.string());
  const std::string example = std::string(TASKYON_SOURCE_DIR) + "/examples/modules/csv_to_json.json";
  auto manifest = json::parse(read_file(example));
  ASSERT_TRUE(manifest.has_value());
  EXPECT_EQ((*manifest)["modules"]["papaparse"], id) << "examples/modules/csv_to_json.json names another papaparse";
  ASSERT_EQ(run_tycli({"tool", "install", example}, home.path()).exit_code, 0);
  const Value out = run_json({"call", "csv_to_json", "--js-runtime", GetParam(), "--args",
                              R"({"csv":"tool,calls\nuppercase,3\ncounter,12\n"})"},
                             home.path());
  EXPECT_EQ(out["result"], Value::parse(R"({"columns":["tool","calls"],"errors":0,)"
                                        R"("rows":[{"calls":3,"tool":"uppercase"},{"calls":12,"tool":"counter"}]})"))
      << out.dump();
}

// A module's source is a function body of its own, as in Node's CommonJS
// loader: it cannot close the wrapper and run code outside it.
TEST_P(ModulesOn, AModuleCannotCloseItsWrapper) {
  const std::string inj = add(home.write("inj.js", "}, globalThis.escaped = 'at compile time', function () {\n"),
                              {"--name", "inj"});
  install(tool_with("wrapped",
                    "() => { let thrown = ''; try { require('inj'); } catch (e) { thrown = e.name; } "
                    "return {thrown, escaped: typeof globalThis.escaped}; }",
                    {{"inj", inj}}));
  const Value out = run_json({"call", "wrapped", "--js-runtime", GetParam()}, home.path());
  EXPECT_EQ(out["result"], (Value{{"escaped", "undefined"}, {"thrown", "SyntaxError"}})) << out.dump();
}

// An ES module package written into `dir`: "type": "module", an "exports"
// map (a root, a subpath, a pattern; a require condition the import never
// takes), a cycle (index.js <-> lib/b.js), a .mjs file, a JSON file and a
// CommonJS dependency (`cjs`, declared next to it). index.js counts its
// evaluations on globalThis.
void write_esm_package(const TempDir& home, const std::string& dir) {
  fs::create_directories(home / dir / "lib" / "feat");
  home.write(dir + "/package.json",
             R"({"name":"esm-pkg","version":"1.0.0","type":"module",)"
             R"("exports":{".":{"require":"./index.cjs","import":"./index.js"},"./sub":"./lib/sub.mjs",)"
             R"("./feat/*":"./lib/feat/*.js"}})");
  home.write(dir + "/index.js",
             "import { b, gb } from './lib/b.js';\n"
             "import path from 'node:path';\n"
             "import { join } from 'path';\n"
             "import cjs, { named } from 'cjs';\n"
             "import data from './data.json';\n"
             "globalThis.esmEvaluations = (globalThis.esmEvaluations || 0) + 1;\n"
             "export const a = 1;\n"
             "export function cycle() { return b + gb(); }\n"
             "export default 'esm default';\n"
             "export const joined = join('x', 'y') + path.sep;\n"
             "export const interop = [cjs.named, named, data.k];\n"
             "export const meta = import.meta.url;\n"
             "export const reach = (what) => import(what).then(() => 'loaded', (e) => e.code);\n");
  home.write(dir + "/lib/b.js", "import { a } from '../index.js';\nexport let b = 10;\nexport function gb() { return a; }\n");
  home.write(dir + "/lib/sub.mjs", "export const sub = 'sub';\n");
  home.write(dir + "/lib/feat/x.js", "export const x = 'feat x';\n");
  home.write(dir + "/index.cjs", "module.exports = 'the require entry';\n");
  home.write(dir + "/data.json", R"({"k": 42})");
  fs::create_directories(home / "cjs");
  home.write("cjs/package.json", R"({"name":"cjs","version":"1.0.0"})");
  home.write("cjs/index.js", "exports.named = 'N';\nexports.later = () => import('esm-pkg/sub').then((m) => m.sub);\n");
}

// ES modules (docs/modules.md, "ES modules"): import() of a declared
// specifier from tool code, static imports inside an ES package (a cycle, a
// .mjs file, "exports", JSON, CommonJS and safe builtins), import() from a
// CommonJS module; each module evaluated once per retained sandbox.
TEST_P(ModulesOn, EsModulesLoadFromMemoryAndAreEvaluatedOncePerSandbox) {
  write_esm_package(home, "esm");
  const std::string esm = add((home / "esm").string());
  const std::string cjs = add((home / "cjs").string());
  ASSERT_FALSE(esm.empty() || cjs.empty());
  install(tool_with("esm_user",
                    "async () => { const m = await import('esm-pkg'); "
                    "return {cycle: m.cycle(), def: m.default, joined: m.joined, interop: m.interop, meta: m.meta, "
                    "sub: (await import('esm-pkg/sub')).sub, feat: (await import('esm-pkg/feat/x')).x, "
                    "later: await require('cjs').later(), evaluations: globalThis.esmEvaluations, "
                    "required: (() => { try { require('esm-pkg'); return 'loaded'; } catch (e) { return e.code; } })()}; }",
                    {{"esm-pkg", esm}, {"cjs", cjs}}));
  auto r = run_tycli({"--json", "call", "esm_user", "--js-runtime", GetParam(), "--args", "{}", "--args", "{}"}, home.path());
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const std::vector<Value> calls = json_lines(r.out);
  ASSERT_EQ(calls.size(), 2u) << r.out;
  const Value expected = Value::parse(R"({"cycle": 11, "def": "esm default", "joined": "x/y/", "interop": ["N", "N", 42],
      "meta": "file:///modules/esm-pkg/index.js", "sub": "sub", "feat": "feat x", "later": "sub", "evaluations": 1,
      "required": "ERR_REQUIRE_ESM"})");
  EXPECT_EQ(calls[0]["result"], expected) << r.out;
  EXPECT_EQ(calls[1]["result"], expected) << "the second call reuses the evaluated modules: " << r.out;
  EXPECT_EQ(calls[1]["sandbox"]["fresh"], false);
}

// What import() reaches is what require() reaches: nothing undeclared — not
// another revision's module, not fs, vm or child_process, not a path, a
// file: or data: URL — from tool code, from eval and Function code, from
// inside an ES module, and not by a static import; only the safe builtins.
TEST_P(ModulesOn, AnImportReachesNothingUndeclared) {
  const std::string runtime = GetParam();
  write_esm_package(home, "esm");
  const std::string esm = add((home / "esm").string());
  const std::string cjs = add((home / "cjs").string());
  const std::string other = add(kPapaparse.string());
  install(tool_with("other", "() => require('papaparse').parse('a').data", {{"papaparse", other}}));
  const fs::path canary = home / "canary.mjs";
  home.write("canary.mjs", "export default 'read from the host';\n");
  install(tool_with(
      "importer",
      "async ({canary}) => { const m = await import('esm-pkg'); const tool = (w) => import(w).then(() => 'loaded', (e) => e.code); "
      "const all = ['papaparse', 'fs', 'node:fs', 'vm', 'node:vm', 'module', 'child_process', 'node:child_process', "
      "'worker_threads', '/etc/passwd', 'file://' + canary, 'data:text/javascript,export default 1', './x.js', "
      "'esm-pkg/lib/b.js', 'esm-pkg/index.cjs', 'util']; const out = {}; "
      "for (const w of all) out[w] = [await tool(w), await m.reach(w)]; "
      "out.fn = await (new Function('return import(\"node:fs\")'))().then(() => 'loaded', (e) => e.code); "
      "out.eval = await eval('import(\"node:fs\")').then(() => 'loaded', (e) => e.code); return out; }",
      {{"esm-pkg", esm}, {"cjs", cjs}}));
  const Value probe = run_json({"call", "importer", "--js-runtime", runtime, "--args", Value{{"canary", canary.string()}}.dump()},
                               home.path());
  ASSERT_TRUE(probe.is_object() && probe["result"].is_object()) << probe.dump();
  const Value& got = probe["result"];
  ASSERT_EQ(got.size(), 18u) << probe.dump();
  for (const auto& [what, results] : got.items()) {
    if (what == "fn" || what == "eval") {
      EXPECT_EQ(results, "ERR_TASKYON_MODULE_REFUSED") << what << " on " << runtime;
      continue;
    }
    const std::string expected = what == "util" ? "loaded" : "ERR_TASKYON_MODULE_REFUSED";
    EXPECT_EQ(results[0], expected) << "tool code: import('" << what << "') on " << runtime;
    EXPECT_EQ(results[1], expected) << "inside an ES module: import('" << what << "') on " << runtime;
  }
  // A static import of an undeclared specifier refuses the whole graph.
  const std::string bad = add(home.write("bad.mjs", "import fs from 'node:fs';\nexport default fs;\n"), {"--name", "bad"});
  install(tool_with("static_bad", "() => import('bad').then(() => 'loaded', (e) => e.code + ': ' + e.message)",
                    {{"bad", bad}}));
  const Value refused = run_json({"call", "static_bad", "--js-runtime", runtime}, home.path());
  EXPECT_EQ(refused["result"], "ERR_TASKYON_MODULE_REFUSED: import(\"node:fs\") is refused: only the modules the tool "
                               "declares (bad) and assert, buffer, events, path, querystring, string_decoder, url, util "
                               "can be imported") << refused.dump();
}

// Code that Function makes gets the import() callback of the script whose
// frame called Function (V8). The harness's frames call functions tool code
// supplies — the tool itself, a `then` getter while it awaits a result, a
// `toJSON` getter while it serializes one, a Symbol.toPrimitive getter while
// it coerces a storage key — and Function given as one of them made code
// whose import() was the harness script's: Node's default ES loader (the
// `-e` script's) or Deno's (the entry module's), with node:vm, node:module,
// node:child_process and data: URLs. Every such import() is now the tool's
// loader: in a revision with modules the safe builtins and nothing
// undeclared; in one without, on Node, nothing (Deno's import() is its own
// there by design, N4).
TEST_P(ModulesOn, CodeTheHarnessMakesFromAToolsFunctionMeetsTheLoader) {
  const std::string runtime = GetParam();
  const std::string one = add(home.write("one.mjs", "export default 1;\n"), {"--name", "one"});
  const std::string specs =
      R"(['node:fs', 'node:child_process', 'node:vm', 'node:module', 'data:text/javascript,export default 1', 'util'])";
  const std::string probe = "return Promise.all(" + specs +
                            ".map((s) => import(s).then(() => 'loaded', (e) => e.code || e.message)));";
  // The tool is Function: the harness calls Function(args, context); the
  // strings are hooked so the body is `probe`'s maker, and the function it
  // made is caught by the `then` the harness's await looks up.
  const std::string function_tool =
      "(() => {\n"
      "  const toString = Object.prototype.toString;\n"
      "  Object.prototype.toString = function () {\n"
      "    if (this !== null && typeof this === 'object' && typeof this.fetch === 'function') return 'return (s) => import(s)';\n"
      "    if (this !== null && typeof this === 'object' && Object.getPrototypeOf(this) === Object.prototype) return '';\n"
      "    return Reflect.apply(toString, this, []);\n"
      "  };\n"
      "  const hook = function (resolve, reject) {\n"
      "    delete Function.prototype.then;\n"
      "    if (this === Function) { resolve(this); Function.prototype.then = hook; return; }  // the load's await\n"
      "    Object.prototype.toString = toString;\n"
      "    const imp = this();\n"
      "    Promise.all(" + specs + ".map((s) => imp(s).then(() => 'loaded', (e) => e.code || e.message))).then(resolve, reject);\n"
      "  };\n"
      "  Function.prototype.then = hook;\n"
      "  return Function;\n"
      "})()";
  // Getters that are Function itself (bound to a body): the harness's own
  // frame calls them, and the runtime then calls what they made.
  const auto quoted = [](const std::string& text) { return Value(text).dump(); };
  const std::string hooks_tool =
      "({kind}, context) => {  // not async: the harness's await looks up `then`, not the tool's return\n"
      "  const made = (body) => Function.bind(null, body);\n"
      "  if (kind === 'then') { const o = {}; Object.defineProperty(o, 'then', {get: made("
      + quoted("const [resolve] = arguments; resolve((() => { " + probe + " })());") + ")}); return o; }\n"
      "  if (kind === 'toJSON') { const o = {}; Object.defineProperty(o, 'toJSON', {get: made("
      + quoted("globalThis.leaked = (() => { " + probe + " })(); return 'serialized';") + ")}); return {o}; }\n"
      "  if (kind === 'toPrimitive') { const k = {}; Object.defineProperty(k, Symbol.toPrimitive, {get: made("
      + quoted("globalThis.leaked = (() => { " + probe + " })(); return 'key';") + ")});\n"
      "    context.storage.get(k).catch(() => {}); return 'coerced'; }\n"
      "  return globalThis.leaked;\n"
      "}";
  const Value refused = Value::array({"ERR_TASKYON_MODULE_REFUSED", "ERR_TASKYON_MODULE_REFUSED",
                                      "ERR_TASKYON_MODULE_REFUSED", "ERR_TASKYON_MODULE_REFUSED",
                                      "ERR_TASKYON_MODULE_REFUSED"});
  for (const bool with_modules : {true, false}) {
    if (!with_modules && runtime == "deno") continue;  // there import() is Deno's own (N4)
    const Value modules = with_modules ? Value{{"one", one}} : Value();
    const std::string suffix = with_modules ? "_mod" : "_plain";
    Value expected = refused;
    expected.push_back(with_modules ? "loaded" : "ERR_TASKYON_MODULE_REFUSED");  // util: the loader's safe list
    install(with_modules ? tool_with("fn" + suffix, function_tool, modules) : js_tool("fn" + suffix, function_tool));
    const Value fn = run_json({"call", "fn" + suffix, "--js-runtime", runtime}, home.path());
    EXPECT_EQ(fn["result"], expected) << "the tool is Function, " << suffix << " on " << runtime << ": " << fn.dump();
    install(with_modules ? tool_with("hooks" + suffix, hooks_tool, modules) : js_tool("hooks" + suffix, hooks_tool));
    auto r = run_tycli({"--json", "call", "hooks" + suffix, "--js-runtime", runtime, "--args", R"({"kind":"then"})",
                        "--args", R"({"kind":"toJSON"})", "--args", R"({"kind":"leaked"})", "--args",
                        R"({"kind":"toPrimitive"})", "--args", R"({"kind":"leaked"})"},
                       home.path());
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    const std::vector<Value> calls = json_lines(r.out);
    ASSERT_EQ(calls.size(), 5u) << r.out;
    EXPECT_EQ(calls[0]["result"], expected) << "a `then` getter, " << suffix << " on " << runtime << ": " << r.out;
    EXPECT_EQ(calls[1]["result"], (Value{{"o", "serialized"}})) << r.out;
    EXPECT_EQ(calls[2]["result"], expected) << "a `toJSON` getter, " << suffix << " on " << runtime << ": " << r.out;
    EXPECT_EQ(calls[3]["result"], "coerced") << r.out;
    EXPECT_EQ(calls[4]["result"], expected) << "a Symbol.toPrimitive getter, " << suffix << " on " << runtime << ": "
                                            << r.out;
    EXPECT_EQ(calls[4]["sandbox"]["fresh"], false) << "one retained sandbox: " << r.out;
  }
}

// An "exports" pattern gives only what it matches: what its "*" matched
// may not hold a ".", ".." or node_modules segment (any case, percent-encoded,
// with "/" or "\"), nor may a target ("./lib/../hidden.js") — Node's
// ERR_INVALID_MODULE_SPECIFIER and ERR_INVALID_PACKAGE_TARGET, the codes it
// gives for the same package (checked against Node 20 by hand); an invalid
// target in an array is skipped for the next. "ex/star/../hidden.js" reached
// the unexported hidden.js.
TEST_P(ModulesOn, AnExportsPatternReachesNothingItDoesNotExport) {
  fs::create_directories(home / "ex" / "lib" / "node_modules");
  home.write("ex/package.json",
             R"({"name":"ex","version":"1.0.0","type":"module","exports":{".":"./index.js","./star/*":"./lib/*",)"
             R"("./bad":"./lib/../hidden.js","./arr":["./x/../hidden.js","./lib/a.js"]}})");
  home.write("ex/index.js", "export default 'index';\n");
  home.write("ex/lib/a.js", "export default 'a';\n");
  home.write("ex/hidden.js", "export default 'hidden';\n");
  home.write("ex/lib/node_modules/y.js", "export default 'y';\n");  // left out by module add, as any node_modules/
  const std::string ex = add((home / "ex").string());
  install(tool_with("exporter",
                    "async () => { const out = {}; for (const s of ['ex/star/a.js', 'ex/star/../hidden.js', "
                    "'ex/star/%2e%2e/hidden.js', 'ex/star/%2E%2e/hidden.js', 'ex/star/./a.js', "
                    "'ex/star/node_modules/y.js', 'ex/star/NODE_MODULES/y.js', 'ex/star//a.js', 'ex/bad', 'ex/arr', "
                    "'ex/hidden.js', 'ex/star/x\\\\..\\\\..\\\\hidden.js']) { "
                    "try { out[s] = (await import(s)).default; } catch (e) { out[s] = e.code; } } return out; }",
                    {{"ex", ex}}));
  const Value out = run_json({"call", "exporter", "--js-runtime", GetParam()}, home.path());
  EXPECT_EQ(out["result"], Value::parse(R"({"ex/star/a.js": "a", "ex/star/../hidden.js": "ERR_INVALID_MODULE_SPECIFIER",
      "ex/star/%2e%2e/hidden.js": "ERR_INVALID_MODULE_SPECIFIER", "ex/star/%2E%2e/hidden.js": "ERR_INVALID_MODULE_SPECIFIER",
      "ex/star/./a.js": "ERR_INVALID_MODULE_SPECIFIER", "ex/star/node_modules/y.js": "ERR_INVALID_MODULE_SPECIFIER",
      "ex/star/NODE_MODULES/y.js": "ERR_INVALID_MODULE_SPECIFIER", "ex/star//a.js": "a",
      "ex/bad": "ERR_INVALID_PACKAGE_TARGET", "ex/arr": "a", "ex/hidden.js": "ERR_TASKYON_MODULE_REFUSED",
      "ex/star/x\\..\\..\\hidden.js": "ERR_INVALID_MODULE_SPECIFIER"})"))
      << out.dump();
}

// R1 and R2 for an ES module: one changed byte of a .mjs bundle changes
// the module id and the revision id; a tampered stored ES module is refused
// on read, before any sandbox gets it.
TEST_F(Modules, AnEsModuleIsContentAddressedAndATamperedOneIsRefused) {
  const std::string a = add(home.write("v.mjs", "export default 1;\n"), {"--name", "v"});
  const std::string b = add(home.write("v2.mjs", "export default 2;\n"), {"--name", "v"});
  ASSERT_FALSE(a.empty() || b.empty());
  EXPECT_NE(a, b);
  const std::string code = "async () => (await import('v')).default";
  const std::string ra = install(tool_with("esm_v", code, {{"v", a}}));
  const std::string rb = install(tool_with("esm_v", code, {{"v", b}}));
  EXPECT_NE(ra, rb);
  EXPECT_EQ(run_json({"call", ra}, home.path())["result"], 1);
  EXPECT_EQ(run_json({"call", rb}, home.path())["result"], 2);
  const std::string db = (home / "taskyon.db").string();
  ASSERT_EQ(run_command({"sqlite3", db, "DROP TRIGGER module_files_no_update; UPDATE module_files SET content = "
                                        "'export default 3;\n' WHERE content = 'export default 1;\n'"},
                        home.path()).exit_code,
            0);
  auto call = run_tycli({"call", ra}, home.path());
  EXPECT_NE(call.exit_code, 0);
  EXPECT_NE(call.err.find("does not hash to its id (tampered)"), std::string::npos) << call.err;
}

// Node's --experimental-vm-modules (node_argv) is how the loader answers
// import(); it gives tool code nothing new: a revision without modules (which
// keeps Node's require, vm included) that builds a SourceTextModule or a
// Script on Node's own ES loader still meets the permission model for a host
// file and for fs, and the runtime flags stay fixed; a revision with modules
// reaches no vm at all.
TEST_F(Modules, NodesVmModulesFlagGivesToolCodeNoNewAuthority) {
  home.write("canary.mjs", "export default 'read from the host';\n");
  const std::string canary = "file://" + (home / "canary.mjs").string();
  install(js_tool("vm_probe",
                  "async ({canary}) => { const vm = require('vm'); const out = {}; "
                  "const t = async (k, f) => { try { out[k] = await f(); } catch (e) { out[k] = e.code || e.message; } }; "
                  "const own = vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER; "
                  "await t('script', async () => (await new vm.Script('import(' + JSON.stringify(canary) + ')', "
                  "{importModuleDynamically: own}).runInThisContext()).default); "
                  "await t('module', async () => { const m = new vm.SourceTextModule('export {default} from ' + "
                  "JSON.stringify(canary)); await m.link(async (s) => { const n = await new vm.Script('import(' + "
                  "JSON.stringify(s) + ')', {importModuleDynamically: own}).runInThisContext(); "
                  "const w = new vm.SyntheticModule(['default'], function () { this.setExport('default', n.default); }); "
                  "return w; }); await m.evaluate(); return m.namespace.default; }); "
                  "await t('fs', async () => (await new vm.Script('import(\"node:fs\")', {importModuleDynamically: own})"
                  ".runInThisContext()).readFileSync(" + Value(std::string("/etc/hostname")).dump() + ", 'utf8')); "
                  "await t('flags', async () => { require('v8').setFlagsFromString('--allow-natives-syntax'); return 'set'; }); "
                  "out.stm = typeof vm.SourceTextModule; return out; }"));
  const Value out = run_json({"call", "vm_probe", "--js-runtime", "node", "--args", Value{{"canary", canary}}.dump()},
                             home.path());
  ASSERT_TRUE(out.is_object() && out["result"].is_object()) << out.dump();
  // The host file: not there for the runtime (its mount namespace holds only
  // the runtime's files; ERR_MODULE_NOT_FOUND) or refused by the permission
  // model (ERR_ACCESS_DENIED) — never read.
  for (const char* k : {"script", "module"}) {
    const std::string got = out["result"][k].is_string() ? out["result"][k].get<std::string>() : out.dump();
    EXPECT_TRUE(got == "ERR_MODULE_NOT_FOUND" || got == "ERR_ACCESS_DENIED") << k << ": " << out.dump();
  }
  EXPECT_EQ(out["result"]["fs"], "ERR_ACCESS_DENIED") << out.dump();
  EXPECT_EQ(out["result"]["flags"], "ERR_ACCESS_DENIED") << out.dump();
  EXPECT_EQ(out["result"]["stm"], "function") << "the flag is on: " << out.dump();
  const std::string one = add(home.write("one.mjs", "export default 1;\n"), {"--name", "one"});
  install(tool_with("vm_with_modules",
                    "async () => [await import('vm').then(() => 'loaded', (e) => e.code), "
                    "(() => { try { require('vm'); return 'loaded'; } catch (e) { return e.code; } })()]",
                    {{"one", one}}));
  EXPECT_EQ(run_json({"call", "vm_with_modules", "--js-runtime", "node"}, home.path())["result"],
            Value::array({"ERR_TASKYON_MODULE_REFUSED", "ERR_TASKYON_MODULE_REFUSED"}));
}

// On Deno a revision with modules loads its code as a module `export
// default (CODE);`: code that closes the parenthesis to add a static import
// meets the same loader.
TEST_F(Modules, DenoToolCodeThatAddsAStaticImportMeetsTheLoader) {
  const std::string one = add(home.write("one.mjs", "export default 1;\n"), {"--name", "one"});
  install(tool_with("closer", "() => 1);\nimport fs from 'node:fs';\nexport const leaked = (fs", {{"one", one}}));
  auto r = run_tycli({"call", "closer", "--js-runtime", "deno"}, home.path());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("import(\"node:fs\") is refused"), std::string::npos) << r.err;
}

// What Deno does not let us close (docs/modules.md, "ES modules"): Deno's
// own JavaScript — here node:querystring's polyfill calling the decoder it
// is given — makes code from a function tool code supplies, and that code's
// import() is Deno's loader even in a revision with modules. What it loads
// still has no authority: reading a host file and running a process are
// refused by Deno's permissions (N4) and the kernel layers. Deno's internals
// (Deno[Deno.internal], whose core.evalContext compiled code on Deno's
// loader from anywhere) are gone before tool code runs.
TEST_F(Modules, DenosOwnLoaderStaysReachableThroughItsPolyfillsAndGrantsNothing) {
  const std::string one = add(home.write("one.mjs", "export default 1;\n"), {"--name", "one"});
  const fs::path canary = home / "canary.txt";
  home.write("canary.txt", "host secret\n");
  install(tool_with(
      "deno_polyfill",
      "async ({canary}) => { const out = {internals: typeof Deno[Deno.internal]}; "
      "const qs = await import('querystring'); const parse = (qs.default || qs).parse; "
      "const viaDeno = (s) => Object.values(parse('a=0%1;return import(' + JSON.stringify(s) + ')', '&', '=', "
      "{decodeURIComponent: Function}))[0](); "
      "const t = async (k, f) => { try { out[k] = await f(); } catch (e) { out[k] = e.code || e.name; } }; "
      "await t('fs', async () => (await viaDeno('node:fs')).readFileSync(canary, 'utf8')); "
      "await t('spawn', async () => String((await viaDeno('node:child_process')).execFileSync('/bin/cat', [canary]))); "
      "await t('tool', async () => (await import('node:fs')).readFileSync(canary, 'utf8')); "
      "return out; }",
      {{"one", one}}));
  const Value out = run_json({"call", "deno_polyfill", "--js-runtime", "deno", "--args",
                              Value{{"canary", canary.string()}}.dump()},
                             home.path());
  ASSERT_TRUE(out.is_object() && out["result"].is_object()) << out.dump();
  EXPECT_EQ(out["result"]["internals"], "undefined") << out.dump();
  EXPECT_EQ(out["result"]["tool"], "ERR_TASKYON_MODULE_REFUSED") << "tool code's own import() is the loader's";
  // Deno's loader gave the modules; their operations are refused (NotCapable: no --allow-read / --allow-run).
  EXPECT_EQ(out["result"]["fs"], "NotCapable") << out.dump();
  EXPECT_EQ(out["result"]["spawn"], "NotCapable") << out.dump();
}

INSTANTIATE_TEST_SUITE_P(Runtimes, ModulesOn, ::testing::Values("node", "deno"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace taskyon::testing
