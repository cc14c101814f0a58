/* Same call, same input: same bits. Each operation runs twice on one context and once on a second
 * context of the same backend, and the three results must be identical bit for bit:
 *   by default  SpMV (with and without a plan), SpMM, SDDMM and PageRank, whose sums run in a
 *               fixed order on every backend (docs/c-library.md#reproducible-results)
 *   deterministic contexts  SpGEMM plus_times in float32 and float64 on products whose rows' terms
 *               meet in a column many times over (the device's hash and dense rows then add them
 *               in A-entry order), each result also checked against a float64 reference
 * k-NN and pairwise distances are checked so in test_distance.c, the fused pattern and the
 * solvers in test_fused.c. On the CPU the same thread count gives the same bits. */
#include "test_util.h"

static sr_context ctx;
static sr_location where;

/* A context like ctx (same backend), deterministic or not. */
static sr_context second_context(bool deterministic)
{
    sr_context_options o = sr_context_options_default();
    sr_backend backend = SR_BACKEND_CPU;
    CHECK_OK(sr_context_get_backend(ctx, &backend));
    o.backend = backend;
    o.deterministic = deterministic;
    sr_context other = NULL;
    CHECK_OK(sr_context_create(&other, &o));
    return other;
}

/* Values of one type, anywhere in [-1, 1). */
static void *random_values(int64_t n, sr_type type)
{
    void *v = malloc((size_t)(n > 0 ? n : 1) * sr_type_size(type));
    for (int64_t i = 0; i < n; i++) {
        const double x = 2 * test_uniform() - 1;
        if (type == SR_TYPE_FLOAT64)
            ((double *)v)[i] = x;
        else
            ((float *)v)[i] = (float)x;
    }
    return v;
}

/* How many of n values of the given type differ in their bits. */
static int64_t bits_differ(const void *a, const void *b, int64_t n, sr_type type)
{
    const size_t size = sr_type_size(type);
    int64_t differ = 0;
    for (int64_t i = 0; i < n; i++)
        differ += memcmp((const char *)a + (size_t)i * size, (const char *)b + (size_t)i * size, size) != 0;
    return differ;
}

/* The three results of a dense-output call: first and second call on ctx, then on other. */
typedef struct {
    void *out[3];
    int64_t n;
    sr_type type;
} three_runs;

static three_runs runs_alloc(int64_t n, sr_type type)
{
    three_runs r = {.n = n, .type = type};
    for (int i = 0; i < 3; i++)
        r.out[i] = calloc((size_t)(n > 0 ? n : 1), sr_type_size(type));
    return r;
}

static void runs_check_free(three_runs *r, const char *what)
{
    const int64_t again = bits_differ(r->out[0], r->out[1], r->n, r->type);
    const int64_t other = bits_differ(r->out[0], r->out[2], r->n, r->type);
    CHECK(again == 0 && other == 0, "%s (%s, %s): %lld of %lld values differ on a second call, %lld on a second context",
          what, test_backend_name(ctx), sr_type_name(r->type), (long long)again, (long long)r->n, (long long)other);
    for (int i = 0; i < 3; i++)
        free(r->out[i]);
}

/* SpMV, SpMM and SDDMM on A (m x n, power-law rows: the device's split rows and long rows too). */
static void check_products(sr_type type)
{
    const int64_t m = 3000, n = 2000, K = 24;
    test_csr a = test_random_csr(m, n, 40, type);
    sr_context other = second_context(false);
    sr_matrix A = test_make_matrix_at(ctx, &a, where), A2 = test_make_matrix_at(other, &a, where);
    void *x = random_values(n, type), *B = random_values(n * K, type), *U = random_values(m * K, type);
    const sr_dense xv = sr_vector_view(x, n, type, SR_HOST);
    const sr_dense Bv = sr_dense_view(B, n, K, type, SR_ROW_MAJOR, SR_HOST);
    const sr_dense Uv = sr_dense_view(U, m, K, type, SR_ROW_MAJOR, SR_HOST);

    for (int planned = 0; planned < 2; planned++) {
        if (planned) {
            sr_spmv_plan_info info;
            CHECK_OK(sr_spmv_plan(ctx, A, &info));
            CHECK_OK(sr_spmv_plan(other, A2, &info));
        }
        three_runs y = runs_alloc(m, type);
        for (int run = 0; run < 3; run++) {
            const sr_dense yv = sr_vector_view(y.out[run], m, type, SR_HOST);
            CHECK_OK(sr_spmv(run < 2 ? ctx : other, &yv, NULL, SR_PLUS_TIMES, run < 2 ? A : A2, &xv, NULL));
        }
        runs_check_free(&y, planned ? "SpMV with a plan" : "SpMV");
    }

    three_runs c = runs_alloc(m * K, type);
    for (int run = 0; run < 3; run++) {
        const sr_dense cv = sr_dense_view(c.out[run], m, K, type, SR_ROW_MAJOR, SR_HOST);
        CHECK_OK(sr_spmm(run < 2 ? ctx : other, &cv, NULL, SR_PLUS_TIMES, run < 2 ? A : A2, &Bv, NULL));
    }
    runs_check_free(&c, "SpMM");

    three_runs s = runs_alloc(a.nnz, type);
    for (int run = 0; run < 3; run++) {
        const sr_dense sv = sr_vector_view(s.out[run], a.nnz, type, SR_HOST);
        CHECK_OK(sr_sddmm_values(run < 2 ? ctx : other, &sv, SR_PLUS_TIMES, 1.0, run < 2 ? A : A2, &Uv, &Bv, 0.0, NULL));
    }
    runs_check_free(&s, "SDDMM");

    sr_matrix_free(A);
    sr_matrix_free(A2);
    sr_context_destroy(other);
    free(x);
    free(B);
    free(U);
    test_csr_free(&a);
}

