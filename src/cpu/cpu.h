/* CPU backend (OpenMP). Kernels take internal objects whose arrays live on the host; they
 * are called only by src/ops, which has already checked shapes and types. */
#ifndef SR_CPU_H
#define SR_CPU_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../core/distance.h"
#include "../core/keep_rule.h"
#include "../core/matrix.h"
#include "../core/fused.h"
#include "../core/sddmm.h"
#include "../semiring/semiring.h"

#ifdef __cplusplus
extern "C" {
#endif

/* rows[k] = the row of entry k. */
void sr_cpu_expand_rows(const int64_t *rowptr, int64_t nrows, int64_t *rows, int threads);

/* Triplets in any order -> a new host CSR matrix; checks ranges and duplicates. When a
 * duplicate is rejected and duplicate_pair is not NULL, it receives the two triplet numbers. */
sr_status sr_cpu_coo_to_csr(struct sr_context_s *ctx, int64_t nrows, int64_t ncols, sr_type type, int64_t nnz,
                            const int64_t *rows, const int32_t *cols, const void *vals, sr_duplicates dup,
                            struct sr_matrix_s **out, int64_t *duplicate_pair);

/* AT must be allocated as ncols x nrows with A->nnz entries and A's type. */
sr_status sr_cpu_transpose(const struct sr_matrix_s *A, struct sr_matrix_s *AT);

/* Σ x_i·y_i in float64, and y = α·x + β·y (x unread when α = 0, y when β = 0), over checked
 * n x 1 vectors of one type, on `threads` threads (src/cpu/cpu_vector.c). */
double sr_cpu_vector_dot(const sr_dense *x, const sr_dense *y, int threads); /* y NULL: Σ |x_i| */
void sr_cpu_vector_axpby(double alpha, const sr_dense *x, double beta, const sr_dense *y, int threads);
void sr_cpu_vector_divide(const sr_dense *z, const sr_dense *x, const sr_dense *y, int threads); /* z = x / y */
/* flag = (flag ≠ 0 ∧ x > threshold) ? 1 : 0 (sr_vector_and_greater) */
void sr_cpu_vector_and_greater(const sr_dense *flag, const sr_dense *x, double threshold, int threads);
/* Writes every element of the host view d (A's shape and type). */
void sr_cpu_csr_to_dense(const struct sr_matrix_s *A, const sr_dense *d, int threads);
/* rowptr[i+1] = elements of row i of d that the rule keeps, then the prefix sum (rowptr has
 * nrows+1 entries). */
void sr_cpu_dense_rowptr(const sr_dense *d, const sr_keep_rule *rule, int64_t *rowptr, int threads);
/* Fills colind/values of A (d's type), whose rowptr came from sr_cpu_dense_rowptr. */
void sr_cpu_dense_fill(const sr_dense *d, const sr_keep_rule *rule, struct sr_matrix_s *A, int threads);

/* B has A's shape, pattern arrays (already copied) and the target type; converts values. */
sr_status sr_cpu_cast_values(const struct sr_matrix_s *A, struct sr_matrix_s *B, int threads);

/* C = A ⊕.⊗ B (dense B and C, any layouts); mask (structural, may be NULL) and accumulate as
 * in sr_spmm. T is the semiring's output type; A and B have their input type. */
sr_status sr_cpu_spmm(const struct sr_matrix_s *A, const sr_dense *B, const sr_dense *C, const struct sr_matrix_s *mask,
                      sr_semiring s, bool complement, bool accumulate);
/* The first row of share t of `shares` when rows are split into equal parts of entries plus rows. */
int64_t sr_cpu_first_row_of_share(const int64_t *rowptr, int64_t nrows, int64_t t, int64_t shares);
/* sr_cpu_spmm for a user semiring (src/semiring/user.h): its compiled row kernel, row by row. */
sr_status sr_cpu_user_spmm(const struct sr_matrix_s *A, const sr_dense *B, const sr_dense *C,
                           const struct sr_matrix_s *mask, sr_semiring s, bool complement, bool accumulate);

/* sr_spmv_plan for a host matrix (src/cpu/cpu_spmv_plan.c): the columns renumbered by entry count
 * and kept with A when one SpMV measured faster that way. */
sr_status sr_cpu_spmv_plan(struct sr_matrix_s *A, sr_spmv_plan_info *info);
/* Whether A holds a CPU SpMV plan; if so, A_plan (a shallow copy of A with the plan's columns) and
 * x_plan (x in the plan's order, in *x_memory, which the caller frees) are what an SpMV runs on. */
bool sr_cpu_spmv_planned(const struct sr_matrix_s *A);
sr_status sr_cpu_spmv_plan_operands(const struct sr_matrix_s *A, const sr_dense *x, int threads,
                                    struct sr_matrix_s *A_plan, sr_dense *x_plan, void **x_memory);

/* C = A ⊕.⊗ B for sparse A and B (Gustavson, two passes: count, then fill). */
sr_status sr_cpu_mxm(struct sr_context_s *ctx, const struct sr_matrix_s *A, const struct sr_matrix_s *B,
                     const struct sr_matrix_s *mask, bool complement, sr_semiring s, sr_type out_type,
                     struct sr_matrix_s **C);

/* C = A or.and B (or any_pair) with bool output: no values; one pass into per-thread buffers. */
sr_status sr_cpu_mxm_bool(struct sr_context_s *ctx, const struct sr_matrix_s *A, const struct sr_matrix_s *B,
                          const struct sr_matrix_s *mask, bool complement, struct sr_matrix_s **C);
/* Sorts a row's n columns (below 2^key_bits) ascending; tmp (n entries, may be NULL) lets rows of
 * 128 or more take a radix sort. */
void sr_cpu_sort_columns(int32_t *a, int32_t *tmp, int64_t n, int key_bits);

/* out[o] = a[x] ⊕ b[y] when merge is SR_MERGE_UNION (op an sr_add_op), else a[x] ⊗ b[y] (op an
 * sr_mul_op), in `type`; bool has no values and writes nothing. */
void sr_cpu_combine(void *out, int64_t o, const void *a, int64_t x, const void *b, int64_t y, sr_type type,
                    sr_merge merge, int op);
/* C = an element-wise merge of A and B (same shape and type; B unused for SR_MERGE_LEFT), under
 * an optional structural mask; values combined by the semiring's ⊕ (union) or ⊗ (intersection). */
sr_status sr_cpu_ewise(struct sr_context_s *ctx, const struct sr_matrix_s *A, const struct sr_matrix_s *B,
                       const struct sr_matrix_s *mask, bool complement, sr_merge merge, sr_semiring s,
                       struct sr_matrix_s **C);

/* Bit-packed blocks (cpu_bits): views already checked to fit A and one another. */
sr_status sr_cpu_mxm_bits(struct sr_context_s *ctx, const struct sr_matrix_s *A, const sr_bits *Y, const sr_bits *mask,
                          const sr_bits *X, const sr_bits_update *u, int64_t *count);
/* Y |= X (X NULL: nothing), then *count = Y's set bits (count may be NULL). */
sr_status sr_cpu_bits_or(struct sr_context_s *ctx, const sr_bits *Y, const sr_bits *X, int64_t *count);
sr_status sr_cpu_bits_from_matrix(struct sr_context_s *ctx, const struct sr_matrix_s *A, const sr_bits *X);
sr_status sr_cpu_matrix_from_bits(struct sr_context_s *ctx, const sr_bits *X, struct sr_matrix_s **A);

/* Structural operations (cpu_structure.c); src/ops has checked sizes and ranges. */
sr_status sr_cpu_kronecker(struct sr_context_s *ctx, const struct sr_matrix_s *A, const struct sr_matrix_s *B,
                           sr_semiring s, struct sr_matrix_s **C);
sr_status sr_cpu_extract(struct sr_context_s *ctx, const struct sr_matrix_s *A, int64_t row0, int64_t col0,
                         int64_t nrows, int64_t ncols, struct sr_matrix_s **C);
sr_status sr_cpu_reduce_rows(struct sr_context_s *ctx, const struct sr_matrix_s *A, sr_semiring s,
                             struct sr_matrix_s **v);

/* Distances and k-NN (cpu_distance.c, cpu_select.c). */
/* norms[2r], norms[2r+1] for every row r of A (float32 or float64 values). */
void sr_cpu_distance_norms(const struct sr_matrix_s *A, sr_metric metric, double p, double *norms, int threads);
/* Index of the first row holding a NaN or infinity (or, when `nonnegative`, a negative value);
 * -1 when there is none. */
int64_t sr_cpu_first_bad_row(const struct sr_matrix_s *A, bool nonnegative, int threads);
/* Distances of query rows [q0, q1) to every index row, in the queries' type. */
sr_status sr_cpu_distance_rows(const sr_distance_inputs *in, int64_t q0, int64_t q1, const sr_strided_out *out,
                               int threads);
/* A bounded heap of the k best (key, column) pairs seen: smaller keys first, ties to the smaller
 * column (the key is the value, negated when the largest are kept). */
typedef struct sr_select_entry {
    double key;
    int64_t col;
} sr_select_entry;
typedef struct sr_select_heap {
    sr_select_entry *e; /* k entries of storage */
    int64_t size, k;
} sr_select_heap;
void sr_select_push(sr_select_heap *h, double key, int64_t col);
/* sr_select_push, with the common case inline: a full heap that (key, col) would not enter. */
static inline void sr_select_offer(sr_select_heap *h, double key, int64_t col)
{
    if (h->size == h->k && (key > h->e[0].key || (key == h->e[0].key && col > h->e[0].col)))
        return;
    sr_select_push(h, key, col);
}
/* Writes the heap best first into idx[0..size) and row r of dist, and empties it. */
void sr_select_store(sr_select_heap *h, bool largest, bool single, int64_t *idx, const sr_strided_out *dist, int64_t r);
/* For each of `rows` rows of n values (row r at block + r*ld), the k smallest (largest when
 * `largest`), best first, ties to the smaller column; idx has ld_idx per row, dist is strided. */
sr_status sr_cpu_select_rows(const void *block, sr_type type, int64_t rows, int64_t n, int64_t ld, int64_t k,
                             bool largest, int64_t *idx, int64_t ld_idx, const sr_strided_out *dist, int threads);

/* k-NN by the overlap (cpu_overlap.c): query rows [q0, q1), k per row into idx (k a row) and
 * dist (strided), the dense path's results exactly. `order` is sr_cpu_disjoint_order's (for
 * metrics ordered by a key; NULL otherwise); mode < 0 picks the dense scoring per query when its
 * overlap reaches past half the index, mode > 0 never. */
sr_status sr_cpu_knn_overlap_rows(const sr_distance_inputs *in, const int32_t *order, int mode, int64_t q0, int64_t q1,
                                  int64_t k, int64_t *idx, const sr_strided_out *dist, int threads);
/* Radius neighbours by the overlap: query rows [q0, q1) as a host CSR piece (rows - q0, columns
 * ascending, values of `type`) of the index rows the rule keeps (its self column is batch row +
 * self_offset), the dense path's exactly. order and mode as for sr_cpu_knn_overlap_rows. */
sr_status sr_cpu_radius_overlap_rows(struct sr_context_s *ctx, const sr_distance_inputs *in, const int32_t *order,
                                     int mode, int64_t q0, int64_t q1, const sr_keep_rule *rule, sr_type type,
                                     struct sr_matrix_s **piece, int threads);
/* The index rows by (sr_metric_disjoint_key, row) ascending, from their norms (d columns). */
sr_status sr_cpu_disjoint_order(const double *xnorm, int64_t n, sr_metric metric, double d, int32_t *order);

/* A packed row-major copy (out: B->nrows x B->ncols) of a column-major host view. */
void sr_cpu_dense_row_major(const sr_dense *B, void *out, int threads);

/* The sampled product (src/core/sddmm.h): S->nnz values of a->out_type into `out`. */
sr_status sr_cpu_sddmm(const sr_sddmm_args *a, void *out);
/* Whether well-filled S takes whole tile products (plus_times, float32 or float64;
 * src/cpu/cpu_sddmm_tiles.c), and the call that runs them (SR_ERROR_OUT_OF_MEMORY, with nothing
 * written, when a thread's packs do not fit). */
bool sr_cpu_sddmm_tiles_pay(const sr_sddmm_args *a);
sr_status sr_cpu_sddmm_tiles(const sr_sddmm_args *a, void *out, int threads);
/* The fused product O = N(α·S ⊙ A·Bᵀ)·V by the same tiles: whether they pay (at a lower fill than
 * the SDDMM's: see cpu_sddmm_tiles.c), and the call (SR_ERROR_OUT_OF_MEMORY, with nothing
 * written, when a thread's packs do not fit). */
bool sr_cpu_sddmm_spmm_tiles_pay(const sr_sddmm_args *a);
sr_status sr_cpu_sddmm_spmm_tiles(const sr_sddmm_args *a, const void *V, int64_t p, const sr_sddmm_out *O,
                                  bool softmax, bool accumulate, int threads);
/* The fused SDDMM→SpMM into O (m x p, strided): V is n x p, row-major, packed. */
sr_status sr_cpu_sddmm_spmm(const sr_sddmm_args *a, const void *V, int64_t p, const sr_sddmm_out *O,
                            sr_row_normalize normalize, bool accumulate);

/* The fused pattern w = α·Xᵀ·(v ⊙ (X·y)) + β·z and its forms (src/core/fused.h). */
sr_status sr_cpu_fused(const sr_fused_args *a, int threads);

/* Row i's products in A·B: each of its entries' row of B (sr_mxm's bounds and thread choice). */
static inline int64_t sr_cpu_row_products(const struct sr_matrix_s *A, const struct sr_matrix_s *B, int64_t i)
{
    int64_t products = 0;
    for (int64_t ka = A->rowptr[i]; ka < A->rowptr[i + 1]; ka++)
        products += B->rowptr[A->colind[ka] + 1] - B->rowptr[A->colind[ka]];
    return products;
}

/* The first k in [lo, hi) with col[k] >= key (hi when none), col sorted: a row's columns. */
static inline int64_t sr_cpu_lower_bound(const int32_t *col, int64_t lo, int64_t hi, int64_t key)
{
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (col[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Position of element (i, j) in a dense view's data, in elements. */
static inline size_t sr_dense_offset(const sr_dense *d, int64_t i, int64_t j)
{
    return d->layout == SR_ROW_MAJOR ? (size_t)i * (size_t)d->ld + (size_t)j : (size_t)j * (size_t)d->ld + (size_t)i;
}

/* Bytes of a cache line. A type whose first member is _Alignas(SR_CACHE_LINE) fills whole lines. */
#define SR_CACHE_LINE 64

/* `count` zeroed elements of `size` bytes (a multiple of SR_CACHE_LINE), starting on a cache line:
 * per-thread state that each thread updates as it goes, with no line shared by two threads
 * (free() releases it). */
static inline void *sr_cpu_calloc_lines(size_t count, size_t size)
{
    const size_t bytes = (count ? count : 1) * size;
    void *p = aligned_alloc(SR_CACHE_LINE, bytes);
    if (p)
        memset(p, 0, bytes);
    return p;
}

/* `threads` copies of n elements of `size` bytes, *stride elements apart, each starting on a pair
 * of cache lines (128 bytes: the adjacent-line prefetcher fetches pairs), so that no line holds two
 * threads' elements: accumulators and flags that each thread updates as it goes; free(*block)
 * releases them. `zeroed`: from calloc (large blocks come zeroed page by page as each thread first
 * touches its copy); else from malloc, for callers whose threads zero their own copy first: calloc
 * zeroes a block it takes from the heap on the calling thread alone, which with 16 copies of a wide
 * vector outweighed the parallel work it fed. */
static inline void *sr_cpu_alloc_copies(int threads, int64_t n, size_t size, bool zeroed, int64_t *stride,
                                        void **block)
{
    const size_t pair = 2 * SR_CACHE_LINE;
    const int64_t per = (int64_t)(pair / size);
    *stride = (n + per - 1) / per * per;
    const size_t bytes = (size_t)threads * (size_t)(*stride > 0 ? *stride : per) * size + pair;
    *block = zeroed ? calloc(bytes, 1) : malloc(bytes);
    return *block ? (void *)(((uintptr_t)*block + pair - 1) / pair * pair) : NULL;
}

/* In-place exclusive prefix sum of counts[0..n] shifted: counts[0] = 0, counts[i+1] += counts[i]. */
void sr_cpu_prefix_sum(int64_t *rowptr, int64_t nrows);

#ifdef __cplusplus
}
#endif

#endif
