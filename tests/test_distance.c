/* Distances and k-NN: every metric against a dense float64 reference written from the scipy
 * definitions (not from src/semiring/metric.h), on skewed random data with empty rows, repeated
 * rows, all-zero rows and explicit zeros; on the CPU backend and (when present) CUDA. */
#include "test_util.h"

static sr_context ctx;
static sr_location where;

/* ---------------------------------------------------------------- the reference */

static double ref_distance(sr_metric m, const double *q, const double *x, int64_t d, double p)
{
    double s0 = 0, s1 = 0, qq = 0, xx = 0, qs = 0, xs = 0, mx = 0;
    int64_t both = 0, nq = 0, nx = 0, differ = 0;
    for (int64_t c = 0; c < d; c++) {
        double a = q[c], b = x[c], diff = fabs(a - b);
        qq += a * a, xx += b * b, qs += a, xs += b;
        both += a != 0 && b != 0, nq += a != 0, nx += b != 0, differ += a != b;
        mx = diff > mx ? diff : mx;
        switch (m) {
        case SR_METRIC_L2: case SR_METRIC_SQEUCLIDEAN: case SR_METRIC_L2_UNEXPANDED:
        case SR_METRIC_SQEUCLIDEAN_UNEXPANDED: s0 += diff * diff; break;
        case SR_METRIC_L1: s0 += diff; break;
        case SR_METRIC_MINKOWSKI: s0 += pow(diff, p); break;
        case SR_METRIC_CANBERRA: s0 += (fabs(a) + fabs(b)) > 0 ? diff / (fabs(a) + fabs(b)) : 0; break;
        case SR_METRIC_HELLINGER: s0 += (sqrt(a) - sqrt(b)) * (sqrt(a) - sqrt(b)); break;
        case SR_METRIC_KL_DIVERGENCE: s0 += (a > 0 && b > 0) ? a * log(a / b) : 0; break;
        case SR_METRIC_JENSEN_SHANNON: {
            double mid = (a + b) / 2;
            s0 += (a > 0 ? a * log(a / mid) : 0) + (b > 0 ? b * log(b / mid) : 0);
            break;
        }
        case SR_METRIC_BRAY_CURTIS: s0 += diff, s1 += fabs(a + b); break;
        case SR_METRIC_INNER_PRODUCT: case SR_METRIC_COSINE: s0 += a * b; break;
        default: break;
        }
    }
    switch (m) {
    case SR_METRIC_L2: case SR_METRIC_L2_UNEXPANDED: return sqrt(s0);
    case SR_METRIC_MINKOWSKI: return pow(s0, 1 / p);
    case SR_METRIC_CHEBYSHEV: return mx;
    case SR_METRIC_HAMMING: return (double)differ / (double)d;
    case SR_METRIC_JACCARD: return nq + nx - both ? 1.0 - (double)both / (double)(nq + nx - both) : 0.0;
    case SR_METRIC_DICE: return nq + nx ? 1.0 - 2.0 * (double)both / (double)(nq + nx) : 0.0;
    case SR_METRIC_RUSSELL_RAO: return (double)(d - both) / (double)d;
    case SR_METRIC_COSINE: return qq > 0 && xx > 0 ? 1.0 - s0 / sqrt(qq * xx) : 1.0;
    case SR_METRIC_CORRELATION: {
        double cov = 0, vq = 0, vx = 0, mq = qs / (double)d, mxx = xs / (double)d;
        for (int64_t c = 0; c < d; c++) {
            cov += (q[c] - mq) * (x[c] - mxx);
            vq += (q[c] - mq) * (q[c] - mq);
            vx += (x[c] - mxx) * (x[c] - mxx);
        }
        return vq > 1e-12 && vx > 1e-12 ? 1.0 - cov / sqrt(vq * vx) : 1.0;
    }
    case SR_METRIC_HELLINGER: return sqrt(s0 / 2);
    case SR_METRIC_JENSEN_SHANNON: return sqrt(s0 / 2);
    case SR_METRIC_BRAY_CURTIS: return s1 > 0 ? s0 / s1 : 0.0;
    default: return s0; /* sqeuclidean (both), l1, canberra, kl, inner product */
    }
}

