/* Products left in row blocks on the GPUs that made them (sr_mxm_row_blocks): the public handle
 * over src/ops/multi_gpu.c's parts, and the one-block form every other context gives. */
#include "../core/context.h"
#include "../core/error.h"
#include "../core/matrix.h"
#include "../core/memory.h"
#include "../semiring/semiring.h"
#include "multi_gpu.h"
#include "ops_common.h"

struct sr_row_blocks_s {
    struct sr_context_s *ctx; /* retained: the blocks' contexts are ctx or its peers */
    int count;
    int64_t nrows, ncols;
    int64_t row0[SR_MAX_DEVICES + 1]; /* block g: rows [row0[g], row0[g + 1]) */
    struct sr_matrix_s *block[SR_MAX_DEVICES];
};

sr_status sr_row_blocks_free(sr_row_blocks C)
{
    if (C == NULL)
        return SR_SUCCESS;
    for (int g = 0; g < C->count; g++)
        sr_matrix_destroy(C->block[g]);
    struct sr_context_s *ctx = C->ctx;
    sr_mem_free(ctx, SR_HOST, C, sizeof *C);
    sr_context_release(ctx);
    return SR_SUCCESS;
}

sr_status sr_mxm_row_blocks(sr_context ctx, sr_row_blocks *C, sr_semiring s, sr_matrix A, sr_matrix B)
{
    const char *fn = "sr_mxm_row_blocks";
    SR_CHECK_ARG(C != NULL, "%s: the output pointer is NULL", fn);
    *C = NULL;
    SR_TRY(sr_ops_check_matrix(fn, ctx, A));
    SR_TRY(sr_ops_check_matrix(fn, ctx, B));
    sr_type out;
    SR_TRY(sr_ops_check_mxm_operands(fn, s, A, B, false, &out));
    struct sr_row_blocks_s *R = NULL;
    SR_TRY(sr_mem_alloc(ctx, SR_HOST, sizeof *R, (void **)&R));
    *R = (struct sr_row_blocks_s){ctx, 0, A->nrows, B->ncols, {0}, {NULL}};
    sr_context_retain(ctx);
    sr_status st;
    if (sr_multi_applies(ctx, A)) { /* A on the device, and B with it */
        st = sr_multi_mxm_parts(ctx, A, B, s, R->block, R->row0);
        R->count = st == SR_SUCCESS ? ctx->ndevices : 0;
    } else { /* one block, sr_mxm's product */
        st = sr_mxm(ctx, &R->block[0], NULL, s, A, B, NULL);
        R->count = st == SR_SUCCESS ? 1 : 0;
        R->row0[1] = A->nrows;
    }
    if (st != SR_SUCCESS) {
        sr_row_blocks_free(R);
        return st;
    }
    *C = R;
    return SR_SUCCESS;
}

int sr_row_blocks_count(sr_row_blocks C) { return C ? C->count : 0; }

sr_status sr_row_blocks_get(sr_row_blocks C, int g, sr_matrix *block, int64_t *first_row)
{
    SR_CHECK_ARG(C != NULL, "sr_row_blocks_get: the row blocks are NULL");
    SR_CHECK_ARG(g >= 0 && g < C->count, "sr_row_blocks_get: block %d of %d", g, C->count);
    if (block)
        *block = C->block[g];
    if (first_row)
        *first_row = C->row0[g];
    return SR_SUCCESS;
}

sr_context sr_row_blocks_context(sr_row_blocks C, int g)
{
    return C && g >= 0 && g < C->count ? C->block[g]->ctx : NULL;
}

sr_status sr_row_blocks_gather(sr_row_blocks C, sr_matrix *out)
{
    SR_CHECK_ARG(C != NULL && out != NULL, "sr_row_blocks_gather: the row blocks or the output pointer is NULL");
    if (C->count == 1)
        return sr_matrix_copy_to(C->ctx, C->block[0], C->block[0]->location, out);
    return sr_multi_stack_rows(C->ctx, C->block, C->row0, C->nrows, C->ncols, out);
}
