/* sr_knn_graph against a graph built here from sr_pairwise_distance (itself checked against a
 * float64 reference in test_distance): each row's k nearest by (distance, index), the row left
 * out as scikit-learn does, and the symmetrized union with the larger value. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static sr_context ctx;
static sr_location where;

/* X's rows with some repeated (so ties at distance 0 push rows out of their own lists). */
static test_csr data_with_repeats(int64_t m, int64_t d)
{
    test_csr t = test_random_csr(m, d, 3, SR_TYPE_FLOAT64);
    for (int64_t r = 3; r + 1 < m; r += 7) { /* row r+1 copies row r-3 when their lengths agree */
        int64_t a = r - 3, b = r + 1;
        if (t.rowptr[a + 1] - t.rowptr[a] == t.rowptr[b + 1] - t.rowptr[b]) {
            memcpy(t.colind + t.rowptr[b], t.colind + t.rowptr[a], (size_t)(t.rowptr[a + 1] - t.rowptr[a]) * 4);
            memcpy((double *)t.values + t.rowptr[b], (double *)t.values + t.rowptr[a],
                   (size_t)(t.rowptr[a + 1] - t.rowptr[a]) * 8);
        }
    }
    return t;
}

/* Each row's expected neighbours (E: the distance, NAN for none) by (distance, index), and the
 * distance of its k-th: the boundary that near-ties may cross. */
static void expected_lists(const double *D, int64_t m, int64_t k, bool include_self, double *E, double *kth)
{
    int64_t kk = k + (include_self ? 0 : 1), *order = malloc((size_t)m * sizeof(int64_t));
    for (int64_t i = 0; i < m * m; i++)
        E[i] = NAN;
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < m; j++)
            order[j] = j;
        for (int64_t a = 0; a < kk; a++) /* partial selection by (distance, index) */
            for (int64_t b = a + 1; b < m; b++) {
                double da = D[i * m + order[a]], db = D[i * m + order[b]];
                if (db < da || (db == da && order[b] < order[a])) {
                    int64_t tmp = order[a];
                    order[a] = order[b];
                    order[b] = tmp;
                }
            }
        int64_t skip = -1;
        if (!include_self) {
            skip = 0;
            for (int64_t a = 0; a < kk; a++)
                if (order[a] == i)
                    skip = a;
        }
        kth[i] = -INFINITY;
        for (int64_t a = 0; a < kk; a++)
            if (a != skip) {
                E[i * m + order[a]] = D[i * m + order[a]];
                kth[i] = fmax(kth[i], D[i * m + order[a]]);
            }
    }
    free(order);
}

/* Does G hold the graph? Exactly on the CPU, where the reference distances are the kernel's own.
 * The GPU sums in another order, so distances that tie in exact arithmetic differ there by
 * ulps and may swap: within tol of a row's k-th distance, either choice is right. Every edge
 * must be in its row's list or (symmetrized) its column's, within tol; every edge clearly
 * inside a list must be there; without symmetrizing, each row holds exactly its list's count. */
static int64_t graph_mismatches(const double *D, const double *E, const double *kth, const double *got,
                                const unsigned char *bits, int64_t m, bool include_self, bool symmetrize,
                                sr_graph_mode mode, double tol, const char *what)
{
    int64_t bad = 0;
    for (int64_t i = 0; i < m; i++) {
        int64_t held = 0, listed = 0;
        for (int64_t j = 0; j < m; j++) {
            const int64_t ij = i * m + j, ji = j * m + i;
            const bool has = bits[ij] != 0;
            held += has;
            listed += !isnan(E[ij]);
            const bool near = tol > 0; /* exact (tol 0): the lists themselves, ties by index */
            const bool may_ij = !isnan(E[ij]) || (near && (j != i || include_self) && D[ij] <= kth[i] + tol);
            const bool may_ji = !isnan(E[ji]) || (near && (j != i || include_self) && D[ji] <= kth[j] + tol);
            const bool must = (!isnan(E[ij]) && (!near || D[ij] < kth[i] - tol)) ||
                              (symmetrize && !isnan(E[ji]) && (!near || D[ji] < kth[j] - tol));
            const bool allowed = may_ij || (symmetrize && may_ji);
            const bool value_ok = mode != SR_GRAPH_DISTANCE || !has || fabs(got[ij] - D[ij]) <= 1e-12 + tol;
            if ((has && !allowed) || (must && !has) || !value_ok) {
                if (bad++ < 3)
                    CHECK(0, "%s: (%lld, %lld) %s %g, reference %g (row's k-th %g)", what, (long long)i, (long long)j,
                          has ? "holds" : "lacks", mode == SR_GRAPH_DISTANCE ? got[ij] : bits[ij], D[ij], kth[i]);
            }
        }
        if (!symmetrize && held != listed && bad++ < 3)
            CHECK(0, "%s: row %lld holds %lld edges, expected %lld", what, (long long)i, (long long)held,
                  (long long)listed);
    }
    return bad;
}

