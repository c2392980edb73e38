// Which dynamic shared memory limit the driver enforces for a library kernel launched as a
// function, as the CUDA runtime launches its kernels (scripts/gpu/transparency/run.sh builds
// it; run.py --probe runs it once and keeps its JSON line). It answers, on the machine at
// hand:
// - how the driver takes a CUkernel in the cuFunc* calls (attributes, parameter layout);
// - which value the runtime's cudaFuncSetAttribute sets: the kernel's (per device) or its
//   function's (per context);
// - which of the two a launch of the kernel's handle meets, and whether a function's value,
//   once set, overrides the kernel's whatever the order;
// - whether a limit lowered below the default 48 KiB is enforced.
//
//   nvcc -O2 -arch=sm_90 -o attribute_probe attribute_probe.cu -lcuda && ./attribute_probe
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <string>

template <int N>
__global__ void probe_kernel(int* out) {
  extern __shared__ int dyn[];
  dyn[threadIdx.x] = threadIdx.x + N;
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd(out, dyn[0]);
}

__global__ void static_kernel(int* out) {
  __shared__ int fixed[4096];  // 16 KiB of static shared memory
  fixed[threadIdx.x] = threadIdx.x;
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd(out, fixed[0] + 1);
}

static std::string json;

static void put(const char* key, long long v) {
  json += (json.empty() ? "{" : ",") + std::string("\"") + key + "\":" + std::to_string(v);
}

static const int LIMIT = CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;

static int func_limit(CUfunction f) {
  int v = -1;
  return cuFuncGetAttribute(&v, (CUfunction_attribute)LIMIT, f) == CUDA_SUCCESS ? v : -1;
}

static int kernel_limit(CUkernel k, CUdevice dev) {
  int v = -1;
  return cuKernelGetAttribute(&v, (CUfunction_attribute)LIMIT, k, dev) == CUDA_SUCCESS ? v : -1;
}

// A launch of `f` asking for `shared` bytes, synchronized: the driver's answer to the launch.
static int launch(CUfunction f, unsigned shared, CUdeviceptr out) {
  void* args[] = {&out};
  CUresult r = cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, shared, 0, args, nullptr);
  if (r == CUDA_SUCCESS) r = cuCtxSynchronize();
  return (int)r;
}

