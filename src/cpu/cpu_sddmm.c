/* Sampled products on the host: SDDMM over any semiring, and the fused SDDMM→SpMM (with the
 * online row softmax). Both split S's entries (not its rows) among threads, so one long row of a
 * power-law S does not leave the other threads idle. */
#include <math.h>
#include <stdlib.h>

#include <omp.h>

#include "../core/error.h"
#include "../core/types.h"
#include "../semiring/user.h"
#include "cpu.h"
#include "cpu_clones.h"
#include "cpu_sddmm.h"

/* Entries a task takes: a few thousand dot products amortize the row search and scheduling. */
#define SDDMM_TASK 2048
/* Partial sums per dot product: eight (dot8_: one AVX2 register of floats, two SSE2 ones). From
 * K = 64 (dot_ chooses), four arrays of eight (dot4_), each indexed only by constants so that the
 * compiler keeps them in registers: four independent chains of multiply-adds, so that the loads
 * of B's row, not the adds' latency, set the pace (one array of 32 indexed in loops of run-time
 * length went to the stack; at K = 32 the four sets' reduction cost more than the chains gained). */
#define SDDMM_LANES 8
/* The row holding entry e: the last i with rowptr[i] <= e (rows before may be empty). */
static int64_t row_of_entry(const int64_t *rowptr, int64_t nrows, int64_t e)
{
    int64_t lo = 0, hi = nrows; /* rowptr[lo] <= e < rowptr[hi] */
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (rowptr[mid] <= e)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

#define SR_DEFINE_SDDMM(SEMI, ADD, MUL, T, OUT)                                                          \
    static inline T dot8_##ADD##_##MUL##_##T(const T *restrict x, const T *restrict y, int64_t K)      \
    {                                                                                                    \
        (void)x; /* the pair semirings read neither */                                                   \
        (void)y;                                                                                         \
        T part[SDDMM_LANES];                                                                             \
        for (int q = 0; q < SDDMM_LANES; q++)                                                            \
            part[q] = SR_ID_##ADD##_##T;                                                                 \
        int64_t k = 0;                                                                                   \
        for (; k + SDDMM_LANES <= K; k += SDDMM_LANES)                                                   \
            for (int q = 0; q < SDDMM_LANES; q++)                                                        \
                part[q] = SR_ADD_##ADD(part[q], (T)SR_MUL_##MUL(x[k + q], y[k + q]));                    \
        for (int q = 0; k + q < K; q++)                                                                  \
            part[q] = SR_ADD_##ADD(part[q], (T)SR_MUL_##MUL(x[k + q], y[k + q]));                        \
        T d = part[0];                                                                                   \
        for (int q = 1; q < SDDMM_LANES; q++)                                                            \
            d = SR_ADD_##ADD(d, part[q]);                                                                \
        return d;                                                                                        \
    }                                                                                                    \
    static inline T dot4_##ADD##_##MUL##_##T(const T *restrict x, const T *restrict y, int64_t K)      \
    {                                                                                                    \
        (void)x; /* the pair semirings read neither */                                                   \
        (void)y;                                                                                         \
        T p0[SDDMM_LANES], p1[SDDMM_LANES], p2[SDDMM_LANES], p3[SDDMM_LANES];                            \
        for (int q = 0; q < SDDMM_LANES; q++)                                                            \
            p0[q] = p1[q] = p2[q] = p3[q] = SR_ID_##ADD##_##T;                                           \
        int64_t k = 0;                                                                                   \
        for (; k + 4 * SDDMM_LANES <= K; k += 4 * SDDMM_LANES)                                           \
            for (int q = 0; q < SDDMM_LANES; q++) {                                                      \
                p0[q] = SR_ADD_##ADD(p0[q], (T)SR_MUL_##MUL(x[k + q], y[k + q]));                        \
                p1[q] = SR_ADD_##ADD(p1[q], (T)SR_MUL_##MUL(x[k + q + SDDMM_LANES], y[k + q + SDDMM_LANES])); \
                p2[q] = SR_ADD_##ADD(p2[q], (T)SR_MUL_##MUL(x[k + q + 2 * SDDMM_LANES],                   \
                                                            y[k + q + 2 * SDDMM_LANES]));                 \
                p3[q] = SR_ADD_##ADD(p3[q], (T)SR_MUL_##MUL(x[k + q + 3 * SDDMM_LANES],                   \
                                                            y[k + q + 3 * SDDMM_LANES]));                 \
            }                                                                                            \
        for (; k + SDDMM_LANES <= K; k += SDDMM_LANES)                                                   \
            for (int q = 0; q < SDDMM_LANES; q++)                                                        \
                p0[q] = SR_ADD_##ADD(p0[q], (T)SR_MUL_##MUL(x[k + q], y[k + q]));                        \
        T tail = SR_ID_##ADD##_##T;                                                                      \
        for (; k < K; k++)                                                                               \
            tail = SR_ADD_##ADD(tail, (T)SR_MUL_##MUL(x[k], y[k]));                                      \
        for (int q = 0; q < SDDMM_LANES; q++) /* a tree, not a chain of 31 adds */                       \
            p0[q] = SR_ADD_##ADD(SR_ADD_##ADD(p0[q], p1[q]), SR_ADD_##ADD(p2[q], p3[q]));                 \
        for (int q = 0; q < SDDMM_LANES / 2; q++)                                                        \
            p0[q] = SR_ADD_##ADD(p0[q], p0[q + SDDMM_LANES / 2]);                                        \
        return SR_ADD_##ADD(SR_ADD_##ADD(SR_ADD_##ADD(p0[0], p0[2]), SR_ADD_##ADD(p0[1], p0[3])), tail); \
    }                                                                                                    \
    static inline T dot_##ADD##_##MUL##_##T(const T *restrict x, const T *restrict y, int64_t K)       \
    {                                                                                                    \
        return K >= 64 ? dot4_##ADD##_##MUL##_##T(x, y, K) : dot8_##ADD##_##MUL##_##T(x, y, K);          \
    }                                                                                                    \
    /* entries [e0, e1), compiled for wider vectors too (cpu_clones.h) */                                \
    SR_V3_CLONE static void sddmm_range_##ADD##_##MUL##_##T(const sr_sddmm_args *a, T *out, int64_t e0, \
                                                            int64_t e1)                                  \
    {                                                                                                    \
        const struct sr_matrix_s *S = a->S;                                                              \
        const T *A = (const T *)a->A, *B = (const T *)a->B;                                              \
        const T *sv = a->pattern ? NULL : (const T *)S->values;                                          \
        const int64_t K = a->K;                                                                          \
        int64_t i = row_of_entry(S->rowptr, S->nrows, e0);                                               \
        for (int64_t e = e0; e < e1; e++) {                                                              \
            while (S->rowptr[i + 1] <= e)                                                                \
                i++;                                                                                     \
            const T *x = A + (size_t)i * (size_t)K, *y = B + (size_t)S->colind[e] * (size_t)K;            \
            T d = dot_##ADD##_##MUL##_##T(x, y, K);                                                     \
            if (sv)                                                                                      \
                d = (T)SR_MUL_##MUL(sv[e], d);                                                           \
            out[e] = (T)sr_cpu_sddmm_output(a, (double)d, e);                                            \
        }                                                                                                \
    }                                                                                                    \
    static void sddmm_##ADD##_##MUL##_##T(const sr_sddmm_args *a, T *out, int threads)                  \
    {                                                                                                    \
        const int64_t nnz = a->S->nnz, tasks = (nnz + SDDMM_TASK - 1) / SDDMM_TASK;                      \
        _Pragma("omp parallel for num_threads(threads) schedule(dynamic, 1)")                            \
        for (int64_t t = 0; t < tasks; t++)                                                              \
            sddmm_range_##ADD##_##MUL##_##T(a, out, t * SDDMM_TASK,                                      \
                                            (t + 1) * SDDMM_TASK < nnz ? (t + 1) * SDDMM_TASK : nnz);    \
    }
