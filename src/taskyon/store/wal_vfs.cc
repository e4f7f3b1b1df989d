#include "taskyon/store/wal_vfs.h"

#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <new>
#include <string>

namespace taskyon::store {
namespace {

constexpr sqlite3_int64 kWalHeaderBytes = 32;   // fileformat2 §4.1: the WAL header
constexpr int kFrameHeaderBytes = 24;           // and each frame's header
constexpr std::size_t kCommitSizeField = 4;     // big-endian "database size after commit", 0 unless a commit frame

std::atomic<std::uint64_t> g_file_writes{0};
sqlite3_vfs* g_real = nullptr;  // the default VFS, set once before the shim is registered

// A WAL file: the default VFS's file follows this struct in the memory SQLite
// gave (szOsFile), at kRealAt.
struct WalFile {
  sqlite3_file base;  // first: SQLite sees a WalFile as a sqlite3_file
  sqlite3_file* real;
  std::string buffer;           // bytes not yet written, from offset `start`
  sqlite3_int64 start = 0;
  bool commit_pending = false;  // the last write was a commit frame's header
  bool gather = true;           // false: every write goes straight through
  sqlite3_int64 last_read = -1;  // where the last call, a read, read from
};
constexpr std::size_t kRealAt = (sizeof(WalFile) + 15) & ~std::size_t{15};

WalFile& wal(sqlite3_file* f) { return *reinterpret_cast<WalFile*>(f); }
const sqlite3_io_methods& real_methods(WalFile& w) { return *w.real->pMethods; }

// Writes what is buffered in one write; the buffer is empty afterwards, even
// when the write failed (SQLite then fails the transaction and writes its
// frames again).
int flush(WalFile& w) {
  if (w.buffer.empty()) return SQLITE_OK;
  g_file_writes.fetch_add(1, std::memory_order_relaxed);
  const int rc = real_methods(w).xWrite(w.real, w.buffer.data(), static_cast<int>(w.buffer.size()), w.start);
  w.buffer.clear();  // keeps its capacity for the next commit
  return rc;
}

bool is_commit_frame_header(const void* data, int n, sqlite3_int64 offset) {
  if (n != kFrameHeaderBytes || offset < kWalHeaderBytes) return false;
  unsigned char size[4];
  std::memcpy(size, static_cast<const unsigned char*>(data) + kCommitSizeField, sizeof size);
  return (size[0] | size[1] | size[2] | size[3]) != 0;
}

int write_through(WalFile& w, const void* data, int n, sqlite3_int64 offset) {
  g_file_writes.fetch_add(1, std::memory_order_relaxed);
  return real_methods(w).xWrite(w.real, data, n, offset);
}

int wal_write(sqlite3_file* f, const void* data, int n, sqlite3_int64 offset) {
  WalFile& w = wal(f);
  const bool completes_commit = w.commit_pending;  // this write is the commit frame's page
  const bool rewrites_what_was_read = offset == w.last_read;
  w.commit_pending = false;
  w.last_read = -1;
  const auto bytes = static_cast<std::size_t>(n);
  const bool continues = offset == w.start + static_cast<sqlite3_int64>(w.buffer.size());
  if (!w.buffer.empty() && (!continues || w.buffer.size() + bytes > kWalBufferMax)) {
    if (const int rc = flush(w)) return rc;
  }
  // A frame read and written again in place (walRewriteChecksums: the last
  // one written may be the commit frame's header, with no page after it).
  if (!w.gather || bytes > kWalBufferMax || (w.buffer.empty() && rewrites_what_was_read))
    return write_through(w, data, n, offset);
  try {
    if (w.buffer.empty()) w.start = offset;
    w.buffer.append(static_cast<const char*>(data), bytes);
  } catch (const std::bad_alloc&) {  // no exception into SQLite: this write goes alone
    if (const int rc = flush(w)) return rc;
    return write_through(w, data, n, offset);
  }
  if (completes_commit) return flush(w);
  w.commit_pending = is_commit_frame_header(data, n, offset);
  return SQLITE_OK;
}

// The calls that look at or change the file as the OS has it write the buffer first.
int wal_read(sqlite3_file* f, void* data, int n, sqlite3_int64 offset) {
  WalFile& w = wal(f);
  if (const int rc = flush(w)) return rc;
  w.last_read = offset;
  return real_methods(w).xRead(w.real, data, n, offset);
}
int wal_truncate(sqlite3_file* f, sqlite3_int64 size) {
  WalFile& w = wal(f);
  if (const int rc = flush(w)) return rc;
  return real_methods(w).xTruncate(w.real, size);
}
int wal_sync(sqlite3_file* f, int flags) {
  WalFile& w = wal(f);
  if (const int rc = flush(w)) return rc;
  return real_methods(w).xSync(w.real, flags);
}
int wal_file_size(sqlite3_file* f, sqlite3_int64* size) {
  WalFile& w = wal(f);
  if (const int rc = flush(w)) return rc;
  return real_methods(w).xFileSize(w.real, size);
}
int wal_file_control(sqlite3_file* f, int op, void* arg) {
  WalFile& w = wal(f);
  if (const int rc = flush(w)) return rc;
  return real_methods(w).xFileControl(w.real, op, arg);
}
int wal_close(sqlite3_file* f) {
  WalFile& w = wal(f);
  const int flushed = flush(w);
  const int rc = real_methods(w).xClose(w.real);
  w.~WalFile();
  return flushed != SQLITE_OK ? flushed : rc;
}

// The rest as the default VFS's file has them.
int wal_lock(sqlite3_file* f, int level) { return real_methods(wal(f)).xLock(wal(f).real, level); }
int wal_unlock(sqlite3_file* f, int level) { return real_methods(wal(f)).xUnlock(wal(f).real, level); }
int wal_check_reserved_lock(sqlite3_file* f, int* out) {
  return real_methods(wal(f)).xCheckReservedLock(wal(f).real, out);
}
int wal_sector_size(sqlite3_file* f) { return real_methods(wal(f)).xSectorSize(wal(f).real); }
int wal_device_characteristics(sqlite3_file* f) { return real_methods(wal(f)).xDeviceCharacteristics(wal(f).real); }
// SQLite keeps the WAL index in the database file's shared memory and maps
// only the database file: these are never called on a WAL file, and refuse.
int wal_shm_map(sqlite3_file*, int, int, int, void volatile** out) {
  *out = nullptr;
  return SQLITE_IOERR_SHMMAP;
}
int wal_shm_lock(sqlite3_file*, int, int, int) { return SQLITE_IOERR_SHMLOCK; }
void wal_shm_barrier(sqlite3_file*) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
int wal_shm_unmap(sqlite3_file*, int) { return SQLITE_OK; }
int wal_fetch(sqlite3_file*, sqlite3_int64, int, void** out) {
  *out = nullptr;  // no mapping: SQLite reads instead
  return SQLITE_OK;
}
int wal_unfetch(sqlite3_file*, sqlite3_int64, void*) { return SQLITE_OK; }

const sqlite3_io_methods kWalMethods = {
    3,           wal_close,          wal_read,   wal_write,   wal_truncate,         wal_sync,
    wal_file_size, wal_lock,         wal_unlock, wal_check_reserved_lock, wal_file_control, wal_sector_size,
    wal_device_characteristics, wal_shm_map, wal_shm_lock, wal_shm_barrier, wal_shm_unmap, wal_fetch,
    wal_unfetch,
};

int shim_open(sqlite3_vfs*, sqlite3_filename name, sqlite3_file* f, int flags, int* out_flags) {
  if ((flags & SQLITE_OPEN_WAL) == 0) return g_real->xOpen(g_real, name, f, flags, out_flags);  // f is the real file
  auto* w = new (f) WalFile{};
  w->base.pMethods = nullptr;  // until the real file is open: SQLite does not close a file that failed to open
  w->real = reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(f) + kRealAt);
  const int rc = g_real->xOpen(g_real, name, w->real, flags, out_flags);
  if (rc != SQLITE_OK || w->real->pMethods == nullptr) {
    if (w->real->pMethods != nullptr) w->real->pMethods->xClose(w->real);
    w->~WalFile();
    f->pMethods = nullptr;
    return rc != SQLITE_OK ? rc : SQLITE_CANTOPEN;
  }
  // psow=0 (SQLite pads a synced commit to a sector and may split its last
  // frame around the sync): not gathered.
  w->gather = sqlite3_uri_boolean(name, "psow", 1) != 0;
  w->base.pMethods = &kWalMethods;
  return SQLITE_OK;
}

// Everything else is the default VFS's, called with its own sqlite3_vfs.
int shim_delete(sqlite3_vfs*, const char* name, int sync_dir) { return g_real->xDelete(g_real, name, sync_dir); }
int shim_access(sqlite3_vfs*, const char* name, int flags, int* out) {
  return g_real->xAccess(g_real, name, flags, out);
}
int shim_full_pathname(sqlite3_vfs*, const char* name, int n, char* out) {
  return g_real->xFullPathname(g_real, name, n, out);
}
void* shim_dl_open(sqlite3_vfs*, const char* name) { return g_real->xDlOpen(g_real, name); }
void shim_dl_error(sqlite3_vfs*, int n, char* out) { g_real->xDlError(g_real, n, out); }
void (*shim_dl_sym(sqlite3_vfs*, void* handle, const char* symbol))() {
  return g_real->xDlSym(g_real, handle, symbol);
}
void shim_dl_close(sqlite3_vfs*, void* handle) { g_real->xDlClose(g_real, handle); }
int shim_randomness(sqlite3_vfs*, int n, char* out) { return g_real->xRandomness(g_real, n, out); }
int shim_sleep(sqlite3_vfs*, int us) { return g_real->xSleep(g_real, us); }
int shim_current_time(sqlite3_vfs*, double* out) { return g_real->xCurrentTime(g_real, out); }
int shim_get_last_error(sqlite3_vfs*, int n, char* out) { return g_real->xGetLastError(g_real, n, out); }
int shim_current_time_int64(sqlite3_vfs*, sqlite3_int64* out) { return g_real->xCurrentTimeInt64(g_real, out); }
int shim_set_system_call(sqlite3_vfs*, const char* name, sqlite3_syscall_ptr call) {
  return g_real->xSetSystemCall(g_real, name, call);
}
sqlite3_syscall_ptr shim_get_system_call(sqlite3_vfs*, const char* name) {
  return g_real->xGetSystemCall(g_real, name);
}
const char* shim_next_system_call(sqlite3_vfs*, const char* name) { return g_real->xNextSystemCall(g_real, name); }

const char* register_shim() {
  g_real = sqlite3_vfs_find(nullptr);
  if (g_real == nullptr) return nullptr;
  static sqlite3_vfs shim{};
  shim.iVersion = std::min(g_real->iVersion, 3);
  shim.szOsFile = static_cast<int>(kRealAt) + g_real->szOsFile;
  shim.mxPathname = g_real->mxPathname;
  shim.zName = "taskyon-wal";
  shim.xOpen = shim_open;
  shim.xDelete = shim_delete;
  shim.xAccess = shim_access;
  shim.xFullPathname = shim_full_pathname;
  shim.xDlOpen = shim_dl_open;
  shim.xDlError = shim_dl_error;
  shim.xDlSym = shim_dl_sym;
  shim.xDlClose = shim_dl_close;
  shim.xRandomness = shim_randomness;
  shim.xSleep = shim_sleep;
  shim.xCurrentTime = shim_current_time;
  shim.xGetLastError = shim_get_last_error;
  if (shim.iVersion >= 2) shim.xCurrentTimeInt64 = g_real->xCurrentTimeInt64 ? shim_current_time_int64 : nullptr;
  if (shim.iVersion >= 3) {
    shim.xSetSystemCall = g_real->xSetSystemCall ? shim_set_system_call : nullptr;
    shim.xGetSystemCall = g_real->xGetSystemCall ? shim_get_system_call : nullptr;
    shim.xNextSystemCall = g_real->xNextSystemCall ? shim_next_system_call : nullptr;
  }
  if (sqlite3_vfs_register(&shim, 0) != SQLITE_OK) return nullptr;
  return shim.zName;
}

}  // namespace

const char* wal_gathering_vfs() {
  static const char* const name = register_shim();
  return name;
}

std::uint64_t wal_file_writes() { return g_file_writes.load(std::memory_order_relaxed); }

}  // namespace taskyon::store
