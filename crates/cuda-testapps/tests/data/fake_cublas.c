/* A host-only test double of cuBLAS (built as libcublas.so.13 with that soname), built on the
 * fake cuBLASLt (fake_cublaslt.c, linked with -lcublasLt) as the real cuBLAS is on the real
 * cuBLASLt: handles with a stream and a math mode, and single-precision GEMMs. cublasGemmEx
 * (CUDA_R_32F) is made through cuBLASLt's public cublasLtMatmul, as the real one is, so a
 * program that hooks both sees cuBLAS's call to cuBLASLt inside its own; cublasSgemm_v2 and
 * cublasSgemmStridedBatched through the fake cuBLASLt's fake_blas_gemm. The GEMMs and their
 * test knobs (FAKE_CUBLAS_*) are the fake cuBLASLt's. */
#define _DEFAULT_SOURCE
#include <stdlib.h>

#include "driver_api.h"

enum { SUCCESS = 0, NOT_INITIALIZED = 1, ALLOC_FAILED = 3, NOT_SUPPORTED = 15 };
enum { TRANSA = 3, TRANSB = 4 };

int fake_blas_gemm(CUstream stream, int ta, int tb, int m, int n, int k, const float *alpha, const float *a, int lda,
                   long long sa, const float *b, int ldb, long long sb, const float *beta, float *c, int ldc,
                   long long sc, int batch);
int cublasLtCreate(void **handle);
int cublasLtDestroy(void *handle);
int cublasLtMatmulDescCreate(void **desc, int compute, int scale);
int cublasLtMatmulDescDestroy(void *desc);
int cublasLtMatmulDescSetAttribute(void *desc, int attr, const void *buf, size_t size);
int cublasLtMatrixLayoutCreate(void **layout, int type, unsigned long long rows, unsigned long long cols, long long ld);
int cublasLtMatrixLayoutDestroy(void *layout);
int cublasLtMatmul(void *handle, void *desc, const void *alpha, const void *a, void *la, const void *b, void *lb,
                   const void *beta, const void *c, void *lc, void *d, void *ld, const void *algo, void *workspace,
                   size_t workspace_bytes, CUstream stream);

struct handle {
    CUstream stream;
    int math_mode;
    void *lt;
};

int cublasCreate_v2(struct handle **out) {
    *out = calloc(1, sizeof **out);
    if (!*out) return ALLOC_FAILED;
    if (cublasLtCreate(&(*out)->lt) != SUCCESS) {
        free(*out);
        return ALLOC_FAILED;
    }
    return SUCCESS;
}

int cublasDestroy_v2(struct handle *h) {
    cublasLtDestroy(h->lt);
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
    if (!h) return NOT_INITIALIZED;
    return fake_blas_gemm(h->stream, ta, tb, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1);
}

int cublasSgemmStridedBatched(struct handle *h, int ta, int tb, int m, int n, int k, const float *alpha,
                              const float *a, int lda, long long sa, const float *b, int ldb, long long sb,
                              const float *beta, float *c, int ldc, long long sc, int batch) {
    if (!h) return NOT_INITIALIZED;
    return fake_blas_gemm(h->stream, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, batch);
}

int cublasGemmEx(struct handle *h, int ta, int tb, int m, int n, int k, const void *alpha, const void *a, int at_,
                 int lda, const void *b, int bt, int ldb, const void *beta, void *c, int ct, int ldc, int compute,
                 int algo) {
    (void)algo;
    if (!h) return NOT_INITIALIZED;
    if (at_ != 0 || bt != 0 || ct != 0) return NOT_SUPPORTED; /* CUDA_R_32F only */
    void *desc = NULL, *la = NULL, *lb = NULL, *lc = NULL;
    int r = cublasLtMatmulDescCreate(&desc, compute, 0);
    if (r == SUCCESS) r = cublasLtMatmulDescSetAttribute(desc, TRANSA, &ta, sizeof ta);
    if (r == SUCCESS) r = cublasLtMatmulDescSetAttribute(desc, TRANSB, &tb, sizeof tb);
    if (r == SUCCESS) r = cublasLtMatrixLayoutCreate(&la, 0, ta ? k : m, ta ? m : k, lda);
    if (r == SUCCESS) r = cublasLtMatrixLayoutCreate(&lb, 0, tb ? n : k, tb ? k : n, ldb);
    if (r == SUCCESS) r = cublasLtMatrixLayoutCreate(&lc, 0, m, n, ldc);
    if (r == SUCCESS) r = cublasLtMatmul(h->lt, desc, alpha, a, la, b, lb, beta, c, lc, c, lc, NULL, NULL, 0, h->stream);
    if (lc) cublasLtMatrixLayoutDestroy(lc);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (desc) cublasLtMatmulDescDestroy(desc);
    return r;
}
