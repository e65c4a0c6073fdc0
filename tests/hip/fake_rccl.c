/* A stand-in for ROCm's librccl.so.1 (tests/hip/test_rccl.py): RCCL's entry points as
 * its header declares them, each call appended to a text log (fake_log) instead of
 * communicating. Communicators are non-blocking: ncclCommGetAsyncError reports
 * ncclInProgress (7) for fake_set_async's `busy` polls, then its `final` status. The
 * config is read as RCCL's ncclConfig_t of ROCm 6.x (fields up to trafficClass). Built
 * with -DFAKE_OLD it lacks ncclCommSplit, as an RCCL older than ROCm 6.0 does. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef struct { char internal[128]; } ncclUniqueId;
typedef struct {
  size_t size; unsigned int magic; unsigned int version;
  int blocking; int cgaClusterSize; int minCTAs; int maxCTAs;
  const char *netName; int splitShare; int trafficClass;
} ncclConfig_t;

static char log_[16384];
static int busy_ = 0, final_ = 0;

static void add(const char *fmt, ...) {
  size_t n = strlen(log_);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(log_ + n, sizeof(log_) - n, fmt, ap);
  va_end(ap);
  n = strlen(log_);
  if (n + 1 < sizeof(log_)) { log_[n] = '\n'; log_[n + 1] = 0; }
}

const char *fake_log(void) { return log_; }
void fake_reset(void) { log_[0] = 0; busy_ = 0; final_ = 0; }
void fake_set_async(int busy, int final) { busy_ = busy; final_ = final; }

int ncclGetVersion(int *v) { *v = 22005; return 0; }
int ncclGetUniqueId(ncclUniqueId *id) { memset(id->internal, 0x2a, 128); return 0; }
const char *ncclGetErrorString(int s) { return s == 6 ? "remote process exited" : "fake"; }

static void config(const char *what, const ncclConfig_t *c) {
  add("%s config size=%zu magic=%x version=%u blocking=%d cga=%d net=%s split_share=%d "
      "traffic=%d", what, c->size, c->magic, c->version, c->blocking, c->cgaClusterSize,
      c->netName ? c->netName : "null", c->splitShare, c->trafficClass);
}

int ncclCommInitRankConfig(void **comm, int n, ncclUniqueId id, int rank, ncclConfig_t *c) {
  add("init n=%d rank=%d id=%02x%02x", n, rank, (unsigned char)id.internal[0],
      (unsigned char)id.internal[127]);
  config("init", c);
  *comm = (void *)0x1000;
  return 7;
}

#ifndef FAKE_OLD
int ncclCommSplit(void *comm, int color, int key, void **out, ncclConfig_t *c) {
  add("split parent=%p color=%d key=%d", comm, color, key);
  config("split", c);
  *out = color < 0 ? NULL : (void *)(0x2000 + (size_t)color);
  return 7;
}
#endif

int ncclCommGetAsyncError(void *comm, int *st) {
  (void)comm;
  *st = busy_ > 0 ? 7 : final_;
  busy_--;
  return 0;
}

int ncclCommAbort(void *comm) { add("abort %p", comm); return 0; }
int ncclCommDestroy(void *comm) { add("destroy %p", comm); return 0; }
int ncclGroupStart(void) { add("group_start"); return 0; }
int ncclGroupEnd(void) { add("group_end"); return 0; }

int ncclAllReduce(const void *s, void *r, size_t n, int dt, int op, void *comm, void *st) {
  add("all_reduce %p %p %zu dt=%d op=%d comm=%p stream=%p", s, r, n, dt, op, comm, st);
  return 0;
}
int ncclReduceScatter(const void *s, void *r, size_t n, int dt, int op, void *comm, void *st) {
  add("reduce_scatter %p %p %zu dt=%d op=%d comm=%p stream=%p", s, r, n, dt, op, comm, st);
  return 0;
}
int ncclAllGather(const void *s, void *r, size_t n, int dt, void *comm, void *st) {
  add("all_gather %p %p %zu dt=%d comm=%p stream=%p", s, r, n, dt, comm, st);
  return 0;
}
int ncclSend(const void *s, size_t n, int dt, int peer, void *comm, void *st) {
  add("send %p %zu dt=%d peer=%d comm=%p stream=%p", s, n, dt, peer, comm, st);
  return 0;
}
int ncclRecv(void *r, size_t n, int dt, int peer, void *comm, void *st) {
  add("recv %p %zu dt=%d peer=%d comm=%p stream=%p", r, n, dt, peer, comm, st);
  return 0;
}
