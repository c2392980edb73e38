// Green-context probe: can an unmodified program's kernels be confined to a subset of SMs
// by launching them on a stream of a green context, and what does it buy a latency-critical
// kernel in the same process?
//
//   green_probe <be_sms> <seconds_per_mode> <out.json>
//
// Checks, each reported with the driver's result:
//   - a runtime-API kernel (<<<>>>), its CUfunction (cudaGetFuncBySymbol) and its CUkernel
//     (cudaGetKernel) launched with the primary context current onto a green-context stream,
//     and how many distinct SMs the launch used;
//   - the event chain Baton would use (app stream -> green stream -> app stream) keeps order:
//     a copy queued on the app stream after the chained kernel sees the kernel's result.
// Then, per mode, a best-effort thread floods 1 ms spin kernels (2 blocks of 1024 threads per
// SM, so no thread slot is left; at most 8
// outstanding) while a latency-critical thread times a 50 µs one-block kernel every 5 ms:
//   alone      HP only
//   shared     both on ordinary streams
//   priority   HP on the greatest-priority stream
//   green      BE on a green-context stream of be_sms SMs (launched directly)
//   green_chain  BE through the event chain on every launch (Baton's path)
#include <cuda.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <thread>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)
#define DK(x) do { CUresult r = (x); if (r != CUDA_SUCCESS) { const char *s = ""; cuGetErrorName(r, &s); fprintf(stderr, "%s: %s\n", #x, s); exit(1); } } while (0)

__device__ __forceinline__ unsigned long long gtime() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin(unsigned long long ns) {
  unsigned long long t0 = gtime();
  while (gtime() - t0 < ns) {
  }
}

