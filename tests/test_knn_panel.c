/* k-NN on tensor cores (src/cuda/cuda_knn_panel.cu) against the float32 path without them
 * (SR_PRECISION_FLOAT32), for every dot-product metric, queries the index itself and apart, k
 * from 1 to 32, one batch and many:
 *  - count data (integers up to 2048) and values on a finer grid (half stars: 2048 half steps) in
 *    "exact": FP16 is chosen and neighbours and distances are the float32 path's bit for bit; a
 *    value of 2049 (or 1024.5), or |q||x| at 2^24 steps, turns FP16 down;
 *  - queries longer than the selection's cursors (256 entries) the same;
 *  - runs of ties (rows and their multiples) the same: the float pre-test skips no pair that could enter;
 *  - non-integer data in "exact": the split TF32 product, distances within float32 accuracy
 *    (Hellinger's square roots stay on the CUDA cores unless they are integers);
 *  - "tf32": one TF32 product, distances within its documented error;
 *  - Manhattan and Bray-Curtis of counts on count levels, Hamming on equality levels, bit for bit
 *    (count_levels);
 *  - the other sum metrics on value classes (table_levels): bit for bit where the table is exact,
 *    within float32 accuracy where not.
 * The panel is forced (SPARSERING_KNN_PANEL=1): these inputs are too small for the cost model to
 * take it. GPU only: skipped where no device is usable. */
#include "test_util.h"

typedef enum { VALUES_COUNTS, VALUES_HALVES, VALUES_REAL } value_kind;

/* rows x cols with Zipf-like columns (a few hot ones), `degree` entries a row on average (and
 * every 37th row `long_draws` draws, when not 0); count values 1..5, half steps 0.5..5 (a tenth of
 * the rows with one entry at `top`) or reals in [0.25, 1.25). */
static test_csr zipf_rows_long(int64_t rows, int64_t cols, int64_t degree, value_kind kind, double top,
                               int64_t long_draws)
{
    const int64_t most = long_draws > 2 * degree ? long_draws : 2 * degree;
    test_csr m = {rows, cols, 0, SR_TYPE_FLOAT32, calloc((size_t)rows + 1, sizeof(int64_t)), NULL, NULL};
    m.colind = malloc((size_t)(rows * most + 1) * sizeof(int32_t));
    m.values = malloc((size_t)(rows * most + 1) * sizeof(float));
    unsigned char *pick = calloc((size_t)cols, 1);
    for (int64_t r = 0; r < rows; r++) {
        int64_t d = r % 11 == 4 ? 0 : 1 + test_below(2 * degree - 1), at = m.rowptr[r];
        if (long_draws > 0 && r % 37 == 5)
            d = long_draws;
        for (int64_t n = 0; n < d; n++) {
            int64_t c = (int64_t)((double)cols * pow(test_uniform(), 3.0)); /* popular low columns */
            if (c < cols && !pick[c])
                pick[c] = 1;
        }
        for (int64_t c = 0; c < cols; c++)
            if (pick[c]) {
                pick[c] = 0;
                m.colind[at] = (int32_t)c;
                float v = kind == VALUES_REAL     ? (float)(0.25 + test_uniform())
                          : kind == VALUES_HALVES ? (float)(1 + test_below(10)) * 0.5f
                                                  : (float)(1 + test_below(5));
                if (kind != VALUES_REAL && at == m.rowptr[r] && test_below(10) == 0)
                    v = (float)top; /* once a row at most: |q||x| stays far below 2^24 */
                ((float *)m.values)[at++] = v;
            }
        m.rowptr[r + 1] = at;
    }
    m.nnz = m.rowptr[rows];
    free(pick);
    return m;
}

static test_csr zipf_rows(int64_t rows, int64_t cols, int64_t degree, value_kind kind, double top)
{
    return zipf_rows_long(rows, cols, degree, kind, top, 0);
}

/* Small counts (or half steps), and row `heavy` holding `width` entries of `top` (columns
 * 0..width-1). */
