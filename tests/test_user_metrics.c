/* User metrics (sr_metric_define): all the built-in metrics, written again as user definitions,
 * give the built-ins' bits in sr_pairwise_distance, sr_knn (dense path) and sr_radius_neighbors,
 * in float32 and float64, on the CPU backend and (the sums) on the GPU, where NVRTC compiles them
 * (checked for sm_90 without a GPU too); weighted Jaccard against a dense reference; maxima
 * (chebyshev's bits too); and the refusals. */
#include <time.h>

#include "test_util.h"
#include "../src/cuda/cuda.h"

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static sr_context ctx;

/* The built-ins as user definitions (metric.h's formulas): the pair term, the norm term, the
 * distance, over the union or not; hellinger and kl_divergence on nonnegative values. */
static const struct {
    sr_metric builtin;
    const char *pair, *norm, *distance;
    bool over_union, similarity, nonnegative;
    double p;
    const char *pair2, *norm2, *reduce;
} kBuiltins[] = {
    {SR_METRIC_INNER_PRODUCT, "q * x", NULL, "acc", false, true, false, 0, NULL, NULL, NULL},
    {SR_METRIC_SQEUCLIDEAN, "q * x", "v * v", "sr_snap(nq + nx - 2.0 * acc, nq + nx)", false, false, false, 0, NULL, NULL, NULL},
    {SR_METRIC_L2, "q * x", "v * v", "sqrt(sr_snap(nq + nx - 2.0 * acc, nq + nx))", false, false, false, 0, NULL, NULL, NULL},
    {SR_METRIC_COSINE, "q * x", "v * v",
     "sr_norm_product(nq, nx) > 0.0 ? sr_snap(sr_clamp(1.0 - acc / sr_norm_product(nq, nx), 0.0, 2.0), 1.0) : 1.0",
     false, false, false, 0, NULL, NULL, NULL},
    {SR_METRIC_JACCARD, "(q != 0.0 && x != 0.0) ? 1.0 : 0.0", "v != 0.0 ? 1.0 : 0.0",
     "nq + nx - acc > 0.0 ? 1.0 - acc / (nq + nx - acc) : 0.0", false, false, false, 0, NULL, NULL, NULL},
    {SR_METRIC_DICE, "(q != 0.0 && x != 0.0) ? 1.0 : 0.0", "v != 0.0 ? 1.0 : 0.0",
     "nq + nx > 0.0 ? 1.0 - 2.0 * acc / (nq + nx) : 0.0", false, false, false, 0, NULL, NULL, NULL},
    {SR_METRIC_RUSSELL_RAO, "(q != 0.0 && x != 0.0) ? 1.0 : 0.0", NULL, "(d - acc) / d", false, false, false, 0, NULL, NULL, NULL},
    {SR_METRIC_HELLINGER, "sqrt(q * x)", "v", "sqrt(fmax(0.0, 0.5 * (nq + nx) - acc))", false, false, true, 0, NULL, NULL, NULL},
    {SR_METRIC_KL_DIVERGENCE, "(q > 0.0 && x > 0.0) ? q * log(q / x) : 0.0", NULL, "acc", false, false, true, 0, NULL, NULL, NULL},
    {SR_METRIC_L1, "fabs(q - x)", NULL, "fmax(0.0, nq + nx + acc)", true, false, false, 0, NULL, NULL, NULL},
    {SR_METRIC_CANBERRA, "fabs(q) + fabs(x) > 0.0 ? fabs(q - x) / (fabs(q) + fabs(x)) : 0.0", NULL,
     "fmax(0.0, nq + nx + acc)", true, false, false, 0, NULL, NULL, NULL},
    {SR_METRIC_MINKOWSKI, "sr_pow(fabs(q - x), p)", NULL, "pow(fmax(0.0, nq + nx + acc), 1.0 / p)", true, false, false,
     3.0, NULL, NULL, NULL},
    {SR_METRIC_HAMMING, "q != x ? 1.0 : 0.0", NULL, "fmax(0.0, nq + nx + acc) / d", true, false, false, 0, NULL, NULL, NULL},
    {SR_METRIC_L2_UNEXPANDED, "fabs(q - x) * fabs(q - x)", NULL, "sqrt(fmax(0.0, nq + nx + acc))", true, false, false,
     0, NULL, NULL, NULL},
    {SR_METRIC_SQEUCLIDEAN_UNEXPANDED, "fabs(q - x) * fabs(q - x)", NULL, "fmax(0.0, nq + nx + acc)", true, false,
     false, 0, NULL, NULL, NULL},
    {SR_METRIC_JENSEN_SHANNON,
     "(q > 0.0 ? q * log(q / (0.5 * (q + x))) : 0.0) + (x > 0.0 ? x * log(x / (0.5 * (q + x))) : 0.0)", NULL,
     "sqrt(0.5 * fmax(0.0, nq + nx + acc))", true, false, true, 0, NULL, NULL, NULL},
    /* two sums: Bray-Curtis's denominator over the union, correlation's row sums */
    {SR_METRIC_BRAY_CURTIS, "fabs(q - x)", NULL, "nq2 + nx2 + acc2 > 0.0 ? fmax(0.0, nq + nx + acc) / (nq2 + nx2 + acc2) : 0.0",
     true, false, false, 0, "fabs(q + x)", NULL, NULL},
    {SR_METRIC_CORRELATION, "q * x", "v * v",
     "((nq - nq2 * nq2 / d) > 0.0 && (nx - nx2 * nx2 / d) > 0.0) ? sr_snap(sr_clamp(1.0 - (acc - nq2 * nx2 / d) / "
     "sqrt((nq - nq2 * nq2 / d) * (nx - nx2 * nx2 / d)), 0.0, 2.0), 1.0) : 1.0",
     false, false, false, 0, NULL, "v", NULL},
    /* a maximum over the union */
    {SR_METRIC_CHEBYSHEV, "fabs(q - x)", NULL, "acc", true, false, false, 0, NULL, NULL, "max"},
};