static void check_pagerank(sr_type type)
{
    test_csr g = test_random_csr(4000, 4000, 12, SR_TYPE_FLOAT64);
    for (int64_t k = 0; k < g.nnz; k++) /* edge weights >= 0 */
        ((double *)g.values)[k] = fabs(((double *)g.values)[k]);
    sr_context other = second_context(false);
    sr_matrix A = test_make_matrix_at(ctx, &g, where), A2 = test_make_matrix_at(other, &g, where);
    three_runs r = runs_alloc(g.nrows, type);
    int iterations[3] = {0};
    for (int run = 0; run < 3; run++) {
        sr_pagerank_options o = sr_pagerank_options_default();
        o.tolerance = 1e-10;
        sr_pagerank_result res;
        const sr_dense rv = sr_vector_view(r.out[run], g.nrows, type, SR_HOST);
        CHECK_OK(sr_pagerank(run < 2 ? ctx : other, run < 2 ? A : A2, &o, &rv, &res));
        iterations[run] = res.iterations;
    }
    CHECK(iterations[0] == iterations[1] && iterations[0] == iterations[2], "PageRank took %d, %d and %d iterations",
          iterations[0], iterations[1], iterations[2]);
    runs_check_free(&r, "PageRank");
    sr_matrix_free(A);
    sr_matrix_free(A2);
    sr_context_destroy(other);
    test_csr_free(&g);
}

/* C copied to the host, for comparing bits. */
static sr_matrix to_host(sr_context c, sr_matrix C)
{
    sr_matrix h = NULL;
    CHECK_OK(sr_matrix_copy_to(c, C, SR_HOST, &h));
    return h;
}

/* Whether two host matrices have the same pattern and value bits; *differ counts the values that do not. */
static bool same_matrix(sr_matrix X, sr_matrix Y, int64_t *differ)
{
    sr_matrix_info xi, yi;
    sr_matrix_get_info(X, &xi);
    sr_matrix_get_info(Y, &yi);
    const int64_t *xr, *yr;
    const int32_t *xc, *yc;
    const void *xv, *yv;
    sr_matrix_csr_arrays(X, &xr, &xc, &xv);
    sr_matrix_csr_arrays(Y, &yr, &yc, &yv);
    *differ = -1;
    if (xi.nnz != yi.nnz || memcmp(xr, yr, (size_t)(xi.nrows + 1) * 8) != 0 ||
        memcmp(xc, yc, (size_t)xi.nnz * 4) != 0)
        return false;
    *differ = bits_differ(xv, yv, xi.nnz, xi.type);
    return *differ == 0;
}

/* A·B (plus_times) against a float64 reference computed here: pattern exactly, values within a
 * few rounding errors of the sum of their terms' magnitudes. */
static void check_against_reference(sr_matrix H, const test_csr *a, const test_csr *b, sr_type type, const char *what)
{
    const int64_t *rp;
    const int32_t *ci;
    const void *v;
    sr_matrix_csr_arrays(H, &rp, &ci, &v);
    double *sum = calloc((size_t)b->ncols, sizeof *sum), *magnitude = calloc((size_t)b->ncols, sizeof *magnitude);
    char *seen = calloc((size_t)b->ncols, 1);
    const double tolerance = type == SR_TYPE_FLOAT64 ? 1e-13 : 1e-5;
    int64_t wrong = 0, products = 0;
    for (int64_t i = 0; i < a->nrows; i++) {
        int64_t count = 0;
        for (int64_t ka = a->rowptr[i]; ka < a->rowptr[i + 1]; ka++)
            for (int64_t kb = b->rowptr[a->colind[ka]]; kb < b->rowptr[a->colind[ka] + 1]; kb++) {
                const int32_t j = b->colind[kb];
                const double term = test_csr_value(a, ka) * test_csr_value(b, kb);
                count += !seen[j];
                seen[j] = 1;
                sum[j] += term;
                magnitude[j] += fabs(term);
                products++;
            }
        wrong += rp[i + 1] - rp[i] != count;
        for (int64_t k = rp[i]; k < rp[i + 1]; k++) {
            const int32_t j = ci[k];
            const double got = type == SR_TYPE_FLOAT64 ? ((const double *)v)[k] : ((const float *)v)[k];
            wrong += !seen[j] || fabs(got - sum[j]) > tolerance * (1.0 + magnitude[j]);
        }
        for (int64_t ka = a->rowptr[i]; ka < a->rowptr[i + 1]; ka++)
            for (int64_t kb = b->rowptr[a->colind[ka]]; kb < b->rowptr[a->colind[ka] + 1]; kb++) {
                const int32_t j = b->colind[kb];
                sum[j] = magnitude[j] = 0;
                seen[j] = 0;
            }
    }
    printf("SpGEMM %s (%s, %s): %lld products into %lld entries\n", what, test_backend_name(ctx), sr_type_name(type),
           (long long)products, (long long)rp[a->nrows]);
    CHECK(products > 2 * rp[a->nrows], "%s: too few products meet in a column to test their order", what);
    CHECK(wrong == 0, "%s (%s, %s): %lld row lengths or values differ from the reference", what,
          test_backend_name(ctx), sr_type_name(type), (long long)wrong);
    free(sum);
    free(magnitude);
    free(seen);
}

