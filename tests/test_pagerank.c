/* sr_pagerank against a float64 power iteration written here (networkx's rule), on random graphs
 * with dangling vertices, weighted and Boolean, float32 and float64 ranks, on each backend; the
 * ranks with and without the SpMV plan are identical (the plan changes no sum), and so are those of
 * the host looking at the iteration's numbers every 5 iterations instead of every one (the queued
 * iterations past the stop change nothing); bad inputs fail with clear messages. */
#include "test_util.h"

static sr_context ctx;
static sr_location where;

/* The reference: r = d·Pᵀr + ((1 − d) + d·dangling)/n from 1/n, stopping as sr_pagerank does. */
static int reference(const test_csr *g, double d, double tol, int max_iter, double *r)
{
    const int64_t n = g->nrows;
    double *out = calloc((size_t)n, sizeof *out), *next = malloc((size_t)n * sizeof *next);
    for (int64_t i = 0; i < n; i++) {
        r[i] = 1.0 / (double)n;
        for (int64_t k = g->rowptr[i]; k < g->rowptr[i + 1]; k++)
            out[i] += test_csr_at(g, i, g->colind[k]);
    }
    int it = 0;
    while (it < max_iter) {
        double dangling = 0, change = 0;
        for (int64_t i = 0; i < n; i++)
            next[i] = 0, dangling += out[i] > 0 ? 0 : r[i];
        for (int64_t i = 0; i < n; i++)
            for (int64_t k = g->rowptr[i]; out[i] > 0 && k < g->rowptr[i + 1]; k++)
                next[g->colind[k]] += d * r[i] * test_csr_at(g, i, g->colind[k]) / out[i];
        for (int64_t i = 0; i < n; i++) {
            next[i] += ((1 - d) + d * dangling) / (double)n;
            change += fabs(next[i] - r[i]);
            r[i] = next[i];
        }
        it++;
        if (change <= (double)n * tol)
            break;
    }
    free(out);
    free(next);
    return it;
}

static void check_graph(const test_csr *g, sr_type type, double d)
{
    const int64_t n = g->nrows;
    double *want = malloc((size_t)n * sizeof *want);
    const int iterations = reference(g, d, 1e-9, 200, want);
    sr_matrix A = test_make_matrix_at(ctx, g, where);
    void *ranks[3] = {malloc((size_t)n * 8), malloc((size_t)n * 8), malloc((size_t)n * 8)};
    sr_pagerank_result results[3];
    for (int run = 0; run < 3; run++) {
        const int plan = run == 1; /* run 2: no plan, the host looking every 5 iterations */
        sr_pagerank_options o = sr_pagerank_options_default();
        o.damping = d;
        o.tolerance = 1e-9;
        o.max_iterations = 200;
        o.plan = plan == 1;
        if (plan)
            setenv("SPARSERING_SPMV_PLAN", where == SR_HOST ? "1" : "hot", 1); /* the planned kernel, always */
        setenv("SPARSERING_LOOK_EVERY", run == 2 ? "5" : "1", 1);
        sr_pagerank_result res;
        const sr_dense rv = sr_vector_view(ranks[run], n, type, SR_HOST);
        CHECK_OK(sr_pagerank(ctx, A, &o, &rv, &res));
        unsetenv("SPARSERING_SPMV_PLAN");
        unsetenv("SPARSERING_LOOK_EVERY");
        results[run] = res;
        double err = 0, sum = 0;
        for (int64_t i = 0; i < n; i++) {
            const double got = test_dense_at(&rv, i, 0);
            err += fabs(got - want[i]);
            sum += got;
        }
        CHECK(err < (type == SR_TYPE_FLOAT32 ? 1e-4 : 1e-10), "%s, %s ranks, d %g, plan %d: Σ|r − reference| = %g",
              test_backend_name(ctx), sr_type_name(type), d, plan, err);
        CHECK(fabs(sum - 1) < (type == SR_TYPE_FLOAT32 ? 1e-4 : 1e-12), "the ranks sum to %.15g", sum);
        CHECK(abs(res.iterations - iterations) <= (type == SR_TYPE_FLOAT32 ? 200 : 1),
              "%d iterations where the reference took %d", res.iterations, iterations);
        CHECK(plan || !res.plan.in_use, "a plan reported without options.plan");
    }
    CHECK(memcmp(ranks[0], ranks[1], (size_t)n * sr_type_size(type)) == 0,
          "%s: the ranks with the SpMV plan differ from those without", test_backend_name(ctx));
    CHECK(memcmp(ranks[0], ranks[2], (size_t)n * sr_type_size(type)) == 0 &&
              results[0].iterations == results[2].iterations &&
              memcmp(&results[0].change, &results[2].change, sizeof(double)) == 0,
          "%s, %s ranks: looking every 5 iterations gave other ranks or %d iterations (change %.17g) against %d "
          "(%.17g)", test_backend_name(ctx), sr_type_name(type), results[2].iterations, results[2].change,
          results[0].iterations, results[0].change);
    free(ranks[0]);
    free(ranks[1]);
    free(ranks[2]);
    free(want);
    sr_matrix_free(A);
}

