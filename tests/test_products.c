/* Semiring products (spmv, spmm, mxm) with masks, complement, accumulate and transpose, against
 * an independent dense reference in double precision, on the CPU backend and (when present) CUDA. */
#include "test_util.h"

static const sr_semiring all_semirings[] = {SR_PLUS_TIMES, SR_MIN_PLUS, SR_MAX_PLUS, SR_MAX_TIMES, SR_MIN_TIMES,
                                            SR_MAX_MIN,    SR_OR_AND,   SR_PLUS_PAIR, SR_ANY_PAIR};

/* ---------------------------------------------------------------- the reference */

static bool is_min(sr_semiring s) { return s == SR_MIN_PLUS || s == SR_MIN_TIMES; }
static bool is_max(sr_semiring s) { return s == SR_MAX_PLUS || s == SR_MAX_TIMES || s == SR_MAX_MIN; }

static double ref_identity(sr_semiring s, sr_type out)
{
    if (is_min(s))
        return out == SR_TYPE_INT32 ? 2147483647.0 : INFINITY;
    if (is_max(s))
        return out == SR_TYPE_INT32 ? -2147483648.0 : -INFINITY;
    return 0.0;
}

static double ref_add(sr_semiring s, double a, double b)
{
    if (is_min(s))
        return a < b ? a : b;
    if (is_max(s))
        return a > b ? a : b;
    if (s == SR_OR_AND || s == SR_ANY_PAIR)
        return (a != 0 || b != 0) ? 1 : 0;
    return a + b;
}

static double ref_mul(sr_semiring s, double a, double b)
{
    switch (s) {
    case SR_PLUS_TIMES:
    case SR_MAX_TIMES:
    case SR_MIN_TIMES: return a * b;
    case SR_MIN_PLUS:
    case SR_MAX_PLUS: return a + b;
    case SR_MAX_MIN: return a < b ? a : b;
    case SR_OR_AND: return (a != 0 && b != 0) ? 1 : 0;
    default: return 1; /* pair */
    }
}

/* A dense copy with presence flags. */
typedef struct {
    int64_t nrows, ncols;
    double *v;
    unsigned char *present;
} ref_matrix;

static ref_matrix ref_from(const test_csr *m)
{
    ref_matrix r = {m->nrows, m->ncols, calloc((size_t)(m->nrows * m->ncols + 1), sizeof(double)),
                    calloc((size_t)(m->nrows * m->ncols + 1), 1)};
    for (int64_t i = 0; i < m->nrows; i++)
        for (int64_t k = m->rowptr[i]; k < m->rowptr[i + 1]; k++) {
            r.v[i * m->ncols + m->colind[k]] = test_csr_at(m, i, m->colind[k]);
            r.present[i * m->ncols + m->colind[k]] = 1;
        }
    return r;
}

static void ref_free(ref_matrix *r)
{
    free(r->v);
    free(r->present);
}

/* Tolerance for comparing against the double reference: exact for int32 and pattern results. */
/* scale: the size of the terms summed (a sum that cancels keeps their rounding errors) */
static bool close_enough_scaled(double got, double want, double scale, sr_type out)
{
    if (isinf(want) || isinf(got))
        return got == want;
    if (out == SR_TYPE_INT32 || out == SR_TYPE_BOOL)
        return got == want;
    double tol = out == SR_TYPE_FLOAT32 ? 2e-5 : 1e-12;
    return fabs(got - want) <= tol * (1.0 + fmax(fabs(want), scale)) * 8;
}

static bool close_enough(double got, double want, sr_type out) { return close_enough_scaled(got, want, 0, out); }

/* ---------------------------------------------------------------- helpers */

static sr_context ctx;
static sr_location where; /* where the matrices under test live */

static sr_matrix place(const test_csr *m) { return test_make_matrix_at(ctx, m, where); }

/* Elements between the end of a dense row (or column) and the start of the next; 0: packed. */
static int64_t dense_padding = 0;

static void *dense_alloc(int64_t nrows, int64_t ncols, sr_type type, sr_layout layout, sr_dense *d)
{
    *d = sr_dense_view(NULL, nrows, ncols, type, layout, SR_HOST);
    d->ld += dense_padding;
    d->data = calloc((size_t)((layout == SR_ROW_MAJOR ? nrows : ncols) * d->ld + 1), sr_type_size(type));
    return d->data;
}

