/* Every public operation made to fail at each of its allocations, GraphBLAS's way: for
 * N = 0, 1, 2, ... every allocation after the first N fails (sr_debug_fail_allocations), until
 * the call runs without meeting one. Each failed call must return SR_ERROR_OUT_OF_MEMORY (or the
 * device's) with a message, leave a new-matrix output unwritten (NULL) and leak nothing (CI runs
 * this under ASan and LeakSanitizer); the call that finally succeeds must give the answer of a
 * run without failures. On every backend the machine has (device allocations fail too on CUDA). */
#include <unistd.h>

#include "test_util.h"

#include "../src/core/memory.h"

static sr_context ctx;
static sr_location where;
static sr_matrix A, B, G, X, Mask; /* inputs, made once a backend */
static double dense_out[4096];         /* dense outputs, compared by checksum */
static int64_t index_out[512];

/* A matrix's checksum: entries and the sum of values (entries for bool). */
static double matrix_sum(sr_matrix M)
{
    if (!M)
        return -1.0;
    sr_matrix H = NULL;
    sr_matrix_info info;
    double sum = 0;
    if (sr_matrix_copy_to(ctx, M, SR_HOST, &H) != SR_SUCCESS || sr_matrix_get_info(H, &info) != SR_SUCCESS)
        return -2.0;
    const void *vals = NULL;
    sr_matrix_csr_arrays(H, NULL, NULL, &vals);
    for (int64_t e = 0; e < info.nnz; e++)
        sum += !vals ? 1.0
               : info.type == SR_TYPE_FLOAT64 ? ((const double *)vals)[e]
               : info.type == SR_TYPE_FLOAT32 ? ((const float *)vals)[e]
               : info.type == SR_TYPE_INT32   ? ((const int32_t *)vals)[e]
                                              : 1.0;
    sr_matrix_free(H);
    return sum + 1e6 * (double)info.nnz;
}

static double dense_sum(void)
{
    double s = 0;
    for (size_t i = 0; i < sizeof dense_out / sizeof *dense_out; i++)
        s += isnan(dense_out[i]) ? 0.5 : dense_out[i] * (double)(i % 7 + 1);
    for (size_t i = 0; i < sizeof index_out / sizeof *index_out; i++)
        s += (double)index_out[i] * (double)(i % 5 + 1);
    return s;
}

typedef sr_status (*operation)(sr_matrix *out);

/* Runs op with failures after 0, 1, 2, ... allocations until it succeeds. */
static void sweep(const char *name, operation op)
{
    if (!test_part_selected()) /* SR_TEST_PART: another part runs it */
        return;
    memset(dense_out, 0, sizeof dense_out), memset(index_out, 0, sizeof index_out);
    sr_matrix ref = NULL;
    sr_status st = op(&ref);
    CHECK(st == SR_SUCCESS, "%s (%s): fails without injected failures: %s", name, test_backend_name(ctx),
          sr_last_error());
    const double want = matrix_sum(ref) + dense_sum();
    sr_matrix_free(ref);
    /* On CUDA, SpGEMM, the fused pattern and the tiled distance kernels sum with floating atomics
     * in no fixed order (docs/c-library.md, Threads): values agree to about 1e-12 relative in
     * float64 there, bit for bit elsewhere. The checksum's entry count (1e6 an entry) is far
     * above that slack, so a lost or extra entry still fails. */
    sr_backend backend = SR_BACKEND_CPU;
    sr_context_get_backend(ctx, &backend);
    const double slack = backend == SR_BACKEND_CUDA ? 1e-12 * fabs(want) : 0.0;
    size_t device_start = 0, peak = 0; /* the context's device bytes: back here after every failure */
    sr_context_device_memory(ctx, &device_start, &peak);
    long long n = 0;
    for (;; n++) {
        memset(dense_out, 0, sizeof dense_out), memset(index_out, 0, sizeof index_out);
        sr_matrix out = NULL;
        sr_debug_fail_allocations(n);
        st = op(&out);
        const bool failed = sr_debug_fail_allocations(-1);
        if (!failed) {
            CHECK(st == SR_SUCCESS, "%s: after %lld allocations, %s", name, n, sr_last_error());
            const double got = matrix_sum(out) + dense_sum();
            CHECK(fabs(got - want) <= slack, "%s: after %lld failures the answer differs (%.17g, want %.17g)", name, n,
                  got, want);
            sr_matrix_free(out);
            break;
        }
        CHECK(st == SR_ERROR_OUT_OF_MEMORY || st == SR_ERROR_DEVICE_OUT_OF_MEMORY,
              "%s (%s): allocation %lld failed, but the call returned %s: %s", name, test_backend_name(ctx), n,
              sr_status_name(st), sr_last_error());
        CHECK(sr_last_error()[0] != '\0', "%s: allocation %lld failed with no message", name, n);
        CHECK(out == NULL, "%s: allocation %lld failed, yet the output was written", name, n);
        sr_matrix_free(out);
        size_t device_now = 0;
        sr_context_device_memory(ctx, &device_now, &peak);
        CHECK(device_now == device_start, "%s: allocation %lld failed and the context's device bytes went %zu -> %zu",
              name, n, device_start, device_now);
        if (n > 100000) {
            CHECK(false, "%s: still failing after %lld allocations", name, n);
            break;
        }
    }
    printf("  %-22s %4lld allocations swept\n", name, n);
}

