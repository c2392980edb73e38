/* A host-only test double of cuBLAS (built as libcublas.so.13 with that soname): handles with a
 * stream and a math mode, and single-precision GEMMs (cublasSgemm_v2, cublasGemmEx with
 * CUDA_R_32F, cublasSgemmStridedBatched) that run in stream order as host functions
 * (cuLaunchHostFunc) over the fake driver's memory, which is host memory. It reaches the driver
 * by linking with -lcuda, as a library built against the toolkit does, so under Baton's
 * interposer its launches go through Baton.
 *
 * Its GEMM computes each element of C as one sum over k in order, except where it emulates a
 * kernel choice that changes the result: with FAKE_CUBLAS_SPLITK_BELOW_N=T, calls with n < T
 * sum the two halves of k separately and add them, so a narrow piece of a wide call rounds
 * differently from the whole. FAKE_CUBLAS_NS_PER_COLUMN makes a call take that long per
 * column of C (so its device time, as events measure it, grows with n); FAKE_CUBLAS_SLOW_RUNS=i,j,...
 * makes the i-th, j-th, ... call it runs (counted from 1, in the order they run) take four
 * times that long, as a call does beside another program's kernels. */
#define _DEFAULT_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver_api.h"

typedef void (*CUhostFn)(void *);
CUresult cuLaunchHostFunc(CUstream stream, CUhostFn fn, void *data);

enum { SUCCESS = 0, NOT_INITIALIZED = 1, ALLOC_FAILED = 3, INVALID_VALUE = 7, EXECUTION_FAILED = 13, NOT_SUPPORTED = 15 };

struct handle {
    CUstream stream;
    int math_mode;
};

struct job {
    int ta, tb, m, n, k, lda, ldb, ldc, batch;
    long long sa, sb, sc;
    float alpha, beta;
    const float *a, *b;
    float *c;
};

static long env_long(const char *name) {
    const char *v = getenv(name);
    return v ? atol(v) : 0;
}

/* Whether the call run as number `run` is one FAKE_CUBLAS_SLOW_RUNS names. */
static int slow_run(long run) {
    const char *v = getenv("FAKE_CUBLAS_SLOW_RUNS");
    while (v && *v) {
        char *end;
        long n = strtol(v, &end, 10);
        if (end == v) return 0;
        if (n == run) return 1;
        v = *end == ',' ? end + 1 : end;
    }
    return 0;
}

static long runs;

static float at(const float *x, int trans, int ld, int row, int col) {
    return trans ? x[(long)row * ld + col] : x[(long)col * ld + row];
}

static void run_job(void *data) {
    struct job *j = data;
    long below = env_long("FAKE_CUBLAS_SPLITK_BELOW_N");
    int halves = below > 0 && j->n < below && j->k >= 2;
    for (int b = 0; b < j->batch; b++) {
        const float *a = j->a + b * j->sa, *bm = j->b + b * j->sb;
        float *c = j->c + b * j->sc;
        for (int col = 0; col < j->n; col++) {
            for (int row = 0; row < j->m; row++) {
                float sum = 0.0f;
                if (halves) {
                    float lo = 0.0f, hi = 0.0f;
                    for (int p = 0; p < j->k / 2; p++) lo += at(a, j->ta, j->lda, row, p) * at(bm, j->tb, j->ldb, p, col);
                    for (int p = j->k / 2; p < j->k; p++) hi += at(a, j->ta, j->lda, row, p) * at(bm, j->tb, j->ldb, p, col);
                    sum = lo + hi;
                } else {
                    for (int p = 0; p < j->k; p++) sum += at(a, j->ta, j->lda, row, p) * at(bm, j->tb, j->ldb, p, col);
                }
                float *out = &c[(long)col * j->ldc + row];
                *out = j->alpha * sum + (j->beta == 0.0f ? 0.0f : j->beta * *out);
            }
        }
    }
    long ns = env_long("FAKE_CUBLAS_NS_PER_COLUMN") * j->n * j->batch;
    if (slow_run(__atomic_add_fetch(&runs, 1, __ATOMIC_RELAXED))) ns *= 4;
    if (ns > 0) usleep((useconds_t)(ns / 1000));
    free(j);
}

static int gemm(struct handle *h, int ta, int tb, int m, int n, int k, const float *alpha, const float *a, int lda,
                long long sa, const float *b, int ldb, long long sb, const float *beta, float *c, int ldc, long long sc,
                int batch) {
    if (!h) return NOT_INITIALIZED;
    if (m < 0 || n < 0 || k < 0 || ldc < m || batch < 0) return INVALID_VALUE;
    if (m == 0 || n == 0 || batch == 0) return SUCCESS;
    struct job *j = malloc(sizeof *j);
    if (!j) return ALLOC_FAILED;
    *j = (struct job){ta != 0, tb != 0, m, n, k, lda, ldb, ldc, batch, sa, sb, sc, *alpha, *beta, a, b, c};
    if (cuLaunchHostFunc(h->stream, run_job, j) != 0) {
        free(j);
        return EXECUTION_FAILED;
    }
    return SUCCESS;
}

int cublasCreate_v2(struct handle **out) {
    *out = calloc(1, sizeof **out);
    return *out ? SUCCESS : ALLOC_FAILED;
}

int cublasDestroy_v2(struct handle *h) {
    free(h);
    return SUCCESS;
}

int cublasSetStream_v2(struct handle *h, CUstream s) {
    h->stream = s;
    return SUCCESS;
}

int cublasGetStream_v2(struct handle *h, CUstream *s) {
    *s = h->stream;
    return SUCCESS;
}

int cublasSetMathMode(struct handle *h, int mode) {
    h->math_mode = mode;
    return SUCCESS;
}

int cublasGetMathMode(struct handle *h, int *mode) {
    *mode = h->math_mode;
    return SUCCESS;
}

int cublasSgemm_v2(struct handle *h, int ta, int tb, int m, int n, int k, const float *alpha, const float *a, int lda,
                   const float *b, int ldb, const float *beta, float *c, int ldc) {
    return gemm(h, ta, tb, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1);
}

int cublasSgemmStridedBatched(struct handle *h, int ta, int tb, int m, int n, int k, const float *alpha,
                              const float *a, int lda, long long sa, const float *b, int ldb, long long sb,
                              const float *beta, float *c, int ldc, long long sc, int batch) {
    return gemm(h, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, batch);
}

int cublasGemmEx(struct handle *h, int ta, int tb, int m, int n, int k, const void *alpha, const void *a, int at_,
                 int lda, const void *b, int bt, int ldb, const void *beta, void *c, int ct, int ldc, int compute,
                 int algo) {
    (void)compute;
    (void)algo;
    if (at_ != 0 || bt != 0 || ct != 0) return NOT_SUPPORTED; /* CUDA_R_32F only */
    return gemm(h, ta, tb, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1);
}
