/* The vector arithmetic of iterative methods on the host (sr_vector_dot, sr_vector_axpby). */
#include "cpu.h"

#define SR_VECTOR_LOOPS(T)                                                                               \
    static double dot_##T(const T *x, const T *y, int64_t n, int threads)                               \
    {                                                                                                    \
        double sum = 0.0;                                                                                \
        _Pragma("omp parallel for simd num_threads(threads) reduction(+ : sum) schedule(static)")       \
        for (int64_t i = 0; i < n; i++)                                                                  \
            sum += (double)x[i] * (double)y[i];                                                          \
        return sum;                                                                                      \
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
    return x->type == SR_TYPE_FLOAT32 ? dot_float(x->data, y->data, x->nrows, threads)
                                      : dot_double(x->data, y->data, x->nrows, threads);
}

void sr_cpu_vector_axpby(double alpha, const sr_dense *x, double beta, const sr_dense *y, int threads)
{
    if (x->type == SR_TYPE_FLOAT32)
        axpby_float(alpha, x->data, beta, y->data, x->nrows, threads);
    else
        axpby_double(alpha, x->data, beta, y->data, x->nrows, threads);
}