SR_FOR_EACH_SEMIRING_KERNEL(SR_DEFINE_SDDMM)
#undef SR_DEFINE_SDDMM

/* Threads for S's entries each taking a dot of K (and p more elements), four elements a step. */
static int sddmm_threads(const sr_sddmm_args *a, int64_t p)
{
    return sr_context_threads_for(a->S->ctx, a->S->nnz * ((a->K + p) / 4 + 1) + a->S->nrows);
}

/* A user semiring's SDDMM: its compiled dot products over tasks of entries, then alpha and beta as
 * the built-ins apply them. */
static void sddmm_user(const sr_sddmm_args *a, const sr_user_semiring *u, void *out, int threads)
{
    const struct sr_matrix_s *S = a->S;
    const int64_t nnz = S->nnz, tasks = (nnz + SDDMM_TASK - 1) / SDDMM_TASK;
    const sr_type t = a->out_type;
    const bool scaled = a->alpha != 1.0 || a->beta != 0.0;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (int64_t task = 0; task < tasks; task++) {
        const int64_t e0 = task * SDDMM_TASK, e1 = e0 + SDDMM_TASK < nnz ? e0 + SDDMM_TASK : nnz;
        u->sddmm_range(S->rowptr, S->colind, a->pattern ? NULL : S->values, a->A, a->B, a->K,
                       row_of_entry(S->rowptr, S->nrows, e0), e0, e1, out);
        for (int64_t e = e0; scaled && e < e1; e++) { /* the built-ins' (T) of the double */
            const double r = sr_cpu_sddmm_output(a, sr_value_get(out, t, e), e);
            if (t == SR_TYPE_INT32)
                ((int32_t *)out)[e] = (int32_t)r;
            else if (t == SR_TYPE_FLOAT32)
                ((float *)out)[e] = (float)r;
            else
                ((double *)out)[e] = r;
        }
    }
}