static void dense_set(const sr_dense *d, int64_t i, int64_t j, double v)
{
    size_t at = d->layout == SR_ROW_MAJOR ? (size_t)(i * d->ld + j) : (size_t)(j * d->ld + i);
    switch (d->type) {
    case SR_TYPE_BOOL: ((uint8_t *)d->data)[at] = v != 0; break;
    case SR_TYPE_INT32: ((int32_t *)d->data)[at] = (int32_t)v; break;
    case SR_TYPE_FLOAT32: ((float *)d->data)[at] = (float)v; break;
    case SR_TYPE_FLOAT64: ((double *)d->data)[at] = v; break;
    }
}

/* ---------------------------------------------------------------- dense-output products */

/* C = A B (n columns) against the reference, for A placed from a; A stays the caller's. */
static void check_spmm_on(sr_matrix A, const test_csr *a, sr_semiring s, int64_t n, bool use_mask, bool complement,
                          bool accumulate, sr_layout b_layout, sr_layout c_layout)
{
    sr_type in = a->type, out;
    if (sr_semiring_output_type(s, in, &out) != SR_SUCCESS)
        return;
    const int64_t m = a->nrows, k = a->ncols;
    test_csr mk = test_random_csr(m, n, n > 4 ? 3 : 1, SR_TYPE_BOOL);
    sr_matrix M = use_mask ? place(&mk) : NULL;
    ref_matrix ra = ref_from(a), rm = ref_from(&mk);
    sr_dense B, C;
    dense_alloc(k, n, in, b_layout, &B);
    dense_alloc(m, n, out, c_layout, &C);
    double *bref = malloc((size_t)(k * n + 1) * sizeof(double)), *cold = malloc((size_t)(m * n + 1) * sizeof(double));
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j < n; j++) {
            double v = in == SR_TYPE_BOOL ? (double)test_below(2)
                       : in == SR_TYPE_INT32 ? (double)(int32_t)(test_below(200) - 100)
                       : in == SR_TYPE_FLOAT32 ? (double)(float)(test_uniform() * 4 - 2)
                                               : test_uniform() * 4 - 2;
            bref[i * n + j] = v;
            dense_set(&B, i, j, v);
        }
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) { /* old C: a poison that accumulate and masks must respect */
            double v = out == SR_TYPE_BOOL ? (double)test_below(2) : (double)(int)(test_below(50) - 25);
            cold[i * n + j] = v;
            dense_set(&C, i, j, v);
        }
    sr_descriptor d = {.accumulate = accumulate, .mask_complement = complement};
    sr_status st = n == 1 && test_below(2) ? sr_spmv(ctx, &C, M, s, A, &B, &d) : sr_spmm(ctx, &C, M, s, A, &B, &d);
    CHECK(st == SR_SUCCESS, "%s %s: %s", sr_semiring_name(s), sr_type_name(in), sr_last_error());
    int bad = 0;
    for (int64_t i = 0; st == SR_SUCCESS && i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double want = cold[i * n + j], scale = fabs(want);
            bool allowed = !use_mask || ((rm.present[i * n + j] != 0) != complement);
            if (allowed) {
                double acc = ref_identity(s, out);
                for (int64_t q = 0; q < k; q++)
                    if (ra.present[i * k + q]) {
                        double term = ref_mul(s, ra.v[i * k + q], bref[q * n + j]);
                        acc = ref_add(s, acc, term);
                        scale += isfinite(term) ? fabs(term) : 0.0;
                    }
                want = accumulate ? ref_add(s, cold[i * n + j], acc) : acc;
                if (out == SR_TYPE_INT32 && accumulate && s == SR_PLUS_TIMES)
                    want = (double)(int32_t)want;
            }
            double got = test_dense_at(&C, i, j);
            if (!close_enough_scaled(got, want, scale, out) && bad++ < 3)
                fprintf(stderr, "  (%lld,%lld) got %.9g want %.9g\n", (long long)i, (long long)j, got, want);
        }
    CHECK(bad == 0, "spmm %s %s %lldx%lldx%lld mask %d compl %d acc %d layouts %d%d on %s: %d wrong",
          sr_semiring_name(s), sr_type_name(in), (long long)m, (long long)k, (long long)n, use_mask, complement,
          accumulate, b_layout, c_layout, where == SR_DEVICE ? "device" : "host", bad);
    free(B.data);
    free(C.data);
    free(bref);
    free(cold);
    ref_free(&ra);
    ref_free(&rm);
    sr_matrix_free(M);
    test_csr_free(&mk);
}

