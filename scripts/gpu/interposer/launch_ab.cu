// Baton's added CPU cost per launch, measured inside one process so that nothing but the
// path differs: batches of B empty-kernel launches alternate between
//   direct: the real driver's cuLaunchKernel (looked up in libcuda's own symbol table, so no
//           interposer sees the call), and
//   hooked: `cuLaunchKernel` looked up by name in the driver library, as the CUDA runtime does
//           (Baton's hook when it is preloaded; the real function again when it is not — the
//           control).
// Same kernel, arguments, stream and core; the stream is drained (untimed) between batches.
// Prints one JSON line with per-batch host times per launch for both paths and the paired
// differences. Only for a queue nothing suspends (the direct path bypasses Baton's ordering).
// With EVICT_KB > 0 the program writes EVICT_KB KiB of memory before each launch (untimed; each
// launch is timed alone), as a framework's own work between launches does: the launch path then
// starts with cold caches, and the difference shows what Baton's cache footprint costs.
// Usage: launch_ab [PAIRS] [legacy|created] [B] [EVICT_KB]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>

__global__ void empty() {}

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); exit(2); } } while (0)

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, CUstream, void**, void**);

// `name` as libcuda.so.1 itself defines it, read from its dynamic symbol table (dlsym could be
// answered by an interposer).
static void* real_symbol(const char* name) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!h) h = dlopen("libcuda.so.1", RTLD_NOW);
  struct link_map* lm = nullptr;
  if (!h || dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm) return nullptr;
  auto fix = [&](ElfW(Addr) p) { return p < lm->l_addr ? p + lm->l_addr : p; };
  const ElfW(Sym)* sym = nullptr;
  const char* str = nullptr;
  const ElfW(Word)* hash = nullptr;
  for (ElfW(Dyn)* d = lm->l_ld; d->d_tag != DT_NULL; d++) {
    if (d->d_tag == DT_SYMTAB) sym = (const ElfW(Sym)*)fix(d->d_un.d_ptr);
    if (d->d_tag == DT_STRTAB) str = (const char*)fix(d->d_un.d_ptr);
    if (d->d_tag == DT_HASH) hash = (const ElfW(Word)*)fix(d->d_un.d_ptr);
  }
  if (!sym || !str) return nullptr;
  // With DT_HASH the symbol count is its chain count; otherwise the table ends where the
  // string table begins (how linkers lay them out).
  size_t n = hash ? hash[1] : (size_t)((const char*)str - (const char*)sym) / sizeof(ElfW(Sym));
  for (size_t i = 0; i < n; i++) {
    if (sym[i].st_value && ELF64_ST_TYPE(sym[i].st_info) == STT_FUNC && strcmp(str + sym[i].st_name, name) == 0)
      return (void*)(lm->l_addr + sym[i].st_value);
  }
  return nullptr;
}

static double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

int main(int argc, char** argv) {
  int pairs = argc > 1 ? atoi(argv[1]) : 400;
  bool created = argc > 2 && strcmp(argv[2], "created") == 0;
  int b = argc > 3 ? atoi(argv[3]) : 256;
  size_t evict = argc > 4 ? (size_t)atoi(argv[4]) * 1024 : 0;
  std::vector<unsigned char> scratch(evict);
  unsigned char round = 0;
  cudaStream_t s = 0;
  if (created) CK(cudaStreamCreate(&s));
  for (int i = 0; i < 1000; i++) empty<<<1, 1, 0, s>>>();
  CK(cudaStreamSynchronize(s));
  cudaFunction_t fn;
  CK(cudaGetFuncBySymbol(&fn, (const void*)empty));
  launch_fn direct = (launch_fn)real_symbol("cuLaunchKernel");
  // As the runtime finds it: by name in the driver library (answered by Baton's dlsym when
  // Baton is preloaded).
  launch_fn hooked = (launch_fn)dlsym(dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD), "cuLaunchKernel");
  if (!direct || !hooked) { fprintf(stderr, "cannot find cuLaunchKernel\n"); return 2; }
  CUstream cs = (CUstream)s;
  auto launch = [&](launch_fn f) {
    if (f((CUfunction)fn, 1, 1, 1, 1, 1, 1, 0, cs, nullptr, nullptr) != CUDA_SUCCESS) { fprintf(stderr, "launch failed\n"); exit(2); }
  };
  auto batch = [&](launch_fn f) {
    double ns = 0;
    if (evict == 0) {
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < b; i++) launch(f);
      ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    } else {
      for (int i = 0; i < b; i++) {
        round++;
        for (size_t j = 0; j < evict; j += 64) scratch[j] += round;
        auto t0 = std::chrono::steady_clock::now();
        launch(f);
        ns += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
      }
    }
    CK(cudaStreamSynchronize(s));
    return ns / b;
  };
  for (int i = 0; i < 20; i++) { batch(direct); batch(hooked); }
  std::vector<double> d, h, diff;
  for (int p = 0; p < pairs; p++) {
    double x, y;
    if (p % 2) { x = batch(direct); y = batch(hooked); } else { y = batch(hooked); x = batch(direct); }
    d.push_back(x); h.push_back(y); diff.push_back(y - x);
  }
  std::vector<double> sd = diff;
  std::sort(sd.begin(), sd.end());
  volatile unsigned char keep = scratch.empty() ? 0 : scratch[0];
  (void)keep;
  printf("{\"stream\":\"%s\",\"evict_kb\":%zu,\"batch\":%d,\"pairs\":%d,\"same_function\":%s,\"direct_ns\":%.1f,\"hooked_ns\":%.1f,"
         "\"added_ns_median\":%.1f,\"added_ns_p25\":%.1f,\"added_ns_p75\":%.1f,\"added_ns_p99\":%.1f}\n",
         created ? "created" : "legacy", evict / 1024, b, pairs, direct == hooked ? "true" : "false", median(d), median(h),
         median(diff), sd[sd.size() / 4], sd[sd.size() * 3 / 4], sd[sd.size() * 99 / 100]);
  return 0;
}
