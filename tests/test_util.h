/* A small test harness: printed seeds, checks that keep going, random skewed matrices. */
#ifndef SR_TEST_UTIL_H
#define SR_TEST_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sparsering.h"

#define SR_TEST_SKIP 77 /* ctest's SKIP_RETURN_CODE */

static int test_failures = 0;
static uint64_t test_rng_state = 1;

#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        if (!(cond)) {                                                        \
            test_failures++;                                                  \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);   \
            fprintf(stderr, __VA_ARGS__);                                     \
            fprintf(stderr, "\n");                                            \
        }                                                                     \
    } while (0)

#define CHECK_OK(expr)                                                                        \
    do {                                                                                      \
        sr_status check_ok_s_ = (expr);                                                       \
        CHECK(check_ok_s_ == SR_SUCCESS, "%s: %s", sr_status_name(check_ok_s_), sr_last_error()); \
    } while (0)

/* The call fails with `status` and its message contains `needle`. */
#define CHECK_FAILS(expr, status, needle)                                                          \
    do {                                                                                           \
        sr_status check_fails_s_ = (expr);                                                         \
        CHECK(check_fails_s_ == (status), "got %s (%s), expected %s", sr_status_name(check_fails_s_), \
              sr_last_error(), #status);                                                           \
        CHECK(strstr(sr_last_error(), (needle)) != NULL, "message '%s' lacks '%s'", sr_last_error(), (needle)); \
    } while (0)

static inline uint64_t test_rand(void)
{
    uint64_t x = test_rng_state; /* xorshift64* */
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    test_rng_state = x;
    return x * 2685821657736338717ull;
}

static inline double test_uniform(void) { return (double)(test_rand() >> 11) / 9007199254740992.0; }
static inline int64_t test_below(int64_t n) { return n > 0 ? (int64_t)(test_rand() % (uint64_t)n) : 0; }

/* Seeds from SR_TEST_SEED or the clock, and prints how to rerun. */
static inline void test_seed(const char *name)
{
    const char *env = getenv("SR_TEST_SEED");
    uint64_t seed = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL) ^ ((uint64_t)clock() << 20);
    if (seed == 0)
        seed = 1;
    test_rng_state = seed;
    /* line by line: a suite that ctest stops at its time limit still shows its seed and progress */
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("%s: seed %llu (rerun with SR_TEST_SEED=%llu)\n", name, (unsigned long long)seed,
           (unsigned long long)seed);
}

/* SR_TEST_PART=i/n (0 <= i < n) runs the i-th of n parts of a suite: the suites that take long
 * under compute-sanitizer ask before each of their independent checks, and every n-th check runs
 * (tests/gpu_sanitize.sh runs a suite's parts at once, each within its time limit). Only checks
 * that call no other such check ask, so the n parts together run each check once; test_finish
 * prints how many a part ran. */
static long test_part = -1, test_parts = 1, test_part_asked = 0, test_part_ran = 0;

static inline int test_part_selected(void)
{
    if (test_part < 0) {
        const char *env = getenv("SR_TEST_PART");
        test_part = 0;
        if (env && (sscanf(env, "%ld/%ld", &test_part, &test_parts) != 2 || test_parts < 1 || test_part < 0 ||
                    test_part >= test_parts)) {
            fprintf(stderr, "SR_TEST_PART=%s: expected i/n with 0 <= i < n\n", env);
            exit(2);
        }
    }
    const int selected = test_part_asked++ % test_parts == test_part;
    test_part_ran += selected;
    return selected;
}

static inline int test_finish(const char *name)
{
    if (test_parts > 1)
        printf("%s: part %ld/%ld ran %ld of %ld checks\n", name, test_part, test_parts, test_part_ran, test_part_asked);
    if (test_failures) {
        printf("%s: %d check%s FAILED\n", name, test_failures, test_failures == 1 ? "" : "s");
        return 1;
    }
    printf("%s: all checks passed\n", name);
    return 0;
}

/* A host CSR drawn at random: power-law row degrees (a few very long rows), some empty rows,
 * columns drawn from a skewed popularity so some columns stay empty. Values are nonzero. */
typedef struct {
    int64_t nrows, ncols, nnz;
    sr_type type;
    int64_t *rowptr;
    int32_t *colind;
    void *values; /* NULL for bool */
} test_csr;

static inline void test_random_value(sr_type type, void *values, int64_t k)
{
    double sign = test_below(2) ? 1.0 : -1.0;
    switch (type) {
    case SR_TYPE_BOOL: break;
    case SR_TYPE_INT32: ((int32_t *)values)[k] = (int32_t)(sign * (double)(1 + test_below(1000))); break;
    case SR_TYPE_FLOAT32: ((float *)values)[k] = (float)(sign * (0.25 + test_uniform())); break;
    case SR_TYPE_FLOAT64: ((double *)values)[k] = sign * (0.25 + test_uniform()); break;
    }
}