static void check_spmm_degree(sr_semiring s, sr_type in, int64_t m, int64_t k, int64_t n, double degree, bool use_mask,
                              bool complement, bool accumulate, sr_layout b_layout, sr_layout c_layout)
{
    test_csr a = test_random_csr(m, k, degree, in);
    sr_matrix A = place(&a);
    check_spmm_on(A, &a, s, n, use_mask, complement, accumulate, b_layout, c_layout);
    sr_matrix_free(A);
    test_csr_free(&a);
}

/* One matrix of short, mid and long rows through several products: the device builds a row plan
 * for SpMM and another for SpMV on first use and reuses them (a stale or mixed-up plan gives wrong
 * rows). SpMV also goes through the row kernel, whose long rows take the chunk path. */
static void check_spmm_reuse(sr_semiring s, sr_type in)
{
    test_csr a = test_random_csr(40, 5000, 300, in);
    sr_matrix A = place(&a);
    const int64_t widths[] = {8, 1, 128, 8, 24, 1};
    for (int t = 0; t < 6; t++) {
        if (t == 1)
            setenv("SPARSERING_SPMV_KERNEL", "rows", 1);
        check_spmm_on(A, &a, s, widths[t], test_below(2), test_below(2), test_below(2), SR_ROW_MAJOR, SR_ROW_MAJOR);
        unsetenv("SPARSERING_SPMV_KERNEL");
    }
    sr_matrix_free(A);
    test_csr_free(&a);
}

static void check_spmm(sr_semiring s, sr_type in, int64_t m, int64_t k, int64_t n, bool use_mask, bool complement,
                       bool accumulate, sr_layout b_layout, sr_layout c_layout)
{
    check_spmm_degree(s, in, m, k, n, 4, use_mask, complement, accumulate, b_layout, c_layout);
}

/* ---------------------------------------------------------------- sparse products */

