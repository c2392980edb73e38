// LD_PRELOAD probe for the compute preemption mode of a process's CUDA contexts.
//
// libcuda asks RM for its context's compute preemption mode while creating it
// (NV2080_CTRL_CMD_GR_SET_CTXSW_PREEMPTION_MODE, 0x20801210, normally CILP: preemption at
// the instruction level, which saves every SM's registers and shared memory when the
// context is switched out). This hook can change what it asks for and the time slice
// libcuda sets on its channel groups, and it reports the GR context-switch counters
// (NV2080_CTRL_CMD_GR_GET_CTXSW_STATS, 0x20801215) of the process's compute group, so a
// run shows which kind of save the switches used.
//
//   PM_MODE=0|1|2   ask for WFI, CTA or CILP instead of what libcuda asks (a refused
//                   request is sent again as libcuda made it, and the log says so)
//   PM_SLICE_US=N   the value libcuda's own SET_TIMESLICE calls set instead of theirs
//   PM_LOG=path     where to append what was seen (default stderr)
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

typedef struct { uint32_t hClient, hObject, cmd, flags; uint64_t params; uint32_t paramsSize, status; } Nvos54;
typedef struct { uint32_t hRoot, hParent, hNew, hClass; uint64_t pParams; uint32_t paramsSize, status; } Nvos21;
typedef struct { uint32_t hRoot, hParent, hNew, hClass; uint64_t pParams, pRights; uint32_t paramsSize, flags, status; } Nvos64;
typedef struct { uint32_t hObjectError, hObjectEccError, hVASpace, engineType; } ChGrp;
typedef struct { uint32_t cmd, size; uint64_t ptr; } Xfer;
typedef struct { uint32_t flags, hChannel, gfxp, cilp; uint64_t routeFlags, route; } PmParams;
typedef struct { uint32_t hChannel, flags, save, restore, wfi, cta, cilp, gfxp; } Stats;

static int (*real_ioctl)(int, unsigned long, void *);
static FILE *logf;
static int gr_fd = -1;
static uint32_t gr_client, gr_tsg, subdev;
static Stats last;
static int have_stats;

static void say(const char *fmt, ...) {
  if (!logf) {
    const char *p = getenv("PM_LOG");
    logf = p ? fopen(p, "a") : stderr;
    if (!logf) logf = stderr;
  }
  va_list ap; va_start(ap, fmt);
  fprintf(logf, "[pmode %d] ", getpid()); vfprintf(logf, fmt, ap); fputc('\n', logf); fflush(logf);
  va_end(ap);
}

static int ctl(int fd, uint32_t client, uint32_t object, uint32_t cmd, void *p, uint32_t size) {
  Nvos54 a = {client, object, cmd, 0, (uint64_t)(uintptr_t)p, size, 0};
  int rc = real_ioctl(fd, _IOWR('F', 0x2a, Nvos54), &a);
  return rc < 0 ? -1 : (int)a.status;
}

static void *poll_stats(void *unused) {
  (void)unused;
  for (;;) {
    usleep(250000);
    if (gr_fd < 0 || !subdev) continue;
    Stats s = {gr_tsg, 0, 0, 0, 0, 0, 0, 0};
    int st = ctl(gr_fd, gr_client, subdev, 0x20801215, &s, sizeof s);
    if (st == 0) { last = s; have_stats = 1; }
    else if (!have_stats) { say("GET_CTXSW_STATS status 0x%x", st); have_stats = -1; }
  }
  return NULL;
}

__attribute__((destructor)) static void report(void) {
  if (have_stats == 1)
    say("ctxsw stats: saves %u restores %u wfi %u cta %u cilp %u", last.save, last.restore, last.wfi, last.cta, last.cilp);
}

static void note_alloc(int fd, uint32_t client, uint32_t handle, uint32_t cls, uint64_t params, uint32_t status) {
  if (cls != 0xa06c || status != 0 || !params) return;
  const ChGrp *g = (const ChGrp *)(uintptr_t)params;
  if (g->engineType == 1 && gr_fd < 0) {
    gr_fd = fd; gr_client = client; gr_tsg = handle;
    pthread_t t; pthread_create(&t, NULL, poll_stats, NULL); pthread_detach(t);
  }
}

int ioctl(int fd, unsigned long req, ...) {
  va_list ap; va_start(ap, req); void *arg = va_arg(ap, void *); va_end(ap);
  if (!real_ioctl) real_ioctl = (int (*)(int, unsigned long, void *))dlsym(RTLD_NEXT, "ioctl");
  if (_IOC_TYPE(req) != 'F') return real_ioctl(fd, req, arg);
  unsigned nr = _IOC_NR(req);
  if (nr == 0x2a && _IOC_SIZE(req) == sizeof(Nvos54)) {
    Nvos54 *c = arg;
    if (c->cmd == 0x20801210 && c->paramsSize == sizeof(PmParams)) {
      PmParams *p = (PmParams *)(uintptr_t)c->params, asked = *p;
      const char *m = getenv("PM_MODE");
      subdev = c->hObject;
      if (m && (asked.flags & 1)) {
        p->cilp = (uint32_t)atoi(m);
        int rc = real_ioctl(fd, req, arg);
        say("preemption mode: libcuda asked %u, sent %u: rc %d status 0x%x", asked.cilp, p->cilp, rc, c->status);
        if (rc == 0 && c->status == 0) return rc;
        *p = asked; c->status = 0;
        rc = real_ioctl(fd, req, arg);
        say("  sent again as asked (%u): rc %d status 0x%x", asked.cilp, rc, c->status);
        return rc;
      }
      int rc = real_ioctl(fd, req, arg);
      say("preemption mode: libcuda asked flags %u cilp %u: status 0x%x", asked.flags, asked.cilp, c->status);
      return rc;
    }
    if (c->cmd == 0xa06c0103 && c->paramsSize == 8) {
      const char *s = getenv("PM_SLICE_US");
      uint64_t *v = (uint64_t *)(uintptr_t)c->params, was = *v;
      if (s) *v = strtoull(s, NULL, 10);
      int rc = real_ioctl(fd, req, arg);
      say("time slice: libcuda set %llu, sent %llu: status 0x%x", (unsigned long long)was, (unsigned long long)*v, c->status);
      return rc;
    }
    return real_ioctl(fd, req, arg);
  }
  int rc = real_ioctl(fd, req, arg);
  if (rc == 0 && nr == 0x2b) {
    if (_IOC_SIZE(req) == sizeof(Nvos64)) { Nvos64 *a = arg; note_alloc(fd, a->hRoot, a->hNew, a->hClass, a->pParams, a->status); }
    else if (_IOC_SIZE(req) == sizeof(Nvos21)) { Nvos21 *a = arg; note_alloc(fd, a->hRoot, a->hNew, a->hClass, a->pParams, a->status); }
  } else if (rc == 0 && nr == 211) {
    Xfer *x = arg;
    if (x->cmd == 0x2b && x->size == sizeof(Nvos64)) { Nvos64 *a = (Nvos64 *)(uintptr_t)x->ptr; note_alloc(fd, a->hRoot, a->hNew, a->hClass, a->pParams, a->status); }
    else if (x->cmd == 0x2b && x->size == sizeof(Nvos21)) { Nvos21 *a = (Nvos21 *)(uintptr_t)x->ptr; note_alloc(fd, a->hRoot, a->hNew, a->hClass, a->pParams, a->status); }
  }
  return rc;
}
