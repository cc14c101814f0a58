/* User semirings (sr_semiring_define) on the CPU backend: every built-in semiring written again as
 * a user definition gives the built-in's bits in sr_spmv, sr_spmm, sr_mxm (masks, complement,
 * accumulate, both layouts) and sr_sddmm; two new semirings against a dense reference; and the refusals: an
 * expression that does not compile (with the compiler's message), a missing identity, an unknown
 * type, a built-in's name, a name redefined, a type mismatch, and the calls and backends that do
 * not take user semirings yet. */
#include <time.h>

#include "test_util.h"
#include "../src/cuda/cuda.h"

static sr_context ctx;

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The built-ins as user definitions: SR_MUL_MIN's expression spelled out as semiring.h has it. */
static const struct {
    sr_semiring builtin;
    const char *add, *multiply;
} kBuiltins[] = {
    {SR_PLUS_TIMES, "plus", "x * y"},
    {SR_MIN_PLUS, "min", "x + y"},
    {SR_MAX_PLUS, "max", "x + y"},
    {SR_MAX_TIMES, "max", "x * y"},
    {SR_MIN_TIMES, "min", "x * y"},
    {SR_MAX_MIN, "max", "((y) < (x) || (x) != (x)) ? (y) : (x)"},
    {SR_PLUS_PAIR, "plus", "1"},
};
static const sr_type kTypes[] = {SR_TYPE_INT32, SR_TYPE_FLOAT32, SR_TYPE_FLOAT64};

static sr_semiring define(const char *name, sr_type type, const char *add, const char *identity, const char *multiply)
{
    sr_semiring_def d = {name, type, add, identity, multiply};
    sr_semiring s = SR_PLUS_TIMES;
    CHECK_OK(sr_semiring_define(&d, &s));
    return s;
}

static void *random_values(int64_t n, sr_type type)
{
    void *v = malloc((size_t)(n > 0 ? n : 1) * sr_type_size(type));
    for (int64_t k = 0; k < n; k++)
        test_random_value(type, v, k);
    return v;
}

/* sr_spmm (and sr_spmv when n = 1) by the built-in and by the user semiring, every mask and
 * layout: the outputs bit for bit. */
static void compare_dense_on(sr_context on, sr_semiring builtin, sr_semiring user, sr_matrix A, sr_matrix mask,
                             int64_t m, int64_t k, int64_t n, sr_type type, const char *what)
{
    const size_t es = sr_type_size(type);
    void *b = random_values(k * n, type), *c0 = random_values(m * n, type);
    void *c1 = malloc((size_t)(m * n + 1) * es), *c2 = malloc((size_t)(m * n + 1) * es);
    for (int layout = 0; layout < 2; layout++)
        for (int variant = 0; variant < 4; variant++) {
            const sr_layout L = layout ? SR_COL_MAJOR : SR_ROW_MAJOR;
            sr_descriptor d = {0};
            d.accumulate = variant & 1;
            d.mask_complement = variant & 2;
            sr_matrix mk = variant >= 2 || variant == 1 ? mask : NULL;
            memcpy(c1, c0, (size_t)(m * n) * es);
            memcpy(c2, c0, (size_t)(m * n) * es);
            sr_dense B = sr_dense_view(b, k, n, type, L, SR_HOST);
            sr_dense C1 = sr_dense_view(c1, m, n, type, L, SR_HOST), C2 = sr_dense_view(c2, m, n, type, L, SR_HOST);
            if (n == 1) {
                CHECK_OK(sr_spmv(on, &C1, mk, builtin, A, &B, &d));
                CHECK_OK(sr_spmv(on, &C2, mk, user, A, &B, &d));
            } else {
                CHECK_OK(sr_spmm(on, &C1, mk, builtin, A, &B, &d));
                CHECK_OK(sr_spmm(on, &C2, mk, user, A, &B, &d));
            }
            CHECK(memcmp(c1, c2, (size_t)(m * n) * es) == 0, "%s: %s n = %lld (%s, %s%s%s) differs from %s", what,
                  n == 1 ? "sr_spmv" : "sr_spmm", (long long)n, layout ? "column-major" : "row-major",
                  mk ? "masked" : "no mask", d.mask_complement ? ", complement" : "", d.accumulate ? ", accumulate" : "",
                  sr_semiring_name(builtin));
        }
    free(b), free(c0), free(c1), free(c2);
}

