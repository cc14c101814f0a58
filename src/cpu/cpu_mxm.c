/* Sparse x sparse semiring product on the host (Gustavson): a count pass sizes each output row,
 * a fill pass computes it with a dense accumulator per thread, then each row's columns are
 * sorted (radix sort for long rows, quicksort for short ones). Both passes run on the pool
 * (cpu_pool.h), in chunks of 64 rows. */
#include <stdlib.h>
#include <string.h>


#include "../core/error.h"
#include "../core/memory.h"
#include "../core/types.h"
#include "cpu.h"
#include "../core/settings.h"
#include "cpu_pool.h"
#include "../semiring/user.h"

/* Rows a chunk of the pool: up to 64, fewer when that leaves under 16 chunks a thread (a 4,000-row
 * graph had 63 chunks for 16 threads, and its heavy rows unevenly spread). */
enum { MXM_ROWS_PER_CHUNK = 64, MXM_CHUNKS_PER_THREAD = 16 };
/* The single pass (each row computed once, into its thread's growing output, then copied into C)
 * when the rows' room, each row's products or n if fewer, takes at most this many bytes; else a
 * count pass sizes C first and the fill pass writes into it (half the memory, twice the products).
 * SPARSERING_MXM_ONE_PASS=0/1 forces. */
#define MXM_ONE_PASS_BYTES ((int64_t)1 << 30)

/* Per-thread work rows: stamps of the last output row that touched a column, and mask stamps. */
typedef struct {
    int64_t *mark;      /* threads x stride */
    int64_t *mask_mark; /* threads x stride, or NULL without a mask */
    void *acc;          /* threads x stride values of the output type, or NULL for bool */
    size_t stride;      /* n and a cache line's worth more: no line holds two threads' used slots */
    int32_t *sort_tmp;  /* threads x (the longest output row): the radix sort's second buffer */
    int64_t longest;    /* entries of the longest output row */
    int key_bits;       /* bits of the largest column index */
} spa;

/* Marks row i of the mask so that allowed(j) is one comparison. */
static inline void stamp_mask_row(const struct sr_matrix_s *mask, int64_t i, int64_t *mask_mark)
{
    for (int64_t k = mask->rowptr[i]; k < mask->rowptr[i + 1]; k++)
        mask_mark[mask->colind[k]] = i;
}

#define ALLOWED(j) (!mask || ((mask_mark[j] == i) != complement))

/* The single pass's output of one slot: its chunks' rows one after another, grown as needed. */
typedef struct {
    _Alignas(SR_CACHE_LINE) int32_t *cols; /* a line a slot: `used` grows with every row */
    void *vals;
    int64_t used, capacity;
    bool failed; /* out of memory growing them */
} slot_rows;

/* Where a chunk's rows went in the single pass: slot_rows[slot], from `offset` on. */
typedef struct {
    int slot;
    int64_t offset;
} chunk_place;

/* A pass over A's rows in chunks for the pool (cpu_pool.h): a chunk is `rows_per_chunk` rows, and
 * each slot clears its stamps before its first chunk of the pass (a stamp left by the previous
 * pass would read as "seen in this row"). */
typedef struct {
    const struct sr_matrix_s *A, *B, *mask;
    bool complement;
    spa *w;
    struct sr_matrix_s *C; /* the output; counts go to C->rowptr + 1 */
    int64_t rows_per_chunk;
    bool *ready;       /* per slot: stamps cleared in this pass */
    slot_rows *out;    /* single pass (no count pass first): per slot, or NULL */
    chunk_place *place;
    size_t value_size;
    int64_t slot_room; /* the first arrays' entries: all rows' room over the threads */
    const sr_user_semiring *user; /* a user semiring's row kernel (mxm_fill_user), or NULL */
} mxm_pass;

/* Room in `o` for `more` entries past its end: false (and o->failed) when memory runs out. The
 * first arrays hold `first` entries (the slot's share of all rows' room), through sr_mem_alloc so
 * that large ones take huge pages (4 KiB pages cost one fault each as the rows fill them); they
 * double from there (realloc keeps the pages' advice). */
