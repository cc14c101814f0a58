/* PageRank by power iteration on the public calls: M = Pᵀ (P = A with rows scaled to sum 1) is
 * built once, optionally analysed by sr_spmv_plan, then each iteration is one SpMV and a few
 * vector operations on vectors and scalars where A lives (the GPU for a device A), queued: the
 * host looks at the numbers every few iterations. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/memory.h"
#include "../core/queued.h"
#include "algo_util.h"

sr_pagerank_options sr_pagerank_options_default(void)
{
    sr_pagerank_options o = {0.85, 1e-6, 100, true};
    return o;
}

/* D⁻¹ (n x n, of `type`, in `where`): 1 / out-weight on the diagonal of the rows that have one,
 * the weights summed in float64 (W64: A's values as float64). */
static sr_status inverse_out_weights(sr_context ctx, sr_matrix W64, int64_t n, sr_type type, sr_location where,
                                     sr_matrix *D)
{
    const char *fn = "sr_pagerank";
    sr_matrix sums = NULL, lows = NULL, H = NULL;
    double *s = sr_malloc((size_t)(n + 1) * sizeof *s), *low = sr_malloc((size_t)(n + 1) * sizeof *low);
    int64_t *rowptr = sr_malloc((size_t)(n + 1) * sizeof *rowptr);
    int32_t *colind = sr_malloc((size_t)(n + 1) * sizeof *colind);
    double *inv = sr_malloc((size_t)(n + 1) * sizeof *inv);
    sr_status st = SR_SUCCESS;
    if (!s || !low || !rowptr || !colind || !inv) {
        st = sr_error(SR_ERROR_OUT_OF_MEMORY, "%s: out of host memory for %lld out-weights", fn, (long long)n);
        goto done;
    }
    if ((st = sr_reduce_rows(ctx, &sums, SR_PLUS_TIMES, W64)) != SR_SUCCESS ||
        (st = sr_reduce_rows(ctx, &lows, SR_MIN_PLUS, W64)) != SR_SUCCESS)
        goto done;
    sr_dense sv = sr_vector_view(s, n, SR_TYPE_FLOAT64, SR_HOST), lv = sr_vector_view(low, n, SR_TYPE_FLOAT64, SR_HOST);
    if ((st = sr_matrix_export_dense(ctx, sums, &sv)) != SR_SUCCESS ||
        (st = sr_matrix_export_dense(ctx, lows, &lv)) != SR_SUCCESS)
        goto done;
    rowptr[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        if (low[i] < 0 || isnan(s[i])) {
            st = sr_error(SR_ERROR_INVALID_ARGUMENT, "%s: row %lld has a negative or NaN edge weight (%g): PageRank "
                          "needs weights >= 0", fn, (long long)i, low[i] < 0 ? low[i] : s[i]);
            goto done;
        }
        int64_t k = rowptr[i];
        if (s[i] > 0) {
            colind[k] = (int32_t)i;
            inv[k++] = 1.0 / s[i];
        }
        rowptr[i + 1] = k;
    }
    if (type == SR_TYPE_FLOAT32) { /* the values in the rank's type, in place */
        float *f = (float *)inv;
        for (int64_t k = 0; k < rowptr[n]; k++)
            f[k] = (float)inv[k];
    }
    st = sr_matrix_from_csr(ctx, &H, n, n, type, rowptr, colind, inv, SR_HOST);
    if (st == SR_SUCCESS)
        st = where == SR_HOST ? (*D = H, H = NULL, SR_SUCCESS) : sr_matrix_copy_to(ctx, H, where, D);
done:
    sr_matrix_free(sums);
    sr_matrix_free(lows);
    sr_matrix_free(H);
    free(s);
    free(low);
    free(rowptr);
    free(colind);
    free(inv);
    return st;
}

/* M = (D⁻¹·W)ᵀ for W = A in the rank's type (A as float64 serves the weights' sums and, for
 * float64 ranks, the product; A is cast only where its type is not the one needed). */
static sr_status transition(sr_context ctx, sr_matrix A, sr_type a_type, int64_t n, sr_type type, sr_location where,
                            sr_matrix *M)
{
    sr_matrix W64 = NULL, W32 = NULL, D = NULL, P = NULL;
    sr_status st = a_type == SR_TYPE_FLOAT64 ? SR_SUCCESS : sr_matrix_cast(ctx, A, SR_TYPE_FLOAT64, &W64);
    if (st == SR_SUCCESS && type == SR_TYPE_FLOAT32 && a_type != SR_TYPE_FLOAT32)
        st = sr_matrix_cast(ctx, A, SR_TYPE_FLOAT32, &W32);
    sr_matrix as64 = W64 ? W64 : A, in_type = type == SR_TYPE_FLOAT32 ? (W32 ? W32 : A) : as64;
    if (st == SR_SUCCESS)
        st = inverse_out_weights(ctx, as64, n, type, where, &D);
    if (st == SR_SUCCESS)
        st = sr_mxm(ctx, &P, NULL, SR_PLUS_TIMES, D, in_type, NULL);
    if (st == SR_SUCCESS)
        st = sr_matrix_transpose(ctx, P, M);
    sr_matrix_free(W64);
    sr_matrix_free(W32);
    sr_matrix_free(D);
    sr_matrix_free(P);
    return st;
}