/* A random data set for metric m: skewed rows, empty rows, a repeat of row 1, and a row that
 * holds only explicit zeros. Non-negative values where the metric needs them. */
static test_csr make_data(sr_metric m, int64_t rows, int64_t cols, double degree, sr_type type)
{
    test_csr t = test_random_csr(rows, cols, degree, type);
    if (type != SR_TYPE_BOOL) {
        for (int64_t e = 0; e < t.nnz; e++) {
            double v = type == SR_TYPE_FLOAT32 ? ((float *)t.values)[e] : type == SR_TYPE_FLOAT64 ? ((double *)t.values)[e]
                                                                                                  : ((int32_t *)t.values)[e];
            if (m == SR_METRIC_HELLINGER || m == SR_METRIC_KL_DIVERGENCE || m == SR_METRIC_JENSEN_SHANNON)
                v = fabs(v);
            if (test_below(10) == 0)
                v = 0; /* explicit zeros */
            if (type == SR_TYPE_FLOAT32)
                ((float *)t.values)[e] = (float)v;
            else if (type == SR_TYPE_FLOAT64)
                ((double *)t.values)[e] = v;
            else
                ((int32_t *)t.values)[e] = (int32_t)v;
        }
    }
    /* row 2 repeats row 1 (ties and zero distances) when both fit */
    if (rows >= 3 && t.rowptr[2] - t.rowptr[1] == t.rowptr[3] - t.rowptr[2]) {
        size_t es = sr_type_size(type);
        int64_t len = t.rowptr[2] - t.rowptr[1];
        memcpy(t.colind + t.rowptr[2], t.colind + t.rowptr[1], (size_t)len * sizeof(int32_t));
        if (t.values)
            memcpy((char *)t.values + (size_t)t.rowptr[2] * es, (char *)t.values + (size_t)t.rowptr[1] * es,
                   (size_t)len * es);
    }
    return t;
}

static double *dense_of(const test_csr *t)
{
    double *d = calloc((size_t)(t->nrows * t->ncols + 1), sizeof(double));
    for (int64_t i = 0; i < t->nrows; i++)
        for (int64_t e = t->rowptr[i]; e < t->rowptr[i + 1]; e++)
            d[i * t->ncols + t->colind[e]] = test_csr_value(t, e);
    return d;
}

/* A (made on context c) moved where the work runs. */
static sr_matrix on_device_if_needed(sr_context c, sr_matrix A)
{
    if (where == SR_HOST)
        return A;
    sr_matrix B = NULL;
    CHECK_OK(sr_matrix_copy_to(c, A, SR_DEVICE, &B));
    sr_matrix_free(A);
    return B;
}

/* Tolerance: relative to the scale of the rows' terms, since expanded forms cancel. */
static double tolerance(sr_metric m, sr_type out, double scale)
{
    double eps = out == SR_TYPE_FLOAT32 ? 1e-5 : 1e-11;
    if (m == SR_METRIC_L2 || m == SR_METRIC_HELLINGER || m == SR_METRIC_JENSEN_SHANNON || m == SR_METRIC_MINKOWSKI ||
        m == SR_METRIC_L2_UNEXPANDED)
        eps = sqrt(eps) * 0.1; /* a square root of a cancelled difference */
    return eps * (1.0 + scale);
}

