/* The OpenCL backend's entry points in a build without OpenCL: it is never opened, so only the
 * context's questions are answered; the operations are unreachable. */
#include "../core/error.h"
#include "opencl.h"

bool sr_opencl_built(void) { return false; }

sr_status sr_opencl_open(int device, void **state)
{
    (void)device;
    *state = NULL;
    return sr_error(SR_ERROR_NO_DEVICE, "the OpenCL backend was asked for, but this build of sparsering has no "
                    "OpenCL support (rebuild with OpenCL headers and an ICD loader, e.g. Debian's "
                    "ocl-icd-opencl-dev and opencl-c-headers)");
}

void sr_opencl_close(void *state) { (void)state; }

#define SR_NO_OPENCL return sr_error(SR_ERROR_INTERNAL, "an OpenCL operation was reached in a build without OpenCL")

sr_status sr_ocl_mxm_bool(struct sr_context_s *ctx, const struct sr_matrix_s *A, const struct sr_matrix_s *B,
                          const struct sr_matrix_s *mask, bool complement, struct sr_matrix_s **C)
{
    (void)ctx, (void)A, (void)B, (void)mask, (void)complement, (void)C;
    SR_NO_OPENCL;
}
sr_status sr_ocl_ewise_bool(struct sr_context_s *ctx, const struct sr_matrix_s *A, const struct sr_matrix_s *B,
                            const struct sr_matrix_s *mask, bool complement, sr_merge merge, struct sr_matrix_s **C)
{
    (void)ctx, (void)A, (void)B, (void)mask, (void)complement, (void)merge, (void)C;
    SR_NO_OPENCL;
}
sr_status sr_ocl_kronecker_bool(struct sr_context_s *ctx, const struct sr_matrix_s *A, const struct sr_matrix_s *B,
                                struct sr_matrix_s **C)
{
    (void)ctx, (void)A, (void)B, (void)C;
    SR_NO_OPENCL;
}
sr_status sr_ocl_extract_bool(struct sr_context_s *ctx, const struct sr_matrix_s *A, int64_t row0, int64_t col0,
                              int64_t nrows, int64_t ncols, struct sr_matrix_s **C)
{
    (void)ctx, (void)A, (void)row0, (void)col0, (void)nrows, (void)ncols, (void)C;
    SR_NO_OPENCL;
}
sr_status sr_ocl_reduce_rows_bool(struct sr_context_s *ctx, const struct sr_matrix_s *A, struct sr_matrix_s **v)
{
    (void)ctx, (void)A, (void)v;
    SR_NO_OPENCL;
}
sr_status sr_ocl_transpose_bool(struct sr_context_s *ctx, const struct sr_matrix_s *A, struct sr_matrix_s *AT)
{
    (void)ctx, (void)A, (void)AT;
    SR_NO_OPENCL;
}
