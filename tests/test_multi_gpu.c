/* A context over several GPUs against a one-GPU context on the same inputs: k-NN (indices and
 * distances bit for bit), the k-NN graph, radius neighbours, SDDMM values (bit for bit) and SpGEMM,
 * on random power-law matrices with empty rows, both partitions, and tiny indexes whose blocks
 * hold fewer than k rows. The option checks run everywhere; the rest needs two GPUs (else skipped,
 * exit 77, with the reason). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sparsering.h"
#include "test_util.h"

static sr_context one, many, many_rows; /* one GPU; GPUs 0 and 1 balanced; by equal rows */

static void check_options(void)
{
    sr_context ctx = NULL;
    sr_context_options o = sr_context_options_default();
    o.ndevices = SR_MAX_DEVICES + 1;
    CHECK_FAILS(sr_context_create(&ctx, &o), SR_ERROR_INVALID_ARGUMENT, "ndevices");
    o = sr_context_options_default();
    o.partition = (sr_partition)7;
    CHECK_FAILS(sr_context_create(&ctx, &o), SR_ERROR_INVALID_ARGUMENT, "partition");
    setenv("SPARSERING_PARTITION", "diagonal", 1);
    CHECK_FAILS(sr_context_create(&ctx, NULL), SR_ERROR_INVALID_ARGUMENT, "SPARSERING_PARTITION");
    unsetenv("SPARSERING_PARTITION");
    /* a CPU context ignores a device list: it runs on the host */
    o = sr_context_options_default();
    o.backend = SR_BACKEND_CPU;
    o.ndevices = 2;
    o.devices[1] = 1;
    CHECK_OK(sr_context_create(&ctx, &o));
    sr_context_options got;
    CHECK_OK(sr_context_get_options(ctx, &got));
    CHECK(got.ndevices == 0, "a CPU context reports %d devices", got.ndevices);
    sr_context_destroy(ctx);
}

static void check_device_list_errors(void)
{
    sr_context ctx = NULL;
    sr_context_options o = sr_context_options_default();
    o.backend = SR_BACKEND_CUDA;
    o.ndevices = 2;
    o.devices[0] = 0;
    o.devices[1] = 0;
    CHECK_FAILS(sr_context_create(&ctx, &o), SR_ERROR_INVALID_ARGUMENT, "twice");
    o.devices[1] = 999;
    CHECK_FAILS(sr_context_create(&ctx, &o), SR_ERROR_NO_DEVICE, "999");
    setenv("SPARSERING_DEVICES", "0,x", 1);
    o = sr_context_options_default();
    o.backend = SR_BACKEND_CUDA;
    CHECK_FAILS(sr_context_create(&ctx, &o), SR_ERROR_INVALID_ARGUMENT, "SPARSERING_DEVICES");
    setenv("SPARSERING_DEVICES", "1,0", 1);
    CHECK_OK(sr_context_create(&ctx, &o));
    sr_context_options got;
    CHECK_OK(sr_context_get_options(ctx, &got));
    CHECK(got.ndevices == 2 && got.devices[0] == 1 && got.devices[1] == 0 && got.device == 1,
          "SPARSERING_DEVICES=1,0 gave %d devices, first %d", got.ndevices, got.devices[0]);
    sr_context_destroy(ctx);
    unsetenv("SPARSERING_DEVICES");
}

/* Values 1 to 5: every sum of products is exact in float32, in any order. The GPU distance
 * kernels add a tile's products with shared-memory atomics, so on real-valued data even the
 * one-GPU call repeats its distances only to the last bit (printed below as a note); on these the
 * GPUs' answers must equal the one GPU's bit for bit, ties across the blocks included. */
static void make_integral(test_csr *m)
{
    for (int64_t e = 0; e < m->nnz && m->values; e++) {
        if (m->type == SR_TYPE_FLOAT32)
            ((float *)m->values)[e] = (float)(1 + test_below(5));
        else
            ((double *)m->values)[e] = (double)(1 + test_below(5));
    }
}

static sr_matrix device_matrix(sr_context ctx, const test_csr *m)
{
    return test_make_matrix_at(ctx, m, SR_DEVICE);
}

/* ------------------------------------------------------------------ k-NN */

static bool exact_data = true; /* knn_case's inputs are integral: compare bit for bit */