static test_csr with_heavy_row(int64_t rows, int64_t cols, int64_t heavy, int width, value_kind kind, float top)
{
    test_csr base = zipf_rows(rows, cols, 10, kind, 7.0);
    test_csr w = {rows, cols, 0, SR_TYPE_FLOAT32, calloc((size_t)rows + 1, sizeof(int64_t)),
                  malloc((size_t)(base.nnz + width) * sizeof(int32_t)), malloc((size_t)(base.nnz + width) * sizeof(float))};
    int64_t at = 0;
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t e = base.rowptr[r]; r != heavy && e < base.rowptr[r + 1]; e++) {
            w.colind[at] = base.colind[e];
            ((float *)w.values)[at++] = ((float *)base.values)[e];
        }
        for (int c = 0; r == heavy && c < width; c++) {
            w.colind[at] = c;
            ((float *)w.values)[at++] = top;
        }
        w.rowptr[r + 1] = at;
    }
    w.nnz = at;
    test_csr_free(&base);
    return w;
}

/* Ties for the selection's float pre-test (cuda_knn_bound.cuh): every base row of counts is
 * followed by its copies times 2..copies, so cosine, correlation and the set metrics see runs of
 * pairs at distance 0 (the list's worst among them, broken by the smaller row) and the others at
 * near-equal distances; a pre-test that skipped a pair it should not would change the neighbours. */
static test_csr with_scaled_copies(int64_t bases, int64_t cols, int copies)
{
    test_csr base = zipf_rows(bases, cols, 12, VALUES_COUNTS, 3.0);
    const int64_t rows = bases * copies;
    test_csr w = {rows, cols, 0, SR_TYPE_FLOAT32, calloc((size_t)rows + 1, sizeof(int64_t)),
                  malloc((size_t)(base.nnz * copies + 1) * sizeof(int32_t)),
                  malloc((size_t)(base.nnz * copies + 1) * sizeof(float))};
    int64_t at = 0;
    for (int64_t r = 0; r < rows; r++) {
        const int64_t b = r / copies;
        const float times = (float)(1 + r % copies);
        for (int64_t e = base.rowptr[b]; e < base.rowptr[b + 1]; e++) {
            w.colind[at] = base.colind[e];
            ((float *)w.values)[at++] = times * ((float *)base.values)[e];
        }
        w.rowptr[r + 1] = at;
    }
    w.nnz = at;
    test_csr_free(&base);
    return w;
}

/* Hellinger last: in "exact" the others take the panel on count data (metrics_of with count - 1) */
static const sr_metric kMetrics[] = {SR_METRIC_COSINE,       SR_METRIC_L2,      SR_METRIC_SQEUCLIDEAN,
                                     SR_METRIC_INNER_PRODUCT, SR_METRIC_CORRELATION, SR_METRIC_JACCARD,
                                     SR_METRIC_DICE,          SR_METRIC_RUSSELL_RAO, SR_METRIC_HELLINGER};

typedef struct {
    int64_t *idx;
    float *dist;
} knn_out;

static knn_out run(sr_context ctx, sr_matrix X, sr_matrix Q, int64_t nq, int64_t k, sr_metric metric,
                   sr_precision precision, char *method, size_t method_size)
{
    knn_out o = {malloc((size_t)(nq * k) * sizeof(int64_t)), malloc((size_t)(nq * k) * sizeof(float))};
    for (int64_t t = 0; t < nq * k; t++) { /* poisoned */
        o.idx[t] = -7;
        o.dist[t] = NAN;
    }
    sr_dense D = sr_dense_view(o.dist, nq, k, SR_TYPE_FLOAT32, SR_ROW_MAJOR, SR_HOST);
    sr_knn_options opts = {NULL, NULL, precision};
    CHECK_OK(sr_knn(ctx, X, Q, k, metric, metric == SR_METRIC_MINKOWSKI ? 3.0 : 0.0, o.idx, &D, &opts));
    snprintf(method, method_size, "%s", sr_last_method());
    return o;
}

