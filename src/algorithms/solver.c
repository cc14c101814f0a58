/* What the regression solvers share (solver.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/memory.h"
#include "solver.h"

sr_solver_options sr_solver_options_default(void)
{
    sr_solver_options o;
    memset(&o, 0, sizeof o);
    o.tolerance = 1e-10;
    o.max_iterations = 0; /* the solver's own default */
    return o;
}

sr_status sr_solver_start(const char *fn, sr_context ctx, sr_matrix X, const sr_dense *y, const sr_dense *w,
                          sr_solver_problem *p)
{
    memset(p, 0, sizeof *p);
    SR_CHECK_ARG(ctx != NULL && X != NULL, "%s: the context or X is NULL", fn);
    sr_matrix_info info;
    SR_TRY(sr_matrix_get_info(X, &info));
    SR_CHECK_ARG(info.type != SR_TYPE_INT32, "%s: X must be float32, float64 or bool (cast int32 first)", fn);
    SR_CHECK_ARG(y && y->location == SR_HOST && y->type == SR_TYPE_FLOAT64 && y->nrows == info.nrows &&
                     y->ncols == 1 && (y->layout == SR_COL_MAJOR || y->ld == 1) && (y->data || info.nrows == 0),
                 "%s: y must be a host float64 vector of %lld (sr_vector_view)", fn, (long long)info.nrows);
    SR_CHECK_ARG(w && w->location == SR_HOST && w->type == SR_TYPE_FLOAT64 && w->nrows == info.ncols &&
                     w->ncols == 1 && (w->layout == SR_COL_MAJOR || w->ld == 1) && (w->data || info.ncols == 0),
                 "%s: w must be a host float64 vector of %lld (sr_vector_view)", fn, (long long)info.ncols);
    SR_TRY(sr_algo_refuse_nonfinite_vector(fn, "y", y->data, info.nrows));
    SR_TRY(sr_algo_refuse_nonfinite(fn, "X", ctx, X));
    p->ctx = ctx;
    p->X = X;
    p->m = info.nrows;
    p->n = info.ncols;
    if (info.type == SR_TYPE_FLOAT32) {
        SR_TRY(sr_matrix_cast(ctx, X, SR_TYPE_FLOAT64, &p->owned));
        p->X = p->owned;
    }
    return SR_SUCCESS;
}

sr_status sr_solver_check_options(const char *fn, const sr_solver_options *o)
{
    SR_CHECK_ARG(o->tolerance >= 0 && o->max_iterations >= 0, "%s: negative tolerance or max_iterations", fn);
    SR_CHECK_ARG(o->preconditioner == SR_PRECONDITIONER_JACOBI || o->preconditioner == SR_PRECONDITIONER_NONE,
                 "%s: unknown preconditioner %d", fn, (int)o->preconditioner);
    return SR_SUCCESS;
}

sr_status sr_solver_entry_squares(const sr_solver_problem *pr, sr_matrix *squares)
{
    *squares = NULL;
    sr_matrix_info info;
    SR_TRY(sr_matrix_get_info(pr->X, &info));
    if (info.type == SR_TYPE_BOOL)
        return SR_SUCCESS;
    return sr_ewise_mult(pr->ctx, squares, NULL, SR_PLUS_TIMES, pr->X, pr->X, NULL);
}

sr_status sr_solver_report(const sr_solver_options *o, const sr_solver_step *step, const char *fn)
{
    if (o->report && o->report(step, o->report_user) != 0)
        return sr_error(SR_ERROR_CANCELLED, "%s: stopped by the report callback after iteration %d", fn,
                        step->iteration);
    return SR_SUCCESS;
}

sr_status sr_solver_diagonal(sr_context ctx, int64_t n, const double *values, sr_location where, sr_matrix *out)
{
    *out = NULL;
    int64_t *rowptr = sr_malloc((size_t)(n + 1) * sizeof(int64_t));
    int32_t *colind = sr_malloc((size_t)(n + 1) * sizeof(int32_t));
    sr_status st = rowptr && colind ? SR_SUCCESS : sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory");
    for (int64_t j = 0; j <= n && st == SR_SUCCESS; j++) {
        rowptr[j] = j;
        if (j < n)
            colind[j] = (int32_t)j;
    }
    sr_matrix host = NULL;
    if (st == SR_SUCCESS)
        st = sr_matrix_from_csr(ctx, &host, n, n, SR_TYPE_FLOAT64, rowptr, colind, values, SR_HOST);
    if (st == SR_SUCCESS && where != SR_HOST) {
        st = sr_matrix_copy_to(ctx, host, where, out);
        sr_matrix_free(host);
    } else {
        *out = host;
    }
    free(rowptr), free(colind);
    return st;
}

