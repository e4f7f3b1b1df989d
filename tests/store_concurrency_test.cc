// The store under concurrency, on a real SQLite file and real processes
// (fork; each child its own connection): many processes opening one new store
// at once, and several processes doing mixed writes and reads on one store.
// Nothing may fail with "database is locked", no audit row may be missing.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "taskyon/registry/manifest.h"
#include "taskyon/store/audit.h"
#include "taskyon/store/grants.h"
#include "taskyon/store/kv.h"
#include "taskyon/store/schema.h"
#include "taskyon/store/store.h"
#include "taskyon/tasks/task.h"
#include "test_util.h"

namespace taskyon::store {
namespace {

// Forks `n` children that each wait for the start signal, run `body(i)` and
// exit with its status (0 ok). Returns the exit statuses. Errors are written
// to stderr by the child so a failure says what it was.
template <typename F>
std::vector<int> run_together(int n, F body) {
  int gate[2];
  if (::pipe(gate) != 0) return {};
  std::vector<pid_t> pids;
  for (int i = 0; i < n; ++i) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(gate[1]);
      char c;
      while (::read(gate[0], &c, 1) > 0) {
      }  // EOF: every child is forked, go
      std::fflush(stderr);
      ::_exit(body(i));
    }
    pids.push_back(pid);
  }
  ::close(gate[0]);
  ::close(gate[1]);
  std::vector<int> statuses;
  for (auto pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    statuses.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
  return statuses;
}

int failures(const std::vector<int>& statuses) {
  int n = 0;
  for (int s : statuses) n += s != 0;
  return n;
}

std::int64_t count(Store& st, const std::string& sql) {
  auto stmt = st.database().prepare(sql);
  if (!stmt || !*stmt->step()) return -1;
  return stmt->integer(0);
}

TEST(StoreConcurrency, OneHundredSixtyProcessesOpenANewStoreTogether) {
  testing::TempDir dir;
  const std::string path = (dir / "new" / "taskyon.db").string();
  const auto statuses = run_together(160, [&](int) {
    auto st = Store::open(path);
    if (!st) {
      std::fprintf(stderr, "open: %s\n", st.error().describe().c_str());
      return 1;
    }
    auto tools = st->tools();  // and it is usable
    if (!tools) {
      std::fprintf(stderr, "tools: %s\n", tools.error().describe().c_str());
      return 2;
    }
    return 0;
  });
  ASSERT_EQ(statuses.size(), 160u);
  EXPECT_EQ(failures(statuses), 0);
  auto st = Store::open(path);
  ASSERT_TRUE(st) << st.error().describe();
  EXPECT_EQ(count(*st, "PRAGMA user_version"), taskyon::store::kSchemaVersion);
  EXPECT_EQ(count(*st, "SELECT count(*) FROM sqlite_master WHERE name = 'audit_log'"), 1);
}

// 8 processes × 200 operations: storage set/get/delete/list (each audited),
// fetch grants, installs and audit rows written directly, on one store.
TEST(StoreConcurrency, EightProcessesOfMixedOperationsLoseNothing) {
  testing::TempDir dir;
  const std::string path = (dir / "taskyon.db").string();
  std::string revision;
  {
    auto st = Store::open(path);
    ASSERT_TRUE(st) << st.error().describe();
    auto installed = st->install(*registry::parse_manifest(testing::js_tool("counter", "x => x")));
    ASSERT_TRUE(installed);
    revision = installed->id;
    ASSERT_TRUE(grant_storage(*st, revision, "test"));
  }
  constexpr int kProcesses = 8, kOps = 200;
  const auto statuses = run_together(kProcesses, [&](int p) {
    auto st = Store::open(path);
    if (!st) {
      std::fprintf(stderr, "open: %s\n", st.error().describe().c_str());
      return 1;
    }
    const Caller caller{revision, fmt::format("sha256:{:064x}", p + 1)};
    for (int i = 0; i < kOps; ++i) {
      const std::string key = fmt::format("p{}-k{}", p, i % 10);
      Result<void> r;
      switch (i % 6) {
        case 0: {
          auto s = storage_set(*st, caller, key, json::Value(i));
          r = !s ? Result<void>(std::unexpected(s.error())) : (!*s ? fail(Errc::internal, s->error().message) : Result<void>());
          break;
        }
        case 1: {
          auto g = storage_get(*st, caller, key);
          r = !g ? Result<void>(std::unexpected(g.error())) : (!*g ? fail(Errc::internal, g->error().message) : Result<void>());
          break;
        }
        case 2: {
          auto l = storage_list(*st, caller, fmt::format("p{}-", p));
          r = !l ? Result<void>(std::unexpected(l.error())) : (!*l ? fail(Errc::internal, l->error().message) : Result<void>());
          break;
        }
        case 3: {
          auto g = grant_fetch(*st, revision, fmt::format("https://p{}.example.com", p), Access::read, {}, "test");
          r = !g ? Result<void>(std::unexpected(g.error())) : Result<void>();
          break;
        }
        case 4: {
          auto m = registry::parse_manifest(testing::js_tool(fmt::format("t{}", p), fmt::format("x => {}", i)));
          auto in = st->install(*m);
          r = !in ? Result<void>(std::unexpected(in.error())) : Result<void>();
          break;
        }
        case 5: {
          AuditEntry e;
          e.revision = revision;
          e.capability = "test.mark";
          e.target = key;
          e.verdict = capability::Verdict::allow;
          e.reason = "concurrency test";
          e.task = caller.task;
          auto a = append_audit(*st, std::move(e));
          r = !a ? Result<void>(std::unexpected(a.error())) : Result<void>();
          break;
        }
      }
      if (!r) {
        std::fprintf(stderr, "process %d op %d: %s\n", p, i, r.error().describe().c_str());
        return 3;
      }
    }
    return 0;
  });
  EXPECT_EQ(failures(statuses), 0);
  auto st = Store::open(path);
  ASSERT_TRUE(st);
  // Every storage operation (ops 0, 1, 2 of each 6) and every direct row (op 5) is in the log.
  const int per_process = (kOps / 6) * 4 + (kOps % 6 > 0) + (kOps % 6 > 1) + (kOps % 6 > 2) + (kOps % 6 > 5);
  for (int p = 0; p < kProcesses; ++p)
    EXPECT_EQ(count(*st, fmt::format("SELECT count(*) FROM audit_log WHERE task = 'sha256:{:064x}'", p + 1)), per_process)
        << "process " << p;
  EXPECT_EQ(count(*st, "SELECT count(*) FROM audit_log WHERE verdict = 'deny'"), 0);
  EXPECT_EQ(count(*st, "SELECT count(*) FROM fetch_grants"), kProcesses);
}

// A read left active on a connection (a statement stepped to its first row)
// must not stop that connection's next write from waiting for the lock.
TEST(StoreConcurrency, AnActiveReadDoesNotMakeAWriteGiveUp) {
  testing::TempDir dir;
  const std::string path = (dir / "taskyon.db").string();
  auto st = Store::open(path);
  ASSERT_TRUE(st);
  auto other = Store::open(path);
  ASSERT_TRUE(other);
  auto read = st->database().prepare("SELECT name FROM sqlite_master");
  ASSERT_TRUE(read);
  ASSERT_TRUE(*read->step());  // a read snapshot is now open on `st`
  // Another connection writes (so that snapshot is now stale) and holds the
  // write lock for a moment.
  ASSERT_TRUE(other->database().exec("BEGIN IMMEDIATE"));
  AuditEntry first;
  first.revision = "sha256:" + std::string(64, 'b');
  first.capability = "test.write";
  first.reason = "the other connection";
  ASSERT_TRUE(append_audit(*other, first));
  // The transaction belongs to this thread's connection of `other` (a Store
  // gives each thread its own), so the releasing thread commits on that one.
  sql::Database& holder = other->database();
  std::thread release([&] {
    ::usleep(300 * 1000);
    (void)holder.exec("COMMIT");
  });
  AuditEntry e;
  e.revision = "sha256:" + std::string(64, 'a');
  e.capability = "test.write";
  e.reason = "after an active read";
  auto a = append_audit(*st, e);  // waits for the lock instead of failing at once
  release.join();
  EXPECT_TRUE(a) << (a ? "" : a.error().describe());
  EXPECT_EQ(count(*st, "SELECT count(*) FROM audit_log"), 2);
}

tasks::Task message_task(std::optional<std::string> parent, const std::string& text) {
  tasks::Task t;
  t.parent_id = std::move(parent);
  t.role = tasks::Role::user;
  t.content = {{"message", text}};
  t.id = *tasks::compute_id(t);
  return t;
}

// Mixed operations of one thread on a shared Store: storage (audited), audit
// rows, installs and resolves, task chains. Returns the first error, if any.
Result<void> mixed_operations(Store& st, const std::string& revision, int who, int ops) {
  const Caller caller{revision, fmt::format("sha256:{:064x}", who + 1)};
  std::optional<std::string> parent;
  for (int i = 0; i < ops; ++i) {
    const std::string key = fmt::format("w{}-k{}", who, i % 10);
    switch (i % 5) {
      case 0: {
        auto s = storage_set(st, caller, key, json::Value(i));
        if (!s) return std::unexpected(s.error());
        if (!*s) return fail(Errc::internal, s->error().message);
        break;
      }
      case 1: {
        AuditEntry e;
        e.revision = revision;
        e.capability = "test.mark";
        e.target = key;
        e.verdict = capability::Verdict::allow;
        e.reason = "concurrency test";
        e.task = caller.task;
        if (auto a = append_audit(st, std::move(e)); !a) return std::unexpected(a.error());
        break;
      }
      case 2: {
        auto m = registry::parse_manifest(testing::js_tool(fmt::format("t{}", who), fmt::format("x => {}", i)));
        if (auto in = st.install(*m); !in) return std::unexpected(in.error());
        if (auto r = st.resolve(fmt::format("t{}", who)); !r) return std::unexpected(r.error());
        break;
      }
      case 3: {
        auto t = message_task(parent, fmt::format("w{} step {}", who, i));
        if (auto r = st.put_tasks({t}); !r) return std::unexpected(r.error());
        parent = t.id;
        break;
      }
      case 4: {
        if (parent) {
          auto l = st.lineage(*parent);
          if (!l) return std::unexpected(l.error());
          if (l->back().id != *parent) return fail(Errc::internal, "lineage does not end in the task asked for");
        }
        break;
      }
    }
  }
  return {};
}

std::string install_counter(Store& st) {
  auto installed = st.install(*registry::parse_manifest(testing::js_tool("counter", "x => x")));
  if (!installed) return "";
  (void)grant_storage(st, installed->id, "test");
  return installed->id;
}

// One Store object used by 8 threads at once (the long-lived host): each gets
// its own connection, so transactions do not interleave on one connection and
// nothing is lost. On one shared connection this fails ("cannot start a
// transaction within a transaction", misuse) or crashes.
TEST(StoreConcurrency, EightThreadsShareOneStore) {
  testing::TempDir dir;
  auto st = Store::open((dir / "taskyon.db").string());
  ASSERT_TRUE(st) << st.error().describe();
  const std::string revision = install_counter(*st);
  ASSERT_FALSE(revision.empty());
  constexpr int kThreads = 8, kOps = 150;
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      if (auto r = mixed_operations(*st, revision, t, kOps); !r) errors[t] = r.error().describe();
    });
  for (auto& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(errors[t], "") << "thread " << t;
  const int audited = (kOps / 5) * 2;  // storage_set and the direct row
  for (int t = 0; t < kThreads; ++t)
    EXPECT_EQ(count(*st, fmt::format("SELECT count(*) FROM audit_log WHERE task = 'sha256:{:064x}'", t + 1)), audited)
        << "thread " << t;
  EXPECT_EQ(count(*st, "SELECT count(*) FROM tasks"), kThreads * (kOps / 5));
}