static void compare_dense(sr_semiring builtin, sr_semiring user, sr_matrix A, sr_matrix mask, int64_t m, int64_t k,
                          int64_t n, sr_type type, const char *what)
{
    compare_dense_on(ctx, builtin, user, A, mask, m, k, n, type, what);
}

static void compare_mxm_on(sr_context on, sr_semiring builtin, sr_semiring user, sr_matrix A, sr_matrix B,
                           sr_matrix mask, const char *what)
{
    for (int variant = 0; variant < 4; variant++) {
        sr_descriptor d = {0};
        d.mask_complement = variant == 2;
        d.accumulate = variant == 3;
        sr_matrix mk = variant >= 1 && variant <= 2 ? mask : NULL;
        sr_matrix C1 = NULL, C2 = NULL;
        if (d.accumulate) { /* C starts as A B, then takes A B again */
            CHECK_OK(sr_mxm(on, &C1, NULL, builtin, A, B, NULL));
            CHECK_OK(sr_mxm(on, &C2, NULL, builtin, A, B, NULL));
        }
        CHECK_OK(sr_mxm(on, &C1, mk, builtin, A, B, &d));
        CHECK_OK(sr_mxm(on, &C2, mk, user, A, B, &d));
        bool equal = false;
        if (C1 && C2)
            CHECK_OK(sr_matrix_equal(on, C1, C2, &equal));
        CHECK(equal, "%s: sr_mxm (%s%s%s) differs from %s", what, mk ? "masked" : "no mask",
              d.mask_complement ? ", complement" : "", d.accumulate ? ", accumulate" : "", sr_semiring_name(builtin));
        sr_matrix_free(C1);
        sr_matrix_free(C2);
    }
}

static void compare_mxm(sr_semiring builtin, sr_semiring user, sr_matrix A, sr_matrix B, sr_matrix mask,
                        const char *what)
{
    compare_mxm_on(ctx, builtin, user, A, B, mask, what);
}

/* A·B's row blocks by the user semiring, gathered, against sr_mxm by the built-in on context `on`:
 * the same matrix. */
static void compare_row_blocks_on(sr_context on, sr_semiring builtin, sr_semiring user, sr_matrix A, sr_matrix B,
                                  const char *what)
{
    sr_row_blocks R = NULL;
    sr_matrix G = NULL, W = NULL;
    bool equal = false;
    CHECK_OK(sr_mxm_row_blocks(on, &R, user, A, B));
    if (R && sr_row_blocks_gather(R, &G) == SR_SUCCESS && sr_mxm(on, &W, NULL, builtin, A, B, NULL) == SR_SUCCESS)
        CHECK_OK(sr_matrix_equal(on, G, W, &equal));
    CHECK(equal, "%s: sr_mxm_row_blocks%s differs from %s", what, on == ctx ? "" : " on the GPU",
          sr_semiring_name(builtin));
    sr_row_blocks_free(R);
    sr_matrix_free(G), sr_matrix_free(W);
}

/* ewise add and mult, Kronecker, row reduction and row blocks by the built-in and by the user
 * semiring: the same matrices. */
static void compare_structural(sr_semiring builtin, sr_semiring user, sr_matrix A, sr_matrix B, const char *what)
{
    sr_matrix C1[4] = {NULL}, C2[4] = {NULL};
    CHECK_OK(sr_ewise_add(ctx, &C1[0], NULL, builtin, A, B, NULL));
    CHECK_OK(sr_ewise_add(ctx, &C2[0], NULL, user, A, B, NULL));
    CHECK_OK(sr_ewise_mult(ctx, &C1[1], NULL, builtin, A, B, NULL));
    CHECK_OK(sr_ewise_mult(ctx, &C2[1], NULL, user, A, B, NULL));
    CHECK_OK(sr_kronecker(ctx, &C1[2], NULL, builtin, A, B, NULL));
    CHECK_OK(sr_kronecker(ctx, &C2[2], NULL, user, A, B, NULL));
    CHECK_OK(sr_reduce_rows(ctx, &C1[3], builtin, A));
    CHECK_OK(sr_reduce_rows(ctx, &C2[3], user, A));
    const char *ops[4] = {"sr_ewise_add", "sr_ewise_mult", "sr_kronecker", "sr_reduce_rows"};
    for (int o = 0; o < 4; o++) {
        bool equal = false;
        if (C1[o] && C2[o])
            CHECK_OK(sr_matrix_equal(ctx, C1[o], C2[o], &equal));
        CHECK(equal, "%s: %s differs from %s", what, ops[o], sr_semiring_name(builtin));
        sr_matrix_free(C1[o]);
        sr_matrix_free(C2[o]);
    }
    compare_row_blocks_on(ctx, builtin, user, A, A, what);
}