static void run(void)
{
    /* skewed random graphs: 1 in 8 rows empty (dangling vertices), some long rows */
    const sr_type value_types[] = {SR_TYPE_BOOL, SR_TYPE_FLOAT64, SR_TYPE_INT32};
    for (int v = 0; v < 3; v++) {
        test_csr g = test_random_csr(3000, 3000, 8, value_types[v]);
        if (value_types[v] == SR_TYPE_FLOAT64) /* weights must be >= 0 */
            for (int64_t k = 0; k < g.nnz; k++)
                ((double *)g.values)[k] = fabs(((double *)g.values)[k]);
        if (value_types[v] == SR_TYPE_INT32)
            for (int64_t k = 0; k < g.nnz; k++)
                ((int32_t *)g.values)[k] = abs(((int32_t *)g.values)[k]);
        check_graph(&g, SR_TYPE_FLOAT64, 0.85);
        check_graph(&g, SR_TYPE_FLOAT32, 0.85);
        if (v == 0)
            check_graph(&g, SR_TYPE_FLOAT64, 0.5);
        test_csr_free(&g);
    }
    test_csr tiny = test_random_csr(1, 1, 1, SR_TYPE_BOOL); /* one vertex: rank 1 */
    check_graph(&tiny, SR_TYPE_FLOAT64, 0.85);
    test_csr_free(&tiny);

    /* what is refused */
    test_csr neg = test_random_csr(50, 50, 4, SR_TYPE_FLOAT64), wide = test_random_csr(4, 6, 2, SR_TYPE_BOOL);
    for (int64_t k = 0; k < neg.nnz; k++)
        ((double *)neg.values)[k] = -fabs(((double *)neg.values)[k]) - 0.1;
    sr_matrix N = test_make_matrix_at(ctx, &neg, where), W = test_make_matrix_at(ctx, &wide, where);
    double r[50];
    int32_t ri[50];
    sr_dense rv = sr_vector_view(r, 50, SR_TYPE_FLOAT64, SR_HOST), riv = sr_vector_view(ri, 50, SR_TYPE_INT32, SR_HOST);
    sr_dense short_v = sr_vector_view(r, 4, SR_TYPE_FLOAT64, SR_HOST);
    CHECK_FAILS(sr_pagerank(ctx, N, NULL, &rv, NULL), SR_ERROR_INVALID_ARGUMENT, "negative or NaN edge weight");
    CHECK_FAILS(sr_pagerank(ctx, W, NULL, &short_v, NULL), SR_ERROR_INVALID_ARGUMENT, "must be square");
    CHECK_FAILS(sr_pagerank(ctx, N, NULL, &riv, NULL), SR_ERROR_INVALID_ARGUMENT, "float32 or float64");
    sr_pagerank_options bad = sr_pagerank_options_default();
    bad.damping = 1.0;
    CHECK_FAILS(sr_pagerank(ctx, N, &bad, &rv, NULL), SR_ERROR_INVALID_ARGUMENT, "damping must be in [0, 1)");
    sr_matrix_free(N);
    sr_matrix_free(W);
    test_csr_free(&neg);
    test_csr_free(&wide);
}

int main(void)
{
    test_seed("test_pagerank");
    test_on_each_backend(&ctx, &where, run);
    return test_finish("test_pagerank");
}
