/* A program that multiplies matrices with cuBLAS as frameworks do: linked with -lcublas
 * -lcublasLt (as PyTorch and CuPy are), or, given the argument "dlsym", opening
 * libcublas.so.13 and libcublasLt.so.13 and looking their functions up (as JAX does). Given
 * "service" it also makes a stream of the greatest CUDA priority and launches a kernel on it
 * first, so that a scheduler sees a more urgent queue beside the GEMMs' stream.
 *
 * On its own stream it makes rounds of GEMMs through each entry point (cublasGemmEx,
 * cublasSgemm_v2 with a transposed operand and a result it adds to, cublasSgemmStridedBatched
 * adding to both results), or, given "lt", through cuBLASLt's cublasLtMatmul as PyTorch's
 * Linear does (a bias added to each row; ReLU of a transposed operand's product added to half
 * the result; a strided batch adding to both results; the maximum of |D|; C apart from D, as XLA passes it),
 * then prints one line with a checksum of every round's results: the same bits natively and
 * under Baton, whether Baton splits the calls or not. */
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
typedef int (*desc_create_fn)(void **, int, int);
typedef int (*desc_set_fn)(void *, int, const void *, size_t);
typedef int (*layout_create_fn)(void **, int, unsigned long long, unsigned long long, long long);
typedef int (*matmul_fn)(void *, void *, const void *, const void *, void *, const void *, void *, const void *,
                         const void *, void *, void *, void *, const void *, void *, size_t, CUstream);

#ifdef LINKED
int cublasCreate_v2(void **);
int cublasSetStream_v2(void *, CUstream);
int cublasGemmEx(void *, int, int, int, int, int, const void *, const void *, int, int, const void *, int, int,
                 const void *, void *, int, int, int, int);
int cublasSgemm_v2(void *, int, int, int, int, int, const float *, const float *, int, const float *, int,
                   const float *, float *, int);
int cublasSgemmStridedBatched(void *, int, int, int, int, int, const float *, const float *, int, long long,
                              const float *, int, long long, const float *, float *, int, long long, int);
int cublasLtCreate(void **);
int cublasLtMatmulDescCreate(void **, int, int);
int cublasLtMatmulDescSetAttribute(void *, int, const void *, size_t);
int cublasLtMatrixLayoutCreate(void **, int, unsigned long long, unsigned long long, long long);
int cublasLtMatrixLayoutSetAttribute(void *, int, const void *, size_t);
int cublasLtMatmul(void *, void *, const void *, const void *, void *, const void *, void *, const void *,
                   const void *, void *, void *, void *, const void *, void *, size_t, CUstream);
#endif

/* cuBLASLt's attribute numbers (cublasLt.h) and the values used here. */
enum { TRANSB = 4, EPILOGUE = 7, BIAS_POINTER = 8, AMAX_D_POINTER = 21, BATCH_COUNT = 5, BATCH_OFFSET = 6 };
enum { EPILOGUE_RELU = 2, EPILOGUE_BIAS = 4, COMPUTE_32F = 68, R_32F = 0 };

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
    int use_dlsym = 0, service = 0, use_lt = 0;
    for (int i = 1; i < argc; i++) {
        use_dlsym |= strcmp(argv[i], "dlsym") == 0;
        service |= strcmp(argv[i], "service") == 0;
        use_lt |= strcmp(argv[i], "lt") == 0;
    }
    create_fn create, lt_create;
    set_stream_fn set_stream;
    gemm_ex_fn gemm_ex;
    sgemm_fn sgemm;
    strided_fn strided;
    desc_create_fn desc_create;
    desc_set_fn desc_set, layout_set;
    layout_create_fn layout_create;
    matmul_fn matmul;
#ifdef LINKED
    create = cublasCreate_v2;
    set_stream = cublasSetStream_v2;
    gemm_ex = cublasGemmEx;
    sgemm = cublasSgemm_v2;
    strided = cublasSgemmStridedBatched;
    lt_create = cublasLtCreate;
    desc_create = cublasLtMatmulDescCreate;
    desc_set = cublasLtMatmulDescSetAttribute;
    layout_create = cublasLtMatrixLayoutCreate;
    layout_set = cublasLtMatrixLayoutSetAttribute;
    matmul = cublasLtMatmul;
    (void)use_dlsym;
