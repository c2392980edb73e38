// The other program of a contended transparency run (run.py):
//   contender flood SECONDS          best-effort flood: 1 ms kernels on every SM, 4 in flight
//   contender prober SEED SECONDS    latency-critical bursts at random moments: sleep 0.2–4 ms
//                                    (seeded), then 8 kernels of ~40 µs and a synchronization
// Either stops after SECONDS or at SIGTERM, printing {"role": ..., "kernels": N}.
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(2); } } while (0)

__global__ void spin(long long cycles, int* sink) {
  long long start = clock64();
  while (clock64() - start < cycles) {}
  if (threadIdx.x == 0 && blockIdx.x == 0) atomicAdd(sink, 1);
}

static std::atomic<bool> stop{false};
static void on_term(int) { stop.store(true); }

int main(int argc, char** argv) {
  if (argc < 3) { fprintf(stderr, "usage: contender flood SECONDS | prober SEED SECONDS\n"); return 2; }
  bool flood = strcmp(argv[1], "flood") == 0;
  unsigned seed = flood ? 0 : (unsigned)atoi(argv[2]);
  double seconds = atof(argv[flood ? 2 : 3]);
  signal(SIGTERM, on_term);
  int sms, khz;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
  int* sink; CK(cudaMalloc(&sink, sizeof(int)));
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t ev[4];
  for (auto& e : ev) CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> sleep_us(200, 4000);
  long kernels = 0;
  while (!stop.load() && std::chrono::steady_clock::now() < until) {
    if (flood) {
      int slot = kernels % 4;
      if (kernels >= 4) CK(cudaEventSynchronize(ev[slot]));
      spin<<<sms * 2, 128, 0, s>>>((long long)khz * 1, sink);  // ~1 ms
      CK(cudaEventRecord(ev[slot], s));
      kernels++;
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(sleep_us(rng)));
      for (int k = 0; k < 8; k++) spin<<<sms, 64, 0, s>>>((long long)khz * 40 / 1000, sink);
      CK(cudaStreamSynchronize(s));
      kernels += 8;
    }
  }
  CK(cudaStreamSynchronize(s));
  printf("{\"role\": \"%s\", \"kernels\": %ld}\n", flood ? "flood" : "prober", kernels);
  return 0;
}