/* One case: the panel against the float32 path. tol < 0: bit for bit, neighbours too. */
static void compare(sr_context ctx, const char *what, sr_matrix X, sr_matrix Q, int64_t nq, int64_t k,
                    sr_metric metric, sr_precision precision, const char *mode_wanted, double tol)
{
    if (!test_part_selected()) /* SR_TEST_PART: another part runs it */
        return;
    char m_panel[256], m_plain[256];
    knn_out a = run(ctx, X, Q, nq, k, metric, precision, m_panel, sizeof m_panel);
    knn_out b = run(ctx, X, Q, nq, k, metric, SR_PRECISION_FLOAT32, m_plain, sizeof m_plain);
    CHECK(strstr(m_panel, mode_wanted) != NULL, "%s, %s, k %lld: the path was '%s', wanted %s", what,
          sr_metric_name(metric), (long long)k, m_panel, mode_wanted);
    CHECK(strstr(m_plain, "panel") == NULL, "%s: float32 took '%s'", what, m_plain);
    int64_t bad = 0, first = -1;
    for (int64_t t = 0; t < nq * k; t++) {
        bool ok = tol < 0 ? (a.idx[t] == b.idx[t] && memcmp(&a.dist[t], &b.dist[t], sizeof(float)) == 0)
                          : fabs((double)a.dist[t] - (double)b.dist[t]) <= tol * (1.0 + fabs((double)b.dist[t]));
        if (!ok && bad++ == 0)
            first = t;
    }
    CHECK(bad == 0, "%s, %s, k %lld (%s): %lld of %lld differ; first at query %lld place %lld: %lld %.9g vs %lld %.9g",
          what, sr_metric_name(metric), (long long)k, m_panel, (long long)bad, (long long)(nq * k),
          (long long)(first / k), (long long)(first % k), (long long)a.idx[first], (double)a.dist[first],
          (long long)b.idx[first], (double)b.dist[first]);
    free(a.idx);
    free(a.dist);
    free(b.idx);
    free(b.dist);
}

static sr_matrix on_device(sr_context ctx, const test_csr *m)
{
    sr_matrix H = test_make_matrix(ctx, m), D = NULL;
    CHECK_OK(sr_matrix_copy_to(ctx, H, SR_DEVICE, &D));
    sr_matrix_free(H);
    return D;
}

static void metrics_of(sr_context ctx, const char *what, const test_csr *xs, const test_csr *qs,
                       sr_precision precision, const char *mode, double tol, const sr_metric *metrics, size_t count)
{
    sr_matrix X = on_device(ctx, xs), Q = qs ? on_device(ctx, qs) : X;
    const int64_t nq = qs ? qs->nrows : xs->nrows;
    const int64_t ks[] = {1, 5, 32};
    for (size_t m = 0; m < count; m++) {
        const sr_metric metric = metrics[m];
        const bool sets = metric == SR_METRIC_JACCARD || metric == SR_METRIC_DICE || metric == SR_METRIC_RUSSELL_RAO;
        /* the set metrics multiply 0s and 1s: FP16 and exact on any data; Hellinger multiplies
         * square roots, which are not integers here: "exact" keeps it on the CUDA cores */
        const bool cuda_cores = metric == SR_METRIC_HELLINGER && precision == SR_PRECISION_EXACT;
        const char *want = sets && precision == SR_PRECISION_EXACT ? "FP16 (exact)" : cuda_cores ? "sparse tiles" : mode;
        /* (the CUDA cores' float atomics sum Hellinger's square roots in no fixed order: two calls
         * agree to about 1e-6, not bit for bit) */
        const double t_want = sets && precision == SR_PRECISION_EXACT ? -1.0 : cuda_cores ? 1e-5 : tol;
        for (size_t t = 0; t < 3; t++)
            compare(ctx, what, X, Q, nq, ks[t], metric, precision, want, t_want);
    }
    if (Q != X)
        sr_matrix_free(Q);
    sr_matrix_free(X);
}

/* A row of `width` entries of `top` (2^11 steps of the values' grid) reaches |q||x| = 2^24 steps
 * at width 4: the split product there, FP16 bit for bit at width 3. */