/* C1's and C2's values (both of S's pattern, nnz entries) alike: bit for bit, or where `close`
 * (the GPU's plus_times, whose built-in runs its tuned kernels) within the rounding of a sum of K
 * products in another order: K units of the type's rounding times Σ|a·b| (at most 1.25² a term for
 * random_values, then scaled by S's value and alpha, at most 1.25 each). */
static bool same_values(sr_context on, sr_matrix C1, sr_matrix C2, int64_t nrows, int64_t nnz, sr_type type,
                        int64_t K, bool close)
{
    const size_t es = sr_type_size(type);
    void *v1 = malloc((size_t)nnz * es + 1), *v2 = malloc((size_t)nnz * es + 1);
    int64_t *rowptr = malloc((size_t)(nrows + 1) * sizeof *rowptr);
    int32_t *colind = malloc((size_t)nnz * sizeof *colind + 1);
    bool same = sr_matrix_export_csr(on, C1, rowptr, colind, v1, SR_HOST) == SR_SUCCESS &&
                sr_matrix_export_csr(on, C2, rowptr, colind, v2, SR_HOST) == SR_SUCCESS;
    if (same && !close)
        same = memcmp(v1, v2, (size_t)nnz * es) == 0;
    const double eps = type == SR_TYPE_FLOAT32 ? 0x1p-24 : 0x1p-53;
    for (int64_t e = 0; same && close && e < nnz; e++) {
        const double a = type == SR_TYPE_FLOAT32 ? ((float *)v1)[e] : type == SR_TYPE_FLOAT64 ? ((double *)v1)[e]
                                                                                             : ((int32_t *)v1)[e];
        const double b = type == SR_TYPE_FLOAT32 ? ((float *)v2)[e] : type == SR_TYPE_FLOAT64 ? ((double *)v2)[e]
                                                                                             : ((int32_t *)v2)[e];
        same = type == SR_TYPE_INT32 ? a == b : fabs(a - b) <= 2.0 * (double)K * eps * (2.5 * (double)K + fabs(a));
    }
    free(v1), free(v2), free(rowptr), free(colind);
    return same;
}

/* sr_sddmm by the built-in (its dot products: SPARSERING_SDDMM_GEMM=0) and by the user semiring on
 * context `on` (S and P where they live there), K below and from 64 (cpu_sddmm.c's two orders), S's
 * values or its pattern, with and without alpha and beta: the values bit for bit (on the GPU, the
 * built-in plus_times to rounding: its tuned kernels sum in another order than the any-semiring
 * kernel a user semiring runs). */
static void compare_sddmm_on(sr_context on, sr_semiring builtin, sr_semiring user, sr_matrix S, sr_matrix P, int64_t m,
                             int64_t n, sr_type type, const char *what)
{
    setenv("SPARSERING_SDDMM_GEMM", "0", 1);
    const bool close = on != ctx && builtin == SR_PLUS_TIMES;
    const int64_t ks[] = {13, 70};
    for (int c = 0; c < 8; c++) {
        const int64_t K = ks[c & 1];
        sr_matrix Sc = c & 2 ? P : S;
        const double alpha = c & 4 ? 0.5 : 1.0, beta = c & 4 ? 2.0 : 0.0;
        void *a = random_values(m * K, type), *b = random_values(n * K, type);
        if (type == SR_TYPE_INT32) /* |A B^T| up to 70 * 100, times S's values up to 1000: no int32 overflow */
            for (int64_t e = 0; e < m * K || e < n * K; e++) {
                if (e < m * K)
                    ((int32_t *)a)[e] %= 11;
                if (e < n * K)
                    ((int32_t *)b)[e] %= 11;
            }
        sr_dense A = sr_dense_view(a, m, K, type, SR_ROW_MAJOR, SR_HOST), B = sr_dense_view(b, n, K, type, SR_ROW_MAJOR, SR_HOST);
        sr_matrix C1 = NULL, C2 = NULL;
        CHECK_OK(sr_sddmm(on, &C1, builtin, alpha, Sc, &A, &B, beta, NULL));
        CHECK_OK(sr_sddmm(on, &C2, user, alpha, Sc, &A, &B, beta, NULL));
        sr_matrix_info info = {0};
        CHECK_OK(sr_matrix_get_info(Sc, &info));
        CHECK(C1 && C2 && same_values(on, C1, C2, info.nrows, info.nnz, type, K, close),
              "%s (%s): sr_sddmm (K = %lld, %s, alpha %g, beta %g) differs from %s", what, on == ctx ? "CPU" : "GPU",
              (long long)K, c & 2 ? "pattern" : "values", alpha, beta, sr_semiring_name(builtin));
        sr_matrix_free(C1), sr_matrix_free(C2);
        free(a), free(b);
    }
    unsetenv("SPARSERING_SDDMM_GEMM");
}