/* bits[i*m + j] = 1 where G stores an entry, zeros included. */
static void mark_stored(sr_matrix G, int64_t m, unsigned char *bits)
{
    sr_matrix_info info;
    CHECK_OK(sr_matrix_get_info(G, &info));
    int64_t *rows = malloc((size_t)(info.nnz + 1) * sizeof(int64_t));
    int32_t *cols = malloc((size_t)(info.nnz + 1) * sizeof(int32_t));
    double *values = malloc((size_t)(info.nnz + 1) * sizeof(double));
    CHECK_OK(sr_matrix_export_coo(ctx, G, rows, cols, values, SR_HOST));
    for (int64_t e = 0; e < info.nnz; e++)
        bits[rows[e] * m + cols[e]] = 1;
    free(rows);
    free(cols);
    free(values);
}

static void check_graph_of(test_csr t, sr_metric metric, int64_t k, bool include_self, bool symmetrize,
                           sr_graph_mode mode)
{
    const int64_t m = t.nrows;
    sr_matrix X = test_make_matrix(ctx, &t), Xw = X;
    if (where == SR_DEVICE)
        CHECK_OK(sr_matrix_copy_to(ctx, X, SR_DEVICE, &Xw));
    double *D = malloc((size_t)(m * m) * sizeof(double)), *E = malloc((size_t)(m * m) * sizeof(double)),
           *kth = malloc((size_t)m * sizeof(double));
    sr_dense Dv = sr_dense_view(D, m, m, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    CHECK_OK(sr_pairwise_distance(ctx, X, X, metric, 0, &Dv));
    expected_lists(D, m, k, include_self, E, kth);

    sr_knn_graph_options o = sr_knn_graph_options_default();
    o.mode = mode;
    o.include_self = include_self;
    o.symmetrize = symmetrize;
    o.type = SR_TYPE_FLOAT64;
    sr_matrix G = NULL;
    sr_status s = sr_knn_graph(ctx, Xw, k, metric, 0, &o, &G);
    CHECK(s == SR_SUCCESS, "knn_graph %s k %lld: %s", sr_metric_name(metric), (long long)k, sr_last_error());
    if (s == SR_SUCCESS) {
        sr_matrix_info info;
        CHECK_OK(sr_matrix_get_info(G, &info));
        CHECK(info.location == where && info.nrows == m && info.ncols == m, "graph shape or place");
        CHECK(info.type == (mode == SR_GRAPH_DISTANCE ? SR_TYPE_FLOAT64 : SR_TYPE_BOOL), "graph type %d",
              (int)info.type);
        double *got = calloc((size_t)(m * m), sizeof(double));
        unsigned char *bits = calloc((size_t)(m * m), 1);
        sr_dense Gv = mode == SR_GRAPH_DISTANCE ? sr_dense_view(got, m, m, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST)
                                                : sr_dense_view(bits, m, m, SR_TYPE_BOOL, SR_ROW_MAJOR, SR_HOST);
        CHECK_OK(sr_matrix_export_dense(ctx, G, &Gv));
        if (mode == SR_GRAPH_DISTANCE) /* stored zeros (equal rows) count as edges */
            mark_stored(G, m, bits);
        char what[96];
        snprintf(what, sizeof what, "%s k %lld self %d sym %d mode %d", sr_metric_name(metric), (long long)k,
                 include_self, symmetrize, (int)mode);
        graph_mismatches(D, E, kth, got, bits, m, include_self, symmetrize, mode, where == SR_DEVICE ? 1e-9 : 0.0,
                         what);
        free(got);
        free(bits);
    }
    sr_matrix_free(G);
    if (Xw != X)
        sr_matrix_free(Xw);
    sr_matrix_free(X);
    free(D);
    free(E);
    free(kth);
    test_csr_free(&t);
}

static void check_graph(sr_metric metric, int64_t m, int64_t k, bool include_self, bool symmetrize, sr_graph_mode mode)
{
    check_graph_of(data_with_repeats(m, 12), metric, k, include_self, symmetrize, mode);
}

/* Eight equal rows then two others: with k = 2 the later copies find three equal rows of
 * smaller index first, so they are pushed out of their own lists and the nearest is dropped. */
static test_csr equal_rows(void)
{
    test_csr t = {10, 3, 10, SR_TYPE_FLOAT64, malloc(11 * sizeof(int64_t)), malloc(10 * sizeof(int32_t)),
                  malloc(10 * sizeof(double))};
    for (int64_t i = 0; i <= 10; i++)
        t.rowptr[i] = i;
    for (int64_t i = 0; i < 10; i++) {
        t.colind[i] = i < 8 ? 0 : (int32_t)(i - 7);
        ((double *)t.values)[i] = i < 8 ? 1.0 : (double)i;
    }
    return t;
}

static void check_many_equal_rows(void)
{
    check_graph_of(equal_rows(), SR_METRIC_L2, 2, false, false, SR_GRAPH_DISTANCE);
    check_graph_of(equal_rows(), SR_METRIC_L2, 2, false, true, SR_GRAPH_CONNECTIVITY);
}

static void check_rejections(void)
{
    test_csr t = test_random_csr(5, 4, 2, SR_TYPE_FLOAT64);
    sr_matrix X = test_make_matrix(ctx, &t), G = NULL;
    CHECK_FAILS(sr_knn_graph(ctx, X, 5, SR_METRIC_L2, 0, NULL, &G), SR_ERROR_INVALID_ARGUMENT,
                "k must be 1..4: a row is not its own neighbour");
    CHECK_FAILS(sr_knn_graph(ctx, X, INT64_MAX, SR_METRIC_L2, 0, NULL, &G), SR_ERROR_INVALID_ARGUMENT,
                "k must be 1..4"); /* found by fuzz_cli: k + 1 overflowed before the check */
    sr_knn_graph_options o = sr_knn_graph_options_default();
    o.include_self = true;
    CHECK_OK(sr_knn_graph(ctx, X, 5, SR_METRIC_L2, 0, &o, &G)); /* every row, itself included */
    sr_matrix_free(G);
    o.type = SR_TYPE_INT32;
    CHECK_FAILS(sr_knn_graph(ctx, X, 2, SR_METRIC_L2, 0, &o, &G), SR_ERROR_INVALID_ARGUMENT, "float32 or float64");
    sr_matrix_free(X);
    test_csr_free(&t);
}

static void run_all(void)
{
    const sr_metric metrics[] = {SR_METRIC_COSINE, SR_METRIC_L2, SR_METRIC_L1, SR_METRIC_CHEBYSHEV};
    for (size_t i = 0; i < sizeof metrics / sizeof *metrics; i++)
        for (int self = 0; self < 2; self++)
            for (int sym = 0; sym < 2; sym++) {
                check_graph(metrics[i], 60, 4, self, sym, SR_GRAPH_DISTANCE);
                check_graph(metrics[i], 60, 4, self, sym, SR_GRAPH_CONNECTIVITY);
            }
    check_graph(SR_METRIC_L2, 30, 29, false, true, SR_GRAPH_DISTANCE); /* k = rows - 1: everything else */
    check_many_equal_rows();
    check_rejections();
}

int main(void)
{
    test_seed("test_graph");
    test_on_each_backend(&ctx, &where, run_all);
    return test_finish("test_graph");
}
