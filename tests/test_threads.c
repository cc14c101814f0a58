/* Concurrent calls: 8 threads, each on its own context and then all on one shared context, run
 * SpGEMM, SDDMM, k-NN and the fused pattern and get the results of sequential calls: exactly on
 * the CPU (contexts of one thread, so every sum runs in one order); on CUDA, where SpGEMM and the
 * fused pattern sum with floating atomics in no fixed order, to 1e-12 relative, and exactly for
 * everything integral (patterns, neighbour indices). Then 8 threads search one index matrix at
 * once, racing to build the transpose it keeps after its first search (src/ops/distance_index.c),
 * and get the sequential neighbours. CPU backend, and CUDA when present. */
#include <pthread.h>

#include "test_util.h"

#define WORKERS 8

static test_csr data;
static sr_location where;
static sr_backend backend;

typedef struct {
    double mxm_sum, sddmm_sum, knn_sum, fused_sum;
    int64_t knn_index_sum, mxm_nnz;
    sr_status status;
    char message[256];
} results;

/* Runs the four operations on ctx and condenses each result to sums (exact: every run sums the
 * same values in the same order). */
static void run_once(sr_context ctx, results *r)
{
    memset(r, 0, sizeof *r);
    sr_matrix X = test_make_matrix_at(ctx, &data, where), C = NULL, P = NULL;
    const int64_t m = data.nrows, n = data.ncols, K = 8;
    double *A = malloc((size_t)(m * K) * sizeof(double)), *B = malloc((size_t)(n * K) * sizeof(double));
    double *dist = malloc((size_t)(m * 4) * sizeof(double)), *y = malloc((size_t)n * sizeof(double));
    double *w = malloc((size_t)n * sizeof(double)), *vals = malloc((size_t)(data.nnz + 1) * sizeof(double));
    int64_t *idx = malloc((size_t)(m * 4) * sizeof(int64_t));
    for (int64_t i = 0; i < m * K; i++)
        A[i] = (double)((i * 7) % 13) - 6.0;
    for (int64_t i = 0; i < n * K; i++)
        B[i] = (double)((i * 5) % 11) - 5.0;
    for (int64_t j = 0; j < n; j++)
        y[j] = (double)(j % 5) - 2.0;
    sr_dense Ad = sr_dense_view(A, m, K, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    sr_dense Bd = sr_dense_view(B, n, K, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    sr_dense Dd = sr_dense_view(dist, m, 4, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    sr_dense yv = sr_vector_view(y, n, SR_TYPE_FLOAT64, SR_HOST), wv = sr_vector_view(w, n, SR_TYPE_FLOAT64, SR_HOST);
    sr_dense vv = sr_vector_view(vals, data.nnz, SR_TYPE_FLOAT64, SR_HOST);
    sr_matrix XT = NULL;
    sr_status s = sr_matrix_transpose(ctx, X, &XT);
    if (s == SR_SUCCESS)
        s = sr_mxm(ctx, &C, NULL, SR_PLUS_TIMES, X, XT, NULL);
    if (s == SR_SUCCESS)
        s = sr_matrix_copy_to(ctx, C, SR_HOST, &P);
    if (s == SR_SUCCESS) {
        sr_matrix_info info;
        const void *cv;
        sr_matrix_get_info(P, &info);
        sr_matrix_csr_arrays(P, NULL, NULL, &cv);
        r->mxm_nnz = info.nnz;
        for (int64_t e = 0; e < info.nnz; e++)
            r->mxm_sum += ((const double *)cv)[e] * (double)(e % 7 + 1);
    }
    if (s == SR_SUCCESS)
        s = sr_sddmm_values(ctx, &vv, SR_PLUS_TIMES, 1.0, X, &Ad, &Bd, 0.5, NULL);
    for (int64_t e = 0; e < data.nnz && s == SR_SUCCESS; e++)
        r->sddmm_sum += vals[e] * (double)(e % 5 + 1);
    if (s == SR_SUCCESS)
        s = sr_knn(ctx, X, X, 4, SR_METRIC_COSINE, 0, idx, &Dd, NULL);
    for (int64_t e = 0; e < m * 4 && s == SR_SUCCESS; e++) {
        r->knn_sum += dist[e] * (double)(e % 3 + 1);
        r->knn_index_sum += idx[e] * (e % 3 + 1);
    }
    if (s == SR_SUCCESS)
        s = sr_fused_pattern(ctx, SR_FORM_XTVXY, &wv, 1.0, X, NULL, &yv, 0.0, NULL);
    for (int64_t j = 0; j < n && s == SR_SUCCESS; j++)
        r->fused_sum += w[j] * (double)(j % 4 + 1);
    r->status = s;
    if (s != SR_SUCCESS)
        snprintf(r->message, sizeof r->message, "%s", sr_last_error());
    sr_matrix_free(X), sr_matrix_free(XT), sr_matrix_free(C), sr_matrix_free(P);
    free(A), free(B), free(dist), free(y), free(w), free(vals), free(idx);
}

static sr_context new_context(void)
{
    sr_context_options o = sr_context_options_default();
    o.backend = backend;
    o.threads = 1;
    sr_context ctx = NULL;
    if (sr_context_create(&ctx, &o) != SR_SUCCESS) {
        fprintf(stderr, "cannot make a context: %s\n", sr_last_error());
        exit(2);
    }
    return ctx;
}

typedef struct {
    sr_context shared; /* NULL: the worker makes its own */
    results out;
} job;

static void *worker(void *arg)
{
    job *j = arg;
    sr_context ctx = j->shared ? j->shared : new_context();
    for (int round = 0; round < 3; round++)
        run_once(ctx, &j->out);
    if (!j->shared)
        sr_context_destroy(ctx);
    return NULL;
}

static bool close_sum(double a, double b);

/* k-NN sums of searches of `index` (the same condensing as run_once): cosine, and euclidean,
 * whose host search keeps an order of the index's rows beside its norms (a second cache). */
static void search_once(sr_context ctx, sr_matrix index, results *r)
{
    const int64_t m = data.nrows;
    double *dist = malloc((size_t)(m * 4) * sizeof(double));
    int64_t *idx = malloc((size_t)(m * 4) * sizeof(int64_t));
    sr_dense Dd = sr_dense_view(dist, m, 4, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    memset(r, 0, sizeof *r);
    const sr_metric metrics[2] = {SR_METRIC_COSINE, SR_METRIC_L2};
    const int searches = where == SR_HOST ? 2 : 1; /* the device keeps no row order */
    for (int t = 0; t < searches && r->status == SR_SUCCESS; t++) {
        r->status = sr_knn(ctx, index, index, 4, metrics[t], 0, idx, &Dd, NULL);
        for (int64_t e = 0; e < m * 4 && r->status == SR_SUCCESS; e++) {
            r->knn_sum += dist[e] * (double)(e % 3 + 1 + t);
            r->knn_index_sum += idx[e] * (e % 3 + 1 + t);
        }
    }
    if (r->status != SR_SUCCESS)
        snprintf(r->message, sizeof r->message, "%s", sr_last_error());
    free(dist), free(idx);
}

typedef struct {
    sr_context shared;
    sr_matrix index;
    results out;
} search_job;

static void *search_worker(void *arg)
{
    search_job *j = arg;
    sr_context ctx = j->shared ? j->shared : new_context();
    for (int round = 0; round < 3; round++)
        search_once(ctx, j->index, &j->out);
    if (!j->shared)
        sr_context_destroy(ctx);
    return NULL;
}

/* 8 threads search one index (own contexts, then the index's): the first searches race to keep
 * its transpose, norms and row order; every thread must find the neighbours a sequential search
 * of a fresh copy finds. */
static void shared_index(sr_context ctx)
{
    results want;
    sr_matrix fresh = test_make_matrix_at(ctx, &data, where);
    search_once(ctx, fresh, &want);
    sr_matrix_free(fresh);
    CHECK(want.status == SR_SUCCESS, "sequential search: %s", want.message);
    const results *sequential = &want;
    for (int shared = 0; shared < 2; shared++) {
        sr_matrix index = test_make_matrix_at(ctx, &data, where); /* fresh: nothing kept yet */
        search_job jobs[WORKERS];
        pthread_t threads[WORKERS];
        for (int t = 0; t < WORKERS; t++) {
            jobs[t].shared = shared ? ctx : NULL;
            jobs[t].index = index;
            CHECK(pthread_create(&threads[t], NULL, search_worker, &jobs[t]) == 0, "pthread_create failed");
        }
        for (int t = 0; t < WORKERS; t++)
            pthread_join(threads[t], NULL);
        for (int t = 0; t < WORKERS; t++)
            CHECK(jobs[t].out.status == SR_SUCCESS && close_sum(jobs[t].out.knn_sum, sequential->knn_sum) &&
                      jobs[t].out.knn_index_sum == sequential->knn_index_sum,
                  "one index, %s contexts, thread %d: %s; knn %.17g vs %.17g", shared ? "the shared" : "own", t,
                  jobs[t].out.message, jobs[t].out.knn_sum, sequential->knn_sum);
        sr_matrix_free(index);
    }
}

/* Exact on the CPU; on CUDA within the rounding of a reordered atomic sum. */
static bool close_sum(double a, double b)
{
    const double tolerance = backend == SR_BACKEND_CPU ? 0.0 : 1e-12;
    return fabs(a - b) <= tolerance * fmax(fabs(a), fabs(b));
}

static bool same(const results *a, const results *b)
{
    return a->status == b->status && close_sum(a->mxm_sum, b->mxm_sum) && a->mxm_nnz == b->mxm_nnz &&
           close_sum(a->sddmm_sum, b->sddmm_sum) && close_sum(a->knn_sum, b->knn_sum) &&
           a->knn_index_sum == b->knn_index_sum && close_sum(a->fused_sum, b->fused_sum);
}

static void run_backend(void)
{
    sr_context ctx = new_context();
    results sequential;
    run_once(ctx, &sequential);
    CHECK(sequential.status == SR_SUCCESS, "sequential run: %s", sequential.message);
    CHECK(sequential.mxm_nnz > 0 && sequential.mxm_sum != 0 && sequential.sddmm_sum != 0 && sequential.knn_sum != 0 &&
              sequential.knn_index_sum != 0 && sequential.fused_sum != 0,
          "the sequential run computed nothing to compare");
    for (int shared = 0; shared < 2; shared++) {
        job jobs[WORKERS];
        pthread_t threads[WORKERS];
        for (int t = 0; t < WORKERS; t++) {
            jobs[t].shared = shared ? ctx : NULL;
            CHECK(pthread_create(&threads[t], NULL, worker, &jobs[t]) == 0, "pthread_create failed");
        }
        for (int t = 0; t < WORKERS; t++)
            pthread_join(threads[t], NULL);
        for (int t = 0; t < WORKERS; t++)
            CHECK(same(&jobs[t].out, &sequential),
                  "%s context, thread %d: results differ from the sequential run (%s; mxm %.17g vs %.17g, "
                  "sddmm %.17g vs %.17g, knn %.17g vs %.17g, fused %.17g vs %.17g)",
                  shared ? "shared" : "own", t, jobs[t].out.message, jobs[t].out.mxm_sum, sequential.mxm_sum,
                  jobs[t].out.sddmm_sum, sequential.sddmm_sum, jobs[t].out.knn_sum, sequential.knn_sum,
                  jobs[t].out.fused_sum, sequential.fused_sum);
    }
    shared_index(ctx);
    sr_context_destroy(ctx);
}

int main(void)
{
    test_seed("test_threads");
    data = test_random_csr(300, 120, 8, SR_TYPE_FLOAT64);
    backend = SR_BACKEND_CPU;
    where = SR_HOST;
    run_backend();
    sr_context probe = NULL;
    sr_context_options o = sr_context_options_default();
    o.backend = SR_BACKEND_CUDA;
    if (sr_context_create(&probe, &o) == SR_SUCCESS) {
        sr_context_destroy(probe);
        backend = SR_BACKEND_CUDA;
        where = SR_DEVICE;
        run_backend();
    } else {
        printf("device part skipped: %s\n", sr_last_error());
    }
    test_csr_free(&data);
    return test_finish("test_threads");
}
