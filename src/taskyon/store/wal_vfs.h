// Internal to store/: an SQLite VFS shim (https://sqlite.org/vfs.html) over
// the platform's default VFS that hands a commit's write-ahead-log frames to
// the OS in one write instead of two per page (issue 19).
//
// SQLite writes each WAL frame as two writes, its 24-byte header and then the
// page, so a call's commit of about eight pages made some 16 pwrite calls; a
// system call costs several µs on this machine (docs/tasks.md, "Durability").
// For a WAL file the shim keeps writes that continue one another in a buffer
// and writes it out:
//   * once the commit frame has been written whole: the frame whose header
//     holds a non-zero "database size after commit" (WAL format,
//     https://sqlite.org/fileformat2.html §4.1), its page being the write
//     that starts right after that header (a header rewritten in place, with
//     no page after it, marks nothing for a later write: a third review found
//     the next one-page commit left buffered). SQLite publishes a commit in
//     the WAL index only after that, so no connection, in this process or
//     another, ever finds a committed frame that is not in the file, and a
//     commit that returned is in the OS's hands as before (a process that
//     dies right after keeps it);
//   * before any read, sync, truncate, size query, file control or close of
//     that file, before a write elsewhere in it, and before the buffer would
//     pass kWalBufferMax bytes.
// A write of what was just read (a frame rewritten in place) goes straight
// through (and a commit frame's header written so still makes its page the
// end of the commit), as does every write of a file whose database file lacks
// powersafe overwrite (psow=0: a synced commit is then padded, its last frame
// split around the sync). The shim wraps the database file too and pairs it
// with its connection's WAL file (a WAL file without that pair is not
// gathered); at every lock change of the WAL index and at every memory
// barrier (xShmLock, xShmBarrier on the database file: SQLite publishes a
// commit around a barrier) the buffer is written first. So frames SQLite
// wrote early (a spill) for a transaction it then rolled back never outlive
// the write lock, to land over another connection's, and nothing published
// is still buffered. A write of the buffer that fails at a lock change or a
// barrier, where SQLite takes no error, fails the WAL file's next call instead.
// sql::Database also opens every connection with PRAGMA cache_spill = OFF, so
// frames are written only at a commit (a second layer; tested without it).
// Journals and temporary files are the default VFS's own, untouched; the
// database file only forwards. Durability is unchanged: what is synced, and
// when, is SQLite's.
#pragma once

#include <cstddef>
#include <cstdint>

namespace taskyon::store {

// The most a WAL file's buffer holds (bytes); a longer run is written in
// pieces. Below 128 KiB: the unix VFS writes at most the low 17 bits of a
// length per write(2) (os_unix.c seekAndWriteFd), and answers SQLITE_FULL when
// what is left is a multiple of 128 KiB.
inline constexpr std::size_t kWalBufferMax = 96 * 1024;

// The shim's name, for sqlite3_open_v2's zVfs: registered on the first call
// (not as the default VFS). nullptr if SQLite has no default VFS to wrap.
const char* wal_gathering_vfs();

// Writes the shim has made to WAL files in this process (for tests: a commit
// of many pages is one).
std::uint64_t wal_file_writes();

}  // namespace taskyon::store
