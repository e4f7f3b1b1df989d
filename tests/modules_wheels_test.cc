// Pure-Python wheels for strict Python (issue 17 item 5, docs/modules.md,
// "Python wheels"): read with libarchive from real wheels (the one
// scripts/build-wheel.py builds for the browser, and variants this test
// writes with python3's zipfile), stored by content id in a real SQLite
// store, named by an executePython manifest and imported by real python3
// processes in the strict sandbox (bubblewrap and the kernel layers).
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "taskyon/hardening/probe.h"
#include "taskyon/modules/module.h"
#include "taskyon/native/python.h"
#include "taskyon/registry/manifest.h"
#include "test_util.h"

namespace taskyon::testing {
namespace {

namespace fs = std::filesystem;
using json::Value;

const fs::path kTabular = fs::path(TASKYON_SOURCE_DIR) / "browser/wheels/taskyon_tabular-1.0.0-py3-none-any.whl";

class Wheels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kTabular)) GTEST_SKIP() << kTabular << " is missing (python3 scripts/build-wheel.py)";
  }
  // A wheel named `file` in the test's home holding `files` ({PATH: TEXT});
  // NAME-VERSION.dist-info/{METADATA,WHEEL} are added unless `files` has them.
  std::string wheel(const std::string& file, const Value& files, const std::string& wheel_text =
                                                                      "Wheel-Version: 1.0\nRoot-Is-Purelib: true\n") {
    const std::string path = (home / file).string();
    const std::string stem = file.substr(0, file.find('-', file.find('-') + 1));  // NAME-VERSION
    auto r = run_command({"python3", "-c",
                          "import json, sys, zipfile\n"
                          "files = json.loads(sys.argv[2])\n"
                          "files.setdefault(sys.argv[3] + '.dist-info/METADATA', 'Metadata-Version: 2.1\\n')\n"
                          "files.setdefault(sys.argv[3] + '.dist-info/WHEEL', sys.argv[4])\n"
                          "with zipfile.ZipFile(sys.argv[1], 'w') as z:\n"
                          "    for name, text in files.items():\n"
                          "        z.writestr(name, b'\\xff\\xfe' if name.endswith('.bin') else text.encode())\n",
                          path, files.dump(), stem, wheel_text},
                         home.path());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return path;
  }
  std::string add(const std::string& source) {
    auto r = run_tycli({"--json", "module", "add", source}, home.path());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto v = json::parse(r.out);
    return v && v->is_object() ? (*v)["id"].get<std::string>() : std::string();
  }
  // executePython's manifest (tycli tool natives) as `name`, naming `modules`.
  Value python_tool(const std::string& name, const Value& modules) {
    auto natives = json::parse(run_tycli({"--json", "tool", "natives"}, home.path()).out);
    if (natives)
      for (const auto& m : *natives)
        if (m["native"] == std::string(registry::kPythonNative)) {
          Value t = m;
          t["name"] = name;
          if (!modules.is_null()) t["modules"] = modules;
          return t;
        }
    return Value();
  }
  // tycli with the test's PATH, or with `path` when it is set (a PATH
  // without bwrap: strict Python in the sandbox's own mount namespace).
  CommandResult tycli(const std::vector<std::string>& args) {
    if (path.empty()) return run_tycli(args, home.path());
    std::vector<std::string> argv = {TYCLI_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_command(argv, home.path(), Launch{.path = path});
  }
  CommandResult install(const Value& tool) {
    return tycli({"--json", "tool", "install", "--trust", home.write(tool["name"].get<std::string>() + ".json",
                                                                     tool.dump())});
  }
  // A strict run of `code` by the tool `name`: its result ({stdout, stderr, exitCode, …}).
  Value run(const std::string& name, const std::string& code) {
    auto r = tycli({"--json", "call", name, "--approve-python", "--timeout", "30000", "--args",
                    Value{{"code", code}}.dump()});
    auto v = json::parse(r.out);
    return v && v->is_object() ? (*v)["result"] : Value("tycli failed: " + r.err + r.out);
  }
  // Stores a wheel record and its files with SQL, as a tycli that knew
  // fewer rules could have: `module add` would refuse it now. Its module id.
  std::string store_unchecked(const std::string& name, const std::string& version, Value files) {
    files[name + "-" + version + ".dist-info/METADATA"] = "Metadata-Version: 2.1\n";
    files[name + "-" + version + ".dist-info/WHEEL"] = "Wheel-Version: 1.0\nRoot-Is-Purelib: true\n";
    const auto hex = [](const std::string& bytes) {
      std::string out = "X'";
      for (unsigned char c : bytes) out += fmt::format("{:02x}", c);
      return out + "'";
    };
    Value ids = Value::object();
    std::string sql = "BEGIN;";
    for (const auto& [path, text] : files.items()) {
      const std::string bytes = text.get<std::string>();
      ids[path] = json::content_id(bytes);
      sql += fmt::format("INSERT OR IGNORE INTO module_files(id, content) VALUES ('{}', CAST({} AS TEXT));",
                         ids[path].get<std::string>(), hex(bytes));
    }
    const Value record = {{"files", ids}, {"kind", "python-wheel"}, {"main", name + "-" + version + ".dist-info/METADATA"},
                          {"name", name}, {"version", version}};
    const std::string canonical = json::canonicalize(record).value();
    const std::string id = json::content_id(canonical);
    sql += fmt::format("INSERT INTO modules(id, name, version, record, created_at) VALUES ('{}', '{}', '{}', CAST({} AS "
                       "TEXT), '2025-01-01T00:00:00Z'); COMMIT;",
                       id, name, version, hex(canonical));
    // The store exists once tycli has written it.
    EXPECT_EQ(run_tycli({"module", "add", home.write("seed.js", "module.exports = 1;\n"), "--name", "seed"}, home.path())
                  .exit_code,
              0);
    auto r = run_command({"sqlite3", (home / "taskyon.db").string(), sql}, home.path());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return id;
  }
  bool strict_python() {
    if (!native::python::interpreter()) return false;
    return native::python::strict_available().has_value();
  }
  TempDir home;
  std::string path;  // empty: the test's PATH
};

