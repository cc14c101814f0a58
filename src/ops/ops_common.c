#include "ops_common.h"

sr_status sr_ops_check_matrix(const char *fn, const struct sr_context_s *ctx, const struct sr_matrix_s *A)
{
    SR_CHECK_ARG(ctx != NULL, "%s: the context is NULL", fn);
    SR_CHECK_ARG(A != NULL, "%s: the matrix is NULL", fn);
    SR_CHECK_ARG(A->location == SR_HOST || A->ctx->device == ctx->device,
                 "%s: the matrix lives on CUDA device %d, but the context uses device %d", fn, A->ctx->device,
                 ctx->device);
    return SR_SUCCESS;
}
