// A CUDA runtime program using the stream features a scheduler must keep exact, for the
// transparency check under contention (run.py). Built twice: with the legacy default stream
// (cuda-legacy) and with `--default-stream per-thread` (cuda-ptds). Each of 30 rounds:
// default-stream and blocking-stream work that CUDA orders implicitly; events across
// non-blocking streams; copies from pageable memory (the buffer is overwritten as soon as the
// call returns) and from pinned memory (reused after an event); stream-ordered allocation freed
// on one stream and allocated again on another; a host function; and every tenth round a graph
// captured in global, thread-local or relaxed mode while a second thread keeps launching on its
// own stream, then replayed. Prints {"workload": NAME, "digest": ...} as its last line.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
#include <cuda_runtime.h>

#ifndef NAME
#define NAME "cuda-legacy"
#endif

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(2); } } while (0)

__global__ void fill(float* x, int n, float v) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = v + (i % 97) * 1e-3f; }
__global__ void axpy(float* y, const float* x, int n, float a) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }
__global__ void mix(float* y, const float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 0.5f * y[i] + sinf(x[i]); }
__global__ void add_scalar(float* y, int n, float a) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] += a; }

static void host_fn(void* p) { *(int*)p += 1; }

static uint64_t fnv(const void* p, size_t n, uint64_t h) {
  const unsigned char* b = (const unsigned char*)p;
  for (size_t i = 0; i < n; i++) { h ^= b[i]; h *= 1099511628211ull; }
  return h;
}

