/* CUDA backend kernels behind C launchers. Arrays of the objects passed live on the device of
 * their context; src/ops has checked shapes and types. Each call finishes its work before it
 * returns (it synchronizes the context's stream) unless it says otherwise. */
#ifndef SR_CUDA_H
#define SR_CUDA_H

#include "../core/distance.h"
#include "../core/keep_rule.h"
#include "../core/matrix.h"
#include "../core/fused.h"
#include "../core/sddmm.h"
#include "../semiring/semiring.h"

#ifdef __cplusplus
extern "C" {
#endif

/* bytes of zeros at device `data`, in the context's stream. */
sr_status sr_cuda_zero(struct sr_context_s *ctx, void *data, size_t bytes);
/* sr_vector_dot (sr_vector_asum with y NULL) and sr_vector_axpby on checked device vectors
 * (src/cuda/cuda_vector.cu). */
sr_status sr_cuda_vector_dot(struct sr_context_s *ctx, const sr_dense *x, const sr_dense *y, double *result);
sr_status sr_cuda_vector_axpby(struct sr_context_s *ctx, double alpha, const sr_dense *x, double beta, const sr_dense *y);
/* The device-scalar forms: the sum into s (a device double), α and β scaled by *a and *b (NULL:
 * 1) read on the device; z = x / y. In stream order, no wait. */
sr_status sr_cuda_vector_dot_s(struct sr_context_s *ctx, const sr_dense *x, const sr_dense *y, const sr_dense *s);
sr_status sr_cuda_vector_axpby_s(struct sr_context_s *ctx, double alpha, const void *a, const sr_dense *x, double beta,
                                 const void *b, const sr_dense *y);
sr_status sr_cuda_vector_divide(struct sr_context_s *ctx, const sr_dense *z, const sr_dense *x, const sr_dense *y);
/* flag = (flag ≠ 0 ∧ x > threshold) ? 1 : 0, in stream order (sr_vector_and_greater). */
sr_status sr_cuda_vector_and_greater(struct sr_context_s *ctx, const sr_dense *flag, const sr_dense *x,
                                     double threshold);
/* A packed row-major copy (out: d->nrows x d->ncols, device) of a column-major device view. */
sr_status sr_cuda_dense_row_major(struct sr_context_s *ctx, const sr_dense *d, void *out);
/* The sampled product (src/core/sddmm.h): S->nnz values of a->out_type into `out` (device). */
sr_status sr_cuda_sddmm(const sr_sddmm_args *a, void *out);
/* The kernel family sr_cuda_sddmm would run for a (a->strategy AUTO) on its S, A and B. */
sr_status sr_cuda_sddmm_strategy(const sr_sddmm_args *a, sr_sddmm_strategy *strategy);
/* The fused SDDMM→SpMM into O (m x p, strided, device): V is n x p, row-major, packed. */
sr_status sr_cuda_sddmm_spmm(const sr_sddmm_args *a, const void *V, int64_t p, const sr_sddmm_out *O,
                             sr_row_normalize normalize, bool accumulate);

/* The fused pattern w = α·Xᵀ·(v ⊙ (X·y)) + β·z and its forms, X and the vectors on the device. */
sr_status sr_cuda_fused(struct sr_context_s *ctx, const sr_fused_args *a);

/* Validates a device CSR; the message names the first bad row, as the host check would. */
sr_status sr_cuda_check_csr(struct sr_context_s *ctx, const int64_t *rowptr, const int32_t *colind, int64_t nrows,
                            int64_t ncols, int64_t nnz);
/* rows[k] = the row of entry k (device array of A->nnz). */
sr_status sr_cuda_expand_rows(const struct sr_matrix_s *A, int64_t *rows);
/* Device triplets -> a new device CSR matrix (radix sort); checks ranges and duplicates. */
sr_status sr_cuda_coo_to_csr(struct sr_context_s *ctx, int64_t nrows, int64_t ncols, sr_type type, int64_t nnz,
                             const int64_t *rows, const int32_t *cols, const void *vals, sr_duplicates dup,
                             struct sr_matrix_s **out);
/* AT allocated as ncols x nrows with A->nnz entries (stable radix sort by column). */
sr_status sr_cuda_transpose(const struct sr_matrix_s *A, struct sr_matrix_s *AT);
/* Writes every element of the device view d. */
sr_status sr_cuda_csr_to_dense(const struct sr_matrix_s *A, const sr_dense *d);
/* A device view -> a new device CSR matrix of the elements the rule keeps. */
sr_status sr_cuda_dense_to_csr(struct sr_context_s *ctx, const sr_dense *d, const sr_keep_rule *rule,
                               struct sr_matrix_s **out);
/* As sr_cpu_cast_values, on the device. */
sr_status sr_cuda_cast_values(const struct sr_matrix_s *A, struct sr_matrix_s *B);

/* Semiring products, as their CPU twins in src/cpu/cpu.h. */
/* sr_spmv_plan for a device matrix (src/cuda/cuda_spmv_plan.cu). */
sr_status sr_cuda_spmv_plan(struct sr_matrix_s *A, sr_spmv_plan_info *info);
/* queued: a vector product returns once queued on the context's stream (src/core/queued.h). */
sr_status sr_cuda_spmm(const struct sr_matrix_s *A, const sr_dense *B, const sr_dense *C, const struct sr_matrix_s *mask,
                       sr_semiring s, bool complement, bool accumulate, bool queued);
/* Compiles a user semiring's product kernels with NVRTC for sm_<arch> (no device needed) and gives
 * the CUBIN's size: the check that the shared kernels and the user's expressions build for the GPU,
 * on machines without one. */
sr_status sr_cuda_user_compile_check(sr_semiring s, int arch, size_t *cubin_bytes);
/* The same for a user metric's distance kernels (the tiles' sums and the norms). */
sr_status sr_cuda_user_metric_compile_check(sr_metric m, int arch, size_t *cubin_bytes);
sr_status sr_cuda_mxm(struct sr_context_s *ctx, const struct sr_matrix_s *A, const struct sr_matrix_s *B,
                      const struct sr_matrix_s *mask, bool complement, sr_semiring s, sr_type out_type,
                      struct sr_matrix_s **C);
sr_status sr_cuda_ewise(struct sr_context_s *ctx, const struct sr_matrix_s *A, const struct sr_matrix_s *B,
                        const struct sr_matrix_s *mask, bool complement, sr_merge merge, sr_semiring s,
                        struct sr_matrix_s **C);

/* Bit-packed blocks (cuda_bits): views already checked to fit A and one another. */
sr_status sr_cuda_mxm_bits(struct sr_context_s *ctx, const struct sr_matrix_s *A, const sr_bits *Y, const sr_bits *mask,
                          const sr_bits *X, const sr_bits_update *u, int64_t *count);
/* Y |= X (X NULL: nothing), then *count = Y's set bits (count may be NULL). */
sr_status sr_cuda_bits_or(struct sr_context_s *ctx, const sr_bits *Y, const sr_bits *X, int64_t *count);
/* Clears every word of X (its ld included). */
sr_status sr_cuda_bits_zero(struct sr_context_s *ctx, const sr_bits *X);
sr_status sr_cuda_bits_from_matrix(struct sr_context_s *ctx, const struct sr_matrix_s *A, const sr_bits *X);
sr_status sr_cuda_matrix_from_bits(struct sr_context_s *ctx, const sr_bits *X, struct sr_matrix_s **A);

/* Structural operations, as their CPU twins (cpu_structure.c). */
sr_status sr_cuda_kronecker(struct sr_context_s *ctx, const struct sr_matrix_s *A, const struct sr_matrix_s *B,
                            sr_semiring s, struct sr_matrix_s **C);
sr_status sr_cuda_extract(struct sr_context_s *ctx, const struct sr_matrix_s *A, int64_t row0, int64_t col0,
                          int64_t nrows, int64_t ncols, struct sr_matrix_s **C);
sr_status sr_cuda_reduce_rows(struct sr_context_s *ctx, const struct sr_matrix_s *A, sr_semiring s,
                              struct sr_matrix_s **v);

/* Distances and k-NN, as their CPU twins (cpu_distance.c, cpu_select.c). */
sr_status sr_cuda_distance_norms(const struct sr_matrix_s *A, sr_metric metric, double p, double *norms);
/* *row = the first row holding NaN/infinity (or a negative value when `nonnegative`), else -1. */
sr_status sr_cuda_first_bad_row(const struct sr_matrix_s *A, bool nonnegative, int64_t *row);
/* Each row of A (float32/64) by decreasing |value|: col[t], abs[t] for t in the row's range, and
 * rank[e] = the place of entry e in that order (rank may be NULL). Stable: ties keep column order. */
sr_status sr_cuda_magnitude_order(const struct sr_matrix_s *A, int32_t *col, void *abs, int32_t *rank);
/* Each row of A by decreasing key, for a user metric reduced by max over the union: the key of an
 * entry v is pair(v, 0) for the queries (query_side), pair(0, v) for the index; col[t] and key[t]
 * for t in the row's range. Stable: ties keep column order. */
sr_status sr_cuda_user_union_order(const struct sr_matrix_s *A, sr_metric metric, double p, bool query_side,
                                   int32_t *col, double *key);
sr_status sr_cuda_distance_rows(const sr_distance_inputs *in, int64_t q0, int64_t q1, const sr_strided_out *out);
/* k <= 1024. */
sr_status sr_cuda_select_rows(struct sr_context_s *ctx, const void *block, sr_type type, int64_t rows, int64_t n,
                              int64_t ld, int64_t k, bool largest, int64_t *idx, int64_t ld_idx,
                              const sr_strided_out *dist);
/* k-NN of query rows [q0, q1) by the overlap (cuda_knn_overlap.cu), the dense path's neighbours and
 * distances: *taken false (nothing written) where it does not apply (k > 32, a metric not walked
 * by index, or a batch of 2^31 shared-column pairs or more). */
sr_status sr_cuda_knn_overlap_rows(const sr_distance_inputs *in, int64_t q0, int64_t q1, int64_t k, int64_t *idx,
                                   const sr_strided_out *dist, bool *taken);
/* k-NN of query rows [q0, q1) selecting as it scores (cuda_knn_tiles.cu): the dense path's
 * neighbours and distances without its block of n distances per query. Applies (…_apply) for k <= 32
 * and every metric, unless SPARSERING_KNN_TILES=0; …_scratch_per_row bounds the device scratch a
 * query takes. */
bool sr_cuda_knn_tiles_apply(const sr_distance_inputs *in, int64_t k);
size_t sr_cuda_knn_tiles_scratch_per_row(const sr_distance_inputs *in, int64_t k);
sr_status sr_cuda_knn_tiles_rows(const sr_distance_inputs *in, int64_t q0, int64_t q1, int64_t k, int64_t *idx,
                                 const sr_strided_out *dist);
/* k-NN of the dot-product metrics with the columns that hold most of the pair work as a dense
 * panel multiplied on tensor cores (cuda_knn_panel.cu): the dense path's neighbours, distances
 * bit for bit in FP16 mode, to float32 accuracy otherwise. The plan decides the panel's columns
 * and precision and builds the index's panel; *panel stays NULL where the path does not apply
 * (float64, another metric, k > 32, SR_PRECISION_FLOAT32, no inverted form) or does not pay by
 * its cost model (SPARSERING_KNN_PANEL=0 never, =1 wherever it applies;
 * SPARSERING_KNN_PANEL_COLUMNS=N sets the width). It sets sr_last_method. */
typedef struct sr_cuda_panel sr_cuda_panel;
sr_status sr_cuda_knn_panel_plan(const sr_distance_inputs *in, int64_t k, sr_precision precision,
                                 sr_cuda_panel **panel);
size_t sr_cuda_knn_panel_scratch_per_row(const sr_cuda_panel *panel, const sr_distance_inputs *in, int64_t k);
sr_status sr_cuda_knn_panel_rows(sr_cuda_panel *panel, const sr_distance_inputs *in, int64_t q0, int64_t q1,
                                 int64_t k, int64_t *idx, const sr_strided_out *dist);
void sr_cuda_knn_panel_free(sr_cuda_panel *panel);
/* Radius neighbours of query rows [q0, q1) deciding as they are scored (cuda_radius_tiles.cu), on
 * the same tiles and bounds as sr_cuda_knn_tiles_rows: the rows `rule` keeps (a radius, maybe
 * leaving each query's own row out), as a new device CSR of q1 - q0 rows in *piece, the dense
 * path's pairs and values. At most `capacity` pairs are held: *pairs gets the count found, and past
 * the capacity *piece stays NULL (take fewer queries). Applies (…_apply) for every metric, unless
 * SPARSERING_KNN_TILES=0. */
bool sr_cuda_radius_tiles_apply(const sr_distance_inputs *in);
sr_status sr_cuda_radius_tiles_rows(const sr_distance_inputs *in, int64_t q0, int64_t q1, const sr_keep_rule *rule,
                                    int64_t capacity, struct sr_matrix_s **piece, int64_t *pairs);
/* Device scratch per row that sr_cuda_select_rows takes beside the block (its candidates). */
size_t sr_cuda_select_scratch_per_row(int64_t n, int64_t k, sr_type type);

/* Several GPUs of one context (src/cuda/cuda_multi.cu). GPUs are named by their place g in the
 * context's list; the first GPU's moves run on the context's own stream, the others' on their own
 * contexts' streams. Each call returns when its moves or kernels are done. */
/* true when built with NCCL (else moves are peer copies). */
bool sr_cuda_multi_nccl(void);
typedef struct sr_cuda_move {
    int from, to;          /* places in ctx->devices */
    const void *src;       /* on GPU `from` */
    void *dst;             /* on GPU `to` */
    size_t bytes;
} sr_cuda_move;
/* Every move at once (NCCL send/receive pairs in one group; a move within a GPU is a copy). */
sr_status sr_cuda_multi_moves(struct sr_context_s *ctx, const sr_cuda_move *moves, int n);
/* dst[g] = the bytes at src (on the first GPU) for every other GPU g (ncclBroadcast). */
sr_status sr_cuda_multi_broadcast(struct sr_context_s *ctx, const void *src, void *const *dst, size_t bytes);
/* data[0..n) += delta, on ctx's GPU. */
sr_status sr_cuda_shift(struct sr_context_s *ctx, int64_t *data, int64_t n, int64_t delta);
/* prefix (host, A->nrows + 1): prefix[i] = the multiply-adds of rows [0, i) of A·B. */
sr_status sr_cuda_row_flops(const struct sr_matrix_s *A, const struct sr_matrix_s *B, int64_t *prefix);
/* The k nearest of several parts' candidates: part g's rows (k_of[g] each, closest first, local
 * rows) start at cidx/cdist + g * part_stride; their rows are index rows row0[g] + local. */
typedef struct sr_topk_parts {
    int n;
    int64_t part_stride;
    int64_t k_of[SR_MAX_DEVICES];
    int64_t row0[SR_MAX_DEVICES];
} sr_topk_parts;
sr_status sr_cuda_merge_topk(struct sr_context_s *ctx, const int64_t *cidx, const void *cdist,
                             const sr_topk_parts *parts, int64_t rows, int64_t k, sr_type type, bool largest,
                             int64_t *out_idx, const sr_strided_out *out_dist);
/* *out (on ctx's GPU) = the n parts (same rows, on ctx's GPU) side by side, part g's columns moved
 * to start at col0[g] (col0[n]: the columns in all); drop_diagonal leaves out the entries (i, i). */
sr_status sr_cuda_concat_columns(struct sr_context_s *ctx, const struct sr_matrix_s *const *parts, int n,
                                 const int64_t *col0, bool drop_diagonal, struct sr_matrix_s **out);

#ifdef __cplusplus
}
#endif

#endif
