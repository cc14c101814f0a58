/* Calls spread over the GPUs of one context by row blocks (multi_gpu.h). Each GPU's share runs on
 * its own thread through its one-GPU context, so the GPUs work at once; the bytes between them move
 * with NCCL (src/cuda/cuda_multi.cu). */
#include "multi_gpu.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/memory.h"
#include "../core/settings.h"
#include "../cuda/cuda.h"
#include "../semiring/metric.h"
#include "distance_prep.h"
#include "ops_common.h"

bool sr_multi_applies(const struct sr_context_s *ctx, const struct sr_matrix_s *A)
{
    return ctx->ndevices > 1 && A != NULL && A->location == SR_DEVICE;
}

/* ------------------------------------------------------------------ a step on every GPU at once */

typedef sr_status (*gpu_step)(int g, void *arg);

typedef struct gpu_job {
    gpu_step fn;
    void *arg;
    int g;
    sr_status status;
    char message[512]; /* the worker's error message (they are per thread) */
} gpu_job;

static void *run_job(void *p)
{
    gpu_job *j = p;
    j->status = j->fn(j->g, j->arg);
    if (j->status != SR_SUCCESS)
        snprintf(j->message, sizeof j->message, "%s", sr_last_error());
    return NULL;
}

/* fn(g, arg) for every GPU g, each on its own thread (the first GPU's on the caller's); the first
 * failure is the answer, naming its GPU. */
static sr_status on_every_gpu(const struct sr_context_s *ctx, gpu_step fn, void *arg)
{
    const int n = ctx->ndevices;
    gpu_job jobs[SR_MAX_DEVICES];
    pthread_t threads[SR_MAX_DEVICES];
    bool started[SR_MAX_DEVICES] = {false};
    for (int g = 0; g < n; g++)
        jobs[g] = (gpu_job){fn, arg, g, SR_SUCCESS, ""};
    for (int g = 1; g < n; g++)
        started[g] = pthread_create(&threads[g], NULL, run_job, &jobs[g]) == 0;
    run_job(&jobs[0]);
    for (int g = 1; g < n; g++) {
        if (started[g])
            pthread_join(threads[g], NULL);
        else
            run_job(&jobs[g]); /* no thread to be had: in turn */
    }
    for (int g = 0; g < n; g++)
        if (jobs[g].status != SR_SUCCESS)
            return sr_error(jobs[g].status, "GPU %d of the context (CUDA device %d): %s", g, ctx->devices[g],
                            jobs[g].message);
    return SR_SUCCESS;
}

/* Buffers allocated in one stream's order (each context's pool) are usable from another stream
 * (the moves between GPUs) once that stream has passed the allocation: every stream of ctx waits. */
static sr_status settle(struct sr_context_s *ctx)
{
    return sr_context_synchronize(ctx);
}

/* ------------------------------------------------------------------ row blocks */

/* row0[0..n]: n row blocks of about equal weight by the prefix w[0..nrows] (nondecreasing, w[0] = 0),
 * or of equal rows when w is NULL. */
