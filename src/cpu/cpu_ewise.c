/* Element-wise merges of two sparse matrices on the host, row by row: the union (⊕ where both
 * have an entry), the intersection (⊗), or A's own entries alone; all under an optional
 * structural mask. A count pass sizes each row, a fill pass writes it. */
#include <string.h>

#include "../core/error.h"
#include "../core/types.h"
#include "../semiring/user.h"
#include "cpu.h"

/* out[o] = a[x] ⊕ b[y] (merge SR_MERGE_UNION, op an sr_add_op) or a[x] ⊗ b[y] (otherwise, op an
 * sr_mul_op), in the matrices' value type; nothing for bool, which has no values. */
void sr_cpu_combine(void *out, int64_t o, const void *a, int64_t x, const void *b, int64_t y, sr_type type,
                    sr_merge merge, int op)
{
    if (op >= SR_USER_SEMIRING_FIRST) { /* a user semiring's ⊕ or ⊗ (op is its value) */
        const size_t vs = sr_value_size(type);
        const sr_user_semiring *u = sr_user_semiring_of(op);
        (merge == SR_MERGE_UNION ? u->add : u->mul)((const char *)a + (size_t)x * vs, (const char *)b + (size_t)y * vs,
                                                   (char *)out + (size_t)o * vs);
        return;
    }
#define COMBINE(T)                                                                                       \
    {                                                                                                    \
        T u = ((const T *)a)[x], v = ((const T *)b)[y];                                                  \
        ((T *)out)[o] = merge == SR_MERGE_UNION ? (op == SR_ADD_OP_PLUS  ? (T)SR_ADD_PLUS(u, v)          \
                                                   : op == SR_ADD_OP_MIN ? (T)SR_ADD_MIN(u, v)           \
                                                   : op == SR_ADD_OP_MAX ? (T)SR_ADD_MAX(u, v)           \
                                                                         : (T)SR_ADD_OR(u, v))           \
                        : op == SR_MUL_OP_TIMES ? (T)SR_MUL_TIMES(u, v)                                  \
                        : op == SR_MUL_OP_PLUS  ? (T)SR_MUL_PLUS(u, v)                                   \
                        : op == SR_MUL_OP_MIN   ? (T)SR_MUL_MIN(u, v)                                    \
                        : op == SR_MUL_OP_AND   ? (T)SR_MUL_AND(u, v)                                    \
                                                : (T)1;                                                  \
    }
    switch (type) {
    case SR_TYPE_INT32: COMBINE(int32_t) break;
    case SR_TYPE_FLOAT32: COMBINE(float) break;
    case SR_TYPE_FLOAT64: COMBINE(double) break;
    case SR_TYPE_BOOL: break;
    }
#undef COMBINE
}

/* The op that combines two values where both rows have an entry. */
typedef struct {
    sr_merge merge;
    int op; /* sr_add_op for a union, sr_mul_op for an intersection */
} combiner;

/* The cursor into row i of the mask: allowed(j) for increasing j, one forward step at a time. */
typedef struct {
    const int32_t *col; /* NULL for an empty matrix's row: keep `active` apart */
    int64_t at, end;
    bool active, complement;
} mask_cursor;

static inline mask_cursor mask_row(const struct sr_matrix_s *mask, bool complement, int64_t i)
{
    mask_cursor m = {NULL, 0, 0, mask != NULL, complement};
    if (mask) {
        m.col = mask->colind;
        m.at = mask->rowptr[i];
        m.end = mask->rowptr[i + 1];
    }
    return m;
}

static inline bool mask_allows(mask_cursor *m, int32_t j)
{
    if (!m->active)
        return true;
    while (m->at < m->end && m->col[m->at] < j)
        m->at++;
    return (m->at < m->end && m->col[m->at] == j) != m->complement;
}