#else
    void *lib = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
    void *lt = dlopen("libcublasLt.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!lib || !lt) {
        fprintf(stderr, "gemm_app: %s\n", dlerror());
        return 1;
    }
    *(void **)&create = dlsym(lib, "cublasCreate_v2");
    *(void **)&set_stream = dlsym(lib, "cublasSetStream_v2");
    *(void **)&gemm_ex = dlsym(lib, "cublasGemmEx");
    *(void **)&sgemm = dlsym(lib, "cublasSgemm_v2");
    *(void **)&strided = dlsym(lib, "cublasSgemmStridedBatched");
    *(void **)&lt_create = dlsym(lt, "cublasLtCreate");
    *(void **)&desc_create = dlsym(lt, "cublasLtMatmulDescCreate");
    *(void **)&desc_set = dlsym(lt, "cublasLtMatmulDescSetAttribute");
    *(void **)&layout_create = dlsym(lt, "cublasLtMatrixLayoutCreate");
    *(void **)&layout_set = dlsym(lt, "cublasLtMatrixLayoutSetAttribute");
    *(void **)&matmul = dlsym(lt, "cublasLtMatmul");
    if (!create || !set_stream || !gemm_ex || !sgemm || !strided || !lt_create || !desc_create || !desc_set ||
        !layout_create || !layout_set || !matmul) {
        fprintf(stderr, "gemm_app: a cuBLAS or cuBLASLt function is missing\n");
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
    CUdeviceptr a, b, bt, c, bias, amax;
    CHECK(cuMemAlloc_v2(&bias, sizeof(float) * M));
    CHECK(cuMemcpyHtoD_v2(bias, host_b, sizeof(float) * M));
    CHECK(cuMemAlloc_v2(&amax, sizeof(float)));
    CHECK(cuMemsetD32_v2(amax, 0, 1));
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
    /* cuBLASLt: descriptors for each call, layouts of A, B, Bt and C, and of the batches. */
    void *lth, *with_bias, *relu_t, *plain, *with_amax, *la, *lb, *lbt, *lc, *la2, *lb2, *lc2;
    const int epilogue_bias = EPILOGUE_BIAS, epilogue_relu = EPILOGUE_RELU, transposed = 1, batch = BATCH;
    const long long no_stride = 0, b_stride = (long long)K * N, c_stride = (long long)M * N;
    CHECK(lt_create(&lth));
    CHECK(desc_create(&with_bias, COMPUTE_32F, R_32F));
    CHECK(desc_set(with_bias, EPILOGUE, &epilogue_bias, sizeof epilogue_bias));
    CHECK(desc_set(with_bias, BIAS_POINTER, &bias, sizeof bias));
    CHECK(desc_create(&relu_t, COMPUTE_32F, R_32F));
    CHECK(desc_set(relu_t, EPILOGUE, &epilogue_relu, sizeof epilogue_relu));
    CHECK(desc_set(relu_t, TRANSB, &transposed, sizeof transposed));
    CHECK(desc_create(&plain, COMPUTE_32F, R_32F));
    CHECK(desc_create(&with_amax, COMPUTE_32F, R_32F));
    CHECK(desc_set(with_amax, AMAX_D_POINTER, &amax, sizeof amax));
    CHECK(layout_create(&la, R_32F, M, K, M));
    CHECK(layout_create(&lb, R_32F, K, N, K));
    CHECK(layout_create(&lbt, R_32F, N, K, N));
    CHECK(layout_create(&lc, R_32F, M, N, M));
    CHECK(layout_create(&la2, R_32F, M, K, M));
    CHECK(layout_create(&lb2, R_32F, K, N, K));
    CHECK(layout_create(&lc2, R_32F, M, N, M));
    void *batched[3] = {la2, lb2, lc2};
    const long long strides[3] = {no_stride, b_stride, c_stride};
    for (int i = 0; i < 3; i++) {
        CHECK(layout_set(batched[i], BATCH_COUNT, &batch, sizeof batch));
        CHECK(layout_set(batched[i], BATCH_OFFSET, &strides[i], sizeof strides[i]));
    }
    for (int round = 0; round < 3; round++) {
        const float alpha = 1.0f + (float)round / 3.0f;
        if (use_lt) {
            const void *A = (void *)a, *B = (void *)b, *Bt = (void *)bt;
            void *C0 = (void *)c, *C1 = (void *)c1;
            /* C0 = alpha A B + bias; C1 = relu(alpha A (Bt)^T + C1 / 2); each Ci += A Bi, as one
             * batch; C0 = A B with the maximum of |C0|; C1 = A B + C0. */
            CHECK(matmul(lth, with_bias, &alpha, A, la, B, lb, &zero, C0, lc, C0, lc, NULL, NULL, 0, s));
            CHECK(matmul(lth, relu_t, &alpha, A, la, Bt, lbt, &half, C1, lc, C1, lc, NULL, NULL, 0, s));
            CHECK(matmul(lth, plain, &one, A, la2, B, lb2, &one, C0, lc2, C0, lc2, NULL, NULL, 0, s));
            CHECK(matmul(lth, with_amax, &one, A, la, B, lb, &zero, C0, lc, C0, lc, NULL, NULL, 0, s));
            CHECK(matmul(lth, plain, &one, A, la, B, lb, &one, C0, lc, C1, lc, NULL, NULL, 0, s));
        } else {
            /* C0 = alpha A B; C1 = alpha A (Bt)^T + C1 / 2; each Ci += A Bi, as one batch. */
            CHECK(gemm_ex(h, 0, 0, M, N, K, &alpha, (void *)a, 0, M, (void *)b, 0, K, &zero, (void *)c, 0, M, 68,
                          -1));
            CHECK(sgemm(h, 0, 1, M, N, K, &alpha, (float *)a, M, (float *)bt, N, &half, (float *)c1, M));
            CHECK(strided(h, 0, 0, M, N, K, &one, (float *)a, M, 0, (float *)b, K, (long long)K * N, &one,
                          (float *)c, M, (long long)M * N, BATCH));
        }
        CHECK(cuStreamSynchronize(s));
        CHECK(cuMemcpyDtoH_v2(host_c, c, sizeof host_c));
        sum = fnv(host_c, sizeof host_c, sum);
        float host_amax;
        CHECK(cuMemcpyDtoH_v2(&host_amax, amax, sizeof host_amax));
        sum = fnv(&host_amax, sizeof host_amax, sum);
    }
    printf("gemm ok checksum=%016llx\n", sum);
    return 0;
}