static inline int test_compare_int32(const void *a, const void *b)
{
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static inline test_csr test_random_csr(int64_t nrows, int64_t ncols, double mean_degree, sr_type type)
{
    test_csr m = {nrows, ncols, 0, type, NULL, NULL, NULL};
    m.rowptr = calloc((size_t)nrows + 1, sizeof(int64_t));
    for (int64_t i = 0; i < nrows; i++) {
        int64_t d = 0;
        if (ncols > 0 && test_below(8) != 0) { /* 1 in 8 rows empty */
            double u = test_uniform();
            d = (int64_t)(mean_degree * 0.5 / pow(1.0 - u * 0.999, 0.7)); /* heavy tail */
            if (d > ncols)
                d = ncols;
        }
        m.rowptr[i + 1] = m.rowptr[i] + d;
    }
    m.nnz = m.rowptr[nrows];
    m.colind = malloc((size_t)(m.nnz ? m.nnz : 1) * sizeof(int32_t));
    size_t vsize = sr_type_size(type);
    m.values = type == SR_TYPE_BOOL ? NULL : malloc((size_t)(m.nnz ? m.nnz : 1) * vsize);
    unsigned char *used = calloc((size_t)(ncols ? ncols : 1), 1);
    for (int64_t i = 0; i < nrows; i++) {
        int64_t start = m.rowptr[i], d = m.rowptr[i + 1] - start;
        if (d * 2 > ncols) { /* dense row: take every column, then drop at random */
            int64_t n = 0;
            for (int64_t c = 0; c < ncols && n < d; c++)
                if (test_below(ncols - c) < d - n)
                    m.colind[start + n++] = (int32_t)c;
        } else { /* sparse row: skewed columns, rejecting repeats, then sort */
            for (int64_t n = 0; n < d;) {
                double u = test_uniform();
                int32_t c = (int32_t)((double)ncols * u * u);
                if (c >= ncols || used[c])
                    continue;
                used[c] = 1;
                m.colind[start + n++] = c;
            }
            for (int64_t a = 0; a < d; a++)
                used[m.colind[start + a]] = 0;
            /* heavy-tailed rows reach 10^5 entries: not an insertion sort */
            qsort(m.colind + start, (size_t)d, sizeof(int32_t), test_compare_int32);
        }
        for (int64_t k = start; k < start + d; k++)
            test_random_value(type, m.values, k);
    }
    free(used);
    return m;
}

static inline void test_csr_free(test_csr *m)
{
    free(m->rowptr);
    free(m->colind);
    free(m->values);
}

/* The value of a test CSR's entry k (1 for bool). */
static inline double test_csr_value(const test_csr *m, int64_t k)
{
    switch (m->type) {
    case SR_TYPE_BOOL: return 1.0;
    case SR_TYPE_INT32: return ((int32_t *)m->values)[k];
    case SR_TYPE_FLOAT32: return ((float *)m->values)[k];
    case SR_TYPE_FLOAT64: return ((double *)m->values)[k];
    }
    return 0.0;
}

/* Element (i, j) of a test CSR, by linear search (the reference; per entry of a row, use
 * test_csr_value: a search an entry is quadratic in the row's length). */
static inline double test_csr_at(const test_csr *m, int64_t i, int64_t j)
{
    for (int64_t k = m->rowptr[i]; k < m->rowptr[i + 1]; k++)
        if (m->colind[k] == j)
            return test_csr_value(m, k);
    return 0.0;
}

static inline double test_dense_at(const sr_dense *d, int64_t i, int64_t j)
{
    size_t at = d->layout == SR_ROW_MAJOR ? (size_t)(i * d->ld + j) : (size_t)(j * d->ld + i);
    switch (d->type) {
    case SR_TYPE_BOOL: return ((uint8_t *)d->data)[at];
    case SR_TYPE_INT32: return ((int32_t *)d->data)[at];
    case SR_TYPE_FLOAT32: return ((float *)d->data)[at];
    case SR_TYPE_FLOAT64: return ((double *)d->data)[at];
    }
    return NAN;
}

static inline sr_matrix test_make_matrix(sr_context ctx, const test_csr *m)
{
    sr_matrix A = NULL;
    sr_status s = sr_matrix_from_csr(ctx, &A, m->nrows, m->ncols, m->type, m->rowptr, m->colind, m->values, SR_HOST);
    if (s != SR_SUCCESS) {
        fprintf(stderr, "cannot build a test matrix: %s\n", sr_last_error());
        exit(2);
    }
    return A;
}

/* The test matrix where the backend under test keeps its matrices (host, or a device copy). */
static inline sr_matrix test_make_matrix_at(sr_context ctx, const test_csr *m, sr_location where)
{
    sr_matrix H = test_make_matrix(ctx, m), D = NULL;
    if (where == SR_HOST)
        return H;
    CHECK_OK(sr_matrix_copy_to(ctx, H, SR_DEVICE, &D));
    sr_matrix_free(H);
    return D;
}

/* *ctx a new context of `backend` (deterministic if asked); false when none can be made, after
 * printing why the part named `part` is skipped. */
static inline bool test_context_made(sr_context *ctx, sr_backend backend, bool deterministic, const char *part)
{
    sr_context_options o = sr_context_options_default();
    o.backend = backend;
    o.deterministic = deterministic;
    if (sr_context_create(ctx, &o) == SR_SUCCESS)
        return true;
    printf("%s part skipped: %s\n", part, sr_last_error());
    /* the GPU gate (tools/gpu_check.sh) sets it: there a skipped device part is a failure */
    CHECK(backend != SR_BACKEND_CUDA || !getenv("SR_TEST_REQUIRE_CUDA"),
          "the %s part was skipped, and SR_TEST_REQUIRE_CUDA asks for it", part);
    return false;
}

/* Runs run() with *ctx a new context of `backend` and *where `where`, when one can be made; else
 * prints why that part is skipped. */
static inline void test_run_where_made(sr_context *ctx, sr_location *where, sr_backend backend, sr_location at,
                                       void (*run)(void), const char *part)
{
    if (!test_context_made(ctx, backend, false, part))
        return;
    *where = at;
    run();
    sr_context_destroy(*ctx);
}

/* Runs run() with *ctx and *where set to a CPU context on the host, then to a CUDA context on the
 * device when one can be made (else prints why that part is skipped). SR_TEST_BACKENDS=cuda
 * runs the device part alone (compute-sanitizer runs, where only device code is checked), =cpu
 * the host part alone. */
static inline void test_on_each_backend(sr_context *ctx, sr_location *where, void (*run)(void))
{
    const char *only = getenv("SR_TEST_BACKENDS");
    if (only && strcmp(only, "opencl") == 0)
        return;
    if (!(only && strcmp(only, "cuda") == 0)) {
        sr_context_options o = sr_context_options_default();
        o.backend = SR_BACKEND_CPU;
        CHECK_OK(sr_context_create(ctx, &o));
        *where = SR_HOST;
        run();
        sr_context_destroy(*ctx);
    }
    if (!(only && strcmp(only, "cpu") == 0))
        test_run_where_made(ctx, where, SR_BACKEND_CUDA, SR_DEVICE, run, "device");
}

/* test_on_each_backend, then an OpenCL context when one can be made (the suites of the Boolean
 * operations, which the OpenCL backend runs; on a machine without a GPU, PoCL's CPU device).
 * SR_TEST_BACKENDS=opencl runs the OpenCL part alone; SR_TEST_SKIP_OPENCL leaves it out. */
static inline void test_on_each_backend_and_opencl(sr_context *ctx, sr_location *where, void (*run)(void))
{
    test_on_each_backend(ctx, where, run);
    if (getenv("SR_TEST_SKIP_OPENCL")) /* CI's LeakSanitizer run: see .ci/run */
        printf("OpenCL part skipped: SR_TEST_SKIP_OPENCL is set\n");
    else
        test_run_where_made(ctx, where, SR_BACKEND_OPENCL, SR_HOST, run, "OpenCL");
}

/* "cpu", "cuda" or "opencl": the backend of a context, for messages. */
static inline const char *test_backend_name(sr_context ctx)
{
    sr_backend b = SR_BACKEND_CPU;
    sr_context_get_backend(ctx, &b);
    return b == SR_BACKEND_CUDA ? "cuda" : b == SR_BACKEND_OPENCL ? "opencl" : "cpu";
}

/* A progress callback that records how many rows were done and asks to stop. */
static inline int test_stop_at_first_report(int64_t done, int64_t total, void *user)
{
    (void)total;
    *(int64_t *)user = done;
    return 1;
}

static const sr_type test_all_types[] = {SR_TYPE_BOOL, SR_TYPE_INT32, SR_TYPE_FLOAT32, SR_TYPE_FLOAT64};

/* Shapes every conversion test runs over: empty, degenerate and skewed. */
typedef struct {
    int64_t nrows, ncols;
    double degree;
} test_shape;

static const test_shape test_shapes[] = {
    {0, 0, 0}, {0, 7, 0}, {7, 0, 0}, {1, 1, 1}, {1, 40, 30}, {40, 1, 1}, {33, 17, 3}, {300, 200, 6}, {2000, 900, 12},
};

/* x = M⁻¹ b for a K x K symmetric positive definite M (Cholesky, in place). */
static inline void test_spd_solve(double *M, double *b, int64_t K)
{
    for (int64_t j = 0; j < K; j++) {
        for (int64_t k = 0; k < j; k++)
            M[j * K + j] -= M[j * K + k] * M[j * K + k];
        M[j * K + j] = sqrt(M[j * K + j]);
        for (int64_t i = j + 1; i < K; i++) {
            for (int64_t k = 0; k < j; k++)
                M[i * K + j] -= M[i * K + k] * M[j * K + k];
            M[i * K + j] /= M[j * K + j];
        }
    }
    for (int64_t i = 0; i < K; i++) { /* L y = b, then Lᵀ x = y */
        for (int64_t k = 0; k < i; k++)
            b[i] -= M[i * K + k] * b[k];
        b[i] /= M[i * K + i];
    }
    for (int64_t i = K - 1; i >= 0; i--) {
        for (int64_t k = i + 1; k < K; k++)
            b[i] -= M[k * K + i] * b[k];
        b[i] /= M[i * K + i];
    }
}


#endif
