/* Sampled products: sr_sddmm / sr_sddmm_values over semirings, types, layouts, K and α/β, and the
 * fused sr_sddmm_spmm (plain and softmax, accumulate), each against a float64 loop, on the CPU
 * backend and (when present) CUDA. */
#include "test_util.h"

static sr_context ctx;
static sr_location where;

static size_t sr_dense_offset_test(const sr_dense *d, int64_t i, int64_t j)
{
    return d->layout == SR_ROW_MAJOR ? (size_t)(i * d->ld + j) : (size_t)(j * d->ld + i);
}

/* A dense m x K operand with random values, in `layout` with a padded leading dimension. */
typedef struct {
    sr_dense view;
    double *ref; /* row-major m x K, the values in double */
} operand;

static operand make_operand(int64_t m, int64_t K, sr_type type, sr_layout layout, int pad)
{
    operand o;
    int64_t ld = (layout == SR_ROW_MAJOR ? K : m) + pad;
    ld = ld > 0 ? ld : 1; /* a view needs ld >= 1 even when empty */
    int64_t outer = layout == SR_ROW_MAJOR ? m : K;
    size_t n = (size_t)(ld * outer + 1);
    void *data = calloc(n, sr_type_size(type));
    o.ref = calloc((size_t)(m * K + 1), sizeof(double));
    o.view = sr_dense_view(data, m, K, type, layout, SR_HOST);
    o.view.ld = ld;
    for (int64_t i = 0; i < m; i++)
        for (int64_t k = 0; k < K; k++) {
            size_t at = sr_dense_offset_test(&o.view, i, k);
            double x = type == SR_TYPE_INT32 ? (double)(test_below(9) - 4) : test_uniform() * 2.0 - 1.0;
            if (type == SR_TYPE_FLOAT32) {
                ((float *)data)[at] = (float)x;
                x = (double)(float)x;
            } else if (type == SR_TYPE_FLOAT64) {
                ((double *)data)[at] = x;
            } else {
                ((int32_t *)data)[at] = (int32_t)x;
            }
            o.ref[i * K + k] = x;
        }
    return o;
}

static void free_operand(operand *o)
{
    free(o->view.data);
    free(o->ref);
}

/* ⊕ over k of A(i,k) ⊗ B(j,k) in double, and the bound on its rounding (sum of |terms|). */
static double ref_dot(sr_semiring s, const double *a, const double *b, int64_t K, double *scale)
{
    double d = s == SR_MIN_PLUS ? INFINITY : s == SR_MAX_TIMES || s == SR_MAX_PLUS ? -INFINITY : 0.0;
    *scale = 0;
    for (int64_t k = 0; k < K; k++) {
        double t = s == SR_MIN_PLUS || s == SR_MAX_PLUS ? a[k] + b[k] : a[k] * b[k];
        *scale += fabs(t);
        d = s == SR_MIN_PLUS ? fmin(d, t) : s == SR_MAX_TIMES || s == SR_MAX_PLUS ? fmax(d, t) : d + t;
    }
    return d;
}

static double got_at(const void *values, sr_type type, int64_t e)
{
    return type == SR_TYPE_FLOAT32 ? ((const float *)values)[e]
           : type == SR_TYPE_FLOAT64 ? ((const double *)values)[e]
                                     : ((const int32_t *)values)[e];
}

/* The descriptor's precision for the whole tiles (the GPU's float32 tile products; the CPU ignores it). */
static sr_precision tile_precision;

/* float32's bound, a term of the sum: the split (EXACT) and the FMAs keep float32's accuracy, one
 * TF32 product about 2^-11 of each operand. */
static double float32_tolerance(int64_t K)
{
    return tile_precision == SR_PRECISION_TF32 ? 2e-3 / (double)(K + 1) : 2e-6;
}