// 3 processes × 4 threads, each process with its own Store on one file.
TEST(StoreConcurrency, ThreadsInSeveralProcessesLoseNothing) {
  testing::TempDir dir;
  const std::string path = (dir / "taskyon.db").string();
  std::string revision;
  {
    auto st = Store::open(path);
    ASSERT_TRUE(st);
    revision = install_counter(*st);
    ASSERT_FALSE(revision.empty());
  }
  constexpr int kProcesses = 3, kThreads = 4, kOps = 60;
  const auto statuses = run_together(kProcesses, [&](int p) {
    auto st = Store::open(path);
    if (!st) return 1;
    std::vector<std::string> errors(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        if (auto r = mixed_operations(*st, revision, p * kThreads + t, kOps); !r) errors[t] = r.error().describe();
      });
    for (auto& t : threads) t.join();
    for (const auto& e : errors)
      if (!e.empty()) {
        std::fprintf(stderr, "process %d: %s\n", p, e.c_str());
        return 2;
      }
    return 0;
  });
  EXPECT_EQ(failures(statuses), 0);
  auto st = Store::open(path);
  ASSERT_TRUE(st);
  EXPECT_EQ(count(*st, "SELECT count(*) FROM audit_log WHERE capability = 'test.mark'"),
            kProcesses * kThreads * (kOps / 5));
  EXPECT_EQ(count(*st, "SELECT count(*) FROM tasks"), kProcesses * kThreads * (kOps / 5));
}

