/* sr_spmv_plan: argument checks and dispatch to the side A lives on. */
#include "../cpu/cpu.h"
#include "../cuda/cuda.h"
#include "ops_common.h"

sr_status sr_spmv_plan(sr_context ctx, sr_matrix A, sr_spmv_plan_info *info)
{
    SR_TRY(sr_ops_check_matrix("sr_spmv_plan", ctx, A));
    sr_spmv_plan_info found;
    SR_TRY(A->location == SR_DEVICE ? sr_cuda_spmv_plan(A, &found) : sr_cpu_spmv_plan(A, &found));
    if (info)
        *info = found;
    return SR_SUCCESS;
}

sr_status sr_spmv_plan_free(sr_context ctx, sr_matrix A)
{
    SR_TRY(sr_ops_check_matrix("sr_spmv_plan_free", ctx, A));
    if (A->free_spmv_plan)
        A->free_spmv_plan(A);
    return SR_SUCCESS;
}