/* m's rows on context c at `where` (NULL when the copy fails: the caller's check reports it). */
static sr_matrix make(sr_context c, sr_location where, test_csr *m, bool nonnegative, sr_type type)
{
    if (nonnegative)
        for (int64_t e = 0; e < m->nnz; e++) {
            if (type == SR_TYPE_FLOAT32)
                ((float *)m->values)[e] = fabsf(((float *)m->values)[e]);
            else
                ((double *)m->values)[e] = fabs(((double *)m->values)[e]);
        }
    return test_make_matrix_at(c, m, where);
}

/* The built-in and the user metric on the same rows, on context c with the rows at `where`. */
static void compare_on(sr_context c, sr_location where, sr_metric builtin, sr_metric user, sr_type type,
                       bool nonnegative, double p, const char *what)
{
    test_csr x = test_random_csr(150, 60, 6, type), q = test_random_csr(40, 60, 5, type);
    /* counts-like duplicates: ties across rows */
    sr_matrix X = make(c, where, &x, nonnegative, type), Q = make(c, where, &q, nonnegative, type);
    if (!X || !Q) {
        sr_matrix_free(X), sr_matrix_free(Q);
        test_csr_free(&x), test_csr_free(&q);
        return;
    }
    const size_t es = sr_type_size(type);
    void *d1 = malloc(40 * 150 * es), *d2 = malloc(40 * 150 * es);
    sr_dense D1 = sr_dense_view(d1, 40, 150, type, SR_ROW_MAJOR, SR_HOST), D2 = sr_dense_view(d2, 40, 150, type, SR_ROW_MAJOR, SR_HOST);
    CHECK_OK(sr_pairwise_distance(c, Q, X, builtin, p, &D1));
    CHECK_OK(sr_pairwise_distance(c, Q, X, user, p, &D2));
    CHECK(memcmp(d1, d2, 40 * 150 * es) == 0, "%s (%s, %s): pairwise distances differ from %s", what,
          sr_type_name(type), where == SR_DEVICE ? "GPU" : "CPU", sr_metric_name(builtin));
    enum { k = 7 };
    int64_t i1[40 * k], i2[40 * k];
    void *k1 = malloc(40 * k * es), *k2 = malloc(40 * k * es);
    sr_dense K1 = sr_dense_view(k1, 40, k, type, SR_ROW_MAJOR, SR_HOST), K2 = sr_dense_view(k2, 40, k, type, SR_ROW_MAJOR, SR_HOST);
    setenv("SPARSERING_KNN_OVERLAP", "0", 1); /* the built-in's dense path: the one a user metric takes */
    CHECK_OK(sr_knn(c, X, Q, k, builtin, p, i1, &K1, NULL));
    unsetenv("SPARSERING_KNN_OVERLAP");
    CHECK_OK(sr_knn(c, X, Q, k, user, p, i2, &K2, NULL));
    CHECK(memcmp(i1, i2, sizeof i1) == 0 && memcmp(k1, k2, 40 * k * es) == 0, "%s (%s, %s): k-NN differs from %s",
          what, sr_type_name(type), where == SR_DEVICE ? "GPU" : "CPU", sr_metric_name(builtin));
    sr_matrix R1 = NULL, R2 = NULL;
    sr_radius_options ro = sr_radius_options_default();
    ro.mode = SR_GRAPH_DISTANCE;
    ro.type = type;
    const double r = builtin == SR_METRIC_INNER_PRODUCT ? 0.5 : 1.0;
    CHECK_OK(sr_radius_neighbors(c, X, Q, r, builtin, p, &ro, &R1));
    CHECK_OK(sr_radius_neighbors(c, X, Q, r, user, p, &ro, &R2));
    bool same = false;
    if (R1 && R2)
        CHECK_OK(sr_matrix_equal(c, R1, R2, &same));
    CHECK(same, "%s (%s, %s): radius neighbours differ from %s", what, sr_type_name(type),
          where == SR_DEVICE ? "GPU" : "CPU", sr_metric_name(builtin));
    sr_matrix_free(R1), sr_matrix_free(R2), sr_matrix_free(X), sr_matrix_free(Q);
    free(d1), free(d2), free(k1), free(k2);
    test_csr_free(&x), test_csr_free(&q);
}