static bool reserve(struct sr_context_s *ctx, slot_rows *o, int64_t more, int64_t first, size_t value_size)
{
    if (o->used + more <= o->capacity)
        return true;
    if (o->failed) /* tried and failed already: no second first allocation over the first */
        return false;
    int64_t cap = o->capacity > 0 ? o->capacity * 2 : (first > 4096 ? first : 4096);
    while (cap < o->used + more)
        cap *= 2;
    if (o->capacity == 0) {
        if (sr_mem_alloc(ctx, SR_HOST, (size_t)cap * sizeof(int32_t), (void **)&o->cols) != SR_SUCCESS ||
            sr_mem_alloc(ctx, SR_HOST, (size_t)cap * value_size, &o->vals) != SR_SUCCESS) {
            o->failed = true;
            return false;
        }
        o->capacity = cap;
        return true;
    }
    int32_t *cols = sr_realloc(o->cols, (size_t)cap * sizeof(int32_t));
    if (cols)
        o->cols = cols;
    void *vals = cols ? sr_realloc(o->vals, (size_t)cap * value_size) : NULL;
    if (!cols || !vals) {
        o->failed = true;
        return false;
    }
    o->vals = vals;
    o->capacity = cap;
    return true;
}

static void chunk_rows(const mxm_pass *p, int64_t chunk, int64_t *i0, int64_t *i1)
{
    *i0 = chunk * p->rows_per_chunk;
    *i1 = *i0 + p->rows_per_chunk < p->A->nrows ? *i0 + p->rows_per_chunk : p->A->nrows;
}

/* The slot's stamps, cleared on its first chunk of the pass. */
static void slot_stamps(const mxm_pass *p, int slot, int64_t **mark, int64_t **mask_mark)
{
    const size_t n = (size_t)p->B->ncols;
    *mark = p->w->mark + (size_t)slot * p->w->stride;
    *mask_mark = p->mask ? p->w->mask_mark + (size_t)slot * p->w->stride : NULL;
    if (p->ready[slot])
        return;
    for (size_t j = 0; j < n; j++)
        (*mark)[j] = -1;
    for (size_t j = 0; p->mask && j < n; j++)
        (*mask_mark)[j] = -1;
    p->ready[slot] = true;
}

static void count_chunk(void *arg, int64_t chunk, int slot)
{
    const mxm_pass *p = arg;
    const struct sr_matrix_s *A = p->A, *B = p->B, *mask = p->mask;
    const bool complement = p->complement;
    int64_t *mark, *mask_mark, i0, i1;
    slot_stamps(p, slot, &mark, &mask_mark);
    chunk_rows(p, chunk, &i0, &i1);
    for (int64_t i = i0; i < i1; i++) {
        if (mask)
            stamp_mask_row(mask, i, mask_mark);
        int64_t count = 0;
        for (int64_t ka = A->rowptr[i]; ka < A->rowptr[i + 1]; ka++) {
            int64_t k = A->colind[ka];
            for (int64_t kb = B->rowptr[k]; kb < B->rowptr[k + 1]; kb++) {
                int32_t j = B->colind[kb];
                if (mark[j] != i && ALLOWED(j)) {
                    mark[j] = i;
                    count++;
                }
            }
        }
        p->C->rowptr[i + 1] = count;
    }
}

/* One fill kernel per (semiring, T) for the pool; C's rowptr is set and its arrays allocated. */
#define SR_DEFINE_MXM_FILL(SEMI, ADD, MUL, T, OUT)                                                       \
    static void mxm_fill_##ADD##_##MUL##_##T(void *arg, int64_t chunk, int slot)                         \
    {                                                                                                    \
        const mxm_pass *p = arg;                                                                         \
        const struct sr_matrix_s *A = p->A, *B = p->B, *mask = p->mask;                                  \
        struct sr_matrix_s *C = p->C;                                                                    \
        const bool complement = p->complement;                                                           \
        const size_t n = (size_t)B->ncols;                                                               \
        const T *av = (const T *)A->values, *bv = (const T *)B->values;                                  \
        T *cv = (T *)C->values; /* (two passes) */                                                       \
        int64_t *mark, *mask_mark, i0, i1;                                                               \
        slot_stamps(p, slot, &mark, &mask_mark);                                                         \
        chunk_rows(p, chunk, &i0, &i1);                                                                  \
        T *acc = (T *)p->w->acc + (size_t)slot * p->w->stride;                                           \
        int32_t *sort_tmp = p->w->sort_tmp ? p->w->sort_tmp + (size_t)slot * (size_t)p->w->longest : NULL; \
        slot_rows *o = p->out ? &p->out[slot] : NULL;                                                    \
        if (o)                                                                                           \
            p->place[chunk] = (chunk_place){slot, o->used};                                              \
        for (int64_t i = i0; i < i1; i++) {                                                              \
            if (mask)                                                                                    \
                stamp_mask_row(mask, i, mask_mark);                                                      \
            const int64_t bound = o ? sr_cpu_row_products(A, B, i) : 0;                                  \
            if (o && !reserve(A->ctx, o, bound < (int64_t)n ? bound : (int64_t)n, p->slot_room, sizeof(T))) \
                return;                                                                                  \
            int32_t *cols = o ? o->cols + o->used : C->colind + C->rowptr[i];                            \
            T *vals = o ? (T *)o->vals + o->used : cv + C->rowptr[i];                                    \
            int64_t count = 0;                                                                           \
            for (int64_t ka = A->rowptr[i]; ka < A->rowptr[i + 1]; ka++) {                               \
                const int64_t k = A->colind[ka];                                                         \
                const T a = av ? av[ka] : (T)1;                                                          \
                (void)a;                                                                                 \
                for (int64_t kb = B->rowptr[k]; kb < B->rowptr[k + 1]; kb++) {                           \
                    const int32_t j = B->colind[kb];                                                     \
                    if (!ALLOWED(j))                                                                     \
                        continue;                                                                        \
                    const T b = bv ? bv[kb] : (T)1;                                                      \
                    (void)b;                                                                             \
                    if (mark[j] != i) {                                                                  \
                        mark[j] = i;                                                                     \
                        cols[count++] = j;                                                               \
                        acc[j] = (T)SR_MUL_##MUL(a, b);                                                  \
                    } else {                                                                             \
                        acc[j] = (T)SR_ADD_##ADD(acc[j], (T)SR_MUL_##MUL(a, b));                         \
                    }                                                                                    \
                }                                                                                        \
            }                                                                                            \
            sr_cpu_sort_columns(cols, sort_tmp, count, p->w->key_bits);                                  \
            for (int64_t q = 0; q < count; q++)                                                          \
                vals[q] = acc[cols[q]];                                                                \
            if (o) {                                                                                     \
                C->rowptr[i + 1] = count;                                                                \
                o->used += count;                                                                        \
            }                                                                                            \
        }                                                                                                \
    }
