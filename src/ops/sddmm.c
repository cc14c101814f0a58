/* Public sampled products (SDDMM and the fused SDDMM→SpMM): checks, staging of the dense operands
 * as packed row-major arrays beside S, dispatch. */
#include <math.h>
#include <string.h>

#include "../core/memory.h"
#include "../core/sddmm.h"
#include "../core/types.h"
#include "../cpu/cpu.h"
#include "../cuda/cuda.h"
#include "multi_gpu.h"
#include "ops_common.h"

/* The checks every sampled product makes; fills everything of *a but the data pointers. */
static sr_status check_operands(const char *fn, struct sr_context_s *ctx, sr_semiring s, double alpha, double beta,
                                const struct sr_matrix_s *S, const sr_dense *A, const sr_dense *B, bool fused,
                                const sr_descriptor *desc, sr_sddmm_args *a)
{
    SR_TRY(sr_ops_check_matrix(fn, ctx, S));
    SR_TRY(sr_check_dense(fn, A));
    SR_TRY(sr_check_dense(fn, B));
    SR_CHECK_ARG(A->type == B->type, "%s: A has type %s but B has type %s", fn, sr_type_name(A->type),
                 sr_type_name(B->type));
    SR_CHECK_ARG(A->type != SR_TYPE_BOOL, "%s: dense A and B must be int32, float32 or float64, not bool", fn);
    SR_CHECK_ARG(A->ncols == B->ncols, "%s: A is %lld x %lld but B is %lld x %lld (both need K columns)", fn,
                 (long long)A->nrows, (long long)A->ncols, (long long)B->nrows, (long long)B->ncols);
    SR_CHECK_ARG(A->nrows == S->nrows && B->nrows == S->ncols,
                 "%s: S is %lld x %lld, so A needs %lld rows and B %lld (they have %lld and %lld)", fn,
                 (long long)S->nrows, (long long)S->ncols, (long long)S->nrows, (long long)S->ncols,
                 (long long)A->nrows, (long long)B->nrows);
    SR_CHECK_ARG(isfinite(alpha) && isfinite(beta), "%s: alpha (%g) and beta (%g) must be finite", fn, alpha, beta);
    sr_type out;
    SR_TRY(sr_semiring_output_type(s, A->type, &out));
    if (fused)
        SR_CHECK_ARG(out == SR_TYPE_FLOAT32 || out == SR_TYPE_FLOAT64,
                     "%s: the fused product is float32 or float64, not %s", fn, sr_type_name(out));
    SR_CHECK_ARG(S->type == SR_TYPE_BOOL || S->type == out,
                 "%s: S has type %s; it must be bool or the output type %s", fn, sr_type_name(S->type),
                 sr_type_name(out));
    sr_descriptor d = sr_ops_descriptor(desc);
    SR_CHECK_ARG(!d.mask_complement && !d.transpose_b && !d.replace && (fused || !d.accumulate),
                 "%s: of the descriptor only sample_pattern, precision%s apply", fn, fused ? " and accumulate" : "");
    SR_CHECK_ARG(d.precision == SR_PRECISION_EXACT || d.precision == SR_PRECISION_TF32 ||
                     d.precision == SR_PRECISION_FLOAT32,
                 "%s: unknown precision %d", fn, (int)d.precision);
    memset(a, 0, sizeof *a);
    a->S = S;
    a->K = A->ncols;
    a->in_type = A->type;
    a->out_type = out;
    a->semiring = s;
    a->alpha = alpha;
    a->beta = beta;
    a->pattern = d.sample_pattern || S->type == SR_TYPE_BOOL;
    a->precision = d.precision;
    return SR_SUCCESS;
}

/* Runs the sampled product into `out` (S->nnz values where S lives). */
static sr_status run_sddmm(struct sr_context_s *ctx, sr_sddmm_args *a, const sr_dense *A, const sr_dense *B, void *out)
{
    if (a->S->nnz == 0)
        return SR_SUCCESS;
    const sr_location where = a->S->location;
    if (where == SR_DEVICE && sr_multi_applies(ctx, a->S) && sr_multi_sddmm_pays(ctx, a, A, B))
        return sr_multi_sddmm(ctx, a, A, B, out);
    sr_staged_rows ra, rb;
    SR_TRY(sr_ops_stage_rows(ctx, A, where, &ra));
    sr_status st = sr_ops_stage_rows(ctx, B, where, &rb);
    if (st == SR_SUCCESS) {
        a->A = ra.data;
        a->B = rb.data;
        st = where == SR_DEVICE ? sr_cuda_sddmm(a, out) : sr_cpu_sddmm(a, out);
        sr_ops_release_rows(ctx, &rb);
    }
    sr_ops_release_rows(ctx, &ra);
    return st;
}

sr_status sr_sddmm_values(sr_context ctx, const sr_dense *values, sr_semiring s, double alpha, sr_matrix S,
                          const sr_dense *A, const sr_dense *B, double beta, const sr_descriptor *desc)
{
    const char *fn = "sr_sddmm_values";
    sr_sddmm_args a;
    SR_TRY(check_operands(fn, ctx, s, alpha, beta, S, A, B, false, desc, &a));
    SR_TRY(sr_ops_check_vector(fn, "values", values, S->nnz));
    SR_CHECK_ARG(values->type == a.out_type, "%s: values have type %s but %s on %s gives %s", fn,
                 sr_type_name(values->type), sr_semiring_name(s), sr_type_name(A->type), sr_type_name(a.out_type));
    sr_dense here;
    void *owned;
    size_t bytes;
    SR_TRY(sr_ops_stage_dense(ctx, values, S->location, false, &here, &owned, &bytes));
    sr_status st = run_sddmm(ctx, &a, A, B, here.data);
    if (st == SR_SUCCESS && owned)
        st = sr_mem_copy(ctx, values->data, values->location, here.data, S->location,
                         (size_t)S->nnz * sr_type_size(a.out_type));
    sr_mem_free(ctx, S->location, owned, bytes);
    return st;
}

