#include "taskyon/store/wal_vfs.h"

#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>

namespace taskyon::store {
namespace {

constexpr sqlite3_int64 kWalHeaderBytes = 32;   // fileformat2 §4.1: the WAL header
constexpr int kFrameHeaderBytes = 24;           // and each frame's header
constexpr std::size_t kCommitSizeField = 4;     // big-endian "database size after commit", 0 unless a commit frame

std::atomic<std::uint64_t> g_file_writes{0};
sqlite3_vfs* g_real = nullptr;  // the default VFS, set once before the shim is registered

// A database or WAL file: the default VFS's file follows this struct in the
// memory SQLite gave (szOsFile), at kRealAt. A database file and the WAL file
// of the same connection know each other (paired in shim_open).
struct ShimFile {
  sqlite3_file base;  // first: SQLite sees a ShimFile as a sqlite3_file
  sqlite3_file* real = nullptr;
  bool is_wal = false;
  ShimFile* wal = nullptr;  // a database file's: its connection's WAL file, once open
  ShimFile* db = nullptr;   // a WAL file's: its connection's database file
  const char* name = nullptr;  // a database file's name as SQLite passed it (the pairing key)
  // A WAL file's:
  std::string buffer;           // bytes not yet written, from offset `start`
  sqlite3_int64 start = 0;
  // Where the page of the commit frame whose header was the last write must
  // start (that header's offset + 24); -1: none. Only a write there completes
  // the commit: a header rewritten in place (walRewriteChecksums) has no page
  // after it, and the next write is then another transaction's.
  sqlite3_int64 commit_page_at = -1;
  int deferred_rc = SQLITE_OK;  // a failed write of the buffer where SQLite could not be told (flush_untold)
  bool gather = true;           // false: every write goes straight through
  sqlite3_int64 last_read = -1;  // where the last call, a read, read from
};
constexpr std::size_t kRealAt = (sizeof(ShimFile) + 15) & ~std::size_t{15};

ShimFile& shim(sqlite3_file* f) { return *reinterpret_cast<ShimFile*>(f); }
const sqlite3_io_methods& real_methods(ShimFile& w) { return *w.real->pMethods; }

// The database files open through the shim, by the name pointer SQLite opened
// each with: the pager's own string, which sqlite3_filename_database() gives
// back for its WAL file's name, so a WAL file finds exactly its connection's.
std::mutex g_databases_mutex;
std::unordered_map<const char*, ShimFile*>& databases() {
  static std::unordered_map<const char*, ShimFile*> open;
  return open;
}

// Writes what is buffered in one write; the buffer is empty afterwards, even
// when the write failed (SQLite then fails the transaction and writes its
// frames again).
int flush(ShimFile& w) {
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

// Marks where the page of a commit frame whose header this write is must go.
void note_commit_header(ShimFile& w, const void* data, int n, sqlite3_int64 offset) {
  if (w.gather && is_commit_frame_header(data, n, offset)) w.commit_page_at = offset + kFrameHeaderBytes;
}

// Writes a WAL file's buffer where SQLite takes no error (a lock change of
// the WAL index, a barrier): a failure fails the file's next call instead.
void flush_untold(ShimFile& w) {
  if (const int rc = flush(w)) w.deferred_rc = rc;
}

// What flush_untold could not report, once, for the WAL file's next call.
int take_deferred(ShimFile& w) {
  const int rc = w.deferred_rc;
  w.deferred_rc = SQLITE_OK;
  return rc;
}

int write_through(ShimFile& w, const void* data, int n, sqlite3_int64 offset) {
  if (w.is_wal) g_file_writes.fetch_add(1, std::memory_order_relaxed);
  return real_methods(w).xWrite(w.real, data, n, offset);
}

int shim_write(sqlite3_file* f, const void* data, int n, sqlite3_int64 offset) {
  ShimFile& w = shim(f);
  if (!w.is_wal) return real_methods(w).xWrite(w.real, data, n, offset);
  if (const int rc = take_deferred(w)) return rc;
  const bool completes_commit = offset == w.commit_page_at;  // this write is the commit frame's page
  const bool rewrites_what_was_read = offset == w.last_read;
  w.commit_page_at = -1;
  w.last_read = -1;
  const auto bytes = static_cast<std::size_t>(n);
  const bool continues = offset == w.start + static_cast<sqlite3_int64>(w.buffer.size());
  if (!w.buffer.empty() && (!continues || w.buffer.size() + bytes > kWalBufferMax)) {
    if (const int rc = flush(w)) return rc;
  }
  // A frame read and written again in place (walRewriteChecksums: the last
  // one written may be the commit frame's header, with no page after it).
  // A header written through may start a commit frame all the same (after
  // recovery, the last read was of the invalid frame where the log goes on).
  const auto alone = [&] {
    const int rc = write_through(w, data, n, offset);
    if (rc == SQLITE_OK) note_commit_header(w, data, n, offset);
    return rc;
  };
  if (!w.gather || bytes > kWalBufferMax || (w.buffer.empty() && rewrites_what_was_read)) return alone();
  try {
    if (w.buffer.empty()) w.start = offset;
    w.buffer.append(static_cast<const char*>(data), bytes);
  } catch (const std::bad_alloc&) {  // no exception into SQLite: this write goes alone
    if (const int rc = flush(w)) return rc;
    return alone();
  }
  note_commit_header(w, data, n, offset);
  if (completes_commit) return flush(w);
  return SQLITE_OK;
}

// The calls that look at or change the file as the OS has it write a WAL
// file's buffer first (flush() of a database file's, always empty, is
// nothing), and end any commit frame left without its page.
int settle(ShimFile& w) {
  w.commit_page_at = -1;
  const int deferred = take_deferred(w);
  const int rc = flush(w);
  return deferred != SQLITE_OK ? deferred : rc;
}
int shim_read(sqlite3_file* f, void* data, int n, sqlite3_int64 offset) {
  ShimFile& w = shim(f);
  if (const int rc = settle(w)) return rc;
  w.last_read = offset;
  return real_methods(w).xRead(w.real, data, n, offset);
}
int shim_truncate(sqlite3_file* f, sqlite3_int64 size) {
  ShimFile& w = shim(f);
  if (const int rc = settle(w)) return rc;
  return real_methods(w).xTruncate(w.real, size);
}
int shim_sync(sqlite3_file* f, int flags) {
  ShimFile& w = shim(f);
  if (const int rc = settle(w)) return rc;
  return real_methods(w).xSync(w.real, flags);
}
int shim_file_size(sqlite3_file* f, sqlite3_int64* size) {
  ShimFile& w = shim(f);
  if (const int rc = settle(w)) return rc;
  return real_methods(w).xFileSize(w.real, size);
}
int shim_file_control(sqlite3_file* f, int op, void* arg) {
  ShimFile& w = shim(f);
  if (const int rc = settle(w)) return rc;
  return real_methods(w).xFileControl(w.real, op, arg);
}
int shim_close(sqlite3_file* f) {
  ShimFile& w = shim(f);
  const int flushed = settle(w);
  const int rc = real_methods(w).xClose(w.real);
  if (w.is_wal && w.db) w.db->wal = nullptr;
  if (w.wal) w.wal->db = nullptr;
  if (!w.is_wal) {
    const std::lock_guard lock(g_databases_mutex);
    if (auto it = databases().find(w.name); it != databases().end() && it->second == &w) databases().erase(it);
  }
  w.~ShimFile();
  return flushed != SQLITE_OK ? flushed : rc;
}

// A lock of the WAL index changes only with nothing of the connection's
// transaction still buffered: frames of a transaction rolled back after
// SQLite wrote them early would otherwise be written later, over frames
// another connection committed meanwhile at the same offsets.
int shim_shm_lock(sqlite3_file* f, int offset, int n, int flags) {
  ShimFile& d = shim(f);
  // Any lock change, not only giving slot 0 back: leaving locking_mode=EXCLUSIVE
  // takes a read lock and never unlocks slot 0.
  if (d.wal) flush_untold(*d.wal);
  return real_methods(d).xShmLock(d.real, offset, n, flags);
}

// The rest as the default VFS's file has them.
int shim_lock(sqlite3_file* f, int level) { return real_methods(shim(f)).xLock(shim(f).real, level); }
int shim_unlock(sqlite3_file* f, int level) { return real_methods(shim(f)).xUnlock(shim(f).real, level); }
int shim_check_reserved_lock(sqlite3_file* f, int* out) {
  return real_methods(shim(f)).xCheckReservedLock(shim(f).real, out);
}
int shim_sector_size(sqlite3_file* f) { return real_methods(shim(f)).xSectorSize(shim(f).real); }
int shim_device_characteristics(sqlite3_file* f) {
  return real_methods(shim(f)).xDeviceCharacteristics(shim(f).real);
}
int shim_shm_map(sqlite3_file* f, int region, int size, int extend, void volatile** out) {
  return real_methods(shim(f)).xShmMap(shim(f).real, region, size, extend, out);
}
// wal.c walIndexWriteHdr: the WAL-index header is published around this
// barrier; nothing it covers may still be buffered.
void shim_shm_barrier(sqlite3_file* f) {
  if (ShimFile& d = shim(f); d.wal) flush_untold(*d.wal);
  real_methods(shim(f)).xShmBarrier(shim(f).real);
}
int shim_shm_unmap(sqlite3_file* f, int remove) { return real_methods(shim(f)).xShmUnmap(shim(f).real, remove); }
int shim_fetch(sqlite3_file* f, sqlite3_int64 offset, int n, void** out) {
  return real_methods(shim(f)).xFetch(shim(f).real, offset, n, out);
}
int shim_unfetch(sqlite3_file* f, sqlite3_int64 offset, void* p) {
  return real_methods(shim(f)).xUnfetch(shim(f).real, offset, p);
}

// Version 3: every method the default VFS's files have (os_unix.c); a file
// whose methods are older is not wrapped (shim_open).
const sqlite3_io_methods kShimMethods = {
    3,
    shim_close,
    shim_read,
    shim_write,
    shim_truncate,
    shim_sync,
    shim_file_size,
    shim_lock,
    shim_unlock,
    shim_check_reserved_lock,
    shim_file_control,
    shim_sector_size,
    shim_device_characteristics,
    shim_shm_map,
    shim_shm_lock,
    shim_shm_barrier,
    shim_shm_unmap,
    shim_fetch,
    shim_unfetch,
};

// The database files and WAL files of connections are wrapped; every other
// file (journals, temporary files) is the default VFS's own, in f itself.
int shim_open(sqlite3_vfs*, sqlite3_filename name, sqlite3_file* f, int flags, int* out_flags) {
  const bool is_wal = (flags & SQLITE_OPEN_WAL) != 0;
  if (!is_wal && ((flags & SQLITE_OPEN_MAIN_DB) == 0 || name == nullptr))
    return g_real->xOpen(g_real, name, f, flags, out_flags);
  auto* w = new (f) ShimFile{};
  w->base.pMethods = nullptr;  // until the real file is open: SQLite does not close a file that failed to open
  w->real = reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(f) + kRealAt);
  const int rc = g_real->xOpen(g_real, name, w->real, flags, out_flags);
  if (rc != SQLITE_OK || w->real->pMethods == nullptr) {
    if (w->real->pMethods != nullptr) w->real->pMethods->xClose(w->real);
    w->~ShimFile();
    f->pMethods = nullptr;
    return rc != SQLITE_OK ? rc : SQLITE_CANTOPEN;
  }
  if (w->real->pMethods->iVersion < 3) {  // methods older than the shim's: the file unwrapped
    w->real->pMethods->xClose(w->real);
    w->~ShimFile();
    return g_real->xOpen(g_real, name, f, flags, out_flags);
  }
  w->is_wal = is_wal;
  const std::lock_guard lock(g_databases_mutex);
  if (is_wal) {
    // Not gathered: a WAL file whose database file is not the shim's (its
    // locks are not seen), and one whose database file lacks powersafe
    // overwrite (psow=0: SQLite pads a synced commit to a sector and may
    // split its last frame around the sync).
    const auto it = databases().find(sqlite3_filename_database(name));
    if (it != databases().end() && it->second->wal == nullptr) {
      w->db = it->second;
      w->db->wal = w;
    }
    // wal.c decides padding the same way, once, when it opens the log.
    w->gather = w->db != nullptr && (real_methods(*w->db).xDeviceCharacteristics(w->db->real) &
                                     SQLITE_IOCAP_POWERSAFE_OVERWRITE) != 0;
  } else {
    w->name = name;
    try {
      databases()[name] = w;
    } catch (const std::bad_alloc&) {  // unpaired: its WAL file is then not gathered
    }
  }
  w->base.pMethods = &kShimMethods;
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
  const int version = std::min(g_real->iVersion, 3);
  static sqlite3_vfs shim = {
      .iVersion = version,
      .szOsFile = static_cast<int>(kRealAt) + g_real->szOsFile,
      .mxPathname = g_real->mxPathname,
      .pNext = nullptr,
      .zName = "taskyon-wal",
      .pAppData = nullptr,
      .xOpen = shim_open,
      .xDelete = shim_delete,
      .xAccess = shim_access,
      .xFullPathname = shim_full_pathname,
      .xDlOpen = shim_dl_open,
      .xDlError = shim_dl_error,
      .xDlSym = shim_dl_sym,
      .xDlClose = shim_dl_close,
      .xRandomness = shim_randomness,
      .xSleep = shim_sleep,
      .xCurrentTime = shim_current_time,
      .xGetLastError = shim_get_last_error,
      // Versions 2 and 3 only where the default VFS has them.
      .xCurrentTimeInt64 = version >= 2 && g_real->xCurrentTimeInt64 ? shim_current_time_int64 : nullptr,
      .xSetSystemCall = version >= 3 && g_real->xSetSystemCall ? shim_set_system_call : nullptr,
      .xGetSystemCall = version >= 3 && g_real->xGetSystemCall ? shim_get_system_call : nullptr,
      .xNextSystemCall = version >= 3 && g_real->xNextSystemCall ? shim_next_system_call : nullptr,
  };
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