TEST_F(Wheels, TheBrowsersWheelIsReadWithItsNameVersionAndFiles) {
  auto m = modules::read_module(kTabular);
  ASSERT_TRUE(m.has_value()) << m.error().describe();
  EXPECT_EQ(m->kind, modules::kWheelKind);
  EXPECT_EQ(m->name, "taskyon-tabular") << "PEP 503-normalized";
  EXPECT_EQ(m->version, "1.0.0");
  EXPECT_EQ(m->main, "taskyon_tabular-1.0.0.dist-info/METADATA");
  EXPECT_TRUE(m->files.contains("taskyon_tabular/__init__.py"));
  EXPECT_TRUE(m->integrity.starts_with("sha512-"));
  auto record = modules::record(*m);
  ASSERT_TRUE(record.has_value());
  EXPECT_EQ((*record)["kind"], "python-wheel") << "a wheel's record says so; an npm module's has no kind";
}

// Only pure-Python wheels: a platform tag, a compiled ABI, a WHEEL file
// without Root-Is-Purelib, a binary file, a path out of the wheel and code
// under .data/purelib are refused, naming why.
TEST_F(Wheels, OnlyPurePythonTextWheelsAreStored) {
  const Value ok = {{"w/__init__.py", "X = 1\n"}};
  struct Case {
    std::string file;
    Value files;
    std::string wheel_text;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"w-1.0-cp311-cp311-linux_x86_64.whl", ok, "Root-Is-Purelib: true\n", "only pure-Python wheels"},
      {"w-1.0-py3-none-manylinux1_x86_64.whl", ok, "Root-Is-Purelib: true\n", "only pure-Python wheels"},
      {"w-1.0-py3-none-any.whl", ok, "Root-Is-Purelib: false\n", "Root-Is-Purelib"},
      {"w-1.0-py3-none-any.whl", {{"w/data.bin", "bytes 0xff 0xfe"}}, "Root-Is-Purelib: true\n", "not UTF-8"},
      {"w-1.0-py3-none-any.whl", {{"../evil.py", "X = 1\n"}}, "Root-Is-Purelib: true\n", "not normalized"},
      {"w-1.0-py3-none-any.whl", {{"w-1.0.data/purelib/w/__init__.py", "X = 1\n"}}, "Root-Is-Purelib: true\n",
       "purelib"},
      {"not-a-wheel.whl", ok, "Root-Is-Purelib: true\n", "PEP 427"},
  };
  for (const auto& c : cases) {
    fs::remove(home / c.file);
    auto m = modules::read_module(wheel(c.file, c.files, c.wheel_text));
    ASSERT_FALSE(m.has_value()) << c.file << " " << c.files.dump() << " was read";
    EXPECT_EQ(m.error().code, Errc::bad_usage) << m.error().describe();
    EXPECT_NE(m.error().describe().find(c.says), std::string::npos) << c.says << ": " << m.error().describe();
  }
}