// A store held by another process beyond the bound: the write waits for the
// bound, then fails with a clear Errc::store error naming the bound, and
// leaves nothing half-written; once the holder is gone it succeeds.
TEST(StoreConcurrency, ABusyStoreBeyondTheBoundIsAClearError) {
  testing::TempDir dir;
  const std::string path = (dir / "taskyon.db").string();
  auto st = Store::open(path);
  ASSERT_TRUE(st);
  int ready[2], done[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(done), 0);
  const pid_t holder = ::fork();
  if (holder == 0) {
    auto other = Store::open(path);
    if (!other || !other->database().exec("BEGIN IMMEDIATE")) ::_exit(1);
    (void)!::write(ready[1], "x", 1);
    char c;
    (void)!::read(done[0], &c, 1);  // hold the write lock until told
    (void)other->database().exec("ROLLBACK");
    ::_exit(0);
  }
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  st->set_busy_limit(std::chrono::milliseconds(300));
  AuditEntry e;
  e.revision = "sha256:" + std::string(64, 'a');
  e.capability = "test.write";
  e.reason = "while busy";
  const auto started = std::chrono::steady_clock::now();
  auto a = append_audit(*st, e);
  const auto waited = std::chrono::steady_clock::now() - started;
  auto tx = st->put_tasks({message_task(std::nullopt, "while busy")});
  (void)!::write(done[1], "x", 1);
  int status = 0;
  ::waitpid(holder, &status, 0);
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().code, Errc::store);
  EXPECT_NE(a.error().message.find("more than 300 ms"), std::string::npos) << a.error().message;
  EXPECT_GE(waited, std::chrono::milliseconds(300));
  ASSERT_FALSE(tx);
  EXPECT_EQ(tx.error().code, Errc::store);
  EXPECT_EQ(count(*st, "SELECT count(*) FROM tasks"), 0);
  EXPECT_TRUE(append_audit(*st, e));  // the holder is gone
  EXPECT_TRUE(st->put_tasks({message_task(std::nullopt, "after")}));
}