static void check_sddmm(int64_t m, int64_t n, int64_t K, double degree, sr_type type, sr_type stype, sr_semiring s,
                        double alpha, double beta, bool pattern, sr_layout la, sr_layout lb)
{
    if (!test_part_selected()) /* SR_TEST_PART: another part runs it */
        return;
    test_csr sc = test_random_csr(m, n, degree, stype);
    if (stype != SR_TYPE_BOOL && sc.nnz > 2) /* an explicit zero at entry 1: it stays an entry */
        memset((char *)sc.values + sr_type_size(stype), 0, sr_type_size(stype));
    sr_matrix S = test_make_matrix_at(ctx, &sc, where);
    operand A = make_operand(m, K, type, la, 1), B = make_operand(n, K, type, lb, 0);
    sr_descriptor d = {.sample_pattern = pattern, .precision = tile_precision};
    sr_matrix C = NULL;
    CHECK_OK(sr_sddmm(ctx, &C, s, alpha, S, &A.view, &B.view, beta, &d));
    sr_matrix H = NULL;
    if (C)
        CHECK_OK(sr_matrix_copy_to(ctx, C, SR_HOST, &H));
    void *vals = calloc((size_t)(sc.nnz + 1), 8);
    memset(vals, 0xff, (size_t)(sc.nnz + 1) * 8); /* poisoned */
    sr_dense vv = sr_vector_view(vals, sc.nnz, type, SR_HOST);
    CHECK_OK(sr_sddmm_values(ctx, &vv, s, alpha, S, &A.view, &B.view, beta, &d));
    const int64_t *rp = NULL;
    const int32_t *ci = NULL;
    const void *cv = NULL;
    sr_matrix_info info = {0};
    if (H) {
        CHECK_OK(sr_matrix_csr_arrays(H, &rp, &ci, &cv));
        CHECK_OK(sr_matrix_get_info(H, &info));
    }
    CHECK(H && info.nnz == sc.nnz && info.type == type, "sddmm %lldx%lld K=%lld: %lld entries of %s (want %lld)",
          (long long)m, (long long)n, (long long)K, (long long)info.nnz, sr_type_name(info.type), (long long)sc.nnz);
    const double tol = type == SR_TYPE_FLOAT32 ? float32_tolerance(K) : type == SR_TYPE_FLOAT64 ? 1e-13 : 0;
    int64_t bad = 0;
    for (int64_t i = 0; i < m && H && info.nnz == sc.nnz; i++)
        for (int64_t e = sc.rowptr[i]; e < sc.rowptr[i + 1]; e++) {
            const int64_t j = sc.colind[e];
            double scale, dot = ref_dot(s, A.ref + i * K, B.ref + j * K, K, &scale);
            double sv = stype == SR_TYPE_BOOL ? 1.0 : got_at(sc.values, stype, e);
            double x = pattern || stype == SR_TYPE_BOOL ? dot : s == SR_MIN_PLUS || s == SR_MAX_PLUS ? sv + dot : sv * dot;
            if (type == SR_TYPE_INT32 && !(pattern || stype == SR_TYPE_BOOL)) /* int products stay int */
                x = (double)(int32_t)x;
            double want = alpha * x + (beta != 0 ? beta * sv : 0.0);
            double bound = tol * (fabs(alpha) * (scale + fabs(x)) * (fabs(sv) + 1) * (double)(K + 1) + fabs(beta * sv)) + 1e-300;
            if (type == SR_TYPE_INT32)
                want = (double)(int32_t)want, bound = 0.5;
            const double g1 = got_at(cv, type, e), g2 = got_at(vals, type, e);
            if (rp[i] != sc.rowptr[i] || ci[e] != sc.colind[e] || !(fabs(g1 - want) <= bound) ||
                !(fabs(g2 - want) <= bound)) {
                if (bad++ < 3)
                    fprintf(stderr, "  sddmm (%lld,%lld) %s %s K=%lld: got %.17g / %.17g, want %.17g\n", (long long)i,
                            (long long)j, sr_semiring_name(s), sr_type_name(type), (long long)K, g1, g2, want);
            }
        }
    CHECK(bad == 0, "sddmm %lld x %lld, K = %lld, %s on %s, S %s, alpha %g beta %g%s, layouts %d/%d: %lld wrong",
          (long long)m, (long long)n, (long long)K, sr_semiring_name(s), sr_type_name(type), sr_type_name(stype),
          alpha, beta, pattern ? " (pattern)" : "", (int)la, (int)lb, (long long)bad);
    free(vals);
    sr_matrix_free(H);
    sr_matrix_free(C);
    sr_matrix_free(S);
    free_operand(&A);
    free_operand(&B);
    test_csr_free(&sc);
}

/* Whether check_fused samples S's pattern (its values taken as 1). */
static bool fused_pattern;