static void knn_case(sr_context multi, const test_csr *X, const test_csr *Qm, int64_t k, sr_metric metric,
                     sr_type type, sr_location out_at)
{
    sr_matrix X1 = device_matrix(one, X), Xn = device_matrix(multi, X);
    sr_matrix Q1 = Qm ? device_matrix(one, Qm) : X1, Qn = Qm ? device_matrix(multi, Qm) : Xn;
    const int64_t nq = Qm ? Qm->nrows : X->nrows;
    const size_t es = sr_type_size(type), cells = (size_t)nq * (size_t)k;
    int64_t *i1 = malloc(cells * sizeof(int64_t)), *in = malloc(cells * sizeof(int64_t));
    void *d1 = malloc(cells * es), *dn = malloc(cells * es);
    memset(in, 0xff, cells * sizeof(int64_t)); /* poisoned */
    memset(dn, 0xff, cells * es);
    sr_dense v1 = sr_dense_view(d1, nq, k, type, SR_ROW_MAJOR, SR_HOST);
    CHECK_OK(sr_knn(one, X1, Q1, k, metric, 3.0, i1, &v1, NULL));
    { /* the one-GPU call against itself: how far it repeats bit for bit */
        int64_t *i2 = malloc(cells * sizeof(int64_t));
        void *d2 = malloc(cells * es);
        sr_dense v2 = sr_dense_view(d2, nq, k, type, SR_ROW_MAJOR, SR_HOST);
        CHECK_OK(sr_knn(one, X1, Q1, k, metric, 3.0, i2, &v2, NULL));
        int64_t again = 0;
        for (size_t c = 0; c < cells; c++)
            again += i1[c] != i2[c] || memcmp((char *)d1 + c * es, (char *)d2 + c * es, es) != 0;
        if (again)
            printf("note: knn %s k=%lld: the one-GPU call repeated differs in %lld of %zu cells\n",
                   sr_metric_name(metric), (long long)k, (long long)again, cells);
        free(i2);
        free(d2);
    }
    if (out_at == SR_HOST) {
        sr_dense vn = sr_dense_view(dn, nq, k, type, SR_ROW_MAJOR, SR_HOST);
        CHECK_OK(sr_knn(multi, Xn, Qn, k, metric, 3.0, in, &vn, NULL));
    } else { /* outputs on the first GPU, distances column-major */
        sr_dense dd, di;
        CHECK_OK(sr_vector_alloc(multi, (int64_t)cells, type, SR_DEVICE, &dd));
        CHECK_OK(sr_vector_alloc(multi, (int64_t)cells, SR_TYPE_FLOAT64, SR_DEVICE, &di)); /* 8-byte cells */
        sr_dense vn = sr_dense_view(dd.data, nq, k, type, SR_COL_MAJOR, SR_DEVICE);
        CHECK_OK(sr_knn(multi, Xn, Qn, k, metric, 3.0, di.data, &vn, NULL));
        void *col = malloc(cells * es);
        sr_dense hc = sr_vector_view(col, (int64_t)cells, type, SR_HOST);
        sr_dense hi = sr_vector_view(in, (int64_t)cells, SR_TYPE_FLOAT64, SR_HOST);
        CHECK_OK(sr_vector_copy(multi, &hc, &dd));
        CHECK_OK(sr_vector_copy(multi, &hi, &di));
        for (int64_t r = 0; r < nq; r++)
            for (int64_t j = 0; j < k; j++)
                memcpy((char *)dn + ((size_t)(r * k + j)) * es, (char *)col + ((size_t)(j * nq + r)) * es, es);
        free(col);
        sr_vector_free(multi, &dd);
        sr_vector_free(multi, &di);
    }
    int64_t bad = 0, first = -1;
    for (size_t c = 0; c < cells; c++) {
        const double a = type == SR_TYPE_FLOAT32 ? ((float *)d1)[c] : ((double *)d1)[c];
        const double b = type == SR_TYPE_FLOAT32 ? ((float *)dn)[c] : ((double *)dn)[c];
        /* real-valued data: distances within rounding, indices equal but where distances that close swap */
        const bool near = fabs(a - b) <= 1e-5 * fmax(1.0, fabs(a));
        const bool same = exact_data ? i1[c] == in[c] && memcmp((char *)d1 + c * es, (char *)dn + c * es, es) == 0
                                     : near;
        if (!same) {
            if (first < 0)
                first = (int64_t)c;
            bad++;
        }
    }
    CHECK(bad == 0, "knn %s k=%lld %s (%s, out on %s): %lld of %zu cells differ, first row %lld: index %lld vs %lld",
          sr_metric_name(metric), (long long)k, sr_type_name(type), Qm ? "queries" : "all-vs-all",
          out_at == SR_HOST ? "host" : "device", (long long)bad, cells, (long long)(first / (k ? k : 1)),
          (long long)(first >= 0 ? i1[first] : -1), (long long)(first >= 0 ? in[first] : -1));
    free(i1);
    free(in);
    free(d1);
    free(dn);
    if (Qm) {
        sr_matrix_free(Q1);
        sr_matrix_free(Qn);
    }
    sr_matrix_free(X1);
    sr_matrix_free(Xn);
}

