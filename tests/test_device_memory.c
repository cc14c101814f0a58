/* Device memory running out: batched calls (k-NN, pairwise distances into host memory, radius)
 * give the same answers under a tiny workspace limit and when a memory hog leaves too little
 * device memory for the batch the limit allows (they retry in smaller batches); with no device
 * memory left at all they fail with SR_ERROR_DEVICE_OUT_OF_MEMORY, outputs untouched, and the
 * context works again once memory is back. Skips (exit 77) without CUDA or a GPU. */
#include "test_util.h"

#ifndef SR_TEST_HAVE_CUDA
int main(void)
{
    printf("SKIP test_device_memory: this build has no CUDA backend (nvcc was not found)\n");
    return SR_TEST_SKIP;
}
#else
#include <cuda_runtime.h>

enum { N_INDEX = 30000, N_COLS = 3000, N_QUERIES = 5000, N_DENSE = 2000, K = 10 };

static sr_context gpu;
static sr_matrix index_m, queries_m, dense_queries;
static double radius; /* just under the smallest distance to a K-th neighbour (0 when empty rows tie) */

/* What one run of the three calls returns (host arrays and a host radius matrix). */
typedef struct answers {
    int64_t *idx;
    float *dist, *D;
    sr_matrix R;
    sr_status knn, pairwise, radius;
} answers;

static answers run_all(void)
{
    answers a = {calloc((size_t)N_QUERIES * K, sizeof(int64_t)), calloc((size_t)N_QUERIES * K, sizeof(float)),
                 calloc((size_t)N_DENSE * N_INDEX, sizeof(float)), NULL, SR_SUCCESS, SR_SUCCESS, SR_SUCCESS};
    for (int64_t i = 0; i < (int64_t)N_QUERIES * K; i++)
        a.idx[i] = -7; /* untouched on failure */
    sr_dense dist = sr_dense_view(a.dist, N_QUERIES, K, SR_TYPE_FLOAT32, SR_ROW_MAJOR, SR_HOST);
    sr_dense D = sr_dense_view(a.D, N_DENSE, N_INDEX, SR_TYPE_FLOAT32, SR_ROW_MAJOR, SR_HOST);
    a.knn = sr_knn(gpu, index_m, queries_m, K, SR_METRIC_L2, 0.0, a.idx, &dist, NULL);
    a.pairwise = sr_pairwise_distance(gpu, dense_queries, index_m, SR_METRIC_L2, 0.0, &D);
    sr_matrix R = NULL;
    a.radius = sr_radius_neighbors(gpu, index_m, queries_m, radius, SR_METRIC_L2, 0.0, NULL, &R);
    if (a.radius == SR_SUCCESS) {
        CHECK_OK(sr_matrix_copy_to(gpu, R, SR_HOST, &a.R));
        sr_matrix_free(R);
    }
    return a;
}

