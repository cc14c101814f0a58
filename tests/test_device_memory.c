/* Device memory running out: batched calls (k-NN, pairwise distances into host memory, radius)
 * give the same answers under a tiny workspace limit and when a memory hog leaves too little
 * device memory for the batch the limit allows (they retry in smaller batches); with no device
 * memory left at all they fail with SR_ERROR_DEVICE_OUT_OF_MEMORY, outputs untouched, and the
 * context works again once memory is back. SpGEMM beside a hog runs its dense rows in smaller
 * waves, SDDMM goes without its kept entry order and the fused SDDMM→SpMM's whole tiles cut their
 * panels into fewer column ranges. Skips (exit 77) without CUDA or a GPU. */
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

/* Two host float32 matrices: the same pattern, values equal up to rounding (close_enough). */
static bool matrices_close(sr_matrix got, sr_matrix want)
{
    sr_matrix_info gi, wi;
    sr_matrix_get_info(got, &gi);
    sr_matrix_get_info(want, &wi);
    const int64_t *grp, *wrp;
    const int32_t *gci, *wci;
    const void *gv, *wv;
    CHECK_OK(sr_matrix_csr_arrays(got, &grp, &gci, &gv));
    CHECK_OK(sr_matrix_csr_arrays(want, &wrp, &wci, &wv));
    bool same = gi.nrows == wi.nrows && gi.nnz == wi.nnz &&
                memcmp(grp, wrp, (size_t)(gi.nrows + 1) * sizeof(int64_t)) == 0 &&
                memcmp(gci, wci, (size_t)gi.nnz * sizeof(int32_t)) == 0;
    for (int64_t e = 0; same && e < gi.nnz; e++)
        same = close_enough(((const float *)gv)[e], ((const float *)wv)[e]);
    if (!same)
        printf("  %lld x %lld with %lld entries, expected %lld\n", (long long)gi.nrows, (long long)gi.ncols,
               (long long)gi.nnz, (long long)wi.nnz);
    return same;
}

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
    if (got->R && want->R)
        CHECK(matrices_close(got->R, want->R), "%s: radius neighbours differ from the unconstrained run", when);
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

static sr_matrix device_product_on_host(sr_matrix A, sr_matrix B, sr_status *status)
{
    sr_matrix C = NULL, H = NULL;
    *status = sr_mxm(gpu, &C, NULL, SR_PLUS_TIMES, A, B, NULL);
    if (*status == SR_SUCCESS)
        CHECK_OK(sr_matrix_copy_to(gpu, C, SR_HOST, &H));
    sr_matrix_free(C);
    return H;
}

static float *device_floats(int64_t n, bool random)
{
    float *host = malloc((size_t)n * sizeof(float)), *dev = NULL;
    for (int64_t i = 0; i < n; i++)
        host[i] = random ? (float)test_uniform() - 0.5f : 0.0f;
    CHECK(cudaMalloc((void **)&dev, (size_t)n * sizeof(float)) == cudaSuccess, "cudaMalloc of %lld floats", (long long)n);
    cudaMemcpy(dev, host, (size_t)n * sizeof(float), cudaMemcpyHostToDevice);
    free(host);
    return dev;
}

static int64_t values_apart(const float *got, const float *want, int64_t n)
{
    int64_t bad = 0;
    for (int64_t e = 0; e < n; e++)
        bad += !close_enough(got[e], want[e]);
    return bad;
}

/* SpGEMM and SDDMM beside a hog. SpGEMM's rows with the most products use dense accumulator rows
 * over all of B's columns, a wave of up to two per multiprocessor: a wave that does not fit goes in
 * smaller waves. SDDMM's entry orders (kept with S to speed later calls) that do not fit are
 * done without. Both give the unconstrained answers. */
