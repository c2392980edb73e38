// An independent count of kernel launches, for checking the interposer's own count: an
// LD_PRELOAD library that subscribes to CUPTI's driver-API callbacks and counts entries into
// every kernel-launch function (graph launches separately). Writes
// {"kernels":N,"graph_launches":M} to $LAUNCH_COUNT_OUT at exit. Used on native runs only.
// With LAUNCH_COUNT_ALL=1 it also counts every driver-API call by name ("calls"), which shows
// what an application really calls (the runtime resolves far more than it uses).
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>

static atomic_long g_kernels, g_graphs;
static atomic_long g_calls[CUPTI_DRIVER_TRACE_CBID_SIZE];
static const char* g_names[CUPTI_DRIVER_TRACE_CBID_SIZE];

static void CUPTIAPI on_callback(void* ud, CUpti_CallbackDomain dom, CUpti_CallbackId id, const void* data) {
  const CUpti_CallbackData* cb = (const CUpti_CallbackData*)data;
  if (dom != CUPTI_CB_DOMAIN_DRIVER_API || cb->callbackSite != CUPTI_API_ENTER) return;
  if (id < CUPTI_DRIVER_TRACE_CBID_SIZE) {
    g_names[id] = cb->functionName;
    atomic_fetch_add(&g_calls[id], 1);
  }
  switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
      atomic_fetch_add(&g_kernels, 1); break;
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
      atomic_fetch_add(&g_graphs, 1); break;
    default: break;
  }
}

static void report(void) {
  const char* out = getenv("LAUNCH_COUNT_OUT");
  FILE* f = out ? fopen(out, "w") : stderr;
  if (!f) return;
  fprintf(f, "{\"kernels\":%ld,\"graph_launches\":%ld", atomic_load(&g_kernels), atomic_load(&g_graphs));
  if (getenv("LAUNCH_COUNT_ALL")) {
    fprintf(f, ",\"calls\":{");
    int first = 1;
    for (int i = 0; i < CUPTI_DRIVER_TRACE_CBID_SIZE; i++) {
      long n = atomic_load(&g_calls[i]);
      if (n && g_names[i]) { fprintf(f, "%s\"%s\":%ld", first ? "" : ",", g_names[i], n); first = 0; }
    }
    fprintf(f, "}");
  }
  fprintf(f, "}\n");
  if (out) fclose(f);
}

__attribute__((constructor)) static void start(void) {
  CUpti_SubscriberHandle sub;
  if (cuptiSubscribe(&sub, (CUpti_CallbackFunc)on_callback, NULL) != CUPTI_SUCCESS) return;
  cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API);
  atexit(report);
}
