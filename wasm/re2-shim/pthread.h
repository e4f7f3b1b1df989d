// wasm/ only, for Debian's re2 (util/mutex.h): wasi-libc has no <pthread.h>
// for wasm32-wasi, and the module runs on one thread (no shared memory), so
// the read-write lock re2 takes around its DFA cache is a no-op here.
#pragma once
typedef struct {
  int unused;
} pthread_rwlock_t;
typedef struct {
  int unused;
} pthread_rwlockattr_t;
static inline int pthread_rwlock_init(pthread_rwlock_t*, const pthread_rwlockattr_t*) { return 0; }
static inline int pthread_rwlock_destroy(pthread_rwlock_t*) { return 0; }
static inline int pthread_rwlock_rdlock(pthread_rwlock_t*) { return 0; }
static inline int pthread_rwlock_wrlock(pthread_rwlock_t*) { return 0; }
static inline int pthread_rwlock_unlock(pthread_rwlock_t*) { return 0; }
