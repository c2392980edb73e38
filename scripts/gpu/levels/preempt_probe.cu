// Preemption probe: a best-effort process saturating the GPU with spin kernels of a set
// length, and a latency-critical process timing short kernels against it.
//
//   preempt_probe be <kernel_us> <seconds> <out.json> [timeline.bin]
//       fills every SM with kernels that each spin for kernel_us, back to back, at most 8
//       outstanding (as a training loop that synchronizes now and then); reports kernels/s.
//       With timeline.bin, block 0 of each kernel also records when it ran on the GPU's
//       clock (%globaltimer): its start, its end and the gaps in between, when the GPU had
//       switched the context out (TIMELINE_WORDS little-endian u64 per kernel: start, end,
//       gap count, 0, then up to MAX_GAPS gap start/end pairs).
//   preempt_probe hp <kernel_us> <period_ms> <seconds> <out.json> [requests.csv]
//       every period_ms, one small kernel (one block) that spins for kernel_us, then waits
//       for it; reports the launch→completion latency (p50/p90/p99/max). Minus the same
//       figure with the GPU to itself, it is how long the kernel waited for the GPU.
//       With requests.csv, one line per request: the host's clock before the launch and
//       after the wait, and the kernel's start and end on the GPU's clock (all ns), from
//       which scripts/gpu/levels/preemption_timeline.py finds when the kernel started and when the
//       best-effort process stopped occupying the GPU.
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

constexpr int MAX_GAPS = 6;
constexpr int TIMELINE_WORDS = 4 + 2 * MAX_GAPS;
// A jump of the clock this long between two reads of one spinning thread means the thread
// did not run: the GPU had switched its context out.
constexpr unsigned long long GAP_NS = 4000;

// `spin`, with block 0 recording into `rec` (TIMELINE_WORDS words) when it ran.
__global__ void spin_traced(unsigned long long ns, unsigned long long *rec) {
  unsigned long long t0 = gtime();
  if (blockIdx.x != 0 || threadIdx.x != 0) {
    while (gtime() - t0 < ns) {
    }
    return;
  }
  unsigned long long prev = t0, t = t0, gaps = 0;
  while (t - t0 < ns) {
    t = gtime();
    if (t - prev > GAP_NS) {
      if (gaps < MAX_GAPS) {
        rec[4 + 2 * gaps] = prev;
        rec[5 + 2 * gaps] = t;
      }
      gaps++;
    }
    prev = t;
  }
  rec[0] = t0;
  rec[1] = t;
  rec[2] = gaps;
  rec[3] = 0;
}

// `spin` on one thread, writing its start and end on the GPU's clock to `stamp`.
__global__ void spin_stamped(unsigned long long ns, unsigned long long *stamp) {
  unsigned long long t0 = gtime(), t = t0;
  while (t - t0 < ns) t = gtime();
  if (threadIdx.x == 0) {
    stamp[0] = t0;
    stamp[1] = t;
  }
}

static long long mono_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
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
    const char *timeline = argc > 5 ? argv[5] : nullptr;
    int blocks = p.multiProcessorCount * 4;
    const int Q = 8;
    cudaEvent_t ev[Q];
    for (int i = 0; i < Q; i++) CK(cudaEventCreateWithFlags(&ev[i], cudaEventDisableTiming));
    // Room for every kernel of the run at 0.1 ms each, and then some.
    const long cap = timeline ? (long)(secs * 1e6 / std::max(kernel_us, 50.0)) + 1000 : 0;
    unsigned long long *rec = nullptr;
    if (timeline) {
      CK(cudaMalloc(&rec, cap * TIMELINE_WORDS * sizeof(unsigned long long)));
      CK(cudaMemset(rec, 0, cap * TIMELINE_WORDS * sizeof(unsigned long long)));
    }
    long n = 0;
    double t0 = now_s();
    while (now_s() - t0 < secs) {
      if (n >= Q) CK(cudaEventSynchronize(ev[n % Q]));
      unsigned long long ns = (unsigned long long)(kernel_us * 1e3);
      if (n < cap)
        spin_traced<<<blocks, 256, 0, s>>>(ns, rec + n * TIMELINE_WORDS);
      else
        spin<<<blocks, 256, 0, s>>>(ns);
      CK(cudaEventRecord(ev[n % Q], s));
      n++;
    }
    CK(cudaStreamSynchronize(s));
    double el = now_s() - t0;
    if (timeline) {
      long kept = std::min(n, cap);
      std::vector<unsigned long long> host(kept * TIMELINE_WORDS);
      CK(cudaMemcpy(host.data(), rec, host.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
      FILE *t = fopen(timeline, "wb");
      fwrite(host.data(), sizeof(unsigned long long), host.size(), t);
      fclose(t);
    }
    FILE *f = fopen(out, "w");
    fprintf(f, "{\"mode\":\"be\",\"kernel_us\":%.1f,\"kernels\":%ld,\"seconds\":%.3f,\"kernels_per_s\":%.2f,\"busy_fraction\":%.4f}\n",
            kernel_us, n, el, n / el, n * kernel_us * 1e-6 / el);
    fclose(f);
    return 0;
  }
  if (argc < 6) {
    fprintf(stderr, "usage: preempt_probe hp <kernel_us> <period_ms> <seconds> <out> [requests.csv]\n");
    return 2;
  }
  double period_ms = atof(argv[3]), secs = atof(argv[4]);
  const char *out = argv[5];
  FILE *requests = argc > 6 ? fopen(argv[6], "w") : nullptr;
  unsigned long long *stamp = nullptr;
  CK(cudaHostAlloc(&stamp, 2 * sizeof(unsigned long long), cudaHostAllocMapped));
  if (requests) fprintf(requests, "launch_host_ns,start_gpu_ns,end_gpu_ns,done_host_ns\n");
  std::vector<double> lat;
  double t0 = now_s();
  while (now_s() - t0 < secs) {
    double a = now_s();
    long long la = mono_ns();
    spin_stamped<<<1, 32, 0, s>>>((unsigned long long)(kernel_us * 1e3), stamp);
    CK(cudaStreamSynchronize(s));
    long long lc = mono_ns();
    lat.push_back((now_s() - a) * 1e6);
    if (requests) fprintf(requests, "%lld,%llu,%llu,%lld\n", la, stamp[0], stamp[1], lc);
    double next = a + period_ms * 1e-3;
    while (now_s() < next) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  if (requests) fclose(requests);
  FILE *f = fopen(out, "w");
  fprintf(f, "{\"mode\":\"hp\",\"kernel_us\":%.1f,\"period_ms\":%.2f,\"requests\":%zu,"
             "\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,\"max_us\":%.1f,\"mean_us\":%.1f}\n",
          kernel_us, period_ms, lat.size(), pct(lat, .5), pct(lat, .9), pct(lat, .99),
          *std::max_element(lat.begin(), lat.end()),
          [&] { double x = 0; for (double v : lat) x += v; return x / lat.size(); }());
  fclose(f);
  return 0;
}