// Statements are prepared once per connection: repeating an operation
// compiles nothing new.
TEST(StoreConcurrency, StatementsArePreparedOncePerConnection) {
  testing::TempDir dir;
  auto st = Store::open((dir / "taskyon.db").string());
  ASSERT_TRUE(st);
  const std::string revision = install_counter(*st);
  ASSERT_TRUE(st->resolve("counter"));
  ASSERT_TRUE(st->put_tasks({message_task(std::nullopt, "first")}));
  const auto prepared = st->database().prepared_count();
  EXPECT_GT(prepared, 0u);
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(st->resolve("counter"));
    ASSERT_TRUE(st->put_tasks({message_task(std::nullopt, fmt::format("m{}", i))}));
  }
  EXPECT_EQ(st->database().prepared_count(), prepared);
}

// prepare_task_writes (the long-lived host's open, issue 19): the first
// put_tasks after it compiles nothing, the write-ahead log a closed store
// left empty is started (its header written), and no stored value changes.
TEST(StoreConcurrency, TaskWritesCanBePreparedBeforeTheFirstWrite) {
  testing::TempDir dir;
  const std::string path = (dir / "taskyon.db").string();
  ASSERT_TRUE(Store::open(path));  // created; its last connection's close empties the log
  const auto wal_bytes = [&] {
    std::error_code ec;
    const auto n = std::filesystem::file_size(path + "-wal", ec);
    return ec ? std::uintmax_t{0} : n;
  };
  auto st = Store::open(path);
  ASSERT_TRUE(st);
  auto version = schema_version(st->database());
  ASSERT_TRUE(version);
  ASSERT_EQ(wal_bytes(), 0u);
  const auto before = st->database().prepared_count();
  ASSERT_TRUE(st->prepare_task_writes());
  const auto prepared = st->database().prepared_count();
  EXPECT_GT(prepared, before);
  EXPECT_GE(wal_bytes(), 32u) << "the write-ahead log was not started";
  auto after = schema_version(st->database());
  ASSERT_TRUE(after);
  EXPECT_EQ(*after, *version);
  auto roots = st->roots();
  ASSERT_TRUE(roots);
  EXPECT_TRUE(roots->empty());
  const auto after_read = st->database().prepared_count();
  ASSERT_TRUE(st->put_tasks({message_task(std::nullopt, "first")}));
  EXPECT_EQ(st->database().prepared_count(), after_read) << "put_tasks compiled a statement of its own";
}