sr_status sr_sddmm(sr_context ctx, sr_matrix *C, sr_semiring s, double alpha, sr_matrix S, const sr_dense *A,
                   const sr_dense *B, double beta, const sr_descriptor *desc)
{
    const char *fn = "sr_sddmm";
    SR_CHECK_ARG(C != NULL, "%s: the output pointer is NULL", fn);
    sr_sddmm_args a;
    SR_TRY(check_operands(fn, ctx, s, alpha, beta, S, A, B, false, desc, &a));
    struct sr_matrix_s *T = NULL;
    SR_TRY(sr_matrix_alloc(ctx, S->nrows, S->ncols, S->nnz, a.out_type, S->location, &T));
    sr_status st = sr_mem_copy(ctx, T->rowptr, S->location, S->rowptr, S->location, sr_matrix_rowptr_bytes(S));
    if (st == SR_SUCCESS && S->nnz > 0)
        st = sr_mem_copy(ctx, T->colind, S->location, S->colind, S->location, (size_t)S->nnz * sizeof(int32_t));
    if (st == SR_SUCCESS)
        st = run_sddmm(ctx, &a, A, B, T->values);
    if (st != SR_SUCCESS) {
        sr_matrix_destroy(T);
        return st;
    }
    *C = T;
    return SR_SUCCESS;
}

sr_status sr_sddmm_spmm(sr_context ctx, const sr_dense *O, double alpha, sr_matrix S, const sr_dense *A,
                        const sr_dense *B, const sr_dense *V, sr_row_normalize normalize, const sr_descriptor *desc)
{
    const char *fn = "sr_sddmm_spmm";
    sr_sddmm_args a;
    SR_TRY(check_operands(fn, ctx, SR_PLUS_TIMES, alpha, 0.0, S, A, B, true, desc, &a));
    SR_TRY(sr_check_dense(fn, V));
    SR_TRY(sr_check_dense(fn, O));
    SR_CHECK_ARG(normalize == SR_NORMALIZE_NONE || normalize == SR_NORMALIZE_SOFTMAX, "%s: unknown normalization %d",
                 fn, (int)normalize);
    SR_CHECK_ARG(V->type == A->type && O->type == A->type, "%s: V (%s) and O (%s) must have A's type %s", fn,
                 sr_type_name(V->type), sr_type_name(O->type), sr_type_name(A->type));
    SR_CHECK_ARG(V->nrows == S->ncols, "%s: S has %lld columns but V has %lld rows", fn, (long long)S->ncols,
                 (long long)V->nrows);
    SR_CHECK_ARG(O->nrows == S->nrows && O->ncols == V->ncols, "%s: O is %lld x %lld but the product is %lld x %lld",
                 fn, (long long)O->nrows, (long long)O->ncols, (long long)S->nrows, (long long)V->ncols);
    const bool accumulate = sr_ops_descriptor(desc).accumulate;
    const sr_location where = S->location;
    sr_dense here;
    void *o_owned;
    size_t o_bytes;
    SR_TRY(sr_ops_stage_dense(ctx, O, where, accumulate, &here, &o_owned, &o_bytes));
    sr_staged_rows ra = {0}, rb = {0}, rv = {0};
    sr_status st = sr_ops_stage_rows(ctx, A, where, &ra);
    if (st == SR_SUCCESS)
        st = sr_ops_stage_rows(ctx, B, where, &rb);
    if (st == SR_SUCCESS)
        st = sr_ops_stage_rows(ctx, V, where, &rv);
    if (st == SR_SUCCESS) {
        a.A = ra.data;
        a.B = rb.data;
        const bool rows = here.layout == SR_ROW_MAJOR;
        const sr_sddmm_out out = {here.data, rows ? here.ld : 1, rows ? 1 : here.ld};
        st = where == SR_DEVICE ? sr_cuda_sddmm_spmm(&a, rv.data, V->ncols, &out, normalize, accumulate)
                                : sr_cpu_sddmm_spmm(&a, rv.data, V->ncols, &out, normalize, accumulate);
    }
    if (st == SR_SUCCESS && o_owned) {
        const size_t es = sr_type_size(O->type);
        const int64_t outer = O->layout == SR_ROW_MAJOR ? O->nrows : O->ncols;
        const int64_t inner = O->layout == SR_ROW_MAJOR ? O->ncols : O->nrows;
        st = sr_mem_copy2d(ctx, O->data, (size_t)O->ld * es, O->location, here.data, (size_t)here.ld * es, where,
                           (size_t)inner * es, (size_t)outer);
    }
    sr_ops_release_rows(ctx, &rv);
    sr_ops_release_rows(ctx, &rb);
    sr_ops_release_rows(ctx, &ra);
    sr_mem_free(ctx, where, o_owned, o_bytes);
    return st;
}
