/* Neighbour graphs: the k-NN graph of a matrix's rows as a sparse matrix, assembled from
 * sr_knn's batched results (so the memory bounds are sr_knn's), then optionally symmetrized
 * with the transpose and an element-wise union that both backends have. */
#include <string.h>

#include "../core/context.h"
#include "../core/memory.h"
#include "../cpu/cpu.h"
#include "../cuda/cuda.h"
#include "../semiring/semiring.h"
#include "ops_common.h"

sr_knn_graph_options sr_knn_graph_options_default(void)
{
    sr_knn_graph_options o = {SR_GRAPH_CONNECTIVITY, false, false, SR_TYPE_FLOAT32, NULL, NULL, SR_PRECISION_EXACT};
    return o;
}

/* Which of a row's kk = k + 1 neighbours to leave out: the row itself, or (when equal rows of
 * smaller index pushed it out) the nearest, as scikit-learn does. */
static int64_t left_out(const int64_t *row, int64_t kk, int64_t self)
{
    for (int64_t t = 0; t < kk; t++)
        if (row[t] == self)
            return t;
    return 0;
}

/* Row i of the graph: its k chosen neighbours with their distances (es bytes each; vals NULL
 * for connectivity), sorted by column. The distances already have the graph's type. */
static void graph_row(const int64_t *idx, const char *dist, int64_t kk, int64_t skip, size_t es, int32_t *cols,
                      char *vals)
{
    int64_t n = 0;
    for (int64_t t = 0; t < kk; t++) {
        if (t == skip)
            continue;
        int64_t at = n++; /* insertion by column: k is small */
        while (at > 0 && cols[at - 1] > (int32_t)idx[t]) {
            cols[at] = cols[at - 1];
            if (vals)
                memcpy(vals + (size_t)at * es, vals + (size_t)(at - 1) * es, es);
            at--;
        }
        cols[at] = (int32_t)idx[t];
        if (vals)
            memcpy(vals + (size_t)at * es, dist + (size_t)t * es, es);
    }
}

/* The directed graph on the host from the k-NN results (kk per row). */
static sr_status assemble(struct sr_context_s *ctx, int64_t m, int64_t k, int64_t kk, const int64_t *idx,
                          const void *dist, const sr_knn_graph_options *o, struct sr_matrix_s **G)
{
    const bool values = o->mode == SR_GRAPH_DISTANCE;
    const size_t es = sr_type_size(o->type);
    int64_t *rowptr = NULL;
    int32_t *cols = NULL;
    void *vals = NULL;
    sr_status s = sr_mem_alloc_array(ctx, SR_HOST, (size_t)m + 1, sizeof(int64_t), (void **)&rowptr);
    if (s == SR_SUCCESS)
        s = sr_mem_alloc_array(ctx, SR_HOST, (size_t)(m * k), sizeof(int32_t), (void **)&cols);
    if (s == SR_SUCCESS && values)
        s = sr_mem_alloc_array(ctx, SR_HOST, (size_t)(m * k), es, &vals);
    if (s == SR_SUCCESS) {
#pragma omp parallel for schedule(static) num_threads(sr_context_threads(ctx))
        for (int64_t i = 0; i < m; i++) {
            const int64_t skip = kk > k ? left_out(idx + i * kk, kk, i) : -1;
            graph_row(idx + i * kk, (const char *)dist + (size_t)(i * kk) * es, kk, skip, es, cols + i * k,
                      values ? (char *)vals + (size_t)(i * k) * es : NULL);
            rowptr[i] = i * k;
        }
        rowptr[m] = m * k;
        s = sr_matrix_from_csr(ctx, G, m, m, values ? o->type : SR_TYPE_BOOL, rowptr, cols, vals, SR_HOST);
    }
    sr_mem_free(ctx, SR_HOST, rowptr, ((size_t)m + 1) * sizeof(int64_t));
    sr_mem_free(ctx, SR_HOST, cols, (size_t)(m * k) * sizeof(int32_t));
    sr_mem_free(ctx, SR_HOST, vals, values ? (size_t)(m * k) * es : 0);
    return s;
}

