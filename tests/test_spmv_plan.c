/* sr_spmv_plan: an SpMV on a planned matrix gives, bit for bit, what the plain call gave, for
 * every kernel a plan can pick (SPARSERING_SPMV_PLAN forces each: on the CPU the renumbered
 * columns; on CUDA the cached tiles alone, and the hot-column kernel), on skewed matrices with hot and cold columns, every value type, several semirings, masks,
 * accumulate and strided x; the plain results are checked against a float64 reference. Also:
 * what the analysis reports, matrices a plan cannot serve, dropping a plan, SpMM beside it. */
#include "test_util.h"

static sr_context ctx;
static sr_location where;

/* y(i) = Σ A(i,k) x(k) in float64: the reference for plus_times. */
/* Row i of A·x in float64, and the sum of its terms' magnitudes (*scale): a float32 sum over a hub
 * row of thousands of terms may lose digits to cancellation, bounded by the terms, not the sum. */
static double reference_row(const test_csr *m, const double *x, int64_t i, double *scale)
{
    double sum = 0;
    *scale = 0;
    for (int64_t k = m->rowptr[i]; k < m->rowptr[i + 1]; k++) {
        const double t = test_csr_at(m, i, m->colind[k]) * x[m->colind[k]];
        sum += t;
        *scale += fabs(t);
    }
    return sum;
}

static void fill_x(sr_type type, void *x, double *x64, int64_t n, int64_t stride)
{
    for (int64_t j = 0; j < n; j++) {
        test_random_value(type, x, j * stride);
        const size_t at = (size_t)(j * stride);
        x64[j] = type == SR_TYPE_INT32 ? ((int32_t *)x)[at] : type == SR_TYPE_FLOAT32 ? ((float *)x)[at]
                                                                                      : ((double *)x)[at];
    }
}

/* y = A ⊕.⊗ x into y, whose old values (for accumulate and the mask) are `old`. */
static void spmv(sr_matrix A, sr_semiring s, const sr_dense *x, void *y, const void *old, size_t bytes, int64_t m,
                 sr_type out, sr_matrix mask, bool accumulate)
{
    memcpy(y, old, bytes);
    sr_dense yv = sr_vector_view(y, m, out, SR_HOST);
    sr_descriptor d = {0};
    d.accumulate = accumulate;
    CHECK_OK(sr_spmv(ctx, &yv, mask, s, A, x, &d));
}

/* A random m x 1 mask pattern on the context's side. */
static sr_matrix random_mask(int64_t m)
{
    test_csr k = {m, 1, 0, SR_TYPE_BOOL, calloc((size_t)m + 1, sizeof(int64_t)), malloc((size_t)m * sizeof(int32_t) + 4),
                  NULL};
    for (int64_t i = 0; i < m; i++) {
        const bool on = test_below(3) != 0;
        if (on)
            k.colind[k.nnz++] = 0;
        k.rowptr[i + 1] = k.nnz;
    }
    sr_matrix M = test_make_matrix_at(ctx, &k, where);
    test_csr_free(&k);
    return M;
}

static const sr_semiring semirings[] = {SR_PLUS_TIMES, SR_MIN_PLUS, SR_MAX_TIMES};

/* Plain results for every semiring, mask and accumulate case; a plan under `mode`; the same calls
 * again must match bit for bit. */
