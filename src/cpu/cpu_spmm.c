/* Dense-output semiring products on the host: C = A ⊕.⊗ B (SpMV is the one-column case). */
#include <stdlib.h>

#include "../core/error.h"
#include "../core/memory.h"
#include "cpu.h"
#include "cpu_pool.h"

/* Element (i, j) of a dense view with elements of type T. */
#define DENSE_AT(T, d, i, j) (((T *)(d)->data)[sr_dense_offset((d), (i), (j))])

/* One kernel per (semiring, T), for a row-major B (sr_cpu_spmm copies a column-major one): each
 * thread (a slot of the pool, cpu_pool.h) owns a tile of `tile_rows` rows of accumulators and a row
 * of mask flags; the tiles are claimed one at a time. A row's columns
 * are summed 128 bytes at a time in local accumulators the compiler keeps in registers (one load
 * of B per element, no load and store of the accumulator per entry of A); the rest go through the
 * accumulator row. A column-major C without a mask is written a tile at a time, each column's
 * rows contiguously (a row at a time, its elements a column apart, measured 1.45 against 1.12 ms
 * for 68K x 32 floats on 2 cores). */
#define SPMM_CHUNK(T) (int)(128 / sizeof(T))
/* One SpMM call for the pool (cpu_pool.h): a chunk is a tile of rows; scratch and allow per slot. */
typedef struct {
    const struct sr_matrix_s *A, *mask;
    const sr_dense *B, *C;
    bool complement, accumulate;
    void *scratch;        /* slots x tile_rows x n accumulators */
    unsigned char *allow; /* slots x allow_stride mask flags */
    bool *ready;          /* per slot: flags set */
    int64_t tile_rows;
    int64_t allow_stride; /* bytes from one slot's flags to the next's (sr_cpu_alloc_copies) */
} spmm_job;
#define SR_DEFINE_SPMM(SEMI, ADD, MUL, T, OUT)                                                           \
    /* Row i of A times columns [j0, j0 + chunk) of B into out[0, chunk). Not inlined: inside the  \
     * row loop it measured 10-25% slower (0.86-1.04 against 0.79-0.81 ms on pushpull, K=32). */    \
    __attribute__((noinline)) static void spmm_chunk_##ADD##_##MUL##_##T(                               \
        const struct sr_matrix_s *A, int64_t i, const T *restrict bdata, int64_t ld, int64_t j0, T *restrict out) \
    {                                                                                                    \
        const T *restrict av = (const T *)A->values;                                                     \
        const int32_t *restrict colind = A->colind;                                                      \
        const int64_t k0 = A->rowptr[i], k1 = A->rowptr[i + 1];                                          \
        T part[SPMM_CHUNK(T)];                                                                           \
        for (int q = 0; q < SPMM_CHUNK(T); q++)                                                          \
            part[q] = SR_ID_##ADD##_##T;                                                                 \
        for (int64_t k = k0; k < k1; k++) {                                                              \
            const T a = av ? av[k] : (T)1;                                                               \
            const T *restrict b = bdata + (size_t)colind[k] * (size_t)ld + j0;                           \
            (void)a;                                                                                     \
            (void)b;                                                                                     \
            for (int q = 0; q < SPMM_CHUNK(T); q++)                                                      \
                part[q] = SR_ADD_##ADD(part[q], (T)SR_MUL_##MUL(a, b[q]));                               \
        }                                                                                                \
        for (int q = 0; q < SPMM_CHUNK(T); q++)                                                          \
            out[q] = part[q];                                                                            \
    }                                                                                                    \
    static void spmm_##ADD##_##MUL##_##T(void *arg, int64_t chunk, int slot)                             \
    {                                                                                                    \
        const spmm_job *job = arg;                                                                       \
        const struct sr_matrix_s *A = job->A, *mask = job->mask;                                         \
        const sr_dense *B = job->B, *C = job->C;                                                         \
        const bool complement = job->complement, accumulate = job->accumulate;                           \
        const T *av = (const T *)A->values; /* NULL for bool: every entry is 1 */                        \
        const int64_t n = C->ncols, tile_rows = job->tile_rows;                                          \
        const bool by_tile = C->layout == SR_COL_MAJOR && !mask;                                         \
        T *tile = (T *)job->scratch + (size_t)slot * (size_t)tile_rows * (size_t)n;                      \
        unsigned char *allow = job->allow + (size_t)slot * (size_t)job->allow_stride;                    \
        if (mask && !job->ready[slot]) { /* the slot's flags, set once a call (each row restores them) */ \
            for (int64_t j = 0; j < n; j++)                                                              \
                allow[j] = complement;                                                                   \
            job->ready[slot] = true;                                                                     \
        }                                                                                                \
        const T *restrict bdata = (const T *)B->data;                                                    \
        (void)bdata;                                                                                     \
        const int64_t i0 = chunk * tile_rows;                                                            \
        {                                                                                                \
            const int64_t i1 = i0 + tile_rows < A->nrows ? i0 + tile_rows : A->nrows;                    \
            for (int64_t i = i0; i < i1; i++) {                                                          \
                T *restrict acc = tile + (size_t)(i - i0) * (size_t)n;                                   \
                int64_t done = 0; /* columns summed in registers, a chunk at a time */                   \
                for (; done + SPMM_CHUNK(T) <= n; done += SPMM_CHUNK(T))                                 \
                    spmm_chunk_##ADD##_##MUL##_##T(A, i, bdata, B->ld, done, acc + done);                 \
                for (int64_t j = done; j < n; j++)                                                       \
                    acc[j] = SR_ID_##ADD##_##T;                                                          \
                for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1] && done < n; k++) {                  \
                    const T a = av ? av[k] : (T)1;                                                       \
                    const T *restrict b = bdata + (size_t)A->colind[k] * (size_t)B->ld;                  \
                    T *restrict out = acc; /* restrict: the j loop vectorizes */                         \
                    (void)a;                                                                             \
                    (void)b;                                                                             \
                    for (int64_t j = done; j < n; j++)                                                   \
                        out[j] = SR_ADD_##ADD(out[j], (T)SR_MUL_##MUL(a, b[j]));                         \
                }                                                                                        \
                if (by_tile)                                                                             \
                    continue;                                                                            \
                if (mask)                                                                                \
                    for (int64_t k = mask->rowptr[i]; k < mask->rowptr[i + 1]; k++)                      \
                        allow[mask->colind[k]] = !complement;                                            \
                for (int64_t j = 0; j < n; j++) {                                                        \
                    if (mask && !allow[j])                                                               \
                        continue;                                                                        \
                    T *c = &DENSE_AT(T, C, i, j);                                                        \
                    *c = accumulate ? (T)SR_ADD_##ADD(*c, acc[j]) : acc[j];                              \
                }                                                                                        \
                if (mask)                                                                                \
                    for (int64_t k = mask->rowptr[i]; k < mask->rowptr[i + 1]; k++)                      \
                        allow[mask->colind[k]] = complement;                                             \
            }                                                                                            \
            for (int64_t j = 0; j < n && by_tile; j++) {                                                 \
                T *restrict c = &DENSE_AT(T, C, i0, j); /* column j's rows i0 .. i1 - 1 */             \
                for (int64_t r = 0; r < i1 - i0; r++)                                                    \
                    c[r] = accumulate ? (T)SR_ADD_##ADD(c[r], tile[(size_t)r * (size_t)n + (size_t)j])   \
                                      : tile[(size_t)r * (size_t)n + (size_t)j];                         \
            }                                                                                            \
        }                                                                                                \
    }