static void check_mxm(sr_semiring s, sr_type in, int64_t m, int64_t k, int64_t n, double degree, bool use_mask,
                      bool complement, bool accumulate, bool transpose_b)
{
    sr_type out;
    if (sr_semiring_output_type(s, in, &out) != SR_SUCCESS)
        return;
    test_csr a = test_random_csr(m, k, degree, in);
    test_csr b = transpose_b ? test_random_csr(n, k, degree, in) : test_random_csr(k, n, degree, in);
    test_csr mk = test_random_csr(m, n, n / 3.0 + 1, SR_TYPE_BOOL), c0 = test_random_csr(m, n, 2, out);
    sr_matrix A = place(&a), B = place(&b), M = use_mask ? place(&mk) : NULL, C = accumulate ? place(&c0) : NULL;
    ref_matrix ra = ref_from(&a), rb = ref_from(&b), rm = ref_from(&mk), rc = ref_from(&c0);
    sr_descriptor d = {.accumulate = accumulate, .mask_complement = complement, .transpose_b = transpose_b};
    sr_status st = sr_mxm(ctx, &C, M, s, A, B, &d);
    CHECK(st == SR_SUCCESS, "mxm %s %s: %s", sr_semiring_name(s), sr_type_name(in), sr_last_error());
    if (st != SR_SUCCESS)
        goto done;
    sr_matrix_info info;
    sr_matrix_get_info(C, &info);
    CHECK(info.type == out && info.nrows == m && info.ncols == n && info.location == where, "mxm result info");
    /* read the result back as dense values + pattern */
    int64_t *rp = malloc((size_t)(m + 1) * sizeof *rp);
    int32_t *ci = malloc((size_t)(info.nnz + 1) * sizeof *ci);
    double *cv = calloc((size_t)(info.nnz + 1), sizeof *cv);
    void *raw = malloc((size_t)(info.nnz + 1) * 8);
    CHECK_OK(sr_matrix_export_csr(ctx, C, rp, ci, raw, SR_HOST));
    for (int64_t q = 0; q < info.nnz; q++)
        cv[q] = sr_type_size(out) && out != SR_TYPE_BOOL ? (out == SR_TYPE_INT32 ? ((int32_t *)raw)[q]
                                                            : out == SR_TYPE_FLOAT32 ? ((float *)raw)[q]
                                                                                     : ((double *)raw)[q])
                                                         : 1.0;
    int bad = 0;
    int64_t expected_nnz = 0;
    for (int64_t i = 0; i < m; i++) {
        int64_t q = rp[i];
        for (int64_t j = 0; j < n; j++) {
            bool allowed = !use_mask || ((rm.present[i * n + j] != 0) != complement);
            bool any = false;
            double acc = ref_identity(s, out);
            for (int64_t p = 0; allowed && p < k; p++) {
                double bv = transpose_b ? rb.v[j * k + p] : rb.v[p * n + j];
                bool bp = transpose_b ? rb.present[j * k + p] : rb.present[p * n + j];
                if (ra.present[i * k + p] && bp) {
                    acc = ref_add(s, acc, ref_mul(s, ra.v[i * k + p], bv));
                    any = true;
                }
            }
            bool old = accumulate && rc.present[i * n + j];
            double want = any && old ? ref_add(s, rc.v[i * n + j], acc) : any ? acc : rc.v[i * n + j];
            if (!any && !old)
                continue;
            expected_nnz++;
            if (q >= rp[i + 1] || ci[q] != j) {
                if (bad++ < 3)
                    fprintf(stderr, "  missing (%lld,%lld)\n", (long long)i, (long long)j);
                continue;
            }
            if (!close_enough(cv[q], want, out) && bad++ < 3)
                fprintf(stderr, "  (%lld,%lld) got %.9g want %.9g\n", (long long)i, (long long)j, cv[q], want);
            q++;
        }
        if (q != rp[i + 1] && bad++ < 3)
            fprintf(stderr, "  row %lld has extra entries\n", (long long)i);
    }
    CHECK(bad == 0 && expected_nnz == info.nnz,
          "mxm %s %s %lldx%lldx%lld mask %d compl %d acc %d trans %d on %s: %d wrong, nnz %lld vs %lld",
          sr_semiring_name(s), sr_type_name(in), (long long)m, (long long)k, (long long)n, use_mask, complement,
          accumulate, transpose_b, where == SR_DEVICE ? "device" : "host", bad, (long long)info.nnz,
          (long long)expected_nnz);
    free(rp);
    free(ci);
    free(cv);
    free(raw);
done:
    sr_matrix_free(A);
    sr_matrix_free(B);
    sr_matrix_free(M);
    sr_matrix_free(C);
    ref_free(&ra);
    ref_free(&rb);
    ref_free(&rm);
    ref_free(&rc);
    test_csr_free(&a);
    test_csr_free(&b);
    test_csr_free(&mk);
    test_csr_free(&c0);
}

static void test_errors(void)
{
    test_csr a = test_random_csr(5, 4, 2, SR_TYPE_FLOAT32), b = test_random_csr(3, 6, 2, SR_TYPE_FLOAT32);
    sr_matrix A = place(&a), B = place(&b), C = NULL;
    CHECK_FAILS(sr_mxm(ctx, &C, NULL, SR_PLUS_TIMES, A, B, NULL), SR_ERROR_INVALID_ARGUMENT,
                "A is 5 x 4 but B has 3 rows");
    CHECK_FAILS(sr_mxm(ctx, &C, NULL, SR_OR_AND, A, A, NULL), SR_ERROR_INVALID_ARGUMENT, "or_and needs bool");
    CHECK_FAILS(sr_mxm(ctx, &C, NULL, (sr_semiring)42, A, A, NULL), SR_ERROR_INVALID_ARGUMENT, "unknown semiring 42");
    float x[4], y[5];
    sr_dense xv = sr_vector_view(x, 4, SR_TYPE_FLOAT32, SR_HOST), yv = sr_vector_view(y, 5, SR_TYPE_FLOAT64, SR_HOST);
    CHECK_FAILS(sr_spmv(ctx, &yv, NULL, SR_PLUS_TIMES, A, &xv, NULL), SR_ERROR_INVALID_ARGUMENT,
                "C has type float64 but plus_times on float32 gives float32");
    CHECK(C == NULL, "failed mxm wrote C");
    sr_matrix_free(A);
    sr_matrix_free(B);
    test_csr_free(&a);
    test_csr_free(&b);
}

