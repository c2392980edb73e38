/* A driver-API program linked with -lcuda, as programs built against the CUDA toolkit are:
 * it binds to libcuda.so.1 by DT_NEEDED, not through dlopen. Its prototypes are in
 * driver_api.h (no toolkit header here).
 *
 * Two streams each append 20 tags in order and apply add/mul kernels; the program checks the
 * logs and data, prints one result line and exits 0 on success. */
#include <stdio.h>
#include <string.h>

#include "driver_api.h"

#define CHECK(call)                                                              \
    do {                                                                         \
        CUresult status_ = (call);                                               \
        if (status_ != 0) {                                                      \
            fprintf(stderr, "linked: %s returned %d\n", #call, status_);         \
            return 1;                                                            \
        }                                                                        \
    } while (0)

#define STREAMS 2
#define TAGS 20
#define N 16

/* append_tag(int* log, int* counter, int tag) */
static CUresult launch_append(CUfunction f, CUstream s, CUdeviceptr log, CUdeviceptr counter, int tag) {
    void *params[3] = {&log, &counter, &tag};
    return cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, params, NULL);
}

/* add_i32 / mul_i32(int* data, int n, int operand) */
static CUresult launch_elementwise(CUfunction f, CUstream s, CUdeviceptr data, int n, int operand) {
    void *params[3] = {&data, &n, &operand};
    return cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, params, NULL);
}

int main(void) {
    static const char image[] = ".fake_cuda_module add_i32 mul_i32 append_tag";
    CUdevice dev;
    CUcontext ctx;
    CUmodule module;
    CUfunction add, mul, append;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuCtxCreate_v2(&ctx, 0, dev));
    CHECK(cuModuleLoadData(&module, image));
    CHECK(cuModuleGetFunction(&add, module, "add_i32"));
    CHECK(cuModuleGetFunction(&mul, module, "mul_i32"));
    CHECK(cuModuleGetFunction(&append, module, "append_tag"));

    CUstream streams[STREAMS];
    CUdeviceptr log[STREAMS], counter[STREAMS], data[STREAMS];
    int model[STREAMS][N];
    for (int s = 0; s < STREAMS; s++) {
        CHECK(cuStreamCreate(&streams[s], 0));
        CHECK(cuMemAlloc_v2(&log[s], TAGS * sizeof(int)));
        CHECK(cuMemAlloc_v2(&counter[s], sizeof(int)));
        CHECK(cuMemAlloc_v2(&data[s], N * sizeof(int)));
        CHECK(cuMemsetD32_v2(counter[s], 0, 1));
        for (int i = 0; i < N; i++) model[s][i] = i + s;
        CHECK(cuMemcpyHtoD_v2(data[s], model[s], sizeof model[s]));
    }
    for (int t = 0; t < TAGS; t++) {
        for (int s = 0; s < STREAMS; s++) {
            CHECK(launch_append(append, streams[s], log[s], counter[s], s * 100 + t));
            if (t % 2 == 0) {
                CHECK(launch_elementwise(add, streams[s], data[s], N, t));
                for (int i = 0; i < N; i++) model[s][i] += t;
            } else {
                CHECK(launch_elementwise(mul, streams[s], data[s], N, 2));
                for (int i = 0; i < N; i++) model[s][i] *= 2;
            }
        }
    }
    long long sum = 0;
    for (int s = 0; s < STREAMS; s++) {
        int tags[TAGS], out[N];
        CHECK(cuStreamSynchronize(streams[s]));
        CHECK(cuMemcpyDtoH_v2(tags, log[s], sizeof tags));
        CHECK(cuMemcpyDtoH_v2(out, data[s], sizeof out));
        for (int t = 0; t < TAGS; t++) {
            if (tags[t] != s * 100 + t) {
                fprintf(stderr, "linked: stream %d tag %d is %d\n", s, t, tags[t]);
                return 1;
            }
        }
        if (memcmp(out, model[s], sizeof out) != 0) {
            fprintf(stderr, "linked: stream %d data differs from the in-order model\n", s);
            return 1;
        }
        for (int i = 0; i < N; i++) sum += out[i];
        CHECK(cuStreamDestroy_v2(streams[s]));
        CHECK(cuMemFree_v2(log[s]));
        CHECK(cuMemFree_v2(counter[s]));
        CHECK(cuMemFree_v2(data[s]));
    }
    CHECK(cuCtxDestroy_v2(ctx));
    printf("linked ok streams=%d tags=%d sum=%lld\n", STREAMS, TAGS, sum);
    return 0;
}