SR_FOR_EACH_SEMIRING_KERNEL(SR_DEFINE_SPMM)

/* The first row of thread t's share when rows are split into equal parts of entries plus rows
 * (an empty row still costs its write): a search in rowptr. */
int64_t sr_cpu_first_row_of_share(const int64_t *rowptr, int64_t nrows, int64_t t, int64_t shares)
{
    const int64_t total = rowptr[nrows] + nrows, want = (int64_t)((double)total * t / shares);
    int64_t lo = 0, hi = nrows; /* the first r with rowptr[r] + r >= want */
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (rowptr[mid] + mid < want)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* SpMV in chunks of equal work (entries plus rows), claimed by the pool's threads
 * (cpu_pool.h: a call never waits for a thread that has not started); a chunk is a fixed range of
 * rows, each row's sum in a register in column order (as scipy sums), so the result does not
 * depend on which thread ran which chunk. A vector's elements are ld apart in a row-major view,
 * adjacent in a column-major one. x's element for the entry SPMV_AHEAD places on is prefetched:
 * the gathers then overlap across rows, which the row loop's mispredicted exits otherwise cut short
 * (bench/probes/spmv_cpu_probe.py). */
#define SPMV_AHEAD 32
typedef struct {
    const struct sr_matrix_s *A, *mask;
    const sr_dense *B, *C;
    bool complement, accumulate;
    int64_t chunks;
} spmv_job;

#define SR_DEFINE_SPMV(SEMI, ADD, MUL, T, OUT)                                                           \
    static void spmv_##ADD##_##MUL##_##T(void *arg, int64_t chunk, int slot)                             \
    {                                                                                                    \
        const spmv_job *job = arg;                                                                       \
        const struct sr_matrix_s *A = job->A, *mask = job->mask;                                         \
        const T *restrict av = (const T *)A->values; /* NULL for bool: every entry is 1 */               \
        const int64_t *restrict rowptr = A->rowptr;                                                      \
        const int32_t *restrict colind = A->colind;                                                      \
        const T *restrict x = (const T *)job->B->data;                                                   \
        T *restrict y = (T *)job->C->data;                                                               \
        const int64_t xs = job->B->layout == SR_ROW_MAJOR ? job->B->ld : 1;                              \
        const int64_t ys = job->C->layout == SR_ROW_MAJOR ? job->C->ld : 1;                              \
        const int64_t nrows = A->nrows;                                                                  \
        (void)slot;                                                                                      \
        (void)x;                                                                                         \
        (void)colind;                                                                                    \
        (void)xs;                                                                                        \
        const int64_t r0 = sr_cpu_first_row_of_share(rowptr, nrows, chunk, job->chunks);                        \
        const int64_t r1 = chunk + 1 == job->chunks ? nrows : sr_cpu_first_row_of_share(rowptr, nrows, chunk + 1, job->chunks); \
        const int64_t k_end = rowptr[r1] - SPMV_AHEAD; /* the last entry whose look-ahead is ours */     \
        for (int64_t i = r0; i < r1; i++) {                                                              \
            T sum = SR_ID_##ADD##_##T;                                                                   \
            if (av && xs == 1) {                                                                         \
                for (int64_t k = rowptr[i]; k < rowptr[i + 1]; k++) {                                    \
                    if (k < k_end)                                                                       \
                        __builtin_prefetch(&x[colind[k + SPMV_AHEAD]]);                                  \
                    sum = SR_ADD_##ADD(sum, (T)SR_MUL_##MUL(av[k], x[colind[k]]));                       \
                }                                                                                        \
            } else {                                                                                     \
                for (int64_t k = rowptr[i]; k < rowptr[i + 1]; k++)                                      \
                    sum = SR_ADD_##ADD(sum, (T)SR_MUL_##MUL(av ? av[k] : (T)1, x[(size_t)colind[k] * (size_t)xs])); \
            }                                                                                            \
            if (mask && (mask->rowptr[i + 1] > mask->rowptr[i]) == job->complement)                      \
                continue; /* the mask's only column is 0 */                                              \
            T *c = &y[(size_t)i * (size_t)ys];                                                           \
            *c = job->accumulate ? (T)SR_ADD_##ADD(*c, sum) : sum;                                       \
        }                                                                                                \
    }
SR_FOR_EACH_SEMIRING_KERNEL(SR_DEFINE_SPMV)

/* B's elements in row-major order (out is B->nrows x B->ncols, packed): a column-major B goes
 * through this copy so that each row's elements are contiguous for the register chunks. Tiles of
 * 64 x 64: the copy's rows are written contiguously while the tile's columns of B stay in L1 (64
 * lines). Walking B's columns contiguously instead, and the copy 2 lines a row apart, measured 7x
 * slower (1.30 against 0.18 ms for 68K x 32 floats on 2 cores): the strided stores each missed.
 * A chunk of the pool is 64 rows. */
typedef struct {
    const sr_dense *B;
    void *out;
} row_major_job;
#ifndef COPY_ROWS
#define COPY_ROWS 1024
#endif

#define SR_DEFINE_COPY_ROWS(W)                                                                           \
    static void copy_rows_##W(void *arg, int64_t chunk, int slot)                                        \
    {                                                                                                    \
        const row_major_job *job = arg;                                                                  \
        const int64_t m = job->B->nrows, n = job->B->ncols, ld = job->B->ld, i0 = chunk * COPY_ROWS;     \
        const int64_t i1 = i0 + COPY_ROWS < m ? i0 + COPY_ROWS : m;                                      \
        const W *in = (const W *)job->B->data;                                                           \
        W *out = job->out;                                                                               \
        (void)slot;                                                                                      \
        for (int64_t j0 = 0; j0 < n; j0 += 64)                                                           \
            for (int64_t j = j0; j < n && j < j0 + 64; j++)                                              \
                for (int64_t i = i0; i < i1; i++)                                                        \
                    out[(size_t)i * (size_t)n + (size_t)j] = in[(size_t)j * (size_t)ld + (size_t)i];     \
    }
SR_DEFINE_COPY_ROWS(uint8_t)
SR_DEFINE_COPY_ROWS(uint32_t)
SR_DEFINE_COPY_ROWS(uint64_t)
#undef SR_DEFINE_COPY_ROWS

void sr_cpu_dense_row_major(const sr_dense *B, void *out, int threads)
{
    row_major_job job = {B, out};
    const size_t es = sr_type_size(B->type);
    sr_cpu_run_chunks(threads, (B->nrows + COPY_ROWS - 1) / COPY_ROWS,
                      es == 1 ? copy_rows_uint8_t : es == 4 ? copy_rows_uint32_t : copy_rows_uint64_t, &job);
}

sr_status sr_cpu_spmm(const struct sr_matrix_s *A, const sr_dense *B_in, const sr_dense *C,
                      const struct sr_matrix_s *mask, sr_semiring s, bool complement, bool accumulate)
{
    const sr_dense *B = B_in;
    /* a product's work: its entries (and the mask's) times B's columns four at a time, plus the rows */
    const int64_t work = (A->rowptr[A->nrows] + (mask ? mask->rowptr[mask->nrows] : 0)) * ((C->ncols + 3) / 4 + 1) +
                         A->nrows;
    int threads = sr_context_threads_for(A->ctx, work);
    if (C->ncols == 1) {
        /* with a plan (sr_spmv_plan): its columns, and x in their order */
        struct sr_matrix_s A_plan;
        sr_dense x_plan;
        void *x_memory = NULL;
        if (sr_cpu_spmv_planned(A)) { /* (never a Boolean A: it reads no x) */
            SR_TRY(sr_cpu_spmv_plan_operands(A, B, threads, &A_plan, &x_plan, &x_memory));
            A = &A_plan;
            B = &x_plan;
        }
        bool found = false;
        /* four chunks a thread: a helper that starts late leaves its share to the others (one a
         * thread measured 0.68 against 0.43 ms on the 200K power-law graph, 16 cores) */
        spmv_job job = {A, mask, B, C, complement, accumulate, (int64_t)threads * 4};
        if (job.chunks > A->nrows)
            job.chunks = A->nrows > 0 ? A->nrows : 1;
#define SR_DISPATCH_SPMV(SEMI, ADD, MUL, T, OUT)                                                         \
    if (!found && s == SEMI && C->type == OUT) {                                                         \
        sr_cpu_run_chunks(threads, job.chunks, spmv_##ADD##_##MUL##_##T, &job);                         \
        found = true;                                                                                    \
    }
        SR_FOR_EACH_SEMIRING_KERNEL(SR_DISPATCH_SPMV)
#undef SR_DISPATCH_SPMV
        free(x_memory);
        return found ? SR_SUCCESS
                     : sr_error(SR_ERROR_INTERNAL, "no CPU kernel for %s with %s output", sr_semiring_name(s),
                                sr_type_name(C->type));
    }
    size_t n = (size_t)C->ncols;
    /* rows per thread's tile of accumulators: 16 KiB of doubles, 1 to 64 rows */
    int64_t tile_rows = (int64_t)(16384 / ((n ? n : 1) * sizeof(double)));
    tile_rows = tile_rows < 1 ? 1 : tile_rows > 64 ? 64 : tile_rows;
    void *scratch = sr_malloc((size_t)threads * (size_t)tile_rows * (n ? n : 1) * sizeof(double));
    int64_t allow_stride = 0; /* each slot's flags on lines of their own: each masked row sets and restores them */
    void *allow_block = NULL;
    unsigned char *allow = sr_cpu_alloc_copies(threads, (int64_t)n, 1, true, &allow_stride, &allow_block);
    bool *ready = sr_calloc((size_t)threads, sizeof *ready);
    const bool copy_b = B_in->layout == SR_COL_MAJOR && B_in->nrows > 0 && n > 0;
    void *b_rows = NULL; /* through sr_mem_alloc: huge pages (cpu_spmm's copy of a 262K x 32 B faulted 8,000 times) */
    if (copy_b && sr_mem_alloc(A->ctx, SR_HOST, (size_t)B_in->nrows * n * sr_type_size(B_in->type), &b_rows) != SR_SUCCESS)
        b_rows = NULL;
    if (!scratch || !allow || !ready || (copy_b && !b_rows)) {
        free(scratch);
        free(allow_block);
        free(ready);
        sr_mem_free(A->ctx, SR_HOST, b_rows, 0);
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for %lld rows of %zu accumulators%s",
                        (long long)threads * (long long)tile_rows, n, copy_b ? " and a row-major copy of B" : "");
    }
    sr_dense b_view;
    if (copy_b) {
        sr_cpu_dense_row_major(B_in, b_rows, threads);
        b_view = sr_dense_view(b_rows, B_in->nrows, B_in->ncols, B_in->type, SR_ROW_MAJOR, SR_HOST);
        B = &b_view;
    }
    sr_type out = C->type;
    bool done = false;
    spmm_job job = {A, mask, B, C, complement, accumulate, scratch, allow, ready, tile_rows, allow_stride};
    const int64_t tiles = (A->nrows + tile_rows - 1) / tile_rows;
#define SR_DISPATCH_SPMM(SEMI, ADD, MUL, T, OUT)                                                         \
    if (!done && s == SEMI && out == OUT) {                                                              \
        sr_cpu_run_chunks(threads, tiles, spmm_##ADD##_##MUL##_##T, &job);                               \
        done = true;                                                                                     \
    }
    SR_FOR_EACH_SEMIRING_KERNEL(SR_DISPATCH_SPMM)
#undef SR_DISPATCH_SPMM
    free(scratch);
    free(allow_block);
    free(ready);
    sr_mem_free(A->ctx, SR_HOST, b_rows, 0);
    if (!done)
        return sr_error(SR_ERROR_INTERNAL, "no CPU kernel for %s with %s output", sr_semiring_name(s), sr_type_name(out));
    return SR_SUCCESS;
}