/* One row's merge: counts its entries, and writes them when cols is not NULL. */
static int64_t merge_row(const struct sr_matrix_s *A, const struct sr_matrix_s *B, int64_t i, mask_cursor m,
                         combiner c, int32_t *cols, void *vals, size_t vsize)
{
    int64_t x = A->rowptr[i], xe = A->rowptr[i + 1], y = 0, ye = 0, n = 0;
    if (B) {
        y = B->rowptr[i];
        ye = B->rowptr[i + 1];
    }
    const bool both_needed = c.merge == SR_MERGE_INTERSECT;
    while (both_needed ? (x < xe && y < ye) : (x < xe || y < ye)) {
        const int32_t cx = x < xe ? A->colind[x] : INT32_MAX, cy = y < ye ? B->colind[y] : INT32_MAX;
        const int32_t j = cx < cy ? cx : cy;
        const bool both = cx == cy, keep = c.merge == SR_MERGE_UNION || (c.merge == SR_MERGE_LEFT ? cx == j : both);
        if (keep && mask_allows(&m, j)) {
            if (cols) {
                cols[n] = j;
                if (vsize && both && c.merge != SR_MERGE_LEFT)
                    sr_cpu_combine(vals, n, A->values, x, B->values, y, A->type, c.merge, c.op);
                else if (vsize)
                    memcpy((char *)vals + n * vsize,
                           cx == j ? (const char *)A->values + x * vsize : (const char *)B->values + y * vsize, vsize);
            }
            n++;
        }
        if (c.merge == SR_MERGE_INTERSECT && !both) { /* skip ahead: only common columns count */
            x += cx < cy;
            y += cy < cx;
            continue;
        }
        x += cx == j;
        y += cy == j;
    }
    return n;
}

/* The first k in [lo, hi) with col[k] >= j, galloping from lo: walking a long row past a short
 * row's columns costs O(log gap) a column instead of the gap. */
static inline int64_t gallop(const int32_t *col, int64_t lo, int64_t hi, int32_t j)
{
    if (lo >= hi || col[lo] >= j)
        return lo;
    int64_t below = lo, step = 1, above = lo + 1; /* col[below] < j */
    while (above < hi && col[above] < j) {
        below = above;
        step *= 2;
        above = below + step;
    }
    return sr_cpu_lower_bound(col, below + 1, above < hi ? above : hi, j);
}

/* count entries of M from k on into cols (and their values to vals from entry o); nothing, and
 * no pointer arithmetic, when count is 0 (an empty matrix's arrays are NULL). */
static void copy_run(const struct sr_matrix_s *M, int64_t k, int64_t count, int32_t *cols, void *vals, int64_t o,
                     size_t vsize)
{
    if (count <= 0)
        return;
    memcpy(cols, M->colind + k, (size_t)count * sizeof(int32_t));
    if (vsize)
        memcpy((char *)vals + o * vsize, (const char *)M->values + k * vsize, (size_t)count * vsize);
}

/* An unmasked union or intersection of a short row with a long one (a sparse row against a hub's
 * row of M·M): the short row's columns are looked up in the long one by galloping, and a union
 * copies the long row's runs between them whole. Counts, and writes when cols is not NULL. */