sr_status sr_cpu_sddmm(const sr_sddmm_args *a, void *out)
{
    const int threads = sddmm_threads(a, 0);
    const sr_user_semiring *u = sr_user_semiring_of((int)a->semiring);
    if (u) {
        sddmm_user(a, u, out, threads);
        return SR_SUCCESS;
    }
    if (sr_cpu_sddmm_tiles_pay(a)) { /* without host memory for the tiles' packs, the dot products */
        const sr_status st = sr_cpu_sddmm_tiles(a, out, threads);
        if (st != SR_ERROR_OUT_OF_MEMORY)
            return st;
    }
#define SR_DISPATCH_SDDMM(SEMI, ADD, MUL, T, OUT)                                                        \
    if (a->semiring == SEMI && a->out_type == OUT && a->in_type == OUT) {                                \
        sddmm_##ADD##_##MUL##_##T(a, (T *)out, threads);                                                 \
        return SR_SUCCESS;                                                                               \
    }
    SR_FOR_EACH_SEMIRING_KERNEL(SR_DISPATCH_SDDMM)
#undef SR_DISPATCH_SDDMM
    return sr_error(SR_ERROR_UNSUPPORTED, "sr_sddmm: no CPU kernel for %s on %s", sr_semiring_name(a->semiring),
                    sr_type_name(a->in_type));
}

/* One row of the fused product: acc = Σ_e w_e·V(col_e) with w the scaled sampled scores, softmax-
 * normalized online (a running maximum rescales what was summed when a larger score comes). */