// A py3-none-any wheel may still carry native code: an ELF shared object
// can be made of UTF-8-valid bytes, and python3 loads a file named
// NAME.cpython-…so on `import NAME`. Refused by the name a loader takes for
// a shared object (any case), and by the first bytes of an executable or
// object file whatever its name (hostile review F3); a text file that merely
// begins with "MZ" is not a PE file.
TEST_F(Wheels, NativeCodeIsRefusedByItsNameAndByItsBytes) {
  const std::string elf = std::string("\x7f" "ELF\x02\x01\x01", 7) + std::string(9, '\0') + "rest of a header\n";
  const std::string pe = "MZ" + std::string(58, 'A') + std::string("\x40\0\0\0", 4) + std::string("PE\0\0", 4) + "x\n";
  struct Case {
    std::string path, text, says;
  };
  const std::vector<Case> cases = {
      {"w/fast.cpython-311-x86_64-linux-gnu.so", "x = 1\n", "ends in .so"},
      {"w/fast.abi3.SO", "x = 1\n", "ends in .so"},
      {"w/libz.so.1.2", "x\n", ".so.N"},
      {"w/mod.pyd", "x\n", "ends in .pyd"},
      {"w/lib.dylib", "x\n", "ends in .dylib"},
      {"w/x.Dll", "x\n", "ends in .dll"},
      {"w/data.txt", elf, "an ELF executable or shared object"},
      {"w/pe.txt", pe, "a PE executable"},
      {"w/objects.txt", "!<arch>\nfoo.o/          0           0     0     644     0         `\n", "an ar archive"},
      {"w/module.txt", std::string("\0asm\x01\0\0\0", 8), "a WebAssembly module"},
  };
  for (const auto& c : cases) {
    fs::remove(home / "w-1.0-py3-none-any.whl");
    const std::string path = wheel("w-1.0-py3-none-any.whl", {{"w/__init__.py", "X = 1\n"}, {c.path, c.text}});
    auto m = modules::read_module(path);
    ASSERT_FALSE(m.has_value()) << c.path << " was read";
    EXPECT_EQ(m.error().code, Errc::bad_usage);
    EXPECT_NE(m.error().message.find("native code"), std::string::npos) << m.error().describe();
    EXPECT_NE(m.error().message.find(c.says), std::string::npos) << c.says << ": " << m.error().describe();
    EXPECT_EQ(m.error().where, c.path);
  }
  auto added = run_tycli({"module", "add", (home / "w-1.0-py3-none-any.whl").string()}, home.path());
  EXPECT_NE(added.exit_code, 0) << "tycli module add stored it: " << added.out;
  EXPECT_NE(added.err.find("native code"), std::string::npos) << added.err;
  fs::remove(home / "w-1.0-py3-none-any.whl");
  EXPECT_TRUE(modules::read_module(wheel("w-1.0-py3-none-any.whl", {{"w/__init__.py", "X = 1\n"},
                                                                      {"w/readme.txt", "MZ is how this line begins.\n"},
                                                                      {"w/so.py", "X = 2\n"}}))
                  .has_value())
      << "no native code there";
}