int main() {
  if (cudaFree(nullptr) != cudaSuccess) {
    std::printf("{\"error\":\"no CUDA device\"}\n");
    return 1;
  }
  CUdevice dev = 0;
  cuCtxGetDevice(&dev);
  int* out_ptr = nullptr;
  cudaMalloc(&out_ptr, sizeof(int));
  CUdeviceptr out = (CUdeviceptr)out_ptr;

  // 1. How the driver takes a kernel handle in the function calls.
  cudaKernel_t rk1, rk2, rk3, rk4;
  cudaGetKernel(&rk1, probe_kernel<1>);
  cudaGetKernel(&rk2, probe_kernel<2>);
  cudaGetKernel(&rk3, probe_kernel<3>);
  cudaGetKernel(&rk4, static_kernel);
  CUkernel k1 = (CUkernel)rk1, k2 = (CUkernel)rk2, k3 = (CUkernel)rk3, k4 = (CUkernel)rk4;
  int v = 0;
  size_t off = 0, size = 0;
  put("func_get_attribute_on_kernel", cuFuncGetAttribute(&v, (CUfunction_attribute)LIMIT, (CUfunction)k1));
  put("func_set_attribute_on_kernel", cuFuncSetAttribute((CUfunction)k3, (CUfunction_attribute)LIMIT, 48 * 1024));
  put("func_get_param_info_on_kernel", cuFuncGetParamInfo((CUfunction)k1, 0, &off, &size));
  put("func_get_param_info_on_kernel_size", (long long)size);
  off = size = 0;
  put("kernel_get_param_info", cuKernelGetParamInfo(k1, 0, &off, &size));
  put("kernel_get_param_info_size", (long long)size);
  put("kernel_get_param_info_past_end", cuKernelGetParamInfo(k1, 1, &off, &size));
  CUfunction f1, f2, f3, f4;
  cuKernelGetFunction(&f1, k1);
  cuKernelGetFunction(&f2, k2);
  cuKernelGetFunction(&f3, k3);
  cuKernelGetFunction(&f4, k4);
  off = size = 0;
  put("func_get_param_info_on_function", cuFuncGetParamInfo(f1, 0, &off, &size));
  cudaFunction_t rf1;
  cudaGetFuncBySymbol(&rf1, reinterpret_cast<const void*>(probe_kernel<1>));
  put("runtime_function_is_kernel_function", (CUfunction)rf1 == f1);
  put("default_kernel_limit", kernel_limit(k1, dev));
  put("default_function_limit", func_limit(f1));
  put("static16k_function_limit", func_limit(f4));
  put("static16k_kernel_limit", kernel_limit(k4, dev));
  put("static16k_launch_40k", launch((CUfunction)k4, 40 * 1024, out));

  // 2. What the runtime's cudaFuncSetAttribute sets.
  cudaFuncSetAttribute(probe_kernel<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, 100 * 1024);
  put("runtime_raise_kernel_limit", kernel_limit(k1, dev));
  put("runtime_raise_function_limit", func_limit(f1));
  cudaFuncSetAttribute(probe_kernel<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, 20 * 1024);
  put("runtime_lower_kernel_limit", kernel_limit(k1, dev));
  put("runtime_lower_function_limit", func_limit(f1));
  put("runtime_lower_launch_kernel_32k", launch((CUfunction)k1, 32 * 1024, out));
  put("runtime_lower_launch_kernel_16k", launch((CUfunction)k1, 16 * 1024, out));

  // 3. Which value a launch of the kernel's handle meets.
  put("k_set_100k", cuKernelSetAttribute((CUfunction_attribute)LIMIT, 100 * 1024, k2, dev));
  put("k_set_100k_function_limit", func_limit(f2));
  put("k_set_100k_launch_kernel_64k", launch((CUfunction)k2, 64 * 1024, out));
  put("k_set_100k_launch_function_64k", launch(f2, 64 * 1024, out));
  put("f_set_32k", cuFuncSetAttribute(f2, (CUfunction_attribute)LIMIT, 32 * 1024));
  put("f_set_32k_kernel_limit", kernel_limit(k2, dev));
  put("f_set_32k_function_limit", func_limit(f2));
  put("f_set_32k_launch_kernel_64k", launch((CUfunction)k2, 64 * 1024, out));
  put("k_set_120k_after", cuKernelSetAttribute((CUfunction_attribute)LIMIT, 120 * 1024, k2, dev));
  put("k_set_120k_after_kernel_limit", kernel_limit(k2, dev));
  put("k_set_120k_after_function_limit", func_limit(f2));
  put("k_set_120k_after_launch_kernel_64k", launch((CUfunction)k2, 64 * 1024, out));
  put("f_set_100k", cuFuncSetAttribute(f2, (CUfunction_attribute)LIMIT, 100 * 1024));
  put("f_set_100k_launch_kernel_64k", launch((CUfunction)k2, 64 * 1024, out));

  // 4. A limit lowered below the default.
  put("k_lower_16k", cuKernelSetAttribute((CUfunction_attribute)LIMIT, 16 * 1024, k3, dev));
  put("k_lower_16k_function_limit", func_limit(f3));
  put("k_lower_16k_launch_kernel_32k", launch((CUfunction)k3, 32 * 1024, out));
  put("k_lower_16k_launch_kernel_8k", launch((CUfunction)k3, 8 * 1024, out));
  int driver = 0;
  cuDriverGetVersion(&driver);
  put("driver_version", driver);
  std::printf("%s}\n", json.c_str());
  return 0;
}