static void check_knn(void)
{
    /* blocks of many of the distance kernels' tiles (12288 rows) */
    test_csr X = test_random_csr(30000, 1500, 8, SR_TYPE_FLOAT32);
    test_csr Q = test_random_csr(700, 1500, 8, SR_TYPE_FLOAT32);
    exact_data = false; /* real values first: equal within rounding */
    knn_case(many, &X, NULL, 10, SR_METRIC_COSINE, SR_TYPE_FLOAT32, SR_HOST);
    knn_case(many, &X, &Q, 16, SR_METRIC_L2, SR_TYPE_FLOAT64, SR_HOST);
    exact_data = true;
    make_integral(&X);
    make_integral(&Q);
    const sr_metric metrics[] = {SR_METRIC_COSINE, SR_METRIC_L2, SR_METRIC_L1, SR_METRIC_INNER_PRODUCT,
                                 SR_METRIC_JACCARD, SR_METRIC_MINKOWSKI, SR_METRIC_CHEBYSHEV};
    for (size_t m = 0; m < sizeof metrics / sizeof metrics[0]; m++)
        knn_case(many, &X, NULL, 10, metrics[m], SR_TYPE_FLOAT32, SR_HOST);
    knn_case(many, &X, &Q, 1, SR_METRIC_COSINE, SR_TYPE_FLOAT64, SR_HOST);
    knn_case(many, &X, &Q, 64, SR_METRIC_L2, SR_TYPE_FLOAT32, SR_DEVICE);
    knn_case(many_rows, &X, &Q, 25, SR_METRIC_L1, SR_TYPE_FLOAT64, SR_HOST);
    knn_case(many_rows, &X, NULL, 7, SR_METRIC_COSINE, SR_TYPE_FLOAT32, SR_DEVICE);
    /* duplicate rows: ties at every distance go to the smaller row, across the blocks too */
    { /* rows 20..39 repeat rows 0..19 */
        test_csr T = test_random_csr(20, 30, 5, SR_TYPE_FLOAT32);
        make_integral(&T);
        test_csr R = {40, 30, 2 * T.nnz, SR_TYPE_FLOAT32, malloc(41 * sizeof(int64_t)),
                      malloc((size_t)(2 * T.nnz + 1) * sizeof(int32_t)), malloc((size_t)(2 * T.nnz + 1) * sizeof(float))};
        for (int64_t i = 0; i <= 20; i++)
            R.rowptr[i] = T.rowptr[i];
        for (int64_t i = 1; i <= 20; i++)
            R.rowptr[20 + i] = T.nnz + T.rowptr[i];
        for (int copy = 0; copy < 2; copy++) {
            memcpy(R.colind + copy * T.nnz, T.colind, (size_t)T.nnz * sizeof(int32_t));
            memcpy((float *)R.values + copy * T.nnz, T.values, (size_t)T.nnz * sizeof(float));
        }
        knn_case(many, &R, NULL, 6, SR_METRIC_L2, SR_TYPE_FLOAT32, SR_HOST);
        knn_case(many, &R, NULL, 40, SR_METRIC_COSINE, SR_TYPE_FLOAT64, SR_HOST);
        test_csr_free(&T);
        test_csr_free(&R);
    }
    /* three index rows over two GPUs: a block holds fewer than k */
    test_csr S = test_random_csr(3, 1500, 10, SR_TYPE_FLOAT32);
    make_integral(&S);
    knn_case(many, &S, &Q, 3, SR_METRIC_L2, SR_TYPE_FLOAT32, SR_HOST);
    test_csr_free(&S);
    test_csr_free(&X);
    test_csr_free(&Q);
}

/* ------------------------------------------------------------------ graphs */

static void graphs_equal(sr_matrix G1, sr_matrix Gn, const char *what)
{
    sr_matrix H1 = NULL, Hn = NULL;
    CHECK_OK(sr_matrix_copy_to(one, G1, SR_HOST, &H1));
    CHECK_OK(sr_matrix_copy_to(many, Gn, SR_HOST, &Hn));
    bool equal = false;
    CHECK_OK(sr_matrix_equal(one, H1, Hn, &equal));
    sr_matrix_info a, b;
    sr_matrix_get_info(H1, &a);
    sr_matrix_get_info(Hn, &b);
    CHECK(equal, "%s: the GPUs' graph differs (%lld x %lld, %lld entries; one GPU %lld x %lld, %lld)", what,
          (long long)b.nrows, (long long)b.ncols, (long long)b.nnz, (long long)a.nrows, (long long)a.ncols,
          (long long)a.nnz);
    sr_matrix_free(H1);
    sr_matrix_free(Hn);
}