// A wheel's top-level module named as a standard-library one would never
// run (wheels come after the standard library on sys.path) — and when they
// came first it replaced the standard library's, e.g. unicodedata.py, which
// compiling "\N{...}" imports even if the tool never imports the wheel
// (hostile review F4). Refused at add: a root NAME.py or NAME.pyc, or a
// root directory with Python below it; a root directory of data is no module.
TEST_F(Wheels, AWheelNamingAStandardLibraryModuleIsRefused) {
  for (const char* path : {"unicodedata.py", "json/__init__.py", "_uuid.py", "encodings/extra.py",
                           "concurrent/futures/more.py", "os.pyc"}) {
    fs::remove(home / "w-1.0-py3-none-any.whl");
    auto m = modules::read_module(wheel("w-1.0-py3-none-any.whl", {{"w/__init__.py", "X = 1\n"}, {path, "X = 2\n"}}));
    ASSERT_FALSE(m.has_value()) << path << " was read";
    EXPECT_NE(m.error().message.find("has the name of a standard-library module"), std::string::npos)
        << m.error().describe();
  }
  fs::remove(home / "w-1.0-py3-none-any.whl");
  auto ok = modules::read_module(wheel("w-1.0-py3-none-any.whl", {{"w/__init__.py", "X = 1\n"},
                                                                   {"html/index.html", "<p>data</p>\n"},
                                                                   {"jsonish/__init__.py", "X = 3\n"},
                                                                   {"test/__init__.py", "X = 4\n"}}));
  EXPECT_TRUE(ok.has_value()) << ok.error().describe();
  EXPECT_TRUE(modules::is_stdlib_module("unicodedata") && modules::is_stdlib_module("tomllib") &&
              modules::is_stdlib_module("_pyrepl") && !modules::is_stdlib_module("test") &&
              !modules::is_stdlib_module("numpy"));
}

