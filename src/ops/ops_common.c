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

sr_status sr_ops_check_graph_output(const char *fn, sr_graph_mode mode, sr_type type)
{
    SR_CHECK_ARG(mode == SR_GRAPH_CONNECTIVITY || mode == SR_GRAPH_DISTANCE, "%s: unknown mode %d", fn, (int)mode);
    SR_CHECK_ARG(type == SR_TYPE_FLOAT32 || type == SR_TYPE_FLOAT64,
                 "%s: the distance type must be float32 or float64, not %s", fn, sr_type_name(type));
    return SR_SUCCESS;
}
