/* The OpenCL backend against the CPU backend on inputs that reach each of its kernel paths:
 * products whose rows sort in local memory, rows of a bitmap tile and of several tiles (hubs and
 * a product wider than a tile), masks and complements on each, fill passes in many batches (a
 * tiny workspace limit), transposes whose long rows sort in global memory, element-wise merges,
 * Kronecker, extraction, reduction and transitive closure. Results must be identical (the same
 * CSR arrays). Skipped, with the reason, where no OpenCL device is found. */
#include <pthread.h>

#include "test_util.h"

static sr_context cpu, ocl;

/* The same matrices' result on both backends, compared. */
static void same(sr_matrix C_cpu, sr_matrix C_ocl, const char *what)
{
    bool equal = false;
    CHECK_OK(sr_matrix_equal(cpu, C_cpu, C_ocl, &equal));
    CHECK(equal, "%s: the OpenCL result differs from the CPU backend's", what);
}

static void check_mxm(int64_t m, int64_t k, int64_t n, double da, double db, const char *what)
{
    test_csr a = test_random_csr(m, k, da, SR_TYPE_BOOL), b = test_random_csr(k, n, db, SR_TYPE_BOOL);
    test_csr mk = test_random_csr(m, n, 0.2 * (double)(n < 4000 ? n : 4000) + 1, SR_TYPE_BOOL);
    sr_matrix A = test_make_matrix(cpu, &a), B = test_make_matrix(cpu, &b), M = test_make_matrix(cpu, &mk);
    char name[160];
    for (int variant = 0; variant < 3; variant++) { /* plain, mask, complement */
        sr_descriptor d = {.mask_complement = variant == 2};
        sr_matrix mask = variant ? M : NULL, C[2] = {NULL, NULL};
        CHECK_OK(sr_mxm(cpu, &C[0], mask, SR_OR_AND, A, B, &d));
        CHECK_OK(sr_mxm(ocl, &C[1], mask, SR_OR_AND, A, B, &d));
        snprintf(name, sizeof name, "mxm %s (%lld x %lld x %lld) variant %d", what, (long long)m, (long long)k,
                 (long long)n, variant);
        same(C[0], C[1], name);
        sr_matrix_free(C[0]);
        sr_matrix_free(C[1]);
    }
    sr_matrix_free(A), sr_matrix_free(B), sr_matrix_free(M);
    test_csr_free(&a), test_csr_free(&b), test_csr_free(&mk);
}

/* A·A, A·Aᵀ and Aᵀ of one skewed square matrix: hub rows take the bitmap, short rows the sort. */
static void check_square(int64_t n, double degree)
{
    test_csr a = test_random_csr(n, n, degree, SR_TYPE_BOOL);
    sr_matrix A = test_make_matrix(cpu, &a), C[2] = {NULL, NULL}, T[2] = {NULL, NULL};
    CHECK_OK(sr_mxm(cpu, &C[0], NULL, SR_OR_AND, A, A, NULL));
    CHECK_OK(sr_mxm(ocl, &C[1], NULL, SR_OR_AND, A, A, NULL));
    same(C[0], C[1], "A·A");
    sr_descriptor d = {.transpose_b = true};
    sr_matrix_free(C[0]), sr_matrix_free(C[1]);
    CHECK_OK(sr_mxm(cpu, &C[0], NULL, SR_OR_AND, A, A, &d));
    CHECK_OK(sr_mxm(ocl, &C[1], NULL, SR_OR_AND, A, A, &d));
    same(C[0], C[1], "A·Aᵀ");
    CHECK_OK(sr_matrix_transpose(cpu, A, &T[0]));
    CHECK_OK(sr_matrix_transpose(ocl, A, &T[1]));
    same(T[0], T[1], "transpose");
    sr_matrix_free(C[0]), sr_matrix_free(C[1]), sr_matrix_free(T[0]), sr_matrix_free(T[1]), sr_matrix_free(A);
    test_csr_free(&a);
}

/* Closure both ways (semi-naive and squaring), which call mxm and add on the backend: a graph
 * small enough that squaring its nearly complete closure stays quick on PoCL's CPU device. */