/* O = N(α·S ⊙ A·Bᵀ)·V in double, row by row. */
static void check_fused(int64_t m, int64_t n, int64_t K, int64_t p, double degree, sr_type type, bool softmax,
                        bool accumulate, sr_layout lo)
{
    if (!test_part_selected()) /* SR_TEST_PART: another part runs it */
        return;
    test_csr sc = test_random_csr(m, n, degree, type);
    sr_matrix S = test_make_matrix_at(ctx, &sc, where);
    operand A = make_operand(m, K, type, SR_ROW_MAJOR, 0), B = make_operand(n, K, type, SR_COL_MAJOR, 0);
    operand V = make_operand(n, p, type, SR_ROW_MAJOR, 0), O0 = make_operand(m, p, type, lo, 0);
    const double alpha = softmax ? 0.7 : -1.3;
    sr_dense o = O0.view; /* on the host: with a device S, staged there and back */
    sr_descriptor d = {.accumulate = accumulate, .sample_pattern = fused_pattern, .precision = tile_precision};
    CHECK_OK(sr_sddmm_spmm(ctx, &o, alpha, S, &A.view, &B.view, &V.view,
                           softmax ? SR_NORMALIZE_SOFTMAX : SR_NORMALIZE_NONE, &d));
    const double tol = type == SR_TYPE_FLOAT32 ? (tile_precision == SR_PRECISION_TF32 ? 2e-3 : 3e-5) : 1e-12;
    int64_t bad = 0;
    double *w = calloc((size_t)(n + 1), sizeof(double)), *row = calloc((size_t)(p + 1), sizeof(double));
    for (int64_t i = 0; i < m; i++) {
        double top = -INFINITY, sum = 0, mag = 0;
        for (int64_t e = sc.rowptr[i]; e < sc.rowptr[i + 1]; e++) {
            double scale;
            w[e - sc.rowptr[i]] = alpha * (fused_pattern ? 1.0 : got_at(sc.values, type, e)) *
                                  ref_dot(SR_PLUS_TIMES, A.ref + i * K, B.ref + sc.colind[e] * K, K, &scale);
            top = fmax(top, w[e - sc.rowptr[i]]);
        }
        for (int64_t e = sc.rowptr[i]; e < sc.rowptr[i + 1]; e++) {
            double *x = &w[e - sc.rowptr[i]];
            if (softmax)
                *x = exp(*x - top), sum += *x;
            mag += fabs(*x);
        }
        for (int64_t c = 0; c < p; c++) {
            row[c] = 0;
            for (int64_t e = sc.rowptr[i]; e < sc.rowptr[i + 1]; e++)
                row[c] += w[e - sc.rowptr[i]] * V.ref[sc.colind[e] * p + c];
            if (softmax && sum > 0)
                row[c] /= sum;
            const double want = row[c] + (accumulate ? O0.ref[i * p + c] : 0.0);
            const double got = test_dense_at(&o, i, c);
            const double bound = tol * (double)(K + 8) * (softmax ? 1.0 : mag + 1.0) * 4 + tol;
            if (!(fabs(got - want) <= bound) && bad++ < 3)
                fprintf(stderr, "  fused (%lld,%lld) K=%lld p=%lld: got %.9g want %.9g\n", (long long)i, (long long)c,
                        (long long)K, (long long)p, got, want);
        }
    }
    CHECK(bad == 0, "fused %lld x %lld, K = %lld, p = %lld, %s%s%s%s: %lld wrong", (long long)m, (long long)n,
          (long long)K, (long long)p, sr_type_name(type), softmax ? " softmax" : "", accumulate ? " accumulate" : "",
          fused_pattern ? " pattern" : "", (long long)bad);
    free(w);
    free(row);
    sr_matrix_free(S);
    free_operand(&A), free_operand(&B), free_operand(&V), free_operand(&O0);
    test_csr_free(&sc);
}

/* A matrix with one long row (600 entries) among short ones: the fused block-per-row path. */
static void check_fused_long_row(sr_type type, bool softmax)
{
    if (!test_part_selected()) /* SR_TEST_PART: another part runs it */
        return;
    test_csr sc = test_random_csr(40, 900, 3, type);
    int64_t extra = 600 - (sc.rowptr[2] - sc.rowptr[1]);
    test_csr big = {40, 900, sc.nnz + extra, type, calloc(41, sizeof(int64_t)),
                    malloc((size_t)(sc.nnz + extra) * sizeof(int32_t)), malloc((size_t)(sc.nnz + extra) * 8)};
    int64_t at = 0;
    for (int64_t i = 0; i < 40; i++) {
        if (i == 1)
            for (int64_t c = 0; c < 600; c++, at++) {
                big.colind[at] = (int32_t)(c * 3 / 2);
                test_random_value(type, big.values, at);
            }
        else
            for (int64_t e = sc.rowptr[i]; e < sc.rowptr[i + 1]; e++, at++) {
                big.colind[at] = sc.colind[e];
                memcpy((char *)big.values + at * sr_type_size(type), (char *)sc.values + e * sr_type_size(type),
                       sr_type_size(type));
            }
        big.rowptr[i + 1] = at;
    }
    big.nnz = at;
    sr_matrix S = test_make_matrix_at(ctx, &big, where);
    const int64_t K = 16, p = 8;
    operand A = make_operand(40, K, type, SR_ROW_MAJOR, 0), B = make_operand(900, K, type, SR_ROW_MAJOR, 0);
    operand V = make_operand(900, p, type, SR_ROW_MAJOR, 0), O = make_operand(40, p, type, SR_ROW_MAJOR, 0);
    CHECK_OK(sr_sddmm_spmm(ctx, &O.view, 0.5, S, &A.view, &B.view, &V.view,
                           softmax ? SR_NORMALIZE_SOFTMAX : SR_NORMALIZE_NONE, NULL));
    int64_t bad = 0;
    for (int64_t i = 0; i < 40; i++) {
        double top = -INFINITY, sum = 0, want[8] = {0}, mag = 0;
        for (int64_t e = big.rowptr[i]; e < big.rowptr[i + 1]; e++) {
            double sc2;
            top = fmax(top, 0.5 * got_at(big.values, type, e) * ref_dot(SR_PLUS_TIMES, A.ref + i * K, B.ref + big.colind[e] * K, K, &sc2));
        }
        for (int64_t e = big.rowptr[i]; e < big.rowptr[i + 1]; e++) {
            double sc2, x = 0.5 * got_at(big.values, type, e) *
                                ref_dot(SR_PLUS_TIMES, A.ref + i * K, B.ref + big.colind[e] * K, K, &sc2);
            if (softmax)
                x = exp(x - top), sum += x;
            mag += fabs(x);
            for (int c = 0; c < p; c++)
                want[c] += x * V.ref[big.colind[e] * p + c];
        }
        for (int c = 0; c < p; c++) {
            double wv = softmax && sum > 0 ? want[c] / sum : want[c];
            double tol = (type == SR_TYPE_FLOAT32 ? 1e-5 : 1e-12) * (softmax ? 4.0 : mag + 1.0) * 8;
            if (!(fabs(test_dense_at(&O.view, i, c) - wv) <= tol) && bad++ < 3)
                fprintf(stderr, "  long row (%lld,%d): got %.9g want %.9g\n", (long long)i, c,
                        test_dense_at(&O.view, i, c), wv);
        }
    }
    CHECK(bad == 0, "fused with a 600-entry row, %s%s: %lld wrong", sr_type_name(type), softmax ? " softmax" : "",
          (long long)bad);
    sr_matrix_free(S);
    free_operand(&A), free_operand(&B), free_operand(&V), free_operand(&O);
    test_csr_free(&sc), test_csr_free(&big);
}