static void norm_at_the_edge(sr_context ctx, const char *what, value_kind kind, float top)
{
    for (int width = 3; width <= 4; width++) {
        char label[96];
        snprintf(label, sizeof label, "%s, |q||x| %s 2^24 steps", what, width == 4 ? "=" : "under");
        test_csr w = with_heavy_row(400, 300, 17, width, kind, top);
        sr_matrix X = on_device(ctx, &w);
        compare(ctx, label, X, X, w.nrows, 5, SR_METRIC_INNER_PRODUCT, SR_PRECISION_EXACT,
                width == 4 ? "3xTF32" : "FP16 (exact)", width == 4 ? 1e-5 : -1.0);
        sr_matrix_free(X);
        test_csr_free(&w);
    }
}

static void every_metric(sr_context ctx, const char *what, const test_csr *xs, const test_csr *qs,
                         sr_precision precision, const char *mode, double tol)
{
    metrics_of(ctx, what, xs, qs, precision, mode, tol, kMetrics, sizeof kMetrics / sizeof kMetrics[0]);
}

/* Manhattan and Bray-Curtis on count levels, Hamming on equality levels (cuda_knn_levels.cuh), bit
 * for bit against the float32 path: counts past the levels (their excess, or for Hamming the values
 * above T, walk with the cold columns), T chosen and forced to 1, 3 and 16, small batches, queries
 * past the cursors, explicit zeros, half steps (levels of half steps); 32nds and a negative count
 * keep them off the panel. */
static const sr_metric kLevelMetrics[] = {SR_METRIC_L1, SR_METRIC_BRAY_CURTIS, SR_METRIC_HAMMING};
static const size_t kLevelMetricCount = sizeof kLevelMetrics / sizeof kLevelMetrics[0];

static void off_the_panel(sr_context ctx, const char *what, const test_csr *m)
{
    sr_matrix X = on_device(ctx, m);
    char method[256];
    for (size_t i = 0; i < kLevelMetricCount; i++) {
        knn_out o = run(ctx, X, X, m->nrows, 5, kLevelMetrics[i], SR_PRECISION_EXACT, method, sizeof method);
        CHECK(strstr(method, "panel") == NULL, "%s, %s took '%s'", what, sr_metric_name(kLevelMetrics[i]), method);
        free(o.idx);
        free(o.dist);
    }
    sr_matrix_free(X);
}

static void count_levels(sr_context ctx)
{
    const size_t n = kLevelMetricCount;
    test_csr x = zipf_rows(1500, 700, 24, VALUES_COUNTS, 40.0), q = zipf_rows(300, 700, 24, VALUES_COUNTS, 23.0);
    metrics_of(ctx, "levels", &x, NULL, SR_PRECISION_EXACT, "count levels", -1.0, kLevelMetrics, n);
    metrics_of(ctx, "levels, queries apart", &x, &q, SR_PRECISION_EXACT, "count levels", -1.0, kLevelMetrics, n);
    const char *forced[] = {"1", "3", "16"};
    for (size_t f = 0; f < 3; f++) {
        char label[64];
        snprintf(label, sizeof label, "levels forced to %s", forced[f]);
        setenv("SPARSERING_KNN_PANEL_LEVELS", forced[f], 1);
        metrics_of(ctx, label, &x, &q, SR_PRECISION_EXACT, "count levels", -1.0, kLevelMetrics, n);
    }
    unsetenv("SPARSERING_KNN_PANEL_LEVELS");
    CHECK_OK(sr_context_set_workspace_limit(ctx, 2u << 20));
    setenv("SPARSERING_KNN_PANEL_COLUMNS", "200", 1);
    metrics_of(ctx, "levels, small batches", &x, &q, SR_PRECISION_EXACT, "count levels", -1.0, kLevelMetrics, n);
    unsetenv("SPARSERING_KNN_PANEL_COLUMNS");
    CHECK_OK(sr_context_set_workspace_limit(ctx, 0));
    test_csr_free(&x);
    test_csr_free(&q);
    x = zipf_rows_long(1500, 2000, 20, VALUES_COUNTS, 30.0, 3000);
    metrics_of(ctx, "levels, long rows", &x, NULL, SR_PRECISION_EXACT, "count levels", -1.0, kLevelMetrics, n);
    test_csr_free(&x);
    x = zipf_rows(1500, 700, 24, VALUES_COUNTS, 40.0);
    for (int64_t e = 0; e < x.nnz; e += 9) /* explicit zeros, hot columns' and cold ones' */
        ((float *)x.values)[e] = 0.0f;
    metrics_of(ctx, "levels, explicit zeros", &x, NULL, SR_PRECISION_EXACT, "count levels", -1.0, kLevelMetrics, n);
    test_csr_free(&x);
    x = zipf_rows(1500, 700, 24, VALUES_HALVES, 9.5); /* half stars: levels of half steps */
    metrics_of(ctx, "levels, half steps", &x, NULL, SR_PRECISION_EXACT, "count levels", -1.0, kLevelMetrics, n);
    setenv("SPARSERING_KNN_PANEL_LEVELS", "3", 1);
    metrics_of(ctx, "levels, half steps, 3 levels", &x, NULL, SR_PRECISION_EXACT, "count levels", -1.0, kLevelMetrics,
               n);
    unsetenv("SPARSERING_KNN_PANEL_LEVELS");
    for (int64_t e = 0; e < x.nnz; e++) /* 32nds: finer than the levels' finest grid, 16ths */
        ((float *)x.values)[e] /= 16.0f;
    off_the_panel(ctx, "32nds", &x);
    for (int64_t e = 0; e < x.nnz; e++) /* whole again, one of them negative */
        ((float *)x.values)[e] = e == x.nnz / 2 ? -2.0f : ceilf(((float *)x.values)[e]);
    off_the_panel(ctx, "a negative count", &x);
    test_csr_free(&x);
}

