/* Core's device API when sparsering is built without CUDA: no device, clear messages. */
#include "../core/device_api.h"
#include "../core/error.h"
#include "cuda.h"

static sr_status no_cuda(void)
{
    return sr_error(SR_ERROR_NO_DEVICE, "this build of sparsering has no CUDA support (rebuild with nvcc on PATH)");
}

bool sr_device_built(void) { return false; }
sr_status sr_device_check(int device) { (void)device; return no_cuda(); }
sr_status sr_device_count(int *count) { *count = 0; return SR_SUCCESS; }
sr_status sr_device_stream_create(int device, void **stream) { (void)device; *stream = NULL; return no_cuda(); }
void sr_device_stream_destroy(int device, void *stream) { (void)device; (void)stream; }
sr_status sr_device_synchronize(int device, void *stream) { (void)device; (void)stream; return SR_SUCCESS; }
sr_status sr_device_malloc(int device, void *stream, size_t bytes, void **ptr)
{
    (void)device; (void)stream; (void)bytes;
    *ptr = NULL;
    return no_cuda();
}
void sr_device_free(int device, void *stream, void *ptr) { (void)device; (void)stream; (void)ptr; }
sr_status sr_device_free_bytes(int device, size_t *free_bytes) { (void)device; *free_bytes = 0; return no_cuda(); }
sr_status sr_device_memcpy_queued(int device, void *stream, void *dst, const void *src, size_t bytes)
{
    (void)device; (void)stream; (void)dst; (void)src; (void)bytes;
    return no_cuda();
}
sr_status sr_device_memcpy(int device, void *stream, void *dst, sr_location dst_loc, const void *src,
                           sr_location src_loc, size_t bytes)
{
    (void)device; (void)stream; (void)dst; (void)dst_loc; (void)src; (void)src_loc; (void)bytes;
    return no_cuda();
}
sr_status sr_device_memcpy2d(int device, void *stream, void *dst, size_t dst_pitch, sr_location dst_loc,
                             const void *src, size_t src_pitch, sr_location src_loc, size_t width, size_t rows)
{
    (void)device; (void)stream; (void)dst; (void)dst_pitch; (void)dst_loc; (void)src; (void)src_pitch;
    (void)src_loc; (void)width; (void)rows;
    return no_cuda();
}

/* The kernels: unreachable without device matrices, which cannot be made here. */
sr_status sr_cuda_check_csr(struct sr_context_s *ctx, const int64_t *rowptr, const int32_t *colind, int64_t nrows,
                            int64_t ncols, int64_t nnz)
{
    (void)ctx; (void)rowptr; (void)colind; (void)nrows; (void)ncols; (void)nnz;
    return no_cuda();
}
sr_status sr_cuda_expand_rows(const struct sr_matrix_s *A, int64_t *rows) { (void)A; (void)rows; return no_cuda(); }
sr_status sr_cuda_coo_to_csr(struct sr_context_s *ctx, int64_t nrows, int64_t ncols, sr_type type, int64_t nnz,
                             const int64_t *rows, const int32_t *cols, const void *vals, sr_duplicates dup,
                             struct sr_matrix_s **out)
{
    (void)ctx; (void)nrows; (void)ncols; (void)type; (void)nnz; (void)rows; (void)cols; (void)vals; (void)dup;
    (void)out;
    return no_cuda();
}
sr_status sr_cuda_transpose(const struct sr_matrix_s *A, struct sr_matrix_s *AT) { (void)A; (void)AT; return no_cuda(); }
sr_status sr_cuda_csr_to_dense(const struct sr_matrix_s *A, const sr_dense *d) { (void)A; (void)d; return no_cuda(); }
sr_status sr_cuda_dense_to_csr(struct sr_context_s *ctx, const sr_dense *d, const sr_keep_rule *rule,
                               struct sr_matrix_s **out)
{
    (void)ctx; (void)d; (void)rule; (void)out;
    return no_cuda();
}
sr_status sr_cuda_cast_values(const struct sr_matrix_s *A, struct sr_matrix_s *B) { (void)A; (void)B; return no_cuda(); }
sr_status sr_cuda_spmv_plan(struct sr_matrix_s *A, sr_spmv_plan_info *info)
{
    (void)A; (void)info;
    return no_cuda();
}
sr_status sr_cuda_spmm(const struct sr_matrix_s *A, const sr_dense *B, const sr_dense *C, const struct sr_matrix_s *mask,
                       sr_semiring s, bool complement, bool accumulate, bool queued)
{
    (void)A; (void)B; (void)C; (void)mask; (void)s; (void)complement; (void)accumulate; (void)queued;
    return no_cuda();
}
sr_status sr_cuda_user_compile_check(sr_semiring s, int arch, size_t *cubin_bytes)
{
    (void)s; (void)arch; (void)cubin_bytes;
    return no_cuda();
}
sr_status sr_cuda_user_metric_compile_check(sr_metric m, int arch, size_t *cubin_bytes)
{
    (void)m; (void)arch; (void)cubin_bytes;
    return no_cuda();
}
sr_status sr_cuda_mxm(struct sr_context_s *ctx, const struct sr_matrix_s *A, const struct sr_matrix_s *B,
                      const struct sr_matrix_s *mask, bool complement, sr_semiring s, sr_type out_type,
                      struct sr_matrix_s **C)
{
    (void)ctx; (void)A; (void)B; (void)mask; (void)complement; (void)s; (void)out_type; (void)C;
    return no_cuda();
}
sr_status sr_cuda_ewise(struct sr_context_s *ctx, const struct sr_matrix_s *A, const struct sr_matrix_s *B,
                        const struct sr_matrix_s *mask, bool complement, sr_merge merge, sr_semiring s,
                        struct sr_matrix_s **C)
{
    (void)ctx; (void)A; (void)B; (void)mask; (void)complement; (void)merge; (void)s; (void)C;
    return no_cuda();
}

