/* What the regression solvers share (sr_ridge in ridge.c, sr_logistic in logistic.c): the problem
 * (X where it lives, in float64), the options' checks, the progress report, and the diagonal
 * matrices through which they scale vectors elementwise on the public API. */
#ifndef SR_SOLVER_H
#define SR_SOLVER_H

#include "algo_util.h"

/* A host float64 vector view of n. */
static inline sr_dense sr_solver_vec(double *x, int64_t n) { return sr_vector_view(x, n, SR_TYPE_FLOAT64, SR_HOST); }

/* The problem both solvers share: X (float64 or bool) where it lives, and its shape. */
typedef struct {
    sr_context ctx;
    sr_matrix X;     /* the caller's, or a float64 copy */
    sr_matrix owned; /* that copy, to free */
    int64_t m, n;
} sr_solver_problem;

/* Checks X, y (m host float64) and w (n host float64) and fills *p (fn names the caller). */
sr_status sr_solver_start(const char *fn, sr_context ctx, sr_matrix X, const sr_dense *y, const sr_dense *w,
                          sr_solver_problem *p);
sr_status sr_solver_check_options(const char *fn, const sr_solver_options *o);
/* Whether the solver's CG takes its diagonal preconditioner (on every backend). */
static inline bool sr_solver_preconditioned(const sr_solver_options *o)
{
    return o->preconditioner == SR_PRECONDITIONER_JACOBI;
}
/* *squares = X∘X for the diagonals of XᵀX and of the Hessian; NULL for bool X, whose own entries
 * (all 1) are their squares. */
sr_status sr_solver_entry_squares(const sr_solver_problem *pr, sr_matrix *squares);
/* The report callback, if any: SR_ERROR_CANCELLED when it asks to stop. */
sr_status sr_solver_report(const sr_solver_options *o, const sr_solver_step *step, const char *fn);
/* diag(values) as an n x n matrix in `where` (*out), so that diag(values)·y is one X·y pass of it
 * (sr_fused_pattern, SR_FORM_XY): the solvers' elementwise scaling, on the public API. */
sr_status sr_solver_diagonal(sr_context ctx, int64_t n, const double *values, sr_location where, sr_matrix *out);

#endif