// Store::park (the long-lived host's call connections): the next thread
// without a connection of its own takes the parked one, prepared statements
// and all, instead of opening another.
TEST(StoreConcurrency, AParkedConnectionGoesToTheNextThread) {
  testing::TempDir dir;
  auto st = Store::open((dir / "taskyon.db").string());
  ASSERT_TRUE(st);
  ASSERT_FALSE(install_counter(*st).empty());
  std::size_t first = 0, next = 0, unparked = 0;
  std::thread([&] {
    ASSERT_TRUE(st->resolve("counter"));
    first = st->database().prepared_count();
    st->park();
  }).join();
  std::thread([&] {
    next = st->database().prepared_count();  // the parked connection, not a new one
    ASSERT_TRUE(st->resolve("counter"));
    // A second thread meanwhile gets a connection of its own.
    std::thread([&] { unparked = st->database().prepared_count(); }).join();
  }).join();
  EXPECT_GT(first, 0u);
  EXPECT_EQ(next, first);
  EXPECT_LT(unparked, first);
}

// A thread whose connection could not be opened (no file descriptor was
// left) gets one on its next use once it can be opened: a long-lived thread
// (a server's HTTP worker, using the server's one Store) does not fail until
// it ends. In a child process: the descriptor limit is the process's.
TEST(StoreConcurrency, AConnectionThatCouldNotBeOpenedIsOpenedOnTheThreadsNextUse) {
  testing::TempDir dir;
  const std::string path = (dir / "taskyon.db").string();
  ASSERT_TRUE(Store::open(path));
  const auto statuses = run_together(1, [&](int) {
    auto st = Store::open(path);
    if (!st) return 10;
    int status = 0;
    std::thread([&] {
      rlimit was{};
      ::getrlimit(RLIMIT_NOFILE, &was);
      const int lowest_free = ::dup(0);  // every descriptor below it is taken
      if (lowest_free < 0) {
        status = 11;
        return;
      }
      ::close(lowest_free);
      rlimit none = was;
      none.rlim_cur = static_cast<rlim_t>(lowest_free);
      ::setrlimit(RLIMIT_NOFILE, &none);
      const bool opened_without_descriptors = st->database().raw() != nullptr;
      const auto during = st->resolve("nothing");
      const bool read_without_descriptors = during || during.error().code == Errc::not_found;
      ::setrlimit(RLIMIT_NOFILE, &was);
      if (opened_without_descriptors || read_without_descriptors) {
        status = 12;  // the limit did not take: the test proves nothing
        return;
      }
      const auto none_found = st->resolve("nothing");  // the same thread, descriptors free again
      if (none_found || none_found.error().code != Errc::not_found) {
        std::fprintf(stderr, "still failing: %s\n", none_found ? "found" : none_found.error().describe().c_str());
        status = 13;
      }
    }).join();
    return status;
  });
  EXPECT_EQ(statuses, std::vector<int>{0});
}