sr_status sr_cuda_distance_norms(const struct sr_matrix_s *A, sr_metric metric, double p, double *norms)
{
    (void)A; (void)metric; (void)p; (void)norms;
    return no_cuda();
}
sr_status sr_cuda_first_bad_row(const struct sr_matrix_s *A, bool nonnegative, int64_t *row)
{
    (void)A; (void)nonnegative; (void)row;
    return no_cuda();
}
sr_status sr_cuda_distance_rows(const sr_distance_inputs *in, int64_t q0, int64_t q1, const sr_strided_out *out)
{
    (void)in; (void)q0; (void)q1; (void)out;
    return no_cuda();
}
sr_status sr_cuda_select_rows(struct sr_context_s *ctx, const void *block, sr_type type, int64_t rows, int64_t n,
                              int64_t ld, int64_t k, bool largest, int64_t *idx, int64_t ld_idx,
                              const sr_strided_out *dist)
{
    (void)ctx; (void)block; (void)type; (void)rows; (void)n; (void)ld; (void)k; (void)largest; (void)idx;
    (void)ld_idx; (void)dist;
    return no_cuda();
}
sr_status sr_cuda_magnitude_order(const struct sr_matrix_s *A, int32_t *col, void *abs, int32_t *rank)
{
    (void)A; (void)col; (void)abs; (void)rank;
    return no_cuda();
}
sr_status sr_cuda_user_union_order(const struct sr_matrix_s *A, sr_metric metric, double p, bool query_side,
                                   int32_t *col, double *key)
{
    (void)A; (void)metric; (void)p; (void)query_side; (void)col; (void)key;
    return no_cuda();
}
sr_status sr_cuda_knn_overlap_rows(const sr_distance_inputs *in, int64_t q0, int64_t q1, int64_t k, int64_t *idx,
                                   const sr_strided_out *dist, bool *taken)
{
    (void)in; (void)q0; (void)q1; (void)k; (void)idx; (void)dist;
    *taken = false;
    return no_cuda();
}
bool sr_cuda_knn_tiles_apply(const sr_distance_inputs *in, int64_t k)
{
    (void)in; (void)k;
    return false;
}
size_t sr_cuda_knn_tiles_scratch_per_row(const sr_distance_inputs *in, int64_t k)
{
    (void)in; (void)k;
    return 0;
}
bool sr_cuda_radius_tiles_apply(const sr_distance_inputs *in)
{
    (void)in;
    return false;
}
sr_status sr_cuda_radius_tiles_rows(const sr_distance_inputs *in, int64_t q0, int64_t q1, const sr_keep_rule *rule,
                                    int64_t capacity, struct sr_matrix_s **piece, int64_t *pairs)
{
    (void)in; (void)q0; (void)q1; (void)rule; (void)capacity;
    *piece = NULL;
    *pairs = 0;
    return no_cuda();
}
sr_status sr_cuda_knn_tiles_rows(const sr_distance_inputs *in, int64_t q0, int64_t q1, int64_t k, int64_t *idx,
                                 const sr_strided_out *dist)
{
    (void)in; (void)q0; (void)q1; (void)k; (void)idx; (void)dist;
    return no_cuda();
}
sr_status sr_cuda_knn_panel_plan(const sr_distance_inputs *in, int64_t k, sr_precision precision,
                                 sr_cuda_panel **panel)
{
    (void)in; (void)k; (void)precision;
    *panel = NULL;
    return SR_SUCCESS;
}
size_t sr_cuda_knn_panel_scratch_per_row(const sr_cuda_panel *panel, const sr_distance_inputs *in, int64_t k)
{
    (void)panel; (void)in; (void)k;
    return 0;
}
sr_status sr_cuda_knn_panel_rows(sr_cuda_panel *panel, const sr_distance_inputs *in, int64_t q0, int64_t q1,
                                 int64_t k, int64_t *idx, const sr_strided_out *dist)
{
    (void)panel; (void)in; (void)q0; (void)q1; (void)k; (void)idx; (void)dist;
    return no_cuda();
}
void sr_cuda_knn_panel_free(sr_cuda_panel *panel) { (void)panel; }
size_t sr_cuda_select_scratch_per_row(int64_t n, int64_t k, sr_type type)
{
    (void)n; (void)k; (void)type;
    return 0;
}