/* kBuiltins[b] as a user metric (defined once; the same definition again gives the same value). */
static sr_metric builtin_again(size_t b, char *name, size_t size)
{
    snprintf(name, size, "again_%s", sr_metric_name(kBuiltins[b].builtin));
    sr_metric_def d = {name, kBuiltins[b].pair, kBuiltins[b].norm, kBuiltins[b].distance, kBuiltins[b].over_union,
                       kBuiltins[b].similarity, kBuiltins[b].pair2, kBuiltins[b].norm2, kBuiltins[b].reduce};
    sr_metric user = SR_METRIC_L2;
    CHECK_OK(sr_metric_define(&d, &user));
    return user;
}

static void check_builtins_again(void)
{
    for (size_t b = 0; b < sizeof kBuiltins / sizeof *kBuiltins; b++) {
        char name[64];
        const sr_metric user = builtin_again(b, name, sizeof name);
        compare_on(ctx, SR_HOST, kBuiltins[b].builtin, user, SR_TYPE_FLOAT64, kBuiltins[b].nonnegative, kBuiltins[b].p,
                   name);
        compare_on(ctx, SR_HOST, kBuiltins[b].builtin, user, SR_TYPE_FLOAT32, kBuiltins[b].nonnegative, kBuiltins[b].p,
                   name);
    }
}

/* The largest product over the shared columns (a maximum from 0, not over the union). */
static const sr_metric_def kLargestProduct = {"largest_product", "q * x", "fabs(v)", "acc", false, false, NULL, NULL, "max"};