/* Canberra, Minkowski (p = 3), Jensen-Shannon, KL and the unexpanded Euclidean forms on value
 * classes (cuda_knn_table.cuh) against the float32 path: counts (the 40s and 23s, past the 16
 * classes, are the walk's) and half steps, "exact" (Minkowski and the unexpanded forms bit for
 * bit: their tables are whole; Canberra and KL within float32 accuracy; Jensen-Shannon off the
 * panel) and "tf32" (Jensen-Shannon too); 2 classes forced (most values off them), counts to 3
 * with 5 classes forced, small batches, long rows, a negative value (off the classes); reals off
 * the panel. */
static const sr_metric kTableExact[] = {SR_METRIC_MINKOWSKI, SR_METRIC_L2_UNEXPANDED,
                                        SR_METRIC_SQEUCLIDEAN_UNEXPANDED};
static const sr_metric kTableClose[] = {SR_METRIC_CANBERRA, SR_METRIC_KL_DIVERGENCE};

static void table_cases(sr_context ctx, const char *what, const test_csr *x, const test_csr *q)
{
    char label[96];
    snprintf(label, sizeof label, "value classes, %s", what);
    metrics_of(ctx, label, x, q, SR_PRECISION_EXACT, "FP16 table (exact)", -1.0, kTableExact, 3);
    metrics_of(ctx, label, x, q, SR_PRECISION_EXACT, "FP16 table (float32 accuracy)", 2e-5, kTableClose, 2);
    const sr_metric js = SR_METRIC_JENSEN_SHANNON;
    metrics_of(ctx, label, x, q, SR_PRECISION_EXACT, "sparse tiles", 1e-5, &js, 1);
    /* a root of a float32 sum near 0: a row with itself lands near sqrt(2^-22 Σv) */
    metrics_of(ctx, label, x, q, SR_PRECISION_TF32, "FP16 table (float32 accuracy)", 1e-2, &js, 1);
}

