/* The k-NN and radius overlap paths (host: src/cpu/cpu_overlap.c; device k-NN:
 * src/cuda/cuda_knn_overlap.cu; device k-NN and radius by tiles: src/cuda/cuda_tile_select.cuh)
 * against the dense path: for every metric,
 * float32 and float64, the same neighbours and bit-identical distances (SPARSERING_KNN_OVERLAP=1
 * and the default per-query choice, each against =0), on inputs built to break it: counts that
 * tie (small integers, repeated index rows), empty rows, queries that overlap nothing (columns
 * the index never uses), queries that overlap everything (dense rows), and k past a query's
 * overlap. python/tests/test_neighbors.py does the same on the real bag of words. */
#include "test_util.h"

static sr_context ctx;
static sr_location where;

/* A CSR of nrows x ncols whose rows each pick `degree` columns in [c0, c1) at random (0 for an
 * empty row), values small integers (or their negatives when `signed_values`), so many distances
 * tie exactly. Row r copies row r - 1 when r % 7 == 3 (exact repeats). */
static test_csr counts(int64_t nrows, int64_t ncols, int64_t c0, int64_t c1, int64_t degree, bool signed_values,
                       sr_type type)
{
    test_csr m = {nrows, ncols, 0, type, calloc((size_t)nrows + 1, sizeof(int64_t)), NULL, NULL};
    const int64_t span = c1 - c0, cap = nrows * (degree < span ? degree : span) + 1;
    m.colind = malloc((size_t)cap * sizeof(int32_t));
    double *vals = malloc((size_t)cap * sizeof(double));
    unsigned char *pick = calloc((size_t)ncols, 1);
    for (int64_t r = 0; r < nrows; r++) {
        int64_t at = m.rowptr[r];
        if (r % 7 == 3 && r > 0) { /* a repeat of the row before */
            for (int64_t e = m.rowptr[r - 1]; e < m.rowptr[r]; e++, at++) {
                m.colind[at] = m.colind[e];
                vals[at] = vals[e];
            }
        } else if (r % 9 != 5) { /* else empty */
            int64_t d = 1 + test_below(degree < span ? degree : span);
            for (int64_t n = 0; n < d;) {
                int64_t c = c0 + test_below(span);
                if (!pick[c]) {
                    pick[c] = 1;
                    n++;
                }
            }
            for (int64_t c = c0; c < c1; c++)
                if (pick[c]) {
                    pick[c] = 0;
                    m.colind[at] = (int32_t)c;
                    vals[at++] = (double)(1 + test_below(3)) * (signed_values && test_below(2) ? -1.0 : 1.0);
                }
        }
        m.rowptr[r + 1] = at;
    }
    m.nnz = m.rowptr[nrows];
    m.values = malloc((size_t)(m.nnz ? m.nnz : 1) * sr_type_size(type));
    for (int64_t e = 0; e < m.nnz; e++) {
        if (type == SR_TYPE_FLOAT32)
            ((float *)m.values)[e] = (float)vals[e];
        else
            ((double *)m.values)[e] = vals[e];
    }
    free(vals);
    free(pick);
    return m;
}

static void set_mode(const char *name, const char *mode)
{
    if (mode)
        setenv(name, mode, 1);
    else
        unsetenv(name);
}

/* One k-NN run with SPARSERING_KNN_OVERLAP set to `mode` ("0", "1", or NULL for the default) and
 * SPARSERING_KNN_TILES to `tiles` (the device's tile path: "0" or NULL). */
static void run(const char *mode, const char *tiles, sr_matrix X, sr_matrix Q, int64_t nq, int64_t k, sr_metric m,
                sr_type type, int64_t *idx, void *dist)
{
    set_mode("SPARSERING_KNN_OVERLAP", mode);
    set_mode("SPARSERING_KNN_TILES", tiles);
    sr_dense D = sr_dense_view(dist, nq, k, type, SR_ROW_MAJOR, SR_HOST);
    CHECK_OK(sr_knn(ctx, X, Q, k, m, m == SR_METRIC_MINKOWSKI ? 3.0 : 0.0, idx, &D, NULL));
    unsetenv("SPARSERING_KNN_OVERLAP");
    unsetenv("SPARSERING_KNN_TILES");
}

/* One radius search, SPARSERING_KNN_OVERLAP and SPARSERING_KNN_TILES set as run's. */
static sr_matrix radius_run(const char *mode, const char *tiles, sr_matrix X, sr_matrix Q, double radius, sr_metric m,
                            sr_type type)
{
    set_mode("SPARSERING_KNN_OVERLAP", mode);
    set_mode("SPARSERING_KNN_TILES", tiles);
    sr_radius_options o = sr_radius_options_default();
    o.type = type;
    sr_matrix R = NULL;
    CHECK_OK(sr_radius_neighbors(ctx, X, Q, radius, m, m == SR_METRIC_MINKOWSKI ? 3.0 : 0.0, &o, &R));
    unsetenv("SPARSERING_KNN_OVERLAP");
    unsetenv("SPARSERING_KNN_TILES");
    return R;
}