/* NVRTC's compile of `user` for sm_90; false when the library was built without CUDA. */
static bool compiles_for_sm90(sr_metric user, const char *name)
{
    size_t bytes = 0;
    const double t0 = seconds();
    const sr_status st = sr_cuda_user_metric_compile_check(user, 90, &bytes);
    if (st == SR_ERROR_NO_DEVICE)
        return false;
    CHECK(st == SR_SUCCESS && bytes > 0, "%s: NVRTC: %s", name, sr_last_error());
    printf("%s: NVRTC compiled the GPU kernels (sm_90, %zu bytes) in %.0f ms\n", name, bytes, 1e3 * (seconds() - t0));
    return true;
}

/* NVRTC builds a user metric's GPU kernels for sm_90 with no GPU needed (a sum over the shared
 * columns, one over the union, two sums, a maximum over the union and one over the shared
 * columns): the shared kernels (src/cuda/cuda_metric_kernels.cuh) and the generated source
 * compile on every CUDA build; the GPU part below runs them all. */
static void check_gpu_compile(void)
{
    const sr_metric which[] = {SR_METRIC_COSINE, SR_METRIC_L1, SR_METRIC_BRAY_CURTIS, SR_METRIC_CHEBYSHEV};
    for (size_t w = 0; w < sizeof which / sizeof *which; w++)
        for (size_t b = 0; b < sizeof kBuiltins / sizeof *kBuiltins; b++) {
            char name[64];
            if (kBuiltins[b].builtin == which[w] && !compiles_for_sm90(builtin_again(b, name, sizeof name), name))
                return; /* built without CUDA */
        }
    sr_metric largest = SR_METRIC_L2;
    CHECK_OK(sr_metric_define(&kLargestProduct, &largest));
    compiles_for_sm90(largest, kLargestProduct.name);
}

/* On a GPU, on a deterministic context (sums in a fixed order, as every call's bits repeat): each
 * built-in written again gives the built-in's bits, the user metric on the dense path's kernels
 * from its NVRTC program (chebyshev's maximum a pair a warp), the built-in on its own path (the
 * tiles for k-NN and radius, chebyshev's magnitude walks). */
static void check_gpu_builtins_again(void)
{
    sr_context gpu;
    if (!test_context_made(&gpu, SR_BACKEND_CUDA, true, "user metrics' GPU"))
        return;
    for (size_t b = 0; b < sizeof kBuiltins / sizeof *kBuiltins; b++) {
        char name[64];
        const sr_metric user = builtin_again(b, name, sizeof name);
        const double t0 = seconds();
        compare_on(gpu, SR_DEVICE, kBuiltins[b].builtin, user, SR_TYPE_FLOAT64, kBuiltins[b].nonnegative,
                   kBuiltins[b].p, name);
        compare_on(gpu, SR_DEVICE, kBuiltins[b].builtin, user, SR_TYPE_FLOAT32, kBuiltins[b].nonnegative,
                   kBuiltins[b].p, name);
        if (b == 0)
            printf("%s on the GPU, the compile (or the cache) and the checks: %.0f ms\n", name,
                   1e3 * (seconds() - t0));
    }
    sr_context_destroy(gpu);
}

/* Weighted Jaccard, 1 - Σ min(q, x) / Σ max(q, x) on nonnegative rows: over the shared columns
 * Σ max = Σ q + Σ x - Σ min, against a dense reference. */
