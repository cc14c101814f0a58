/* The sparse matrix object: CSR with 64-bit row pointers and 32-bit column indices. */
#ifndef SR_CORE_MATRIX_H
#define SR_CORE_MATRIX_H

#include "context.h"

#ifdef __cplusplus
extern "C" {
#endif

struct sr_matrix_s {
    struct sr_context_s *ctx; /* a counted reference: memory accounting and the stream */
    int64_t nrows, ncols, nnz;
    int64_t capacity;         /* entries allocated in colind/values (>= nnz) */
    sr_type type;
    sr_location location;
    int64_t *rowptr;          /* nrows + 1 */
    int32_t *colind;          /* capacity */
    void *values;             /* capacity values; NULL for SR_TYPE_BOOL */
    /* A cache the device products fill on first use (rows grouped by length,
     * src/cuda/cuda_row_plan.cu) and free_row_plans frees with the matrix. It depends on rowptr
     * only, which no call changes once the matrix is built. */
    void *row_plans;
    void (*free_row_plans)(struct sr_matrix_s *A);
    /* The same for the sampled products: S's entries in column-tile order (src/cuda/cuda_sddmm.cu),
     * built on first use for a tile width and kept while the matrix lives. */
    void *tile_orders;
    void (*free_tile_orders)(struct sr_matrix_s *A);
    /* The same for the fused pattern on wide X: its most frequent columns and their slots in a
     * block's shared memory (src/cuda/cuda_hot_columns.cu). */
    void *hot_columns;
    void (*free_hot_columns)(struct sr_matrix_s *A);
    /* The same for the fused pattern on wide X with long rows: each row's first entry in each of
     * w's column ranges (src/cuda/cuda_fused_columns.cuh), for one range width. */
    void *column_ranges;
    void (*free_column_ranges)(struct sr_matrix_s *A);
    /* The same for the fused pattern summed in a fixed order (a deterministic context): Xᵀ with
     * values of the vectors' type (src/cuda/cuda_fused_ordered.cuh). */
    void *fused_transpose;
    void (*free_fused_transpose)(struct sr_matrix_s *A);
    /* The same for the distance calls: what an index keeps from its first search (its transpose,
     * the value checks it passed, its norms per metric: src/ops/distance_index.c). */
    void *distance_cache;
    void (*free_distance_cache)(struct sr_matrix_s *A);
    /* The SpMV plan sr_spmv_plan made and kept (src/cuda/cuda_spmv_plan.cu for device
     * matrices, src/cpu/cpu_spmv_plan.c for host ones); NULL when none is in use. */
    void *spmv_plan;
    void (*free_spmv_plan)(struct sr_matrix_s *A);
    /* The row blocks a context over several GPUs cut this matrix into, one on each GPU
     * (src/ops/multi_gpu.c), kept for later calls on the same matrix. */
    void *shards;
    void (*free_shards)(struct sr_matrix_s *A);
    /* The host's sampled-product tiles' fill (entries a touched 64 x 64 tile, src/cpu/cpu_sddmm_tiles.c)
     * times 1024, plus 1; 0 until sampled. Read and written with relaxed atomics. */
    int64_t cpu_tile_fill;
};

/* A matrix with allocated, unset arrays for `capacity` entries; nnz is set to capacity. */
sr_status sr_matrix_alloc(struct sr_context_s *ctx, int64_t nrows, int64_t ncols, int64_t capacity,
                          sr_type type, sr_location where, struct sr_matrix_s **out);
/* Allocates colind/values for a matrix whose rowptr is already filled (nnz = rowptr[nrows]). */
sr_status sr_matrix_alloc_entries(struct sr_matrix_s *A, int64_t capacity);
void sr_matrix_destroy(struct sr_matrix_s *A);

/* Bytes of each array. */
size_t sr_matrix_rowptr_bytes(const struct sr_matrix_s *A);
size_t sr_matrix_colind_bytes(const struct sr_matrix_s *A);
size_t sr_matrix_values_bytes(const struct sr_matrix_s *A);

#ifdef __cplusplus
}
#endif

#endif
