/* The fused pattern on the host: each row of X is read once; its dot with y (X·y), scaled by v,
 * is spread back over the row's columns (Xᵀ·) while the row is still in L1. Threads sum into
 * their own copies of w (added at the end) when those take at most PRIVATE_ELEMENTS in all and X
 * has at least as many rows as columns. Wider sparse X (10^4 x 10^7: copies of w would cost more
 * than X's entries) has each thread own a range of w's columns instead (fused_by_columns); dense X
 * too wide for copies adds into w atomically (the paper's global aggregation). */
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "../core/error.h"
#include "cpu.h"

#define PRIVATE_ELEMENTS ((int64_t)1 << 25) /* 256 MiB of doubles across the threads' copies of w */

/* The most threads the column ranges serve (their cuts live on the stack). */
#define SR_CPU_MAX_THREADS 1024

/* cuts[0..threads]: column ranges holding about equal shares of X's entries, at the quantiles of
 * a sample of its column indices (up to 2^16 entries, evenly spaced), 0 and n at the ends. */
static sr_status column_cuts(const struct sr_matrix_s *X, int threads, int64_t *cuts)
{
    const int64_t nnz = X->rowptr[X->nrows], samples = nnz < 65536 ? nnz : 65536;
    int32_t *sample = malloc((size_t)(samples > 0 ? samples : 1) * sizeof(int32_t));
    if (!sample)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for a sample of columns");
    for (int64_t s = 0; s < samples; s++)
        sample[s] = X->colind[(int64_t)((double)s * (double)nnz / (double)samples)];
    sr_cpu_sort_columns(sample, NULL, samples, 32);
    cuts[0] = 0;
    for (int t = 1; t < threads; t++)
        cuts[t] = samples ? sample[(int64_t)t * samples / threads] : (int64_t)t * X->ncols / threads;
    cuts[threads] = X->ncols;
    free(sample);
    return SR_SUCCESS;
}

