/* Structural operations on the host: Kronecker product, submatrix extraction, row reduction. */
#include <string.h>

#include "../core/error.h"
#include "../core/types.h"
#include "../semiring/user.h"
#include "cpu.h"

sr_status sr_cpu_kronecker(struct sr_context_s *ctx, const struct sr_matrix_s *A, const struct sr_matrix_s *B,
                           sr_semiring s, struct sr_matrix_s **out)
{
    const int threads = sr_context_threads(ctx);
    const int64_t p = B->nrows, q = B->ncols, nrows = A->nrows * p;
    struct sr_matrix_s *C;
    SR_TRY(sr_matrix_alloc(ctx, nrows, A->ncols * q, 0, A->type, SR_HOST, &C));
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t r = 0; r < nrows; r++) { /* row r = i*p + k holds |A_i| * |B_k| entries */
        const int64_t i = r / p, k = r % p;
        C->rowptr[r + 1] = (A->rowptr[i + 1] - A->rowptr[i]) * (B->rowptr[k + 1] - B->rowptr[k]);
    }
    sr_cpu_prefix_sum(C->rowptr, nrows);
    sr_status st = sr_matrix_alloc_entries(C, C->rowptr[nrows]);
    if (st != SR_SUCCESS) {
        sr_matrix_destroy(C);
        return st;
    }
    const int op = sr_semiring_is_user((int)s) ? (int)s : (int)sr_semiring_mul_op(s); /* (sr_cpu_combine) */
#pragma omp parallel for num_threads(threads) schedule(dynamic, 64)
    for (int64_t r = 0; r < nrows; r++) {
        const int64_t i = r / p, k = r % p;
        int64_t o = C->rowptr[r];
        for (int64_t x = A->rowptr[i]; x < A->rowptr[i + 1]; x++) {
            const int64_t base = (int64_t)A->colind[x] * q; /* column blocks ascend with A's columns */
            for (int64_t y = B->rowptr[k]; y < B->rowptr[k + 1]; y++, o++) {
                C->colind[o] = (int32_t)(base + B->colind[y]);
                if (C->values)
                    sr_cpu_combine(C->values, o, A->values, x, B->values, y, A->type, SR_MERGE_INTERSECT, (int)op);
            }
        }
    }
    *out = C;
    return SR_SUCCESS;
}

/* First entry of row i at a column >= col. */
static int64_t row_lower_bound(const struct sr_matrix_s *A, int64_t i, int64_t col)
{
    return sr_cpu_lower_bound(A->colind, A->rowptr[i], A->rowptr[i + 1], col);
}

sr_status sr_cpu_extract(struct sr_context_s *ctx, const struct sr_matrix_s *A, int64_t row0, int64_t col0,
                         int64_t nrows, int64_t ncols, struct sr_matrix_s **out)
{
    const int threads = sr_context_threads(ctx);
    struct sr_matrix_s *C;
    SR_TRY(sr_matrix_alloc(ctx, nrows, ncols, 0, A->type, SR_HOST, &C));
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t r = 0; r < nrows; r++)
        C->rowptr[r + 1] = row_lower_bound(A, row0 + r, col0 + ncols) - row_lower_bound(A, row0 + r, col0);
    sr_cpu_prefix_sum(C->rowptr, nrows);
    sr_status st = sr_matrix_alloc_entries(C, C->rowptr[nrows]);
    if (st != SR_SUCCESS) {
        sr_matrix_destroy(C);
        return st;
    }
    const size_t vsize = sr_value_size(A->type);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 256)
    for (int64_t r = 0; r < nrows; r++) {
        const int64_t from = row_lower_bound(A, row0 + r, col0), n = C->rowptr[r + 1] - C->rowptr[r];
        for (int64_t t = 0; t < n; t++)
            C->colind[C->rowptr[r] + t] = (int32_t)(A->colind[from + t] - col0);
        if (vsize && n)
            memcpy((char *)C->values + (size_t)C->rowptr[r] * vsize, (const char *)A->values + (size_t)from * vsize,
                   (size_t)n * vsize);
    }
    *out = C;
    return SR_SUCCESS;
}

sr_status sr_cpu_reduce_rows(struct sr_context_s *ctx, const struct sr_matrix_s *A, sr_semiring s,
                             struct sr_matrix_s **out)
{
    const int threads = sr_context_threads(ctx);
    struct sr_matrix_s *v;
    SR_TRY(sr_matrix_alloc(ctx, A->nrows, 1, 0, A->type, SR_HOST, &v));
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < A->nrows; i++)
        v->rowptr[i + 1] = A->rowptr[i + 1] > A->rowptr[i];
    sr_cpu_prefix_sum(v->rowptr, A->nrows);
    sr_status st = sr_matrix_alloc_entries(v, v->rowptr[A->nrows]);
    if (st != SR_SUCCESS) {
        sr_matrix_destroy(v);
        return st;
    }
    const int op = sr_semiring_is_user((int)s) ? (int)s : (int)sr_semiring_add_op(s); /* (sr_cpu_combine) */
    const size_t vsize = sr_value_size(A->type);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1024)
    for (int64_t i = 0; i < A->nrows; i++)
        if (v->rowptr[i + 1] > v->rowptr[i]) {
            const int64_t r = v->rowptr[i];
            v->colind[r] = 0;
            if (!v->values)
                continue;
            memcpy((char *)v->values + r * vsize, (const char *)A->values + A->rowptr[i] * vsize, vsize);
            for (int64_t k = A->rowptr[i] + 1; k < A->rowptr[i + 1]; k++) /* v[r] = v[r] ⊕ A(i, k) */
                sr_cpu_combine(v->values, r, v->values, r, A->values, k, A->type, SR_MERGE_UNION, (int)op);
        }
    *out = v;
    return SR_SUCCESS;
}