static void cut_rows(const int64_t *w, int64_t nrows, int n, int64_t *row0)
{
    row0[0] = 0;
    row0[n] = nrows;
    for (int g = 1; g < n; g++) {
        int64_t cut = nrows / n * g + nrows % n * g / n;
        if (w != NULL) {
            const int64_t total = w[nrows];
            const int64_t target = total / n * g + total % n * g / n;
            int64_t lo = 0, hi = nrows; /* the first row whose prefix reaches the target */
            while (lo < hi) {
                const int64_t mid = lo + (hi - lo) / 2;
                if (w[mid] < target)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            cut = lo;
        }
        row0[g] = cut < row0[g - 1] ? row0[g - 1] : cut;
    }
}

/* A's row pointers on the host (nrows + 1). */
static sr_status host_rowptr(struct sr_context_s *ctx, const struct sr_matrix_s *A, int64_t **out)
{
    SR_TRY(sr_mem_alloc_array(ctx, SR_HOST, (size_t)A->nrows + 1, sizeof(int64_t), (void **)out));
    sr_status s = sr_mem_copy(ctx, *out, SR_HOST, A->rowptr, SR_DEVICE, sr_matrix_rowptr_bytes(A));
    if (s != SR_SUCCESS) {
        sr_mem_free(ctx, SR_HOST, *out, sr_matrix_rowptr_bytes(A));
        *out = NULL;
    }
    return s;
}

static void free_all(struct sr_matrix_s **M, int n)
{
    for (int g = 0; g < n; g++) {
        sr_matrix_destroy(M[g]);
        M[g] = NULL;
    }
}

/* blocks[g] = rows [row0[g], row0[g+1]) of A (on the first GPU) on GPU g; rowptr is A's on the host. */
static sr_status make_blocks(struct sr_context_s *ctx, const struct sr_matrix_s *A, const int64_t *row0,
                             const int64_t *rowptr, struct sr_matrix_s **blocks)
{
    const int n = ctx->ndevices;
    const size_t vs = A->type == SR_TYPE_BOOL ? 0 : sr_type_size(A->type);
    sr_cuda_move moves[3 * SR_MAX_DEVICES];
    int m = 0;
    sr_status s = SR_SUCCESS;
    for (int g = 0; g < n && s == SR_SUCCESS; g++) {
        const int64_t r0 = row0[g], rows = row0[g + 1] - r0, e0 = rowptr[r0], nnz = rowptr[r0 + rows] - e0;
        s = sr_matrix_alloc(ctx->peers[g], rows, A->ncols, nnz, A->type, SR_DEVICE, &blocks[g]);
        if (s != SR_SUCCESS)
            break;
        moves[m++] = (sr_cuda_move){0, g, A->rowptr + r0, blocks[g]->rowptr, (size_t)(rows + 1) * sizeof(int64_t)};
        moves[m++] = (sr_cuda_move){0, g, A->colind + e0, blocks[g]->colind, (size_t)nnz * sizeof(int32_t)};
        if (vs)
            moves[m++] = (sr_cuda_move){0, g, (const char *)A->values + (size_t)e0 * vs, blocks[g]->values,
                                        (size_t)nnz * vs};
    }
    if (s == SR_SUCCESS)
        s = settle(ctx);
    if (s == SR_SUCCESS)
        s = sr_cuda_multi_moves(ctx, moves, m);
    for (int g = 0; g < n && s == SR_SUCCESS; g++)
        s = sr_cuda_shift(ctx->peers[g], blocks[g]->rowptr, row0[g + 1] - row0[g] + 1, -rowptr[row0[g]]);
    if (s != SR_SUCCESS)
        free_all(blocks, n);
    return s;
}

/* copies[g] = M (on the first GPU) on GPU g, for g >= 1 (broadcast); copies[0] stays NULL. */
static sr_status make_copies(struct sr_context_s *ctx, const struct sr_matrix_s *M, struct sr_matrix_s **copies)
{
    const int n = ctx->ndevices;
    sr_status s = SR_SUCCESS;
    copies[0] = NULL;
    for (int g = 1; g < n && s == SR_SUCCESS; g++)
        s = sr_matrix_alloc(ctx->peers[g], M->nrows, M->ncols, M->nnz, M->type, SR_DEVICE, &copies[g]);
    if (s == SR_SUCCESS)
        s = settle(ctx);
    void *dst[SR_MAX_DEVICES] = {NULL};
    for (int g = 1; g < n && s == SR_SUCCESS; g++)
        dst[g] = copies[g]->rowptr;
    if (s == SR_SUCCESS)
        s = sr_cuda_multi_broadcast(ctx, M->rowptr, dst, sr_matrix_rowptr_bytes(M));
    for (int g = 1; g < n && s == SR_SUCCESS; g++)
        dst[g] = copies[g]->colind;
    if (s == SR_SUCCESS)
        s = sr_cuda_multi_broadcast(ctx, M->colind, dst, (size_t)M->nnz * sizeof(int32_t));
    for (int g = 1; g < n && s == SR_SUCCESS; g++)
        dst[g] = copies[g]->values;
    if (s == SR_SUCCESS && M->type != SR_TYPE_BOOL)
        s = sr_cuda_multi_broadcast(ctx, M->values, dst, (size_t)M->nnz * sr_type_size(M->type));
    if (s != SR_SUCCESS)
        free_all(copies, n);
    return s;
}

/* What a matrix keeps from its first call on a context over several GPUs: its row blocks (about
 * equal nonzeros, or equal rows), and its copies on the other GPUs once a call asked for them
 * (all-vs-all k-NN: the queries are the index). */
typedef struct sr_shards {
    const struct sr_context_s *owner;
    int n;
    int devices[SR_MAX_DEVICES];
    sr_partition partition;
    int64_t row0[SR_MAX_DEVICES + 1];
    int64_t entry0[SR_MAX_DEVICES + 1];
    struct sr_matrix_s *block[SR_MAX_DEVICES];
    struct sr_matrix_s *copy[SR_MAX_DEVICES];
    bool copied;
} sr_shards;

static pthread_mutex_t shards_lock = PTHREAD_MUTEX_INITIALIZER;

static void free_shards(struct sr_matrix_s *A)
{
    sr_shards *sh = A->shards;
    if (sh == NULL)
        return;
    free_all(sh->block, sh->n);
    free_all(sh->copy, sh->n);
    free(sh);
    A->shards = NULL;
}

static bool shards_fit(const sr_shards *sh, const struct sr_context_s *ctx)
{
    return sh->owner == ctx && sh->n == ctx->ndevices && sh->partition == ctx->partition &&
           memcmp(sh->devices, ctx->devices, sizeof sh->devices) == 0;
}

static sr_status build_shards(struct sr_context_s *ctx, struct sr_matrix_s *A, sr_shards **out)
{
    sr_shards *sh = sr_calloc(1, sizeof *sh);
    if (sh == NULL)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for a matrix's row blocks");
    sh->owner = ctx;
    sh->n = ctx->ndevices;
    memcpy(sh->devices, ctx->devices, sizeof sh->devices);
    sh->partition = ctx->partition;
    int64_t *rowptr = NULL;
    sr_status s = host_rowptr(ctx, A, &rowptr);
    if (s == SR_SUCCESS) {
        cut_rows(ctx->partition == SR_PARTITION_ROWS ? NULL : rowptr, A->nrows, sh->n, sh->row0);
        for (int g = 0; g <= sh->n; g++)
            sh->entry0[g] = rowptr[sh->row0[g]];
        s = make_blocks(ctx, A, sh->row0, rowptr, sh->block);
    }
    sr_mem_free(ctx, SR_HOST, rowptr, sr_matrix_rowptr_bytes(A));
    if (s != SR_SUCCESS) {
        free(sh);
        return s;
    }
    *out = sh;
    return SR_SUCCESS;
}

/* A's row blocks for ctx (and, with copies, its copies), made on first use and kept with A. */
static sr_status shards_of(struct sr_context_s *ctx, struct sr_matrix_s *A, bool copies, sr_shards **out)
{
    pthread_mutex_lock(&shards_lock);
    sr_status s = SR_SUCCESS;
    sr_shards *sh = A->shards;
    if (sh != NULL && !shards_fit(sh, ctx)) {
        free_shards(A);
        sh = NULL;
    }
    if (sh == NULL && (s = build_shards(ctx, A, &sh)) == SR_SUCCESS) {
        A->shards = sh;
        A->free_shards = free_shards;
    }
    if (s == SR_SUCCESS && copies && !sh->copied && (s = make_copies(ctx, A, sh->copy)) == SR_SUCCESS)
        sh->copied = true;
    pthread_mutex_unlock(&shards_lock);
    *out = sh;
    return s;
}

/* The queries on every GPU: qs[0] is the caller's; the others kept with the index when they are
 * the index, else made for this call (own[], to free). */
static sr_status queries_everywhere(struct sr_context_s *ctx, struct sr_matrix_s *index, struct sr_matrix_s *queries,
                                    sr_shards **sh, struct sr_matrix_s **qs, struct sr_matrix_s **own)
{
    SR_TRY(shards_of(ctx, index, queries == index, sh));
    if (queries != index)
        SR_TRY(make_copies(ctx, queries, own));
    for (int g = 0; g < ctx->ndevices; g++)
        qs[g] = g == 0 ? queries : queries == index ? (*sh)->copy[g] : own[g];
    return SR_SUCCESS;
}

/* ------------------------------------------------------------------ k-NN */

typedef struct knn_job {
    struct sr_context_s *ctx;
    const sr_shards *sh;
    struct sr_matrix_s *const *qs;
    int64_t q0, rows;
    sr_metric metric;
    double metric_arg;
    sr_type type;
    sr_precision precision;
    int64_t k_of[SR_MAX_DEVICES];
    int64_t *idx[SR_MAX_DEVICES];
    void *dist[SR_MAX_DEVICES];
} knn_job;

static sr_status knn_on_gpu(int g, void *arg)
{
    const knn_job *j = arg;
    struct sr_context_s *peer = j->ctx->peers[g];
    if (j->k_of[g] == 0 || j->rows == 0)
        return SR_SUCCESS;
    struct sr_matrix_s *Q = j->qs[g], *chunk = NULL;
    if (j->rows != Q->nrows)
        SR_TRY(sr_extract(peer, &chunk, Q, j->q0, 0, j->rows, Q->ncols));
    sr_dense view = sr_dense_view(j->dist[g], j->rows, j->k_of[g], j->type, SR_ROW_MAJOR, SR_DEVICE);
    const sr_knn_options o = {NULL, NULL, j->precision};
    sr_status s = sr_knn(peer, j->sh->block[g], chunk ? chunk : Q, j->k_of[g], j->metric, j->metric_arg, j->idx[g],
                         &view, &o);
    sr_matrix_destroy(chunk);
    return s;
}

/* Query rows a round: the GPUs' candidates (on their GPUs and gathered on the first) under 256 MiB,
 * and a dozen rounds at least when progress is reported. */
static int64_t knn_round_rows(int n, int64_t nq, int64_t k, size_t es, const sr_knn_options *options)
{
    const size_t per_row = (size_t)n * (size_t)k * (es + sizeof(int64_t)) * 2;
    int64_t b = (int64_t)(((size_t)256 << 20) / per_row);
    if (options && options->progress && b > (nq + 11) / 12)
        b = (nq + 11) / 12;
    return b < 1 ? 1 : b > nq ? nq : b;
}

typedef struct knn_buffers {
    int64_t *cidx, *s_idx;
    void *cdist, *s_dist;
    size_t c_elems, s_elems;
} knn_buffers;

static void free_knn_buffers(struct sr_context_s *ctx, knn_job *j, knn_buffers *bf, int64_t b, size_t es)
{
    for (int g = 0; g < ctx->ndevices; g++) {
        sr_mem_free(ctx->peers[g], SR_DEVICE, j->idx[g], (size_t)b * (size_t)j->k_of[g] * sizeof(int64_t));
        sr_mem_free(ctx->peers[g], SR_DEVICE, j->dist[g], (size_t)b * (size_t)j->k_of[g] * es);
    }
    sr_mem_free(ctx, SR_DEVICE, bf->cidx, bf->c_elems * sizeof(int64_t));
    sr_mem_free(ctx, SR_DEVICE, bf->cdist, bf->c_elems * es);
    sr_mem_free(ctx, SR_DEVICE, bf->s_idx, bf->s_elems * sizeof(int64_t));
    sr_mem_free(ctx, SR_DEVICE, bf->s_dist, bf->s_elems * es);
}

/* One round: every GPU's k nearest of rows [q0, q0 + rows), gathered on the first GPU and merged
 * into the caller's arrays. */
static sr_status knn_round(struct sr_context_s *ctx, knn_job *j, knn_buffers *bf, int64_t b, int64_t k,
                           int64_t *indices, const sr_dense *distances)
{
    const int n = ctx->ndevices;
    const size_t es = sr_type_size(j->type);
    SR_TRY(on_every_gpu(ctx, knn_on_gpu, j));
    sr_cuda_move moves[2 * SR_MAX_DEVICES];
    int m = 0;
    sr_topk_parts parts = {.n = n, .part_stride = b * k};
    for (int g = 0; g < n; g++) {
        const size_t count = (size_t)j->rows * (size_t)j->k_of[g];
        moves[m++] = (sr_cuda_move){g, 0, j->idx[g], bf->cidx + (size_t)g * (size_t)b * (size_t)k,
                                    count * sizeof(int64_t)};
        moves[m++] = (sr_cuda_move){g, 0, j->dist[g], (char *)bf->cdist + (size_t)g * (size_t)b * (size_t)k * es,
                                    count * es};
        parts.k_of[g] = j->k_of[g];
        parts.row0[g] = j->sh->row0[g];
    }
    SR_TRY(sr_cuda_multi_moves(ctx, moves, m));
    const bool largest = sr_metric_is_similarity(j->metric);
    if (distances->location == SR_DEVICE) {
        sr_strided_out out = sr_distance_strided_rows(distances, j->q0);
        return sr_cuda_merge_topk(ctx, bf->cidx, bf->cdist, &parts, j->rows, k, j->type, largest,
                                  indices + j->q0 * k, &out);
    }
    sr_dense view = sr_dense_view(bf->s_dist, j->rows, k, j->type, distances->layout, SR_DEVICE);
    sr_strided_out out = sr_distance_strided_rows(&view, 0);
    SR_TRY(sr_cuda_merge_topk(ctx, bf->cidx, bf->cdist, &parts, j->rows, k, j->type, largest, bf->s_idx, &out));
    SR_TRY(sr_distance_copy_rows_out(ctx, distances, j->q0, bf->s_dist, SR_DEVICE, j->rows));
    return sr_mem_copy(ctx, indices + j->q0 * k, distances->location, bf->s_idx,
                       SR_DEVICE, (size_t)j->rows * (size_t)k * sizeof(int64_t));
}

static sr_status spread_knn(struct sr_context_s *ctx, struct sr_matrix_s *index, struct sr_matrix_s *queries,
                            int64_t k, sr_metric metric, double metric_arg, int64_t *indices, const sr_dense *distances,
                            const sr_knn_options *options)
{
    const int n = ctx->ndevices;
    const int64_t nq = queries->nrows;
    const size_t es = sr_type_size(distances->type);
    sr_shards *sh = NULL;
    struct sr_matrix_s *qs[SR_MAX_DEVICES] = {NULL}, *own[SR_MAX_DEVICES] = {NULL};
    sr_status s = queries_everywhere(ctx, index, queries, &sh, qs, own);
    knn_job j = {ctx, sh, qs, 0, 0, metric, metric_arg, distances->type,
                 options ? options->precision : SR_PRECISION_EXACT, {0}, {NULL}, {NULL}};
    knn_buffers bf = {0};
    const int64_t b = knn_round_rows(n, nq, k, es, options);
    for (int g = 0; g < n && s == SR_SUCCESS; g++) {
        const int64_t rows = sh->row0[g + 1] - sh->row0[g];
        j.k_of[g] = rows < k ? rows : k;
        s = sr_mem_alloc_array(ctx->peers[g], SR_DEVICE, (size_t)b * (size_t)j.k_of[g], sizeof(int64_t),
                               (void **)&j.idx[g]);
        if (s == SR_SUCCESS)
            s = sr_mem_alloc_array(ctx->peers[g], SR_DEVICE, (size_t)b * (size_t)j.k_of[g], es, &j.dist[g]);
    }
    bf.c_elems = (size_t)n * (size_t)b * (size_t)k;
    bf.s_elems = distances->location == SR_DEVICE ? 0 : (size_t)b * (size_t)k;
    if (s == SR_SUCCESS)
        s = sr_mem_alloc_array(ctx, SR_DEVICE, bf.c_elems, sizeof(int64_t), (void **)&bf.cidx);
    if (s == SR_SUCCESS)
        s = sr_mem_alloc_array(ctx, SR_DEVICE, bf.c_elems, es, &bf.cdist);
    if (s == SR_SUCCESS)
        s = sr_mem_alloc_array(ctx, SR_DEVICE, bf.s_elems, sizeof(int64_t), (void **)&bf.s_idx);
    if (s == SR_SUCCESS)
        s = sr_mem_alloc_array(ctx, SR_DEVICE, bf.s_elems, es, &bf.s_dist);
    if (s == SR_SUCCESS)
        s = settle(ctx);
    for (int64_t q0 = 0; s == SR_SUCCESS && q0 < nq; q0 += b) {
        j.q0 = q0;
        j.rows = nq - q0 < b ? nq - q0 : b;
        s = knn_round(ctx, &j, &bf, b, k, indices, distances);
        if (s == SR_SUCCESS && options && options->progress &&
            options->progress(q0 + j.rows, nq, options->progress_user) != 0)
            s = sr_error(SR_ERROR_CANCELLED, "sr_knn: stopped by the progress callback after %lld of %lld queries",
                         (long long)(q0 + j.rows), (long long)nq);
    }
    if (sh != NULL)
        free_knn_buffers(ctx, &j, &bf, b, es);
    free_all(own, n);
    return s;
}

/* ------------------------------------------------------------------ radius */

typedef struct radius_job {
    struct sr_context_s *ctx;
    const sr_shards *sh;
    struct sr_matrix_s *const *qs;
    double radius;
    sr_metric metric;
    double metric_arg;
    sr_radius_options options;
    struct sr_matrix_s *R[SR_MAX_DEVICES];
} radius_job;

static sr_status radius_on_gpu(int g, void *arg)
{
    radius_job *j = arg;
    if (j->sh->block[g]->nrows == 0)
        return SR_SUCCESS;
    return sr_radius_neighbors(j->ctx->peers[g], j->sh->block[g], j->qs[g], j->radius, j->metric, j->metric_arg,
                               &j->options, &j->R[g]);
}

/* parts[g] = GPU g's answer on the first GPU (empty rows for an empty block). */
static sr_status gather_parts(struct sr_context_s *ctx, radius_job *j, int64_t nq, sr_type type,
                              struct sr_matrix_s **parts)
{
    const int n = ctx->ndevices;
    sr_cuda_move moves[3 * SR_MAX_DEVICES];
    int m = 0;
    for (int g = 0; g < n; g++) {
        const struct sr_matrix_s *R = j->R[g];
        const int64_t cols = j->sh->row0[g + 1] - j->sh->row0[g], nnz = R ? R->nnz : 0;
        SR_TRY(sr_matrix_alloc(ctx, nq, cols, nnz, type, SR_DEVICE, &parts[g]));
        if (R == NULL) {
            SR_TRY(sr_cuda_zero(ctx, parts[g]->rowptr, sr_matrix_rowptr_bytes(parts[g])));
            continue;
        }
        moves[m++] = (sr_cuda_move){g, 0, R->rowptr, parts[g]->rowptr, sr_matrix_rowptr_bytes(R)};
        moves[m++] = (sr_cuda_move){g, 0, R->colind, parts[g]->colind, (size_t)nnz * sizeof(int32_t)};
        if (type != SR_TYPE_BOOL)
            moves[m++] = (sr_cuda_move){g, 0, R->values, parts[g]->values, (size_t)nnz * sr_type_size(type)};
    }
    SR_TRY(settle(ctx));
    return sr_cuda_multi_moves(ctx, moves, m);
}

static sr_status spread_radius(struct sr_context_s *ctx, struct sr_matrix_s *index, struct sr_matrix_s *queries,
                               double radius, sr_metric metric, double metric_arg, const sr_radius_options *options,
                               struct sr_matrix_s **R)
{
    const int n = ctx->ndevices;
    const bool self = queries == NULL;
    struct sr_matrix_s *Q = self ? index : queries;
    sr_shards *sh = NULL;
    struct sr_matrix_s *qs[SR_MAX_DEVICES] = {NULL}, *own[SR_MAX_DEVICES] = {NULL}, *parts[SR_MAX_DEVICES] = {NULL};
    radius_job j = {ctx, NULL, qs, radius, metric, metric_arg, options ? *options : sr_radius_options_default(),
                    {NULL}};
    const bool drop_diagonal = self && !j.options.include_self;
    j.options.progress = NULL;      /* called on this thread only, below */
    j.options.include_self = false; /* each GPU compares the queries with its block; (i, i) is left
                                       out when the blocks are put together */
    sr_status s = queries_everywhere(ctx, index, Q, &sh, qs, own);
    j.sh = sh;
    if (s == SR_SUCCESS)
        s = on_every_gpu(ctx, radius_on_gpu, &j);
    const sr_type type = j.options.mode == SR_GRAPH_CONNECTIVITY ? SR_TYPE_BOOL : j.options.type;
    if (s == SR_SUCCESS)
        s = gather_parts(ctx, &j, Q->nrows, type, parts);
    if (s == SR_SUCCESS)
        s = sr_cuda_concat_columns(ctx, (const struct sr_matrix_s *const *)parts, n, sh->row0, drop_diagonal, R);
    free_all(parts, n);
    free_all(j.R, n);
    free_all(own, n);
    if (s == SR_SUCCESS && options && options->progress &&
        options->progress(Q->nrows, Q->nrows, options->progress_user) != 0) {
        sr_matrix_destroy(*R);
        *R = NULL;
        s = sr_error(SR_ERROR_CANCELLED, "sr_radius_neighbors: stopped by the progress callback");
    }
    return s;
}

/* ------------------------------------------------------------------ SDDMM */

/* Dense operands on the host are read by every GPU for itself (its rows of A, all of B) over its
 * own link, at once; operands on the first GPU are sent from there (NCCL). */
typedef struct sddmm_job {
    struct sr_context_s *ctx;
    const sr_sddmm_args *a;
    const sr_shards *sh;
    sr_sddmm_strategy strategy;
    const sr_dense *Av, *Bv;    /* the caller's */
    bool host_A, host_B;        /* on the host: each GPU stages its own */
    const void *dA[SR_MAX_DEVICES], *dB[SR_MAX_DEVICES]; /* else each GPU's rows of A, and B */
    void *out[SR_MAX_DEVICES];
} sddmm_job;

/* Rows [r0, r0 + rows) of a dense view, as a view. */
static sr_dense row_slice(const sr_dense *d, int64_t r0, int64_t rows)
{
    sr_dense v = *d;
    const size_t es = sr_type_size(d->type);
    v.data = (char *)d->data + (size_t)r0 * es * (d->layout == SR_ROW_MAJOR ? (size_t)d->ld : 1);
    v.nrows = rows;
    return v;
}

static sr_status sddmm_on_gpu(int g, void *arg)
{
    const sddmm_job *j = arg;
    struct sr_context_s *peer = j->ctx->peers[g];
    const struct sr_matrix_s *block = j->sh->block[g];
    if (block->nnz == 0)
        return SR_SUCCESS;
    sr_sddmm_args a = *j->a;
    a.S = block;
    a.strategy = j->strategy;
    a.A = j->dA[g];
    a.B = j->dB[g];
    sr_staged_rows ra = {0}, rb = {0};
    sr_status s = SR_SUCCESS;
    if (j->host_A) {
        sr_dense rows = row_slice(j->Av, j->sh->row0[g], block->nrows);
        if ((s = sr_ops_stage_rows(peer, &rows, SR_DEVICE, &ra)) == SR_SUCCESS)
            a.A = ra.data;
    }
    if (s == SR_SUCCESS && j->host_B && (s = sr_ops_stage_rows(peer, j->Bv, SR_DEVICE, &rb)) == SR_SUCCESS)
        a.B = rb.data;
    if (s == SR_SUCCESS)
        s = sr_cuda_sddmm(&a, j->out[g]);
    sr_ops_release_rows(peer, &rb);
    sr_ops_release_rows(peer, &ra);
    return s;
}

/* Device operands, packed row-major on the first GPU (staged there when the caller's are not),
 * then each GPU's rows of A and all of B sent to it (a_bytes: what each GPU's rows take). */
static sr_status send_operands(struct sr_context_s *ctx, sddmm_job *j, sr_staged_rows *ra, sr_staged_rows *rb,
                               size_t *a_bytes, size_t b_bytes)
{
    const int n = ctx->ndevices;
    const size_t a_row = (size_t)j->a->K * sr_type_size(j->a->in_type);
    sr_status s = SR_SUCCESS;
    if (!j->host_A) {
        SR_TRY(sr_ops_stage_rows(ctx, j->Av, SR_DEVICE, ra));
        j->dA[0] = ra->data;
    }
    if (!j->host_B) {
        SR_TRY(sr_ops_stage_rows(ctx, j->Bv, SR_DEVICE, rb));
        j->dB[0] = rb->data;
    }
    for (int g = 1; g < n && s == SR_SUCCESS; g++) {
        a_bytes[g] = !j->host_A ? (size_t)(j->sh->row0[g + 1] - j->sh->row0[g]) * a_row : 0;
        s = sr_mem_alloc(ctx->peers[g], SR_DEVICE, a_bytes[g], (void **)&j->dA[g]);
        if (s == SR_SUCCESS && !j->host_B)
            s = sr_mem_alloc(ctx->peers[g], SR_DEVICE, b_bytes, (void **)&j->dB[g]);
    }
    if (s == SR_SUCCESS)
        s = settle(ctx);
    sr_cuda_move moves[SR_MAX_DEVICES];
    for (int g = 1; g < n && !j->host_A; g++)
        moves[g - 1] = (sr_cuda_move){0, g, (const char *)j->dA[0] + (size_t)j->sh->row0[g] * a_row, (void *)j->dA[g],
                                      a_bytes[g]};
    if (s == SR_SUCCESS && !j->host_A)
        s = sr_cuda_multi_moves(ctx, moves, n - 1);
    if (s == SR_SUCCESS && !j->host_B)
        s = sr_cuda_multi_broadcast(ctx, j->dB[0], (void *const *)j->dB, b_bytes);
    return s;
}

/* Bytes a second of HBM as the SDDMM kernels use it (they run at a few times their byte floor,
 * bench/results-sddmm-h100.txt) and of the NVLink between two GPUs (an NCCL all-reduce's bus
 * bandwidth on the lent H100 pair: 329 GB/s). */
static const double kSddmmBytesPerSecond = 1e12, kLinkBytesPerSecond = 3e11;

bool sr_multi_sddmm_pays(const struct sr_context_s *ctx, const sr_sddmm_args *a, const sr_dense *A, const sr_dense *B)
{
    const int forced = sr_setting("SPARSERING_MULTI_SDDMM", -1);
    if (forced >= 0)
        return forced != 0;
    if (A->location == SR_HOST && B->location == SR_HOST)
        return true; /* each GPU reads its share over its own link: the one GPU would read it all */
    const double P = ctx->ndevices, row = (double)a->K * (double)sr_type_size(a->in_type);
    const double a_bytes = (double)a->S->nrows * row, b_bytes = (double)a->S->ncols * row;
    const double entry = sizeof(int32_t) + 2.0 * (double)sr_type_size(a->out_type);
    const double one = ((double)a->S->nnz * entry + a_bytes + b_bytes) / kSddmmBytesPerSecond;
    const double moved = (A->location == SR_DEVICE ? a_bytes * (P - 1) / P : 0) +
                         (B->location == SR_DEVICE ? b_bytes * (P - 1) : 0);
    return one / P + moved / kLinkBytesPerSecond < one;
}

static sr_status spread_sddmm(struct sr_context_s *ctx, const sr_sddmm_args *a, const sr_dense *A,
                              const sr_dense *B, void *out)
{
    const int n = ctx->ndevices;
    const struct sr_matrix_s *S = a->S;
    const size_t oes = sr_type_size(a->out_type);
    const size_t b_bytes = B->location == SR_DEVICE ? (size_t)S->ncols * (size_t)a->K * sr_type_size(a->in_type) : 0;
    sr_shards *sh = NULL;
    SR_TRY(shards_of(ctx, (struct sr_matrix_s *)S, false, &sh));
    sddmm_job j = {ctx, a, sh, SR_SDDMM_AUTO, A, B, A->location == SR_HOST, B->location == SR_HOST, {NULL}, {NULL},
                   {out}};
    sr_staged_rows ra = {0}, rb = {0};
    size_t a_bytes[SR_MAX_DEVICES] = {0};
    sr_status s = send_operands(ctx, &j, &ra, &rb, a_bytes, b_bytes);
    if (s == SR_SUCCESS) { /* the whole S's choice, for every block: as the one-GPU call chooses */
        sr_sddmm_args whole = *a;
        whole.A = j.dA[0];
        whole.B = j.dB[0];
        s = sr_cuda_sddmm_strategy(&whole, &j.strategy);
    }
    for (int g = 1; g < n && s == SR_SUCCESS; g++)
        s = sr_mem_alloc_array(ctx->peers[g], SR_DEVICE, (size_t)(sh->entry0[g + 1] - sh->entry0[g]), oes, &j.out[g]);
    if (s == SR_SUCCESS)
        s = settle(ctx);
    if (s == SR_SUCCESS)
        s = on_every_gpu(ctx, sddmm_on_gpu, &j);
    sr_cuda_move moves[SR_MAX_DEVICES];
    for (int g = 1; g < n; g++)
        moves[g - 1] = (sr_cuda_move){g, 0, j.out[g], (char *)out + (size_t)sh->entry0[g] * oes,
                                      (size_t)(sh->entry0[g + 1] - sh->entry0[g]) * oes};
    if (s == SR_SUCCESS)
        s = sr_cuda_multi_moves(ctx, moves, n - 1);
    for (int g = 1; g < n; g++) {
        sr_mem_free(ctx->peers[g], SR_DEVICE, (void *)j.dA[g], a_bytes[g]);
        sr_mem_free(ctx->peers[g], SR_DEVICE, (void *)j.dB[g], b_bytes);
        sr_mem_free(ctx->peers[g], SR_DEVICE, j.out[g], (size_t)(sh->entry0[g + 1] - sh->entry0[g]) * oes);
    }
    sr_ops_release_rows(ctx, &rb);
    sr_ops_release_rows(ctx, &ra);
    return s;
}

/* ------------------------------------------------------------------ SpGEMM */

typedef struct mxm_job {
    struct sr_context_s *ctx;
    sr_semiring s;
    struct sr_matrix_s *A[SR_MAX_DEVICES];
    const struct sr_matrix_s *B[SR_MAX_DEVICES];
    struct sr_matrix_s *C[SR_MAX_DEVICES];
} mxm_job;

static sr_status mxm_on_gpu(int g, void *arg)
{
    mxm_job *j = arg;
    return sr_mxm(j->ctx->peers[g], &j->C[g], NULL, j->s, j->A[g], (struct sr_matrix_s *)j->B[g], NULL);
}

/* *C on the first GPU = the GPUs' row blocks one under the other (block g: rows [row0[g], row0[g+1])). */
static sr_status stack_rows(struct sr_context_s *ctx, struct sr_matrix_s *const *parts, const int64_t *row0,
                            int64_t nrows, int64_t ncols, struct sr_matrix_s **C)
{
    const int n = ctx->ndevices;
    const sr_type type = parts[0]->type;
    const size_t vs = type == SR_TYPE_BOOL ? 0 : sr_type_size(type);
    int64_t start[SR_MAX_DEVICES + 1] = {0};
    for (int g = 0; g < n; g++)
        start[g + 1] = start[g] + parts[g]->nnz;
    struct sr_matrix_s *T = NULL;
    SR_TRY(sr_matrix_alloc(ctx, nrows, ncols, start[n], type, SR_DEVICE, &T));
    sr_status s = settle(ctx);
    sr_cuda_move moves[3 * SR_MAX_DEVICES];
    int m = 0;
    for (int g = 0; g < n; g++) {
        const struct sr_matrix_s *P = parts[g];
        moves[m++] = (sr_cuda_move){g, 0, P->rowptr, T->rowptr + row0[g], (size_t)P->nrows * sizeof(int64_t)};
        moves[m++] = (sr_cuda_move){g, 0, P->colind, T->colind + start[g], (size_t)P->nnz * sizeof(int32_t)};
        if (vs)
            moves[m++] = (sr_cuda_move){g, 0, P->values, (char *)T->values + (size_t)start[g] * vs,
                                        (size_t)P->nnz * vs};
    }
    if (s == SR_SUCCESS)
        s = sr_cuda_multi_moves(ctx, moves, m);
    for (int g = 0; g < n && s == SR_SUCCESS; g++)
        s = sr_cuda_shift(ctx, T->rowptr + row0[g], row0[g + 1] - row0[g], start[g]);
    if (s == SR_SUCCESS)
        s = sr_mem_copy(ctx, T->rowptr + nrows, SR_DEVICE, &start[n], SR_HOST, sizeof(int64_t));
    if (s != SR_SUCCESS) {
        sr_matrix_destroy(T);
        return s;
    }
    *C = T;
    return SR_SUCCESS;
}

/* parts[g] (on GPU g) = rows [row0[g], row0[g+1]) of A ⊕.⊗ B: A's row blocks, B on every GPU. */
static sr_status spread_mxm_parts(struct sr_context_s *ctx, const struct sr_matrix_s *A, const struct sr_matrix_s *B,
                                  sr_semiring s, struct sr_matrix_s **parts, int64_t *row0)
{
    const int n = ctx->ndevices;
    const size_t ptr_bytes = sr_matrix_rowptr_bytes(A);
    int64_t *rowptr = NULL, *flops = NULL;
    mxm_job j = {ctx, s, {NULL}, {NULL}, {NULL}};
    struct sr_matrix_s *copies[SR_MAX_DEVICES] = {NULL};
    sr_status st = host_rowptr(ctx, (struct sr_matrix_s *)A, &rowptr);
    const bool by_work = ctx->partition == SR_PARTITION_BALANCED;
    if (st == SR_SUCCESS && by_work)
        st = sr_mem_alloc(ctx, SR_HOST, ptr_bytes, (void **)&flops);
    if (st == SR_SUCCESS && by_work)
        st = sr_cuda_row_flops(A, B, flops);
    if (st == SR_SUCCESS) {
        cut_rows(flops, A->nrows, n, row0);
        st = make_blocks(ctx, A, row0, rowptr, j.A);
    }
    if (st == SR_SUCCESS)
        st = make_copies(ctx, B, copies);
    for (int g = 0; g < n; g++)
        j.B[g] = g == 0 ? B : copies[g];
    if (st == SR_SUCCESS)
        st = on_every_gpu(ctx, mxm_on_gpu, &j);
    for (int g = 0; g < n; g++)
        parts[g] = st == SR_SUCCESS ? j.C[g] : NULL;
    if (st != SR_SUCCESS)
        free_all(j.C, n);
    free_all(j.A, n);
    free_all(copies, n);
    sr_mem_free(ctx, SR_HOST, rowptr, ptr_bytes);
    sr_mem_free(ctx, SR_HOST, flops, ptr_bytes);
    return st;
}

static sr_status spread_mxm(struct sr_context_s *ctx, const struct sr_matrix_s *A, const struct sr_matrix_s *B,
                            sr_semiring s, struct sr_matrix_s **C)
{
    struct sr_matrix_s *parts[SR_MAX_DEVICES] = {NULL};
    int64_t row0[SR_MAX_DEVICES + 1];
    SR_TRY(spread_mxm_parts(ctx, A, B, s, parts, row0));
    const sr_status st = stack_rows(ctx, parts, row0, A->nrows, B->ncols, C);
    free_all(parts, ctx->ndevices);
    return st;
}

/* ------------------------------------------------------------------ the entry points */

/* One spread call at a time on a context: calls share the GPUs' streams and NCCL's communicators,
 * which take one group of calls at a time, and a context may be shared by threads (README). */
#define ONE_AT_A_TIME(ctx, call)                    \
    do {                                            \
        pthread_mutex_lock(&(ctx)->spread_lock);    \
        sr_status one_at_a_time_ = (call);          \
        pthread_mutex_unlock(&(ctx)->spread_lock);  \
        return one_at_a_time_;                      \
    } while (0)

sr_status sr_multi_knn(struct sr_context_s *ctx, struct sr_matrix_s *index, struct sr_matrix_s *queries, int64_t k,
                       sr_metric metric, double metric_arg, int64_t *indices, const sr_dense *distances,
                       const sr_knn_options *options)
{
    ONE_AT_A_TIME(ctx, spread_knn(ctx, index, queries, k, metric, metric_arg, indices, distances, options));
}

sr_status sr_multi_radius(struct sr_context_s *ctx, struct sr_matrix_s *index, struct sr_matrix_s *queries,
                          double radius, sr_metric metric, double metric_arg, const sr_radius_options *options,
                          struct sr_matrix_s **R)
{
    ONE_AT_A_TIME(ctx, spread_radius(ctx, index, queries, radius, metric, metric_arg, options, R));
}

sr_status sr_multi_sddmm(struct sr_context_s *ctx, const sr_sddmm_args *a, const sr_dense *A, const sr_dense *B,
                         void *out)
{
    ONE_AT_A_TIME(ctx, spread_sddmm(ctx, a, A, B, out));
}

sr_status sr_multi_mxm(struct sr_context_s *ctx, const struct sr_matrix_s *A, const struct sr_matrix_s *B,
                       sr_semiring s, struct sr_matrix_s **C)
{
    ONE_AT_A_TIME(ctx, spread_mxm(ctx, A, B, s, C));
}

sr_status sr_multi_mxm_parts(struct sr_context_s *ctx, const struct sr_matrix_s *A, const struct sr_matrix_s *B,
                             sr_semiring s, struct sr_matrix_s **parts, int64_t *row0)
{
    ONE_AT_A_TIME(ctx, spread_mxm_parts(ctx, A, B, s, parts, row0));
}

sr_status sr_multi_stack_rows(struct sr_context_s *ctx, struct sr_matrix_s *const *parts, const int64_t *row0,
                              int64_t nrows, int64_t ncols, struct sr_matrix_s **C)
{
    ONE_AT_A_TIME(ctx, stack_rows(ctx, parts, row0, nrows, ncols, C));
}