static void products_beside_a_hog(void)
{
    enum { WIDE = 4000000, SN = 200000, SK = 32 };
    const size_t leave = (size_t)48 << 20;
    /* A: rows up to ~3,000 entries; B: 4,000,000 columns, ~25 entries a row */
    test_csr xa = test_random_csr(400, 3000, 60, SR_TYPE_FLOAT32), xb = test_random_csr(3000, WIDE, 25, SR_TYPE_FLOAT32);
    int64_t dense_rows = 0; /* rows with more than 8,192 products: the dense bins */
    for (int64_t i = 0; i < xa.nrows; i++) {
        int64_t products = 0;
        for (int64_t e = xa.rowptr[i]; e < xa.rowptr[i + 1]; e++)
            products += xb.rowptr[xa.colind[e] + 1] - xb.rowptr[xa.colind[e]];
        dense_rows += products > 8192;
    }
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    const int64_t wave = dense_rows < 2 * sms ? dense_rows : 2 * sms;
    const double wave_bytes = (double)wave * WIDE * (4.0 + 1.0 / 8.0);
    printf("SpGEMM: %lld dense rows; a full wave of %lld accumulator rows needs %.0f MiB, the hog leaves %zu MiB\n",
           (long long)dense_rows, (long long)wave, wave_bytes / 1048576.0, leave >> 20);
    CHECK(wave_bytes > 2.0 * (double)leave, "the SpGEMM case no longer needs smaller waves (%lld dense rows)",
          (long long)dense_rows);
    sr_matrix A = test_make_matrix_at(gpu, &xa, SR_DEVICE), B = test_make_matrix_at(gpu, &xb, SR_DEVICE);
    sr_status st;
    sr_matrix want = device_product_on_host(A, B, &st);
    CHECK(st == SR_SUCCESS, "SpGEMM unconstrained: %s", sr_last_error());

    /* SDDMM: S 200,000 x 200,000 with ~30 entries a row, K = 32, row panels forced (their entry
     * order is built whatever the reuse). S_warm builds its order before the hog; S_cold, the
     * same matrix, meets the hog without one. */
    setenv("SPARSERING_SDDMM_PANELS", "1", 1);
    test_csr xs = test_random_csr(SN, SN, 30, SR_TYPE_FLOAT32);
    sr_matrix S_warm = test_make_matrix_at(gpu, &xs, SR_DEVICE), S_cold = test_make_matrix_at(gpu, &xs, SR_DEVICE);
    float *dA = device_floats((int64_t)SN * SK, true), *dB = device_floats((int64_t)SN * SK, true);
    float *dv = device_floats(xs.nnz, false);
    sr_dense Av = sr_dense_view(dA, SN, SK, SR_TYPE_FLOAT32, SR_ROW_MAJOR, SR_DEVICE);
    sr_dense Bv = sr_dense_view(dB, SN, SK, SR_TYPE_FLOAT32, SR_ROW_MAJOR, SR_DEVICE);
    sr_dense vv = sr_dense_view(dv, xs.nnz, 1, SR_TYPE_FLOAT32, SR_ROW_MAJOR, SR_DEVICE);
    float *want_v = malloc((size_t)xs.nnz * sizeof(float)), *got_v = malloc((size_t)xs.nnz * sizeof(float));
    CHECK_OK(sr_sddmm_values(gpu, &vv, SR_PLUS_TIMES, 1.0, S_warm, &Av, &Bv, 0.0, NULL));
    cudaMemcpy(want_v, dv, (size_t)xs.nnz * sizeof(float), cudaMemcpyDeviceToHost);
    /* the panel order keeps 8 bytes an entry and needs 20 more while it is built (sort keys) */
    printf("SDDMM: %lld entries; building the entry order kept with S needs %.0f MiB\n", (long long)xs.nnz,
           (double)xs.nnz * 28.0 / 1048576.0);
    CHECK((double)xs.nnz * 28.0 > 2.0 * (double)leave, "the SDDMM case no longer outgrows the hog's leftover");

    void **hog = hog_device(leave);
    printf("hog: %.0f MiB left free\n", (double)free_now() / 1048576.0);
    sr_matrix got = device_product_on_host(A, B, &st);
    cudaMemset(dv, 0, (size_t)xs.nnz * sizeof(float));
    const sr_status sddmm_st = sr_sddmm_values(gpu, &vv, SR_PLUS_TIMES, 1.0, S_cold, &Av, &Bv, 0.0, NULL);
    release_hog(hog);
    CHECK(st == SR_SUCCESS, "SpGEMM beside the hog: %s (%s)", sr_status_name(st), sr_last_error());
    if (got && want)
        CHECK(matrices_close(got, want), "SpGEMM beside the hog differs from the unconstrained product");
    CHECK(sddmm_st == SR_SUCCESS, "SDDMM beside the hog: %s (%s)", sr_status_name(sddmm_st), sr_last_error());
    cudaMemcpy(got_v, dv, (size_t)xs.nnz * sizeof(float), cudaMemcpyDeviceToHost);
    int64_t bad = values_apart(got_v, want_v, xs.nnz);
    CHECK(bad == 0, "SDDMM beside the hog: %lld of %lld values differ", (long long)bad, (long long)xs.nnz);
    /* memory back: S_cold builds its order now, same values */
    CHECK_OK(sr_sddmm_values(gpu, &vv, SR_PLUS_TIMES, 1.0, S_cold, &Av, &Bv, 0.0, NULL));
    cudaMemcpy(got_v, dv, (size_t)xs.nnz * sizeof(float), cudaMemcpyDeviceToHost);
    bad = values_apart(got_v, want_v, xs.nnz);
    CHECK(bad == 0, "SDDMM after the hog: %lld values differ", (long long)bad);
    unsetenv("SPARSERING_SDDMM_PANELS");

    free(want_v);
    free(got_v);
    cudaFree(dA);
    cudaFree(dB);
    cudaFree(dv);
    sr_matrix_free(got);
    sr_matrix_free(want);
    sr_matrix_free(A);
    sr_matrix_free(B);
    sr_matrix_free(S_warm);
    sr_matrix_free(S_cold);
    test_csr_free(&xa);
    test_csr_free(&xb);
    test_csr_free(&xs);
}

