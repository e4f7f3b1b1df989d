// Checkpoints of the store's write-ahead log, off the committing thread
// (internal to the store; issue 19, docs/tasks.md "Durability").
//
// A commit that brings the log to kCheckpointPages (store.h) does not copy it
// into the database file itself, as SQLite's wal_autocheckpoint would (tens of
// ms of writing and two fdatasync calls inside one call): it wakes a thread of
// the Store that runs the checkpoint on a connection of its own, in SQLite's
// PASSIVE mode (https://sqlite.org/c3ref/wal_checkpoint_v2.html: it takes no
// lock a writer or reader waits for, and copies only what no reader still
// needs). The call returns without waiting for the disk.
//
// A log restarts from its beginning only at a write that finds every frame
// copied (wal.c, walRestartLog). While calls keep committing, the thread is
// always behind: each round copies what the calls committed during the round
// before. So the first commit after a round finishes the checkpoint itself
// when at most kCatchUpPages are left (a few pages and two short fdatasync
// calls), or when the round left no fewer than the one before it (the disk is
// no faster than the calls); and any commit does when the log reaches
// kWalLimitPages, whatever the thread did (it is failing), so the log's file
// stays bounded.
//
// Durability is SQLite's with synchronous=NORMAL either way: the log is synced
// at each checkpoint, before its pages are copied.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "taskyon/store/sqlite.h"

struct sqlite3;

namespace taskyon::store {

// Pages (4 KiB) left to copy at or under which a committing thread completes
// the thread's checkpoint itself, so that the next write restarts the log.
inline constexpr int kCatchUpPages = 256;

class Checkpointer {
 public:
  // `path`: the database file; `wake_at` and `limit`: pages in the log at
  // which a commit wakes the thread, and at which it checkpoints itself.
  Checkpointer(std::string path, int wake_at, int limit);
  ~Checkpointer();  // stops the thread after the round it is in, if any
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  // Replaces a connection's automatic checkpoint (sqlite3_wal_hook) with this
  // one. The connection must not outlive the Checkpointer.
  void watch(sql::Database& db);

 private:
  static int on_commit(void* self, sqlite3* db, const char* schema, int pages);
  void wake();
  void run();

  const std::string path_;
  const int wake_at_;
  const int limit_;
  // The log's length in frames when the thread's last round copied all of it;
  // 0 after a round that did not, and once a commit acted on it.
  std::atomic<int> copied_{0};
  // Frames the last such round left behind, as the commit after it saw them
  // (0: none yet since the log restarted).
  std::atomic<int> left_{0};
  std::mutex m_;
  std::condition_variable cv_;
  bool wanted_ = false;  // a round was asked for since the last began
  bool stop_ = false;
  std::thread thread_;   // started by the first wake()
};

}  // namespace taskyon::store