/* SpGEMM on deterministic contexts, on products whose rows' terms meet in a column many times:
 * rows of the warp and block hash tables and dense rows (each of B's few columns is met by
 * tens of a row's products), with and without a mask. */
static void check_mxm(sr_type type)
{
    const struct {
        int64_t m, k, n;
        double a_degree, b_degree;
        const char *rows;
    } shapes[] = {
        {3000, 300, 80, 20, 15, "warp hash rows"},
        {1500, 200, 300, 30, 60, "block hash rows"},
        {64, 2000, 1000, 500, 100, "dense rows (tiled)"},
        {64, 20000, 500, 3000, 4, "dense rows (global)"},
    };
    CHECK_OK(sr_context_set_deterministic(ctx, true));
    sr_context other = second_context(true);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        test_csr a = test_random_csr(shapes[s].m, shapes[s].k, shapes[s].a_degree, type);
        test_csr b = test_random_csr(shapes[s].k, shapes[s].n, shapes[s].b_degree, type);
        test_csr mk = test_random_csr(shapes[s].m, shapes[s].n, 0.3 * (double)shapes[s].n, SR_TYPE_BOOL);
        sr_matrix A = test_make_matrix_at(ctx, &a, where), B = test_make_matrix_at(ctx, &b, where);
        sr_matrix M = test_make_matrix_at(ctx, &mk, where);
        sr_matrix A2 = test_make_matrix_at(other, &a, where), B2 = test_make_matrix_at(other, &b, where);
        sr_matrix M2 = test_make_matrix_at(other, &mk, where);
        for (int masked = 0; masked < 2; masked++) {
            sr_matrix C[3] = {NULL, NULL, NULL}, H[3] = {NULL, NULL, NULL};
            for (int run = 0; run < 3; run++) {
                sr_context c = run < 2 ? ctx : other;
                CHECK_OK(sr_mxm(c, &C[run], masked ? (run < 2 ? M : M2) : NULL, SR_PLUS_TIMES, run < 2 ? A : A2,
                                run < 2 ? B : B2, NULL));
                if (C[run])
                    H[run] = to_host(c, C[run]);
            }
            if (H[0] && H[1] && H[2]) {
                int64_t again = 0, on_other = 0;
                const bool same = same_matrix(H[0], H[1], &again) & same_matrix(H[0], H[2], &on_other);
                CHECK(same, "SpGEMM %s%s (%s, %s) on deterministic contexts: %lld values differ on a second call, "
                      "%lld on a second context (-1: the pattern)", shapes[s].rows, masked ? ", masked" : "",
                      test_backend_name(ctx), sr_type_name(type), (long long)again, (long long)on_other);
                if (!masked)
                    check_against_reference(H[0], &a, &b, type, shapes[s].rows);
            }
            for (int run = 0; run < 3; run++) {
                sr_matrix_free(C[run]);
                sr_matrix_free(H[run]);
            }
        }
        sr_matrix_free(A);
        sr_matrix_free(B);
        sr_matrix_free(M);
        sr_matrix_free(A2);
        sr_matrix_free(B2);
        sr_matrix_free(M2);
        test_csr_free(&a);
        test_csr_free(&b);
        test_csr_free(&mk);
    }
    sr_context_destroy(other);
    CHECK_OK(sr_context_set_deterministic(ctx, false));
}

static void run_all(void)
{
    const sr_type types[] = {SR_TYPE_FLOAT32, SR_TYPE_FLOAT64};
    for (int t = 0; t < 2; t++) {
        check_products(types[t]);
        check_pagerank(types[t]);
        check_mxm(types[t]);
    }
}

int main(void)
{
    test_seed("test_repeat_bits");
    test_on_each_backend(&ctx, &where, run_all);
    return test_finish("test_repeat_bits");
}