static void check_errors(void)
{
    if (!test_part_selected()) /* SR_TEST_PART: another part runs it */
        return;
    test_csr sc = test_random_csr(5, 4, 2, SR_TYPE_FLOAT32);
    sr_matrix S = test_make_matrix_at(ctx, &sc, where), C = NULL;
    operand A = make_operand(5, 3, SR_TYPE_FLOAT32, SR_ROW_MAJOR, 0), B = make_operand(4, 3, SR_TYPE_FLOAT32, SR_ROW_MAJOR, 0);
    operand Bw = make_operand(4, 2, SR_TYPE_FLOAT32, SR_ROW_MAJOR, 0), Bd = make_operand(4, 3, SR_TYPE_FLOAT64, SR_ROW_MAJOR, 0);
    CHECK_FAILS(sr_sddmm(ctx, &C, SR_PLUS_TIMES, 1, S, &A.view, &Bw.view, 0, NULL), SR_ERROR_INVALID_ARGUMENT, "K columns");
    CHECK_FAILS(sr_sddmm(ctx, &C, SR_PLUS_TIMES, 1, S, &B.view, &A.view, 0, NULL), SR_ERROR_INVALID_ARGUMENT, "A needs");
    CHECK_FAILS(sr_sddmm(ctx, &C, SR_PLUS_TIMES, 1, S, &A.view, &Bd.view, 0, NULL), SR_ERROR_INVALID_ARGUMENT, "type");
    CHECK_FAILS(sr_sddmm(ctx, &C, SR_PLUS_TIMES, NAN, S, &A.view, &B.view, 0, NULL), SR_ERROR_INVALID_ARGUMENT, "finite");
    CHECK_FAILS(sr_sddmm(ctx, &C, SR_OR_AND, 1, S, &A.view, &B.view, 0, NULL), SR_ERROR_INVALID_ARGUMENT, "");
    sr_descriptor acc = {.accumulate = true}, rep = {.replace = true}, pat = {.sample_pattern = true};
    CHECK_FAILS(sr_sddmm(ctx, &C, SR_PLUS_TIMES, 1, S, &A.view, &B.view, 0, &acc), SR_ERROR_INVALID_ARGUMENT, "sample_pattern");
    CHECK_FAILS(sr_sddmm(ctx, &C, SR_PLUS_TIMES, 1, S, &A.view, &B.view, 0, &rep), SR_ERROR_INVALID_ARGUMENT, "sample_pattern");
    CHECK_FAILS(sr_mxm(ctx, &C, NULL, SR_PLUS_TIMES, S, S, &pat), SR_ERROR_INVALID_ARGUMENT, "SDDMM");
    sr_descriptor tf32 = {.precision = SR_PRECISION_TF32}, unknown = {.precision = (sr_precision)7};
    CHECK_FAILS(sr_mxm(ctx, &C, NULL, SR_PLUS_TIMES, S, S, &tf32), SR_ERROR_INVALID_ARGUMENT, "SDDMM");
    CHECK_FAILS(sr_sddmm(ctx, &C, SR_PLUS_TIMES, 1, S, &A.view, &B.view, 0, &unknown), SR_ERROR_INVALID_ARGUMENT,
                "precision");
    CHECK_FAILS(sr_sddmm(ctx, NULL, SR_PLUS_TIMES, 1, S, &A.view, &B.view, 0, NULL), SR_ERROR_INVALID_ARGUMENT, "NULL");
    CHECK(C == NULL, "a failed sr_sddmm wrote its output");
    float few[3];
    sr_dense short_view = sr_vector_view(few, 1, SR_TYPE_FLOAT32, SR_HOST);
    if (sc.nnz != 1)
        CHECK_FAILS(sr_sddmm_values(ctx, &short_view, SR_PLUS_TIMES, 1, S, &A.view, &B.view, 0, NULL),
                    SR_ERROR_INVALID_ARGUMENT, "contiguous");
    operand V = make_operand(4, 2, SR_TYPE_FLOAT32, SR_ROW_MAJOR, 0), O = make_operand(5, 3, SR_TYPE_FLOAT32, SR_ROW_MAJOR, 0);
    CHECK_FAILS(sr_sddmm_spmm(ctx, &O.view, 1, S, &A.view, &B.view, &V.view, SR_NORMALIZE_NONE, NULL),
                SR_ERROR_INVALID_ARGUMENT, "O is");
    CHECK_FAILS(sr_sddmm_spmm(ctx, &O.view, 1, S, &A.view, &B.view, &V.view, (sr_row_normalize)7, NULL),
                SR_ERROR_INVALID_ARGUMENT, "normalization");
    sr_matrix_free(S);
    free_operand(&A), free_operand(&B), free_operand(&Bw), free_operand(&Bd), free_operand(&V), free_operand(&O);
    test_csr_free(&sc);
}

