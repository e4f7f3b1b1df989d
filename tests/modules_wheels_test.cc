// Pure-Python wheels for strict Python (issue 17 item 5, docs/modules.md,
// "Python wheels"): read with libarchive from real wheels (the one
// scripts/build-wheel.py builds for the browser, and variants this test
// writes with python3's zipfile), stored by content id in a real SQLite
// store, named by an executePython manifest and imported by real python3
// processes in the strict sandbox (bubblewrap and the kernel layers).
#include <filesystem>
#include <string>
#include <vector>

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
class StrictWheels : public Wheels, public ::testing::WithParamInterface<std::string> {};

TEST_P(StrictWheels, AStrictPythonToolImportsItsWheelsAndNothingElse) {
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

INSTANTIATE_TEST_SUITE_P(Arrangements, StrictWheels, ::testing::Values("bwrap", "kernel_layers"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace taskyon::testing