/* NVRTC builds the GPU's product kernels with the user's operators for sm_90, with no GPU needed:
 * a CUDA build checks that the shared kernels (src/cuda/cuda_spmm_kernels.cuh) and the generated
 * source compile under NVRTC on every machine; the GPU gate runs them. */
static void check_gpu_compile(sr_semiring user, const char *what)
{
    size_t bytes = 0;
    const double t0 = seconds();
    const sr_status st = sr_cuda_user_compile_check(user, 90, &bytes);
    if (st == SR_ERROR_NO_DEVICE) /* built without CUDA */
        return;
    CHECK(st == SR_SUCCESS && bytes > 0, "%s: NVRTC: %s", what, sr_last_error());
    printf("%s: NVRTC compiled the GPU kernels (sm_90, %zu bytes) in %.0f ms\n", what, bytes, 1e3 * (seconds() - t0));
}

/* kBuiltins[b] in `type` as a user semiring, named into name (the same definition again gives the
 * same value). */
static sr_semiring builtin_again(size_t b, sr_type type, char *name, size_t size)
{
    snprintf(name, size, "again_%s_%s", sr_semiring_name(kBuiltins[b].builtin), sr_type_name(type));
    return define(name, type, kBuiltins[b].add, NULL, kBuiltins[b].multiply);
}

static void check_builtins_again(void)
{
    for (size_t b = 0; b < sizeof kBuiltins / sizeof *kBuiltins; b++)
        for (size_t t = 0; t < sizeof kTypes / sizeof *kTypes; t++) {
            const sr_type type = kTypes[t];
            char name[64];
            const double t0 = seconds();
            const sr_semiring user = builtin_again(b, type, name, sizeof name);
            if (b == 0 && t == 0)
                printf("first definition (compiled or from the cache): %.0f ms\n", 1e3 * (seconds() - t0));
            if (type == SR_TYPE_FLOAT64 || b == 0) /* every semiring once, and each type once */
                check_gpu_compile(user, name);
            test_csr a = test_random_csr(300, 200, 6, type), bb = test_random_csr(200, 150, 5, type);
            test_csr mk = test_random_csr(300, 150, 20, SR_TYPE_BOOL), mv = test_random_csr(300, 1, 1, SR_TYPE_BOOL);
            sr_matrix A = test_make_matrix(ctx, &a), B = test_make_matrix(ctx, &bb), M = test_make_matrix(ctx, &mk);
            sr_matrix Mv = test_make_matrix(ctx, &mv);
            compare_dense(kBuiltins[b].builtin, user, A, Mv, 300, 200, 1, type, name);
            compare_dense(kBuiltins[b].builtin, user, A, NULL, 300, 200, 37, type, name);
            compare_mxm(kBuiltins[b].builtin, user, A, B, M, name);
            test_csr pat = test_random_csr(200, 150, 7, SR_TYPE_BOOL);
            sr_matrix P = test_make_matrix(ctx, &pat);
            compare_sddmm_on(ctx, kBuiltins[b].builtin, user, B, P, 200, 150, type, name);
            sr_matrix_free(P);
            test_csr_free(&pat);
            test_csr sq = test_random_csr(30, 30, 4, type), sq2 = test_random_csr(30, 30, 4, type);
            sr_matrix S = test_make_matrix(ctx, &sq), S2 = test_make_matrix(ctx, &sq2);
            compare_structural(kBuiltins[b].builtin, user, S, S2, name);
            sr_matrix_free(S), sr_matrix_free(S2);
            test_csr_free(&sq), test_csr_free(&sq2);
            sr_matrix_free(A), sr_matrix_free(B), sr_matrix_free(M), sr_matrix_free(Mv);
            test_csr_free(&a), test_csr_free(&bb), test_csr_free(&mk), test_csr_free(&mv);
        }
    /* ⊕ as an expression with its identity: plus_times's bits again */
    const sr_semiring user = define("plus_by_expression", SR_TYPE_FLOAT64, "a + b", "0.0", "x * y");
    test_csr a = test_random_csr(200, 200, 8, SR_TYPE_FLOAT64);
    sr_matrix A = test_make_matrix(ctx, &a);
    compare_mxm(SR_PLUS_TIMES, user, A, A, NULL, "plus_by_expression");
    sr_matrix_free(A);
    test_csr_free(&a);
}