static void check_closure(int64_t n, double degree)
{
    test_csr a = test_random_csr(n, n, degree, SR_TYPE_BOOL);
    sr_matrix A = test_make_matrix(cpu, &a);
    /* closure both ways (semi-naive and squaring), which call mxm and add on the backend */
    for (int method = 1; method <= 2; method++) {
        sr_matrix R[2] = {NULL, NULL};
        CHECK_OK(sr_transitive_closure(cpu, A, (sr_closure_method)method, &R[0], NULL, NULL));
        CHECK_OK(sr_transitive_closure(ocl, A, (sr_closure_method)method, &R[1], NULL, NULL));
        same(R[0], R[1], method == 1 ? "closure, semi-naive" : "closure, squaring");
        sr_matrix_free(R[0]), sr_matrix_free(R[1]);
    }
    sr_matrix_free(A);
    test_csr_free(&a);
}

/* A dense column: its transposed row (thousands of entries) sorts in global memory. */
static void check_transpose_long_rows(void)
{
    test_csr a = test_random_csr(3000, 40, 2, SR_TYPE_BOOL);
    /* every row also gets column 0: rebuild the rows with it in front */
    test_csr b = {a.nrows, a.ncols, 0, SR_TYPE_BOOL, calloc((size_t)a.nrows + 1, sizeof(int64_t)), NULL, NULL};
    b.colind = malloc((size_t)(a.nnz + a.nrows) * sizeof(int32_t));
    for (int64_t i = 0; i < a.nrows; i++) {
        int64_t o = b.rowptr[i];
        b.colind[o++] = 0;
        for (int64_t e = a.rowptr[i]; e < a.rowptr[i + 1]; e++)
            if (a.colind[e] != 0)
                b.colind[o++] = a.colind[e];
        b.rowptr[i + 1] = o;
    }
    b.nnz = b.rowptr[b.nrows];
    sr_matrix B = test_make_matrix(cpu, &b), T[2] = {NULL, NULL};
    CHECK_OK(sr_matrix_transpose(cpu, B, &T[0]));
    CHECK_OK(sr_matrix_transpose(ocl, B, &T[1]));
    same(T[0], T[1], "transpose with a 3000-entry row");
    sr_matrix_free(T[0]), sr_matrix_free(T[1]), sr_matrix_free(B);
    test_csr_free(&a), test_csr_free(&b);
}

