// Which driver calls a stream capture tolerates, and from which thread: the rules Baton's own
// threads and hooks must follow while an application captures a graph.
//
// For each capture mode (global, thread-local, relaxed) and each caller (the capturing thread
// itself; another thread in the default global mode; another thread switched to relaxed mode
// with cuThreadExchangeStreamCaptureMode), a capture is begun on a non-blocking stream, one
// call is made, and the capture is ended. One JSON line per case: the call's result, whether
// the capture could still record a kernel afterwards, and the result of ending it.
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>
#include <cuda.h>
#include <cuda_runtime.h>

__global__ void tiny(int* p) { if (p && threadIdx.x == 0) atomicAdd(p, 1); }

struct Env {
  CUcontext ctx;
  CUstream cap, other;
  CUevent pre, spare, in_capture;
  CUfunction k;
  CUdeviceptr word_dev;
  unsigned* word_host;
};

static CUresult launch(Env& e, CUstream s) {
  void* p = nullptr;
  void* args[] = {&p};
  return cuLaunchKernel(e.k, 1, 1, 1, 32, 1, 1, 0, s, args, nullptr);
}

int main() {
  cudaFree(0);
  Env e{};
  cuCtxGetCurrent(&e.ctx);
  cuStreamCreate(&e.cap, CU_STREAM_NON_BLOCKING);
  cuStreamCreate(&e.other, CU_STREAM_NON_BLOCKING);
  cuEventCreate(&e.pre, CU_EVENT_DISABLE_TIMING);
  cuEventCreate(&e.spare, CU_EVENT_DISABLE_TIMING);
  cuEventCreate(&e.in_capture, CU_EVENT_DISABLE_TIMING);
  cudaGetFuncBySymbol(&e.k, (const void*)tiny);
  cuMemHostAlloc((void**)&e.word_host, 4, CU_MEMHOSTALLOC_DEVICEMAP);
  *e.word_host = 1;
  cuMemHostGetDevicePointer(&e.word_dev, e.word_host, 0);

  std::vector<std::pair<const char*, std::function<CUresult(Env&)>>> calls = {
    {"cuEventQuery(other)", [](Env& e) { return cuEventQuery(e.pre); }},
    {"cuEventSynchronize(other)", [](Env& e) { return cuEventSynchronize(e.pre); }},
    {"cuStreamQuery(other)", [](Env& e) { return cuStreamQuery(e.other); }},
    {"cuStreamSynchronize(other)", [](Env& e) { return cuStreamSynchronize(e.other); }},
    {"cuEventRecord(other)", [](Env& e) { return cuEventRecord(e.spare, e.other); }},
    {"cuLaunchKernel(other)", [](Env& e) { return launch(e, e.other); }},
    {"cuStreamWaitValue32(other)", [](Env& e) { return cuStreamWaitValue32(e.other, e.word_dev, 1, CU_STREAM_WAIT_VALUE_GEQ); }},
    {"cuStreamIsCapturing(capturing)", [](Env& e) { CUstreamCaptureStatus st; return cuStreamIsCapturing(e.cap, &st); }},
    {"cuEventCreate+Destroy", [](Env& e) { CUevent x; CUresult r = cuEventCreate(&x, CU_EVENT_DISABLE_TIMING); if (r == CUDA_SUCCESS) cuEventDestroy(x); return r; }},
    {"cuStreamCreate+Destroy", [](Env& e) { CUstream x; CUresult r = cuStreamCreate(&x, CU_STREAM_NON_BLOCKING); if (r == CUDA_SUCCESS) cuStreamDestroy(x); return r; }},
    {"cuMemAlloc+Free", [](Env& e) { CUdeviceptr p; CUresult r = cuMemAlloc(&p, 1 << 20); if (r == CUDA_SUCCESS) r = cuMemFree(p); return r; }},
    {"cuCtxSynchronize", [](Env& e) { return cuCtxSynchronize(); }},
    {"cuStreamQuery(capturing)", [](Env& e) { return cuStreamQuery(e.cap); }},
    {"cuEventQuery(recorded in capture)", [](Env& e) { return cuEventQuery(e.in_capture); }},
    {"cuPointerGetAttribute", [](Env& e) { unsigned t = 0; return cuPointerGetAttribute(&t, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, e.word_dev); }},
    {"cuFuncGetParamInfo", [](Env& e) { size_t off = 0, sz = 0; return cuFuncGetParamInfo(e.k, 0, &off, &sz); }},
    {"cuCtxPushCurrent+Pop", [](Env& e) { CUresult r = cuCtxPushCurrent(e.ctx); CUcontext c; cuCtxPopCurrent(&c); return r; }},
    {"cuMemFreeAsync+AllocAsync(other)", [](Env& e) { CUdeviceptr p; CUresult r = cuMemAllocAsync(&p, 4096, e.other); if (r == CUDA_SUCCESS) r = cuMemFreeAsync(p, e.other); return r; }},
    {"cuLaunchKernel(legacy)", [](Env& e) { return launch(e, CU_STREAM_LEGACY); }},
    {"cuStreamQuery(legacy)", [](Env& e) { return cuStreamQuery(CU_STREAM_LEGACY); }},
  };
  const CUstreamCaptureMode modes[] = {CU_STREAM_CAPTURE_MODE_GLOBAL, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                                       CU_STREAM_CAPTURE_MODE_RELAXED};
  const char* mode_names[] = {"global", "thread_local", "relaxed"};
  const char* callers[] = {"same_thread", "other_thread_global", "other_thread_relaxed"};
  for (int m = 0; m < 3; m++) {
    for (int c = 0; c < 3; c++) {
      for (auto& [name, call] : calls) {
        cuCtxSynchronize();
        cuEventRecord(e.pre, e.other);
        cuEventSynchronize(e.pre);
        CUresult begin = cuStreamBeginCapture(e.cap, modes[m]);
        CUresult first = launch(e, e.cap);
        cuEventRecord(e.in_capture, e.cap);
        CUresult r = CUDA_ERROR_UNKNOWN;
        if (c == 0) {
          r = call(e);
        } else {
          std::thread t([&] {
            cuCtxSetCurrent(e.ctx);
            CUstreamCaptureMode mine = CU_STREAM_CAPTURE_MODE_RELAXED;
            if (c == 2) cuThreadExchangeStreamCaptureMode(&mine);
            r = call(e);
          });
          t.join();
        }
        CUresult after = launch(e, e.cap);
        CUgraph g = nullptr;
        CUresult end = cuStreamEndCapture(e.cap, &g);
        if (g) cuGraphDestroy(g);
        cuStreamSynchronize(e.other);
        const char *rn = "?", *an = "?", *en = "?";
        cuGetErrorName(r, &rn);
        cuGetErrorName(after, &an);
        cuGetErrorName(end, &en);
        printf("{\"capture_mode\": \"%s\", \"caller\": \"%s\", \"call\": \"%s\", \"begin\": %d, \"first\": %d, "
               "\"result\": \"%s\", \"launch_after\": \"%s\", \"end\": \"%s\"}\n",
               mode_names[m], callers[c], name, begin, first, rn, an, en);
        fflush(stdout);
      }
    }
  }
  return 0;
}