static int compare_floats(const void *a, const void *b)
{
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static void free_answers(answers *a)
{
    free(a->idx);
    free(a->dist);
    free(a->D);
    sr_matrix_free(a->R);
}

/* float32 results of one computation run twice: the tiled distance kernels add a query's terms
 * in shared memory in no fixed order, so the last bits may differ between runs (README). */
static bool close_enough(float x, float y) { return fabsf(x - y) <= 1e-5f * fmaxf(1.0f, fabsf(y)); }

static void check_same_answers(const answers *got, const answers *want, const char *when)
{
    CHECK(got->knn == SR_SUCCESS && got->pairwise == SR_SUCCESS && got->radius == SR_SUCCESS,
          "%s: k-NN %s, pairwise %s, radius %s (%s)", when, sr_status_name(got->knn), sr_status_name(got->pairwise),
          sr_status_name(got->radius), sr_last_error());
    int64_t bad = 0;
    if (got->knn == SR_SUCCESS) /* a swapped index only where its distance ties */
        for (int64_t i = 0; i < (int64_t)N_QUERIES * K; i++)
            bad += !close_enough(got->dist[i], want->dist[i]) ||
                   (got->idx[i] != want->idx[i] && !(i % K > 0 && close_enough(got->dist[i], got->dist[i - 1])) &&
                    !(i % K < K - 1 && close_enough(got->dist[i], got->dist[i + 1])));
    CHECK(bad == 0, "%s: %lld k-NN results differ from the unconstrained run", when, (long long)bad);
    bad = 0;
    if (got->pairwise == SR_SUCCESS)
        for (int64_t i = 0; i < (int64_t)N_DENSE * N_INDEX; i++)
            bad += !close_enough(got->D[i], want->D[i]);
    CHECK(bad == 0, "%s: %lld pairwise distances differ from the unconstrained run", when, (long long)bad);
    if (!got->R || !want->R)
        return;
    sr_matrix_info gi, wi;
    sr_matrix_get_info(got->R, &gi);
    sr_matrix_get_info(want->R, &wi);
    const int64_t *grp, *wrp;
    const int32_t *gci, *wci;
    const void *gv, *wv;
    CHECK_OK(sr_matrix_csr_arrays(got->R, &grp, &gci, &gv));
    CHECK_OK(sr_matrix_csr_arrays(want->R, &wrp, &wci, &wv));
    bool same = gi.nnz == wi.nnz && memcmp(grp, wrp, (size_t)(N_QUERIES + 1) * sizeof(int64_t)) == 0 &&
                memcmp(gci, wci, (size_t)gi.nnz * sizeof(int32_t)) == 0;
    for (int64_t e = 0; same && e < gi.nnz; e++)
        same = close_enough(((const float *)gv)[e], ((const float *)wv)[e]);
    CHECK(same, "%s: radius neighbours differ from the unconstrained run (%lld and %lld pairs)", when,
          (long long)gi.nnz, (long long)wi.nnz);
}

/* Takes device memory until `leave` bytes are free (or as close as cudaMalloc allows); returns the
 * hog's blocks (NULL-terminated) to give back with release_hog. */
static void **hog_device(size_t leave)
{
    void **blocks = calloc(4096, sizeof(void *));
    int n = 0;
    /* the stream-ordered pool keeps freed memory reserved: hand it back so free means free */
    cudaMemPool_t pool;
    int device = 0;
    cudaDeviceSynchronize();
    cudaGetDevice(&device);
    if (cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess)
        cudaMemPoolTrimTo(pool, 0);
    for (size_t chunk = (size_t)1 << 32; chunk >= ((size_t)1 << 20) && n < 4095;) {
        size_t free_bytes = 0, total = 0;
        cudaMemGetInfo(&free_bytes, &total);
        if (free_bytes <= leave + chunk) {
            chunk /= 2;
            continue;
        }
        if (cudaMalloc(&blocks[n], chunk) == cudaSuccess)
            n++;
        else {
            cudaGetLastError();
            chunk /= 2;
        }
    }
    return blocks;
}

static void release_hog(void **blocks)
{
    for (int i = 0; blocks[i]; i++)
        cudaFree(blocks[i]);
    free(blocks);
}

static size_t free_now(void)
{
    size_t free_bytes = 0, total = 0;
    cudaMemGetInfo(&free_bytes, &total);
    return free_bytes;
}

/* k-NN, pairwise distances and radius against a 1,000,000-row index with a hog leaving less
 * than one query's distances (4 MB): each fails with SR_ERROR_DEVICE_OUT_OF_MEMORY and writes
 * nothing. */
static void starved_calls(void)
{
    enum { WIDE = 1000000, NQ = 4 };
    test_csr xw = test_random_csr(WIDE, 100, 2, SR_TYPE_FLOAT32);
    test_csr xq = test_random_csr(NQ, 100, 2, SR_TYPE_FLOAT32);
    sr_matrix wide = test_make_matrix_at(gpu, &xw, SR_DEVICE), q = test_make_matrix_at(gpu, &xq, SR_DEVICE);
    int64_t idx[NQ * K];
    float dist[NQ * K];
    float *D = malloc((size_t)NQ * WIDE * sizeof(float));
    for (int i = 0; i < NQ * K; i++)
        idx[i] = -7;
    for (int64_t i = 0; i < (int64_t)NQ * WIDE; i++)
        D[i] = -7.0f;
    sr_dense dv = sr_dense_view(dist, NQ, K, SR_TYPE_FLOAT32, SR_ROW_MAJOR, SR_HOST);
    sr_dense Dv = sr_dense_view(D, NQ, WIDE, SR_TYPE_FLOAT32, SR_ROW_MAJOR, SR_HOST);
    sr_matrix R = NULL;
    void **hog = hog_device(0);
    printf("hog: %.1f MiB left free\n", (double)free_now() / 1048576.0);
    const sr_status knn = sr_knn(gpu, wide, q, K, SR_METRIC_L2, 0.0, idx, &dv, NULL);
    const sr_status pairwise = sr_pairwise_distance(gpu, q, wide, SR_METRIC_L2, 0.0, &Dv);
    const sr_status rad = sr_radius_neighbors(gpu, wide, q, 1.0, SR_METRIC_L2, 0.0, NULL, &R);
    release_hog(hog);
    CHECK(knn == SR_ERROR_DEVICE_OUT_OF_MEMORY, "k-NN with no device memory: %s", sr_status_name(knn));
    CHECK(pairwise == SR_ERROR_DEVICE_OUT_OF_MEMORY, "pairwise with no device memory: %s", sr_status_name(pairwise));
    CHECK(rad == SR_ERROR_DEVICE_OUT_OF_MEMORY && R == NULL, "radius with no device memory: %s", sr_status_name(rad));
    int64_t touched = 0;
    for (int i = 0; i < NQ * K; i++)
        touched += idx[i] != -7;
    for (int64_t i = 0; i < (int64_t)NQ * WIDE; i++)
        touched += D[i] != -7.0f;
    CHECK(touched == 0, "calls that failed wrote %lld outputs", (long long)touched);
    free(D);
    sr_matrix_free(wide);
    sr_matrix_free(q);
    test_csr_free(&xw);
    test_csr_free(&xq);
}

int main(void)
{
    test_seed("test_device_memory");
    sr_context_options o = sr_context_options_default();
    o.backend = SR_BACKEND_CUDA;
    if (sr_context_create(&gpu, &o) != SR_SUCCESS) {
        printf("SKIP test_device_memory: %s\n", sr_last_error());
        return SR_TEST_SKIP;
    }
    test_csr xi = test_random_csr(N_INDEX, N_COLS, 20, SR_TYPE_FLOAT32);
    test_csr xq = test_random_csr(N_QUERIES, N_COLS, 20, SR_TYPE_FLOAT32);
    test_csr xd = test_random_csr(N_DENSE, N_COLS, 20, SR_TYPE_FLOAT32);
    index_m = test_make_matrix_at(gpu, &xi, SR_DEVICE);
    queries_m = test_make_matrix_at(gpu, &xq, SR_DEVICE);
    dense_queries = test_make_matrix_at(gpu, &xd, SR_DEVICE);

    radius = 0.0;
    answers want = run_all();
    float *kth = malloc(N_QUERIES * sizeof(float));
    for (int i = 0; i < N_QUERIES; i++)
        kth[i] = want.dist[(size_t)i * K + K - 1];
    qsort(kth, N_QUERIES, sizeof(float), compare_floats);
    radius = kth[0] * (1.0 - 1e-4); /* no pair on the boundary, where runs may round apart */
    free(kth);
    free_answers(&want);
    want = run_all();
    CHECK(want.knn == SR_SUCCESS && want.pairwise == SR_SUCCESS && want.radius == SR_SUCCESS,
          "unconstrained run: %s", sr_last_error());
    int64_t pairs = 0;
    if (want.R) {
        sr_matrix_info info;
        sr_matrix_get_info(want.R, &info);
        pairs = info.nnz;
    }
    printf("unconstrained: %d queries x %d index rows, radius %.3f: %lld pairs\n", N_QUERIES, N_INDEX, radius,
           (long long)pairs);

    /* a 1 MiB workspace: batches of a few rows */
    CHECK_OK(sr_context_set_workspace_limit(gpu, (size_t)1 << 20));
    answers tiny = run_all();
    check_same_answers(&tiny, &want, "1 MiB workspace");
    free_answers(&tiny);

    /* a limit far above what a hog leaves free: the first batch's cudaMalloc fails (a k-NN batch
     * of all 5,000 queries needs 600 MB, pairwise 240 MB), the calls halve their batches until
     * one fits */
    CHECK_OK(sr_context_set_workspace_limit(gpu, (size_t)16 << 30));
    void **hog = hog_device((size_t)96 << 20);
    printf("hog: %.0f MiB left free\n", (double)free_now() / 1048576.0);
    answers squeezed = run_all();
    check_same_answers(&squeezed, &want, "96 MiB left by a hog");
    free_answers(&squeezed);
    release_hog(hog);

    /* nothing left: even one query's distances to a 1M-row index (4 MB) do not fit: a clean
     * SR_ERROR_DEVICE_OUT_OF_MEMORY, outputs untouched */
    starved_calls();

    /* memory back: the same context answers as before */
    CHECK_OK(sr_context_set_workspace_limit(gpu, 0));
    answers again = run_all();
    check_same_answers(&again, &want, "after the hog left");
    free_answers(&again);

    free_answers(&want);
    sr_matrix_free(index_m);
    sr_matrix_free(queries_m);
    sr_matrix_free(dense_queries);
    test_csr_free(&xi);
    test_csr_free(&xq);
    test_csr_free(&xd);
    sr_context_destroy(gpu);
    return test_finish("test_device_memory");
}
#endif
