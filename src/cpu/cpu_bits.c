/* Bit-packed Boolean blocks on the host: 64 columns a word. The product Y = A or.and X ORs whole
 * words of X's rows, so one pass over A moves 64 columns (e.g. BFS sources) per word read. */
#include <string.h>

#include "../core/error.h"
#include "cpu.h"

/* The bits of a row's last word that lie inside ncols. */
static inline uint64_t tail_mask(int64_t ncols)
{
    return ncols % 64 ? (UINT64_C(1) << (ncols % 64)) - 1 : ~UINT64_C(0);
}

static inline int64_t row_words(int64_t ncols) { return (ncols + 63) / 64; }

/* The word written where the old word is `old`, the product `acc`, the mask word `m`. */
static inline uint64_t masked_word(uint64_t old, uint64_t acc, const sr_bits_update *u, const uint64_t *m)
{
    uint64_t computed = u->accumulate ? old | acc : acc;
    if (!m)
        return computed;
    uint64_t allowed = u->complement ? ~*m : *m;
    return (computed & allowed) | (u->replace ? 0 : old & ~allowed);
}

/* Row i's words, or NULL for a block of no columns (its word array is NULL: no arithmetic on it). */
static uint64_t *row_of(const sr_bits *X, int64_t i)
{
    return X->words ? X->words + (size_t)i * (size_t)X->ld : NULL;
}

enum { kChunkWords = 32 }; /* words of a row's product kept in registers / L1 at a time */

sr_status sr_cpu_mxm_bits(struct sr_context_s *ctx, const struct sr_matrix_s *A, const sr_bits *Y, const sr_bits *mask,
                          const sr_bits *X, const sr_bits_update *u, int64_t *count)
{
    const int threads = sr_context_threads(ctx);
    const int64_t words = row_words(Y->ncols);
    const uint64_t tail = tail_mask(Y->ncols);
    int64_t total = 0;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 64) reduction(+ : total)
    for (int64_t i = 0; i < A->nrows; i++) {
        uint64_t *y = row_of(Y, i);
        const uint64_t *m = mask ? row_of(mask, i) : NULL;
        for (int64_t w0 = 0; w0 < words; w0 += kChunkWords) {
            const int64_t n = words - w0 < kChunkWords ? words - w0 : kChunkWords;
            uint64_t acc[kChunkWords] = {0};
            for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
                const uint64_t *x = X->words + (size_t)A->colind[k] * (size_t)X->ld + w0;
                for (int64_t w = 0; w < n; w++)
                    acc[w] |= x[w];
            }
            for (int64_t w = 0; w < n; w++) {
                uint64_t v = masked_word(y[w0 + w], acc[w], u, m ? m + w0 + w : NULL);
                if (w0 + w == words - 1)
                    v &= tail;
                y[w0 + w] = v;
                total += __builtin_popcountll(v);
            }
        }
    }
    if (count)
        *count = total;
    return SR_SUCCESS;
}

sr_status sr_cpu_bits_or(struct sr_context_s *ctx, const sr_bits *Y, const sr_bits *X, int64_t *count)
{
    const int threads = sr_context_threads(ctx);
    const int64_t words = row_words(Y->ncols);
    int64_t total = 0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : total)
    for (int64_t i = 0; i < Y->nrows; i++) {
        uint64_t *y = row_of(Y, i);
        const uint64_t *x = X ? row_of(X, i) : NULL;
        for (int64_t w = 0; w < words; w++) {
            if (x)
                y[w] |= x[w];
            total += __builtin_popcountll(y[w]);
        }
    }
    if (count)
        *count = total;
    return SR_SUCCESS;
}

sr_status sr_cpu_bits_from_matrix(struct sr_context_s *ctx, const struct sr_matrix_s *A, const sr_bits *X)
{
    const int threads = sr_context_threads(ctx);
    const int64_t words = row_words(X->ncols);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 256)
    for (int64_t i = 0; i < A->nrows; i++) {
        uint64_t *x = row_of(X, i);
        if (words > 0) /* no columns (no sources): no words to set */
            memset(x, 0, (size_t)words * sizeof *x);
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            x[A->colind[k] / 64] |= UINT64_C(1) << (A->colind[k] % 64);
    }
    return SR_SUCCESS;
}

sr_status sr_cpu_matrix_from_bits(struct sr_context_s *ctx, const sr_bits *X, struct sr_matrix_s **out)
{
    const int threads = sr_context_threads(ctx);
    const int64_t words = row_words(X->ncols);
    const uint64_t tail = tail_mask(X->ncols);
    struct sr_matrix_s *A;
    SR_TRY(sr_matrix_alloc(ctx, X->nrows, X->ncols, 0, SR_TYPE_BOOL, SR_HOST, &A));
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < X->nrows; i++) {
        const uint64_t *x = row_of(X, i);
        int64_t n = 0;
        for (int64_t w = 0; w < words; w++)
            n += __builtin_popcountll(w == words - 1 ? x[w] & tail : x[w]);
        A->rowptr[i + 1] = n;
    }
    sr_cpu_prefix_sum(A->rowptr, X->nrows);
    sr_status st = sr_matrix_alloc_entries(A, A->rowptr[X->nrows]);
    if (st != SR_SUCCESS) {
        sr_matrix_destroy(A);
        return st;
    }
    const int64_t rows_to_fill = A->rowptr[X->nrows] > 0 ? X->nrows : 0; /* none: A has no column array */
#pragma omp parallel for num_threads(threads) schedule(dynamic, 256)
    for (int64_t i = 0; i < rows_to_fill; i++) {
        const uint64_t *x = row_of(X, i);
        int32_t *cols = A->colind + A->rowptr[i];
        for (int64_t w = 0; w < words; w++)
            for (uint64_t b = w == words - 1 ? x[w] & tail : x[w]; b; b &= b - 1)
                *cols++ = (int32_t)(w * 64 + __builtin_ctzll(b));
    }
    *out = A;
    return SR_SUCCESS;
}