/* D = distances(tq, tx) against the float64 reference, entry by entry */
static void compare_pairwise(sr_metric m, double p, const test_csr *ptq, const test_csr *ptx, sr_type out,
                             sr_layout layout)
{
    const test_csr tq = *ptq, tx = *ptx;
    const sr_type in = tq.type;
    const int64_t mq = tq.nrows, nx = tx.nrows, d = tq.ncols;
    double *q = dense_of(&tq), *x = dense_of(&tx);
    sr_matrix Q = on_device_if_needed(ctx, test_make_matrix(ctx, &tq)), X = on_device_if_needed(ctx, test_make_matrix(ctx, &tx));
    size_t es = sr_type_size(out);
    void *host = malloc((size_t)(mq * nx + 1) * es);
    memset(host, 0xff, (size_t)(mq * nx + 1) * es); /* poison: NaN */
    sr_dense D = sr_dense_view(host, mq, nx, out, layout, SR_HOST);
    sr_status s = sr_pairwise_distance(ctx, Q, X, m, p, &D);
    CHECK(s == SR_SUCCESS, "%s on %s: %s", sr_metric_name(m), sr_type_name(in), sr_last_error());
    int bad = 0;
    for (int64_t i = 0; s == SR_SUCCESS && i < mq && bad < 5; i++)
        for (int64_t j = 0; j < nx && bad < 5; j++) {
            double want = ref_distance(m, q + i * d, x + j * d, d, p), got = test_dense_at(&D, i, j);
            double scale = 0;
            for (int64_t c = 0; c < d; c++)
                scale += fabs(q[i * d + c]) + fabs(x[j * d + c]) + q[i * d + c] * q[i * d + c] + x[j * d + c] * x[j * d + c];
            if (m == SR_METRIC_KL_DIVERGENCE || m == SR_METRIC_CANBERRA || m == SR_METRIC_HAMMING)
                scale = fabs(want) + 1;
            if (!(fabs(got - want) <= tolerance(m, out, scale))) {
                bad++;
                CHECK(0, "%s %s->%s %s (%lld x %lld, d %lld): D(%lld,%lld) = %.9g, reference %.9g", sr_metric_name(m),
                      sr_type_name(in), sr_type_name(out), where == SR_DEVICE ? "cuda" : "cpu", (long long)mq,
                      (long long)nx, (long long)d, (long long)i, (long long)j, got, want);
            }
        }
    free(host);
    free(q);
    free(x);
    sr_matrix_free(Q);
    sr_matrix_free(X);
}

static void check_pairwise(sr_metric m, double p, sr_type in, sr_type out, int64_t mq, int64_t nx, int64_t d,
                           double degree, sr_layout layout)
{
    test_csr tq = make_data(m, mq, d, degree, in), tx = make_data(m, nx, d, degree, in);
    compare_pairwise(m, p, &tq, &tx, out, layout);
    test_csr_free(&tq);
    test_csr_free(&tx);
}

/* Queries that are the index's own long rows, every other one missing one entry: the pairs share
 * (nearly) all their entries, so Chebyshev's walks for the values off the other row run through
 * whole rows (on the GPU, the warps' long walks) and end at the last entry or find none. */
static void check_chebyshev_long_walks(sr_type type)
{
    test_csr tx = make_data(SR_METRIC_CHEBYSHEV, 300, 400, 120, type);
    test_csr tq = {tx.nrows, tx.ncols, 0, type, calloc((size_t)tx.nrows + 1, sizeof(int64_t)),
                   malloc((size_t)tx.nnz * sizeof(int32_t) + 4), malloc((size_t)tx.nnz * sr_type_size(type) + 8)};
    size_t es = sr_type_size(type);
    for (int64_t i = 0; i < tx.nrows; i++) {
        int64_t len = tx.rowptr[i + 1] - tx.rowptr[i];
        int64_t drop = i % 2 && len > 0 ? test_below(len) : -1;
        for (int64_t e = 0; e < len; e++)
            if (e != drop) {
                tq.colind[tq.nnz] = tx.colind[tx.rowptr[i] + e];
                memcpy((char *)tq.values + (size_t)tq.nnz * es, (char *)tx.values + (size_t)(tx.rowptr[i] + e) * es, es);
                tq.nnz++;
            }
        tq.rowptr[i + 1] = tq.nnz;
    }
    compare_pairwise(SR_METRIC_CHEBYSHEV, 0, &tq, &tx, type, SR_ROW_MAJOR);
    test_csr_free(&tq);
    test_csr_free(&tx);
}

