/* Ridge regression on the fused pattern (sr_ridge in sparsering.h): conjugate gradient on the
 * normal equations, every product with XᵀX one sr_fused_pattern call, which reads X once. CG
 * (Jacobi-preconditioned by default) keeps its vectors and numbers where X lives (sr_vector_*,
 * float64, device scalars on the GPU), so a step never waits for the device. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/memory.h"
#include "../core/queued.h"
#include "solver.h"

/* CG's vectors, kept where X lives (sr_vector_*): on the device, a step moves no vector over the
 * bus; only the two dot products come back, as numbers. */
enum { R_B, R_R, R_P, R_Q, R_X, R_BR, R_XBAR, R_Z, R_VECTORS };
typedef struct {
    sr_dense v[R_VECTORS]; /* b = Xcᵀyc, residual r, direction p, q = (XcᵀXc + λI)p, iterate x, b + r,
                            * mean row, preconditioned residual z */
    sr_matrix jacobi;      /* the preconditioner: diag(XcᵀXc + λI)⁻¹ as an n x n matrix, or NULL */
} ridge_vectors;

static void ridge_free(sr_context ctx, ridge_vectors *rv)
{
    for (int k = 0; k < R_VECTORS; k++)
        sr_vector_free(ctx, &rv->v[k]);
    sr_matrix_free(rv->jacobi);
}

/* sums = α·Mᵀ·1 (α times M's column sums), one pass; M has X's rows. */
static sr_status column_sums(const sr_solver_problem *pr, sr_matrix M, double alpha, const sr_dense *sums)
{
    double *ones = sr_malloc((size_t)(pr->m + 1) * sizeof(double));
    if (!ones)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "sr_ridge: out of host memory");
    for (int64_t i = 0; i < pr->m; i++)
        ones[i] = 1.0;
    sr_dense ov = sr_solver_vec(ones, pr->m);
    sr_status st = sr_fused_pattern(pr->ctx, SR_FORM_XTY, sums, alpha, M, NULL, &ov, 0.0, NULL);
    free(ones);
    return st;
}

/* xbar = Xᵀ·1 / m (the mean row), one pass. */
static sr_status mean_row(const sr_solver_problem *pr, sr_dense *xbar)
{
    return column_sums(pr, pr->X, pr->m ? 1.0 / (double)pr->m : 0.0, xbar);
}

/* The diagonal of XcᵀXc + λI on the host: Σ_i x_ij² (X∘X's column sums; X's own for bool X),
 * less m·xbar_j² when centered. */
static sr_status normal_diagonal(const sr_solver_problem *pr, double lambda, ridge_vectors *rv, bool centered,
                                 double *d)
{
    sr_matrix squares;
    SR_TRY(sr_solver_entry_squares(pr, &squares));
    sr_dense dv = sr_solver_vec(d, pr->n);
    sr_status st = column_sums(pr, squares ? squares : pr->X, 1.0, &dv);
    sr_matrix_free(squares);
    SR_TRY(st);
    double *xbar = centered ? sr_malloc((size_t)(pr->n + 1) * sizeof(double)) : NULL;
    if (centered && !xbar)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "sr_ridge: out of host memory");
    sr_dense xv = sr_solver_vec(xbar, pr->n);
    st = centered ? sr_vector_copy(pr->ctx, &xv, &rv->v[R_XBAR]) : SR_SUCCESS;
    for (int64_t j = 0; j < pr->n && st == SR_SUCCESS; j++)
        d[j] += lambda - (centered ? (double)pr->m * xbar[j] * xbar[j] : 0.0);
    free(xbar);
    return st;
}

/* The Jacobi preconditioner: diag(XcᵀXc + λI)⁻¹ where X lives. A column whose diagonal is not
 * positive (λ = 0 and the column empty or constant) keeps 1. */
static sr_status jacobi_preconditioner(const sr_solver_problem *pr, double lambda, ridge_vectors *rv, bool centered)
{
    double *inverse = sr_malloc((size_t)(pr->n + 1) * sizeof(double));
    if (!inverse)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "sr_ridge: out of host memory");
    sr_status st = normal_diagonal(pr, lambda, rv, centered, inverse);
    for (int64_t j = 0; j < pr->n && st == SR_SUCCESS; j++)
        inverse[j] = inverse[j] > 0 && isfinite(inverse[j]) ? 1.0 / inverse[j] : 1.0;
    if (st == SR_SUCCESS)
        st = sr_solver_diagonal(pr->ctx, pr->n, inverse, sr_algo_where(pr->X), &rv->jacobi);
    free(inverse);
    return st;
}