static void check_identical(const test_csr *m, const char *mode, bool strided_x)
{
    const int64_t stride = strided_x ? 3 : 1;
    void *x = calloc((size_t)(m->ncols * stride + 1), 8);
    double *x64 = malloc((size_t)(m->ncols + 1) * sizeof(double));
    fill_x(m->type, x, x64, m->ncols, stride);
    const sr_dense xv = strided_x ? sr_dense_view(x, m->ncols, 1, m->type, SR_ROW_MAJOR, SR_HOST)
                                  : sr_vector_view(x, m->ncols, m->type, SR_HOST);
    sr_dense xs = xv;
    if (strided_x)
        xs.ld = stride; /* a row-major n x 1 view: elements ld apart */
    sr_matrix A = test_make_matrix_at(ctx, m, where), mask = random_mask(m->nrows);
    const size_t es = sr_type_size(m->type), bytes = (size_t)m->nrows * es + 8;
    enum { CASES = 3 * 3 }; /* semirings x {plain, masked, accumulate} */
    unsigned char *plain[CASES], *old = malloc(bytes), *y = malloc(bytes);
    for (int64_t i = 0; i < m->nrows; i++)
        test_random_value(m->type, old, i);
    for (int c = 0; c < CASES; c++) {
        plain[c] = malloc(bytes);
        spmv(A, semirings[c / 3], &xs, plain[c], old, bytes, m->nrows, m->type, c % 3 == 1 ? mask : NULL, c % 3 == 2);
    }
    /* the plain call against the reference (plus_times, unmasked; int32 sums are exact) */
    double worst = 0;
    const sr_dense plain0 = sr_vector_view(plain[0], m->nrows, m->type, SR_HOST);
    for (int64_t i = 0; i < m->nrows; i++) {
        double scale;
        const double want = reference_row(m, x64, i, &scale);
        const double got = test_dense_at(&plain0, i, 0);
        const double err = fabs(got - want) / (1 + scale);
        worst = err > worst ? err : worst;
    }
    CHECK(worst < (m->type == SR_TYPE_FLOAT32 ? 1e-4 : 1e-12), "%s: plain SpMV off the reference by %g", mode, worst);

    if (mode)
        setenv("SPARSERING_SPMV_PLAN", mode, 1);
    sr_spmv_plan_info info;
    CHECK_OK(sr_spmv_plan(ctx, A, &info));
    unsetenv("SPARSERING_SPMV_PLAN");
    const bool serves = m->type != SR_TYPE_BOOL && m->nnz > 0 && (where == SR_HOST || m->nnz >= m->nrows) &&
                        (!mode || strcmp(mode, "tiles") != 0); /* tiles: the plain call's own cache */
    if (mode) {
        CHECK(info.in_use == serves, "%s on %s, %lld x %lld, %lld entries: in_use %d", mode, test_backend_name(ctx),
              (long long)m->nrows, (long long)m->ncols, (long long)m->nnz, info.in_use);
        if (info.in_use)
            CHECK(info.hot_columns > 0 && info.hot_share > 0 && info.hot_share <= 1,
                  "%s: %lld hot columns with %g of the entries", mode, (long long)info.hot_columns, info.hot_share);
        if (info.in_use)
            CHECK(info.bytes > 0 && info.seconds > 0 && info.plain_seconds > 0 && info.planned_seconds > 0,
                  "%s: bytes %zu, seconds %g / %g / %g", mode, info.bytes, info.seconds, info.plain_seconds,
                  info.planned_seconds);
    }
    if (!info.in_use)
        CHECK(info.hot_columns == 0 && info.bytes == 0, "an unused plan reports %lld columns, %zu bytes",
              (long long)info.hot_columns, info.bytes);
    for (int round = 0; round < 2; round++) { /* twice: the plan is reused */
        for (int c = 0; c < CASES; c++) {
            spmv(A, semirings[c / 3], &xs, y, old, bytes, m->nrows, m->type, c % 3 == 1 ? mask : NULL, c % 3 == 2);
            CHECK(memcmp(y, plain[c], (size_t)m->nrows * es) == 0, "%s on %s, %s, %s: planned SpMV differs",
                  mode ? mode : "auto", test_backend_name(ctx), sr_type_name(m->type), sr_semiring_name(semirings[c / 3]));
        }
    }
    CHECK_OK(sr_spmv_plan_free(ctx, A));
    spmv(A, SR_PLUS_TIMES, &xs, y, old, bytes, m->nrows, m->type, NULL, false);
    CHECK(memcmp(y, plain[0], (size_t)m->nrows * es) == 0, "SpMV after sr_spmv_plan_free differs");
    for (int c = 0; c < CASES; c++)
        free(plain[c]);
    free(old);
    free(y);
    free(x);
    free(x64);
    sr_matrix_free(mask);
    sr_matrix_free(A);
}