static void check_graphs(void)
{
    test_csr X = test_random_csr(26000, 900, 6, SR_TYPE_FLOAT64);
    test_csr Q = test_random_csr(300, 900, 6, SR_TYPE_FLOAT64);
    make_integral(&X);
    make_integral(&Q);
    sr_matrix X1 = device_matrix(one, &X), Xn = device_matrix(many, &X);
    sr_matrix Q1 = device_matrix(one, &Q), Qn = device_matrix(many, &Q);
    for (int sym = 0; sym < 2; sym++) {
        sr_knn_graph_options o = sr_knn_graph_options_default();
        o.mode = SR_GRAPH_DISTANCE;
        o.symmetrize = sym;
        sr_matrix G1 = NULL, Gn = NULL;
        CHECK_OK(sr_knn_graph(one, X1, 9, SR_METRIC_COSINE, 0, &o, &G1));
        CHECK_OK(sr_knn_graph(many, Xn, 9, SR_METRIC_COSINE, 0, &o, &Gn));
        graphs_equal(G1, Gn, sym ? "symmetric k-NN graph" : "k-NN graph");
        sr_matrix_free(G1);
        sr_matrix_free(Gn);
    }
    for (int mode = 0; mode < 2; mode++)
        for (int self = 0; self < 2; self++) {
            sr_radius_options o = sr_radius_options_default();
            o.mode = mode ? SR_GRAPH_DISTANCE : SR_GRAPH_CONNECTIVITY;
            o.include_self = self;
            o.type = SR_TYPE_FLOAT64;
            sr_matrix R1 = NULL, Rn = NULL;
            CHECK_OK(sr_radius_neighbors(one, X1, NULL, 0.3, SR_METRIC_COSINE, 0, &o, &R1));
            CHECK_OK(sr_radius_neighbors(many, Xn, NULL, 0.3, SR_METRIC_COSINE, 0, &o, &Rn));
            graphs_equal(R1, Rn, self ? "radius with self" : "radius");
            sr_matrix_free(R1);
            sr_matrix_free(Rn);
        }
    sr_radius_options o = sr_radius_options_default();
    o.mode = SR_GRAPH_DISTANCE;
    sr_matrix R1 = NULL, Rn = NULL;
    CHECK_OK(sr_radius_neighbors(one, X1, Q1, 0.6, SR_METRIC_L2, 0, &o, &R1));
    CHECK_OK(sr_radius_neighbors(many, Xn, Qn, 0.6, SR_METRIC_L2, 0, &o, &Rn));
    graphs_equal(R1, Rn, "radius of queries");
    sr_matrix_free(R1);
    sr_matrix_free(Rn);
    sr_matrix_free(X1);
    sr_matrix_free(Xn);
    sr_matrix_free(Q1);
    sr_matrix_free(Qn);
    test_csr_free(&X);
    test_csr_free(&Q);
}

/* ------------------------------------------------------------------ SDDMM */

/* a view of the same elements in device memory of the first GPU (freed by the caller) */
static sr_dense on_device(const sr_dense *h, sr_dense *buffer)
{
    CHECK_OK(sr_vector_alloc(one, h->nrows * h->ncols, h->type, SR_DEVICE, buffer));
    sr_dense flat = sr_vector_view(h->data, h->nrows * h->ncols, h->type, SR_HOST);
    CHECK_OK(sr_vector_copy(one, buffer, &flat));
    return sr_dense_view(buffer->data, h->nrows, h->ncols, h->type, h->layout, SR_DEVICE);
}

static bool device_operands; /* A and B in the first GPU's memory (then forced over the GPUs) */