/* The iterations' numbers, kept where M is (sr_algo_scalars): the host looks every few iterations
 * and a step queued past the stop changes nothing (the rank is kept, the count and the change
 * are not moved: every step is gated by ACTIVE and its complement STOPPED). */
enum { P_MASS, P_TELEPORT, P_CHANGE, P_LAST_CHANGE, P_ACTIVE, P_STOPPED, P_STEPS, P_ONE, P_COUNT };

/* One iteration, queued: y = d·M·r + teleport·1 with teleport = ((1 − d) + d·(1 − mass))/n written
 * c0 + c1·mass, the dangling mass (the rank on vertices without out-edges, which M drops) being
 * Σr − Σ(M·r) = 1 − Σ(M·r), so an iteration keeps Σr = 1; change = Σ|y − r|; then r ↔ y, the
 * new rank r = y while active (else the old one), and the flag tested for the next iteration. */
static sr_status step(sr_context ctx, sr_matrix M, int64_t n, const sr_pagerank_options *o, sr_dense *r, sr_dense *y,
                      const sr_dense *ones, const sr_dense *diff, sr_algo_scalars *c)
{
    const double d = o->damping;
    const sr_dense *s = c->s;
    SR_TRY(sr_spmv_queued(ctx, y, M, r));
    SR_TRY(sr_vector_asum_s(ctx, y, &s[P_MASS]));
    SR_TRY(sr_vector_copy(ctx, &s[P_TELEPORT], &s[P_ONE]));
    SR_TRY(sr_vector_axpby_s(ctx, -d / (double)n, NULL, &s[P_MASS], 1.0 / (double)n, NULL, &s[P_TELEPORT]));
    SR_TRY(sr_vector_axpby_s(ctx, 1.0, &s[P_TELEPORT], ones, d, NULL, y)); /* y = d·M·r + teleport */
    SR_TRY(sr_vector_copy(ctx, diff, y));
    SR_TRY(sr_vector_axpby(ctx, -1.0, r, 1.0, diff)); /* y − r */
    SR_TRY(sr_vector_asum_s(ctx, diff, &s[P_CHANGE]));
    SR_TRY(sr_vector_axpby_s(ctx, 1.0, &s[P_ACTIVE], &s[P_ONE], 1.0, NULL, &s[P_STEPS]));
    SR_TRY(sr_vector_axpby_s(ctx, 1.0, &s[P_ACTIVE], &s[P_CHANGE], 1.0, &s[P_STOPPED], &s[P_LAST_CHANGE]));
    SR_TRY(sr_vector_axpby_s(ctx, 1.0, &s[P_STOPPED], r, 1.0, &s[P_ACTIVE], y)); /* stopped: y = r */
    const sr_dense t = *r;
    *r = *y;
    *y = t;
    SR_TRY(sr_vector_and_greater(ctx, &s[P_ACTIVE], &s[P_CHANGE], (double)n * o->tolerance));
    SR_TRY(sr_vector_copy(ctx, &s[P_STOPPED], &s[P_ONE]));
    return sr_vector_axpby_s(ctx, -1.0, &s[P_ACTIVE], &s[P_ONE], 1.0, NULL, &s[P_STOPPED]); /* 1 − active */
}

/* Power iteration from r until Σ|r_new − r| <= n·tol or max_iterations. r, y, ones, diff:
 * n-vectors where M is. */
static sr_status iterate(sr_context ctx, sr_matrix M, int64_t n, const sr_pagerank_options *o, sr_dense *r,
                         sr_dense *y, const sr_dense *ones, const sr_dense *diff, sr_pagerank_result *res)
{
    sr_algo_scalars c;
    memset(&c, 0, sizeof c);
    c.seen[P_ACTIVE] = c.seen[P_ONE] = 1.0;
    const sr_location where = sr_algo_where(M);
    sr_status st = sr_algo_scalars_alloc(ctx, where, P_COUNT, &c);
    const int every = sr_algo_look_every(where, false);
    for (int queued = 0; st == SR_SUCCESS && queued < o->max_iterations && c.seen[P_ACTIVE] != 0;) {
        for (int k = 0; k < every && queued < o->max_iterations && st == SR_SUCCESS; k++, queued++)
            st = step(ctx, M, n, o, r, y, ones, diff, &c);
        if (st == SR_SUCCESS)
            st = sr_algo_scalars_look(ctx, &c);
    }
    res->iterations = (int)c.seen[P_STEPS];
    res->change = c.seen[P_LAST_CHANGE];
    sr_vector_free(ctx, &c.all);
    return st;
}