/* One row: d = X(i,:)·y for XTVXY and XY, the scale p = v(i)·d (XTY: v(i)·y(i)). */
#define SR_DEFINE_FUSED_PATTERN(T)                                                                        \
    static inline T row_dot_##T(const sr_fused_args *a, int64_t i)                                        \
    {                                                                                                     \
        const T *y = a->y;                                                                                \
        T d = 0;                                                                                          \
        if (a->X) {                                                                                       \
            const T *restrict xv = a->X->type == SR_TYPE_BOOL ? NULL : (const T *)a->X->values;           \
            const int32_t *restrict col = a->X->colind;                                                   \
            const int64_t k0 = a->X->rowptr[i], k1 = a->X->rowptr[i + 1];                                 \
            if (xv)                                                                                       \
                for (int64_t k = k0; k < k1; k++)                                                         \
                    d += xv[k] * y[col[k]];                                                               \
            else                                                                                          \
                for (int64_t k = k0; k < k1; k++)                                                         \
                    d += y[col[k]];                                                                       \
        } else {                                                                                          \
            const T *restrict x = (const T *)a->Xd + (size_t)i * (size_t)a->ld;                           \
            T part[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                                         \
            int64_t k = 0;                                                                                \
            for (; k + 8 <= a->n; k += 8)                                                                 \
                for (int q = 0; q < 8; q++)                                                               \
                    part[q] += x[k + q] * y[k + q];                                                       \
            for (; k < a->n; k++)                                                                         \
                part[0] += x[k] * y[k];                                                                   \
            for (int q = 0; q < 8; q++)                                                                   \
                d += part[q];                                                                             \
        }                                                                                                 \
        return d;                                                                                         \
    }                                                                                                     \
    /* acc[j] += p·X(i, j) over row i (atomically when `shared`). */                                      \
    static inline void row_spread_##T(const sr_fused_args *a, int64_t i, T p, T *restrict acc, bool shared) \
    {                                                                                                     \
        if (a->X) {                                                                                       \
            const T *restrict xv = a->X->type == SR_TYPE_BOOL ? NULL : (const T *)a->X->values;           \
            const int32_t *restrict col = a->X->colind;                                                   \
            const int64_t k0 = a->X->rowptr[i], k1 = a->X->rowptr[i + 1];                                 \
            if (shared) {                                                                                 \
                for (int64_t k = k0; k < k1; k++) {                                                       \
                    _Pragma("omp atomic") acc[col[k]] += (xv ? xv[k] : (T)1) * p;                         \
                }                                                                                         \
            } else if (xv) {                                                                              \
                for (int64_t k = k0; k < k1; k++)                                                         \
                    acc[col[k]] += xv[k] * p;                                                             \
            } else {                                                                                      \
                for (int64_t k = k0; k < k1; k++)                                                         \
                    acc[col[k]] += p;                                                                     \
            }                                                                                             \
        } else {                                                                                          \
            const T *restrict x = (const T *)a->Xd + (size_t)i * (size_t)a->ld;                           \
            if (shared) {                                                                                 \
                for (int64_t j = 0; j < a->n; j++) {                                                      \
                    _Pragma("omp atomic") acc[j] += p * x[j];                                             \
                }                                                                                         \
            } else {                                                                                      \
                for (int64_t j = 0; j < a->n; j++)                                                        \
                    acc[j] += p * x[j];                                                                   \
            }                                                                                             \
        }                                                                                                 \
    }                                                                                                     \
    /* Sparse X, w by column ranges: thread t owns w(cuts[t] .. cuts[t+1]), sets it to β·z, then       \
     * visits every row with p(i) != 0 and adds α·p(i)·X(i, j) for the row's entries in its range      \
     * (found by a binary search: a row's columns are sorted). No copies, no atomics; each w(j) is     \
     * summed by one thread in row order, the same for any number of threads. XTVXY's p = v ⊙ X·y     \
     * comes first, by rows (X is then read twice, once by rows, once by ranges). */                   \
    static sr_status fused_by_columns_##T(const sr_fused_args *a, int threads, const int64_t *cuts)       \
    {                                                                                                     \
        const T *v = a->v, *y = a->y, *z = a->z;                                                          \
        T *w = a->w;                                                                                      \
        const T alpha = (T)a->alpha, beta = (T)a->beta;                                                   \
        const int64_t *rowptr = a->X->rowptr;                                                             \
        const int32_t *restrict col = a->X->colind;                                                       \
        const T *restrict xv = a->X->type == SR_TYPE_BOOL ? NULL : (const T *)a->X->values;               \
        T *p = malloc((size_t)(a->m > 0 ? a->m : 1) * sizeof(T));                                         \
        if (!p)                                                                                           \
            return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for %lld row scales", (long long)a->m); \
        _Pragma("omp parallel num_threads(threads)")                                                      \
        {                                                                                                 \
            _Pragma("omp for schedule(dynamic, 256)")                                                     \
            for (int64_t i = 0; i < a->m; i++)                                                            \
                p[i] = alpha * (v ? v[i] : (T)1) * (a->form == SR_FORM_XTY ? y[i] : row_dot_##T(a, i));   \
            const int t = omp_get_thread_num();                                                           \
            const int64_t c0 = cuts[t], c1 = cuts[t + 1];                                                 \
            for (int64_t j = c0; j < c1; j++)                                                             \
                w[j] = z ? beta * z[j] : (T)0;                                                            \
            for (int64_t i = 0; i < a->m && c0 < c1; i++) {                                               \
                const int64_t lo = rowptr[i], hi = rowptr[i + 1];                                         \
                if (p[i] == 0 || lo == hi || col[hi - 1] < c0 || col[lo] >= c1)                           \
                    continue;                                                                             \
                for (int64_t k = sr_cpu_lower_bound(col, lo, hi, c0); k < hi && col[k] < c1; k++)        \
                    w[col[k]] += (xv ? xv[k] : (T)1) * p[i];                                              \
            }                                                                                             \
        }                                                                                                 \
        free(p);                                                                                          \
        return SR_SUCCESS;                                                                                \
    }                                                                                                     \
    static sr_status fused_##T(const sr_fused_args *a, int threads)                                       \
    {                                                                                                     \
        const T *v = a->v, *y = a->y, *z = a->z;                                                          \
        T *w = a->w;                                                                                      \
        const T alpha = (T)a->alpha, beta = (T)a->beta;                                                   \
        if (a->form == SR_FORM_XY) {                                                                      \
            _Pragma("omp parallel for num_threads(threads) schedule(dynamic, 256)")                       \
            for (int64_t i = 0; i < a->m; i++) {                                                          \
                const T d = row_dot_##T(a, i) * (v ? v[i] : (T)1);                                        \
                w[i] = alpha * d + (z ? beta * z[i] : (T)0);                                              \
            }                                                                                             \
            return SR_SUCCESS;                                                                            \
        }                                                                                                 \
        const bool private_sums = (int64_t)threads * a->n <= PRIVATE_ELEMENTS;                            \
        if (a->X && (!private_sums || a->m < a->n)) {                                                     \
            int64_t cuts[SR_CPU_MAX_THREADS + 1];                                                         \
            threads = threads < SR_CPU_MAX_THREADS ? threads : SR_CPU_MAX_THREADS;                        \
            SR_TRY(column_cuts(a->X, threads, cuts));                                                     \
            return fused_by_columns_##T(a, threads, cuts);                                                \
        }                                                                                                 \
        T *sums = private_sums ? calloc((size_t)threads * (size_t)(a->n > 0 ? a->n : 1), sizeof(T)) : NULL; \
        if (private_sums && !sums)                                                                        \
            return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for %d partial sums of %lld",     \
                            threads, (long long)a->n);                                                    \
        T *shared = NULL;                                                                                 \
        if (!private_sums && !(shared = calloc((size_t)a->n, sizeof(T))))                                 \
            return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for %lld sums", (long long)a->n); \
        _Pragma("omp parallel num_threads(threads)")                                                      \
        {                                                                                                 \
            T *acc = private_sums ? sums + (size_t)omp_get_thread_num() * (size_t)a->n : shared;          \
            _Pragma("omp for schedule(dynamic, 256)")                                                     \
            for (int64_t i = 0; i < a->m; i++) {                                                          \
                const T scale = v ? v[i] : (T)1;                                                          \
                const T p = a->form == SR_FORM_XTY ? scale * y[i] : scale * row_dot_##T(a, i);            \
                if (p != 0)                                                                               \
                    row_spread_##T(a, i, p, acc, !private_sums);                                          \
            }                                                                                             \
            /* w = α·Σ sums + β·z, a column range a thread (z may be w: read before written) */           \
            _Pragma("omp for schedule(static)")                                                           \
            for (int64_t j = 0; j < a->n; j++) {                                                          \
                T s = 0;                                                                                  \
                if (private_sums)                                                                         \
                    for (int t = 0; t < threads; t++)                                                     \
                        s += sums[(size_t)t * (size_t)a->n + (size_t)j];                                  \
                else                                                                                      \
                    s = shared[j];                                                                        \
                w[j] = alpha * s + (z ? beta * z[j] : (T)0);                                              \
            }                                                                                             \
        }                                                                                                 \
        free(sums);                                                                                       \
        free(shared);                                                                                     \
        return SR_SUCCESS;                                                                                \
    }
SR_DEFINE_FUSED_PATTERN(float)
SR_DEFINE_FUSED_PATTERN(double)
#undef SR_DEFINE_FUSED_PATTERN

sr_status sr_cpu_fused(const sr_fused_args *a, int threads)
{
    return a->type == SR_TYPE_FLOAT32 ? fused_float(a, threads) : fused_double(a, threads);
}
