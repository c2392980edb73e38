/* A program that multiplies matrices with cuBLAS as frameworks do: linked with -lcublas (as
 * PyTorch and CuPy are), or, given the argument "dlsym", opening libcublas.so.13 and looking its
 * functions up (as JAX does). Given "service" it also makes a stream of the greatest CUDA
 * priority and launches a kernel on it first, so that a scheduler sees a more urgent queue
 * beside the GEMMs' stream.
 *
 * On its own stream it makes rounds of GEMMs through each entry point (cublasGemmEx,
 * cublasSgemm_v2 with a transposed operand and a result it adds to, cublasSgemmStridedBatched
 * adding to both results), then prints one line with a checksum of every round's results:
 * the same bits natively and under Baton, whether Baton splits the calls or not. */
#define _DEFAULT_SOURCE
#include <dlfcn.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>

#include "driver_api.h"

CUresult cuStreamCreateWithPriority(CUstream *stream, unsigned int flags, int priority);

typedef int (*create_fn)(void **);
typedef int (*set_stream_fn)(void *, CUstream);
typedef int (*gemm_ex_fn)(void *, int, int, int, int, int, const void *, const void *, int, int, const void *, int,
                          int, const void *, void *, int, int, int, int);
typedef int (*sgemm_fn)(void *, int, int, int, int, int, const float *, const float *, int, const float *, int,
                        const float *, float *, int);
typedef int (*strided_fn)(void *, int, int, int, int, int, const float *, const float *, int, long long,
                          const float *, int, long long, const float *, float *, int, long long, int);

#ifdef LINKED
int cublasCreate_v2(void **);
int cublasSetStream_v2(void *, CUstream);
int cublasGemmEx(void *, int, int, int, int, int, const void *, const void *, int, int, const void *, int, int,
                 const void *, void *, int, int, int, int);
int cublasSgemm_v2(void *, int, int, int, int, int, const float *, const float *, int, const float *, int,
                   const float *, float *, int);
int cublasSgemmStridedBatched(void *, int, int, int, int, int, const float *, const float *, int, long long,
                              const float *, int, long long, const float *, float *, int, long long, int);
#endif

#define CHECK(call)                                                              \
    do {                                                                         \
        long status_ = (long)(call);                                             \
        if (status_ != 0) {                                                      \
            fprintf(stderr, "gemm_app: %s returned %ld\n", #call, status_);      \
            return 1;                                                            \
        }                                                                        \
    } while (0)

/* A is M x K, B holds two K x N matrices, Bt the first transposed (N x K), C two M x N. */
#define M 256
#define K 4
#define N 1024
#define BATCH 2

static float host_a[M * K], host_b[K * N * BATCH], host_bt[N * K], host_c[M * N * BATCH];

static unsigned long long fnv(const void *p, size_t n, unsigned long long h) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

int main(int argc, char **argv) {
    int use_dlsym = 0, service = 0;
    for (int i = 1; i < argc; i++) {
        use_dlsym |= strcmp(argv[i], "dlsym") == 0;
        service |= strcmp(argv[i], "service") == 0;
    }
    create_fn create;
    set_stream_fn set_stream;
    gemm_ex_fn gemm_ex;
    sgemm_fn sgemm;
    strided_fn strided;
#ifdef LINKED
    create = cublasCreate_v2;
    set_stream = cublasSetStream_v2;
    gemm_ex = cublasGemmEx;
    sgemm = cublasSgemm_v2;
    strided = cublasSgemmStridedBatched;
    (void)use_dlsym;
#else
    void *lib = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "gemm_app: %s\n", dlerror());
        return 1;
    }
    *(void **)&create = dlsym(lib, "cublasCreate_v2");
    *(void **)&set_stream = dlsym(lib, "cublasSetStream_v2");
    *(void **)&gemm_ex = dlsym(lib, "cublasGemmEx");
    *(void **)&sgemm = dlsym(lib, "cublasSgemm_v2");
    *(void **)&strided = dlsym(lib, "cublasSgemmStridedBatched");
    if (!create || !set_stream || !gemm_ex || !sgemm || !strided) {
        fprintf(stderr, "gemm_app: a cuBLAS function is missing\n");
        return 1;
    }
