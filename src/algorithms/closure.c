/* Transitive closure of a graph, by semi-naive rounds or by repeated squaring (public API only). */
#include "algo_util.h"

/* Semi-naive: a path found in round r extends by one edge in round r + 1; only the new pairs Δ
 * are multiplied, and only where C has no entry yet (a complemented mask). */
static sr_status seminaive(sr_context ctx, sr_matrix A, sr_matrix *C, const sr_query_options *options,
                           sr_query_stats *stats)
{
    sr_matrix D = NULL;
    SR_TRY(sr_matrix_dup(ctx, A, C));
    sr_status st = sr_matrix_dup(ctx, A, &D);
    const sr_descriptor only_new = {.mask_complement = true};
    while (st == SR_SUCCESS && sr_algo_nnz(D) > 0) {
        sr_matrix N = NULL;
        st = sr_mxm(ctx, &N, *C, SR_OR_AND, D, A, &only_new);
        stats->products++;
        stats->rounds++;
        if (st == SR_SUCCESS)
            st = sr_algo_union_into(ctx, C, N);
        sr_matrix_free(D);
        D = N;
        if (st == SR_SUCCESS)
            st = sr_algo_progress("sr_transitive_closure", options, stats->rounds, sr_algo_nnz(*C));
    }
    sr_matrix_free(D);
    return st;
}

/* Squaring: C |= C·C doubles the path lengths covered each round; stops when nothing is new. */
static sr_status squaring(sr_context ctx, sr_matrix A, sr_matrix *C, const sr_query_options *options,
                          sr_query_stats *stats)
{
    SR_TRY(sr_matrix_dup(ctx, A, C));
    const sr_descriptor only_new = {.mask_complement = true};
    for (;;) {
        sr_matrix N = NULL;
        sr_status st = sr_mxm(ctx, &N, *C, SR_OR_AND, *C, *C, &only_new);
        stats->products++;
        stats->rounds++;
        if (st != SR_SUCCESS)
            return st;
        if (sr_algo_nnz(N) == 0) {
            sr_matrix_free(N);
            return SR_SUCCESS;
        }
        st = sr_algo_union_into(ctx, C, N);
        sr_matrix_free(N);
        SR_TRY(st);
        SR_TRY(sr_algo_progress("sr_transitive_closure", options, stats->rounds, sr_algo_nnz(*C)));
    }
}

sr_status sr_transitive_closure(sr_context ctx, sr_matrix A, sr_closure_method method, sr_matrix *C,
                                const sr_query_options *options, sr_query_stats *stats)
{
    const char *fn = "sr_transitive_closure";
    SR_CHECK_ARG(C != NULL, "%s: the output pointer is NULL", fn);
    SR_CHECK_ARG(method >= SR_CLOSURE_AUTO && method <= SR_CLOSURE_SQUARING, "%s: unknown method %d", fn, (int)method);
    sr_matrix G, owned;
    SR_TRY(sr_algo_pattern(fn, ctx, A, &G, &owned));
    sr_query_stats local = {0, 0, 0.0};
    const double t0 = sr_algo_now();
    sr_matrix result = NULL;
    sr_status st = method == SR_CLOSURE_SQUARING ? squaring(ctx, G, &result, options, &local)
                                                 : seminaive(ctx, G, &result, options, &local);
    sr_matrix_free(owned);
    return sr_algo_deliver(st, result, C, local, t0, stats);
}
