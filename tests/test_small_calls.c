/* Small calls stay fast however many threads the context has: SpMV, SpMM and SpGEMM on a small
 * matrix, repeated, on a context of 16 threads (more than CI's cores). Waking the whole team for
 * microseconds of work made such calls take milliseconds on a busy machine (8 ms a SpMV of 5,000
 * entries beside another process's threads); sr_context_threads_for runs them on one thread.
 * Also checks that the results do not depend on the thread count chosen. Then calls that take
 * every thread after idling, alone and beside threads that spin on all the other cores (as another
 * library's OpenMP runtime does for milliseconds after each of its calls): an OpenMP team waits
 * for its threads to wake and get a core; the pool's calls (src/cpu/cpu_pool.h) do not. CPU backend. */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"

/* Times are checked only when asked (SR_TEST_TIMED=1) in optimized builds (NDEBUG), on a machine
 * with nothing else running: a bound on time fails whenever other work shares the cores (a CI run
 * beside a benchmark: 1.9 ms a SpMV against a 1.4 ms bound), and CI must give the same verdict
 * every time. Otherwise the suite runs the same calls, checks their answers and prints their times. */
#ifdef NDEBUG
#define TIMES_CHECKED (getenv("SR_TEST_TIMED") != NULL)
#else
#define TIMES_CHECKED 0
#endif

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int by_value(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

enum { CALLS = 301 };

/* The 10th-percentile seconds of CALLS runs of one product (0 spmv, 1 spmm, 2 mxm) into y / Y / *C:
 * a team woken for nothing slows every call, other processes on the machine (ctest -j) only some. */
static double typical_call(sr_context ctx, int product, sr_matrix A, const sr_dense *x, const sr_dense *y,
                          const sr_dense *X, const sr_dense *Y)
{
    double t[CALLS];
    for (int r = 0; r < CALLS; r++) {
        sr_matrix C = NULL;
        const double t0 = now();
        if (product == 0)
            CHECK_OK(sr_spmv(ctx, y, NULL, SR_PLUS_TIMES, A, x, NULL));
        else if (product == 1)
            CHECK_OK(sr_spmm(ctx, Y, NULL, SR_PLUS_TIMES, A, X, NULL));
        else
            CHECK_OK(sr_mxm(ctx, &C, NULL, SR_PLUS_TIMES, A, A, NULL));
        t[r] = now() - t0;
        sr_matrix_free(C);
    }
    qsort(t, CALLS, sizeof *t, by_value);
    return t[CALLS / 10];
}

static atomic_int spinning;

static void *spin(void *unused)
{
    (void)unused;
    while (atomic_load_explicit(&spinning, memory_order_relaxed))
        ;
    return NULL;
}

enum { SPACED_CALLS = 15, IDLE_MS = 30 };

/* Seconds of one call of product p (0 SpMV, 1 SpGEMM A·A, 2 the vector dot). */
static double one_call(sr_context ctx, int p, sr_matrix A, const sr_dense *x, const sr_dense *y)
{
    sr_matrix C = NULL;
    double dot = 0;
    const double t0 = now();
    if (p == 0)
        CHECK_OK(sr_spmv(ctx, y, NULL, SR_PLUS_TIMES, A, x, NULL));
    else if (p == 1)
        CHECK_OK(sr_mxm(ctx, &C, NULL, SR_PLUS_TIMES, A, A, NULL));
    else
        CHECK_OK(sr_vector_dot(ctx, x, x, &dot));
    const double t = now() - t0;
    sr_matrix_free(C);
    return t;
}

/* The median of SPACED_CALLS calls, each after `idle` (NULL: back to back). */
static double median_call(sr_context ctx, int p, sr_matrix A, const sr_dense *x, const sr_dense *y,
                          const struct timespec *idle, double *slowest)
{
    double t[SPACED_CALLS];
    for (int r = 0; r < SPACED_CALLS; r++) {
        if (idle)
            nanosleep(idle, NULL);
        t[r] = one_call(ctx, p, A, x, y);
    }
    qsort(t, SPACED_CALLS, sizeof *t, by_value);
    *slowest = t[SPACED_CALLS - 1];
    return t[SPACED_CALLS / 2];
}

/* SpMV, SpGEMM and the vector dot on a 60,000-entry matrix with all threads taking part, each call
 * after IDLE_MS of idling (long enough for a team's threads to stop spinning and sleep, as between
 * the calls of a script that does other work), alone and beside a spinning thread on every core
 * but the caller's: the median call within 3x the product's time on one thread, plus 1 ms. An
 * OpenMP team took 5.8 ms a SpMV of 0.1 ms there on a 2-core machine, alone (its threads' wake-up),
 * and a scheduler tick or two (4-8 ms) beside another runtime's spinning threads on 16 cores. */
static void after_idling(sr_context ctx, sr_context one_thread)
{
    const int64_t n = 20000;
    test_csr a = test_random_csr(n, n, 3, SR_TYPE_FLOAT64);
    sr_matrix A = test_make_matrix_at(ctx, &a, SR_HOST);
    double *xs = malloc((size_t)n * sizeof *xs), *ys = malloc((size_t)n * sizeof *ys);
    for (int64_t i = 0; i < n; i++)
        xs[i] = test_uniform() - 0.5;
    sr_dense x = sr_vector_view(xs, n, SR_TYPE_FLOAT64, SR_HOST), y = sr_vector_view(ys, n, SR_TYPE_FLOAT64, SR_HOST);
    setenv("SPARSERING_SERIAL_WORK", "0", 1); /* a team for every call */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const int spinners = cores > 1 ? (int)(cores - 1 < 64 ? cores - 1 : 64) : 1;
    pthread_t threads[64];
    const char *names[] = {"spmv", "mxm (A·A)", "vector dot"};
    const struct timespec idle = {0, IDLE_MS * 1000000L};
    double single[3], slowest;
    for (int p = 0; p < 3; p++)
        single[p] = median_call(one_thread, p, A, &x, &y, NULL, &slowest);
    for (int phase = 0; phase < 2; phase++) {
        atomic_store(&spinning, phase);
        for (int s = 0; phase && s < spinners; s++)
            pthread_create(&threads[s], NULL, spin, NULL);
        for (int p = 0; p < 3; p++) {
            const double median = median_call(ctx, p, A, &x, &y, &idle, &slowest), limit = 3 * single[p] + 1e-3;
            printf("  %-12s %d entries after %d ms idle, %s: median %.1f us, slowest %.1f us (one thread: %.1f us)\n",
                   names[p], (int)a.nnz, IDLE_MS, phase ? "beside spinning threads" : "alone", 1e6 * median,
                   1e6 * slowest, 1e6 * single[p]);
            CHECK(!TIMES_CHECKED || median <= limit, "%s takes %.0f us a call after idling %s, %.0f us on one thread "
                  "(limit %.0f us): the call waits for threads to wake or to get a core", names[p], 1e6 * median,
                  phase ? "beside spinning threads" : "", 1e6 * single[p], 1e6 * limit);
        }
        atomic_store(&spinning, 0);
        for (int s = 0; phase && s < spinners; s++)
            pthread_join(threads[s], NULL);
    }
    sr_matrix_free(A);
    test_csr_free(&a);
    free(xs), free(ys);
}

int main(void)
{
    test_seed("test_small_calls");
    sr_context ctx = NULL;
    sr_context_options o = sr_context_options_default();
    o.backend = SR_BACKEND_CPU;
    o.threads = 16;
    CHECK_OK(sr_context_create(&ctx, &o));
    const int64_t n = 400, K = 16;
    test_csr a = test_random_csr(n, n, 5, SR_TYPE_FLOAT64);
    sr_matrix A = test_make_matrix_at(ctx, &a, SR_HOST);
    double *xs = malloc((size_t)n * sizeof *xs), *ys = malloc((size_t)n * sizeof *ys);
    double *Xs = malloc((size_t)(n * K) * sizeof *Xs), *Ys = malloc((size_t)(n * K) * sizeof *Ys);
    double *y_all = malloc((size_t)n * sizeof *y_all), *Y_all = malloc((size_t)(n * K) * sizeof *Y_all);
    for (int64_t i = 0; i < n * K; i++)
        Xs[i] = test_uniform() - 0.5;
    for (int64_t i = 0; i < n; i++)
        xs[i] = test_uniform() - 0.5;
    sr_dense x = sr_vector_view(xs, n, SR_TYPE_FLOAT64, SR_HOST), y = sr_vector_view(ys, n, SR_TYPE_FLOAT64, SR_HOST);
    sr_dense X = sr_dense_view(Xs, n, K, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    sr_dense Y = sr_dense_view(Ys, n, K, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);

    /* every thread on every loop (as the other C tests run), for the reference results */
    setenv("SPARSERING_SERIAL_WORK", "0", 1);
    sr_dense y_ref = sr_vector_view(y_all, n, SR_TYPE_FLOAT64, SR_HOST);
    sr_dense Y_ref = sr_dense_view(Y_all, n, K, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    sr_matrix C_ref = NULL, C = NULL;
    CHECK_OK(sr_spmv(ctx, &y_ref, NULL, SR_PLUS_TIMES, A, &x, NULL));
    CHECK_OK(sr_spmm(ctx, &Y_ref, NULL, SR_PLUS_TIMES, A, &X, NULL));
    CHECK_OK(sr_mxm(ctx, &C_ref, NULL, SR_PLUS_TIMES, A, A, NULL));

    /* the library's choice: these are one-thread calls */
    setenv("SPARSERING_SERIAL_WORK", "16384", 1);
    const char *names[] = {"spmv", "spmm (16 columns)", "mxm (A·A)"};
    /* about 10x what one thread needs here and 3x under ASan; a 16-thread team on a 2-core
     * machine took 128 and 124 us for the first two, milliseconds with other work running */
    const double limit[] = {40e-6, 80e-6, 2000e-6};
    for (int product = 0; product < 3; product++) {
        const double t = typical_call(ctx, product, A, &x, &y, &X, &Y);
        printf("  %-18s %d entries, 16 threads asked: %.1f us a call (10th percentile)\n", names[product], (int)a.nnz, 1e6 * t);
        CHECK(!TIMES_CHECKED || t <= limit[product], "%s on a %lld-entry matrix takes %.0f us a call (limit %.0f us): small calls "
              "wake the whole thread team", names[product], (long long)a.nnz, 1e6 * t, 1e6 * limit[product]);
    }
    CHECK(memcmp(ys, y_all, (size_t)n * sizeof *ys) == 0, "spmv: one thread and 16 threads differ");
    CHECK(memcmp(Ys, Y_all, (size_t)(n * K) * sizeof *Ys) == 0, "spmm: one thread and 16 threads differ");
    CHECK_OK(sr_mxm(ctx, &C, NULL, SR_PLUS_TIMES, A, A, NULL));
    const int64_t *rp1, *rp2;
    const int32_t *ci1, *ci2;
    const void *v1, *v2;
    sr_matrix_info info = {0};
    CHECK_OK(sr_matrix_csr_arrays(C, &rp1, &ci1, &v1));
    CHECK_OK(sr_matrix_csr_arrays(C_ref, &rp2, &ci2, &v2));
    CHECK_OK(sr_matrix_get_info(C, &info));
    CHECK(memcmp(rp1, rp2, (size_t)(n + 1) * sizeof *rp1) == 0 &&
              memcmp(ci1, ci2, (size_t)info.nnz * sizeof *ci1) == 0 && memcmp(v1, v2, (size_t)info.nnz * 8) == 0,
          "mxm: one thread and 16 threads differ");
    sr_matrix_free(C);
    sr_matrix_free(C_ref);
    sr_matrix_free(A);
    test_csr_free(&a);
    free(xs), free(ys), free(Xs), free(Ys), free(y_all), free(Y_all);
    sr_context_destroy(ctx);

    sr_context one_thread = NULL;
    o.threads = 1;
    CHECK_OK(sr_context_create(&one_thread, &o));
    o.threads = 0; /* all cores */
    CHECK_OK(sr_context_create(&ctx, &o));
    after_idling(ctx, one_thread);
    sr_context_destroy(ctx);
    sr_context_destroy(one_thread);
    return test_finish("test_small_calls");
}