#endif
    static const char image[] = ".fake_cuda_module empty";
    CUdevice dev;
    CUcontext ctx;
    CUmodule module;
    CUfunction empty;
    CUstream s, urgent;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuCtxCreate_v2(&ctx, 0, dev));
    CHECK(cuModuleLoadData(&module, image));
    CHECK(cuModuleGetFunction(&empty, module, "empty"));
    CHECK(cuStreamCreate(&s, 1));
    CHECK(cuLaunchKernel(empty, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
    CHECK(cuStreamSynchronize(s));
    if (service) {
        /* Work on the urgent stream once the GEMMs' stream exists: a scheduler then has a
         * queue it outranks, and hears of its work. */
        usleep(100000);
        CHECK(cuStreamCreateWithPriority(&urgent, 1, -5));
        CHECK(cuLaunchKernel(empty, 1, 1, 1, 32, 1, 1, 0, urgent, NULL, NULL));
        CHECK(cuStreamSynchronize(urgent));
    }
    /* Let a scheduler answer for both queues before the first GEMM. */
    usleep(200000);

    unsigned long long seed = 88172645463325252ULL;
    for (size_t i = 0; i < sizeof host_a / sizeof *host_a; i++) {
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        host_a[i] = (float)((seed >> 40) % 2001) / 1000.0f - 1.0f;
    }
    for (size_t i = 0; i < sizeof host_b / sizeof *host_b; i++) {
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        host_b[i] = (float)((seed >> 40) % 2001) / 1000.0f - 1.0f;
    }
    for (int row = 0; row < K; row++)
        for (int col = 0; col < N; col++) host_bt[row * N + col] = host_b[col * K + row];
    CUdeviceptr a, b, bt, c;
    CHECK(cuMemAlloc_v2(&a, sizeof host_a));
    CHECK(cuMemAlloc_v2(&b, sizeof host_b));
    CHECK(cuMemAlloc_v2(&bt, sizeof host_bt));
    CHECK(cuMemAlloc_v2(&c, sizeof host_c));
    CHECK(cuMemcpyHtoD_v2(a, host_a, sizeof host_a));
    CHECK(cuMemcpyHtoD_v2(b, host_b, sizeof host_b));
    CHECK(cuMemcpyHtoD_v2(bt, host_bt, sizeof host_bt));
    CHECK(cuMemsetD32_v2(c, 0, M * N * BATCH));
    void *h;
    CHECK(create(&h));
    CHECK(set_stream(h, s));
    const float one = 1.0f, zero = 0.0f, half = 0.5f;
    CUdeviceptr c1 = c + sizeof(float) * M * N;
    unsigned long long sum = 1469598103934665603ULL;
    for (int round = 0; round < 3; round++) {
        const float alpha = 1.0f + (float)round / 3.0f;
        /* C0 = alpha A B; C1 = alpha A (Bt)^T + C1 / 2; each Ci += A Bi, as one batch. */
        CHECK(gemm_ex(h, 0, 0, M, N, K, &alpha, (void *)a, 0, M, (void *)b, 0, K, &zero, (void *)c, 0, M, 68, -1));
        CHECK(sgemm(h, 0, 1, M, N, K, &alpha, (float *)a, M, (float *)bt, N, &half, (float *)c1, M));
        CHECK(strided(h, 0, 0, M, N, K, &one, (float *)a, M, 0, (float *)b, K, (long long)K * N, &one, (float *)c, M,
                      (long long)M * N, BATCH));
        CHECK(cuStreamSynchronize(s));
        CHECK(cuMemcpyDtoH_v2(host_c, c, sizeof host_c));
        sum = fnv(host_c, sizeof host_c, sum);
    }
    printf("gemm ok checksum=%016llx\n", sum);
    return 0;
}
