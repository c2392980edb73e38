// CPU cost of launching, on the application's thread:
//  launch_ns:    an empty kernel launched in batches of B (default 256) with no synchronization
//                inside a batch, host time per launch; the stream is drained between batches
//                (untimed) so the driver's queue never fills and back-pressure is not measured.
//  roundtrip_ns: launch + cudaStreamSynchronize, host time per round trip.
// Prints one JSON line: per-repetition medians over the batches (launch) and per-repetition
// means (round trip), so the caller can take medians and spread.
// Usage: launch_overhead [BATCHES] [REPS] [stream: legacy|created] [B]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

__global__ void empty() {}

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); exit(2); } } while (0)

int main(int argc, char** argv) {
  int batches = argc > 1 ? atoi(argv[1]) : 200;
  int reps = argc > 2 ? atoi(argv[2]) : 15;
  bool created = argc > 3 && strcmp(argv[3], "created") == 0;
  int b = argc > 4 ? atoi(argv[4]) : 256;
  cudaStream_t s = 0; if (created) CK(cudaStreamCreate(&s));
  for (int i = 0; i < 1000; i++) empty<<<1, 1, 0, s>>>();  // warm up
  CK(cudaStreamSynchronize(s));
  using clk = std::chrono::steady_clock;
  printf("{\"stream\":\"%s\",\"batch\":%d,\"batches\":%d,\"launch_ns\":[", created ? "created" : "legacy", b, batches);
  std::vector<double> per(batches);
  for (int r = 0; r < reps; r++) {
    for (int k = 0; k < batches; k++) {
      auto t0 = clk::now();
      for (int i = 0; i < b; i++) empty<<<1, 1, 0, s>>>();
      auto t1 = clk::now();
      CK(cudaStreamSynchronize(s));
      per[k] = std::chrono::duration<double, std::nano>(t1 - t0).count() / b;
    }
    std::nth_element(per.begin(), per.begin() + batches / 2, per.end());
    printf("%s%.2f", r ? "," : "", per[batches / 2]);
  }
  CK(cudaGetLastError());
  printf("],\"roundtrip_ns\":[");
  int m = 2000;
  for (int r = 0; r < reps; r++) {
    auto t0 = clk::now();
    for (int i = 0; i < m; i++) { empty<<<1, 1, 0, s>>>(); CK(cudaStreamSynchronize(s)); }
    auto t1 = clk::now();
    printf("%s%.2f", r ? "," : "", std::chrono::duration<double, std::nano>(t1 - t0).count() / m);
  }
  printf("]}\n");
  return 0;
}