/* The step's loss and intercept from the vectors: ‖Xc·w − yc‖² + λ‖w‖² = ycᵀyc − (b + r)ᵀw, since
 * (XcᵀXc + λI)w = b − r; b = ybar − xbar·w. */
static sr_status ridge_step(sr_context ctx, ridge_vectors *rv, double yy, double ybar, bool centered,
                            sr_solver_step *step)
{
    double brx, xbx = 0.0;
    SR_TRY(sr_vector_dot(ctx, &rv->v[R_BR], &rv->v[R_X], &brx));
    if (centered)
        SR_TRY(sr_vector_dot(ctx, &rv->v[R_XBAR], &rv->v[R_X], &xbx));
    step->loss = yy - brx;
    step->intercept = centered ? ybar - xbx : 0.0;
    return SR_SUCCESS;
}

/* CG's numbers, kept where the vectors live (float64 scalars: sr_vector_dot_s and the rest), so
 * that a step never waits for the device: the host reads them every few steps
 * (sr_algo_look_every). A step runs scaled by `active` (1 until the stopping rule holds, then 0 for
 * good: sr_vector_and_greater), so the steps queued past the stop change nothing and the answer and
 * step count are those of a loop that tests every step. Without a preconditioner z is r: RZ is RR. */
enum { S_RR, S_RZ, S_PQ, S_ALPHA, S_BETA, S_ACTIVE, S_STEPS, S_ONE, S_NEXT_RR, S_NEXT_RZ, S_XP, S_COUNT };

/* q = (XcᵀXc + λI)·p: one pass over X. With centering (mean row xbar), Xc = X − 1·xbarᵀ gives
 * XcᵀXc·p = XᵀX·p − m·(xbar·p)·xbar, so X is never densified. */
static sr_status normal_product(const sr_solver_problem *pr, double lambda, ridge_vectors *rv, bool centered,
                                sr_algo_scalars *c)
{
    sr_dense *p = &rv->v[R_P], *q = &rv->v[R_Q], *xbar = &rv->v[R_XBAR];
    SR_TRY(sr_fused_pattern_queued(pr->ctx, SR_FORM_XTVXY, q, 1.0, pr->X, NULL, p, lambda, p));
    if (centered) {
        SR_TRY(sr_vector_dot_s(pr->ctx, xbar, p, &c->s[S_XP]));
        SR_TRY(sr_vector_axpby_s(pr->ctx, -(double)pr->m, &c->s[S_XP], xbar, 1.0, NULL, q));
    }
    return SR_SUCCESS;
}

/* z = M⁻¹·r with the Jacobi preconditioner (one pass over its diagonal) and r·z into rz; without
 * one z is r and rz is r·r, already there. */
static sr_status precondition(sr_context ctx, const ridge_vectors *rv, const sr_dense *r, const sr_dense *rz)
{
    if (!rv->jacobi)
        return SR_SUCCESS;
    SR_TRY(sr_fused_pattern_queued(ctx, SR_FORM_XY, &rv->v[R_Z], 1.0, rv->jacobi, NULL, r, 0.0, NULL));
    return sr_vector_dot_s(ctx, r, &rv->v[R_Z], rz);
}

/* One CG step, queued: α = r·z / p·q and β = r'·z' / r·z scaled by `active`, which drops to 0 for
 * good once ‖r‖ <= target (or r·r = 0) or p·q <= 0 (λ = 0 and X rank-deficient along p). */