sr_status sr_cuda_mxm_bits(struct sr_context_s *ctx, const struct sr_matrix_s *A, const sr_bits *Y, const sr_bits *mask,
                           const sr_bits *X, const sr_bits_update *u, int64_t *count)
{
    (void)ctx; (void)A; (void)Y; (void)mask; (void)X; (void)u; (void)count;
    return no_cuda();
}
sr_status sr_cuda_bits_or(struct sr_context_s *ctx, const sr_bits *Y, const sr_bits *X, int64_t *count)
{
    (void)ctx; (void)Y; (void)X; (void)count;
    return no_cuda();
}
sr_status sr_cuda_bits_zero(struct sr_context_s *ctx, const sr_bits *X)
{
    (void)ctx; (void)X;
    return no_cuda();
}
sr_status sr_cuda_bits_from_matrix(struct sr_context_s *ctx, const struct sr_matrix_s *A, const sr_bits *X)
{
    (void)ctx; (void)A; (void)X;
    return no_cuda();
}
sr_status sr_cuda_matrix_from_bits(struct sr_context_s *ctx, const sr_bits *X, struct sr_matrix_s **A)
{
    (void)ctx; (void)X; (void)A;
    return no_cuda();
}
sr_status sr_cuda_kronecker(struct sr_context_s *ctx, const struct sr_matrix_s *A, const struct sr_matrix_s *B,
                            sr_semiring s, struct sr_matrix_s **C)
{
    (void)ctx; (void)A; (void)B; (void)s; (void)C;
    return no_cuda();
}
sr_status sr_cuda_extract(struct sr_context_s *ctx, const struct sr_matrix_s *A, int64_t row0, int64_t col0,
                          int64_t nrows, int64_t ncols, struct sr_matrix_s **C)
{
    (void)ctx; (void)A; (void)row0; (void)col0; (void)nrows; (void)ncols; (void)C;
    return no_cuda();
}
sr_status sr_cuda_reduce_rows(struct sr_context_s *ctx, const struct sr_matrix_s *A, sr_semiring s,
                              struct sr_matrix_s **v)
{
    (void)ctx; (void)A; (void)s; (void)v;
    return no_cuda();
}
sr_status sr_cuda_dense_row_major(struct sr_context_s *ctx, const sr_dense *d, void *out)
{
    (void)ctx; (void)d; (void)out;
    return no_cuda();
}
sr_status sr_cuda_sddmm(const sr_sddmm_args *a, void *out)
{
    (void)a; (void)out;
    return no_cuda();
}
sr_status sr_cuda_sddmm_spmm(const sr_sddmm_args *a, const void *V, int64_t p, const sr_sddmm_out *O,
                             sr_row_normalize normalize, bool accumulate)
{
    (void)a; (void)V; (void)p; (void)O; (void)normalize; (void)accumulate;
    return no_cuda();
}
sr_status sr_cuda_fused(struct sr_context_s *ctx, const sr_fused_args *a)
{
    (void)ctx; (void)a;
    return no_cuda();
}
sr_status sr_cuda_zero(struct sr_context_s *ctx, void *data, size_t bytes)
{
    (void)ctx; (void)data; (void)bytes;
    return no_cuda();
}
sr_status sr_cuda_vector_dot(struct sr_context_s *ctx, const sr_dense *x, const sr_dense *y, double *result)
{
    (void)ctx; (void)x; (void)y; (void)result;
    return no_cuda();
}
sr_status sr_cuda_vector_axpby(struct sr_context_s *ctx, double alpha, const sr_dense *x, double beta, const sr_dense *y)
{
    (void)ctx; (void)alpha; (void)x; (void)beta; (void)y;
    return no_cuda();
}
sr_status sr_cuda_vector_dot_s(struct sr_context_s *ctx, const sr_dense *x, const sr_dense *y, const sr_dense *s)
{
    (void)ctx; (void)x; (void)y; (void)s;
    return no_cuda();
}
sr_status sr_cuda_vector_axpby_s(struct sr_context_s *ctx, double alpha, const void *a, const sr_dense *x, double beta,
                                 const void *b, const sr_dense *y)
{
    (void)ctx; (void)alpha; (void)a; (void)x; (void)beta; (void)b; (void)y;
    return no_cuda();
}
sr_status sr_cuda_vector_divide(struct sr_context_s *ctx, const sr_dense *z, const sr_dense *x, const sr_dense *y)
{
    (void)ctx; (void)z; (void)x; (void)y;
    return no_cuda();
}
sr_status sr_cuda_vector_and_greater(struct sr_context_s *ctx, const sr_dense *flag, const sr_dense *x,
                                     double threshold)
{
    (void)ctx; (void)flag; (void)x; (void)threshold;
    return no_cuda();
}
bool sr_cuda_multi_nccl(void) { return false; }
sr_status sr_cuda_multi_moves(struct sr_context_s *ctx, const sr_cuda_move *moves, int n)
{
    (void)ctx; (void)moves; (void)n;
    return no_cuda();
}
sr_status sr_cuda_multi_broadcast(struct sr_context_s *ctx, const void *src, void *const *dst, size_t bytes)
{
    (void)ctx; (void)src; (void)dst; (void)bytes;
    return no_cuda();
}
sr_status sr_cuda_shift(struct sr_context_s *ctx, int64_t *data, int64_t n, int64_t delta)
{
    (void)ctx; (void)data; (void)n; (void)delta;
    return no_cuda();
}
sr_status sr_cuda_row_flops(const struct sr_matrix_s *A, const struct sr_matrix_s *B, int64_t *prefix)
{
    (void)A; (void)B; (void)prefix;
    return no_cuda();
}
sr_status sr_cuda_merge_topk(struct sr_context_s *ctx, const int64_t *cidx, const void *cdist,
                             const sr_topk_parts *parts, int64_t rows, int64_t k, sr_type type, bool largest,
                             int64_t *out_idx, const sr_strided_out *out_dist)
{
    (void)ctx; (void)cidx; (void)cdist; (void)parts; (void)rows; (void)k; (void)type; (void)largest; (void)out_idx;
    (void)out_dist;
    return no_cuda();
}
sr_status sr_cuda_concat_columns(struct sr_context_s *ctx, const struct sr_matrix_s *const *parts, int n,
                                 const int64_t *col0, bool drop_diagonal, struct sr_matrix_s **out)
{
    (void)ctx; (void)parts; (void)n; (void)col0; (void)drop_diagonal; (void)out;
    return no_cuda();
}
sr_status sr_cuda_sddmm_strategy(const sr_sddmm_args *a, sr_sddmm_strategy *strategy)
{
    (void)a; (void)strategy;
    return no_cuda();
}