static void check_structure(int64_t m, int64_t n, double degree)
{
    test_csr a = test_random_csr(m, n, degree, SR_TYPE_BOOL), b = test_random_csr(m, n, degree, SR_TYPE_BOOL);
    test_csr mk = test_random_csr(m, n, degree, SR_TYPE_BOOL);
    sr_matrix A = test_make_matrix(cpu, &a), B = test_make_matrix(cpu, &b), M = test_make_matrix(cpu, &mk);
    char name[128];
    for (int op = 0; op < 2; op++)
        for (int variant = 0; variant < 4; variant++) { /* plain, mask, complement, accumulate */
            sr_descriptor d = {.mask_complement = variant == 2, .accumulate = variant == 3};
            sr_matrix C[2] = {NULL, NULL};
            if (variant == 3) {
                CHECK_OK(sr_matrix_dup(cpu, M, &C[0]));
                CHECK_OK(sr_matrix_dup(cpu, M, &C[1]));
            }
            sr_matrix mask = variant == 1 || variant == 2 ? M : NULL;
            if (op == 0) {
                CHECK_OK(sr_ewise_add(cpu, &C[0], mask, SR_OR_AND, A, B, &d));
                CHECK_OK(sr_ewise_add(ocl, &C[1], mask, SR_OR_AND, A, B, &d));
            } else {
                CHECK_OK(sr_ewise_mult(cpu, &C[0], mask, SR_OR_AND, A, B, &d));
                CHECK_OK(sr_ewise_mult(ocl, &C[1], mask, SR_OR_AND, A, B, &d));
            }
            snprintf(name, sizeof name, "%s %lld x %lld variant %d", op ? "mult" : "add", (long long)m, (long long)n,
                     variant);
            same(C[0], C[1], name);
            sr_matrix_free(C[0]), sr_matrix_free(C[1]);
        }
    sr_matrix E[2] = {NULL, NULL}, R[2] = {NULL, NULL};
    CHECK_OK(sr_extract(cpu, &E[0], A, m / 3, n / 4, m - m / 3, n / 2));
    CHECK_OK(sr_extract(ocl, &E[1], A, m / 3, n / 4, m - m / 3, n / 2));
    same(E[0], E[1], "extract");
    CHECK_OK(sr_reduce_rows(cpu, &R[0], SR_OR_AND, A));
    CHECK_OK(sr_reduce_rows(ocl, &R[1], SR_OR_AND, A));
    same(R[0], R[1], "reduce_rows");
    sr_matrix_free(E[0]), sr_matrix_free(E[1]), sr_matrix_free(R[0]), sr_matrix_free(R[1]);
    /* Kronecker of a slice of each (the product's size is the product of theirs) */
    sr_matrix a_small = NULL, b_small = NULL, K[2] = {NULL, NULL};
    CHECK_OK(sr_extract(cpu, &a_small, A, 0, 0, m < 30 ? m : 30, n < 40 ? n : 40));
    CHECK_OK(sr_extract(cpu, &b_small, B, 0, 0, m < 50 ? m : 50, n < 20 ? n : 20));
    CHECK_OK(sr_kronecker(cpu, &K[0], NULL, SR_OR_AND, a_small, b_small, NULL));
    CHECK_OK(sr_kronecker(ocl, &K[1], NULL, SR_OR_AND, a_small, b_small, NULL));
    same(K[0], K[1], "kronecker");
    sr_matrix_free(K[0]), sr_matrix_free(K[1]), sr_matrix_free(a_small), sr_matrix_free(b_small);
    sr_matrix_free(A), sr_matrix_free(B), sr_matrix_free(M);
    test_csr_free(&a), test_csr_free(&b), test_csr_free(&mk);
}

/* The non-Boolean operations of an OpenCL context run on the CPU backend. */
static void check_numeric_falls_back(void)
{
    test_csr a = test_random_csr(50, 60, 4, SR_TYPE_FLOAT64);
    sr_matrix A = test_make_matrix(cpu, &a), C[2] = {NULL, NULL};
    sr_descriptor d = {.transpose_b = true};
    CHECK_OK(sr_mxm(cpu, &C[0], NULL, SR_PLUS_TIMES, A, A, &d));
    CHECK_OK(sr_mxm(ocl, &C[1], NULL, SR_PLUS_TIMES, A, A, &d));
    same(C[0], C[1], "float64 A·Aᵀ on an OpenCL context");
    sr_matrix_free(C[0]), sr_matrix_free(C[1]), sr_matrix_free(A);
    test_csr_free(&a);
}

/* Several threads on one OpenCL context at once (its queue and staging buffer are shared). */
typedef struct {
    sr_matrix A, expected;
    int failures;
} thread_job;

static void *mxm_repeatedly(void *arg)
{
    thread_job *job = arg;
    for (int r = 0; r < 4; r++) {
        sr_matrix C = NULL;
        bool equal = false;
        if (sr_mxm(ocl, &C, NULL, SR_OR_AND, job->A, job->A, NULL) != SR_SUCCESS ||
            sr_matrix_equal(cpu, job->expected, C, &equal) != SR_SUCCESS || !equal)
            job->failures++;
        sr_matrix_free(C);
    }
    return NULL;
}

static void check_threads(void)
{
    test_csr a = test_random_csr(600, 600, 10, SR_TYPE_BOOL);
    sr_matrix A = test_make_matrix(cpu, &a), expected = NULL;
    CHECK_OK(sr_mxm(cpu, &expected, NULL, SR_OR_AND, A, A, NULL));
    pthread_t threads[4];
    thread_job jobs[4];
    for (int t = 0; t < 4; t++) {
        jobs[t] = (thread_job){A, expected, 0};
        pthread_create(&threads[t], NULL, mxm_repeatedly, &jobs[t]);
    }
    for (int t = 0; t < 4; t++) {
        pthread_join(threads[t], NULL);
        CHECK(jobs[t].failures == 0, "thread %d: %d of 4 products on the shared OpenCL context went wrong", t,
              jobs[t].failures);
    }
    sr_matrix_free(expected), sr_matrix_free(A);
    test_csr_free(&a);
}