static sr_status cg_step(const sr_solver_problem *pr, double lambda, double target_rr, bool centered,
                         ridge_vectors *rv, sr_algo_scalars *c)
{
    sr_context ctx = pr->ctx;
    sr_dense *r = &rv->v[R_R], *p = &rv->v[R_P], *q = &rv->v[R_Q], *s = c->s;
    const sr_dense *z = rv->jacobi ? &rv->v[R_Z] : r;
    SR_TRY(normal_product(pr, lambda, rv, centered, c));
    SR_TRY(sr_vector_dot_s(ctx, p, q, &s[S_PQ]));
    SR_TRY(sr_vector_and_greater(ctx, &s[S_ACTIVE], &s[S_PQ], 0.0));
    SR_TRY(sr_vector_divide(ctx, &s[S_ALPHA], &s[S_RZ], &s[S_PQ]));
    SR_TRY(sr_vector_axpby_s(ctx, 1.0, &s[S_ACTIVE], &s[S_ALPHA], 0.0, NULL, &s[S_ALPHA]));
    SR_TRY(sr_vector_axpby_s(ctx, 1.0, &s[S_ACTIVE], &s[S_ONE], 1.0, NULL, &s[S_STEPS]));
    SR_TRY(sr_vector_axpby_s(ctx, 1.0, &s[S_ALPHA], p, 1.0, NULL, &rv->v[R_X]));
    SR_TRY(sr_vector_axpby_s(ctx, -1.0, &s[S_ALPHA], q, 1.0, NULL, r));
    SR_TRY(sr_vector_axpby_s(ctx, -1.0, &s[S_ALPHA], q, 1.0, NULL, &rv->v[R_BR]));
    SR_TRY(sr_vector_dot_s(ctx, r, r, &s[S_NEXT_RR]));
    SR_TRY(precondition(ctx, rv, r, &s[S_NEXT_RZ]));
    SR_TRY(sr_vector_divide(ctx, &s[S_BETA], &s[S_NEXT_RZ], &s[S_RZ]));
    SR_TRY(sr_vector_axpby_s(ctx, 1.0, &s[S_ACTIVE], &s[S_BETA], 0.0, NULL, &s[S_BETA]));
    SR_TRY(sr_vector_axpby_s(ctx, 1.0, &s[S_ACTIVE], z, 1.0, &s[S_BETA], p)); /* p = z + β·p */
    SR_TRY(sr_vector_copy(ctx, &s[S_RR], &s[S_NEXT_RR]));
    if (rv->jacobi)
        SR_TRY(sr_vector_copy(ctx, &s[S_RZ], &s[S_NEXT_RZ]));
    /* the stopping rule at the step's end, so that a look right after it sees the stop */
    return sr_vector_and_greater(ctx, &s[S_ACTIVE], &s[S_RR], target_rr);
}

/* CG on (XcᵀXc + λI)·x = b from x = 0, all in rv, preconditioned when rv->jacobi is set (then
 * z = M⁻¹r steers the directions; the stopping rule stays on ‖r‖: r·r <= (tol·‖b‖)²). *step
 * follows the iterations; with a report callback the host looks after every step. */
static sr_status ridge_cg(const sr_solver_problem *pr, double lambda, const sr_solver_options *o, int max_it,
                          double yy, double ybar, double t0, ridge_vectors *rv, sr_solver_step *step, const char *fn)
{
    sr_context ctx = pr->ctx;
    sr_dense *b = &rv->v[R_B], *r = &rv->v[R_R];
    const sr_location where = sr_algo_where(pr->X);
    sr_algo_scalars c;
    memset(&c, 0, sizeof c);
    c.seen[S_ACTIVE] = c.seen[S_ONE] = 1.0;
    sr_status st = sr_algo_scalars_alloc(ctx, where, S_COUNT, &c);
    if (!rv->jacobi) { /* z is r */
        c.s[S_RZ] = c.s[S_RR];
        c.s[S_NEXT_RZ] = c.s[S_NEXT_RR];
    }
    if (st == SR_SUCCESS)
        st = sr_vector_copy(ctx, r, b);
    if (st == SR_SUCCESS)
        st = sr_vector_axpby(ctx, 2.0, b, 0.0, &rv->v[R_BR]);
    if (st == SR_SUCCESS)
        st = sr_vector_dot_s(ctx, r, r, &c.s[S_RR]);
    if (st == SR_SUCCESS)
        st = precondition(ctx, rv, r, &c.s[S_RZ]);
    if (st == SR_SUCCESS)
        st = sr_vector_copy(ctx, &rv->v[R_P], rv->jacobi ? &rv->v[R_Z] : r);
    if (st == SR_SUCCESS)
        st = sr_algo_scalars_look(ctx, &c);
    const double target = o->tolerance * sqrt(c.seen[S_RR]);
    if (!(c.seen[S_RR] > target * target))
        c.seen[S_ACTIVE] = 0; /* r = b: no step (the steps test their ends) */
    *step = (sr_solver_step){0, 0, yy, 2 * sqrt(c.seen[S_RR]), sr_algo_now() - t0, ybar};
    const int every = sr_algo_look_every(where, o->report != NULL);
    for (int queued = 0; st == SR_SUCCESS && queued < max_it && c.seen[S_ACTIVE] != 0;) {
        for (int k = 0; k < every && queued < max_it && st == SR_SUCCESS; k++, queued++)
            st = cg_step(pr, lambda, target * target, o->fit_intercept, rv, &c);
        const int before = (int)c.seen[S_STEPS];
        if (st == SR_SUCCESS)
            st = sr_algo_scalars_look(ctx, &c);
        const int it = (int)c.seen[S_STEPS];
        if (st != SR_SUCCESS || it == before)
            break;
        *step = (sr_solver_step){it, it, 0.0, 2 * sqrt(c.seen[S_RR]), sr_algo_now() - t0, 0.0};
        if (o->report) {
            st = ridge_step(ctx, rv, yy, ybar, o->fit_intercept, step);
            if (st == SR_SUCCESS)
                st = sr_solver_report(o, step, fn);
        }
    }
    sr_vector_free(ctx, &c.all);
    SR_TRY(st);
    return ridge_step(ctx, rv, yy, ybar, o->fit_intercept, step);
}