int main() {
  const int n = 1 << 20, blk = 256, grd = (n + blk - 1) / blk;
  const size_t bytes = n * sizeof(float);
  cudaStream_t blocking, nb1, nb2, cap, side;
  CK(cudaStreamCreate(&blocking));
  CK(cudaStreamCreateWithFlags(&nb1, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&nb2, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&cap, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  float *x, *y, *z, *w, *side_buf;
  CK(cudaMalloc(&x, bytes)); CK(cudaMalloc(&y, bytes)); CK(cudaMalloc(&z, bytes));
  CK(cudaMalloc(&w, bytes)); CK(cudaMalloc(&side_buf, bytes));
  CK(cudaMemset(y, 0, bytes)); CK(cudaMemset(z, 0, bytes)); CK(cudaMemset(w, 0, bytes));
  CK(cudaMemset(side_buf, 0, bytes));
  std::vector<float> pageable(n);
  float *pinned_in, *pinned_out;
  CK(cudaMallocHost(&pinned_in, bytes)); CK(cudaMallocHost(&pinned_out, bytes));
  cudaEvent_t ev, in_done, out_done;
  CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  CK(cudaEventCreateWithFlags(&in_done, cudaEventDisableTiming));
  CK(cudaEventCreateWithFlags(&out_done, cudaEventDisableTiming));
  int* host_counter; CK(cudaMallocHost(&host_counter, sizeof(int))); *host_counter = 0;
  uint64_t h = 1469598103934665603ull;
  const cudaStreamCaptureMode modes[3] = {cudaStreamCaptureModeGlobal, cudaStreamCaptureModeThreadLocal,
                                          cudaStreamCaptureModeRelaxed};

  for (int r = 0; r < 30; r++) {
    // The legacy stream, then a blocking stream CUDA orders after it, then the legacy stream
    // again (named explicitly, so the per-thread build uses it too).
    fill<<<grd, blk, 0, cudaStreamLegacy>>>(x, n, 1.0f + r);
    axpy<<<grd, blk, 0, blocking>>>(y, x, n, 0.25f);
    mix<<<grd, blk, 0, cudaStreamLegacy>>>(y, x, n);
    // Pageable source: the driver has taken it when the call returns; overwrite it at once.
    for (int i = 0; i < n; i++) pageable[i] = (float)((i * 7 + r) % 101);
    CK(cudaMemcpyAsync(z, pageable.data(), bytes, cudaMemcpyHostToDevice, blocking));
    for (int i = 0; i < n; i++) pageable[i] = -1.0f;
    axpy<<<grd, blk, 0, blocking>>>(y, z, n, 0.125f);
    // Non-blocking streams joined by an event.
    CK(cudaEventRecord(ev, blocking));
    CK(cudaStreamWaitEvent(nb1, ev, 0));
    mix<<<grd, blk, 0, nb1>>>(z, y, n);
    // Pinned input reused only after its copy is done.
    for (int i = 0; i < n; i++) pinned_in[i] = (float)((i + r) % 13);
    CK(cudaMemcpyAsync(w, pinned_in, bytes, cudaMemcpyHostToDevice, nb1));
    CK(cudaEventRecord(in_done, nb1));
    axpy<<<grd, blk, 0, nb1>>>(z, w, n, 0.5f);
    CK(cudaEventSynchronize(in_done));
    for (int i = 0; i < n; i++) pinned_in[i] = -7.0f;
    // Stream-ordered allocation: freed on nb1, allocated again on nb2 after an event.
    float* tmp;
    CK(cudaMallocAsync(&tmp, bytes, nb1));
    fill<<<grd, blk, 0, nb1>>>(tmp, n, 3.0f + r);
    axpy<<<grd, blk, 0, nb1>>>(z, tmp, n, 0.01f);
    CK(cudaFreeAsync(tmp, nb1));
    CK(cudaEventRecord(ev, nb1));
    CK(cudaStreamWaitEvent(nb2, ev, 0));
    float* tmp2;
    CK(cudaMallocAsync(&tmp2, bytes, nb2));
    CK(cudaMemsetAsync(tmp2, 0, bytes, nb2));
    axpy<<<grd, blk, 0, nb2>>>(tmp2, z, n, 2.0f);
    CK(cudaMemcpyAsync(pinned_out, tmp2, bytes, cudaMemcpyDeviceToHost, nb2));
    CK(cudaLaunchHostFunc(nb2, host_fn, host_counter));
    CK(cudaFreeAsync(tmp2, nb2));
    CK(cudaEventRecord(out_done, nb2));
    CK(cudaEventSynchronize(out_done));
    h = fnv(pinned_out, bytes, h);
    // The default stream (per-thread in the per-thread build), which the legacy stream's next
    // command follows.
    add_scalar<<<grd, blk>>>(y, n, 0.5f);

    if (r % 10 == 9) {
      // A graph captured while another thread launches on its own stream.
      std::atomic<int> phase{0};
      std::thread other([&] {
        while (phase.load() == 0) {}
        while (phase.load() == 1) add_scalar<<<grd, blk, 0, side>>>(side_buf, n, 1.0f);
        CK(cudaStreamSynchronize(side));
      });
      CK(cudaStreamSynchronize(nb1));
      CK(cudaStreamBeginCapture(cap, modes[(r / 10) % 3]));
      phase.store(1);
      mix<<<grd, blk, 0, cap>>>(z, x, n);
      CK(cudaMemsetAsync(w, 0, bytes, cap));
      axpy<<<grd, blk, 0, cap>>>(w, z, n, 1.5f);
      cudaGraph_t graph;
      CK(cudaStreamEndCapture(cap, &graph));
      phase.store(2);
      other.join();
      cudaGraphExec_t exec;
      CK(cudaGraphInstantiate(&exec, graph, 0));
      for (int k = 0; k < 3; k++) CK(cudaGraphLaunch(exec, cap));
      CK(cudaStreamSynchronize(cap));
      CK(cudaGraphExecDestroy(exec));
      CK(cudaGraphDestroy(graph));
    }
  }
  CK(cudaDeviceSynchronize());
  std::vector<float> back(n);
  for (float* p : {x, y, z, w}) {
    CK(cudaMemcpy(back.data(), p, bytes, cudaMemcpyDeviceToHost));
    h = fnv(back.data(), bytes, h);
  }
  // The side stream's count depends on timing; only its values' consistency is checked.
  CK(cudaMemcpy(back.data(), side_buf, bytes, cudaMemcpyDeviceToHost));
  bool side_ok = true;
  for (int i = 1; i < n; i++) side_ok &= back[i] == back[0];
  h = fnv(host_counter, sizeof(int), h);
  printf("{\"workload\": \"%s\", \"digest\": \"%016llx\", \"host_functions\": %d, \"side_consistent\": %s}\n",
         NAME, (unsigned long long)h, *host_counter, side_ok ? "true" : "false");
  return side_ok ? 0 : 3;
}