/* Whether the built-in's C1 and the user semiring's C2 are one matrix; frees both. */
static void check_same_and_free(sr_context on, sr_matrix C1, sr_matrix C2, const char *what, const char *call,
                                sr_semiring builtin)
{
    bool equal = false;
    if (C1 && C2)
        CHECK_OK(sr_matrix_equal(on, C1, C2, &equal));
    CHECK(equal, "%s (GPU): %s differs from %s", what, call, sr_semiring_name(builtin));
    sr_matrix_free(C1), sr_matrix_free(C2);
}

/* On the GPU, by the built-in and by the user semiring: sr_ewise_add and sr_ewise_mult of A and B
 * with and without a mask (complemented too), A's row reduction, the Kronecker product of the
 * small S and S2 (under a mask too): the same pattern and bits. */
static void compare_structural_on(sr_context on, sr_semiring builtin, sr_semiring user, sr_matrix A, sr_matrix B,
                                  sr_matrix mask, sr_matrix S, sr_matrix S2, sr_matrix kron_mask, const char *what)
{
    const sr_descriptor complement = {.mask_complement = true};
    for (int c = 0; c < 6; c++) {
        const bool add = c % 2 == 0;
        sr_matrix M = c < 2 ? NULL : mask;
        const sr_descriptor *d = c >= 4 ? &complement : NULL;
        sr_matrix C1 = NULL, C2 = NULL;
        CHECK_OK(add ? sr_ewise_add(on, &C1, M, builtin, A, B, d) : sr_ewise_mult(on, &C1, M, builtin, A, B, d));
        CHECK_OK(add ? sr_ewise_add(on, &C2, M, user, A, B, d) : sr_ewise_mult(on, &C2, M, user, A, B, d));
        char call[64];
        snprintf(call, sizeof call, "%s%s", add ? "sr_ewise_add" : "sr_ewise_mult",
                 c < 2 ? "" : c < 4 ? " under a mask" : " under a complemented mask");
        check_same_and_free(on, C1, C2, what, call, builtin);
    }
    sr_matrix C1 = NULL, C2 = NULL;
    CHECK_OK(sr_reduce_rows(on, &C1, builtin, A));
    CHECK_OK(sr_reduce_rows(on, &C2, user, A));
    check_same_and_free(on, C1, C2, what, "sr_reduce_rows", builtin);
    for (int masked = 0; masked < 2; masked++) {
        C1 = C2 = NULL;
        CHECK_OK(sr_kronecker(on, &C1, masked ? kron_mask : NULL, builtin, S, S2, NULL));
        CHECK_OK(sr_kronecker(on, &C2, masked ? kron_mask : NULL, user, S, S2, NULL));
        check_same_and_free(on, C1, C2, what, masked ? "sr_kronecker under a mask" : "sr_kronecker", builtin);
    }
}

/* On a GPU: SpMV (split and row kernels) and SpMM (every kernel: 6, 12, 40 and 41 columns, rows
 * short, mid and long) of every built-in written again, compiled by NVRTC, against the built-in's
 * own kernels on the same device: the same bits; and the element-wise, reduction and Kronecker
 * calls (compare_structural_on). */