sr_status sr_pagerank(sr_context ctx, sr_matrix A, const sr_pagerank_options *options, const sr_dense *rank,
                      sr_pagerank_result *result)
{
    const char *fn = "sr_pagerank";
    const sr_pagerank_options o = options ? *options : sr_pagerank_options_default();
    SR_CHECK_ARG(ctx != NULL && A != NULL && rank != NULL, "%s: the context, A or the rank vector is NULL", fn);
    sr_matrix_info info;
    SR_TRY(sr_matrix_get_info(A, &info));
    SR_CHECK_ARG(info.nrows == info.ncols, "%s: A must be square (a graph's adjacency), not %lld x %lld", fn,
                 (long long)info.nrows, (long long)info.ncols);
    SR_CHECK_ARG(rank->ncols == 1 && rank->nrows == info.nrows, "%s: the rank vector must be %lld x 1, not %lld x %lld",
                 fn, (long long)info.nrows, (long long)rank->nrows, (long long)rank->ncols);
    SR_CHECK_ARG(rank->type == SR_TYPE_FLOAT32 || rank->type == SR_TYPE_FLOAT64,
                 "%s: the rank vector must be float32 or float64, not %s", fn,
                 rank->type == SR_TYPE_BOOL ? "bool" : "int32");
    SR_CHECK_ARG(o.damping >= 0 && o.damping < 1 && o.tolerance >= 0 && o.max_iterations >= 0,
                 "%s: damping must be in [0, 1) (%g), tolerance >= 0 (%g), max_iterations >= 0 (%d)", fn, o.damping,
                 o.tolerance, o.max_iterations);
    sr_pagerank_result res = {0};
    const int64_t n = info.nrows;
    const sr_type type = rank->type;
    const double t0 = sr_algo_now();
    sr_matrix M = NULL;
    sr_dense r = {0}, y = {0}, ones = {0}, diff = {0};
    sr_status st = transition(ctx, A, info.type, n, type, info.location, &M);
    const double t1 = sr_algo_now();
    res.setup_seconds = t1 - t0;
    /* On the CPU the plan (columns renumbered by popularity) costs some 20 to 50 iterations to
     * analyse and, where kept, saves 10% or more of each: analysed there only from 500 iterations
     * (or when SPARSERING_SPMV_PLAN forces a plan, as the tests do). */
    const bool plan =
        o.plan && (info.location != SR_HOST || o.max_iterations >= 500 || getenv("SPARSERING_SPMV_PLAN"));
    if (st == SR_SUCCESS && plan) {
        st = sr_spmv_plan(ctx, M, &res.plan);
        res.plan_seconds = sr_algo_now() - t1;
    }
    if (st == SR_SUCCESS)
        st = sr_vector_alloc(ctx, n, type, info.location, &r);
    if (st == SR_SUCCESS)
        st = sr_vector_alloc(ctx, n, type, info.location, &y);
    if (st == SR_SUCCESS)
        st = sr_vector_alloc(ctx, n, type, info.location, &ones);
    if (st == SR_SUCCESS)
        st = sr_vector_alloc(ctx, n, type, info.location, &diff);
    if (st == SR_SUCCESS && n > 0) { /* ones from the host (axpby has no constant term), r = 1/n */
        double *h = sr_malloc((size_t)n * sizeof *h);
        if (!h)
            st = sr_error(SR_ERROR_OUT_OF_MEMORY, "%s: out of host memory for %lld ones", fn, (long long)n);
        for (int64_t i = 0; h && i < n; i++)
            if (type == SR_TYPE_FLOAT32)
                ((float *)h)[i] = 1.0f;
            else
                h[i] = 1.0;
        const sr_dense hv = sr_vector_view(h, n, type, SR_HOST);
        if (st == SR_SUCCESS)
            st = sr_vector_copy(ctx, &ones, &hv);
        if (st == SR_SUCCESS)
            st = sr_vector_axpby(ctx, 1.0 / (double)n, &ones, 0.0, &r);
        free(h);
    }
    const double t2 = sr_algo_now();
    if (st == SR_SUCCESS && n > 0)
        st = iterate(ctx, M, n, &o, &r, &y, &ones, &diff, &res);
    if (st == SR_SUCCESS)
        st = sr_context_synchronize(ctx);
    res.iterate_seconds = sr_algo_now() - t2;
    if (st == SR_SUCCESS && n > 0)
        st = sr_vector_copy(ctx, rank, &r);
    sr_vector_free(ctx, &r);
    sr_vector_free(ctx, &y);
    sr_vector_free(ctx, &ones);
    sr_vector_free(ctx, &diff);
    sr_matrix_free(M);
    if (st == SR_SUCCESS && result)
        *result = res;
    return st;
}