// One path rule for storing and unpacking (hostile review, info): a name
// such as "a..b.py" is stored and unpacked (unpacking refused it at every
// call); what cannot be unpacked — "a" next to "a/b.py", a control
// character, a name over 255 bytes — is refused at add. A wheel stored
// before these rules (native code, a standard-library name, a file that is
// also a directory) is refused when a manifest names it, saying why and
// naming no path of the host's.
TEST_F(Wheels, WheelPathsFollowOneRuleFromAddToUnpack) {
  auto odd = modules::read_module(wheel("odd-1.0-py3-none-any.whl", {{"odd/__init__.py", "X = 1\n"},
                                                                       {"odd/a..b.py", "Y = 2\n"}}));
  ASSERT_TRUE(odd.has_value()) << odd.error().describe();
  struct Case {
    Value files;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{{"w/a", "file\n"}, {"w/a/b.py", "X = 1\n"}}, "both as a file and as a directory"},
      {{{"w/we\nird.py", "X = 1\n"}}, "control character"},
      {{{"w/" + std::string(253, 'x') + ".py", "X = 1\n"}}, "longer than 255 bytes"},
  };
  for (const auto& c : cases) {
    fs::remove(home / "w-1.0-py3-none-any.whl");
    Value files = c.files;
    files["w/__init__.py"] = "X = 0\n";
    auto m = modules::read_module(wheel("w-1.0-py3-none-any.whl", files));
    ASSERT_FALSE(m.has_value()) << c.files.dump() << " was read";
    EXPECT_NE(m.error().message.find(c.says), std::string::npos) << c.says << ": " << m.error().describe();
  }
  const std::vector<std::pair<Value, std::string>> stored = {
      {{{"legacy/__init__.py", "X = 1\n"}, {"legacy/a", "file\n"}, {"legacy/a/b.py", "X = 1\n"}},
       "both as a file and as a directory"},
      {{{"legacy/__init__.py", "X = 1\n"}, {"legacy/fast.cpython-311-x86_64-linux-gnu.so", "\x7f" "ELF\n"}},
       "native code"},
      {{{"legacy/__init__.py", "X = 1\n"}, {"unicodedata.py", "X = 1\n"}}, "standard-library module"},
  };
  int n = 0;
  for (const auto& [files, says] : stored) {
    const std::string id = store_unchecked("legacy", "1." + std::to_string(n), files);
    const std::string tool = "legacy_py" + std::to_string(n++);
    const Value manifest = python_tool(tool, {{"legacy", id}});
    ASSERT_TRUE(manifest.is_object()) << "no executePython here (no python3)";
    auto r = install(manifest);
    const std::string said = r.err + r.out;
    EXPECT_NE(r.exit_code, 0) << says << ": installed";
    EXPECT_NE(said.find("the wheel legacy (" + id + ") cannot be used"), std::string::npos) << said;
    EXPECT_NE(said.find(says), std::string::npos) << said;
    EXPECT_EQ(said.find(home.path().string()), std::string::npos) << "a host path in: " << said;
  }
}

// In host mode (--python-isolation host: the user's own interpreter and
// site-packages) the wheels come after the standard library and before
// site-packages: a wheel replaces no standard-library module, and what the
// manifest pins wins over what the user happens to have installed.
TEST_F(Wheels, InHostModeWheelsComeAfterTheStandardLibraryAndBeforeSitePackages) {
  const std::string tiny = add(wheel("tiny-1.0-py3-none-any.whl", {{"tiny/__init__.py", "VALUE = 'tiny'\n"}}));
  const Value manifest = python_tool("tiny_host", {{"tiny", tiny}});
  ASSERT_TRUE(manifest.is_object()) << "no executePython here (no python3)";
  ASSERT_EQ(install(manifest).exit_code, 0);
  auto r = tycli({"--json", "call", "tiny_host", "--approve-python", "--python-isolation", "host", "--args",
                  Value{{"code", "import os, sys, tiny\n"
                                 "w = sys.path.index(os.path.dirname(os.path.dirname(tiny.__file__)))\n"
                                 "dyn = max(i for i, p in enumerate(sys.path) if p.endswith('/lib-dynload'))\n"
                                 "site = [i for i, p in enumerate(sys.path) if p.endswith(('site-packages', 'dist-packages'))]\n"
                                 "print(w > dyn, all(w < i for i in site))\n"}}
                      .dump()});
  auto v = json::parse(r.out);
  ASSERT_TRUE(v && v->is_object()) << r.err << r.out;
  EXPECT_EQ((*v)["result"]["stdout"], "True True\n") << r.out;
}