/* Radius neighbours of metric m by the overlap path and the default choice (on the device, the
 * tiles, and the tiles 3 a block) against the dense path, at radii taken from the dense k-NN's
 * distances (a small one, the widest k-th distance, and, for the index against itself, with each
 * row leaving itself out). */
static void compare_radius(const char *what, sr_matrix X, sr_matrix Q, sr_metric m, sr_type type, const void *dist,
                           int64_t nq, int64_t k)
{
    double small = INFINITY, wide = -INFINITY;
    for (int64_t e = 0; e < nq * k; e++) {
        const double v = type == SR_TYPE_FLOAT32 ? ((const float *)dist)[e] : ((const double *)dist)[e];
        if (e % k == k / 2)
            small = fmin(small, v);
        wide = fmax(wide, v);
    }
    if (m == SR_METRIC_INNER_PRODUCT) { /* a similarity: keeps values at least the radius */
        double t = small;
        small = wide;
        wide = t;
    }
    const double radii[2] = {small, wide};
    for (int r = 0; r < 2; r++)
        for (int self = 0; self < 2; self++) {
            if (self && X != Q)
                continue;
            sr_matrix want = radius_run("0", "0", X, self ? NULL : Q, radii[r], m, type);
            const char *modes[3] = {"1", NULL, NULL}, *tiles[3] = {NULL, NULL, "3"};
            for (int t = 0; t < (where == SR_DEVICE ? 3 : 2); t++) {
                sr_matrix got = radius_run(modes[t], tiles[t], X, self ? NULL : Q, radii[r], m, type);
                bool same = false;
                if (got && want)
                    CHECK_OK(sr_matrix_equal(ctx, got, want, &same));
                CHECK(same, "%s, %s, %s, radius %g%s, mode %s, tiles %s: radius neighbours differ from the dense path",
                      what, sr_metric_name(m), sr_type_name(type), radii[r], self ? " (self)" : "",
                      modes[t] ? modes[t] : "auto", tiles[t] ? tiles[t] : "auto");
                sr_matrix_free(got);
            }
            sr_matrix_free(want);
        }
}

/* Whether a metric's intersection terms on small integers are exact, so that any order of summing
 * them gives the same bits: not the square roots (Hellinger), logarithms (KL, Jensen-Shannon),
 * fractions (Canberra) or powers (Minkowski). */
static bool exact_terms(sr_metric m)
{
    return m != SR_METRIC_HELLINGER && m != SR_METRIC_KL_DIVERGENCE && m != SR_METRIC_JENSEN_SHANNON &&
           m != SR_METRIC_CANBERRA && m != SR_METRIC_MINKOWSKI;
}

/* Every metric on one index / query pair: the overlap path and the default choice equal the dense path. */
static void compare_paths(const char *what, const test_csr *xi, const test_csr *xq, int64_t k, bool nonnegative)
{
    if (!test_part_selected()) /* SR_TEST_PART: another part runs it */
        return;
    sr_matrix X = test_make_matrix_at(ctx, xi, where), Q = xi == xq ? X : test_make_matrix_at(ctx, xq, where);
    const int64_t nq = xq->nrows;
    const size_t es = sr_type_size(xi->type);
    int64_t *want_i = malloc((size_t)(nq * k) * sizeof(int64_t)), *got_i = malloc((size_t)(nq * k) * sizeof(int64_t));
    void *want_d = malloc((size_t)(nq * k) * es), *got_d = malloc((size_t)(nq * k) * es);
    for (int m = 0; m < SR_METRIC_COUNT; m++) {
        if (!nonnegative && (m == SR_METRIC_HELLINGER || m == SR_METRIC_KL_DIVERGENCE || m == SR_METRIC_JENSEN_SHANNON))
            continue;
        /* the device's dense kernel sums with atomics in an order of their own, so it repeats itself
         * bit for bit only where the terms' sums are exact */
        if (where == SR_DEVICE && !exact_terms((sr_metric)m))
            continue;
        /* the dense path: no overlap path, and on the device no tiles (a block of n a query, then
         * the selection kernel); against it the overlap path (on the device it declines all but the
         * metrics walked by index, and the tiles take those) and the default choice (the tiles on
         * the device, k <= 32) */
        run("0", "0", X, Q, nq, k, (sr_metric)m, xi->type, want_i, want_d);
        /* and on the device, blocks of 3 consecutive tiles (their cursors carried from tile to tile,
         * which the default takes only for batches that fill the device) */
        const char *modes[3] = {"1", NULL, NULL}, *tiles[3] = {NULL, NULL, "3"};
        for (int t = 0; t < (where == SR_DEVICE ? 3 : 2); t++) {
            run(modes[t], tiles[t], X, Q, nq, k, (sr_metric)m, xi->type, got_i, got_d);
            int64_t bad = 0, first = -1;
            for (int64_t e = 0; e < nq * k; e++)
                if (got_i[e] != want_i[e] || memcmp((char *)got_d + e * es, (char *)want_d + e * es, es) != 0) {
                    bad++;
                    if (first < 0)
                        first = e;
                }
            CHECK(bad == 0, "%s, %s, %s, mode %s, tiles %s: %lld of %lld results differ from the dense path (first: "
                  "query %lld, place %lld: row %lld, expected %lld)", what, sr_metric_name((sr_metric)m),
                  sr_type_name(xi->type), modes[t] ? modes[t] : "auto", tiles[t] ? tiles[t] : "auto", (long long)bad,
                  (long long)(nq * k), (long long)(first / k), (long long)(first % k), (long long)(first >= 0 ? got_i[first] : -1),
                  (long long)(first >= 0 ? want_i[first] : -1));
        }
        compare_radius(what, X, Q, (sr_metric)m, xi->type, want_d, nq, k);
    }
    free(want_i);
    free(got_i);
    free(want_d);
    free(got_d);
    if (Q != X)
        sr_matrix_free(Q);
    sr_matrix_free(X);
}