/* One exact ALS-WR half sweep: X(rows) from Y given ratings (rows x cols CSR, centered by mu). */
static void exact_half(const int64_t *rp, const int32_t *ci, const double *v, int64_t rows, double mu, const double *Y,
                       double *X, int64_t K, double lambda)
{
    double *M = malloc((size_t)(K * K) * sizeof(double)), *b = malloc((size_t)K * sizeof(double));
    for (int64_t i = 0; i < rows; i++) {
        const int64_t n = rp[i + 1] - rp[i];
        memset(M, 0, (size_t)(K * K) * sizeof(double));
        memset(b, 0, (size_t)K * sizeof(double));
        for (int64_t e = rp[i]; e < rp[i + 1]; e++)
            for (int64_t k = 0; k < K; k++) {
                b[k] += (v[e] - mu) * Y[ci[e] * K + k];
                for (int64_t l = 0; l < K; l++)
                    M[k * K + l] += Y[ci[e] * K + k] * Y[ci[e] * K + l];
            }
        for (int64_t k = 0; k < K; k++)
            M[k * K + k] += lambda * (double)n;
        if (n > 0)
            test_spd_solve(M, b, K);
        for (int64_t k = 0; k < K; k++)
            X[i * K + k] = n > 0 ? b[k] : 0.0;
    }
    free(M);
    free(b);
}

/* sr_factorize with as many CG steps as the rank solves each system exactly: its factors match
 * an exact ALS-WR (Cholesky per row) from the same start, sweep after sweep; and the RMSE falls. */