#define SR_DEFINE_FUSED(T, EXP)                                                                          \
    SR_V3_CLONE static void fused_row_##T(const sr_sddmm_args *a, const T *V, int64_t p, int64_t i,      \
                                          bool softmax, T *restrict acc)                                 \
    {                                                                                                    \
        const struct sr_matrix_s *S = a->S;                                                              \
        const T *sv = a->pattern ? NULL : (const T *)S->values;                                          \
        const T *x = (const T *)a->A + (size_t)i * (size_t)a->K;                                         \
        T top = -INFINITY, sum = 0;                                                                      \
        for (int64_t c = 0; c < p; c++)                                                                  \
            acc[c] = 0;                                                                                  \
        for (int64_t e = S->rowptr[i]; e < S->rowptr[i + 1]; e++) {                                      \
            const int64_t j = S->colind[e];                                                              \
            const T *y = (const T *)a->B + (size_t)j * (size_t)a->K;                                     \
            T w = dot_PLUS_TIMES_##T(x, y, a->K);                                                       \
            w = (T)a->alpha * (sv ? sv[e] * w : w);                                                      \
            if (softmax) {                                                                               \
                if (w > top) {                                                                           \
                    const T rescale = EXP(top - w); /* 0 for the first entry */                          \
                    for (int64_t c = 0; c < p; c++)                                                      \
                        acc[c] *= rescale;                                                               \
                    sum *= rescale;                                                                      \
                    top = w;                                                                             \
                }                                                                                        \
                w = EXP(w - top);                                                                        \
                sum += w;                                                                                \
            }                                                                                            \
            const T *restrict v = V + (size_t)j * (size_t)p;                                             \
            for (int64_t c = 0; c < p; c++)                                                              \
                acc[c] += w * v[c];                                                                      \
        }                                                                                                \
        if (softmax && sum > 0)                                                                          \
            for (int64_t c = 0; c < p; c++)                                                              \
                acc[c] /= sum;                                                                         \
    }                                                                                                    \
    /* scratch: each thread's p accumulators, `stride` elements apart (no cache line shared) */        \
    static void fused_##T(const sr_sddmm_args *a, const T *V, int64_t p, const sr_sddmm_out *O, bool softmax, \
                          bool accumulate, T *scratch, int64_t stride, int threads)                     \
    {                                                                                                    \
        _Pragma("omp parallel num_threads(threads)")                                                     \
        {                                                                                                \
            T *acc = scratch + (size_t)omp_get_thread_num() * (size_t)stride;                            \
            _Pragma("omp for schedule(dynamic, 16)")                                                     \
            for (int64_t i = 0; i < a->S->nrows; i++) {                                                  \
                fused_row_##T(a, V, p, i, softmax, acc);                                                 \
                T *o = (T *)O->data + (size_t)i * (size_t)O->row_stride;                                 \
                for (int64_t c = 0; c < p; c++) {                                                        \
                    T *cell = o + (size_t)c * (size_t)O->col_stride;                                     \
                    *cell = accumulate ? *cell + acc[c] : acc[c];                                        \
                }                                                                                        \
            }                                                                                            \
        }                                                                                                \
    }
SR_DEFINE_FUSED(float, expf)
SR_DEFINE_FUSED(double, exp)
#undef SR_DEFINE_FUSED

sr_status sr_cpu_sddmm_spmm(const sr_sddmm_args *a, const void *V, int64_t p, const sr_sddmm_out *O,
                            sr_row_normalize normalize, bool accumulate)
{
    const int threads = sddmm_threads(a, p);
    const bool softmax = normalize == SR_NORMALIZE_SOFTMAX;
    if (sr_cpu_sddmm_spmm_tiles_pay(a)) { /* without host memory for the tiles' packs, the rows below */
        const sr_status st = sr_cpu_sddmm_spmm_tiles(a, V, p, O, softmax, accumulate, threads);
        if (st != SR_ERROR_OUT_OF_MEMORY)
            return st;
    }
    int64_t stride = 0;
    void *block = NULL, *scratch = sr_cpu_alloc_copies(threads, p, sr_type_size(a->out_type), true, &stride, &block);
    if (!scratch)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "sr_sddmm_spmm: out of host memory for %d rows of %lld accumulators",
                        threads, (long long)p);
    if (a->out_type == SR_TYPE_FLOAT32)
        fused_float(a, (const float *)V, p, O, softmax, accumulate, (float *)scratch, stride, threads);
    else
        fused_double(a, (const double *)V, p, O, softmax, accumulate, (double *)scratch, stride, threads);
    free(block);
    return SR_SUCCESS;
}