static void sddmm_case(sr_context multi, const test_csr *S, int64_t K, sr_type type, sr_semiring s, const char *what)
{
    const size_t es = sr_type_size(type);
    void *A = malloc((size_t)(S->nrows * K + 1) * es), *B = malloc((size_t)(S->ncols * K + 1) * es);
    for (int64_t e = 0; e < S->nrows * K; e++)
        test_random_value(type, A, e);
    for (int64_t e = 0; e < S->ncols * K; e++)
        test_random_value(type, B, e);
    sr_dense Av = sr_dense_view(A, S->nrows, K, type, SR_ROW_MAJOR, SR_HOST);
    sr_dense Bv = sr_dense_view(B, S->ncols, K, type, SR_COL_MAJOR, SR_HOST);
    sr_dense bufA = {0}, bufB = {0};
    if (device_operands) {
        Av = on_device(&Av, &bufA);
        Bv = on_device(&Bv, &bufB);
    }
    sr_type out = type;
    CHECK_OK(sr_semiring_output_type(s, type, &out));
    const size_t os = sr_type_size(out), n = (size_t)S->nnz;
    void *v1 = malloc(n * os + 1), *vn = malloc(n * os + 1);
    memset(vn, 0xff, n * os + 1);
    sr_dense o1 = sr_vector_view(v1, S->nnz, out, SR_HOST), on = sr_vector_view(vn, S->nnz, out, SR_HOST);
    sr_matrix S1 = device_matrix(one, S), Sn = device_matrix(multi, S);
    for (int round = 0; round < 2; round++) { /* the second reuses the blocks kept with S */
        CHECK_OK(sr_sddmm_values(one, &o1, s, 1.5, S1, &Av, &Bv, round ? 0.5 : 0.0, NULL));
        CHECK_OK(sr_sddmm_values(multi, &on, s, 1.5, Sn, &Av, &Bv, round ? 0.5 : 0.0, NULL));
        int64_t bad = 0, first = -1;
        for (size_t e = 0; e < n; e++)
            if (memcmp((char *)v1 + e * os, (char *)vn + e * os, os) != 0) {
                bad += 1;
                if (first < 0)
                    first = (int64_t)e;
            }
        CHECK(bad == 0, "sddmm %s K=%lld %s %s round %d: %lld of %zu values differ (first entry %lld)", what,
              (long long)K, sr_type_name(type), sr_semiring_name(s), round, (long long)bad, n, (long long)first);
    }
    sr_matrix C = NULL; /* the matrix form: S's pattern, the same values */
    CHECK_OK(sr_sddmm(multi, &C, s, 1.5, Sn, &Av, &Bv, 0.5, NULL));
    sr_matrix_info info;
    sr_matrix_get_info(C, &info);
    CHECK(info.nnz == S->nnz && info.nrows == S->nrows, "sr_sddmm over the GPUs: %lld entries, S has %lld",
          (long long)info.nnz, (long long)S->nnz);
    sr_matrix_free(C);
    sr_matrix_free(S1);
    sr_matrix_free(Sn);
    sr_vector_free(one, &bufA);
    sr_vector_free(one, &bufB);
    free(A);
    free(B);
    free(v1);
    free(vn);
}

/* A dense-ish S (every row about `fill` of the columns): the dense tiles' and row panels' cases. */
static test_csr dense_ish(int64_t nrows, int64_t ncols, double fill)
{
    test_csr m = {nrows, ncols, 0, SR_TYPE_FLOAT32, calloc((size_t)nrows + 1, sizeof(int64_t)), NULL, NULL};
    m.colind = malloc((size_t)((double)nrows * (double)ncols * fill * 1.2 + 16) * sizeof(int32_t));
    for (int64_t i = 0; i < nrows; i++) {
        int64_t d = m.rowptr[i];
        for (int64_t c = 0; c < ncols; c++)
            if (test_uniform() < fill)
                m.colind[d++] = (int32_t)c;
        m.rowptr[i + 1] = d;
    }
    m.nnz = m.rowptr[nrows];
    m.values = malloc((size_t)(m.nnz + 1) * sizeof(float));
    for (int64_t e = 0; e < m.nnz; e++)
        test_random_value(SR_TYPE_FLOAT32, m.values, e);
    return m;
}