SR_FOR_EACH_SEMIRING_KERNEL(SR_DEFINE_MXM_FILL)

/* The fill of a user semiring: SR_DEFINE_MXM_FILL's, with the row's products by its compiled
 * row kernel (cpu_user.c), values of 4 or 8 bytes. */
static void mxm_fill_user(void *arg, int64_t chunk, int slot)
{
    const mxm_pass *p = arg;
    const struct sr_matrix_s *A = p->A, *B = p->B, *mask = p->mask;
    struct sr_matrix_s *C = p->C;
    const size_t n = (size_t)B->ncols, vs = p->value_size;
    int64_t *mark, *mask_mark, i0, i1;
    slot_stamps(p, slot, &mark, &mask_mark);
    chunk_rows(p, chunk, &i0, &i1);
    char *acc = (char *)p->w->acc + (size_t)slot * p->w->stride * vs;
    int32_t *sort_tmp = p->w->sort_tmp ? p->w->sort_tmp + (size_t)slot * (size_t)p->w->longest : NULL;
    slot_rows *o = p->out ? &p->out[slot] : NULL;
    if (o)
        p->place[chunk] = (chunk_place){slot, o->used};
    for (int64_t i = i0; i < i1; i++) {
        if (mask)
            stamp_mask_row(mask, i, mask_mark);
        const int64_t bound = o ? sr_cpu_row_products(A, B, i) : 0;
        if (o && !reserve(A->ctx, o, bound < (int64_t)n ? bound : (int64_t)n, p->slot_room, vs))
            return;
        int32_t *cols = o ? o->cols + o->used : C->colind + C->rowptr[i];
        char *vals = o ? (char *)o->vals + (size_t)o->used * vs : (char *)C->values + (size_t)C->rowptr[i] * vs;
        const int64_t count = p->user->mxm_row(i, A->rowptr, A->colind, A->values, B->rowptr, B->colind, B->values,
                                               mark, mask ? mask_mark : NULL, p->complement, acc, cols);
        sr_cpu_sort_columns(cols, sort_tmp, count, p->w->key_bits);
        if (vs == 8)
            for (int64_t q = 0; q < count; q++)
                ((uint64_t *)vals)[q] = ((const uint64_t *)acc)[cols[q]];
        else
            for (int64_t q = 0; q < count; q++)
                ((uint32_t *)vals)[q] = ((const uint32_t *)acc)[cols[q]];
        if (o) {
            C->rowptr[i + 1] = count;
            o->used += count;
        }
    }
}

/* A's rows' products (each entry's row of B) in all, the same with each row capped at n (a row of
 * C holds at most n entries: the one-pass room), and the most in one row. */
typedef struct {
    int64_t products, room, widest;
} mxm_rows;

