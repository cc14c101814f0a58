/* Multi-source reachability: BFS from many sources at once on bit-packed frontiers, 64 sources
 * per word. The frontier block F (n x S bits, column s for source s) moves by N = Aᵀ·F, kept only
 * where the visited block V has no bit (complemented mask, replace), then V |= N. */
#include <stdlib.h>

#include "algo_util.h"

/* Words a batch takes per vertex row: three blocks (frontier, next, visited) of n x 64·w bits
 * within half the workspace, at most 64 words (4096 sources). */
static int64_t batch_words(sr_context ctx, int64_t n, int64_t nsources)
{
    sr_context_options o;
    size_t limit = sr_context_get_options(ctx, &o) == SR_SUCCESS && o.workspace_limit ? o.workspace_limit : (1u << 30);
    int64_t w = (int64_t)(limit / 2 / 3 / 8 / (size_t)(n > 0 ? n : 1));
    int64_t needed = (nsources + 63) / 64;
    w = w < 1 ? 1 : w > 64 ? 64 : w;
    return w < needed ? w : needed;
}

/* One batch of sources [s0, s0 + S): *Rb (S x n) holds what they reach. Reports progress after
 * every BFS round (a long path takes as many rounds as it has vertices), with the pairs found so
 * far: `earlier` from the batches before, plus this batch's. */
static sr_status reach_batch(const char *fn, sr_context ctx, sr_matrix AT, int64_t n, const int64_t *sources,
                             int64_t S, sr_location where, sr_matrix *Rb, sr_query_stats *stats,
                             const sr_query_options *options, int64_t earlier)
{
    int64_t pairs = earlier + S;
    sr_bits F = {0}, N = {0}, V = {0};
    sr_matrix start = NULL, reached = NULL;
    sr_status st = sr_algo_one_per_column(ctx, n, S, sources, 0, where, &start);
    if (st == SR_SUCCESS)
        st = sr_bits_alloc(ctx, &F, n, S, where);
    if (st == SR_SUCCESS)
        st = sr_bits_alloc(ctx, &N, n, S, where);
    if (st == SR_SUCCESS)
        st = sr_bits_alloc(ctx, &V, n, S, where);
    if (st == SR_SUCCESS)
        st = sr_bits_from_matrix(ctx, &F, start);
    if (st == SR_SUCCESS)
        st = sr_bits_from_matrix(ctx, &V, start);
    const sr_descriptor unvisited = {.mask_complement = true, .replace = true};
    for (int64_t found = 1; st == SR_SUCCESS && found > 0;) {
        st = sr_mxm_bits(ctx, &N, &V, AT, &F, &unvisited, &found);
        stats->products++;
        if (st == SR_SUCCESS && found > 0) {
            stats->rounds++;
            st = sr_bits_or(ctx, &V, &N, NULL);
            sr_bits t = F;
            F = N;
            N = t;
            pairs += found;
            if (st == SR_SUCCESS)
                st = sr_algo_progress(fn, options, stats->rounds, pairs);
        }
    }
    if (st == SR_SUCCESS)
        st = sr_matrix_from_bits(ctx, &reached, &V);
    if (st == SR_SUCCESS)
        st = sr_matrix_transpose(ctx, reached, Rb);
    sr_matrix_free(reached);
    sr_matrix_free(start);
    sr_bits_free(ctx, &F);
    sr_bits_free(ctx, &N);
    sr_bits_free(ctx, &V);
    return st;
}

/* R |= P·Rb, where P places the batch's S rows at rows [s0, s0 + S) of R. */
static sr_status place_batch(sr_context ctx, sr_matrix *R, sr_matrix Rb, int64_t nsources, int64_t s0, int64_t S,
                             sr_location where)
{
    sr_matrix P = NULL;
    sr_status st = sr_algo_one_per_column(ctx, nsources, S, NULL, s0, where, &P);
    const sr_descriptor acc = {.accumulate = true};
    if (st == SR_SUCCESS)
        st = sr_mxm(ctx, R, NULL, SR_OR_AND, P, Rb, &acc);
    sr_matrix_free(P);
    return st;
}

sr_status sr_reachability(sr_context ctx, sr_matrix A, int64_t nsources, const int64_t *sources, sr_matrix *R,
                          const sr_query_options *options, sr_query_stats *stats)
{
    const char *fn = "sr_reachability";
    SR_CHECK_ARG(R != NULL, "%s: the output pointer is NULL", fn);
    SR_CHECK_ARG(nsources >= 0, "%s: negative number of sources %lld", fn, (long long)nsources);
    SR_CHECK_ARG(sources != NULL || nsources == 0, "%s: sources is NULL", fn);
    SR_CHECK_ARG(nsources <= INT32_MAX, "%s: %lld sources are more than 2^31 - 1", fn, (long long)nsources);
    sr_matrix G, owned;
    SR_TRY(sr_algo_pattern(fn, ctx, A, &G, &owned));
    sr_matrix_info info;
    sr_matrix_get_info(G, &info);
    for (int64_t s = 0; s < nsources; s++)
        if (sources[s] < 0 || sources[s] >= info.nrows) {
            sr_matrix_free(owned);
            return sr_error(SR_ERROR_INVALID_ARGUMENT, "%s: source %lld (number %lld) is not a vertex of the %lld-vertex graph",
                            fn, (long long)sources[s], (long long)s, (long long)info.nrows);
        }
    sr_query_stats local = {0, 0, 0.0};
    const double t0 = sr_algo_now();
    sr_matrix AT = NULL, result = NULL;
    sr_status st = sr_matrix_transpose(ctx, G, &AT); /* pull: vertex v ORs the frontiers of its in-neighbours */
    const int64_t per_batch = 64 * batch_words(ctx, info.nrows, nsources);
    if (st == SR_SUCCESS && nsources <= per_batch)
        st = reach_batch(fn, ctx, AT, info.nrows, sources, nsources, info.location, &result, &local, options, 0);
    else if (st == SR_SUCCESS)
        st = sr_algo_pairs(ctx, nsources, info.ncols, 0, NULL, NULL, info.location, &result);
    for (int64_t s0 = 0; st == SR_SUCCESS && nsources > per_batch && s0 < nsources; s0 += per_batch) {
        const int64_t S = nsources - s0 < per_batch ? nsources - s0 : per_batch;
        sr_matrix Rb = NULL;
        st = reach_batch(fn, ctx, AT, info.nrows, sources + s0, S, info.location, &Rb, &local, options,
                         sr_algo_nnz(result));
        if (st == SR_SUCCESS)
            st = place_batch(ctx, &result, Rb, nsources, s0, S, info.location);
        sr_matrix_free(Rb);
    }
    sr_matrix_free(AT);
    sr_matrix_free(owned);
    return sr_algo_deliver(st, result, R, local, t0, stats);
}