static void check_factorize(void)
{
    if (!test_part_selected()) /* SR_TEST_PART: another part runs it */
        return;
    const int64_t users = 60, items = 45, K = 4;
    test_csr sc = test_random_csr(users, items, 9, SR_TYPE_FLOAT64);
    for (int64_t e = 0; e < sc.nnz; e++) /* ratings 1..5 */
        ((double *)sc.values)[e] = 1 + (double)test_below(5);
    sr_matrix R = test_make_matrix_at(ctx, &sc, where);
    double *W = calloc((size_t)(users * K), sizeof(double)), *H = calloc((size_t)(items * K), sizeof(double));
    double *Wr = calloc((size_t)(users * K), sizeof(double)), *Hr = calloc((size_t)(items * K), sizeof(double));
    for (int64_t e = 0; e < items * K; e++)
        H[e] = Hr[e] = test_uniform() - 0.5;
    sr_dense Wv = sr_dense_view(W, users, K, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    sr_dense Hv = sr_dense_view(H, items, K, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    sr_factorize_options o = sr_factorize_options_default();
    o.rank = K;
    o.iterations = 3;
    o.cg_steps = (int)K + 2;
    o.lambda = 0.1;
    o.use_initial = true;
    double mu = 0;
    sr_factorize_step last;
    CHECK_OK(sr_factorize(ctx, R, NULL, &o, &Wv, &Hv, &mu, &last));
    /* the reference: the transpose of the ratings by counting */
    double mean = 0;
    for (int64_t e = 0; e < sc.nnz; e++)
        mean += ((double *)sc.values)[e];
    mean /= (double)(sc.nnz ? sc.nnz : 1);
    int64_t *tp = calloc((size_t)items + 1, sizeof(int64_t));
    int32_t *tc = malloc((size_t)(sc.nnz + 1) * sizeof(int32_t));
    double *tv = malloc((size_t)(sc.nnz + 1) * sizeof(double));
    for (int64_t e = 0; e < sc.nnz; e++)
        tp[sc.colind[e] + 1]++;
    for (int64_t j = 0; j < items; j++)
        tp[j + 1] += tp[j];
    int64_t *fill = malloc((size_t)items * sizeof(int64_t));
    memcpy(fill, tp, (size_t)items * sizeof(int64_t));
    for (int64_t i = 0; i < users; i++)
        for (int64_t e = sc.rowptr[i]; e < sc.rowptr[i + 1]; e++) {
            tc[fill[sc.colind[e]]] = (int32_t)i;
            tv[fill[sc.colind[e]]++] = ((double *)sc.values)[e];
        }
    for (int it = 0; it < 3; it++) {
        exact_half(sc.rowptr, sc.colind, sc.values, users, mean, Hr, Wr, K, 0.1);
        exact_half(tp, tc, tv, items, mean, Wr, Hr, K, 0.1);
    }
    double worst = 0, sq = 0;
    for (int64_t e = 0; e < users * K; e++)
        worst = fmax(worst, fabs(W[e] - Wr[e]));
    for (int64_t e = 0; e < items * K; e++)
        worst = fmax(worst, fabs(H[e] - Hr[e]));
    for (int64_t i = 0; i < users; i++)
        for (int64_t e = sc.rowptr[i]; e < sc.rowptr[i + 1]; e++) {
            double pred = mean;
            for (int64_t k = 0; k < K; k++)
                pred += Wr[i * K + k] * Hr[sc.colind[e] * K + k];
            sq += (((double *)sc.values)[e] - pred) * (((double *)sc.values)[e] - pred);
        }
    const double ref_rmse = sqrt(sq / (double)(sc.nnz ? sc.nnz : 1));
    CHECK(fabs(mu - mean) < 1e-12, "factorize: mean %.17g, expected %.17g", mu, mean);
    CHECK(worst < 1e-6, "factorize: factors differ from exact ALS by %.3g", worst);
    CHECK(fabs(last.train_rmse - ref_rmse) < 1e-8 && last.iteration == 3,
          "factorize: train RMSE %.12g after sweep %d, exact ALS gives %.12g", last.train_rmse, last.iteration, ref_rmse);
    o.lambda = -1;
    CHECK_FAILS(sr_factorize(ctx, R, NULL, &o, &Wv, &Hv, NULL, NULL), SR_ERROR_INVALID_ARGUMENT, "lambda");
    /* a NaN rating is refused, by its place (it had given finite factors and a NaN RMSE) */
    o.lambda = 0.1;
    int64_t row = 0;
    while (sc.rowptr[row + 1] == sc.rowptr[row])
        row++;
    ((double *)sc.values)[sc.rowptr[row]] = NAN;
    sr_matrix Rnan = test_make_matrix_at(ctx, &sc, where);
    char want[64];
    snprintf(want, sizeof want, "R holds NaN at row %lld, column %d", (long long)row, sc.colind[sc.rowptr[row]]);
    CHECK_FAILS(sr_factorize(ctx, Rnan, NULL, &o, &Wv, &Hv, NULL, NULL), SR_ERROR_INVALID_ARGUMENT, want);
    CHECK_FAILS(sr_factorize(ctx, R, Rnan, &o, &Wv, &Hv, NULL, NULL), SR_ERROR_INVALID_ARGUMENT, "R_test holds NaN");
    sr_matrix_free(Rnan);
    sr_matrix_free(R);
    free(W), free(H), free(Wr), free(Hr), free(tp), free(tc), free(tv), free(fill);
    test_csr_free(&sc);
}

/* The plus_times cases, which the GPU runs by row panels or in CSR order (cuda_sddmm_panels.cuh). */
static void check_plus_times(void)
{
    const sr_layout R = SR_ROW_MAJOR, Cm = SR_COL_MAJOR;
    const sr_type f = SR_TYPE_FLOAT32, d = SR_TYPE_FLOAT64, b = SR_TYPE_BOOL;
    check_sddmm(0, 0, 4, 1, f, f, SR_PLUS_TIMES, 1, 0, false, R, R);
    check_sddmm(1, 1, 1, 1, f, f, SR_PLUS_TIMES, 1, 0, false, R, R);      /* K = 1 */
    check_sddmm(30, 20, 0, 3, d, d, SR_PLUS_TIMES, 1, 0.5, false, R, R);  /* K = 0: the identity */
    check_sddmm(60, 45, 7, 4, f, f, SR_PLUS_TIMES, 2.5, -0.5, false, R, Cm); /* K not a multiple of 4 */
    check_sddmm(200, 150, 32, 9, f, b, SR_PLUS_TIMES, 1, 0, false, R, R);
    check_sddmm(200, 150, 32, 9, f, f, SR_PLUS_TIMES, -1, 1, true, Cm, Cm); /* a residual: S - A·Bᵀ at S */
    check_sddmm(150, 300, 128, 12, d, d, SR_PLUS_TIMES, 1, 0, false, R, R);
    check_sddmm(120, 90, 512, 6, f, f, SR_PLUS_TIMES, 0.25, 0, false, R, R);
    check_sddmm(70, 40, 1024, 9, f, f, SR_PLUS_TIMES, 1, 0, false, R, R);  /* the widest register fragment */
    check_sddmm(50, 70, 1100, 5, f, f, SR_PLUS_TIMES, 1, 2, false, R, Cm); /* past the register fragment */
    check_sddmm(80, 60, 96, 5, f, f, SR_PLUS_TIMES, 0, 1, false, R, R);    /* α = 0: β·S alone */
    check_sddmm(1500, 200000, 64, 24, f, f, SR_PLUS_TIMES, 1, 0, false, R, R); /* B past L2, rows too short for tiles */
    check_sddmm(300, 200000, 64, 60, f, f, SR_PLUS_TIMES, 1, 0.5, false, R, R); /* long rows: column tiles on a GPU */
    check_sddmm(100, 80, 128, 7, f, f, SR_PLUS_TIMES, 1, 0, false, R, R);   /* K = 128 floats: 8 lanes, 2 in flight */
    check_sddmm(90, 70, 30, 6, f, f, SR_PLUS_TIMES, 1, 0.5, false, R, Cm);  /* K = 30: the same kernel, scalar loads */
    /* many rows over few columns: each panel meets a column many times, and rows span panels' ends */
    check_sddmm(5000, 40, 32, 12, f, f, SR_PLUS_TIMES, 1, 0.5, false, R, R);
    check_sddmm(3000, 64, 64, 30, d, d, SR_PLUS_TIMES, -2, 0, true, R, R);
    check_sddmm(2000, 33, 5, 8, f, b, SR_PLUS_TIMES, 1, 0, false, Cm, R);
}

/* Dense-ish S (5-100% of its cells), which the GPU runs by shared-memory tiles of A and B
 * (cuda_sddmm_dense.cuh) where they pay: several column tiles and column ranges a panel, rows that
 * end inside a tile or fill it, empty rows, K from 1 to 1024 (past 32 vectors only when forced),
 * scalar loads. */
static void check_dense_ish(void)
{
    const sr_layout R = SR_ROW_MAJOR, Cm = SR_COL_MAJOR;
    const sr_type f = SR_TYPE_FLOAT32, d = SR_TYPE_FLOAT64, b = SR_TYPE_BOOL;
    check_sddmm(300, 500, 32, 100, f, f, SR_PLUS_TIMES, 1, 0, false, R, R);
    check_sddmm(700, 3000, 32, 600, f, f, SR_PLUS_TIMES, 0.5, -1, false, R, R); /* 6 tiles of 512 columns */
    check_sddmm(200, 400, 128, 80, d, d, SR_PLUS_TIMES, 1, 0.5, true, R, Cm);
    check_sddmm(260, 300, 64, 300, f, b, SR_PLUS_TIMES, 1, 0, false, Cm, R);   /* rows of every column */
    check_sddmm(100, 1000, 1024, 150, f, f, SR_PLUS_TIMES, 1, 0, false, R, R); /* 8 rows, 16 columns a tile */
    check_sddmm(400, 250, 7, 40, f, f, SR_PLUS_TIMES, 2, 0, false, R, R);      /* scalar loads */
    check_sddmm(90, 120, 1, 30, d, d, SR_PLUS_TIMES, 1, 1, false, R, R);       /* K = 1 */
    check_sddmm(33, 2000, 16, 900, f, f, SR_PLUS_TIMES, 1, 0, false, R, R);    /* one panel, many ranges */
    check_sddmm(300, 700, 20, 350, f, f, SR_PLUS_TIMES, 1, 0.5, false, R, R);  /* half full; K past 16, not a multiple */
    check_sddmm(129, 129, 12, 129, f, f, SR_PLUS_TIMES, -1, 0, false, R, R);   /* full; a row and a column past a tile */
}

/* Dense-ish S for the fused product, which the GPU runs by whole tiles (float32, K and p multiples
 * of 4, p <= 128) and the CPU by its 64 x 64 tiles (float32 and float64) where they pay: p padded
 * to 32, 64 and 128, several tiles and column ranges a panel, a panel past a multiple of 128 rows,
 * S's pattern, accumulate, column-major O. */
static void check_fused_dense_ish(void)
{
    const sr_layout R = SR_ROW_MAJOR, Cm = SR_COL_MAJOR;
    const sr_type f = SR_TYPE_FLOAT32;
    check_fused(300, 500, 32, 32, 100, f, false, false, R);
    check_fused(300, 500, 32, 32, 100, f, true, false, R);
    check_fused(129, 260, 16, 4, 200, f, true, true, Cm);   /* p = 4; a row past a panel */
    check_fused(700, 3000, 32, 64, 600, f, true, false, R); /* many tiles */
    check_fused(33, 2000, 16, 128, 900, f, false, true, R); /* one panel, many column ranges */
    check_fused(33, 2000, 16, 128, 900, f, true, false, Cm);
    check_fused(257, 300, 8, 36, 300, f, false, false, R); /* p = 36, padded to 64 */
    check_fused(200, 400, 12, 100, 3, f, true, false, R);  /* sparse: empty rows, tiles of few entries */
    check_fused(160, 140, 128, 8, 140, f, true, true, R);  /* full rows; K = 128 */
    check_fused(200, 300, 16, 20, 150, SR_TYPE_FLOAT64, true, false, R); /* the CPU's tiles in float64 */
    check_fused(150, 260, 24, 70, 200, SR_TYPE_FLOAT64, false, true, Cm);
    fused_pattern = true;
    check_fused(300, 500, 32, 32, 100, f, true, false, R);
    check_fused(260, 700, 64, 64, 350, f, false, false, R);
    fused_pattern = false;
}

static void run_all(void)
{
    const sr_layout R = SR_ROW_MAJOR, Cm = SR_COL_MAJOR;
    const sr_type f = SR_TYPE_FLOAT32, d = SR_TYPE_FLOAT64;
    if (where == SR_DEVICE) { /* row panels off, always (dense-ish S too), where they pay; dense tiles everywhere */
        const char *settings[] = {"0", "1", ""};
        for (int k = 0; k < 3; k++) {
            setenv("SPARSERING_SDDMM_PANELS", settings[k], 1);
            check_plus_times();
            if (k == 1) /* long rows: a panel cut into parts, a block each */
                check_dense_ish();
        }
        unsetenv("SPARSERING_SDDMM_PANELS");
        setenv("SPARSERING_SDDMM_DENSE", "1", 1);
        check_plus_times();
        check_dense_ish();
        setenv("SPARSERING_SDDMM_DENSE", "0", 1);
        check_dense_ish();
        unsetenv("SPARSERING_SDDMM_DENSE");
    } else {
        check_plus_times();
    }
    /* whole tile products (GPU: 128 x 128, float32 with K a multiple of 4; CPU: 64 x 64, float32
     * and float64) on every case, then never */
    setenv("SPARSERING_SDDMM_GEMM", "1", 1);
    check_plus_times();
    check_dense_ish();
    check_fused_dense_ish();
    check_fused(70, 50, 8, 5, 4, f, true, false, R); /* sparse S through the tiles, forced */
    check_fused(300, 200000, 32, 32, 20, f, false, false, R);
    if (where == SR_DEVICE) { /* the tile products on the FMA pipes and by one TF32 product (EXACT above) */
        const sr_precision others[] = {SR_PRECISION_FLOAT32, SR_PRECISION_TF32};
        for (int k = 0; k < 2; k++) {
            tile_precision = others[k];
            check_dense_ish();
            check_fused_dense_ish();
        }
        tile_precision = SR_PRECISION_EXACT;
    }
    setenv("SPARSERING_SDDMM_GEMM", "2", 1); /* CPU: B packed tile by tile, not whole */
    check_dense_ish();
    setenv("SPARSERING_SDDMM_GEMM", "0", 1);
    check_dense_ish();
    check_fused_dense_ish();
    unsetenv("SPARSERING_SDDMM_GEMM");
    check_dense_ish();
    check_fused_dense_ish();
    check_sddmm(80, 60, 20, 5, d, d, SR_MIN_PLUS, 1, 0, false, R, R);
    check_sddmm(80, 60, 20, 5, f, f, SR_MAX_TIMES, 1, 0, true, Cm, R);
    check_sddmm(80, 60, 24, 5, SR_TYPE_INT32, SR_TYPE_INT32, SR_PLUS_TIMES, 1, 0, false, R, R);
    check_fused(0, 0, 4, 3, 2, f, false, false, R);
    check_fused(70, 50, 8, 5, 4, f, false, false, R);
    check_fused(70, 50, 32, 32, 6, f, true, false, Cm);
    check_fused(120, 80, 64, 16, 8, d, true, true, R);
    check_fused(60, 40, 7, 9, 5, d, false, true, Cm); /* scalar loads */
    /* B's and V's rows past half of an H100's L2: the fused kernel's gathers go to DRAM */
    check_fused(300, 200000, 32, 32, 20, f, false, false, R);
    check_fused(200, 100000, 128, 8, 12, f, true, true, Cm);
    check_fused(40, 30, 1100, 3, 4, f, true, false, R); /* the wide kernel */
    check_fused(40, 30, 1100, 3, 4, f, false, true, R);
    check_fused_long_row(f, true);
    check_fused_long_row(d, false);
    check_errors();
    check_factorize();
}

int main(void)
{
    test_seed("test_sddmm");
    test_on_each_backend(&ctx, &where, run_all);
    return test_finish("test_sddmm");
}
