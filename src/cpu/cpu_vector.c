/* The vector arithmetic of iterative methods on the host (sr_vector_dot, _asum, _axpby). */
#include <math.h>
#include <omp.h>

#include "cpu.h"

/* Each thread sums its static share into its own slot, and the slots are added in thread order:
 * the same sum on every call with the same threads (an OpenMP reduction combines in any order),
 * which iterative methods need to repeat themselves bit for bit. */
#define SR_VECTOR_LOOPS(T)                                                                               \
    static double dot_##T(const T *x, const T *y, int64_t n, int threads)                               \
    {                                                                                                    \
        double part[256] = {0};                                                                          \
        threads = threads < 1 ? 1 : threads > 256 ? 256 : threads;                                       \
        _Pragma("omp parallel num_threads(threads)")                                                     \
        {                                                                                                \
            const int t = omp_get_thread_num(), nt = omp_get_num_threads();                              \
            const int64_t i0 = n * t / nt, i1 = n * (t + 1) / nt;                                        \
            double s[4] = {0, 0, 0, 0}; /* four chains by position in the share: fixed order, no SIMD */ \
            int64_t i = i0;                                                                              \
            for (; i + 4 <= i1; i += 4)                                                                  \
                for (int u = 0; u < 4; u++)                                                              \
                    s[u] += y ? (double)x[i + u] * (double)y[i + u] : fabs((double)x[i + u]);            \
            for (; i < i1; i++)                                                                          \
                s[0] += y ? (double)x[i] * (double)y[i] : fabs((double)x[i]);                            \
            const double sum = (s[0] + s[1]) + (s[2] + s[3]);                                            \
            part[t] = sum;                                                                               \
        }                                                                                                \
        double total = 0.0;                                                                              \
        for (int t = 0; t < threads; t++)                                                                \
            total += part[t];                                                                            \
        return total;                                                                                    \
    }                                                                                                    \
    static void axpby_##T(double alpha, const T *x, double beta, T *y, int64_t n, int threads)           \
    {                                                                                                    \
        _Pragma("omp parallel for simd num_threads(threads) schedule(static)")                          \
        for (int64_t i = 0; i < n; i++)                                                                  \
            y[i] = (T)((alpha == 0.0 ? 0.0 : alpha * (double)x[i]) + (beta == 0.0 ? 0.0 : beta * (double)y[i])); \
    }
SR_VECTOR_LOOPS(float)
SR_VECTOR_LOOPS(double)
#undef SR_VECTOR_LOOPS

double sr_cpu_vector_dot(const sr_dense *x, const sr_dense *y, int threads)
{
    const void *yd = y ? y->data : NULL; /* NULL: Σ |x_i| (sr_vector_asum) */
    return x->type == SR_TYPE_FLOAT32 ? dot_float(x->data, yd, x->nrows, threads)
                                      : dot_double(x->data, yd, x->nrows, threads);
}

void sr_cpu_vector_axpby(double alpha, const sr_dense *x, double beta, const sr_dense *y, int threads)
{
    if (x->type == SR_TYPE_FLOAT32)
        axpby_float(alpha, x->data, beta, y->data, x->nrows, threads);
    else
        axpby_double(alpha, x->data, beta, y->data, x->nrows, threads);
}