sr_status sr_ridge(sr_context ctx, sr_matrix X, const sr_dense *y, double lambda, const sr_solver_options *options,
                   const sr_dense *w, sr_solver_step *last)
{
    const char *fn = "sr_ridge";
    const double t0 = sr_algo_now();
    const sr_solver_options o = options ? *options : sr_solver_options_default();
    SR_CHECK_ARG(isfinite(lambda) && lambda >= 0, "%s: lambda (%g) must be finite and >= 0", fn, lambda);
    SR_TRY(sr_solver_check_options(fn, &o));
    sr_solver_problem pr;
    SR_TRY(sr_solver_start(fn, ctx, X, y, w, &pr));
    const int64_t n = pr.n, m = pr.m;
    /* scipy's cg default (scikit-learn's sparse_cg): 10·n steps; ill-conditioned text data needs
     * past 1000 (1,453 for the PyPI bag of words at λ = 1) */
    const int max_it = o.max_iterations ? o.max_iterations : (int)(n < INT_MAX / 10 ? (n > 10 ? 10 * n : 100) : INT_MAX);
    const double *yd = y->data;
    double ybar = 0, yy = 0;
    for (int64_t i = 0; i < m && o.fit_intercept; i++)
        ybar += yd[i] / (double)m;
    for (int64_t i = 0; i < m; i++)
        yy += (yd[i] - ybar) * (yd[i] - ybar);
    ridge_vectors rv;
    memset(&rv, 0, sizeof rv);
    const sr_location where = sr_algo_where(pr.X);
    sr_status st = SR_SUCCESS;
    const bool jacobi = sr_solver_preconditioned(&o);
    for (int k = 0; k < R_VECTORS && st == SR_SUCCESS; k++)
        if ((k != R_XBAR || o.fit_intercept) && (k != R_Z || jacobi))
            st = sr_vector_alloc(ctx, n, SR_TYPE_FLOAT64, where, &rv.v[k]);
    if (st == SR_SUCCESS) /* b = Xᵀ·y (centered: − m·ybar·xbar, as 1ᵀ(y − ybar) = 0) */
        st = sr_fused_pattern(ctx, SR_FORM_XTY, &rv.v[R_B], 1.0, pr.X, NULL, y, 0.0, NULL);
    if (st == SR_SUCCESS && o.fit_intercept)
        st = mean_row(&pr, &rv.v[R_XBAR]);
    if (st == SR_SUCCESS && o.fit_intercept)
        st = sr_vector_axpby(ctx, -(double)m * ybar, &rv.v[R_XBAR], 1.0, &rv.v[R_B]);
    if (st == SR_SUCCESS && jacobi)
        st = jacobi_preconditioner(&pr, lambda, &rv, o.fit_intercept);
    sr_solver_step step = {0, 0, yy, 0.0, 0.0, ybar};
    if (st == SR_SUCCESS) {
        st = ridge_cg(&pr, lambda, &o, max_it, yy, ybar, t0, &rv, &step, fn);
        /* w takes the iterate, also when a report stopped the run; a failure before CG leaves it alone */
        sr_status copied = sr_vector_copy(ctx, w, &rv.v[R_X]);
        st = st != SR_SUCCESS ? st : copied;
    }
    if (last)
        *last = step;
    ridge_free(ctx, &rv);
    sr_matrix_free(pr.owned);
    return st;
}