/* k-NN: distances best-first and equal to the reference's at the returned indices; nothing
 * better was missed; indices distinct; ties to the smaller index where distances are equal. */
static void check_knn(sr_metric m, sr_type type, int64_t mq, int64_t nx, int64_t d, int64_t k, double degree)
{
    test_csr tq = make_data(m, mq, d, degree, type), tx = make_data(m, nx, d, degree, type);
    double *q = dense_of(&tq), *x = dense_of(&tx);
    sr_matrix Q = on_device_if_needed(ctx, test_make_matrix(ctx, &tq)), X = on_device_if_needed(ctx, test_make_matrix(ctx, &tx));
    int64_t *idx = malloc((size_t)(mq * k + 1) * sizeof(int64_t));
    double *dist = malloc((size_t)(mq * k + 1) * sizeof(double));
    memset(idx, 0xff, (size_t)(mq * k + 1) * sizeof(int64_t));
    sr_dense D = sr_dense_view(dist, mq, k, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    sr_status s = sr_knn(ctx, X, Q, k, m, 1.5, idx, &D, NULL);
    CHECK(s == SR_SUCCESS, "knn %s: %s", sr_metric_name(m), sr_last_error());
    bool largest = m == SR_METRIC_INNER_PRODUCT;
    double *ref = malloc((size_t)nx * sizeof(double));
    int bad = 0;
    for (int64_t i = 0; s == SR_SUCCESS && i < mq && bad < 5; i++) {
        for (int64_t j = 0; j < nx; j++)
            ref[j] = ref_distance(m, q + i * d, x + j * d, d, 1.5) * (largest ? -1 : 1);
        for (int64_t t = 0; t < k; t++) {
            int64_t j = idx[i * k + t];
            double got = dist[i * k + t] * (largest ? -1 : 1), tol = 1e-9 * (1 + fabs(got));
            bool ok = j >= 0 && j < nx && fabs(ref[j] - got) <= tol;
            if (t > 0)
                ok = ok && (dist[i * k + t] * (largest ? -1 : 1) > dist[i * k + t - 1] * (largest ? -1 : 1) ||
                            (dist[i * k + t] == dist[i * k + t - 1] && j > idx[i * k + t - 1]));
            for (int64_t u = 0; ok && u < t; u++)
                ok = idx[i * k + u] != j;
            if (!ok) {
                bad++;
                CHECK(0, "knn %s (%s, k %lld) query %lld rank %lld: index %lld distance %.12g (reference %.12g)",
                      sr_metric_name(m), where == SR_DEVICE ? "cuda" : "cpu", (long long)k, (long long)i, (long long)t,
                      (long long)j, dist[i * k + t], j >= 0 && j < nx ? ref[j] : NAN);
                break;
            }
        }
        /* nothing outside the result is better than its last entry */
        double last = dist[i * k + k - 1] * (largest ? -1 : 1);
        for (int64_t j = 0; j < nx && bad < 5; j++) {
            bool chosen = false;
            for (int64_t t = 0; t < k; t++)
                chosen = chosen || idx[i * k + t] == j;
            if (!chosen && ref[j] < last - 1e-9 * (1 + fabs(last))) {
                bad++;
                CHECK(0, "knn %s query %lld missed index %lld at %.12g (last kept %.12g)", sr_metric_name(m),
                      (long long)i, (long long)j, ref[j], last);
            }
        }
    }
    free(ref);
    free(idx);
    free(dist);
    free(q);
    free(x);
    sr_matrix_free(Q);
    sr_matrix_free(X);
    test_csr_free(&tq);
    test_csr_free(&tx);
}

static void check_rejections(void)
{
    int64_t rowptr[3] = {0, 1, 2};
    int32_t colind[2] = {0, 1};
    double bad_nan[2] = {1.0, NAN}, bad_neg[2] = {1.0, -2.0};
    sr_matrix A = NULL, N = NULL;
    CHECK_OK(sr_matrix_from_csr(ctx, &A, 2, 2, SR_TYPE_FLOAT64, rowptr, colind, bad_nan, SR_HOST));
    CHECK_OK(sr_matrix_from_csr(ctx, &N, 2, 2, SR_TYPE_FLOAT64, rowptr, colind, bad_neg, SR_HOST));
    A = on_device_if_needed(ctx, A);
    N = on_device_if_needed(ctx, N);
    double out[4];
    sr_dense D = sr_dense_view(out, 2, 2, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    CHECK_FAILS(sr_pairwise_distance(ctx, A, A, SR_METRIC_COSINE, 0, &D), SR_ERROR_INVALID_ARGUMENT,
                "row 1 of the queries holds NaN");
    CHECK_FAILS(sr_pairwise_distance(ctx, N, N, SR_METRIC_HELLINGER, 0, &D), SR_ERROR_INVALID_ARGUMENT,
                "row 1 of the queries holds a negative value, which hellinger");
    CHECK_OK(sr_pairwise_distance(ctx, N, N, SR_METRIC_L1, 0, &D));
    CHECK_FAILS(sr_pairwise_distance(ctx, N, N, SR_METRIC_MINKOWSKI, -1, &D), SR_ERROR_INVALID_ARGUMENT, "p > 0");
    int64_t idx[6];
    double dist[6];
    sr_dense K = sr_dense_view(dist, 2, 3, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    CHECK_FAILS(sr_knn(ctx, N, N, 3, SR_METRIC_L1, 0, idx, &K, NULL), SR_ERROR_INVALID_ARGUMENT, "k must be 1..rows");
    sr_metric m;
    CHECK_FAILS(sr_metric_from_name("cosin", &m), SR_ERROR_INVALID_ARGUMENT, "known: euclidean");
    CHECK_OK(sr_metric_from_name("cityblock", &m));
    CHECK(m == SR_METRIC_L1, "cityblock is %d", (int)m);
    sr_matrix_free(A);
    sr_matrix_free(N);
}

static void check_progress_and_batches(void)
{
    /* a tiny workspace forces many batches; the callback sees them and can cancel */
    test_csr t = make_data(SR_METRIC_COSINE, 50, 30, 4, SR_TYPE_FLOAT32);
    sr_matrix A = on_device_if_needed(ctx, test_make_matrix(ctx, &t));
    sr_context_options o;
    CHECK_OK(sr_context_get_options(ctx, &o));
    CHECK_OK(sr_context_set_workspace_limit(ctx, 50 * sizeof(float) * 7));
    int64_t idx[50 * 3], seen = 0;
    float dist[50 * 3];
    sr_dense K = sr_dense_view(dist, 50, 3, SR_TYPE_FLOAT32, SR_COL_MAJOR, SR_HOST);
    sr_knn_options ko = {test_stop_at_first_report, &seen, SR_PRECISION_EXACT};
    CHECK_FAILS(sr_knn(ctx, A, A, 3, SR_METRIC_COSINE, 0, idx, &K, &ko), SR_ERROR_CANCELLED, "stopped");
    CHECK(seen > 0 && seen < 50, "cancelled after %lld of 50", (long long)seen);
    CHECK_OK(sr_knn(ctx, A, A, 3, SR_METRIC_COSINE, 0, idx, &K, NULL));
    /* each row's nearest is itself (distance 0) unless it is empty or repeats an earlier row */
    for (int64_t i = 0; i < 50; i++) {
        bool nonzero = false; /* rows of explicit zeros have no direction: cosine 1 to everything */
        for (int64_t e = t.rowptr[i]; e < t.rowptr[i + 1]; e++)
            nonzero = nonzero || ((float *)t.values)[e] != 0.0f;
        if (nonzero)
            CHECK(dist[i] <= 1e-6f, "row %lld: nearest distance %g", (long long)i, dist[i]);
    }
    CHECK_OK(sr_context_set_workspace_limit(ctx, o.workspace_limit));
    sr_matrix_free(A);
    test_csr_free(&t);
}

/* On deterministic contexts (on the GPU the tiles then sum in a fixed order, without atomics):
 * k-NN and pairwise distances give the same bits on a second call and on a second context, on
 * real values whose sums depend on their order, with columns that many rows share (so that a
 * tile's warps meet on the same accumulators). */
static void check_repeat_bits(sr_metric m, sr_type type)
{
    const int64_t mq = 24, nx = 3000, d = 40, k = 7;
    test_csr tq = make_data(m, mq, d, 16, type), tx = make_data(m, nx, d, 16, type);
    const size_t es = sr_type_size(type);
    sr_context_options o;
    CHECK_OK(sr_context_get_options(ctx, &o));
    o.deterministic = true;
    sr_context twin = NULL;
    CHECK_OK(sr_context_create(&twin, &o));
    CHECK_OK(sr_context_set_deterministic(ctx, true));
    int64_t *idx[3];
    void *dist[3], *pairs[3];
    for (int run = 0; run < 3; run++) {
        sr_context c = run < 2 ? ctx : twin;
        sr_matrix Q = on_device_if_needed(c, test_make_matrix(c, &tq));
        sr_matrix X = on_device_if_needed(c, test_make_matrix(c, &tx));
        idx[run] = calloc((size_t)(mq * k), sizeof(int64_t));
        dist[run] = calloc((size_t)(mq * k), es);
        pairs[run] = calloc((size_t)(mq * nx), es);
        sr_dense D = sr_dense_view(dist[run], mq, k, type, SR_ROW_MAJOR, SR_HOST);
        sr_dense P = sr_dense_view(pairs[run], mq, nx, type, SR_ROW_MAJOR, SR_HOST);
        CHECK_OK(sr_knn(c, X, Q, k, m, 1.5, idx[run], &D, NULL));
        CHECK_OK(sr_pairwise_distance(c, Q, X, m, 1.5, &P));
        sr_matrix_free(Q);
        sr_matrix_free(X);
    }
    for (int run = 1; run < 3; run++) {
        const char *again = run == 1 ? "a second call" : "a second context";
        CHECK(memcmp(idx[0], idx[run], (size_t)(mq * k) * sizeof(int64_t)) == 0 &&
                  memcmp(dist[0], dist[run], (size_t)(mq * k) * es) == 0,
              "knn %s (%s, %s) on a deterministic context: %s gave other neighbours or distances", sr_metric_name(m),
              sr_type_name(type), test_backend_name(ctx), again);
        CHECK(memcmp(pairs[0], pairs[run], (size_t)(mq * nx) * es) == 0,
              "pairwise %s (%s, %s) on a deterministic context: %s gave other bits", sr_metric_name(m),
              sr_type_name(type), test_backend_name(ctx), again);
    }
    for (int run = 0; run < 3; run++)
        free(idx[run]), free(dist[run]), free(pairs[run]);
    CHECK_OK(sr_context_set_deterministic(ctx, false));
    sr_context_destroy(twin);
    test_csr_free(&tq);
    test_csr_free(&tx);
}

/* The reference checks again on a deterministic context (the device's fixed-order tiles), and the
 * repeats' bits. */
static void check_deterministic(void)
{
    for (int mi = 0; mi < SR_METRIC_COUNT; mi++) {
        const sr_metric m = (sr_metric)mi;
        check_repeat_bits(m, SR_TYPE_FLOAT32);
        check_repeat_bits(m, SR_TYPE_FLOAT64);
        if (where != SR_DEVICE)
            continue; /* the CPU has one path either way */
        CHECK_OK(sr_context_set_deterministic(ctx, true));
        const double p = m == SR_METRIC_MINKOWSKI ? 2.5 : 0;
        check_pairwise(m, p, SR_TYPE_FLOAT64, SR_TYPE_FLOAT64, 37, 29, 23, 5, SR_ROW_MAJOR);
        check_pairwise(m, p, SR_TYPE_FLOAT32, SR_TYPE_FLOAT64, 9, 20000, 50, 6, SR_ROW_MAJOR);
        check_knn(m, SR_TYPE_FLOAT64, 25, 500, 25, 17, 3);
        check_knn(m, SR_TYPE_FLOAT32, 4, 7000, 64, 5, 6);
        CHECK_OK(sr_context_set_deterministic(ctx, false));
    }
}

static void run_all(void)
{
    for (int mi = 0; mi < SR_METRIC_COUNT; mi++) {
        sr_metric m = (sr_metric)mi;
        double p = m == SR_METRIC_MINKOWSKI ? 1.0 + test_uniform() * 3 : 0;
        check_pairwise(m, p, SR_TYPE_FLOAT64, SR_TYPE_FLOAT64, 37, 29, 23, 5, SR_ROW_MAJOR);
        check_pairwise(m, p, SR_TYPE_FLOAT32, SR_TYPE_FLOAT32, 30, 41, 60, 8, SR_COL_MAJOR);
        check_pairwise(m, p, SR_TYPE_INT32, SR_TYPE_FLOAT64, 12, 9, 7, 3, SR_ROW_MAJOR);
        check_pairwise(m, p, SR_TYPE_BOOL, SR_TYPE_FLOAT32, 25, 25, 40, 6, SR_ROW_MAJOR);
        check_pairwise(m, p, SR_TYPE_FLOAT64, SR_TYPE_FLOAT64, 0, 5, 3, 1, SR_ROW_MAJOR);
        check_pairwise(m, p, SR_TYPE_FLOAT64, SR_TYPE_FLOAT64, 1, 1, 1, 1, SR_ROW_MAJOR);
        /* a long index (several CUDA tiles) with heavy columns */
        check_pairwise(m, p, SR_TYPE_FLOAT32, SR_TYPE_FLOAT64, 9, 20000, 50, 6, SR_ROW_MAJOR);
        check_knn(m, SR_TYPE_FLOAT64, 40, 300, 30, 1, 4);
        check_knn(m, SR_TYPE_FLOAT64, 25, 500, 25, 17, 3);
        check_knn(m, SR_TYPE_FLOAT64, 6, 40, 9, 40, 2); /* k = all rows */
    }
    /* long rows of distances: the device selects per chunk, then among the chunks' candidates;
     * one entry per row makes long runs of equal distances whose ties cross the chunks */
    const sr_metric chunked[] = {SR_METRIC_COSINE, SR_METRIC_L2, SR_METRIC_CHEBYSHEV, SR_METRIC_INNER_PRODUCT};
    for (size_t i = 0; i < sizeof chunked / sizeof *chunked; i++)
        check_knn(chunked[i], SR_TYPE_FLOAT32, 4, 70000, 64, 5, 1);
    check_knn(SR_METRIC_COSINE, SR_TYPE_FLOAT32, 3, 70000, 64, 1024, 1);
    /* thousands of exact ties per chunk: more than the selection's slots, taken in index order */
    check_knn(SR_METRIC_COSINE, SR_TYPE_FLOAT32, 3, 70000, 4, 1024, 1);
    check_knn(SR_METRIC_L1, SR_TYPE_FLOAT64, 3, 70000, 4, 700, 1);
    /* whole p takes Minkowski's multiplication path, fractional p (above) its logarithm path */
    check_pairwise(SR_METRIC_MINKOWSKI, 3.0, SR_TYPE_FLOAT64, SR_TYPE_FLOAT64, 37, 29, 23, 5, SR_ROW_MAJOR);
    check_pairwise(SR_METRIC_MINKOWSKI, 7.0, SR_TYPE_FLOAT32, SR_TYPE_FLOAT32, 30, 41, 60, 8, SR_COL_MAJOR);
    check_chebyshev_long_walks(SR_TYPE_FLOAT32);
    check_chebyshev_long_walks(SR_TYPE_FLOAT64);
    check_rejections();
    check_progress_and_batches();
    check_deterministic();
}

int main(void)
{
    test_seed("test_distance");
    test_on_each_backend(&ctx, &where, run_all);
    return test_finish("test_distance");
}