static void synthetic_cases(sr_type type)
{
    for (int sign = 0; sign < 2; sign++) {
        const bool signed_values = sign == 1;
        /* the index uses columns [0, 80) of 100, 2-6 entries a row */
        test_csr xi = counts(400, 100, 0, 80, 6, signed_values, type);
        /* sparse queries like the index; queries only in the columns the index never uses (they
         * overlap nothing); dense queries over every column (they overlap every non-empty row) */
        test_csr sparse = counts(120, 100, 0, 100, 5, signed_values, type);
        test_csr disjoint = counts(30, 100, 80, 100, 4, signed_values, type);
        test_csr dense = counts(20, 100, 0, 100, 100, signed_values, type);
        const char *tag = signed_values ? "signed" : "nonnegative";
        char what[96];
        snprintf(what, sizeof what, "sparse queries, %s, k 10", tag);
        compare_paths(what, &xi, &sparse, 10, !signed_values);
        snprintf(what, sizeof what, "sparse queries, %s, k 150 (past the overlap)", tag);
        compare_paths(what, &xi, &sparse, 150, !signed_values);
        snprintf(what, sizeof what, "queries overlapping nothing, %s", tag);
        compare_paths(what, &xi, &disjoint, 7, !signed_values);
        snprintf(what, sizeof what, "dense queries, %s", tag);
        compare_paths(what, &xi, &dense, 9, !signed_values);
        snprintf(what, sizeof what, "the index against itself, %s", tag);
        compare_paths(what, &xi, &xi, 12, !signed_values);
        test_csr_free(&xi);
        test_csr_free(&sparse);
        test_csr_free(&disjoint);
        test_csr_free(&dense);
    }
    /* an index of several 2,048-row slices, which a densely scored query accumulates and finalizes
     * one after another (its cursors carry each column's place from slice to slice) */
    test_csr tall = counts(5000, 300, 0, 300, 8, false, type), wide_queries = counts(12, 300, 0, 300, 150, false, type);
    compare_paths("dense queries over several slices", &tall, &wide_queries, 11, true);
    test_csr_free(&tall);
    test_csr_free(&wide_queries);
    /* an index of several device tiles (3,072 to 12,288 rows each, by the metric's accumulators), so
     * a query's blocks each keep their k best and a last pass merges them; sparse queries, queries
     * overlapping nothing (every row ties), and the index's own rows (ties between repeats) */
    test_csr huge = counts(30000, 1400, 0, 1200, 4, false, type), few = counts(9, 1400, 0, 1400, 6, false, type);
    test_csr none = counts(5, 1400, 1200, 1400, 3, false, type);
    /* queries of up to 1,000 entries: past the 256 whose places a device block carries from tile
     * to tile (the rest search each tile) */
    test_csr wide = counts(6, 1400, 0, 1200, 1000, false, type);
    compare_paths("an index of several tiles", &huge, &few, 13, true);
    compare_paths("an index of several tiles, queries overlapping nothing", &huge, &none, 32, true);
    compare_paths("an index of several tiles, long queries", &huge, &wide, 5, true);
    /* popular columns: a column's run inside a tile passes 64 rows, so the device block shares it;
     * queries of up to 100 such columns pass the 64 runs a tile shares (the rest stay with their
     * warps) */
    test_csr hot = counts(30000, 1400, 0, 100, 5, false, type), hot_queries = counts(8, 1400, 0, 100, 100, false, type);
    compare_paths("an index of several tiles, popular columns", &hot, &hot_queries, 7, true);
    test_csr_free(&hot);
    test_csr_free(&hot_queries);
    test_csr_free(&few);
    test_csr_free(&none);
    test_csr_free(&wide);
    test_csr_free(&huge);
}

static void all_cases(void)
{
    synthetic_cases(SR_TYPE_FLOAT32);
    synthetic_cases(SR_TYPE_FLOAT64);
}

int main(void)
{
    test_seed("test_knn_overlap");
    /* on the device the overlap path takes k <= 32 and the metrics walked by index (cosine, inner
     * product, KL divergence, Russell-Rao; the others compare the dense path with itself); the
     * small integer values make every sum exact in any order, so the dense kernel's atomics and the
     * overlap path's ordered sums agree bit for bit */
    test_on_each_backend(&ctx, &where, all_cases);
    return test_finish("test_knn_overlap");
}