static mxm_rows mxm_rows_of(const struct sr_matrix_s *A, const struct sr_matrix_s *B)
{
    const int64_t n = B->ncols > 0 ? B->ncols : 1;
    mxm_rows r = {0, 0, 0};
    for (int64_t i = 0; i < A->nrows; i++) {
        const int64_t p = sr_cpu_row_products(A, B, i);
        r.products += p;
        r.room += p < n ? p : n;
        r.widest = p > r.widest ? p : r.widest;
    }
    return r;
}

/* The product's work for choosing its threads: its products twice (a count pass and a fill pass)
 * plus the rows and the mask; past what takes every thread anyway, just the entries and rows. */
static int64_t mxm_work(const struct sr_context_s *ctx, const struct sr_matrix_s *A, const struct sr_matrix_s *mask,
                        const mxm_rows *sizes)
{
    const int64_t entries = A->rowptr[A->nrows], rows = A->nrows + (mask ? mask->rowptr[mask->nrows] : 0);
    if (entries + rows >= (int64_t)SR_SERIAL_WORK * sr_context_threads(ctx))
        return entries + rows;
    return 2 * sizes->products + entries + rows;
}

/* The single pass's rows into C, chunk by chunk: a chunk's rows are contiguous in its slot's
 * output and in C. */
static void copy_chunk(void *arg, int64_t chunk, int slot)
{
    const mxm_pass *p = arg;
    const chunk_place at = p->place[chunk];
    const slot_rows *o = &p->out[at.slot];
    int64_t i0, i1;
    (void)slot;
    chunk_rows(p, chunk, &i0, &i1);
    const int64_t to = p->C->rowptr[i0], len = p->C->rowptr[i1] - to;
    if (len == 0) /* (C's arrays may be NULL: no entries at all) */
        return;
    memcpy(p->C->colind + to, o->cols + at.offset, (size_t)len * sizeof(int32_t));
    memcpy((char *)p->C->values + (size_t)to * p->value_size, (const char *)o->vals + (size_t)at.offset * p->value_size,
           (size_t)len * p->value_size);
}

static sr_status gather_one_pass(mxm_pass *p, int threads, int64_t chunks)
{
    for (int t = 0; t < threads; t++)
        if (p->out[t].failed)
            return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for a product's rows");
    sr_cpu_prefix_sum(p->C->rowptr, p->A->nrows);
    SR_TRY(sr_matrix_alloc_entries(p->C, p->C->rowptr[p->A->nrows]));
    sr_cpu_run_chunks(threads, chunks, copy_chunk, p);
    return SR_SUCCESS;
}