static void check_gpu_products(void)
{
    sr_context gpu;
    if (!test_context_made(&gpu, SR_BACKEND_CUDA, false, "user semirings' GPU"))
        return;
    for (size_t b = 0; b < sizeof kBuiltins / sizeof *kBuiltins; b++)
        for (size_t t = 0; t < sizeof kTypes / sizeof *kTypes; t++) {
            const sr_type type = kTypes[t];
            char name[64];
            const double t0 = seconds();
            const sr_semiring user = builtin_again(b, type, name, sizeof name);
            test_csr a = test_random_csr(500, 5000, 80, type); /* heavy-tailed: mid and long rows */
            test_csr mv = test_random_csr(500, 1, 1, SR_TYPE_BOOL), mk = test_random_csr(500, 41, 20, SR_TYPE_BOOL);
            test_csr a2 = test_random_csr(500, 5000, 60, type), mw = test_random_csr(500, 5000, 90, SR_TYPE_BOOL);
            test_csr s1 = test_random_csr(30, 20, 4, type), s2 = test_random_csr(25, 30, 5, type);
            test_csr mkron = test_random_csr(750, 600, 60, SR_TYPE_BOOL);
            sr_matrix A = test_make_matrix_at(gpu, &a, SR_DEVICE), Mv = test_make_matrix_at(gpu, &mv, SR_DEVICE);
            sr_matrix M = test_make_matrix_at(gpu, &mk, SR_DEVICE), A2 = test_make_matrix_at(gpu, &a2, SR_DEVICE);
            sr_matrix Mw = test_make_matrix_at(gpu, &mw, SR_DEVICE), S1 = test_make_matrix_at(gpu, &s1, SR_DEVICE);
            sr_matrix S2 = test_make_matrix_at(gpu, &s2, SR_DEVICE), Mk = test_make_matrix_at(gpu, &mkron, SR_DEVICE);
            if (A && A2 && Mw && S1 && S2 && Mk)
                compare_structural_on(gpu, kBuiltins[b].builtin, user, A, A2, Mw, S1, S2, Mk, name);
            if (A2 && Mw)
                compare_sddmm_on(gpu, kBuiltins[b].builtin, user, A2, Mw, 500, 5000, type, name);
            if (A && Mv && M) {
                setenv("SPARSERING_SPMV_KERNEL", "rows", 1);
                compare_dense_on(gpu, kBuiltins[b].builtin, user, A, Mv, 500, 5000, 1, type, name);
                unsetenv("SPARSERING_SPMV_KERNEL");
                compare_dense_on(gpu, kBuiltins[b].builtin, user, A, Mv, 500, 5000, 1, type, name); /* split */
                for (int64_t n = 6; n <= 41; n = n == 6 ? 12 : n == 12 ? 40 : n + 1)
                    compare_dense_on(gpu, kBuiltins[b].builtin, user, A, n == 41 ? M : NULL, 500, 5000, n, type,
                                     name);
            }
            if (b == 0 && t == 0)
                printf("%s on the GPU, compile (or the cache) and the products: %.0f ms\n", name,
                       1e3 * (seconds() - t0));
            sr_matrix_free(A), sr_matrix_free(Mv), sr_matrix_free(M), sr_matrix_free(A2), sr_matrix_free(Mw);
            sr_matrix_free(S1), sr_matrix_free(S2), sr_matrix_free(Mk);
            test_csr_free(&a), test_csr_free(&mv), test_csr_free(&mk), test_csr_free(&a2), test_csr_free(&mw);
            test_csr_free(&s1), test_csr_free(&s2), test_csr_free(&mkron);
        }
    sr_context_destroy(gpu);
}

/* On a GPU, SpGEMM and its row blocks of every built-in written again (the pattern by the
 * built-in structural product, the values by the ordered pass compiled by NVRTC) against the
 * built-in's own kernels on a deterministic context, where the built-in's float sums too are added
 * in A-entry order: the same bits. Products of a few (the ESC rows), hundreds (the warp tables)
 * and thousands (the block tables and dense rows) a row; masks, complement, accumulate. */
static void check_gpu_mxm(void)
{
    sr_context gpu;
    if (!test_context_made(&gpu, SR_BACKEND_CUDA, true, "user semirings' GPU SpGEMM"))
        return;
    for (size_t b = 0; b < sizeof kBuiltins / sizeof *kBuiltins; b++)
        for (size_t t = 0; t < sizeof kTypes / sizeof *kTypes; t++) {
            const sr_type type = kTypes[t];
            char name[64];
            const sr_semiring user = builtin_again(b, type, name, sizeof name);
            test_csr a = test_random_csr(400, 3000, 40, type), thin = test_random_csr(3000, 2000, 3, type);
            test_csr wide = test_random_csr(3000, 300, 60, type);
            test_csr mthin = test_random_csr(400, 2000, 40, SR_TYPE_BOOL), mwide = test_random_csr(400, 300, 90, SR_TYPE_BOOL);
            sr_matrix A = test_make_matrix_at(gpu, &a, SR_DEVICE), Thin = test_make_matrix_at(gpu, &thin, SR_DEVICE);
            sr_matrix Wide = test_make_matrix_at(gpu, &wide, SR_DEVICE);
            sr_matrix Mthin = test_make_matrix_at(gpu, &mthin, SR_DEVICE);
            sr_matrix Mwide = test_make_matrix_at(gpu, &mwide, SR_DEVICE);
            if (A && Thin && Mthin)
                compare_mxm_on(gpu, kBuiltins[b].builtin, user, A, Thin, Mthin, name);
            if (A && Wide && Mwide)
                compare_mxm_on(gpu, kBuiltins[b].builtin, user, A, Wide, Mwide, name);
            compare_row_blocks_on(gpu, kBuiltins[b].builtin, user, A, Wide, name);
            sr_matrix_free(A), sr_matrix_free(Thin), sr_matrix_free(Wide), sr_matrix_free(Mthin), sr_matrix_free(Mwide);
            test_csr_free(&a), test_csr_free(&thin), test_csr_free(&wide), test_csr_free(&mthin), test_csr_free(&mwide);
        }
    sr_context_destroy(gpu);
}