// R1 for wheels: one changed byte of a wheel's file changes the module id
// and the revision id of the Python tool that names it. A wheel is not an
// npm module: a JavaScript tool naming one, or a Python tool naming an npm
// module, is refused at install; only executePython may name modules.
TEST_F(Wheels, AChangedByteIsANewRevisionAndKindsDoNotMix) {
  const std::string a = add(wheel("tiny-1.0-py3-none-any.whl", {{"tiny/__init__.py", "VALUE = 1\n"}}));
  fs::create_directories(home / "b");
  const std::string b_path = (home / "b" / "tiny-1.0-py3-none-any.whl").string();
  fs::rename(wheel("tiny-1.0-py3-none-any.whl", {{"tiny/__init__.py", "VALUE = 2\n"}}), b_path);
  const std::string b = add(b_path);
  ASSERT_FALSE(a.empty() || b.empty());
  EXPECT_NE(a, b);
  const Value ta = python_tool("py", {{"tiny", a}}), tb = python_tool("py", {{"tiny", b}});
  ASSERT_TRUE(ta.is_object()) << "no executePython here (no python3)";
  EXPECT_NE(json::content_id_of(ta).value(), json::content_id_of(tb).value());
  EXPECT_EQ(install(ta).exit_code, 0);

  Value js = js_tool("js", "() => 1");
  js["modules"] = {{"tiny", a}};
  auto refused = run_tycli({"tool", "install", home.write("js.json", js.dump())}, home.path());
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("is a Python wheel; a JavaScript tool's modules are npm packages"), std::string::npos)
      << refused.err;
  auto npm_added =
      run_tycli({"--json", "module", "add", home.write("one.js", "module.exports = 1;\n"), "--name", "one"}, home.path());
  auto npm_json = json::parse(npm_added.out);
  ASSERT_TRUE(npm_json && npm_json->is_object()) << npm_added.err;
  const std::string npm_id = (*npm_json)["id"].get<std::string>();
  auto py_npm = install(python_tool("py_npm", {{"one", npm_id}}));
  EXPECT_NE(py_npm.exit_code, 0);
  EXPECT_NE((py_npm.err + py_npm.out).find("is an npm package; a Python tool's modules are pure-Python wheels"),
            std::string::npos)
      << py_npm.err << py_npm.out;
  Value other_native = python_tool("sha", {{"tiny", a}});
  other_native["native"] = "taskyon.sha256";
  auto parsed = registry::parse_manifest(other_native);
  ASSERT_FALSE(parsed.has_value());
  EXPECT_EQ(parsed.error().where, "/modules");
}

// In the strict sandbox — inside bubblewrap, and with only the kernel
// layers and the sandbox's own mount namespace (a PATH without bwrap) —:
// the named wheel imports; a wheel this revision does not name (another
// revision's) does not; the wheel's directory is read-only; a tampered stored
// wheel is refused before python3 starts.
// The arrangement is the parameter: "bwrap", or "kernel_layers" (python3 alone on PATH).
class StrictWheels : public Wheels, public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    Wheels::SetUp();
    if (IsSkipped()) return;
    if (!strict_python()) GTEST_SKIP() << "strict Python is not available here";
    if (GetParam() == "bwrap" && native::python::bubblewrap().path.empty())
      GTEST_SKIP() << "bubblewrap is not usable here: " << native::python::bubblewrap().why;
    if (GetParam() == "kernel_layers") {
      if (auto ok = native::python::strict_requirements(hardening::support(), false); !ok)
        GTEST_SKIP() << "strict Python without bubblewrap is not available here: " << ok.error().message;
      fs::create_directories(home / "bin");
      fs::create_symlink(native::python::interpreter()->executable, home / "bin" / "python3");
      path = (home / "bin").string();
    }
  }
};

