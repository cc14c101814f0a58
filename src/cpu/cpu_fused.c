/* The fused pattern on the host: each row of X is read once; its dot with y (X·y), scaled by v,
 * is spread back over the row's columns (Xᵀ·) while the row is still in L1. Its loops run on the
 * pool (cpu_pool.h) like the vector calls of the solvers built on it. Threads sum into their own
 * copies of w (added at the end, in copy order) when those take at most PRIVATE_ELEMENTS in all
 * and X has at least as many rows as columns; copy t takes a fixed share of the rows, so a call
 * gives the same bits every time with the same threads, as the solvers' runs need. Wider sparse X
 * (10^4 x 10^7: copies of w would cost more than X's entries) has each thread own a range of w's
 * columns instead (fused_by_columns); dense X too wide for copies adds into w atomically (the
 * paper's global aggregation). */
#include <stdlib.h>
#include <string.h>

#include "../core/memory.h"
#include "../core/error.h"
#include "cpu.h"
#include "cpu_pool.h"

#define PRIVATE_ELEMENTS ((int64_t)1 << 25) /* 256 MiB of doubles across the threads' copies of w */

/* The most threads the column ranges serve (their cuts live on the stack). */
#define SR_CPU_MAX_THREADS 1024
#define FUSED_ROWS 256 /* rows a chunk of the pool (cpu_pool.h) */

/* One call's state for the pool's chunks (void pointers: one struct serves float and double). */
typedef struct {
    const sr_fused_args *a;
    int threads;
    bool private_sums;   /* each slot adds into its own copy of w in sums, `stride` apart */
    int64_t stride;      /* elements from one copy to the next (sr_cpu_alloc_copies) */
    void *sums, *shared; /* threads copies of w, or one shared (atomic adds) */
    void *sums_block;    /* the allocation holding sums */
    void *p;             /* the column ranges' row scales */
    const int64_t *cuts; /* the column ranges: threads + 1 bounds */
    const int64_t *row_cuts; /* the copies' row shares: threads + 1 bounds */
} fused_job;

/* cuts[0..threads]: consecutive row shares of about equal entries plus rows (rows alone for dense
 * X), found by binary search on the row pointers as the SpMV's shares are. */
static void row_cuts(const struct sr_matrix_s *X, int64_t m, int threads, int64_t *cuts)
{
    const int64_t total = X ? X->rowptr[m] + m : m;
    for (int t = 0; t <= threads; t++) {
        const int64_t want = (int64_t)((double)total * t / threads);
        int64_t lo = 0, hi = m;
        while (lo < hi) {
            const int64_t mid = lo + (hi - lo) / 2;
            if ((X ? X->rowptr[mid] + mid : mid) < want)
                lo = mid + 1;
            else
                hi = mid;
        }
        cuts[t] = lo;
    }
    cuts[threads] = m;
}

/* cuts[0..threads]: column ranges holding about equal shares of X's entries, at the quantiles of
 * a sample of its column indices (up to 2^16 entries, evenly spaced), 0 and n at the ends. */
