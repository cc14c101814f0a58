/* A context over several GPUs (sr_context_options.ndevices > 1): the calls that spread their work
 * over the GPUs by row blocks (src/ops/multi_gpu.c). The caller's matrices live on the first GPU;
 * each GPU runs its block through its own one-GPU context (ctx->peers[g]) with the one-GPU code,
 * and the blocks' answers are put together on the first GPU, equal to the one-GPU call's. */
#ifndef SR_OPS_MULTI_GPU_H
#define SR_OPS_MULTI_GPU_H

#include "../core/matrix.h"
#include "../core/sddmm.h"

/* ctx spans several GPUs and A lives on them (a device matrix). */
bool sr_multi_applies(const struct sr_context_s *ctx, const struct sr_matrix_s *A);

/* sr_knn's work (checked by it) over the GPUs: the index cut into row blocks of about equal
 * nonzeros (kept with it), every GPU's k nearest among its block, merged by (distance, row). */
sr_status sr_multi_knn(struct sr_context_s *ctx, struct sr_matrix_s *index, struct sr_matrix_s *queries, int64_t k,
                       sr_metric metric, double metric_arg, int64_t *indices, const sr_dense *distances,
                       const sr_knn_options *options);
/* sr_radius_neighbors' (queries NULL: the index against itself, leaving out (i, i) unless
 * include_self). */
sr_status sr_multi_radius(struct sr_context_s *ctx, struct sr_matrix_s *index, struct sr_matrix_s *queries,
                          double radius, sr_metric metric, double metric_arg, const sr_radius_options *options,
                          struct sr_matrix_s **R);
/* Whether the sampled product of a (A and B the caller's views) is faster over the GPUs: operands
 * on the host are read by each GPU for itself, but those on the first GPU must cross to the
 * others, at about a tenth of the speed the kernel reads them at: a byte model decides
 * (SPARSERING_MULTI_SDDMM=0/1 forces). */
bool sr_multi_sddmm_pays(const struct sr_context_s *ctx, const sr_sddmm_args *a, const sr_dense *A, const sr_dense *B);
/* The sampled product of a (its A and B unset: the caller's views A and B, anywhere) into out
 * (S->nnz values on the first GPU): S's row blocks with the rows of A they need, B on every GPU. */
sr_status sr_multi_sddmm(struct sr_context_s *ctx, const sr_sddmm_args *a, const sr_dense *A, const sr_dense *B,
                         void *out);
/* *C = A ⊕.⊗ B (no mask): A's row blocks of about equal multiply-adds, B on every GPU, C's rows
 * put together on the first GPU. */
sr_status sr_multi_mxm(struct sr_context_s *ctx, const struct sr_matrix_s *A, const struct sr_matrix_s *B,
                       sr_semiring s, struct sr_matrix_s **C);
/* The same product left on the GPUs: parts[g] (a matrix of GPU g's context, ctx->peers[g]) holds
 * rows [row0[g], row0[g+1]) of C. */
sr_status sr_multi_mxm_parts(struct sr_context_s *ctx, const struct sr_matrix_s *A, const struct sr_matrix_s *B,
                             sr_semiring s, struct sr_matrix_s **parts, int64_t *row0);
/* *C on the first GPU = parts[0..ndevices) (as sr_multi_mxm_parts left them) one under the other. */
sr_status sr_multi_stack_rows(struct sr_context_s *ctx, struct sr_matrix_s *const *parts, const int64_t *row0,
                              int64_t nrows, int64_t ncols, struct sr_matrix_s **C);

#endif