/* Two semirings that are not built in, against a dense reference: (min, max) (the minimax path
 * step) and a (min, +) that saturates at 10 (hop counts capped), in float64 and int32. */
static void check_new_semirings(void)
{
    const sr_semiring minimax = define("minimax", SR_TYPE_FLOAT64, "min", NULL, "x > y ? x : y");
    const sr_semiring capped = define("capped_hops", SR_TYPE_INT32, "min", NULL, "x + y < 10 ? x + y : 10");
    const int64_t m = 60, k = 50, n = 40;
    for (int which = 0; which < 2; which++) {
        const sr_type type = which ? SR_TYPE_INT32 : SR_TYPE_FLOAT64;
        test_csr a = test_random_csr(m, k, 6, type), b = test_random_csr(k, n, 5, type);
        if (which) /* small hop counts: sums pass the cap now and then */
            for (int64_t e = 0; e < a.nnz; e++)
                ((int32_t *)a.values)[e] = 1 + (int32_t)test_below(6);
        if (which)
            for (int64_t e = 0; e < b.nnz; e++)
                ((int32_t *)b.values)[e] = 1 + (int32_t)test_below(6);
        sr_matrix A = test_make_matrix(ctx, &a), B = test_make_matrix(ctx, &b), C = NULL;
        CHECK_OK(sr_mxm(ctx, &C, NULL, which ? capped : minimax, A, B, NULL));
        sr_matrix_info info;
        int64_t wrong = 0, entries = 0;
        if (C && sr_matrix_get_info(C, &info) == SR_SUCCESS) {
            const int64_t *rp;
            const int32_t *ci;
            const void *cv;
            sr_matrix_csr_arrays(C, &rp, &ci, &cv);
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < n; j++) {
                    double best = INFINITY;
                    bool any = false;
                    for (int64_t e = a.rowptr[i]; e < a.rowptr[i + 1]; e++) {
                        const int32_t kk = a.colind[e];
                        for (int64_t f = b.rowptr[kk]; f < b.rowptr[kk + 1]; f++)
                            if (b.colind[f] == j) {
                                const double x = which ? ((int32_t *)a.values)[e] : ((double *)a.values)[e];
                                const double y = which ? ((int32_t *)b.values)[f] : ((double *)b.values)[f];
                                const double p = which ? (x + y < 10 ? x + y : 10) : (x > y ? x : y);
                                best = any ? fmin(best, p) : p;
                                any = true;
                            }
                    }
                    double got = NAN;
                    for (int64_t e = rp[i]; e < rp[i + 1]; e++)
                        if (ci[e] == j)
                            got = which ? ((const int32_t *)cv)[e] : ((const double *)cv)[e];
                    entries += any;
                    wrong += any ? got != best : !isnan(got);
                }
        }
        CHECK(wrong == 0, "%s: %lld of %lld entries differ from the dense reference", which ? "capped_hops" : "minimax",
              (long long)wrong, (long long)entries);
        CHECK(entries > 100, "%s: only %lld entries: the reference checks little", which ? "capped_hops" : "minimax",
              (long long)entries);
        sr_matrix_free(A), sr_matrix_free(B), sr_matrix_free(C);
        test_csr_free(&a), test_csr_free(&b);
    }
}