static sr_status column_cuts(const struct sr_matrix_s *X, int threads, int64_t *cuts)
{
    const int64_t nnz = X->rowptr[X->nrows], samples = nnz < 65536 ? nnz : 65536;
    int32_t *sample = sr_malloc((size_t)(samples > 0 ? samples : 1) * sizeof(int32_t));
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
    /* XY's rows, or the scales p(i) = α·v(i)·X(i,:)·y of the column ranges' first pass. */              \
    static void rows_chunk_##T(void *arg, int64_t c, int slot)                                            \
    {                                                                                                     \
        const fused_job *job = arg;                                                                       \
        const sr_fused_args *a = job->a;                                                                  \
        const T *v = a->v, *y = a->y, *z = a->z;                                                          \
        const T alpha = (T)a->alpha, beta = (T)a->beta;                                                   \
        const int64_t i1 = (c + 1) * FUSED_ROWS < a->m ? (c + 1) * FUSED_ROWS : a->m;                      \
        (void)slot;                                                                                       \
        for (int64_t i = c * FUSED_ROWS; i < i1; i++) {                                                   \
            if (a->form == SR_FORM_XY) {                                                                  \
                const T d = row_dot_##T(a, i) * (v ? v[i] : (T)1);                                        \
                ((T *)a->w)[i] = alpha * d + (z ? beta * z[i] : (T)0);                                    \
            } else {                                                                                      \
                ((T *)job->p)[i] = alpha * (v ? v[i] : (T)1) * (a->form == SR_FORM_XTY ? y[i] : row_dot_##T(a, i)); \
            }                                                                                             \
        }                                                                                                 \
    }                                                                                                     \
    /* Column range c (cuts[c] .. cuts[c+1]) of w: set to β·z, then every row with p(i) != 0 adds     \
     * p(i)·X(i, j) for its entries in the range (found by a binary search: a row's columns are       \
     * sorted). No copies, no atomics; each w(j) is summed in row order by one thread, the same for   \
     * any number of threads. */                                                                      \
    static void range_chunk_##T(void *arg, int64_t c, int slot)                                           \
    {                                                                                                     \
        const fused_job *job = arg;                                                                       \
        const sr_fused_args *a = job->a;                                                                  \
        const T *z = a->z, *p = job->p;                                                                   \
        T *w = a->w;                                                                                      \
        const T beta = (T)a->beta;                                                                        \
        const int64_t *rowptr = a->X->rowptr;                                                             \
        const int32_t *restrict col = a->X->colind;                                                       \
        const T *restrict xv = a->X->type == SR_TYPE_BOOL ? NULL : (const T *)a->X->values;               \
        const int64_t c0 = job->cuts[c], c1 = job->cuts[c + 1];                                           \
        (void)slot;                                                                                       \
        for (int64_t j = c0; j < c1; j++)                                                                 \
            w[j] = z ? beta * z[j] : (T)0;                                                                \
        for (int64_t i = 0; i < a->m && c0 < c1; i++) {                                                   \
            const int64_t lo = rowptr[i], hi = rowptr[i + 1];                                             \
            if (p[i] == 0 || lo == hi || col[hi - 1] < c0 || col[lo] >= c1)                               \
                continue;                                                                                 \
            for (int64_t k = sr_cpu_lower_bound(col, lo, hi, c0); k < hi && col[k] < c1; k++)            \
                w[col[k]] += (xv ? xv[k] : (T)1) * p[i];                                                  \
        }                                                                                                 \
    }                                                                                                     \
    /* Rows i0 .. i1 - 1 spread into acc (atomically when shared). */                                 \
    static void spread_rows_##T(const sr_fused_args *a, int64_t i0, int64_t i1, T *acc, bool shared)      \
    {                                                                                                     \
        const T *v = a->v, *y = a->y;                                                                     \
        for (int64_t i = i0; i < i1; i++) {                                                               \
            const T scale = v ? v[i] : (T)1;                                                              \
            const T p = a->form == SR_FORM_XTY ? scale * y[i] : scale * row_dot_##T(a, i);                \
            if (p != 0)                                                                                   \
                row_spread_##T(a, i, p, acc, shared);                                                     \
        }                                                                                                 \
    }                                                                                                     \
    /* Copy t of w takes the rows of share t, in order, whichever thread runs it: each w(j) is then  \
     * the same sum on every call with the same threads (a copy a thread of the pool, by whichever  \
     * rows it happened to claim, made the last bits vary from call to call). */                      \
    static void spread_share_##T(void *arg, int64_t t, int slot)                                          \
    {                                                                                                     \
        const fused_job *job = arg;                                                                       \
        T *copy = (T *)job->sums + (size_t)t * (size_t)job->stride;                                       \
        (void)slot;                                                                                       \
        memset(copy, 0, (size_t)job->a->n * sizeof(T)); /* each copy zeroed by the thread that fills it */ \
        spread_rows_##T(job->a, job->row_cuts[t], job->row_cuts[t + 1], copy, false);                     \
    }                                                                                                     \
    /* Rows of chunk c added into the shared sums atomically (w too wide for copies). */                \
    static void spread_chunk_##T(void *arg, int64_t c, int slot)                                          \
    {                                                                                                     \
        const fused_job *job = arg;                                                                       \
        const int64_t i1 = (c + 1) * FUSED_ROWS < job->a->m ? (c + 1) * FUSED_ROWS : job->a->m;            \
        (void)slot;                                                                                       \
        spread_rows_##T(job->a, c * FUSED_ROWS, i1, (T *)job->shared, true);                              \
    }                                                                                                     \
    /* w = α·Σ sums + β·z over column share c of `threads` (z may be w: read before written). */         \
    static void gather_chunk_##T(void *arg, int64_t c, int slot)                                          \
    {                                                                                                     \
        const fused_job *job = arg;                                                                       \
        const sr_fused_args *a = job->a;                                                                  \
        const T *z = a->z, *sums = job->sums, *shared = job->shared;                                      \
        T *w = a->w;                                                                                      \
        const T alpha = (T)a->alpha, beta = (T)a->beta;                                                   \
        (void)slot;                                                                                       \
        for (int64_t j = a->n * c / job->threads; j < a->n * (c + 1) / job->threads; j++) {              \
            T s = 0;                                                                                      \
            if (job->private_sums)                                                                        \
                for (int t = 0; t < job->threads; t++)                                                    \
                    s += sums[(size_t)t * (size_t)job->stride + (size_t)j];                               \
            else                                                                                          \
                s = shared[j];                                                                            \
            w[j] = alpha * s + (z ? beta * z[j] : (T)0);                                                  \
        }                                                                                                 \
    }                                                                                                     \
    static sr_status fused_##T(const sr_fused_args *a, int threads)                                       \
    {                                                                                                     \
        const int64_t row_chunks = (a->m + FUSED_ROWS - 1) / FUSED_ROWS;                                  \
        if (threads > SR_CPU_MAX_THREADS) /* the shares' and ranges' bounds live on the stack */          \
            threads = SR_CPU_MAX_THREADS;                                                                 \
        fused_job job = {a, threads, false, 0, NULL, NULL, NULL, NULL, NULL, NULL};                       \
        if (a->form == SR_FORM_XY) {                                                                      \
            sr_cpu_run_chunks(threads, row_chunks, rows_chunk_##T, &job);                                 \
            return SR_SUCCESS;                                                                            \
        }                                                                                                 \
        job.private_sums = (int64_t)threads * a->n <= PRIVATE_ELEMENTS;                                   \
        if (a->X && (!job.private_sums || a->m < a->n)) {                                                 \
            int64_t cuts[SR_CPU_MAX_THREADS + 1];                                                         \
            SR_TRY(column_cuts(a->X, job.threads, cuts));                                                 \
            job.cuts = cuts;                                                                              \
            if (!(job.p = sr_malloc((size_t)(a->m > 0 ? a->m : 1) * sizeof(T))))                             \
                return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for %lld row scales", (long long)a->m); \
            sr_cpu_run_chunks(threads, row_chunks, rows_chunk_##T, &job);                                 \
            sr_cpu_run_chunks(job.threads, job.threads, range_chunk_##T, &job);                           \
            free(job.p);                                                                                  \
            return SR_SUCCESS;                                                                            \
        }                                                                                                 \
        /* (copies a cache-line pair apart: on narrow w, 10^7 x 100, copies sharing a line at their ends \
         * sent it from core to core on most rows) */                                                  \
        if (job.private_sums &&                                                                           \
            !(job.sums =                                                                                  \
                  sr_cpu_alloc_copies(threads, a->n, sizeof(T), false, &job.stride, &job.sums_block)))    \
            return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for %d partial sums of %lld",     \
                            threads, (long long)a->n);                                                    \
        if (!job.private_sums && !(job.shared = sr_calloc((size_t)(a->n > 0 ? a->n : 1), sizeof(T))))        \
            return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for %lld sums", (long long)a->n); \
        int64_t shares[SR_CPU_MAX_THREADS + 1];                                                           \
        if (job.private_sums) {                                                                           \
            row_cuts(a->X, a->m, threads, shares);                                                        \
            job.row_cuts = shares;                                                                        \
            sr_cpu_run_chunks(threads, threads, spread_share_##T, &job);                                  \
        } else {                                                                                          \
            sr_cpu_run_chunks(threads, row_chunks, spread_chunk_##T, &job);                               \
        }                                                                                                 \
        sr_cpu_run_chunks(threads, threads, gather_chunk_##T, &job);                                      \
        free(job.sums_block);                                                                             \
        free(job.shared);                                                                                 \
        return SR_SUCCESS;                                                                                \
    }
SR_DEFINE_FUSED_PATTERN(float)
SR_DEFINE_FUSED_PATTERN(double)
#undef SR_DEFINE_FUSED_PATTERN

sr_status sr_cpu_fused(const sr_fused_args *a, int threads)
{
    return a->type == SR_TYPE_FLOAT32 ? fused_float(a, threads) : fused_double(a, threads);
}
