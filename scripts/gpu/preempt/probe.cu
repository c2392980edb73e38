// Hand-over probe: how long a small kernel of one process waits for the GPU while another
// process keeps every SM busy, by the busy process's CTA length and state size.
//
//   probe be <cta_us> <kernel_us> <seconds>
//       kernels of kernel_us made of CTAs that each spin cta_us (4 per SM, 256 threads, 48 KiB
//       of shared memory each and ~48 live registers a thread, so a switch at the instruction
//       level has a full SM's state to save), at most 8 outstanding; prints the share of the
//       time its kernels ran as they would alone, and any CUDA error at the end.
//   probe hp <period_us> <seconds>
//       every period_us (planned, open loop) one 5 us kernel of one CTA, waited for;
//       prints the latency from the planned launch to its completion (p50/p90/p99/max).
#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("error %s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

__device__ unsigned long long now_ns() { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }

// Thread 0 of each CTA also counts the stretches of more than 20 us between two reads of
// the clock, when the CTA was not running (its context switched out): gaps[0] their number,
// gaps[1] their total length in ns.
__global__ void __launch_bounds__(256, 4) spin(float *out, unsigned long long ns, unsigned long long *gaps) {
  extern __shared__ float tile[];
  float acc[40];
  for (int i = 0; i < 40; i++) acc[i] = threadIdx.x * 1e-3f + i;
  for (int i = threadIdx.x; i < 12 * 1024; i += blockDim.x) tile[i] = acc[i % 40];
  __syncthreads();
  unsigned long long prev = now_ns(), end = prev + ns, n = 0, total = 0;
  for (;;) {
    unsigned long long t = now_ns();
    if (t - prev > 20000) { n++; total += t - prev; }
    prev = t;
    if (t >= end) break;
#pragma unroll
    for (int i = 0; i < 40; i++) acc[i] = fmaf(acc[i], 0.999f, tile[(threadIdx.x + i) % (12 * 1024)]);
  }
  float s = 0;
#pragma unroll
  for (int i = 0; i < 40; i++) s += acc[i];
  if (s == 12345.f) out[blockIdx.x] = s;
  if (threadIdx.x == 0 && n) { atomicAdd(&gaps[0], n); atomicAdd(&gaps[1], total); }
}

static double now_us() { return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: probe be <cta_us> <kernel_us> <s> | hp <period_us> <s>\n"); return 2; }
  float *d; CK(cudaMalloc(&d, 1 << 20));
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  unsigned long long *gaps; CK(cudaMalloc(&gaps, 16)); CK(cudaMemset(gaps, 0, 16));
  const int smem = (getenv("SMEM_KB") ? atoi(getenv("SMEM_KB")) : 48) * 1024;
  CK(cudaFuncSetAttribute(spin, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  if (!strcmp(argv[1], "be")) {
    double cta = atof(argv[2]), kern = atof(argv[3]), secs = atof(argv[4]);
    int waves = std::max(1, (int)(kern / cta + 0.5));
    int grid = sms * 4 * waves;
    const int Q = 8; cudaEvent_t ev[Q];
    for (int i = 0; i < Q; i++) CK(cudaEventCreateWithFlags(&ev[i], cudaEventDisableTiming));
    spin<<<grid, 256, smem, s>>>(d, (unsigned long long)(cta * 1000), gaps); CK(cudaStreamSynchronize(s));
    CK(cudaMemset(gaps, 0, 16));
    double t0 = now_us(); long k = 0;
    while (now_us() - t0 < secs * 1e6) {
      if (k >= Q) cudaEventSynchronize(ev[k % Q]);
      spin<<<grid, 256, smem, s>>>(d, (unsigned long long)(cta * 1000), gaps);
      cudaEventRecord(ev[k % Q], s); k++;
    }
    cudaError_t e = cudaStreamSynchronize(s);
    double el = now_us() - t0;
    unsigned long long g[2] = {0, 0}; cudaMemcpy(g, gaps, 16, cudaMemcpyDeviceToHost);
    printf("be cta_us=%g kernel_us=%g waves=%d kernels=%ld share=%.3f gaps_per_cta_s=%.1f mean_gap_us=%.1f error=%s\n", cta, waves * cta, waves, k, k * waves * cta / el,
           g[0] / (el / 1e6) / (sms * 4.0), g[0] ? g[1] / 1e3 / g[0] : 0.0,
           cudaGetErrorString(e != cudaSuccess ? e : cudaGetLastError()));
  } else {
    double period = atof(argv[2]), secs = atof(argv[3]);
    std::vector<double> lat;
    spin<<<1, 32, smem, s>>>(d, 5000, gaps); CK(cudaStreamSynchronize(s));
    double t0 = now_us(), planned = t0 + period;
    while (planned - t0 < secs * 1e6) {
      while (now_us() < planned) {}
      spin<<<1, 32, smem, s>>>(d, 5000, gaps);
      CK(cudaStreamSynchronize(s));
      lat.push_back(now_us() - planned);
      planned += period;
    }
    std::sort(lat.begin(), lat.end()); size_t n = lat.size();
    printf("hp n=%zu p50=%.0f p90=%.0f p99=%.0f max=%.0f us\n", n, lat[n / 2], lat[n * 9 / 10], lat[n * 99 / 100], lat[n - 1]);
  }
  return 0;
}