static int64_t merge_row_skewed(const struct sr_matrix_s *A, const struct sr_matrix_s *B, int64_t i, combiner c,
                                int32_t *cols, void *vals, size_t vsize)
{
    const int64_t xa = A->rowptr[i], ea = A->rowptr[i + 1], xb = B->rowptr[i], eb = B->rowptr[i + 1];
    const bool a_short = ea - xa <= eb - xb, uni = c.merge == SR_MERGE_UNION;
    const struct sr_matrix_s *S = a_short ? A : B, *L = a_short ? B : A;
    int64_t s = a_short ? xa : xb, l = a_short ? xb : xa, n = 0;
    const int64_t se = a_short ? ea : eb, le = a_short ? eb : ea;
    for (; s < se && (uni || l < le); s++) {
        const int32_t j = S->colind[s];
        const int64_t at = gallop(L->colind, l, le, j);
        if (uni && cols) /* the long row's run before j */
            copy_run(L, l, at - l, cols + n, vals, n, vsize);
        if (uni)
            n += at - l;
        const bool both = at < le && L->colind[at] == j;
        if (uni || both) {
            if (cols) {
                cols[n] = j;
                if (vsize && both)
                    sr_cpu_combine(vals, n, A->values, a_short ? s : at, B->values, a_short ? at : s, A->type, c.merge,
                                   c.op);
                else if (vsize)
                    memcpy((char *)vals + n * vsize, (const char *)S->values + s * vsize, vsize);
            }
            n++;
        }
        l = at + both;
    }
    if (uni && cols) /* the long row's tail */
        copy_run(L, l, le - l, cols + n, vals, n, vsize);
    return n + (uni ? le - l : 0);
}

/* Row i's merge by the fittest walk: galloping when one row is a quarter of the other or
 * shorter and no mask is in the way, step by step otherwise. */
static int64_t merge_any_row(const struct sr_matrix_s *A, const struct sr_matrix_s *B, const struct sr_matrix_s *mask,
                             bool complement, int64_t i, combiner c, int32_t *cols, void *vals, size_t vsize)
{
    if (B && !mask) {
        const int64_t la = A->rowptr[i + 1] - A->rowptr[i], lb = B->rowptr[i + 1] - B->rowptr[i];
        if (4 * (la < lb ? la : lb) <= (la < lb ? lb : la))
            return merge_row_skewed(A, B, i, c, cols, vals, vsize);
    }
    return merge_row(A, B, i, mask_row(mask, complement, i), c, cols, vals, vsize);
}

sr_status sr_cpu_ewise(struct sr_context_s *ctx, const struct sr_matrix_s *A, const struct sr_matrix_s *B,
                       const struct sr_matrix_s *mask, bool complement, sr_merge merge, sr_semiring s,
                       struct sr_matrix_s **out)
{
    const int64_t entries = A->rowptr[A->nrows] + (B ? B->rowptr[B->nrows] : 0) + (mask ? mask->rowptr[mask->nrows] : 0);
    const int threads = sr_context_threads_for(ctx, A->nrows + entries);
    combiner c = {merge, sr_semiring_is_user((int)s) ? (int)s /* sr_cpu_combine calls its ⊕ or ⊗ */
                         : merge == SR_MERGE_INTERSECT ? (int)sr_semiring_mul_op(s)
                                                       : (int)sr_semiring_add_op(s)};
    const struct sr_matrix_s *right = merge == SR_MERGE_LEFT ? NULL : B;
    struct sr_matrix_s *C;
    SR_TRY(sr_matrix_alloc(ctx, A->nrows, A->ncols, 0, A->type, SR_HOST, &C));
#pragma omp parallel for num_threads(threads) schedule(dynamic, 256)
    for (int64_t i = 0; i < A->nrows; i++)
        C->rowptr[i + 1] = merge_any_row(A, right, mask, complement, i, c, NULL, NULL, 0);
    sr_cpu_prefix_sum(C->rowptr, A->nrows);
    sr_status st = sr_matrix_alloc_entries(C, C->rowptr[A->nrows]);
    if (st != SR_SUCCESS) {
        sr_matrix_destroy(C);
        return st;
    }
    const size_t vsize = sr_value_size(A->type);
    const int64_t rows_to_fill = C->rowptr[A->nrows] > 0 ? A->nrows : 0; /* none: C has no entry arrays */
#pragma omp parallel for num_threads(threads) schedule(dynamic, 256)
    for (int64_t i = 0; i < rows_to_fill; i++)
        merge_any_row(A, right, mask, complement, i, c, C->colind + C->rowptr[i],
                      vsize ? (char *)C->values + (size_t)C->rowptr[i] * vsize : NULL, vsize);
    *out = C;
    return SR_SUCCESS;
}