sr_status sr_cpu_mxm(struct sr_context_s *ctx, const struct sr_matrix_s *A, const struct sr_matrix_s *B,
                     const struct sr_matrix_s *mask, bool complement, sr_semiring s, sr_type out_type,
                     struct sr_matrix_s **out)
{
    if (out_type == SR_TYPE_BOOL) /* or_and, any_pair: no values anywhere */
        return sr_cpu_mxm_bool(ctx, A, B, mask, complement, out);
    const mxm_rows sizes = mxm_rows_of(A, B);
    int threads = sr_context_threads_for(ctx, mxm_work(ctx, A, mask, &sizes));
    size_t n = (size_t)(B->ncols ? B->ncols : 1);
    /* each thread's slots a cache line (of the narrowest, 4-byte values) past the last's: with
     * narrow B (16 columns: a multi-source search) neighbouring threads' stamps and sums shared
     * lines */
    const size_t stride = n + SR_CACHE_LINE / 4;
    size_t per_thread = stride * (sizeof(int64_t) * (mask ? 2 : 1) + sr_value_size(out_type));
    size_t limit = sr_context_workspace(ctx, SR_HOST);
    while (threads > 1 && (size_t)threads * per_thread > limit) /* the accumulators must fit the workspace */
        threads--;
    spa w = {NULL, NULL, NULL, stride, NULL, 0, 0};
    struct sr_matrix_s *C = NULL;
    sr_status st = sr_mem_alloc_array(ctx, SR_HOST, (size_t)threads * stride, sizeof(int64_t), (void **)&w.mark);
    if (st == SR_SUCCESS && mask)
        st = sr_mem_alloc_array(ctx, SR_HOST, (size_t)threads * stride, sizeof(int64_t), (void **)&w.mask_mark);
    if (st == SR_SUCCESS && out_type != SR_TYPE_BOOL)
        st = sr_mem_alloc_array(ctx, SR_HOST, (size_t)threads * stride, sr_value_size(out_type), &w.acc);
    if (st == SR_SUCCESS)
        st = sr_matrix_alloc(ctx, A->nrows, B->ncols, 0, out_type, SR_HOST, &C);
    bool *ready = NULL;
    if (st == SR_SUCCESS && !(ready = sr_calloc((size_t)threads, sizeof *ready)))
        st = sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for a product's %d threads", threads);
    int64_t rows_per_chunk = A->nrows / ((int64_t)threads * MXM_CHUNKS_PER_THREAD);
    rows_per_chunk = rows_per_chunk < 1 ? 1 : rows_per_chunk > MXM_ROWS_PER_CHUNK ? MXM_ROWS_PER_CHUNK : rows_per_chunk;
    const int64_t chunks = (A->nrows + rows_per_chunk - 1) / rows_per_chunk;
    mxm_pass pass = {A, B, mask, complement, &w, C, rows_per_chunk, ready, NULL, NULL, sr_value_size(out_type), 0, NULL};
    while (w.key_bits < 31 && ((int64_t)1 << w.key_bits) < B->ncols)
        w.key_bits++;
    /* one pass when its rows' room (each row's products, at most n) fits, within the context's
     * host workspace too: no count pass first */
    const int64_t workspace = (int64_t)(limit < (size_t)INT64_MAX ? limit : (size_t)INT64_MAX);
    const int64_t one_pass_limit = workspace < MXM_ONE_PASS_BYTES ? workspace : MXM_ONE_PASS_BYTES;
    const int forced = sr_setting("SPARSERING_MXM_ONE_PASS", -1);
    const bool one_pass = st == SR_SUCCESS &&
                          (forced >= 0 ? forced != 0
                                       : sizes.room * (int64_t)(sizeof(int32_t) + pass.value_size) <= one_pass_limit);
    if (one_pass) {
        pass.out = sr_cpu_calloc_lines((size_t)threads, sizeof *pass.out);
        pass.place = sr_calloc((size_t)(chunks > 0 ? chunks : 1), sizeof *pass.place);
        if (!pass.out || !pass.place)
            st = sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for a product's %lld chunks", (long long)chunks);
        w.longest = sizes.widest < (int64_t)n ? sizes.widest : (int64_t)n;
        pass.slot_room = sizes.room / threads;
    } else if (st == SR_SUCCESS) {
        sr_cpu_run_chunks(threads, chunks, count_chunk, &pass);
        for (int64_t i = 0; i < A->nrows; i++)
            w.longest = C->rowptr[i + 1] > w.longest ? C->rowptr[i + 1] : w.longest;
        sr_cpu_prefix_sum(C->rowptr, A->nrows);
        st = sr_matrix_alloc_entries(C, C->rowptr[A->nrows]);
    }
    if (st == SR_SUCCESS && w.longest >= 128) /* the radix sort's buffer (rows shorter take the quicksort) */
        st = sr_mem_alloc_array(ctx, SR_HOST, (size_t)threads * (size_t)w.longest, sizeof(int32_t),
                                (void **)&w.sort_tmp);
    if (st == SR_SUCCESS) {
        bool done = false;
        memset(ready, 0, (size_t)threads * sizeof *ready);
#define SR_DISPATCH_MXM(SEMI, ADD, MUL, T, OUT)                                                          \
    if (!done && s == SEMI && out_type == OUT) {                                                         \
        sr_cpu_run_chunks(threads, chunks, mxm_fill_##ADD##_##MUL##_##T, &pass);                         \
        done = true;                                                                                     \
    }
        SR_FOR_EACH_SEMIRING_KERNEL(SR_DISPATCH_MXM)
#undef SR_DISPATCH_MXM
        if (!done && (pass.user = sr_user_semiring_of((int)s)) != NULL) {
            sr_cpu_run_chunks(threads, chunks, mxm_fill_user, &pass);
            done = true;
        }
        if (!done)
            st = sr_error(SR_ERROR_INTERNAL, "no CPU kernel for %s with %s output", sr_semiring_name(s),
                          sr_type_name(out_type));
    }
    if (st == SR_SUCCESS && one_pass)
        st = gather_one_pass(&pass, threads, chunks);
    for (int t = 0; pass.out && t < threads; t++) {
        free(pass.out[t].cols);
        free(pass.out[t].vals);
    }
    free(pass.out);
    free(pass.place);
    sr_mem_free(ctx, SR_HOST, w.mark, 0);
    sr_mem_free(ctx, SR_HOST, w.mask_mark, 0);
    sr_mem_free(ctx, SR_HOST, w.acc, 0);
    sr_mem_free(ctx, SR_HOST, w.sort_tmp, 0);
    free(ready);
    if (st != SR_SUCCESS) {
        sr_matrix_destroy(C);
        return st;
    }
    *out = C;
    return SR_SUCCESS;
}