static test_csr csr; /* made once */
static sr_status op_from_csr(sr_matrix *out)
{
    return sr_matrix_from_csr(ctx, out, csr.nrows, csr.ncols, SR_TYPE_FLOAT64, csr.rowptr, csr.colind, csr.values,
                              SR_HOST);
}
static sr_status op_copy_to(sr_matrix *out) { return sr_matrix_copy_to(ctx, A, where, out); }
static sr_status op_transpose(sr_matrix *out) { return sr_matrix_transpose(ctx, A, out); }
static sr_status op_mxm(sr_matrix *out) { return sr_mxm(ctx, out, NULL, SR_PLUS_TIMES, A, B, NULL); }
static sr_status op_mxm_masked(sr_matrix *out)
{
    const sr_descriptor d = {.mask_complement = true};
    return sr_mxm(ctx, out, Mask, SR_MIN_PLUS, A, B, &d);
}
static sr_status op_mxm_accumulate(sr_matrix *out)
{
    sr_status st = sr_mxm(ctx, out, NULL, SR_PLUS_TIMES, A, B, NULL);
    if (st != SR_SUCCESS)
        return st;
    const sr_descriptor d = {.accumulate = true};
    st = sr_mxm(ctx, out, NULL, SR_PLUS_TIMES, A, B, &d); /* *out replaced on success, kept on failure */
    if (st != SR_SUCCESS)
        sr_matrix_free(*out), *out = NULL;
    return st;
}
static sr_status op_mxm_bool(sr_matrix *out) { return sr_mxm(ctx, out, NULL, SR_OR_AND, G, G, NULL); }
static sr_status op_ewise_add(sr_matrix *out) { return sr_ewise_add(ctx, out, NULL, SR_OR_AND, G, G, NULL); }
static sr_status op_ewise_mult(sr_matrix *out) { return sr_ewise_mult(ctx, out, NULL, SR_PLUS_TIMES, A, A, NULL); }
static sr_status op_kronecker(sr_matrix *out) { return sr_kronecker(ctx, out, NULL, SR_OR_AND, G, G, NULL); }
static sr_status op_extract(sr_matrix *out) { return sr_extract(ctx, out, A, 3, 2, 20, 20); }
static sr_status op_reduce(sr_matrix *out) { return sr_reduce_rows(ctx, out, SR_PLUS_TIMES, A); }
static sr_status op_spmv(sr_matrix *out)
{
    (void)out;
    double x[30];
    for (int i = 0; i < 30; i++)
        x[i] = i + 1;
    sr_dense xv = sr_vector_view(x, 30, SR_TYPE_FLOAT64, SR_HOST), yv = sr_vector_view(dense_out, 40, SR_TYPE_FLOAT64, SR_HOST);
    return sr_spmv(ctx, &yv, NULL, SR_PLUS_TIMES, A, &xv, NULL);
}
static sr_status op_spmm(sr_matrix *out)
{
    (void)out;
    static double b[30 * 8];
    for (int i = 0; i < 30 * 8; i++)
        b[i] = i % 11;
    sr_dense bv = sr_dense_view(b, 30, 8, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    sr_dense cv = sr_dense_view(dense_out, 40, 8, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    return sr_spmm(ctx, &cv, NULL, SR_PLUS_TIMES, A, &bv, NULL);
}
static sr_status op_distance(sr_matrix *out)
{
    (void)out;
    sr_dense D = sr_dense_view(dense_out, 50, 50, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    return sr_pairwise_distance(ctx, X, X, SR_METRIC_L1, 0, &D);
}
static sr_status op_knn(sr_matrix *out)
{
    (void)out;
    sr_dense D = sr_dense_view(dense_out, 50, 5, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    return sr_knn(ctx, X, X, 5, SR_METRIC_COSINE, 0, index_out, &D, NULL);
}
static sr_status op_knn_graph(sr_matrix *out) { return sr_knn_graph(ctx, X, 4, SR_METRIC_L2, 0, NULL, out); }
static sr_status op_radius(sr_matrix *out) { return sr_radius_neighbors(ctx, X, NULL, 0.8, SR_METRIC_COSINE, 0, NULL, out); }
static sr_status op_sddmm(sr_matrix *out)
{
    static double a[40 * 8], b[30 * 8];
    for (int i = 0; i < 40 * 8; i++)
        a[i] = (i % 13) * 0.25;
    for (int i = 0; i < 30 * 8; i++)
        b[i] = (i % 7) * 0.5;
    sr_dense av = sr_dense_view(a, 40, 8, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    sr_dense bv = sr_dense_view(b, 30, 8, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    return sr_sddmm(ctx, out, SR_PLUS_TIMES, 1.0, A, &av, &bv, 0.0, NULL);
}
static sr_status op_sddmm_spmm(sr_matrix *out)
{
    (void)out;
    static double a[40 * 8], b[30 * 8], v[30 * 4];
    for (int i = 0; i < 40 * 8; i++)
        a[i] = (i % 13) * 0.25;
    for (int i = 0; i < 30 * 8; i++)
        b[i] = (i % 7) * 0.5;
    for (int i = 0; i < 30 * 4; i++)
        v[i] = i % 3;
    sr_dense av = sr_dense_view(a, 40, 8, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    sr_dense bv = sr_dense_view(b, 30, 8, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    sr_dense vv = sr_dense_view(v, 30, 4, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    sr_dense ov = sr_dense_view(dense_out, 40, 4, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    return sr_sddmm_spmm(ctx, &ov, 0.5, A, &av, &bv, &vv, SR_NORMALIZE_SOFTMAX, NULL);
}
static sr_status op_fused(sr_matrix *out)
{
    (void)out;
    double y[30], z[30];
    for (int i = 0; i < 30; i++)
        y[i] = i * 0.1, z[i] = 1;
    sr_dense yv = sr_vector_view(y, 30, SR_TYPE_FLOAT64, SR_HOST), zv = sr_vector_view(z, 30, SR_TYPE_FLOAT64, SR_HOST);
    sr_dense wv = sr_vector_view(dense_out, 30, SR_TYPE_FLOAT64, SR_HOST);
    return sr_fused_pattern(ctx, SR_FORM_XTVXY, &wv, 2.0, A, NULL, &yv, 0.5, &zv);
}
/* The vector calls and their scalar forms where the context's work runs: vectors and a scalar
 * allocated there, x·y into the scalar, y += (x·y)·x, y / x, the results copied into dense_out. */
static sr_status op_vector_scalars(sr_matrix *out)
{
    (void)out;
    double x[50];
    for (int i = 0; i < 50; i++)
        x[i] = 1.0 + i * 0.25;
    const sr_dense xh = sr_vector_view(x, 50, SR_TYPE_FLOAT64, SR_HOST);
    const sr_dense yh = sr_vector_view(dense_out, 50, SR_TYPE_FLOAT64, SR_HOST), sh = sr_vector_view(dense_out + 50, 1, SR_TYPE_FLOAT64, SR_HOST);
    sr_dense xv = {0}, yv = {0}, s = {0};
    sr_status st = sr_vector_alloc(ctx, 50, SR_TYPE_FLOAT64, where, &xv);
    if (st == SR_SUCCESS)
        st = sr_vector_alloc(ctx, 50, SR_TYPE_FLOAT64, where, &yv);
    if (st == SR_SUCCESS)
        st = sr_vector_alloc(ctx, 1, SR_TYPE_FLOAT64, where, &s);
    if (st == SR_SUCCESS)
        st = sr_vector_copy(ctx, &xv, &xh);
    if (st == SR_SUCCESS)
        st = sr_vector_copy(ctx, &yv, &xh);
    if (st == SR_SUCCESS)
        st = sr_vector_dot_s(ctx, &xv, &yv, &s);
    if (st == SR_SUCCESS)
        st = sr_vector_axpby_s(ctx, 1e-3, &s, &xv, 1.0, NULL, &yv);
    if (st == SR_SUCCESS)
        st = sr_vector_divide(ctx, &yv, &yv, &xv);
    if (st == SR_SUCCESS)
        st = sr_vector_and_greater(ctx, &yv, &xv, 0.5);
    if (st == SR_SUCCESS)
        st = sr_vector_asum_s(ctx, &yv, &s);
    if (st == SR_SUCCESS)
        st = sr_vector_copy(ctx, &yh, &yv);
    if (st == SR_SUCCESS)
        st = sr_vector_copy(ctx, &sh, &s);
    sr_vector_free(ctx, &xv), sr_vector_free(ctx, &yv), sr_vector_free(ctx, &s);
    return st;
}
static sr_status op_closure(sr_matrix *out) { return sr_transitive_closure(ctx, G, SR_CLOSURE_SEMINAIVE, out, NULL, NULL); }
static sr_status op_reachability(sr_matrix *out)
{
    const int64_t sources[] = {0, 7, 19};
    return sr_reachability(ctx, G, 3, sources, out, NULL, NULL);
}
static sr_status op_cfpq(sr_matrix *out)
{
    sr_grammar g = NULL;
    const sr_status parsed = sr_grammar_parse("S -> a S b | a b", &g);
    if (parsed != SR_SUCCESS)
        return parsed;
    const char *labels[] = {"a", "b"};
    const sr_matrix graphs[] = {G, G};
    const sr_status st = sr_cfpq(ctx, g, 2, labels, graphs, NULL, out, NULL, NULL);
    sr_grammar_free(g);
    return st;
}
static sr_status op_pagerank(sr_matrix *out)
{
    (void)out;
    sr_dense rv = sr_vector_view(dense_out, 50, SR_TYPE_FLOAT64, SR_HOST);
    return sr_pagerank(ctx, G, NULL, &rv, NULL);
}
static sr_status op_ridge(sr_matrix *out)
{
    (void)out;
    double y[40];
    for (int i = 0; i < 40; i++)
        y[i] = i % 5;
    sr_dense yv = sr_vector_view(y, 40, SR_TYPE_FLOAT64, SR_HOST), wv = sr_vector_view(dense_out, 30, SR_TYPE_FLOAT64, SR_HOST);
    return sr_ridge(ctx, A, &yv, 0.5, NULL, &wv, NULL);
}
static sr_status op_logistic(sr_matrix *out)
{
    (void)out;
    double y[40];
    for (int i = 0; i < 40; i++)
        y[i] = i % 3 ? 1 : -1;
    sr_dense yv = sr_vector_view(y, 40, SR_TYPE_FLOAT64, SR_HOST), wv = sr_vector_view(dense_out, 30, SR_TYPE_FLOAT64, SR_HOST);
    return sr_logistic(ctx, A, &yv, 1.0, NULL, &wv, NULL);
}
static sr_status op_spmv_plan(sr_matrix *out)
{
    sr_status st = sr_matrix_dup(ctx, A, out);
    if (st != SR_SUCCESS)
        return st;
    sr_spmv_plan_info info;
    st = sr_spmv_plan(ctx, *out, &info);
    if (st != SR_SUCCESS)
        sr_matrix_free(*out), *out = NULL;
    return st;
}
static char mm_path[64];
static sr_status op_read_mm(sr_matrix *out) { return sr_matrix_read_mm(ctx, mm_path, -1, out, NULL); }

static sr_matrix made(int64_t m, int64_t n, double degree, sr_type type)
{
    test_csr c = test_random_csr(m, n, degree, type);
    sr_matrix M = test_make_matrix_at(ctx, &c, where);
    test_csr_free(&c);
    return M;
}

static void run_all(void)
{
    csr = test_random_csr(40, 30, 4, SR_TYPE_FLOAT64);
    A = made(40, 30, 4, SR_TYPE_FLOAT64);
    B = made(30, 35, 3, SR_TYPE_FLOAT64);
    Mask = made(40, 35, 5, SR_TYPE_BOOL);
    G = made(50, 50, 3, SR_TYPE_BOOL);
    X = made(50, 60, 6, SR_TYPE_FLOAT64);
    snprintf(mm_path, sizeof mm_path, "alloc_failures_%d.mtx", (int)getpid());
    CHECK_OK(sr_matrix_write_mm(ctx, A, mm_path, NULL));
    const struct {
        const char *name;
        operation op;
    } ops[] = {{"matrix_from_csr", op_from_csr}, {"matrix_copy_to", op_copy_to}, {"matrix_transpose", op_transpose},
               {"mxm", op_mxm}, {"mxm mask complement", op_mxm_masked}, {"mxm accumulate", op_mxm_accumulate},
               {"mxm or_and", op_mxm_bool}, {"ewise_add", op_ewise_add}, {"ewise_mult", op_ewise_mult},
               {"kronecker", op_kronecker}, {"extract", op_extract}, {"reduce_rows", op_reduce}, {"spmv", op_spmv},
               {"spmm", op_spmm}, {"pairwise_distance", op_distance}, {"knn", op_knn}, {"knn_graph", op_knn_graph},
               {"radius_neighbors", op_radius}, {"sddmm", op_sddmm}, {"sddmm_spmm", op_sddmm_spmm},
               {"fused_pattern", op_fused}, {"transitive_closure", op_closure}, {"reachability", op_reachability},
               {"cfpq", op_cfpq}, {"pagerank", op_pagerank}, {"ridge", op_ridge}, {"logistic", op_logistic},
               {"spmv_plan", op_spmv_plan}, {"matrix_read_mm", op_read_mm},
               {"vector calls with scalars", op_vector_scalars}};
    printf("%s backend:\n", test_backend_name(ctx));
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        sweep(ops[i].name, ops[i].op);
    remove(mm_path);
    test_csr_free(&csr);
    sr_matrix_free(A), sr_matrix_free(B), sr_matrix_free(Mask), sr_matrix_free(G), sr_matrix_free(X);
}

int main(void)
{
    test_seed("test_alloc_failures");
    test_on_each_backend(&ctx, &where, run_all);
    return test_finish("test_alloc_failures");
}
