/* Checks shared by the public entry points in src/ops. */
#ifndef SR_OPS_COMMON_H
#define SR_OPS_COMMON_H

#include "../core/error.h"
#include "../core/keep_rule.h"
#include "../core/matrix.h"
#include "../core/validate.h"
#include "../semiring/semiring.h"

/* "device" or "host", for messages. */
const char *sr_ops_place(sr_location where);

/* A batched call's answer to a failed batch of *rows rows: when the device ran out of memory
 * (a cudaMalloc refused: another process took memory, or the workspace limit is above what is
 * free) and the batch has more than one row, halves *rows and returns true: the caller frees its
 * batch buffers and runs the same rows again in the smaller batches. Otherwise false: s is the
 * call's answer (SR_ERROR_DEVICE_OUT_OF_MEMORY only when not even one row fits). */
bool sr_ops_batch_shrinks(sr_status s, int64_t *rows);

/* The work on A goes to the OpenCL backend: ctx is an OpenCL context and A a host bool matrix
 * (the backend's Boolean kernels; an OpenCL context runs everything else on the CPU backend). */
bool sr_ops_on_opencl(const struct sr_context_s *ctx, const struct sr_matrix_s *A);

/* ctx and A are usable together: both non-NULL, and a device matrix is on ctx's device. */
sr_status sr_ops_check_matrix(const char *fn, const struct sr_context_s *ctx, const struct sr_matrix_s *A);

/* A graph's mode is known and its distance type is float32 or float64 (k-NN and radius graphs). */
sr_status sr_ops_check_graph_output(const char *fn, sr_graph_mode mode, sr_type type);

/* A new CSR matrix, where the dense view lives, of the view's elements that the rule keeps. */
sr_status sr_ops_dense_to_csr(struct sr_context_s *ctx, const sr_dense *dense, const sr_keep_rule *rule,
                              struct sr_matrix_s **out);

/* The descriptor's fields, all false for NULL. */
sr_descriptor sr_ops_descriptor(const sr_descriptor *desc);
/* The same for a call whose output is a sparse matrix or a dense view, where replace is refused. */
sr_status sr_ops_plain_descriptor(const char *fn, const sr_descriptor *desc, sr_descriptor *d);
/* sr_mxm's operands A ⊕.⊗ B (or B^T): the semiring takes A's type (its output type in *out), B has
 * A's type and place, and the inner sizes agree (src/ops/products.c). */
sr_status sr_ops_check_mxm_operands(const char *fn, sr_semiring s, const struct sr_matrix_s *A,
                                    const struct sr_matrix_s *B, bool transpose_b, sr_type *out);
/* d is a valid contiguous n x 1 view (sr_vector_view's shape) named `name` in messages; n < 0
 * takes any length. */
sr_status sr_ops_check_vector(const char *fn, const char *name, const sr_dense *d, int64_t n);
/* A structural mask (may be NULL) fits an output of nrows x ncols computed where A lives. */
sr_status sr_ops_check_mask(const char *fn, const struct sr_context_s *ctx, const struct sr_matrix_s *mask,
                            const struct sr_matrix_s *A, int64_t nrows, int64_t ncols);
/* With accumulate, *C must hold a matrix of the output's shape and type where the work runs:
 * *old receives it (else NULL). */
sr_status sr_ops_accumulator(const char *fn, const struct sr_context_s *ctx, struct sr_matrix_s *const *C,
                             bool accumulate, int64_t nrows, int64_t ncols, sr_type type, sr_location where,
                             struct sr_matrix_s **old);
/* Hands a new result T to the caller: *C = T, or with `old` *C = old ⊕ T by the semiring's ⊕
 * (old is freed then). T is always consumed; on failure *C and old are untouched. */
sr_status sr_ops_finish(struct sr_context_s *ctx, struct sr_matrix_s **C, struct sr_matrix_s *T,
                        struct sr_matrix_s *old, sr_semiring s);
/* An element-wise merge on the backend where A lives (sr_cpu_ewise / sr_cuda_ewise). */
sr_status sr_ops_ewise(struct sr_context_s *ctx, const struct sr_matrix_s *A, const struct sr_matrix_s *B,
                       const struct sr_matrix_s *mask, bool complement, sr_merge merge, sr_semiring s,
                       struct sr_matrix_s **C);

/* A dense view in `where`: the caller's own if it is there already, else a packed copy (copied in
 * when `copy_in`). *owned is what to free afterwards (NULL for the caller's own). */
sr_status sr_ops_stage_dense(struct sr_context_s *ctx, const sr_dense *v, sr_location where, bool copy_in,
                             sr_dense *staged, void **owned, size_t *owned_bytes);

/* A dense operand as the kernels read it: packed row-major in `where` (the caller's own array
 * when it is already so, else a copy: moved, transposed or unpadded). Release it after use. */
typedef struct sr_staged_rows {
    const void *data;
    void *owned;
    size_t bytes;
    sr_location where;
} sr_staged_rows;
sr_status sr_ops_stage_rows(struct sr_context_s *ctx, const sr_dense *v, sr_location where, sr_staged_rows *r);
void sr_ops_release_rows(struct sr_context_s *ctx, sr_staged_rows *r);

#endif
