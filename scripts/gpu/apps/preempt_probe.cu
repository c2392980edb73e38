// Preemption probe: a best-effort process saturating the GPU with spin kernels of a set
// length, and a latency-critical process timing short kernels against it.
//
//   preempt_probe be <kernel_us> <seconds> <out.json>
//       fills every SM with kernels that each spin for kernel_us, back to back, at most 8
//       outstanding (as a training loop that synchronizes now and then); reports kernels/s.
//   preempt_probe hp <kernel_us> <period_ms> <seconds> <out.json>
//       every period_ms, one small kernel (one block) that spins for kernel_us, then waits
//       for it; reports the launch→completion latency (p50/p90/p99/max). Minus the same
//       figure with the GPU to itself, it is how long the kernel waited for the GPU.
//
// Plain CUDA runtime code: it reaches the driver the way applications do.
#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

__device__ __forceinline__ unsigned long long gtime() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Spins for `ns` of GPU time.
__global__ void spin(unsigned long long ns) {
  unsigned long long t0 = gtime();
  while (gtime() - t0 < ns) {
  }
}

static double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static double pct(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = std::min(v.size() - 1, (size_t)(q * (v.size() - 1) + 0.5));
  return v[i];
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: preempt_probe be <kernel_us> <seconds> <out> | hp <kernel_us> <period_ms> <seconds> <out>\n");
    return 2;
  }
  const char *mode = argv[1];
  double kernel_us = atof(argv[2]);
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  spin<<<1, 32, 0, s>>>(1000);
  CK(cudaStreamSynchronize(s));
  if (!strcmp(mode, "be")) {
    double secs = atof(argv[3]);
    const char *out = argv[4];
    int blocks = p.multiProcessorCount * 4;
    const int Q = 8;
    cudaEvent_t ev[Q];
    for (int i = 0; i < Q; i++) CK(cudaEventCreateWithFlags(&ev[i], cudaEventDisableTiming));
    long n = 0;
    double t0 = now_s();
    while (now_s() - t0 < secs) {
      if (n >= Q) CK(cudaEventSynchronize(ev[n % Q]));
      spin<<<blocks, 256, 0, s>>>((unsigned long long)(kernel_us * 1e3));
      CK(cudaEventRecord(ev[n % Q], s));
      n++;
    }
    CK(cudaStreamSynchronize(s));
    double el = now_s() - t0;
    FILE *f = fopen(out, "w");
    fprintf(f, "{\"mode\":\"be\",\"kernel_us\":%.1f,\"kernels\":%ld,\"seconds\":%.3f,\"kernels_per_s\":%.2f,\"busy_fraction\":%.4f}\n",
            kernel_us, n, el, n / el, n * kernel_us * 1e-6 / el);
    fclose(f);
    return 0;
  }
  double period_ms = atof(argv[3]), secs = atof(argv[4]);
  const char *out = argv[5];
  std::vector<double> lat;
  double t0 = now_s();
  while (now_s() - t0 < secs) {
    double a = now_s();
    spin<<<1, 32, 0, s>>>((unsigned long long)(kernel_us * 1e3));
    CK(cudaStreamSynchronize(s));
    lat.push_back((now_s() - a) * 1e6);
    double next = a + period_ms * 1e-3;
    while (now_s() < next) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  FILE *f = fopen(out, "w");
  fprintf(f, "{\"mode\":\"hp\",\"kernel_us\":%.1f,\"period_ms\":%.2f,\"requests\":%zu,"
             "\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,\"max_us\":%.1f,\"mean_us\":%.1f}\n",
          kernel_us, period_ms, lat.size(), pct(lat, .5), pct(lat, .9), pct(lat, .99),
          *std::max_element(lat.begin(), lat.end()),
          [&] { double x = 0; for (double v : lat) x += v; return x / lat.size(); }());
  fclose(f);
  return 0;
}