/* Off a context spanning several GPUs, sr_mxm_row_blocks gives one block: sr_mxm's product, on
 * ctx, gathered into a copy of itself; and its arguments are checked as sr_mxm's. */
static void check_row_blocks(void)
{
    test_csr a = test_random_csr(60, 40, 5, SR_TYPE_FLOAT64), b = test_random_csr(40, 50, 4, SR_TYPE_FLOAT64);
    sr_matrix A = place(&a), B = place(&b), C = NULL, G = NULL, block = NULL;
    sr_row_blocks R = NULL;
    CHECK_OK(sr_mxm(ctx, &C, NULL, SR_PLUS_TIMES, A, B, NULL));
    CHECK_OK(sr_mxm_row_blocks(ctx, &R, SR_PLUS_TIMES, A, B));
    CHECK(sr_row_blocks_count(R) == 1, "%d row blocks on one device, expected 1", sr_row_blocks_count(R));
    int64_t first = -1;
    CHECK_OK(sr_row_blocks_get(R, 0, &block, &first));
    CHECK(first == 0 && sr_row_blocks_context(R, 0) == ctx && sr_row_blocks_context(R, 1) == NULL,
          "the one block starts at row %lld, or its context is not the call's", (long long)first);
    bool same = false;
    CHECK_OK(sr_matrix_equal(ctx, block, C, &same));
    CHECK(same, "the one row block differs from sr_mxm's product");
    CHECK_OK(sr_row_blocks_gather(R, &G));
    CHECK_OK(sr_matrix_equal(ctx, G, C, &same));
    CHECK(same, "the gathered row blocks differ from sr_mxm's product");
    CHECK_FAILS(sr_row_blocks_get(R, 1, &block, &first), SR_ERROR_INVALID_ARGUMENT, "block 1 of 1");
    CHECK_OK(sr_row_blocks_free(R));
    R = NULL;
    CHECK_FAILS(sr_mxm_row_blocks(ctx, &R, SR_PLUS_TIMES, B, B), SR_ERROR_INVALID_ARGUMENT, "has 40 rows");
    CHECK(R == NULL && sr_row_blocks_count(R) == 0, "a failed call left row blocks");
    CHECK_OK(sr_row_blocks_free(NULL));
    sr_matrix_free(G);
    sr_matrix_free(C);
    sr_matrix_free(A);
    sr_matrix_free(B);
    test_csr_free(&a);
    test_csr_free(&b);
}