static void check_weighted_jaccard(void)
{
    sr_metric_def d = {"weighted_jaccard", "fmin(q, x)", "v", "nq + nx - acc > 0.0 ? 1.0 - acc / (nq + nx - acc) : 0.0",
                       false, false, NULL, NULL, NULL};
    sr_metric wj = SR_METRIC_L2;
    CHECK_OK(sr_metric_define(&d, &wj));
    test_csr x = test_random_csr(80, 30, 5, SR_TYPE_FLOAT64);
    sr_matrix X = make(ctx, SR_HOST, &x, true, SR_TYPE_FLOAT64);
    static double D[80 * 80];
    sr_dense Dv = sr_dense_view(D, 80, 80, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    CHECK_OK(sr_pairwise_distance(ctx, X, X, wj, 0.0, &Dv));
    int64_t wrong = 0;
    for (int64_t i = 0; i < 80; i++)
        for (int64_t j = 0; j < 80; j++) {
            double lo = 0, hi = 0;
            for (int64_t c = 0; c < 30; c++) {
                const double a = test_csr_at(&x, i, c), b = test_csr_at(&x, j, c);
                lo += fmin(a, b);
                hi += fmax(a, b);
            }
            const double want = hi > 0 ? 1.0 - lo / hi : 0.0;
            wrong += !(fabs(D[i * 80 + j] - want) <= 1e-12);
        }
    CHECK(wrong == 0, "weighted_jaccard: %lld of 6400 distances differ from the dense reference", (long long)wrong);
    sr_matrix_free(X);
    test_csr_free(&x);
}

/* Maxima against a dense reference, on context c with the rows at `where`: the largest product
 * over the shared columns (from 0), and the largest |q - x|^p over the union with a distance over
 * it and the rows' largest |v| (nq, nx). */
static void check_maxima_on(sr_context c, sr_location where)
{
    sr_metric_def spread = {"largest_spread", "sr_pow(fabs(q - x), p)", "fabs(v)", "acc / (1.0 + nq + nx)", true,
                            false, NULL, NULL, "max"};
    sr_metric largest = SR_METRIC_L2, widest = SR_METRIC_L2;
    CHECK_OK(sr_metric_define(&kLargestProduct, &largest));
    CHECK_OK(sr_metric_define(&spread, &widest));
    test_csr x = test_random_csr(70, 25, 4, SR_TYPE_FLOAT64);
    sr_matrix X = test_make_matrix_at(c, &x, where);
    static double D1[70 * 70], D2[70 * 70];
    sr_dense V1 = sr_dense_view(D1, 70, 70, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    sr_dense V2 = sr_dense_view(D2, 70, 70, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    CHECK_OK(sr_pairwise_distance(c, X, X, largest, 0.0, &V1));
    CHECK_OK(sr_pairwise_distance(c, X, X, widest, 2.0, &V2));
    int64_t wrong1 = 0, wrong2 = 0;
    for (int64_t i = 0; i < 70; i++)
        for (int64_t j = 0; j < 70; j++) {
            double product = 0, gap = 0, ni = 0, nj = 0;
            for (int64_t col = 0; col < 25; col++) {
                const double a = test_csr_at(&x, i, col), b = test_csr_at(&x, j, col);
                if (a != 0 && b != 0)
                    product = fmax(product, a * b);
                gap = fmax(gap, (a - b) * (a - b));
                ni = fmax(ni, fabs(a));
                nj = fmax(nj, fabs(b));
            }
            wrong1 += !(D1[i * 70 + j] == product);
            wrong2 += !(fabs(D2[i * 70 + j] - gap / (1.0 + ni + nj)) <= 1e-12 * (1.0 + gap));
        }
    const char *place = where == SR_DEVICE ? "GPU" : "CPU";
    CHECK(wrong1 == 0, "largest_product (%s): %lld of 4900 distances differ from the dense reference", place,
          (long long)wrong1);
    CHECK(wrong2 == 0, "largest_spread (%s): %lld of 4900 distances differ from the dense reference", place,
          (long long)wrong2);
    sr_matrix_free(X);
    test_csr_free(&x);
}

static void check_refusals(void)
{
    sr_metric m = SR_METRIC_L2;
    sr_metric_def bad = {"broken_metric", "q ** x", NULL, NULL, false, false, NULL, NULL, NULL};
    CHECK_FAILS(sr_metric_define(&bad, &m), SR_ERROR_INVALID_ARGUMENT, "does not compile");
    sr_metric_def clash = {"cosine", "q * x", NULL, NULL, false, false, NULL, NULL, NULL};
    CHECK_FAILS(sr_metric_define(&clash, &m), SR_ERROR_INVALID_ARGUMENT, "built-in metric");
    sr_metric_def nopair = {"nopair", NULL, NULL, NULL, false, false, NULL, NULL, NULL};
    CHECK_FAILS(sr_metric_define(&nopair, &m), SR_ERROR_INVALID_ARGUMENT, "no pair term");
    sr_metric_def smallest = {"smallest", "q * x", NULL, NULL, false, false, NULL, NULL, "min"};
    CHECK_FAILS(sr_metric_define(&smallest, &m), SR_ERROR_INVALID_ARGUMENT, "expected plus or max");
    sr_metric_def two_maxima = {"two_maxima", "fabs(q - x)", NULL, NULL, true, false, "fabs(q + x)", NULL, "max"};
    CHECK_FAILS(sr_metric_define(&two_maxima, &m), SR_ERROR_INVALID_ARGUMENT, "takes one term");
    sr_metric_def ok = {"dot_again", "q * x", NULL, NULL, false, true, NULL, NULL, NULL};
    CHECK_OK(sr_metric_define(&ok, &m));
    sr_metric again = SR_METRIC_L2;
    CHECK_OK(sr_metric_define(&ok, &again));
    CHECK(again == m, "the same metric twice gave %d and %d", (int)m, (int)again);
    CHECK(strcmp(sr_metric_name(m), "dot_again") == 0, "sr_metric_name: %s", sr_metric_name(m));
    ok.pair = "q + x";
    CHECK_FAILS(sr_metric_define(&ok, &again), SR_ERROR_INVALID_ARGUMENT, "defined already");
    sr_context_options o = sr_context_options_default();
    o.backend = SR_BACKEND_CUDA;
    sr_context gpu;
    if (sr_context_create(&gpu, &o) == SR_SUCCESS) {
        test_csr x = test_random_csr(20, 10, 3, SR_TYPE_FLOAT32);
        sr_matrix H = test_make_matrix(ctx, &x), G = NULL;
        CHECK_OK(sr_matrix_copy_to(gpu, H, SR_DEVICE, &G));
        int64_t idx[20];
        float dist[20];
        sr_dense Dv = sr_dense_view(dist, 20, 1, SR_TYPE_FLOAT32, SR_ROW_MAJOR, SR_HOST);
        sr_metric_def largest = {"largest_gap", "fabs(q - x)", NULL, NULL, true, false, NULL, NULL, "max"};
        sr_metric gap = SR_METRIC_L2;
        CHECK_OK(sr_metric_define(&largest, &gap));
        CHECK_OK(sr_knn(gpu, G, G, 1, gap, 0.0, idx, &Dv, NULL)); /* a maximum runs there */
        CHECK_OK(sr_knn(gpu, G, G, 1, m, 0.0, idx, &Dv, NULL));   /* and a sum */
        sr_matrix_free(G), sr_matrix_free(H);
        test_csr_free(&x);
        sr_context_destroy(gpu);
    }
}

int main(void)
{
    test_seed("test_user_metrics");
    sr_context_options o = sr_context_options_default();
    o.backend = SR_BACKEND_CPU;
    CHECK_OK(sr_context_create(&ctx, &o));
    check_refusals();
    check_builtins_again();
    check_gpu_compile();
    check_gpu_builtins_again();
    check_weighted_jaccard();
    check_maxima_on(ctx, SR_HOST);
    sr_context_options go = sr_context_options_default();
    go.backend = SR_BACKEND_CUDA;
    sr_context gpu;
    if (sr_context_create(&gpu, &go) == SR_SUCCESS) {
        check_maxima_on(gpu, SR_DEVICE);
        sr_context_destroy(gpu);
    }
    sr_context_destroy(ctx);
    return test_finish("test_user_metrics");
}