TEST_P(StrictWheels, AStrictPythonToolImportsItsWheelsAndNothingElse) {
  const std::string tabular = add(kTabular.string());
  const std::string tiny = add(wheel("tiny-1.0-py3-none-any.whl", {{"tiny/__init__.py", "VALUE = 'tiny'\n"}}));
  ASSERT_FALSE(tabular.empty() || tiny.empty());
  ASSERT_EQ(install(python_tool("tabular_py", {{"taskyon-tabular", tabular}})).exit_code, 0);
  ASSERT_EQ(install(python_tool("tiny_py", {{"tiny", tiny}})).exit_code, 0);

  const Value used = run("tabular_py",
                         "import taskyon_tabular as t\n"
                         "rows = t.parse_csv('a,b\\n1,2\\n3,4\\n')\n"
                         "print(t.summarize(rows, 'b')['sum'])\n");
  ASSERT_TRUE(used.is_object()) << used.dump();
  EXPECT_EQ(used["stdout"], "6.0\n") << used.dump();
  EXPECT_EQ(used["isolation"], "strict");

  const Value probe = run("tabular_py",
                          "import sys, taskyon_tabular\n"
                          "try:\n    import tiny\n    print('tiny imported')\nexcept ImportError as e:\n"
                          "    print(type(e).__name__)\n"
                          "try:\n    open(taskyon_tabular.__file__, 'a').write('#')\n    print('written')\n"
                          "except OSError as e:\n    print('read-only', e.errno)\n"
                          "print(sys.argv)\n"
                          "raise SystemExit(3)\n");
  ASSERT_TRUE(probe.is_object()) << probe.dump();
  const std::string out = probe["stdout"].get<std::string>();
  EXPECT_NE(out.find("ModuleNotFoundError"), std::string::npos) << "another revision's wheel imported: " << out;
  EXPECT_NE(out.find("read-only"), std::string::npos) << out;
  EXPECT_NE(out.find("['-c']"), std::string::npos) << "the prelude leaves argv as -c alone: " << out;
  EXPECT_EQ(probe["exitCode"], 3) << probe.dump();
  EXPECT_EQ(run("tiny_py", "import tiny; print(tiny.VALUE)")["stdout"], "tiny\n");

  // A traceback names the program's own lines.
  const Value failed = run("tiny_py", "import tiny\n\nraise ValueError('line three')\n");
  EXPECT_NE(failed["stderr"].get<std::string>().find("File \"<stdin>\", line 3"), std::string::npos) << failed.dump();

  const std::string db = (home / "taskyon.db").string();
  ASSERT_EQ(run_command({"sqlite3", db, "DROP TRIGGER module_files_no_update; UPDATE module_files SET content = "
                                        "'VALUE = \"tampered\"\n' WHERE content = 'VALUE = ''tiny''\n'"},
                        home.path()).exit_code,
            0);
  auto tampered = tycli({"call", "tiny_py", "--approve-python", "--args", R"({"code": "import tiny"})"});
  EXPECT_NE(tampered.exit_code, 0);
  EXPECT_NE(tampered.err.find("does not hash to its id (tampered)"), std::string::npos) << tampered.err;
}

// In the strict sandbox the wheels come after the standard library and
// lib-dynload on sys.path (hostile review F4: first, a wheel's json/ or
// unicodedata.py replaced the interpreter's), and a wheel unpacks exactly as
// it was stored: "a..b.py" was stored and then refused at every call.
TEST_P(StrictWheels, WheelsComeAfterTheStandardLibraryAndUnpackAsStored) {
  const std::string odd = add(wheel("odd-1.0-py3-none-any.whl", {{"odd/__init__.py", "VALUE = 'odd'\n"},
                                                                   {"odd/a..b.py", "B = 1\n"}}));
  ASSERT_FALSE(odd.empty());
  ASSERT_EQ(install(python_tool("odd_py", {{"odd", odd}})).exit_code, 0);
  const Value out = run("odd_py",
                        "import os, sys, odd\n"
                        "w = sys.path.index(os.path.dirname(os.path.dirname(odd.__file__)))\n"
                        "dyn = max(i for i, p in enumerate(sys.path) if p.endswith('/lib-dynload'))\n"
                        "print(w > dyn, open(os.path.join(os.path.dirname(odd.__file__), 'a..b.py')).read().strip())\n"
                        "print('\\N{LATIN SMALL LETTER A}', sys.modules['unicodedata'].__file__.startswith(sys.path[w]))\n");
  ASSERT_TRUE(out.is_object()) << out.dump();
  EXPECT_EQ(out["stdout"], "True B = 1\na False\n") << out.dump();
}

INSTANTIATE_TEST_SUITE_P(Arrangements, StrictWheels, ::testing::Values("bwrap", "kernel_layers"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace taskyon::testing