/* SpMM (two columns) on a planned matrix is the plain SpMM; the plan stays for the next SpMV. */
static void check_spmm_beside_plan(void)
{
    test_csr m = test_random_csr(500, 3000, 9, SR_TYPE_FLOAT32);
    float *B = malloc((size_t)m.ncols * 2 * sizeof(float)), *C0 = malloc((size_t)m.nrows * 2 * sizeof(float)),
          *C1 = malloc((size_t)m.nrows * 2 * sizeof(float));
    for (int64_t j = 0; j < m.ncols * 2; j++)
        B[j] = (float)test_uniform();
    sr_matrix A = test_make_matrix_at(ctx, &m, where);
    sr_dense Bv = sr_dense_view(B, m.ncols, 2, SR_TYPE_FLOAT32, SR_ROW_MAJOR, SR_HOST);
    sr_dense C0v = sr_dense_view(C0, m.nrows, 2, SR_TYPE_FLOAT32, SR_ROW_MAJOR, SR_HOST);
    sr_dense C1v = sr_dense_view(C1, m.nrows, 2, SR_TYPE_FLOAT32, SR_ROW_MAJOR, SR_HOST);
    CHECK_OK(sr_spmm(ctx, &C0v, NULL, SR_PLUS_TIMES, A, &Bv, NULL));
    setenv("SPARSERING_SPMV_PLAN", where == SR_HOST ? "1" : "hot", 1);
    CHECK_OK(sr_spmv_plan(ctx, A, NULL));
    unsetenv("SPARSERING_SPMV_PLAN");
    CHECK_OK(sr_spmm(ctx, &C1v, NULL, SR_PLUS_TIMES, A, &Bv, NULL));
    CHECK(memcmp(C0, C1, (size_t)m.nrows * 2 * sizeof(float)) == 0, "SpMM on a planned matrix differs");
    CHECK_OK(sr_spmv_plan(ctx, A, NULL)); /* again, unforced: replaces the first */
    sr_matrix_free(A);                     /* frees the plan with it (the sanitizers check) */
    test_csr_free(&m);
    free(B);
    free(C0);
    free(C1);
}

static void run(void)
{
    const char *const cpu_modes[] = {"1", NULL};
    const char *const cuda_modes[] = {"tiles", "hot", NULL};
    const char *const *modes = where == SR_HOST ? cpu_modes : cuda_modes;
    const sr_type types[] = {SR_TYPE_INT32, SR_TYPE_FLOAT32, SR_TYPE_FLOAT64};
    for (int t = 0; t < 3; t++) {
        /* more columns than the slots (hot and cold entries; 20K-49K slots on an H100), skewed */
        test_csr wide = test_random_csr(6000, 160000, 14, types[t]);
        for (const char *const *mode = modes; *mode; mode++)
            check_identical(&wide, *mode, false);
        check_identical(&wide, NULL, t == 1); /* the analysis's own choice; strided x */
        test_csr_free(&wide);
        /* fewer columns than slots: every column hot; long rows cross many tiles */
        test_csr narrow = test_random_csr(300, 700, 150, types[t]);
        for (const char *const *mode = modes; *mode; mode++)
            check_identical(&narrow, *mode, *mode == modes[0]);
        test_csr_free(&narrow);
        /* hub rows of 5K-20K entries: each runs through more than 16 tiles of 256, whose partials
         * the fix-up sums with a block each (the long spans) */
        test_csr hubs = test_random_csr(40, 20000, 4000, types[t]);
        for (const char *const *mode = modes; *mode; mode++)
            check_identical(&hubs, *mode, false);
        test_csr_free(&hubs);
    }
    /* matrices a device plan does not serve: more rows than entries (the row kernel), Boolean */
    test_csr sparse_rows = test_random_csr(5000, 400, 0.3, SR_TYPE_FLOAT32);
    check_identical(&sparse_rows, where == SR_HOST ? "1" : "hot", false);
    test_csr_free(&sparse_rows);
    test_csr empty = test_random_csr(40, 30, 0, SR_TYPE_FLOAT64);
    check_identical(&empty, where == SR_HOST ? "1" : "hot", false);
    test_csr_free(&empty);

    test_csr pattern = test_random_csr(400, 900, 6, SR_TYPE_BOOL);
    sr_matrix P = test_make_matrix_at(ctx, &pattern, where);
    sr_spmv_plan_info info;
    setenv("SPARSERING_SPMV_PLAN", where == SR_HOST ? "1" : "hot", 1);
    CHECK_OK(sr_spmv_plan(ctx, P, &info));
    unsetenv("SPARSERING_SPMV_PLAN");
    CHECK(!info.in_use, "a Boolean matrix got a plan");
    sr_matrix_free(P);
    test_csr_free(&pattern);

    check_spmm_beside_plan();
    CHECK_FAILS(sr_spmv_plan(ctx, NULL, &info), SR_ERROR_INVALID_ARGUMENT, "");
    CHECK_FAILS(sr_spmv_plan_free(ctx, NULL), SR_ERROR_INVALID_ARGUMENT, "");
}

int main(void)
{
    test_seed("test_spmv_plan");
    test_on_each_backend(&ctx, &where, run);
    return test_finish("test_spmv_plan");
}
