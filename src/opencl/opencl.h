/* The OpenCL backend: the value-free (Boolean) operations as OpenCL kernels (kernels/bool.cl,
 * embedded at build time and compiled when a context opens a device, once per device and
 * process). An OpenCL context keeps its matrices in host memory: each call moves its operands to
 * the device and its result back. Every other operation of an OpenCL context runs on the CPU
 * backend. Without OpenCL headers and an ICD loader at build time, no_opencl.c answers
 * SR_ERROR_NO_DEVICE. */
#ifndef SR_OPENCL_H
#define SR_OPENCL_H

#include "../core/matrix.h"
#include "../semiring/semiring.h"

#ifdef __cplusplus
extern "C" {
#endif

/* true when this build has the OpenCL backend. */
bool sr_opencl_built(void);
/* Opens OpenCL device `device` (GPUs and accelerators first, then the rest, in platform order)
 * for a context: its program is built on first use and kept for the process. *state is what the
 * context keeps; close it with sr_opencl_close. */
sr_status sr_opencl_open(int device, void **state);
void sr_opencl_close(void *state);

/* The Boolean operations on host matrices of an OpenCL context; shapes and masks are checked by
 * the callers (src/ops), as for the other backends. */
sr_status sr_ocl_mxm_bool(struct sr_context_s *ctx, const struct sr_matrix_s *A, const struct sr_matrix_s *B,
                          const struct sr_matrix_s *mask, bool complement, struct sr_matrix_s **C);
sr_status sr_ocl_ewise_bool(struct sr_context_s *ctx, const struct sr_matrix_s *A, const struct sr_matrix_s *B,
                            const struct sr_matrix_s *mask, bool complement, sr_merge merge, struct sr_matrix_s **C);
sr_status sr_ocl_kronecker_bool(struct sr_context_s *ctx, const struct sr_matrix_s *A, const struct sr_matrix_s *B,
                                struct sr_matrix_s **C);
sr_status sr_ocl_extract_bool(struct sr_context_s *ctx, const struct sr_matrix_s *A, int64_t row0, int64_t col0,
                              int64_t nrows, int64_t ncols, struct sr_matrix_s **C);
sr_status sr_ocl_reduce_rows_bool(struct sr_context_s *ctx, const struct sr_matrix_s *A, struct sr_matrix_s **v);
/* AT: allocated by the caller with A's shape transposed and A->nnz entries. */
sr_status sr_ocl_transpose_bool(struct sr_context_s *ctx, const struct sr_matrix_s *A, struct sr_matrix_s *AT);

#ifdef __cplusplus
}
#endif

#endif
