/* A host-only test double of cuBLASLt (built as libcublasLt.so.13 with that soname), which the
 * fake cuBLAS (fake_cublas.c) is built on as the real cuBLAS is on the real cuBLASLt: handles;
 * matmul descriptors and matrix layouts whose attributes are read and written with the sizes
 * the real ones have (an attribute it does not know, as an older cuBLASLt, is an invalid
 * value); and cublasLtMatmul for single precision, column-major and strided batches, with the
 * epilogues DEFAULT, RELU, BIAS and RELU_BIAS and the maximum of |D| (AMAX_D_POINTER). Its
 * GEMMs run in stream order as host functions (cuLaunchHostFunc) over the fake driver's memory,
 * which is host memory; it reaches the driver by linking with -lcuda.
 *
 * Each element of D is one sum over k in order, except where it emulates a kernel choice that
 * changes the result: with FAKE_CUBLAS_SPLITK_BELOW_N=T, calls with n < T sum the two halves
 * of k separately and add them, so a narrow piece of a wide call rounds differently from the
 * whole. FAKE_CUBLAS_NS_PER_COLUMN makes a call take that long per column of D (so its device
 * time, as events measure it, grows with n); FAKE_CUBLAS_SLOW_RUNS=i,j,... makes the i-th,
 * j-th, ... call it runs (counted from 1, in the order they run) take four times that long, as
 * a call does beside another program's kernels. fake_blas_gemm is the same GEMM for the fake
 * cuBLAS's typed calls. */
#define _DEFAULT_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver_api.h"

typedef void (*CUhostFn)(void *);
CUresult cuLaunchHostFunc(CUstream stream, CUhostFn fn, void *data);

enum { SUCCESS = 0, NOT_INITIALIZED = 1, ALLOC_FAILED = 3, INVALID_VALUE = 7, EXECUTION_FAILED = 13, NOT_SUPPORTED = 15 };

/* Attribute numbers and sizes: cublasLtMatmulDescAttributes_t up to BIAS_DATA_TYPE, and
 * cublasLtMatrixLayoutAttribute_t up to PLANE_OFFSET (0: not an attribute of this version). */
enum { DESC_ATTRS = 27, LAYOUT_ATTRS = 8 };
static const unsigned char desc_size[DESC_ATTRS] = {4, 4, 4, 4, 4, 4, 4, 4, 8, 0, 8, 8, 8, 8, 8, 4, 0, 8, 8, 8, 8, 8, 4, 8, 8, 1, 4};
static const unsigned char layout_size[LAYOUT_ATTRS] = {4, 4, 8, 8, 8, 4, 8, 8};
enum { COMPUTE_TYPE = 0, SCALE_TYPE = 1, POINTER_MODE = 2, TRANSA = 3, TRANSB = 4, EPILOGUE = 7, BIAS_POINTER = 8, AMAX_D_POINTER = 21, BIAS_DATA_TYPE = 26 };
enum { TYPE = 0, ORDER = 1, ROWS = 2, COLS = 3, LD = 4, BATCH_COUNT = 5, STRIDED_BATCH_OFFSET = 6 };
enum { EPILOGUE_DEFAULT = 1, EPILOGUE_RELU = 2, EPILOGUE_BIAS = 4 };

/* A descriptor or a layout: its attributes' values, each little-endian in 8 bytes. */
struct attrs {
    long long v[DESC_ATTRS];
};

static int get_attr(const struct attrs *o, const unsigned char *sizes, int n, int attr, void *buf, size_t size,
                    size_t *written) {
    if (!o || attr < 0 || attr >= n || sizes[attr] == 0 || size != sizes[attr] || !buf) return INVALID_VALUE;
    memcpy(buf, &o->v[attr], size);
    if (written) *written = size;
    return SUCCESS;
}

static int set_attr(struct attrs *o, const unsigned char *sizes, int n, int attr, const void *buf, size_t size) {
    if (!o || attr < 0 || attr >= n || sizes[attr] == 0 || size != sizes[attr] || !buf) return INVALID_VALUE;
    o->v[attr] = 0;
    memcpy(&o->v[attr], buf, size);
    /* The 4-byte values are int32_t: kept sign-extended. */
    if (size == 4) o->v[attr] = *(const int *)buf;
    return SUCCESS;
}