/* G ∪ Gᵀ, the larger value (or, for bool) where both hold an entry; replaces *G. */
static sr_status symmetrize(struct sr_context_s *ctx, struct sr_matrix_s **G)
{
    struct sr_matrix_s *T = NULL, *U = NULL;
    SR_TRY(sr_matrix_transpose(ctx, *G, &T));
    const sr_semiring larger = (*G)->type == SR_TYPE_BOOL ? SR_OR_AND : SR_MAX_PLUS; /* its ⊕: or, max */
    sr_status s = (*G)->location == SR_DEVICE ? sr_cuda_ewise(ctx, *G, T, NULL, false, SR_MERGE_UNION, larger, &U)
                                              : sr_cpu_ewise(ctx, *G, T, NULL, false, SR_MERGE_UNION, larger, &U);
    sr_matrix_destroy(T);
    SR_TRY(s);
    sr_matrix_destroy(*G);
    *G = U;
    return SR_SUCCESS;
}

sr_status sr_knn_graph(sr_context ctx, sr_matrix X, int64_t k, sr_metric metric, double metric_arg,
                       const sr_knn_graph_options *options, sr_matrix *G)
{
    const char *fn = "sr_knn_graph";
    SR_CHECK_ARG(G != NULL, "%s: G is NULL", fn);
    SR_TRY(sr_ops_check_matrix(fn, ctx, X));
    const sr_knn_graph_options o = options ? *options : sr_knn_graph_options_default();
    SR_TRY(sr_ops_check_graph_output(fn, o.mode, o.type));
    const int64_t m = X->nrows, most = o.include_self ? m : m - 1;
    SR_CHECK_ARG(k >= 1 && k <= most, "%s: k = %lld, but X has %lld rows (k must be 1..%lld%s)", fn, (long long)k,
                 (long long)m, (long long)most, o.include_self ? "" : ": a row is not its own neighbour");
    const int64_t kk = k + (o.include_self ? 0 : 1); /* after the check: k may be INT64_MAX */
    const size_t es = sr_type_size(o.type);
    int64_t *idx = NULL;
    void *dist = NULL;
    struct sr_matrix_s *H = NULL, *D = NULL;
    sr_status s = sr_mem_alloc_array(ctx, SR_HOST, (size_t)(m * kk), sizeof(int64_t), (void **)&idx);
    if (s == SR_SUCCESS)
        s = sr_mem_alloc_array(ctx, SR_HOST, (size_t)(m * kk), es, &dist);
    if (s == SR_SUCCESS) {
        sr_dense view = sr_dense_view(dist, m, kk, o.type, SR_ROW_MAJOR, SR_HOST);
        sr_knn_options ko = {o.progress, o.progress_user, o.precision};
        s = sr_knn(ctx, X, X, kk, metric, metric_arg, idx, &view, &ko);
    }
    if (s == SR_SUCCESS)
        s = assemble(ctx, m, k, kk, idx, dist, &o, &H);
    sr_mem_free(ctx, SR_HOST, idx, (size_t)(m * kk) * sizeof(int64_t));
    sr_mem_free(ctx, SR_HOST, dist, (size_t)(m * kk) * es);
    if (s == SR_SUCCESS && X->location == SR_DEVICE) { /* the graph lives where X lives */
        s = sr_matrix_copy_to(ctx, H, SR_DEVICE, &D);
        sr_matrix_destroy(H);
        H = s == SR_SUCCESS ? D : NULL;
    }
    if (s == SR_SUCCESS && o.symmetrize)
        s = symmetrize(ctx, &H);
    if (s != SR_SUCCESS) {
        sr_matrix_destroy(H);
        return s;
    }
    *G = H;
    return SR_SUCCESS;
}
