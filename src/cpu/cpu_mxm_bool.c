/* Boolean sparse x sparse product on the host, with no values anywhere: C = A or.and B.
 *
 * One pass: the rows are cut into chunks of about equal work (the products they form), threads
 * take chunks dynamically and append each row's columns to their own buffer; row pointers and one
 * copy per chunk then assemble C (no count pass, which would repeat every product). A row is
 *   one A entry             B's row copied as it is (already sorted)
 *   two A entries           the two B rows merged
 *   more                    marked in a bitmap of the columns (1 bit each: 8 KiB per 65,536
 *                           columns, in L1), new columns listed; the row comes out by scanning
 *                           the bitmap's words when its columns are dense in their span, else by
 *                           sorting the list.
 * A mask row is stamped in a second bitmap, so the test per product is one bit. */
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "../core/memory.h"
#include "../core/error.h"
#include "cpu.h"

typedef struct {
    int32_t *data;
    int64_t n, cap;
} col_buffer;

typedef struct {
    _Alignas(SR_CACHE_LINE) uint64_t *seen; /* a line a thread: `out` grows with every row */
    uint64_t *allowed; /* column bitmaps (seen; allowed: the mask row's columns, or NULL) */
    int32_t *list, *sort_tmp; /* the row's new columns; the radix sort's second buffer */
    col_buffer out;
    bool failed;
} thread_state;

static bool reserve(col_buffer *b, int64_t more)
{
    if (b->n + more <= b->cap)
        return true;
    int64_t cap = b->cap ? b->cap : 4096;
    while (cap < b->n + more)
        cap *= 2;
    int32_t *grown = sr_realloc(b->data, (size_t)cap * sizeof *grown);
    if (!grown)
        return false;
    b->data = grown;
    b->cap = cap;
    return true;
}

static int64_t merge_two(const int32_t *x, int64_t nx, const int32_t *y, int64_t ny, int32_t *out)
{
    int64_t i = 0, j = 0, n = 0;
    while (i < nx && j < ny) {
        int32_t a = x[i], b = y[j];
        out[n++] = a < b ? a : b;
        i += a <= b;
        j += b <= a;
    }
    while (i < nx)
        out[n++] = x[i++];
    while (j < ny)
        out[n++] = y[j++];
    return n;
}

/* Row i of C appended to t->out; returns its length. */
static int64_t product_row(const struct sr_matrix_s *A, const struct sr_matrix_s *B, const struct sr_matrix_s *mask,
                           bool complement, int64_t i, int key_bits, thread_state *t)
{
    const int64_t a0 = A->rowptr[i], a1 = A->rowptr[i + 1];
    int32_t *out = t->out.data ? t->out.data + t->out.n : NULL; /* NULL: nothing reserved, an empty row */
    if (!mask && a1 - a0 == 1) {
        const int64_t k = A->colind[a0], n = B->rowptr[k + 1] - B->rowptr[k];
        if (n > 0) /* an empty B may have no column array at all */
            memcpy(out, B->colind + B->rowptr[k], (size_t)n * sizeof *out);
        return n;
    }
    if (!mask && a1 - a0 == 2) {
        const int64_t k = A->colind[a0], l = A->colind[a0 + 1];
        return merge_two(B->colind + B->rowptr[k], B->rowptr[k + 1] - B->rowptr[k], B->colind + B->rowptr[l],
                         B->rowptr[l + 1] - B->rowptr[l], out);
    }
    if (mask)
        for (int64_t k = mask->rowptr[i]; k < mask->rowptr[i + 1]; k++)
            t->allowed[mask->colind[k] >> 6] |= UINT64_C(1) << (mask->colind[k] & 63);
    int64_t n = 0;
    int32_t lo = INT32_MAX, hi = -1;
    for (int64_t ka = a0; ka < a1; ka++) {
        const int64_t k = A->colind[ka];
        for (int64_t kb = B->rowptr[k]; kb < B->rowptr[k + 1]; kb++) {
            const int32_t j = B->colind[kb];
            const uint64_t bit = UINT64_C(1) << (j & 63);
            if (t->seen[j >> 6] & bit)
                continue;
            if (mask && ((t->allowed[j >> 6] & bit) != 0) == complement)
                continue;
            t->seen[j >> 6] |= bit;
            t->list[n++] = j;
            lo = j < lo ? j : lo;
            hi = j > hi ? j : hi;
        }
    }
    if (n > 0 && (int64_t)(hi >> 6) - (lo >> 6) + 1 <= 2 * n) { /* dense in its span: scan the words */
        int64_t o = 0;
        for (int64_t w = lo >> 6; w <= hi >> 6; w++) {
            for (uint64_t v = t->seen[w]; v; v &= v - 1)
                out[o++] = (int32_t)(w * 64 + __builtin_ctzll(v));
            t->seen[w] = 0;
        }
    } else if (n > 0) {
        sr_cpu_sort_columns(t->list, t->sort_tmp, n, key_bits);
        memcpy(out, t->list, (size_t)n * sizeof *out);
        for (int64_t q = 0; q < n; q++)
            t->seen[t->list[q] >> 6] = 0;
    }
    if (mask)
        for (int64_t k = mask->rowptr[i]; k < mask->rowptr[i + 1]; k++)
            t->allowed[mask->colind[k] >> 6] = 0;
    return n;
}

/* An upper bound of row i's length: its products, at most the columns. */
static inline int64_t row_bound(const struct sr_matrix_s *A, const struct sr_matrix_s *B, int64_t i)
{
    const int64_t ub = sr_cpu_row_products(A, B, i);
    return ub < B->ncols ? ub : B->ncols;
}