int cublasLtCreate(void **handle) {
    *handle = calloc(1, 16);
    return *handle ? SUCCESS : ALLOC_FAILED;
}

int cublasLtDestroy(void *handle) {
    free(handle);
    return SUCCESS;
}

int cublasLtMatmulDescCreate(struct attrs **desc, int compute, int scale) {
    *desc = calloc(1, sizeof **desc);
    if (!*desc) return ALLOC_FAILED;
    (*desc)->v[COMPUTE_TYPE] = compute;
    (*desc)->v[SCALE_TYPE] = scale;
    (*desc)->v[EPILOGUE] = EPILOGUE_DEFAULT;
    (*desc)->v[BIAS_DATA_TYPE] = -1;
    return SUCCESS;
}

int cublasLtMatmulDescDestroy(struct attrs *desc) {
    free(desc);
    return SUCCESS;
}

int cublasLtMatmulDescSetAttribute(struct attrs *desc, int attr, const void *buf, size_t size) {
    return set_attr(desc, desc_size, DESC_ATTRS, attr, buf, size);
}

int cublasLtMatmulDescGetAttribute(struct attrs *desc, int attr, void *buf, size_t size, size_t *written) {
    return get_attr(desc, desc_size, DESC_ATTRS, attr, buf, size, written);
}

int cublasLtMatrixLayoutCreate(struct attrs **layout, int type, unsigned long long rows, unsigned long long cols,
                               long long ld) {
    *layout = calloc(1, sizeof **layout);
    if (!*layout) return ALLOC_FAILED;
    (*layout)->v[TYPE] = type;
    (*layout)->v[ROWS] = (long long)rows;
    (*layout)->v[COLS] = (long long)cols;
    (*layout)->v[LD] = ld;
    (*layout)->v[BATCH_COUNT] = 1;
    return SUCCESS;
}

int cublasLtMatrixLayoutDestroy(struct attrs *layout) {
    free(layout);
    return SUCCESS;
}

int cublasLtMatrixLayoutSetAttribute(struct attrs *layout, int attr, const void *buf, size_t size) {
    return set_attr(layout, layout_size, LAYOUT_ATTRS, attr, buf, size);
}

int cublasLtMatrixLayoutGetAttribute(struct attrs *layout, int attr, void *buf, size_t size, size_t *written) {
    return get_attr(layout, layout_size, LAYOUT_ATTRS, attr, buf, size, written);
}

struct job {
    int ta, tb, m, n, k, lda, ldb, ldc, ldd, batch;
    long long sa, sb, sc, sd;
    float alpha, beta;
    const float *a, *b, *c, *bias;
    float *d, *amax;
    int relu;
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
    float amax = 0.0f;
    for (int b = 0; b < j->batch; b++) {
        const float *a = j->a + b * j->sa, *bm = j->b + b * j->sb, *c = j->c + b * j->sc;
        float *d = j->d + b * j->sd;
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
                float out = j->alpha * sum + (j->beta == 0.0f ? 0.0f : j->beta * c[(long)col * j->ldc + row]);
                if (j->bias) out += j->bias[row];
                if (j->relu && out < 0.0f) out = 0.0f;
                d[(long)col * j->ldd + row] = out;
                if (out > amax) amax = out;
                if (-out > amax) amax = -out;
            }
        }
    }
    if (j->amax) *j->amax = amax;
    long ns = env_long("FAKE_CUBLAS_NS_PER_COLUMN") * j->n * j->batch;
    if (slow_run(__atomic_add_fetch(&runs, 1, __ATOMIC_RELAXED))) ns *= 4;
    if (ns > 0) usleep((useconds_t)(ns / 1000));
    free(j);
}

