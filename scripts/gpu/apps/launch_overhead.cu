// CPU cost of launching: (1) an empty kernel launched N times in a loop, host time per launch
// (no synchronization inside the loop); (2) launch + cudaStreamSynchronize round trip.
// Repeats each measurement R times and prints every repetition as JSON, so the caller can take
// medians and spread. Usage: launch_overhead [N] [R] [stream: legacy|created]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

__global__ void empty() {}

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); exit(2); } } while (0)

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 20000;
  int reps = argc > 2 ? atoi(argv[2]) : 15;
  bool created = argc > 3 && strcmp(argv[3], "created") == 0;
  cudaStream_t s = 0; if (created) CK(cudaStreamCreate(&s));
  for (int i = 0; i < 1000; i++) empty<<<1, 1, 0, s>>>();  // warm up
  CK(cudaStreamSynchronize(s));
  using clk = std::chrono::steady_clock;
  printf("{\"stream\":\"%s\",\"n\":%d,\"launch_ns\":[", created ? "created" : "legacy", n);
  for (int r = 0; r < reps; r++) {
    auto t0 = clk::now();
    for (int i = 0; i < n; i++) empty<<<1, 1, 0, s>>>();
    auto t1 = clk::now();
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(s));
    printf("%s%.2f", r ? "," : "", std::chrono::duration<double, std::nano>(t1 - t0).count() / n);
  }
  printf("],\"roundtrip_ns\":[");
  int m = n / 10;
  for (int r = 0; r < reps; r++) {
    auto t0 = clk::now();
    for (int i = 0; i < m; i++) { empty<<<1, 1, 0, s>>>(); CK(cudaStreamSynchronize(s)); }
    auto t1 = clk::now();
    printf("%s%.2f", r ? "," : "", std::chrono::duration<double, std::nano>(t1 - t0).count() / m);
  }
  printf("]}\n");
  return 0;
}