static void run_all(void)
{
    check_row_blocks();
    const sr_type types[] = {SR_TYPE_BOOL, SR_TYPE_INT32, SR_TYPE_FLOAT32, SR_TYPE_FLOAT64};
    test_errors();
    for (int si = 0; si < SR_SEMIRING_COUNT; si++)
        for (int ti = 0; ti < 4; ti++) {
            sr_semiring s = all_semirings[si];
            /* shapes: degenerate, vectors, skewed */
            check_spmm(s, types[ti], 0, 5, 3, false, false, false, SR_ROW_MAJOR, SR_ROW_MAJOR);
            check_spmm(s, types[ti], 1, 1, 1, false, false, false, SR_ROW_MAJOR, SR_COL_MAJOR);
            check_spmm(s, types[ti], 60, 40, 1, false, false, false, SR_COL_MAJOR, SR_COL_MAJOR);
            check_spmm(s, types[ti], 70, 50, 7, true, false, false, SR_ROW_MAJOR, SR_ROW_MAJOR);
            check_spmm(s, types[ti], 70, 50, 9, true, true, true, SR_COL_MAJOR, SR_ROW_MAJOR);
            check_spmm(s, types[ti], 90, 33, 32, false, false, true, SR_ROW_MAJOR, SR_COL_MAJOR);
            /* B wider than the CPU's register chunk (128 bytes) for every type, with a tail; on the
             * host also with padded views (a column-major B goes through a row-major copy there) */
            dense_padding = where == SR_HOST ? 3 : 0;
            check_spmm(s, types[ti], 80, 40, 150, test_below(2), test_below(2), test_below(2),
                       test_below(2) ? SR_ROW_MAJOR : SR_COL_MAJOR, test_below(2) ? SR_ROW_MAJOR : SR_COL_MAJOR);
            dense_padding = 0;
            /* K = 64 and 128, row-major: the device's vector kernel (16-byte loads of B's rows),
             * with vector stores into C (accumulating) and with element writes (a mask) */
            check_spmm(s, types[ti], 70, 60, 128, false, false, true, SR_ROW_MAJOR, SR_ROW_MAJOR);
            check_spmm(s, types[ti], 70, 60, 64, true, test_below(2), test_below(2), SR_ROW_MAJOR, SR_ROW_MAJOR);
            check_spmm(s, types[ti], 300, 200, 1, test_below(2), test_below(2), test_below(2), SR_COL_MAJOR,
                       SR_COL_MAJOR);
            /* rows of thousands of entries among short and empty ones: the device's entry-split
             * SpMV (forced with SPARSERING_SPMV_KERNEL=split) then has rows across several tiles */
            check_spmm_degree(s, types[ti], 50, 5000, 1, 300, test_below(2), test_below(2), test_below(2), SR_COL_MAJOR,
                              SR_COL_MAJOR);
            /* SpMM over the same kind of rows: short ones in lane groups, the device's mid rows
             * (65 to 2048 entries) a block each, longer ones in chunks; G = 8, 32 and the vector kernel */
            check_spmm_degree(s, types[ti], 40, 5000, 8, 300, test_below(2), test_below(2), test_below(2), SR_COL_MAJOR,
                              SR_ROW_MAJOR);
            check_spmm_degree(s, types[ti], 40, 5000, 24, 300, test_below(2), test_below(2), test_below(2),
                              SR_ROW_MAJOR, SR_ROW_MAJOR);
            check_spmm_degree(s, types[ti], 40, 5000, 128, 300, false, false, test_below(2), SR_ROW_MAJOR,
                              SR_ROW_MAJOR);
            check_spmm_reuse(s, types[ti]);
            check_mxm(s, types[ti], 0, 4, 4, 1, false, false, false, false);
            check_mxm(s, types[ti], 1, 1, 1, 1, false, false, false, false);
            check_mxm(s, types[ti], 40, 30, 35, 3, false, false, false, false);
            check_mxm(s, types[ti], 40, 30, 35, 3, true, false, false, false);
            check_mxm(s, types[ti], 40, 30, 35, 3, true, true, true, false);
            check_mxm(s, types[ti], 60, 50, 45, 5, false, false, true, true);
            check_mxm(s, types[ti], 120, 80, 100, 12, test_below(2), test_below(2), test_below(2), test_below(2));
            /* output rows of hundreds of entries (the host's radix sort): columns in one byte, and in two */
            check_mxm(s, types[ti], 30, 120, 250, 40, false, false, test_below(2), false);
            check_mxm(s, types[ti], 30, 80, 3000, 30, test_below(2), test_below(2), test_below(2), test_below(2));
            /* the host's two ways: one pass into growing per-thread rows (the default at these sizes),
             * and a count pass sizing C first */
            for (int forced = 0; forced < 2 && where == SR_HOST; forced++) {
                setenv("SPARSERING_MXM_ONE_PASS", forced ? "1" : "0", 1);
                check_mxm(s, types[ti], 120, 80, 100, 12, test_below(2), test_below(2), test_below(2), test_below(2));
                check_mxm(s, types[ti], 300, 200, 3000, 30, test_below(2), test_below(2), test_below(2), false);
                unsetenv("SPARSERING_MXM_ONE_PASS");
            }
        }
}

int main(void)
{
    test_seed("test_products");
    test_on_each_backend(&ctx, &where, run_all);
    return test_finish("test_products");
}
