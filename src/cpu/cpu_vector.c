/* The vector arithmetic of iterative methods on the host (sr_vector_dot, _asum, _axpby, _divide,
 * _and_greater). */
#include <math.h>
#include "cpu.h"
#include "cpu_pool.h"

/* The vector is cut into `threads` chunks, each summed into its own slot and the slots added in
 * chunk order: the same sum on every call with the same threads (an OpenMP reduction combines in
 * any order), which iterative methods need to repeat themselves bit for bit. The chunks run on the
 * pool (cpu_pool.h), as the SpMV beside which these calls run in PageRank and CG. */
typedef struct {
    const void *x;
    void *y, *z;
    double alpha, beta;
    int64_t n, chunks;
    double part[256];
} vector_job;

#define SR_VECTOR_LOOPS(T)                                                                               \
    static void dot_chunk_##T(void *arg, int64_t c, int slot)                                            \
    {                                                                                                    \
        vector_job *job = arg;                                                                           \
        const T *x = job->x, *y = job->y;                                                                \
        const int64_t i0 = job->n * c / job->chunks, i1 = job->n * (c + 1) / job->chunks;                \
        double s[4] = {0, 0, 0, 0}; /* four chains by position in the chunk: fixed order, no SIMD */     \
        int64_t i = i0;                                                                                  \
        (void)slot;                                                                                      \
        for (; i + 4 <= i1; i += 4)                                                                      \
            for (int u = 0; u < 4; u++)                                                                  \
                s[u] += y ? (double)x[i + u] * (double)y[i + u] : fabs((double)x[i + u]);                \
        for (; i < i1; i++)                                                                              \
            s[0] += y ? (double)x[i] * (double)y[i] : fabs((double)x[i]);                                \
        job->part[c] = (s[0] + s[1]) + (s[2] + s[3]);                                                    \
    }                                                                                                    \
    static void divide_chunk_##T(void *arg, int64_t c, int slot)                                         \
    {                                                                                                    \
        const vector_job *job = arg;                                                                     \
        const T *x = job->x, *y = job->y;                                                                \
        T *z = job->z;                                                                                   \
        const int64_t i0 = job->n * c / job->chunks, i1 = job->n * (c + 1) / job->chunks;                \
        (void)slot;                                                                                      \
        for (int64_t i = i0; i < i1; i++)                                                                \
            z[i] = x[i] / y[i];                                                                          \
    }                                                                                                    \
    static void and_greater_chunk_##T(void *arg, int64_t c, int slot)                                    \
    {                                                                                                    \
        const vector_job *job = arg;                                                                     \
        const T *x = job->x;                                                                             \
        T *flag = job->y;                                                                                \
        const int64_t i0 = job->n * c / job->chunks, i1 = job->n * (c + 1) / job->chunks;                \
        (void)slot;                                                                                      \
        for (int64_t i = i0; i < i1; i++)                                                                \
            flag[i] = flag[i] != 0 && (double)x[i] > job->alpha ? (T)1 : (T)0;                           \
    }                                                                                                    \
    static void axpby_chunk_##T(void *arg, int64_t c, int slot)                                          \
    {                                                                                                    \
        const vector_job *job = arg;                                                                     \
        const T *restrict x = job->x;                                                                    \
        T *restrict y = job->y;                                                                          \
        const double alpha = job->alpha, beta = job->beta;                                               \
        const int64_t i0 = job->n * c / job->chunks, i1 = job->n * (c + 1) / job->chunks;                \
        (void)slot;                                                                                      \
        for (int64_t i = i0; i < i1; i++)                                                                \
            y[i] = (T)((alpha == 0.0 ? 0.0 : alpha * (double)x[i]) + (beta == 0.0 ? 0.0 : beta * (double)y[i])); \
    }
SR_VECTOR_LOOPS(float)
SR_VECTOR_LOOPS(double)
#undef SR_VECTOR_LOOPS

static int vector_chunks(int threads)
{
    return threads < 1 ? 1 : threads > 256 ? 256 : threads;
}

double sr_cpu_vector_dot(const sr_dense *x, const sr_dense *y, int threads)
{
    /* y NULL: Σ |x_i| (sr_vector_asum) */
    vector_job job = {x->data, y ? y->data : NULL, NULL, 0.0, 0.0, x->nrows, vector_chunks(threads), {0}};
    sr_cpu_run_chunks(threads, job.chunks, x->type == SR_TYPE_FLOAT32 ? dot_chunk_float : dot_chunk_double, &job);
    double total = 0.0;
    for (int64_t c = 0; c < job.chunks; c++)
        total += job.part[c];
    return total;
}

void sr_cpu_vector_axpby(double alpha, const sr_dense *x, double beta, const sr_dense *y, int threads)
{
    vector_job job = {x->data, y->data, NULL, alpha, beta, x->nrows, vector_chunks(threads), {0}};
    sr_cpu_run_chunks(threads, job.chunks, x->type == SR_TYPE_FLOAT32 ? axpby_chunk_float : axpby_chunk_double, &job);
}

void sr_cpu_vector_divide(const sr_dense *z, const sr_dense *x, const sr_dense *y, int threads)
{
    vector_job job = {x->data, y->data, z->data, 0.0, 0.0, x->nrows, vector_chunks(threads), {0}};
    sr_cpu_run_chunks(threads, job.chunks, x->type == SR_TYPE_FLOAT32 ? divide_chunk_float : divide_chunk_double, &job);
}

void sr_cpu_vector_and_greater(const sr_dense *flag, const sr_dense *x, double threshold, int threads)
{
    vector_job job = {x->data, flag->data, NULL, threshold, 0.0, x->nrows, vector_chunks(threads), {0}};
    sr_cpu_run_chunks(threads, job.chunks, x->type == SR_TYPE_FLOAT32 ? and_greater_chunk_float : and_greater_chunk_double,
                      &job);
}