// Each block spins a little and writes the SM it ran on.
__global__ void where(unsigned *smids, unsigned long long ns) {
  unsigned id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  unsigned long long t0 = gtime();
  while (gtime() - t0 < ns) {
  }
  if (threadIdx.x == 0) smids[blockIdx.x] = id;
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

static std::string rname(CUresult r) {
  const char *s = "?";
  cuGetErrorName(r, &s);
  return s;
}

static int distinct(unsigned *dev, int n) {
  std::vector<unsigned> h(n);
  CK(cudaMemcpy(h.data(), dev, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
  return (int)std::set<unsigned>(h.begin(), h.end()).size();
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: green_probe <be_sms> <seconds_per_mode> <out.json>\n");
    return 2;
  }
  unsigned want = atoi(argv[1]);
  double secs = atof(argv[2]);
  FILE *out = fopen(argv[3], "w");
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  CK(cudaFree(0));
  CUdevice dev;
  DK(cuDeviceGet(&dev, 0));

  CUdevResource all, group, rest;
  DK(cuDeviceGetDevResource(dev, &all, CU_DEV_RESOURCE_TYPE_SM));
  unsigned ngroups = 1;
  CUresult split = cuDevSmResourceSplitByCount(&group, &ngroups, &all, &rest, 0, want);
  CUdevResourceDesc desc;
  DK(cuDevResourceGenerateDesc(&desc, &group, 1));
  CUgreenCtx g;
  CUresult create = cuGreenCtxCreate(&g, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM);
  if (create != CUDA_SUCCESS) {
    fprintf(out, "{\"error\":\"cuGreenCtxCreate: %s\"}\n", rname(create).c_str());
    return 1;
  }
  CUstream gs;
  DK(cuGreenCtxStreamCreate(&gs, g, CU_STREAM_NON_BLOCKING, 0));
  fprintf(out, "{\"gpu\":\"%s\",\"sms\":%d,\"asked_sms\":%u,\"split\":\"%s\",\"green_sms\":%u,\"rest_sms\":%u",
          p.name, p.multiProcessorCount, want, rname(split).c_str(), group.sm.smCount, rest.sm.smCount);

  // Which launch forms work onto the green stream, with the primary context current?
  int nb = p.multiProcessorCount * 8;
  unsigned *smids;
  CK(cudaMalloc(&smids, nb * sizeof(unsigned)));
  CK(cudaMemset(smids, 0, nb * sizeof(unsigned)));
  where<<<nb, 64, 0, (cudaStream_t)gs>>>(smids, 20000);
  cudaError_t rt = cudaGetLastError();
  cudaError_t rts = cudaStreamSynchronize((cudaStream_t)gs);
  fprintf(out, ",\"runtime_launch\":\"%s/%s\",\"runtime_distinct_sms\":%d", cudaGetErrorName(rt),
          cudaGetErrorName(rts), rt == cudaSuccess && rts == cudaSuccess ? distinct(smids, nb) : -1);
  cudaFunction_t fn;
  CK(cudaGetFuncBySymbol(&fn, (const void *)where));
  unsigned long long ns = 20000;
  void *args[] = {&smids, &ns};
  CUresult dl = cuLaunchKernel((CUfunction)fn, nb, 1, 1, 64, 1, 1, 0, gs, args, nullptr);
  CUresult dls = cuStreamSynchronize(gs);
  fprintf(out, ",\"cufunction_launch\":\"%s/%s\",\"cufunction_distinct_sms\":%d", rname(dl).c_str(),
          rname(dls).c_str(), dl == CUDA_SUCCESS && dls == CUDA_SUCCESS ? distinct(smids, nb) : -1);
  cudaKernel_t k;
  cudaError_t gk = cudaGetKernel(&k, (const void *)where);
  if (gk == cudaSuccess) {
    CUresult kl = cuLaunchKernel((CUfunction)k, nb, 1, 1, 64, 1, 1, 0, gs, args, nullptr);
    CUresult kls = cuStreamSynchronize(gs);
    fprintf(out, ",\"cukernel_launch\":\"%s/%s\",\"cukernel_distinct_sms\":%d", rname(kl).c_str(),
            rname(kls).c_str(), kl == CUDA_SUCCESS && kls == CUDA_SUCCESS ? distinct(smids, nb) : -1);
  } else {
    fprintf(out, ",\"cukernel_launch\":\"cudaGetKernel %s\"", cudaGetErrorName(gk));
  }
  where<<<nb, 64>>>(smids, 20000);
  CK(cudaDeviceSynchronize());
  fprintf(out, ",\"ordinary_distinct_sms\":%d", distinct(smids, nb));

  // The event chain keeps the app stream's order.
  cudaStream_t app;
  CK(cudaStreamCreateWithFlags(&app, cudaStreamNonBlocking));
  CUevent in, done;
  DK(cuEventCreate(&in, CU_EVENT_DISABLE_TIMING));
  DK(cuEventCreate(&done, CU_EVENT_DISABLE_TIMING));
  int ok = 1;
  for (int round = 0; round < 20 && ok; round++) {
    CK(cudaMemsetAsync(smids, 0xff, nb * sizeof(unsigned), app));
    DK(cuEventRecord(in, (CUstream)app));
    DK(cuStreamWaitEvent(gs, in, 0));
    DK(cuLaunchKernel((CUfunction)fn, nb, 1, 1, 64, 1, 1, 0, gs, args, nullptr));
    DK(cuEventRecord(done, gs));
    DK(cuStreamWaitEvent((CUstream)app, done, 0));
    std::vector<unsigned> h(nb);
    CK(cudaMemcpyAsync(h.data(), smids, nb * sizeof(unsigned), cudaMemcpyDeviceToHost, app));
    CK(cudaStreamSynchronize(app));
    for (unsigned v : h) ok &= v != 0xffffffffu;
  }
  fprintf(out, ",\"chain_keeps_order\":%s", ok ? "true" : "false");

  // Latency of a short HP kernel beside a BE flood, per mode.
  int lo, hi;
  CK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
  cudaStream_t hs, hps, bes;
  CK(cudaStreamCreateWithFlags(&hs, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithPriority(&hps, cudaStreamNonBlocking, hi));
  CK(cudaStreamCreateWithFlags(&bes, cudaStreamNonBlocking));
  fprintf(out, ",\"modes\":{");
  const char *modes[] = {"alone", "shared", "priority", "green", "green_chain"};
  for (int m = 0; m < 5; m++) {
    std::string mode = modes[m];
    std::atomic<bool> stop{false};
    std::atomic<long> be_n{0};
    std::thread be([&] {
      if (mode == "alone") return;
      CK(cudaSetDevice(0));
      const int Q = 8;
      CUevent ev[Q];
      for (int i = 0; i < Q; i++) DK(cuEventCreate(&ev[i], CU_EVENT_DISABLE_TIMING));
      unsigned long long kns = 1000000;
      void *kargs[] = {&kns};
      cudaFunction_t sf;
      CK(cudaGetFuncBySymbol(&sf, (const void *)spin));
      long n = 0;
      CUstream target = mode == "green" ? gs : (CUstream)bes;
      while (!stop.load()) {
        if (n >= Q) DK(cuEventSynchronize(ev[n % Q]));
        if (mode == "green_chain") {
          DK(cuEventRecord(in, (CUstream)bes));
          DK(cuStreamWaitEvent(gs, in, 0));
          DK(cuLaunchKernel((CUfunction)sf, p.multiProcessorCount * 2, 1, 1, 1024, 1, 1, 0, gs, kargs, nullptr));
          DK(cuEventRecord(done, gs));
          DK(cuStreamWaitEvent((CUstream)bes, done, 0));
        } else {
          DK(cuLaunchKernel((CUfunction)sf, p.multiProcessorCount * 2, 1, 1, 1024, 1, 1, 0, target, kargs, nullptr));
        }
        DK(cuEventRecord(ev[n % Q], mode == "green" ? gs : (CUstream)bes));
        n++;
        be_n.store(n);
      }
      DK(cuStreamSynchronize(mode == "green" ? gs : (CUstream)bes));
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cudaStream_t s = mode == "priority" ? hps : hs;
    std::vector<double> lat;
    long be0 = be_n.load();
    double t0 = now_s();
    while (now_s() - t0 < secs) {
      double a = now_s();
      spin<<<1, 32, 0, s>>>(50000);
      CK(cudaStreamSynchronize(s));
      lat.push_back((now_s() - a) * 1e6);
      double next = a + 5e-3;
      while (now_s() < next) std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    double el = now_s() - t0;
    long be1 = be_n.load();
    stop = true;
    be.join();
    fprintf(out, "%s\"%s\":{\"hp_n\":%zu,\"hp_p50_us\":%.1f,\"hp_p90_us\":%.1f,\"hp_p99_us\":%.1f,\"hp_max_us\":%.1f,\"be_kernels_per_s\":%.2f}",
            m ? "," : "", modes[m], lat.size(), pct(lat, .5), pct(lat, .9), pct(lat, .99),
            *std::max_element(lat.begin(), lat.end()), (be1 - be0) / el);
    fflush(out);
  }
  fprintf(out, "}}\n");
  fclose(out);
  return 0;
}