// Store::lend (issue 19: a call's capability requests use the connection of
// the thread that runs the call): a Borrow makes its thread use the lent
// connection, for that Store only, for as long as it lives; an empty Loan
// borrows nothing.
TEST(StoreConcurrency, ABorrowUsesTheLentConnectionOfItsStoreWhileItLives) {
  testing::TempDir dir;
  auto st = Store::open((dir / "taskyon.db").string());
  auto other = Store::open((dir / "other.db").string());
  ASSERT_TRUE(st && other);
  sql::Database* lender = &st->database();
  const Store::Loan loan = st->lend();
  sql::Database *during = nullptr, *other_during = nullptr, *after = nullptr, *empty = nullptr, *own = nullptr;
  std::thread([&] {
    own = &st->database();
    {
      const Store::Borrow borrow(loan);
      during = &st->database();
      other_during = &other->database();
      const auto none = st->resolve("nothing");  // a read on the lent connection
      ASSERT_FALSE(none);
      EXPECT_EQ(none.error().code, Errc::not_found);
    }
    after = &st->database();
    const Store::Borrow none{Store::Loan{}};
    empty = &st->database();
  }).join();
  EXPECT_NE(own, lender);
  EXPECT_EQ(during, lender);
  EXPECT_NE(other_during, lender);
  EXPECT_EQ(after, own);
  EXPECT_EQ(empty, own);
}

// A thread that ends without park() hands its connection on all the same
// (tycli mcp's per-call threads, a call's capability threads): the next new
// thread takes it, statements and all, instead of opening another.
TEST(StoreConcurrency, AnEndedThreadsConnectionGoesToTheNextThread) {
  testing::TempDir dir;
  auto st = Store::open((dir / "taskyon.db").string());
  ASSERT_TRUE(st);
  ASSERT_FALSE(install_counter(*st).empty());
  std::size_t ended = 0, next = 0;
  std::thread([&] {
    ASSERT_TRUE(st->resolve("counter"));
    ended = st->database().prepared_count();
  }).join();
  // Threads that hold the ended one's stack (glibc reuses it, and its id
  // with it), so the next thread surely has an id of its own.
  std::mutex m;
  std::condition_variable cv;
  bool release = false;
  std::vector<std::thread> holders;
  for (int i = 0; i < 3; ++i)
    holders.emplace_back([&] {
      std::unique_lock lock(m);
      cv.wait(lock, [&] { return release; });
    });
  std::thread([&] { next = st->database().prepared_count(); }).join();
  {
    std::lock_guard lock(m);
    release = true;
  }
  cv.notify_all();
  for (auto& h : holders) h.join();
  EXPECT_GT(ended, 0u);
  EXPECT_EQ(next, ended) << "a new connection was opened: the ended thread's was not handed on";
}

// A connection that could not be opened is not parked: the next thread opens
// its own once the store is reachable again.
TEST(StoreConcurrency, ABrokenConnectionIsNotParked) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir / "a");
  auto st = Store::open((dir / "a" / "taskyon.db").string());
  ASSERT_TRUE(st);
  ASSERT_FALSE(install_counter(*st).empty());
  std::filesystem::rename(dir / "a", dir / "b");  // the store's path leads nowhere
  bool broken = false;
  std::thread([&] {
    broken = !st->database().prepare("SELECT 1");
    st->park();
  }).join();
  std::filesystem::rename(dir / "b", dir / "a");
  ASSERT_TRUE(broken) << "the connection opened though its directory was gone";
  std::thread([&] { EXPECT_TRUE(st->resolve("counter")) << "the broken connection was handed on"; }).join();
}

}  // namespace
}  // namespace taskyon::store
