// tycli on a read-only store, and bounded inputs (files named on the command
// line, stdin): real processes, real exit codes and messages.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "taskyon/store/store.h"
#include "test_util.h"

namespace taskyon {
namespace {

using ::testing::HasSubstr;
using testing::run_command;
using testing::run_tycli;
const std::string kExamples = std::string(TASKYON_SOURCE_DIR) + "/examples/tools/";

class CliStore : public ::testing::Test {
 protected:
  testing::CommandResult tycli(const std::vector<std::string>& args) { return run_tycli(args, home.path()); }
  // Runs `tycli args` with the home directory mounted read-only (a user and
  // mount namespace, so that root too is refused every write, as a user is
  // on a 0444 file in a 0555 directory).
  testing::CommandResult read_only_tycli(const std::string& args) {
    const std::string h = home.path().string();
    return run_command({"unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
                        "mount --bind \"$0\" \"$0\" && mount -o remount,bind,ro \"$0\" && exec \"$1\" " + args, h,
                        TYCLI_PATH},
                       home.path());
  }
  bool can_mount_read_only() {
    auto r = run_command({"unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
                          "mount --bind \"$0\" \"$0\" && mount -o remount,bind,ro \"$0\" && ! touch \"$0/x\"",
                          home.path().string()},
                         home.path());
    return r.exit_code == 0;
  }
  testing::TempDir home;
};

TEST_F(CliStore, ReadCommandsWorkOnAReadOnlyStoreAndWritesNameIt) {  // issue 18.5
  ASSERT_EQ(tycli({"tool", "install", kExamples + "add.json"}).exit_code, 0);
  ASSERT_EQ(tycli({"grant", "storage", "add"}).exit_code, 0);
  ASSERT_EQ(tycli({"grant", "fetch", "add", "https://api.example.com", "--access", "read"}).exit_code, 0);
  if (!can_mount_read_only()) GTEST_SKIP() << "no user and mount namespaces here";
  const std::string db = (home / "taskyon.db").string();
  ASSERT_FALSE(std::filesystem::exists(db + "-shm"));  // closed cleanly: no WAL index to read through

  for (const std::string args : {"tool list", "tool show add", "tool history add", "task tree", "audit",
                                 "grant list", "sandbox log", "secret list add", "popup list"}) {
    auto r = read_only_tycli(args);
    EXPECT_EQ(r.exit_code, 0) << args << ": " << r.err;
    if (args == "tool list") {
      EXPECT_THAT(r.out, HasSubstr("add"));
    }
    if (args == "grant list") {
      EXPECT_THAT(r.out, HasSubstr("https://api.example.com"));
    }
  }
  // While another process has the store open (its WAL index exists), too.
  auto open = store::Store::open(db);
  ASSERT_TRUE(open) << open.error().describe();
  auto listed = read_only_tycli("tool list");
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_THAT(listed.out, HasSubstr("add"));

  for (const std::string& args : std::vector<std::string>{"tool install " + kExamples + "uppercase.json", "grant storage add",
                                 "call add --args '{\"num1\": 1, \"num2\": 2}'"}) {
    auto r = read_only_tycli(args);
    EXPECT_EQ(r.exit_code, 3) << args;
    EXPECT_THAT(r.err, HasSubstr("read-only")) << args;
    EXPECT_THAT(r.err, HasSubstr(db)) << args;
  }
}

TEST_F(CliStore, DevicesAndHugeFilesAreRefusedWithoutReadingThem) {  // issues 18.3, 12.9
  ASSERT_EQ(tycli({"tool", "install", kExamples + "add.json"}).exit_code, 0);
  const std::string sparse = (home / "sparse.json").string();
  std::filesystem::resize_file(home.write("sparse.json", "{"), 200u << 20);  // 200 MB, no blocks
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"tool", "install", "/dev/zero"}, "not a regular file"},
      {{"tool", "install", sparse}, "the limit is 4194304 bytes"},
      {{"call", "add", "--args", "@/dev/zero"}, "not a regular file"},
      {{"call", "add", "--args", "@" + sparse}, "the limit is 4194304 bytes"},
      {{"run", "/dev/zero"}, "not a regular file"},
      {{"run", sparse}, "the limit is 16777216 bytes"},
      {{"run", home.path().string()}, "directory"},
      {{"settings", "set", "add", "/dev/zero"}, "not a regular file"},
      {{"settings", "set", "add", sparse}, "the limit is 1048576 bytes"},
  };
  for (const auto& [args, message] : cases) {
    auto r = tycli(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << " " << args.back() << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(message)) << args[0] << " " << args.back();
  }
  auto secret = run_command({"sh", "-c", "exec \"$0\" secret set add https://api.example.com TOKEN < /dev/zero",
                             TYCLI_PATH},
                            home.path());
  EXPECT_EQ(secret.exit_code, 2) << secret.err;
  EXPECT_THAT(secret.err, HasSubstr("the limit is 65536 bytes"));
}

TEST_F(CliStore, AHugeDescriptionIsRefusedNamingItsLimit) {
  std::string manifest = R"({"name":"big","description":")" + std::string(3u << 20, 'd') +
                         R"(","parameters":{"type":"object"},"execution":"sandboxed-code","runtime":"javascript","code":"x => x"})";
  auto r = tycli({"tool", "install", home.write("big.json", manifest)});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("\"description\" is 3145728 bytes; the limit is 65536 bytes"));
  EXPECT_THAT(r.err, HasSubstr("/description"));
}

}  // namespace
}  // namespace taskyon