int main(void)
{
    test_seed("test_opencl");
    sr_context_options o = sr_context_options_default();
    o.backend = SR_BACKEND_OPENCL;
    /* kernels that do not compile (an empty bitmap size) fail the context with the compiler's log;
     * a failed build is not kept, so the next context builds again */
    setenv("SPARSERING_OPENCL_OPTIONS", "-DBITMAP_WORDS=", 1);
    sr_status broken = sr_context_create(&ocl, &o);
    unsetenv("SPARSERING_OPENCL_OPTIONS");
    if (broken != SR_ERROR_NO_DEVICE) {
        CHECK(broken == SR_ERROR_DEVICE && strstr(sr_last_error(), "the kernels did not build for"),
              "a broken kernel build gave %s: %s", sr_status_name(broken), sr_last_error());
        if (broken == SR_SUCCESS)
            sr_context_destroy(ocl);
    }
    if (sr_context_create(&ocl, &o) != SR_SUCCESS) {
        printf("SKIP test_opencl: %s\n", sr_last_error());
        /* CI installs PoCL: there a skip would hide a broken backend */
        return getenv("SR_TEST_REQUIRE_OPENCL") ? 1 : SR_TEST_SKIP;
    }
    o.backend = SR_BACKEND_CPU;
    CHECK_OK(sr_context_create(&cpu, &o));
    sr_backend b;
    CHECK_OK(sr_context_get_backend(ocl, &b));
    CHECK(b == SR_BACKEND_OPENCL, "an OpenCL context reports backend %d", (int)b);

    check_mxm(200, 150, 300, 3, 3, "short rows");
    check_mxm(300, 400, 500, 30, 40, "bitmap rows");
    check_mxm(120, 2000, 600000, 60, 8, "rows over several bitmap tiles");
    check_square(3000, 12);
    check_closure(400, 3);
    check_transpose_long_rows();
    check_structure(400, 700, 12);
    check_structure(0, 0, 0);
    check_structure(1, 1, 1);
    check_numeric_falls_back();
    /* results built in many fill batches: 64 entries a batch */
    CHECK_OK(sr_context_set_workspace_limit(ocl, 256));
    check_mxm(300, 400, 500, 30, 40, "bitmap rows, many batches");
    check_structure(400, 700, 12);
    CHECK_OK(sr_context_set_workspace_limit(ocl, 0));

    /* copies through a pinned staging buffer (GPUs take it; here forced, in 4 KiB pieces) */
    setenv("SPARSERING_OPENCL_STAGING", "1", 1);
    setenv("SPARSERING_OPENCL_STAGING_BYTES", "4096", 1);
    sr_context plain = ocl;
    o.backend = SR_BACKEND_OPENCL;
    CHECK_OK(sr_context_create(&ocl, &o));
    check_mxm(300, 400, 500, 30, 40, "bitmap rows, staged copies");
    check_square(1000, 8);
    check_structure(400, 700, 12);
    check_threads();
    sr_context_destroy(ocl);
    ocl = plain;
    unsetenv("SPARSERING_OPENCL_STAGING");
    unsetenv("SPARSERING_OPENCL_STAGING_BYTES");

    /* a second context on the device reuses its built program; a device past the list is refused */
    sr_context again = NULL;
    CHECK_OK(sr_context_create(&again, &o));
    sr_context_destroy(again);
    o.device = 999;
    CHECK_FAILS(sr_context_create(&again, &o), SR_ERROR_NO_DEVICE, "OpenCL device 999 was asked for");
    sr_context_destroy(ocl);
    sr_context_destroy(cpu);
    return test_finish("test_opencl");
}
