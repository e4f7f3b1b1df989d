#include "taskyon/store/checkpointer.h"

#include <sqlite3.h>

#include <csignal>

#include <pthread.h>

namespace taskyon::store {

Checkpointer::Checkpointer(std::string path, int wake_at, int limit)
    : path_(std::move(path)), wake_at_(wake_at), limit_(limit) {}

Checkpointer::~Checkpointer() {
  {
    std::lock_guard lock(m_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Checkpointer::watch(sql::Database& db) {
  if (db.raw() != nullptr) sqlite3_wal_hook(db.raw(), &Checkpointer::on_commit, this);
}

// Runs on the committing thread, after its commit (the return value would be
// the commit's: a checkpoint that cannot run now is not the call's failure).
int Checkpointer::on_commit(void* self_ptr, sqlite3* db, const char* schema, int pages) {
  auto& self = *static_cast<Checkpointer*>(self_ptr);
  if (pages < self.wake_at_) {
    // The log restarted since the last round: what that round copied is no more.
    if (self.copied_.load(std::memory_order_relaxed) != 0) self.copied_.store(0, std::memory_order_relaxed);
    if (self.left_.load(std::memory_order_relaxed) != 0) self.left_.store(0, std::memory_order_relaxed);
    return SQLITE_OK;
  }
  bool finish = pages >= self.limit_;
  // The first commit after a round that copied all it found decides, once.
  if (const int copied = self.copied_.exchange(0, std::memory_order_relaxed); copied > 0 && copied <= pages) {
    const int left = pages - copied;
    const int left_before = self.left_.exchange(left, std::memory_order_relaxed);
    // Little is left, or the round did not leave less than the one before it
    // (the thread copies no faster than calls commit): the rest is copied here.
    finish = finish || left <= kCatchUpPages || (left_before > 0 && left >= left_before);
  }
  if (finish) {
    self.left_.store(0, std::memory_order_relaxed);
    // SQLITE_BUSY (the thread is in a round) or an I/O error leaves the log as
    // it is; a later commit comes back here.
    (void)sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
    return SQLITE_OK;
  }
  self.wake();
  return SQLITE_OK;
}

void Checkpointer::wake() {
  std::lock_guard lock(m_);
  if (stop_) return;
  wanted_ = true;
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  cv_.notify_one();
}

namespace {

bool read_schema(sql::Database& db) {
  auto stmt = db.prepare("SELECT 1 FROM sqlite_schema LIMIT 1");
  return stmt && stmt->step().has_value();
}

}  // namespace

void Checkpointer::run() {
  // Signals are for the threads that serve calls, never this one.
  sigset_t signals;
  sigfillset(&signals);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // A connection that cannot be opened makes every round a no-op: commits then
  // checkpoint themselves at the limit.
  auto db = sql::Database::open(path_);
  std::unique_lock lock(m_);
  for (;;) {
    cv_.wait(lock, [&] { return wanted_ || stop_; });
    if (stop_) return;
    wanted_ = false;
    lock.unlock();
    int log = 0;
    int done = 0;
    int rc = SQLITE_CANTOPEN;
    // A connection finds the file in WAL mode on its first read; before it,
    // a checkpoint does nothing (and says so: log -1).
    if (db && db->raw() && read_schema(*db))
      rc = sqlite3_wal_checkpoint_v2(db->raw(), nullptr, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
    const bool all = rc == SQLITE_OK && log > 0 && done == log;
    copied_.store(all ? log : 0, std::memory_order_relaxed);
    lock.lock();
    // After a round that copied all it found, the next commit decides: finish
    // the rest itself (it is little) or wake the thread again.
    if (all) wanted_ = false;
  }
}

}  // namespace taskyon::store