static int launch(CUstream stream, struct job *proto) {
    if (proto->m < 0 || proto->n < 0 || proto->k < 0 || proto->ldd < proto->m || proto->batch < 0) return INVALID_VALUE;
    if (proto->m == 0 || proto->n == 0 || proto->batch == 0) return SUCCESS;
    struct job *j = malloc(sizeof *j);
    if (!j) return ALLOC_FAILED;
    *j = *proto;
    if (cuLaunchHostFunc(stream, run_job, j) != 0) {
        free(j);
        return EXECUTION_FAILED;
    }
    return SUCCESS;
}

/* The fake cuBLAS's typed GEMMs: C = alpha op(A) op(B) + beta C. */
int fake_blas_gemm(CUstream stream, int ta, int tb, int m, int n, int k, const float *alpha, const float *a, int lda,
                   long long sa, const float *b, int ldb, long long sb, const float *beta, float *c, int ldc,
                   long long sc, int batch) {
    struct job j = {ta != 0, tb != 0, m, n, k, lda, ldb, ldc, ldc, batch, sa, sb, sc, sc, *alpha, *beta, a, b, c, NULL, c, NULL, 0};
    return launch(stream, &j);
}

int cublasLtMatmul(void *handle, struct attrs *desc, const void *alpha, const void *a, struct attrs *la, const void *b,
                   struct attrs *lb, const void *beta, const void *c, struct attrs *lc, void *d, struct attrs *ld,
                   const void *algo, void *workspace, size_t workspace_bytes, CUstream stream) {
    (void)algo;
    (void)workspace;
    (void)workspace_bytes;
    if (!handle || !desc || !la || !lb || !lc || !ld) return NOT_INITIALIZED;
    struct attrs *all[4] = {la, lb, lc, ld};
    for (int i = 0; i < 4; i++) {
        /* Single precision, column-major, batches of one count. */
        if (all[i]->v[TYPE] != 0 || all[i]->v[ORDER] != 0) return NOT_SUPPORTED;
        if (all[i]->v[BATCH_COUNT] != ld->v[BATCH_COUNT]) return INVALID_VALUE;
    }
    long long epilogue = desc->v[EPILOGUE];
    if (desc->v[POINTER_MODE] != 0 || desc->v[SCALE_TYPE] != 0) return NOT_SUPPORTED;
    if (epilogue != EPILOGUE_DEFAULT && epilogue != EPILOGUE_RELU && epilogue != EPILOGUE_BIAS &&
        epilogue != (EPILOGUE_RELU | EPILOGUE_BIAS))
        return NOT_SUPPORTED;
    int ta = desc->v[TRANSA] != 0, tb = desc->v[TRANSB] != 0;
    int m = (int)ld->v[ROWS], n = (int)ld->v[COLS];
    int k = (int)(ta ? la->v[ROWS] : la->v[COLS]);
    if ((ta ? la->v[COLS] : la->v[ROWS]) != m || (tb ? lb->v[COLS] : lb->v[ROWS]) != k ||
        (tb ? lb->v[ROWS] : lb->v[COLS]) != n || lc->v[ROWS] != m || lc->v[COLS] != n)
        return INVALID_VALUE;
    const float *bias = (epilogue & EPILOGUE_BIAS) ? (const float *)(size_t)desc->v[BIAS_POINTER] : NULL;
    if ((epilogue & EPILOGUE_BIAS) && !bias) return INVALID_VALUE;
    struct job j = {ta,
                    tb,
                    m,
                    n,
                    k,
                    (int)la->v[LD],
                    (int)lb->v[LD],
                    (int)lc->v[LD],
                    (int)ld->v[LD],
                    (int)ld->v[BATCH_COUNT],
                    la->v[STRIDED_BATCH_OFFSET],
                    lb->v[STRIDED_BATCH_OFFSET],
                    lc->v[STRIDED_BATCH_OFFSET],
                    ld->v[STRIDED_BATCH_OFFSET],
                    *(const float *)alpha,
                    *(const float *)beta,
                    a,
                    b,
                    c,
                    bias,
                    d,
                    (float *)(size_t)desc->v[AMAX_D_POINTER],
                    (epilogue & EPILOGUE_RELU) != 0};
    if (j.ldc < m) return INVALID_VALUE;
    return launch(stream, &j);
}