/* The fused SDDMM→SpMM by whole tiles beside a hog: a panel of S cut into column ranges leaves
 * each range's sums in scratch (ranges x rows x (p + 2) floats); where that does not fit, fewer
 * and wider ranges give the same sums to rounding, plain and softmax. S 1,024 x 131,072 with ~30
 * entries a row, tiles forced, K = 32, p = 128. */
static void fused_tiles_beside_a_hog(void)
{
    enum { FM = 1024, FN = 131072, FK = 32, FP = 128 };
    const size_t leave = (size_t)6 << 20;
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    /* the launcher's ranges: four work items for each block the chip holds (one an SM at p = 128),
     * over the 8 panels */
    const double ranges = (4.0 * sms + 7) / 8, scratch = ranges * FM * (FP + 2) * 4.0;
    printf("fused tiles: ~%.0f column ranges a panel need %.0f MiB of scratch, the hog leaves %zu MiB\n", ranges,
           scratch / 1048576.0, leave >> 20);
    CHECK(scratch > 2.0 * (double)leave, "the fused case no longer outgrows the hog's leftover");
    setenv("SPARSERING_SDDMM_GEMM", "1", 1);
    test_csr xs = test_random_csr(FM, FN, 30, SR_TYPE_FLOAT32);
    sr_matrix S = test_make_matrix_at(gpu, &xs, SR_DEVICE);
    float *dA = device_floats((int64_t)FM * FK, true), *dB = device_floats((int64_t)FN * FK, true);
    float *dV = device_floats((int64_t)FN * FP, true), *dO = device_floats((int64_t)FM * FP, false);
    sr_dense Av = sr_dense_view(dA, FM, FK, SR_TYPE_FLOAT32, SR_ROW_MAJOR, SR_DEVICE);
    sr_dense Bv = sr_dense_view(dB, FN, FK, SR_TYPE_FLOAT32, SR_ROW_MAJOR, SR_DEVICE);
    sr_dense Vv = sr_dense_view(dV, FN, FP, SR_TYPE_FLOAT32, SR_ROW_MAJOR, SR_DEVICE);
    sr_dense Ov = sr_dense_view(dO, FM, FP, SR_TYPE_FLOAT32, SR_ROW_MAJOR, SR_DEVICE);
    const size_t bytes = (size_t)FM * FP * sizeof(float);
    float *want = malloc(bytes), *got = malloc(bytes);
    for (int softmax = 0; softmax < 2; softmax++) {
        const sr_row_normalize norm = softmax ? SR_NORMALIZE_SOFTMAX : SR_NORMALIZE_NONE;
        CHECK_OK(sr_sddmm_spmm(gpu, &Ov, 0.2, S, &Av, &Bv, &Vv, norm, NULL));
        cudaMemcpy(want, dO, bytes, cudaMemcpyDeviceToHost);
        cudaMemset(dO, 0, bytes);
        void **hog = hog_device(leave);
        const sr_status st = sr_sddmm_spmm(gpu, &Ov, 0.2, S, &Av, &Bv, &Vv, norm, NULL);
        const size_t left = free_now();
        release_hog(hog);
        CHECK(st == SR_SUCCESS, "fused tiles (%s) beside the hog (%.0f MiB free): %s (%s)", softmax ? "softmax" : "plain",
              (double)left / 1048576.0, sr_status_name(st), sr_last_error());
        cudaMemcpy(got, dO, bytes, cudaMemcpyDeviceToHost);
        const int64_t bad = values_apart(got, want, (int64_t)FM * FP);
        CHECK(bad == 0, "fused tiles (%s) beside the hog: %lld of %lld values differ", softmax ? "softmax" : "plain",
              (long long)bad, (long long)FM * FP);
    }
    unsetenv("SPARSERING_SDDMM_GEMM");
    free(want);
    free(got);
    cudaFree(dA);
    cudaFree(dB);
    cudaFree(dV);
    cudaFree(dO);
    sr_matrix_free(S);
    test_csr_free(&xs);
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
    products_beside_a_hog();
    fused_tiles_beside_a_hog();

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