static void check_sddmm(void)
{
    test_csr S = test_random_csr(3000, 2000, 25, SR_TYPE_FLOAT32);
    const int64_t Ks[] = {1, 7, 32, 100, 128, 512};
    for (size_t i = 0; i < sizeof Ks / sizeof Ks[0]; i++)
        sddmm_case(many, &S, Ks[i], SR_TYPE_FLOAT32, SR_PLUS_TIMES, "power-law");
    sddmm_case(many_rows, &S, 64, SR_TYPE_FLOAT32, SR_PLUS_TIMES, "power-law, rows");
    sddmm_case(many, &S, 16, SR_TYPE_FLOAT32, SR_MIN_PLUS, "power-law");
    test_csr S64 = test_random_csr(2000, 1000, 20, SR_TYPE_FLOAT64);
    sddmm_case(many, &S64, 48, SR_TYPE_FLOAT64, SR_PLUS_TIMES, "power-law");
    test_csr Dn = dense_ish(1500, 2500, 0.3);
    sddmm_case(many, &Dn, 32, SR_TYPE_FLOAT32, SR_PLUS_TIMES, "dense-ish");
    sddmm_case(many, &Dn, 128, SR_TYPE_FLOAT32, SR_PLUS_TIMES, "dense-ish");
    device_operands = true; /* sent from the first GPU (NCCL), forced over the GPUs */
    setenv("SPARSERING_MULTI_SDDMM", "1", 1);
    sddmm_case(many, &S, 32, SR_TYPE_FLOAT32, SR_PLUS_TIMES, "power-law, operands on the device");
    sddmm_case(many, &S64, 48, SR_TYPE_FLOAT64, SR_PLUS_TIMES, "power-law, operands on the device");
    device_operands = false;
    setenv("SPARSERING_MULTI_SDDMM", "0", 1); /* the byte model's other answer: the first GPU alone */
    sddmm_case(many, &S, 32, SR_TYPE_FLOAT32, SR_PLUS_TIMES, "power-law, one GPU of two");
    unsetenv("SPARSERING_MULTI_SDDMM");
    setenv("SPARSERING_SDDMM_PANELS", "1", 1); /* the row panels on both sides */
    sddmm_case(many, &S, 64, SR_TYPE_FLOAT32, SR_PLUS_TIMES, "power-law, panels");
    unsetenv("SPARSERING_SDDMM_PANELS");
    test_csr_free(&S);
    test_csr_free(&S64);
    test_csr_free(&Dn);
}

/* ------------------------------------------------------------------ SpGEMM */

/* The same pattern, and values within `rel` of the largest (0: bit for bit). */
static void matrices_close(sr_matrix C1, sr_matrix Cn, double rel, const char *what)
{
    if (rel == 0) {
        graphs_equal(C1, Cn, what);
        return;
    }
    sr_matrix_info a, b;
    sr_matrix_get_info(C1, &a);
    sr_matrix_get_info(Cn, &b);
    CHECK(a.nrows == b.nrows && a.ncols == b.ncols && a.nnz == b.nnz, "%s: %lld entries, one GPU %lld", what,
          (long long)b.nnz, (long long)a.nnz);
    if (a.nnz != b.nnz || a.type != SR_TYPE_FLOAT64)
        return;
    int64_t *p1 = malloc((size_t)(a.nrows + 1) * 8), *pn = malloc((size_t)(a.nrows + 1) * 8);
    int32_t *c1 = malloc((size_t)a.nnz * 4 + 4), *cn = malloc((size_t)a.nnz * 4 + 4);
    double *v1 = malloc((size_t)a.nnz * 8 + 8), *vn = malloc((size_t)a.nnz * 8 + 8);
    CHECK_OK(sr_matrix_export_csr(one, C1, p1, c1, v1, SR_HOST));
    CHECK_OK(sr_matrix_export_csr(many, Cn, pn, cn, vn, SR_HOST));
    double top = 0, worst = 0;
    for (int64_t e = 0; e < a.nnz; e++)
        top = fmax(top, fabs(v1[e]));
    for (int64_t e = 0; e < a.nnz; e++)
        worst = fmax(worst, fabs(v1[e] - vn[e]));
    CHECK(memcmp(p1, pn, (size_t)(a.nrows + 1) * 8) == 0 && memcmp(c1, cn, (size_t)a.nnz * 4) == 0,
          "%s: the pattern differs", what);
    CHECK(worst <= rel * top, "%s: values differ by %g (largest %g)", what, worst, top);
    free(p1); free(pn); free(c1); free(cn); free(v1); free(vn);
}

static void mxm_case(sr_context multi, const test_csr *A, const test_csr *B, sr_semiring s, const char *what)
{
    sr_matrix A1 = device_matrix(one, A), An = device_matrix(multi, A);
    sr_matrix B1 = device_matrix(one, B), Bn = device_matrix(multi, B);
    sr_matrix C1 = NULL, Cn = NULL;
    CHECK_OK(sr_mxm(one, &C1, NULL, s, A1, B1, NULL));
    CHECK_OK(sr_mxm(multi, &Cn, NULL, s, An, Bn, NULL));
    /* each GPU picks its rows' accumulators for its own block: sums may round in another order */
    matrices_close(C1, Cn, s == SR_PLUS_TIMES ? 1e-13 : 0, what);
    sr_matrix_free(C1);
    sr_matrix_free(Cn);
    sr_matrix_free(A1);
    sr_matrix_free(An);
    sr_matrix_free(B1);
    sr_matrix_free(Bn);
}