static void table_levels(sr_context ctx)
{
    test_csr x = zipf_rows(1500, 700, 24, VALUES_COUNTS, 40.0), q = zipf_rows(300, 700, 24, VALUES_COUNTS, 23.0);
    table_cases(ctx, "counts", &x, NULL);
    table_cases(ctx, "counts, queries apart", &x, &q);
    setenv("SPARSERING_KNN_PANEL_LEVELS", "2", 1);
    table_cases(ctx, "counts, 2 classes forced", &x, &q);
    table_cases(ctx, "counts, 2 classes forced, the index itself", &x, NULL);
    unsetenv("SPARSERING_KNN_PANEL_LEVELS");
    test_csr x3 = x;
    x3.values = malloc((size_t)x.nnz * sizeof(float));
    for (int64_t e = 0; e < x.nnz; e++) { /* counts 1..3, the 40s kept */
        const float v = ((float *)x.values)[e];
        ((float *)x3.values)[e] = v <= 5.0f ? 1.0f + fmodf(v - 1.0f, 3.0f) : v;
    }
    table_cases(ctx, "counts to 3", &x3, NULL);
    setenv("SPARSERING_KNN_PANEL_LEVELS", "5", 1);
    table_cases(ctx, "counts to 3, 5 classes forced", &x3, NULL);
    unsetenv("SPARSERING_KNN_PANEL_LEVELS");
    free(x3.values);
    CHECK_OK(sr_context_set_workspace_limit(ctx, 2u << 20));
    setenv("SPARSERING_KNN_PANEL_COLUMNS", "200", 1);
    table_cases(ctx, "counts, small batches", &x, &q);
    unsetenv("SPARSERING_KNN_PANEL_COLUMNS");
    CHECK_OK(sr_context_set_workspace_limit(ctx, 0));
    test_csr_free(&x);
    test_csr_free(&q);
    x = zipf_rows(1500, 700, 24, VALUES_HALVES, 3.5);
    table_cases(ctx, "half steps", &x, NULL);
    test_csr_free(&x);
    x = zipf_rows_long(1500, 2000, 20, VALUES_COUNTS, 9.0, 3000);
    table_cases(ctx, "long rows", &x, NULL);
    test_csr_free(&x);
    x = zipf_rows(1500, 700, 24, VALUES_COUNTS, 5.0);
    ((float *)x.values)[x.rowptr[3]] = -2.0f; /* a negative value: off the classes */
    const sr_metric canberra = SR_METRIC_CANBERRA, mink = SR_METRIC_MINKOWSKI;
    metrics_of(ctx, "value classes, a negative value", &x, NULL, SR_PRECISION_EXACT, "FP16 table (exact)", -1.0,
               &mink, 1);
    metrics_of(ctx, "value classes, a negative value", &x, NULL, SR_PRECISION_EXACT, "FP16 table (float32 accuracy)",
               2e-5, &canberra, 1);
    test_csr_free(&x);
    x = zipf_rows(600, 300, 12, VALUES_REAL, 0.0);
    sr_matrix X = on_device(ctx, &x);
    char method[256];
    for (size_t i = 0; i < 2; i++) {
        knn_out o = run(ctx, X, X, x.nrows, 5, kTableClose[i], SR_PRECISION_TF32, method, sizeof method);
        CHECK(strstr(method, "panel") == NULL, "reals, %s took '%s'", sr_metric_name(kTableClose[i]), method);
        free(o.idx);
        free(o.dist);
    }
    sr_matrix_free(X);
    test_csr_free(&x);
}

/* The panel's product without cuBLAS (SPARSERING_KNN_PANEL_CUBLAS=0, for compute-sanitizer): FP16's
 * integer sums, bit for bit, and the split product's within float32 accuracy. A sanitizer run that
 * sets it for the whole suite keeps it. */
static void plain_product(sr_context ctx, const test_csr *x, const test_csr *q)
{
    const bool set_outside = getenv("SPARSERING_KNN_PANEL_CUBLAS") != NULL;
    if (!set_outside)
        setenv("SPARSERING_KNN_PANEL_CUBLAS", "0", 1);
    const sr_metric some[] = {SR_METRIC_COSINE, SR_METRIC_JACCARD, SR_METRIC_L2};
    metrics_of(ctx, "counts, plain product", x, q, SR_PRECISION_EXACT, "FP16 (exact)", -1.0, some, 3);
    test_csr r = zipf_rows(400, 300, 16, VALUES_REAL, 0.0);
    metrics_of(ctx, "reals, plain product", &r, NULL, SR_PRECISION_EXACT, "3xTF32", 2e-5, some, 1);
    test_csr_free(&r);
    if (!set_outside)
        unsetenv("SPARSERING_KNN_PANEL_CUBLAS");
}