static void check_refusals(void)
{
    sr_semiring s = SR_PLUS_TIMES;
    sr_semiring_def bad = {"broken", SR_TYPE_FLOAT64, "plus", NULL, "x ** y"};
    CHECK_FAILS(sr_semiring_define(&bad, &s), SR_ERROR_INVALID_ARGUMENT, "does not compile");
    CHECK(strstr(sr_last_error(), "x ** y") != NULL, "the message lacks the expression: %s", sr_last_error());
    CHECK(strstr(sr_last_error(), "error") != NULL, "the message lacks the compiler's: %s", sr_last_error());
    bad.multiply = "x * y"; /* the same name, now well formed: nothing of the failed one stayed */
    CHECK_OK(sr_semiring_define(&bad, &s));
    sr_semiring again = SR_PLUS_TIMES;
    CHECK_OK(sr_semiring_define(&bad, &again));
    CHECK(again == s, "the same definition twice gave %d and %d", (int)s, (int)again);
    sr_semiring_def got;
    CHECK_OK(sr_semiring_definition(s, &got));
    CHECK(strcmp(got.name, "broken") == 0 && strcmp(got.multiply, "x * y") == 0 && got.type == SR_TYPE_FLOAT64,
          "sr_semiring_definition gave %s %s", got.name, got.multiply);
    CHECK(strcmp(sr_semiring_name(s), "broken") == 0, "sr_semiring_name: %s", sr_semiring_name(s));
    bad.multiply = "x + y";
    CHECK_FAILS(sr_semiring_define(&bad, &again), SR_ERROR_INVALID_ARGUMENT, "defined already");
    sr_semiring_def no_identity = {"no_identity", SR_TYPE_FLOAT64, "a > b ? a : b", NULL, "x * y"};
    CHECK_FAILS(sr_semiring_define(&no_identity, &again), SR_ERROR_INVALID_ARGUMENT, "needs its identity");
    sr_semiring_def boolean = {"boolean", SR_TYPE_BOOL, "or", NULL, "x && y"};
    CHECK_FAILS(sr_semiring_define(&boolean, &again), SR_ERROR_INVALID_ARGUMENT, "int32, float32 or float64");
    sr_semiring_def clash = {"min_plus", SR_TYPE_FLOAT64, "min", NULL, "x + y"};
    CHECK_FAILS(sr_semiring_define(&clash, &again), SR_ERROR_INVALID_ARGUMENT, "built-in");
    sr_semiring_def badname = {"Has Space", SR_TYPE_FLOAT64, "min", NULL, "x + y"};
    CHECK_FAILS(sr_semiring_define(&badname, &again), SR_ERROR_INVALID_ARGUMENT, "lower-case letter");
    sr_semiring_def nomul = {"nomul", SR_TYPE_FLOAT64, "min", NULL, ""};
    CHECK_FAILS(sr_semiring_define(&nomul, &again), SR_ERROR_INVALID_ARGUMENT, "no multiply");
    CHECK_FAILS(sr_semiring_define(NULL, &again), SR_ERROR_INVALID_ARGUMENT, "NULL");

    /* a float32 matrix under a float64 semiring */
    test_csr a = test_random_csr(30, 30, 3, SR_TYPE_FLOAT32), d = test_random_csr(30, 30, 3, SR_TYPE_FLOAT64);
    sr_matrix A = test_make_matrix(ctx, &a), D = test_make_matrix(ctx, &d), C = NULL;
    CHECK_FAILS(sr_mxm(ctx, &C, NULL, s, A, A, NULL), SR_ERROR_INVALID_ARGUMENT, "defined on float64 values");
    static double a_rows[30 * 4], b_rows[30 * 4];
    sr_dense Ad = sr_dense_view(a_rows, 30, 4, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    sr_dense Bd = sr_dense_view(b_rows, 30, 4, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    CHECK_OK(sr_sddmm(ctx, &C, s, 1.0, D, &Ad, &Bd, 0.0, NULL)); /* SDDMM takes them */
    sr_matrix_free(C);
    sr_matrix_free(A), sr_matrix_free(D);
    test_csr_free(&a), test_csr_free(&d);
}

int main(void)
{
    test_seed("test_user_semirings");
    sr_context_options o = sr_context_options_default();
    o.backend = SR_BACKEND_CPU;
    CHECK_OK(sr_context_create(&ctx, &o));
    check_refusals();
    check_builtins_again();
    check_gpu_products();
    check_gpu_mxm();
    check_new_semirings();
    sr_context_destroy(ctx);
    return test_finish("test_user_semirings");
}
