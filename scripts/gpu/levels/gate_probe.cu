// Which driver calls wait for the whole device? A stream is held behind a closed
// stream-memory gate (cuStreamWaitValue32 on a pinned word that stays 0) with a kernel queued
// behind it, then the call named on the command line is made from the host. A call that
// returns is independent of other streams' pending work; one that does not return within the
// time limit waits for it, and would wait forever behind a Level-2 gate that nothing reopens.
//
//   gate_probe <call> <out.json>      (run it under `timeout`; no output means it blocked)
//   gate_probe list                   (the calls)
#include <cuda.h>
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#define DK(x) do { CUresult r = (x); if (r != CUDA_SUCCESS) { const char *s = ""; cuGetErrorName(r, &s); fprintf(stderr, "%s: %s\n", #x, s); return 1; } } while (0)

__global__ void touch(int *p) { p[0] = 1; }

static const char *PTX =
    ".version 7.0\n.target sm_50\n.address_size 64\n"
    ".visible .entry baton_nop() { ret; }\n";

static const char *CALLS[] = {
    "cuMemAlloc", "cuMemFree", "cudaMalloc", "cudaFree", "cuMemHostAlloc", "cuMemFreeHost",
    "cuMemHostRegister", "cuMemHostUnregister", "cuStreamCreate", "cuStreamDestroy",
    "cuEventCreate", "cuModuleLoadData", "cuModuleUnload", "cuMemcpyHtoD", "cuMemsetD32",
    "launch_other_stream", "launch_new_kernel", "cuCtxSynchronize"};

int main(int argc, char **argv) {
  if (argc == 2 && !strcmp(argv[1], "list")) {
    for (const char *c : CALLS) printf("%s\n", c);
    return 0;
  }
  if (argc < 3) {
    fprintf(stderr, "usage: gate_probe <call> <out.json> | list\n");
    return 2;
  }
  std::string call = argv[1];
  cudaFree(0);
  // Set-up done before the gate closes.
  CUdeviceptr dev_a, dev_b;
  DK(cuMemAlloc(&dev_a, 1 << 20));
  DK(cuMemAlloc(&dev_b, 1 << 20));
  void *host_a, *host_b;
  DK(cuMemHostAlloc(&host_a, 1 << 20, 0));
  host_b = malloc(1 << 20);
  CUmodule mod_a;
  DK(cuModuleLoadData(&mod_a, PTX));
  CUstream other;
  DK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
  void *cuda_a;
  cudaMalloc(&cuda_a, 1 << 20);
  // Load the kernel before the gate closes (lazy loading would load it at the first launch).
  touch<<<1, 1, 0, (cudaStream_t)other>>>((int *)dev_b);
  DK(cuStreamSynchronize(other));
  // The gate: a pinned word, 0, that the held stream waits for.
  unsigned *word;
  DK(cuMemHostAlloc((void **)&word, 4, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
  *word = 0;
  CUdeviceptr word_dev;
  DK(cuMemHostGetDevicePointer(&word_dev, word, 0));
  CUstream held;
  DK(cuStreamCreate(&held, CU_STREAM_NON_BLOCKING));
  DK(cuStreamWaitValue32(held, word_dev, 1, CU_STREAM_WAIT_VALUE_GEQ));
  touch<<<1, 1, 0, (cudaStream_t)held>>>((int *)dev_a);

  auto t0 = std::chrono::steady_clock::now();
  CUresult r = CUDA_SUCCESS;
  if (call == "cuMemAlloc") {
    CUdeviceptr p;
    r = cuMemAlloc(&p, 1 << 20);
  } else if (call == "cuMemFree") {
    r = cuMemFree(dev_b);
  } else if (call == "cudaMalloc") {
    void *p;
    r = (CUresult)cudaMalloc(&p, 1 << 20);
  } else if (call == "cudaFree") {
    r = (CUresult)cudaFree(cuda_a);
  } else if (call == "cuMemHostAlloc") {
    void *p;
    r = cuMemHostAlloc(&p, 4, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE);
  } else if (call == "cuMemFreeHost") {
    r = cuMemFreeHost(host_a);
  } else if (call == "cuMemHostRegister") {
    r = cuMemHostRegister(host_b, 1 << 20, 0);
  } else if (call == "cuMemHostUnregister") {
    r = cuMemHostRegister(host_b, 1 << 20, 0);
    if (r == CUDA_SUCCESS) r = cuMemHostUnregister(host_b);
  } else if (call == "cuStreamCreate") {
    CUstream s;
    r = cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
  } else if (call == "cuStreamDestroy") {
    r = cuStreamDestroy(other);
  } else if (call == "cuEventCreate") {
    CUevent e;
    r = cuEventCreate(&e, CU_EVENT_DISABLE_TIMING);
  } else if (call == "cuModuleLoadData") {
    CUmodule m;
    r = cuModuleLoadData(&m, PTX);
  } else if (call == "cuModuleUnload") {
    r = cuModuleUnload(mod_a);
  } else if (call == "cuMemcpyHtoD") {
    r = cuMemcpyHtoD(dev_b, host_b, 4096);
  } else if (call == "cuMemsetD32") {
    r = cuMemsetD32(dev_b, 0, 1024);
  } else if (call == "launch_new_kernel") {
    // A kernel never launched before: lazy loading loads its module now.
    CUmodule m;
    CUfunction f;
    r = cuModuleLoadData(&m, PTX);
    if (r == CUDA_SUCCESS) r = cuModuleGetFunction(&f, m, "baton_nop");
    if (r == CUDA_SUCCESS) r = cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, other, nullptr, nullptr);
    if (r == CUDA_SUCCESS) r = cuStreamSynchronize(other);
  } else if (call == "launch_other_stream") {
    touch<<<1, 1, 0, (cudaStream_t)other>>>((int *)dev_b);
    r = cuStreamSynchronize(other);
  } else if (call == "cuCtxSynchronize") {
    r = cuCtxSynchronize();
  } else {
    fprintf(stderr, "unknown call %s\n", call.c_str());
    return 2;
  }
  double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  const char *name = "";
  cuGetErrorName(r, &name);
  FILE *f = fopen(argv[2], "w");
  fprintf(f, "{\"call\":\"%s\",\"returned\":true,\"result\":\"%s\",\"us\":%.1f}\n", call.c_str(), name, us);
  fclose(f);
  *word = 1;  // open the gate so the process can exit
  cuStreamSynchronize(held);
  return 0;
}
