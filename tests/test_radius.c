/* sr_radius_neighbors against the pairs picked here from sr_pairwise_distance (itself checked
 * against a float64 reference in test_distance): every pair within the radius (at least it for
 * inner_product), the diagonal left out when asked, over several batches, in both modes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static sr_context ctx;
static sr_location where;

/* Random rows, some of them copies of earlier ones (equal rows: ties at distance 0). */
static test_csr rows_with_copies(int64_t m, int64_t d)
{
    test_csr t = test_random_csr(m, d, 4, SR_TYPE_FLOAT64);
    for (int64_t b = 5; b < m; b += 9) {
        const int64_t a = b - 5;
        if (t.rowptr[a + 1] - t.rowptr[a] == t.rowptr[b + 1] - t.rowptr[b]) {
            memcpy(t.colind + t.rowptr[b], t.colind + t.rowptr[a], (size_t)(t.rowptr[a + 1] - t.rowptr[a]) * 4);
            memcpy((double *)t.values + t.rowptr[b], (double *)t.values + t.rowptr[a],
                   (size_t)(t.rowptr[a + 1] - t.rowptr[a]) * 8);
        }
    }
    return t;
}

/* The radius r at which about `share` of the pairs are kept. */
static double radius_keeping(const double *D, int64_t count, double share, bool largest)
{
    double *v = malloc((size_t)count * sizeof(double));
    memcpy(v, D, (size_t)count * sizeof(double));
    for (int64_t i = 1; i < count; i++) /* insertion sort: small tests */
        for (int64_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    int64_t at = (int64_t)(share * (double)(count - 1));
    double r = v[largest ? count - 1 - at : at];
    free(v);
    return r;
}

/* Every element of R against the reference: within the radius <=> stored. On the GPU the
 * distances are summed in another order than the reference's, so pairs within tol of the
 * radius may fall either side. */
static void compare(sr_matrix R, const double *D, int64_t mq, int64_t n, double r, bool largest, bool leave_out_self,
                    sr_graph_mode mode, const char *what)
{
    sr_matrix_info info;
    CHECK_OK(sr_matrix_get_info(R, &info));
    CHECK(info.location == where && info.nrows == mq && info.ncols == n, "%s: shape or place", what);
    CHECK(info.type == (mode == SR_GRAPH_DISTANCE ? SR_TYPE_FLOAT64 : SR_TYPE_BOOL), "%s: type %d", what, (int)info.type);
    int64_t *rowptr = malloc((size_t)(mq + 1) * sizeof(int64_t));
    int32_t *cols = malloc((size_t)(info.nnz + 1) * sizeof(int32_t));
    double *vals = malloc((size_t)(info.nnz + 1) * sizeof(double));
    unsigned char *held = calloc((size_t)(mq * n), 1);
    CHECK_OK(sr_matrix_export_csr(ctx, R, rowptr, cols, mode == SR_GRAPH_DISTANCE ? vals : NULL, SR_HOST));
    const double tol = where == SR_DEVICE ? 1e-9 * (1.0 + fabs(r)) : 0.0;
    int64_t bad = 0;
    for (int64_t i = 0; i < mq; i++)
        for (int64_t e = rowptr[i]; e < rowptr[i + 1]; e++) {
            CHECK(e == rowptr[i] || cols[e - 1] < cols[e], "%s: row %lld's columns are not sorted", what, (long long)i);
            held[i * n + cols[e]] = 1;
            if (mode == SR_GRAPH_DISTANCE && fabs(vals[e] - D[i * n + cols[e]]) > 1e-12 + tol && bad++ < 3)
                CHECK(0, "%s: (%lld, %d) holds %g, reference %g", what, (long long)i, cols[e], vals[e],
                      D[i * n + cols[e]]);
        }
    for (int64_t i = 0; i < mq; i++)
        for (int64_t j = 0; j < n; j++) {
            const double d = D[i * n + j];
            const bool self = leave_out_self && i == j;
            const bool inside = !self && (largest ? d >= r + tol : d <= r - tol);
            const bool outside = self || (largest ? d < r - tol : d > r + tol);
            const bool has = held[i * n + j] != 0;
            if (((inside && !has) || (outside && has)) && bad++ < 3)
                CHECK(0, "%s: (%lld, %lld) at %.17g %s, radius %.17g", what, (long long)i, (long long)j, d,
                      has ? "is held" : "is missing", r);
        }
    free(rowptr);
    free(cols);
    free(vals);
    free(held);
}

/* R for X against itself (Q NULL) or for Q's rows against X's, at the radius keeping `share`. */
static void check_radius(sr_metric metric, const test_csr *xt, const test_csr *qt, double share, bool include_self,
                         sr_graph_mode mode, size_t workspace)
{
    const bool largest = metric == SR_METRIC_INNER_PRODUCT, self = qt == NULL;
    const int64_t n = xt->nrows, mq = self ? n : qt->nrows;
    sr_matrix X = test_make_matrix(ctx, xt), Q = self ? X : test_make_matrix(ctx, qt), Xw = X, Qw = Q;
    double *D = malloc((size_t)(mq * n) * sizeof(double));
    sr_dense Dv = sr_dense_view(D, mq, n, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    CHECK_OK(sr_pairwise_distance(ctx, Q, X, metric, 0, &Dv));
    const double r = share < 0 ? 0.0 : share > 1 ? INFINITY : radius_keeping(D, mq * n, share, largest);
    if (where == SR_DEVICE) {
        CHECK_OK(sr_matrix_copy_to(ctx, X, SR_DEVICE, &Xw));
        Qw = self ? Xw : NULL;
        if (!self)
            CHECK_OK(sr_matrix_copy_to(ctx, Q, SR_DEVICE, &Qw));
    }
    CHECK_OK(sr_context_set_workspace_limit(ctx, workspace));
    sr_radius_options o = sr_radius_options_default();
    o.mode = mode;
    o.include_self = include_self;
    o.type = SR_TYPE_FLOAT64;
    sr_matrix R = NULL;
    char what[128];
    snprintf(what, sizeof what, "%s %s radius %g self %d mode %d workspace %zu", sr_metric_name(metric),
             self ? "X-X" : "Q-X", r, include_self, (int)mode, workspace);
    sr_status s = sr_radius_neighbors(ctx, Xw, self ? NULL : Qw, r, metric, 0, &o, &R);
    CHECK(s == SR_SUCCESS, "%s: %s", what, sr_last_error());
    if (s == SR_SUCCESS)
        compare(R, D, mq, n, r, largest, self && !include_self, mode, what);
    CHECK_OK(sr_context_set_workspace_limit(ctx, 0));
    sr_matrix_free(R);
    if (Qw != Q && Qw != Xw)
        sr_matrix_free(Qw);
    if (Xw != X)
        sr_matrix_free(Xw);
    if (Q != X)
        sr_matrix_free(Q);
    sr_matrix_free(X);
    free(D);
}

static void check_limits_and_rejections(void)
{
    test_csr t = rows_with_copies(40, 10);
    for (int64_t e = 0; e < t.nnz; e++) /* small integers: every sum exact, so two runs agree bit for bit */
        ((double *)t.values)[e] = (double)(1 + test_below(3));
    sr_matrix X = test_make_matrix(ctx, &t), Xw = X, R = NULL;
    if (where == SR_DEVICE)
        CHECK_OK(sr_matrix_copy_to(ctx, X, SR_DEVICE, &Xw));
    sr_radius_options o = sr_radius_options_default();
    /* host: batches of 7 rows (1,120 bytes of float32 distances), whose 280 pairs (8 bytes each) pass
     * 1,200 bytes; device tiles: 25 pairs held (48 bytes each), fewer than a single query's 39 */
    CHECK_OK(sr_context_set_workspace_limit(ctx, 1200));
    CHECK_FAILS(sr_radius_neighbors(ctx, Xw, NULL, INFINITY, SR_METRIC_L2, 0, &o, &R), SR_ERROR_OUT_OF_MEMORY,
                "lower the radius");
    /* 300 pairs held on the device: the batch of 40 queries (1,560 pairs) is retried in fewer, and
     * the pieces stack to the same result (the host's one batch of 1,560 pairs fits) */
    sr_matrix all = NULL, parts = NULL;
    CHECK_OK(sr_context_set_workspace_limit(ctx, 0));
    CHECK_OK(sr_radius_neighbors(ctx, Xw, NULL, INFINITY, SR_METRIC_L2, 0, &o, &all));
    CHECK_OK(sr_context_set_workspace_limit(ctx, 48 * 300));
    CHECK_OK(sr_radius_neighbors(ctx, Xw, NULL, INFINITY, SR_METRIC_L2, 0, &o, &parts));
    bool same = false;
    CHECK_OK(sr_matrix_equal(ctx, all, parts, &same));
    CHECK(same, "radius neighbours in batches that fit the workspace differ from one batch");
    sr_matrix_free(all);
    sr_matrix_free(parts);
    /* host: 5 rows of distances a batch, 8 batches; the device tiles write no distances and take
     * every query in one batch (when its pairs fit: a similarity of at least 1e30 keeps none,
     * where radius 0 would keep each row's copies, 48 bytes a pair, past the 800 bytes) */
    CHECK_OK(sr_context_set_workspace_limit(ctx, 40 * 4 * 5));
    int64_t seen = 0;
    const int64_t first_batch = where == SR_DEVICE ? 40 : 5;
    o.progress = test_stop_at_first_report;
    o.progress_user = &seen;
    CHECK_FAILS(sr_radius_neighbors(ctx, Xw, NULL, 1e30, SR_METRIC_INNER_PRODUCT, 0, &o, &R), SR_ERROR_CANCELLED,
                where == SR_DEVICE ? "after 40 of 40" : "after 5 of 40");
    CHECK(seen == first_batch, "progress reported %lld rows, expected %lld", (long long)seen, (long long)first_batch);
    CHECK_OK(sr_context_set_workspace_limit(ctx, 0));
    o = sr_radius_options_default();
    CHECK_FAILS(sr_radius_neighbors(ctx, Xw, NULL, NAN, SR_METRIC_L2, 0, &o, &R), SR_ERROR_INVALID_ARGUMENT, "NaN");
    /* a negative radius matches no distance: refused, not answered with nothing (issue 58) */
    R = NULL;
    CHECK_FAILS(sr_radius_neighbors(ctx, Xw, NULL, -1.0, SR_METRIC_COSINE, 0, &o, &R), SR_ERROR_INVALID_ARGUMENT,
                "never negative");
    CHECK(R == NULL, "a refused call wrote R");
    o.include_self = true;
    CHECK_FAILS(sr_radius_neighbors(ctx, Xw, Xw, 1.0, SR_METRIC_L2, 0, &o, &R), SR_ERROR_INVALID_ARGUMENT,
                "queries NULL");
    o = sr_radius_options_default();
    o.type = SR_TYPE_INT32;
    CHECK_FAILS(sr_radius_neighbors(ctx, Xw, NULL, 1.0, SR_METRIC_L2, 0, &o, &R), SR_ERROR_INVALID_ARGUMENT,
                "float32 or float64");
    CHECK(R == NULL, "a failed call left a result");
    if (Xw != X)
        sr_matrix_free(Xw);
    sr_matrix_free(X);
    test_csr_free(&t);
}

static void run_all(void)
{
    const sr_metric metrics[] = {SR_METRIC_COSINE, SR_METRIC_L2, SR_METRIC_L1, SR_METRIC_CHEBYSHEV,
                                 SR_METRIC_JACCARD, SR_METRIC_INNER_PRODUCT};
    test_csr x = rows_with_copies(70, 15), q = test_random_csr(23, 15, 4, SR_TYPE_FLOAT64);
    for (size_t i = 0; i < sizeof metrics / sizeof *metrics; i++)
        for (int mode = 0; mode < 2; mode++) {
            check_radius(metrics[i], &x, NULL, 0.2, false, (sr_graph_mode)mode, 0);
            check_radius(metrics[i], &x, NULL, 0.2, true, (sr_graph_mode)mode, 0);
            check_radius(metrics[i], &x, &q, 0.3, false, (sr_graph_mode)mode, 0);
            /* host: 3 query rows of distances a batch; device tiles: 70 pairs held (48 bytes each),
             * so the first batch is retried in a few queries a batch. Many pieces stacked. */
            check_radius(metrics[i], &x, NULL, 0.1, false, (sr_graph_mode)mode, where == SR_DEVICE ? 70 * 48 : 70 * 8 * 3);
        }
    check_radius(SR_METRIC_L2, &x, NULL, 0.0, false, SR_GRAPH_DISTANCE, 0); /* radius 0: the copies only */
    check_radius(SR_METRIC_L2, &x, NULL, -1.0, true, SR_GRAPH_DISTANCE, 0); /* radius 0: each row itself and its equals */
    check_radius(SR_METRIC_L2, &x, NULL, 2.0, true, SR_GRAPH_DISTANCE, 0);  /* infinite: everything */
    check_limits_and_rejections();
    test_csr_free(&x);
    test_csr_free(&q);
}

int main(void)
{
    test_seed("test_radius");
    test_on_each_backend(&ctx, &where, run_all);
    return test_finish("test_radius");
}