/* The product left in row blocks: one a GPU, each on its own GPU, their rows those of sr_mxm's
 * product on the same context (the same blocks; a float sum may round otherwise from run to run),
 * and gathered again. */
static void row_blocks_case(sr_context multi, const test_csr *A, const test_csr *B, sr_semiring s, const char *what)
{
    const double rel = s == SR_PLUS_TIMES ? 1e-13 : 0;
    sr_matrix An = device_matrix(multi, A), Bn = device_matrix(multi, B), Cn = NULL, G = NULL;
    sr_row_blocks R = NULL;
    CHECK_OK(sr_mxm(multi, &Cn, NULL, s, An, Bn, NULL));
    CHECK_OK(sr_mxm_row_blocks(multi, &R, s, An, Bn));
    sr_context_options mo;
    CHECK_OK(sr_context_get_options(multi, &mo));
    CHECK(sr_row_blocks_count(R) == mo.ndevices, "%s: %d row blocks, expected %d", what, sr_row_blocks_count(R),
          mo.ndevices);
    int64_t expect_row = 0;
    for (int g = 0; g < sr_row_blocks_count(R); g++) {
        sr_matrix block = NULL, want = NULL;
        int64_t first = -1;
        CHECK_OK(sr_row_blocks_get(R, g, &block, &first));
        sr_matrix_info bi;
        CHECK_OK(sr_matrix_get_info(block, &bi));
        CHECK(first == expect_row, "%s: block %d starts at row %lld, expected %lld", what, g, (long long)first,
              (long long)expect_row);
        CHECK(bi.location == SR_DEVICE && bi.device == g, "%s: block %d lives on device %d", what, g, bi.device);
        /* the block through its own GPU's context, against the same rows of the gathered product */
        sr_matrix host_block = NULL;
        CHECK_OK(sr_matrix_copy_to(sr_row_blocks_context(R, g), block, SR_HOST, &host_block));
        CHECK_OK(sr_extract(multi, &want, Cn, first, 0, bi.nrows, bi.ncols));
        sr_matrix host_want = NULL;
        CHECK_OK(sr_matrix_copy_to(multi, want, SR_HOST, &host_want));
        matrices_close(host_want, host_block, rel, what);
        expect_row += bi.nrows;
        sr_matrix_free(host_block);
        sr_matrix_free(host_want);
        sr_matrix_free(want);
    }
    CHECK(expect_row == A->nrows, "%s: the blocks hold %lld rows of %lld", what, (long long)expect_row,
          (long long)A->nrows);
    CHECK_OK(sr_row_blocks_gather(R, &G));
    matrices_close(Cn, G, rel, what);
    CHECK_OK(sr_row_blocks_free(R));
    sr_matrix_free(G);
    sr_matrix_free(Cn);
    sr_matrix_free(An);
    sr_matrix_free(Bn);
}

static void check_mxm(void)
{
    test_csr A = test_random_csr(4000, 3000, 12, SR_TYPE_FLOAT64);
    test_csr B = test_random_csr(3000, 3500, 10, SR_TYPE_FLOAT64);
    mxm_case(many, &A, &B, SR_PLUS_TIMES, "A·B plus_times");
    mxm_case(many_rows, &A, &B, SR_MIN_PLUS, "A·B min_plus, rows");
    test_csr G = test_random_csr(3000, 3000, 8, SR_TYPE_BOOL);
    mxm_case(many, &G, &G, SR_OR_AND, "G·G or_and");
    test_csr T = test_random_csr(1, 3000, 40, SR_TYPE_FLOAT64); /* one row: a GPU without any */
    mxm_case(many, &T, &B, SR_PLUS_TIMES, "one row");
    row_blocks_case(many, &A, &B, SR_PLUS_TIMES, "row blocks, A·B plus_times");
    row_blocks_case(many_rows, &G, &G, SR_OR_AND, "row blocks, G·G or_and, rows");
    row_blocks_case(many, &T, &B, SR_PLUS_TIMES, "row blocks, one row");
    test_csr_free(&A);
    test_csr_free(&B);
    test_csr_free(&G);
    test_csr_free(&T);
}

/* ------------------------------------------------------------------ one context, several threads */

typedef struct knn_thread_arg {
    sr_matrix X;
    int64_t n, k;
    int64_t *idx;
    float *dist;
    sr_status status;
} knn_thread_arg;