int main(void)
{
    test_seed("test_knn_panel");
    sr_context_options o = sr_context_options_default();
    o.backend = SR_BACKEND_CUDA;
    sr_context ctx;
    if (sr_context_create(&ctx, &o) != SR_SUCCESS) {
        printf("SKIP test_knn_panel: no usable GPU (%s)\n", sr_last_error());
        return SR_TEST_SKIP;
    }
    setenv("SPARSERING_KNN_PANEL", "1", 1);

    /* count data up to 2048: FP16, bit for bit; the index itself and separate queries */
    test_csr x = zipf_rows(1500, 700, 24, VALUES_COUNTS, 2048.0), q = zipf_rows(300, 700, 24, VALUES_COUNTS, 7.0);
    every_metric(ctx, "counts to 2048", &x, NULL, SR_PRECISION_EXACT, "FP16 (exact)", -1.0);
    every_metric(ctx, "counts, queries apart", &x, &q, SR_PRECISION_EXACT, "FP16 (exact)", -1.0);
    /* many batches (a small workspace), and a panel wider than the hot columns */
    CHECK_OK(sr_context_set_workspace_limit(ctx, 2u << 20));
    setenv("SPARSERING_KNN_PANEL_COLUMNS", "200", 1);
    every_metric(ctx, "counts, small batches", &x, &q, SR_PRECISION_EXACT, "FP16 (exact)", -1.0);
    unsetenv("SPARSERING_KNN_PANEL_COLUMNS");
    CHECK_OK(sr_context_set_workspace_limit(ctx, 0));
    plain_product(ctx, &x, &q);
    test_csr_free(&x);
    test_csr_free(&q);

    /* runs of ties at the lists' worst: the pre-test skips none of them (bit for bit). Not
     * Hellinger: "exact" keeps it on the CUDA cores, whose float atomics sum its square roots in
     * no fixed order, and near a row's multiples its square root of a cancellation spreads two
     * such calls 2-3e-5 apart (H200, three seeds) */
    x = with_scaled_copies(120, 400, 8);
    metrics_of(ctx, "scaled copies", &x, NULL, SR_PRECISION_EXACT, "FP16 (exact)", -1.0, kMetrics,
               sizeof kMetrics / sizeof kMetrics[0] - 1);
    setenv("SPARSERING_KNN_PRETEST", "1", 1); /* Russell-Rao's pre-test too (off by default) */
    metrics_of(ctx, "scaled copies, every pre-test", &x, NULL, SR_PRECISION_EXACT, "FP16 (exact)", -1.0, kMetrics,
               sizeof kMetrics / sizeof kMetrics[0] - 1);
    unsetenv("SPARSERING_KNN_PRETEST");
    test_csr_free(&x);

    /* 2049 does not fit FP16: the split product (hellinger's square roots are not integers anyway) */
    x = zipf_rows(1200, 500, 20, VALUES_COUNTS, 2049.0);
    sr_matrix X = on_device(ctx, &x);
    compare(ctx, "a 2049", X, X, x.nrows, 5, SR_METRIC_COSINE, SR_PRECISION_EXACT, "3xTF32", 1e-5);
    compare(ctx, "a 2049", X, X, x.nrows, 5, SR_METRIC_JACCARD, SR_PRECISION_EXACT, "FP16 (exact)", -1.0);
    sr_matrix_free(X);
    test_csr_free(&x);

    /* |q||x| reaching 2^24 turns FP16 down: a row of 4 entries of 2048 has |q|^2 = 2^24 (its dot
     * product with itself is 2^24); 3 of them keep |q||x| below it, and FP16 */
    norm_at_the_edge(ctx, "counts", VALUES_COUNTS, 2048.0f);

    /* half steps (MovieLens' stars): FP16, bit for bit, as long as 2048 half steps hold the
     * largest value (1024 does, 1024.5 does not) and |q||x| stays under 2^24 quarter steps (a row
     * of four 1024s reaches it) */
    x = zipf_rows(1500, 700, 24, VALUES_HALVES, 1024.0);
    q = zipf_rows(300, 700, 24, VALUES_HALVES, 3.5);
    every_metric(ctx, "half steps", &x, &q, SR_PRECISION_EXACT, "FP16 (exact)", -1.0);
    test_csr_free(&x);
    test_csr_free(&q);
    x = zipf_rows(1200, 500, 20, VALUES_HALVES, 1024.5);
    X = on_device(ctx, &x);
    compare(ctx, "a 1024.5", X, X, x.nrows, 5, SR_METRIC_COSINE, SR_PRECISION_EXACT, "3xTF32", 1e-5);
    sr_matrix_free(X);
    test_csr_free(&x);
    norm_at_the_edge(ctx, "half steps", VALUES_HALVES, 1024.0f);

    /* queries with more cold entries (columns outside the panel) than the selection's 256 cursors:
     * the rest go straight into the block (rows of 3,000 draws: ~900 columns, about half cold);
     * counts bit for bit, reals within float32 accuracy, one batch and many */
    x = zipf_rows_long(1500, 2000, 20, VALUES_COUNTS, 9.0, 3000);
    every_metric(ctx, "long rows", &x, NULL, SR_PRECISION_EXACT, "FP16 (exact)", -1.0);
    CHECK_OK(sr_context_set_workspace_limit(ctx, 2u << 20));
    every_metric(ctx, "long rows, small batches", &x, NULL, SR_PRECISION_EXACT, "FP16 (exact)", -1.0);
    CHECK_OK(sr_context_set_workspace_limit(ctx, 0));
    test_csr_free(&x);
    /* (not the expanded euclidean forms and Hellinger: near 0 they are the square root of a
     * cancellation, off by ~sqrt(2^-22 |q|^2) in float32 on either path; 1e-3 on these rows) */
    x = zipf_rows_long(1500, 2000, 20, VALUES_REAL, 0.0, 3000);
    const sr_metric conditioned[] = {SR_METRIC_COSINE, SR_METRIC_INNER_PRODUCT, SR_METRIC_CORRELATION,
                                     SR_METRIC_JACCARD, SR_METRIC_DICE, SR_METRIC_RUSSELL_RAO};
    metrics_of(ctx, "long rows, reals", &x, NULL, SR_PRECISION_EXACT, "3xTF32", 2e-5, conditioned,
               sizeof conditioned / sizeof conditioned[0]);
    test_csr_free(&x);

    /* real values: the split product keeps float32 accuracy; one TF32 product within 1e-2 */
    x = zipf_rows(1500, 600, 24, VALUES_REAL, 0.0);
    q = zipf_rows(200, 600, 24, VALUES_REAL, 0.0);
    every_metric(ctx, "reals", &x, &q, SR_PRECISION_EXACT, "3xTF32", 2e-5);
    X = on_device(ctx, &x);
    compare(ctx, "reals, tf32", X, X, x.nrows, 10, SR_METRIC_COSINE, SR_PRECISION_TF32, "TF32", 1e-2);
    /* k past 32 and Chebyshev do not take the panel */
    char method[256];
    knn_out big = run(ctx, X, X, x.nrows, 40, SR_METRIC_COSINE, SR_PRECISION_EXACT, method, sizeof method);
    CHECK(strstr(method, "panel") == NULL, "k = 40 took '%s'", method);
    free(big.idx);
    free(big.dist);
    sr_matrix_free(X);
    test_csr_free(&x);
    test_csr_free(&q);

    count_levels(ctx);
    table_levels(ctx);

    /* a precision that does not exist is refused */
    {
        test_csr s = zipf_rows(50, 40, 5, VALUES_COUNTS, 3.0);
        sr_matrix S = on_device(ctx, &s);
        int64_t idx[50];
        float dist[50];
        sr_dense D = sr_dense_view(dist, 50, 1, SR_TYPE_FLOAT32, SR_ROW_MAJOR, SR_HOST);
        sr_knn_options bad = {NULL, NULL, (sr_precision)7};
        CHECK_FAILS(sr_knn(ctx, S, S, 1, SR_METRIC_COSINE, 0.0, idx, &D, &bad), SR_ERROR_INVALID_ARGUMENT, "precision 7");
        sr_matrix_free(S);
        test_csr_free(&s);
    }
    sr_context_destroy(ctx);
    return test_finish("test_knn_panel");
}
