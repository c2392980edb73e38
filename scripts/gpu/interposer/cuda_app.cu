// Transparency check for plain CUDA C++ (runtime API): a mix of what applications do —
// kernels on the legacy default stream and on created streams (blocking and non-blocking,
// with priorities), async and sync copies, memsets, events across streams, a host function,
// stream-ordered allocation, and a captured graph replayed several times. Prints a checksum of
// every result and the number of kernels it launched, as JSON on the last line.
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(2); } } while (0)

static long g_kernels = 0;
#define LAUNCH(k, g, b, s, st, ...) do { k<<<g, b, s, st>>>(__VA_ARGS__); CK(cudaGetLastError()); g_kernels++; } while (0)

__global__ void fill(float* x, int n, float v) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = v + i * 1e-3f; }
__global__ void axpy(float* y, const float* x, int n, float a) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }
__global__ void square(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = x[i] * x[i] * 0.5f; }
__global__ void stamp(int* log, int* counter, int tag) { if (threadIdx.x == 0 && blockIdx.x == 0) log[atomicAdd(counter, 1)] = tag; }
__global__ void mixed(char a, double b, float* p, short c) { if (threadIdx.x == 0 && blockIdx.x == 0) p[0] = a + (float)b + c; }

static void host_fn(void* p) { *(int*)p += 1; }

static uint64_t fnv(const void* p, size_t n, uint64_t h = 1469598103934665603ull) {
  const unsigned char* b = (const unsigned char*)p; for (size_t i = 0; i < n; i++) { h ^= b[i]; h *= 1099511628211ull; } return h;
}

int main() {
  const int n = 1 << 20, blk = 256, grd = (n + blk - 1) / blk;
  int lo, hi; CK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
  cudaStream_t s1, s2, s3;
  CK(cudaStreamCreate(&s1));                                        // blocking
  CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithPriority(&s3, cudaStreamNonBlocking, hi));  // highest priority
  float *x, *y, *z; int *log, *counter;
  CK(cudaMalloc(&x, n * sizeof(float))); CK(cudaMalloc(&y, n * sizeof(float))); CK(cudaMalloc(&z, n * sizeof(float)));
  CK(cudaMalloc(&log, 4096 * sizeof(int))); CK(cudaMalloc(&counter, sizeof(int)));
  CK(cudaMemset(counter, 0, sizeof(int))); CK(cudaMemset(log, 0xff, 4096 * sizeof(int)));

  // Legacy stream, then a blocking stream that implicitly follows it, then legacy again.
  LAUNCH(fill, grd, blk, 0, 0, x, n, 1.0f);
  LAUNCH(fill, grd, blk, 0, s1, y, n, 2.0f);
  LAUNCH(axpy, grd, blk, 0, 0, y, x, n, 0.5f);
  for (int i = 0; i < 200; i++) LAUNCH(stamp, 1, 32, 0, i % 2 ? s1 : 0, log, counter, i);

  // Events across non-blocking streams.
  cudaEvent_t e1, e2; CK(cudaEventCreate(&e1)); CK(cudaEventCreateWithFlags(&e2, cudaEventDisableTiming));
  CK(cudaEventRecord(e1, 0));
  CK(cudaStreamWaitEvent(s2, e1, 0));
  LAUNCH(square, grd, blk, 0, s2, y, n);
  CK(cudaEventRecord(e2, s2));
  CK(cudaStreamWaitEvent(s3, e2, 0));
  LAUNCH(fill, grd, blk, 0, s3, z, n, 0.0f);
  CK(cudaMemsetAsync(z, 0, n * sizeof(float), s3));
  LAUNCH(axpy, grd, blk, 0, s3, z, y, n, 1.0f);

  // Stream-ordered allocation used at once.
  float* tmp; CK(cudaMallocAsync((void**)&tmp, n * sizeof(float), s3));
  CK(cudaMemcpyAsync(tmp, z, n * sizeof(float), cudaMemcpyDeviceToDevice, s3));
  LAUNCH(square, grd, blk, 0, s3, tmp, n);
  int host_counter = 0; CK(cudaLaunchHostFunc(s3, host_fn, &host_counter));
  std::vector<float> h_tmp(n);
  CK(cudaMemcpyAsync(h_tmp.data(), tmp, n * sizeof(float), cudaMemcpyDeviceToHost, s3));
  CK(cudaFreeAsync(tmp, s3));
  CK(cudaStreamSynchronize(s3));

  // Mixed-size kernel parameters.
  float* p; CK(cudaMalloc(&p, sizeof(float)));
  LAUNCH(mixed, 1, 1, 0, s2, (char)3, 2.25, p, (short)-1);

  // A captured graph, replayed.
  cudaGraph_t g; cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < 5; i++) { axpy<<<grd, blk, 0, s1>>>(x, y, n, 0.25f); CK(cudaGetLastError()); }
  CK(cudaStreamEndCapture(s1, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  for (int r = 0; r < 4; r++) CK(cudaGraphLaunch(ge, s1));
  long graph_kernels = 5 * 4;

  // Synchronous copies back; sync the device.
  CK(cudaDeviceSynchronize());
  std::vector<float> hx(n), hy(n), hz(n); std::vector<int> hlog(4096); float hp; int hc;
  CK(cudaMemcpy(hx.data(), x, n * sizeof(float), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hy.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hz.data(), z, n * sizeof(float), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hlog.data(), log, 4096 * sizeof(int), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(&hp, p, sizeof(float), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(&hc, counter, sizeof(int), cudaMemcpyDeviceToHost));
  float ms = 0; CK(cudaEventElapsedTime(&ms, e1, e1));

  // The legacy/s1 stamps must be in submission order (implicit synchronization).
  bool ordered = hc == 200; for (int i = 0; i < 200 && ordered; i++) ordered = hlog[i] == i;
  uint64_t h = fnv(hx.data(), n * 4); h = fnv(hy.data(), n * 4, h); h = fnv(hz.data(), n * 4, h);
  h = fnv(h_tmp.data(), n * 4, h); h = fnv(hlog.data(), 4096 * 4, h); h = fnv(&hp, 4, h);
  printf("{\"app\":\"cuda_app\",\"checksum\":\"%016llx\",\"kernels\":%ld,\"graph_kernels\":%ld,\"ordered\":%s,\"host_fn\":%d,\"mixed\":%.3f}\n",
         (unsigned long long)h, g_kernels, graph_kernels, ordered ? "true" : "false", host_counter, hp);
  return ordered && host_counter == 1 ? 0 : 1;
}