static void *knn_thread(void *p)
{
    knn_thread_arg *a = p;
    sr_dense view = sr_dense_view(a->dist, a->n, a->k, SR_TYPE_FLOAT32, SR_ROW_MAJOR, SR_HOST);
    a->status = sr_knn(many, a->X, a->X, a->k, SR_METRIC_COSINE, 0, a->idx, &view, NULL);
    return NULL;
}

/* Calls from several threads on one context over the GPUs take turns (they share the GPUs'
 * streams and NCCL) and give each the answer of a call alone. */
static void check_shared_context(void)
{
    test_csr X = test_random_csr(20000, 800, 6, SR_TYPE_FLOAT32);
    make_integral(&X);
    sr_matrix Xn = device_matrix(many, &X);
    const int64_t k = 8, cells = X.nrows * k;
    knn_thread_arg alone = {Xn, X.nrows, k, malloc((size_t)cells * 8), malloc((size_t)cells * 4), SR_SUCCESS};
    knn_thread(&alone);
    CHECK_OK(alone.status);
    enum { THREADS = 3 };
    knn_thread_arg args[THREADS];
    pthread_t threads[THREADS];
    for (int t = 0; t < THREADS; t++) {
        args[t] = (knn_thread_arg){Xn, X.nrows, k, malloc((size_t)cells * 8), malloc((size_t)cells * 4), SR_SUCCESS};
        CHECK(pthread_create(&threads[t], NULL, knn_thread, &args[t]) == 0, "no thread %d", t);
    }
    for (int t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
        CHECK(args[t].status == SR_SUCCESS, "thread %d: %s", t, sr_status_name(args[t].status));
        CHECK(memcmp(args[t].idx, alone.idx, (size_t)cells * 8) == 0 &&
                  memcmp(args[t].dist, alone.dist, (size_t)cells * 4) == 0,
              "thread %d's k-NN on the shared context differs from a call alone", t);
        free(args[t].idx);
        free(args[t].dist);
    }
    free(alone.idx);
    free(alone.dist);
    sr_matrix_free(Xn);
    test_csr_free(&X);
}

/* Where the host has more than two GPUs, the k-NN, graph, SDDMM and SpGEMM checks again on a
 * context over all of them (SPARSERING_DEVICES=all), both partitions: more blocks, the same
 * one-GPU answers. */
static void check_all_gpus(void)
{
    setenv("SPARSERING_DEVICES", "all", 1);
    sr_context_options o = sr_context_options_default(), got;
    o.backend = SR_BACKEND_CUDA;
    CHECK_OK(sr_context_create(&many, &o));
    if (many && sr_context_get_options(many, &got) == SR_SUCCESS && got.ndevices > 2) {
        printf("test_multi_gpu: the checks again on all %d GPUs\n", got.ndevices);
        o.partition = SR_PARTITION_ROWS;
        CHECK_OK(sr_context_create(&many_rows, &o));
        check_knn();
        check_graphs();
        check_sddmm();
        check_mxm();
        sr_context_destroy(many_rows);
    }
    sr_context_destroy(many);
    many = many_rows = NULL;
    unsetenv("SPARSERING_DEVICES");
}

int main(void)
{
    test_seed("test_multi_gpu");
    check_options();
    sr_context_options o = sr_context_options_default();
    o.backend = SR_BACKEND_CUDA;
    o.ndevices = 2;
    o.devices[0] = 0;
    o.devices[1] = 1;
    if (sr_context_create(&many, &o) != SR_SUCCESS) {
        printf("test_multi_gpu: the GPU part is skipped: it needs two GPUs (%s)\n", sr_last_error());
        return test_failures ? test_finish("test_multi_gpu") : SR_TEST_SKIP;
    }
    o.partition = SR_PARTITION_ROWS;
    CHECK_OK(sr_context_create(&many_rows, &o));
    o = sr_context_options_default();
    o.backend = SR_BACKEND_CUDA;
    CHECK_OK(sr_context_create(&one, &o));
    check_device_list_errors();
    check_knn();
    check_graphs();
    check_sddmm();
    check_mxm();
    check_shared_context();
    size_t now = 0, peak = 0;
    CHECK_OK(sr_context_device_memory(many, &now, &peak));
    printf("test_multi_gpu: the two-GPU context holds %zu bytes now, %zu at its peak\n", now, peak);
    CHECK(peak > 0, "the two-GPU context counted no device memory");
    sr_context_destroy(many_rows);
    sr_context_destroy(many);
    check_all_gpus();
    sr_context_destroy(one);
    return test_finish("test_multi_gpu");
}