sr_status sr_cpu_mxm_bool(struct sr_context_s *ctx, const struct sr_matrix_s *A, const struct sr_matrix_s *B,
                          const struct sr_matrix_s *mask, bool complement, struct sr_matrix_s **result)
{
    const int64_t m = A->nrows, words = (B->ncols + 63) / 64 + 1;
    const int64_t mask_entries = mask ? mask->rowptr[mask->nrows] : 0;
    int threads = sr_context_threads_for(ctx, m + A->rowptr[m]);
    int key_bits = 0;
    while (key_bits < 31 && ((int64_t)1 << key_bits) < B->ncols)
        key_bits++;
    struct sr_matrix_s *C = NULL;
    SR_TRY(sr_matrix_alloc(ctx, m, B->ncols, 0, SR_TYPE_BOOL, SR_HOST, &C));
    /* C->rowptr holds the work's prefix sum (row bounds + 1) until the rows are done, then C's. */
    int64_t *work = C->rowptr;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < m; i++)
        work[i + 1] = row_bound(A, B, i) + 1;
    sr_cpu_prefix_sum(work, m);
    threads = sr_context_threads_for(ctx, work[m] + A->rowptr[m] + mask_entries); /* products, rows, mask */
    const int64_t nchunks = m < (int64_t)threads * 64 ? m : (int64_t)threads * 64;
    int64_t *chunk_row = sr_malloc((size_t)(nchunks + 1) * sizeof *chunk_row);
    int64_t *chunk_at = sr_malloc((size_t)(nchunks ? nchunks : 1) * sizeof *chunk_at);
    int *chunk_thread = sr_malloc((size_t)(nchunks ? nchunks : 1) * sizeof *chunk_thread);
    int64_t longest = 0;
    int64_t *lengths = sr_malloc((size_t)(m ? m : 1) * sizeof *lengths);
    thread_state *state = sr_cpu_calloc_lines((size_t)threads, sizeof *state);
    sr_status st = chunk_row && chunk_at && chunk_thread && state && lengths ? SR_SUCCESS
                                                                   : sr_error(SR_ERROR_OUT_OF_MEMORY, "sr_mxm: out of host memory");
    if (st == SR_SUCCESS) { /* chunk c starts at the first row whose work prefix reaches c/nchunks of the total */
        const int64_t total = work[m];
        int64_t i = 0;
        for (int64_t c = 0; c <= nchunks; c++) {
            const int64_t target = nchunks ? (int64_t)((double)total * (double)c / (double)nchunks) : 0;
            while (i < m && work[i] < target)
                i++;
            chunk_row[c] = c == nchunks ? m : i;
        }
        for (int64_t r = 0; r < m; r++)
            longest = work[r + 1] - work[r] - 1 > longest ? work[r + 1] - work[r] - 1 : longest;
    }
#pragma omp parallel num_threads(threads)
    {
        thread_state *t = &state[omp_get_thread_num()];
        if (st == SR_SUCCESS) {
            t->seen = sr_calloc((size_t)words, sizeof *t->seen);
            t->allowed = mask ? sr_calloc((size_t)words, sizeof *t->allowed) : NULL;
            t->list = sr_malloc((size_t)(longest ? longest : 1) * sizeof *t->list);
            t->sort_tmp = longest >= 128 ? sr_malloc((size_t)longest * sizeof *t->sort_tmp) : NULL;
            t->failed = !t->seen || (mask && !t->allowed) || !t->list || (longest >= 128 && !t->sort_tmp);
        }
#pragma omp barrier
        bool ok = st == SR_SUCCESS;
        for (int q = 0; q < threads; q++)
            ok = ok && !state[q].failed;
#pragma omp for schedule(dynamic, 1)
        for (int64_t c = 0; c < nchunks; c++) {
            if (!ok || t->failed)
                continue;
            chunk_thread[c] = omp_get_thread_num();
            chunk_at[c] = t->out.n;
            for (int64_t i = chunk_row[c]; i < chunk_row[c + 1]; i++) {
                if (!reserve(&t->out, work[i + 1] - work[i] - 1)) {
                    t->failed = true;
                    break;
                }
                lengths[i] = product_row(A, B, mask, complement, i, key_bits, t);
                t->out.n += lengths[i];
            }
        }
    }
    for (int q = 0; st == SR_SUCCESS && q < threads; q++)
        if (state[q].failed)
            st = sr_error(SR_ERROR_OUT_OF_MEMORY, "sr_mxm: out of host memory for the product's rows");
    if (st == SR_SUCCESS) {
#pragma omp parallel for num_threads(threads) schedule(static)
        for (int64_t i = 0; i < m; i++)
            C->rowptr[i + 1] = lengths[i];
        C->rowptr[0] = 0;
        sr_cpu_prefix_sum(C->rowptr, m);
        st = sr_matrix_alloc_entries(C, C->rowptr[m]);
    }
    if (st == SR_SUCCESS) {
#pragma omp parallel for num_threads(threads) schedule(dynamic, 4)
        for (int64_t c = 0; c < nchunks; c++) {
            const int64_t from = C->rowptr[chunk_row[c]], n = C->rowptr[chunk_row[c + 1]] - from;
            if (n)
                memcpy(C->colind + from, state[chunk_thread[c]].out.data + chunk_at[c], (size_t)n * sizeof(int32_t));
        }
    }
    for (int q = 0; state && q < threads; q++) {
        free(state[q].seen);
        free(state[q].allowed);
        free(state[q].list);
        free(state[q].sort_tmp);
        free(state[q].out.data);
    }
    free(state);
    free(lengths);
    free(chunk_row);
    free(chunk_at);
    free(chunk_thread);
    if (st != SR_SUCCESS) {
        sr_matrix_destroy(C);
        return st;
    }
    *result = C;
    return SR_SUCCESS;
}
