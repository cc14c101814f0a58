/* Ridge and logistic regression on the fused pattern (sr_ridge, sr_logistic in sparsering.h):
 * every product with X and Xᵀ is one sr_fused_pattern call, which reads X once. Ridge's CG
 * (Jacobi-preconditioned by default) and the trust region's truncated CG keep their vectors where
 * X lives (sr_vector_*, float64); the trust region's outer steps (a few per solve) run on the host
 * in float64. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/memory.h"
#include "../core/queued.h"
#include "algo_util.h"

sr_solver_options sr_solver_options_default(void)
{
    sr_solver_options o;
    memset(&o, 0, sizeof o);
    o.tolerance = 1e-10;
    o.max_iterations = 0; /* the solver's own default */
    return o;
}

static sr_dense vec(double *x, int64_t n) { return sr_vector_view(x, n, SR_TYPE_FLOAT64, SR_HOST); }

/* The problem both solvers share: X (float64 or bool) where it lives, and its shape. */
typedef struct {
    sr_context ctx;
    sr_matrix X;     /* the caller's, or a float64 copy */
    sr_matrix owned; /* that copy, to free */
    int64_t m, n;
} problem;

static sr_status start(const char *fn, sr_context ctx, sr_matrix X, const sr_dense *y, const sr_dense *w, problem *p)
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

static sr_status check_options(const char *fn, const sr_solver_options *o)
{
    SR_CHECK_ARG(o->tolerance >= 0 && o->max_iterations >= 0, "%s: negative tolerance or max_iterations", fn);
    SR_CHECK_ARG(o->preconditioner == SR_PRECONDITIONER_JACOBI || o->preconditioner == SR_PRECONDITIONER_NONE,
                 "%s: unknown preconditioner %d", fn, (int)o->preconditioner);
    return SR_SUCCESS;
}

/* Whether the solver's CG takes its diagonal preconditioner (on every backend). */
static bool preconditioned(const sr_solver_options *o)
{
    return o->preconditioner == SR_PRECONDITIONER_JACOBI;
}

/* *squares = X∘X for the diagonals of XᵀX and of the Hessian; NULL for bool X, whose own entries
 * (all 1) are their squares. */
static sr_status entry_squares(const problem *pr, sr_matrix *squares)
{
    *squares = NULL;
    sr_matrix_info info;
    SR_TRY(sr_matrix_get_info(pr->X, &info));
    if (info.type == SR_TYPE_BOOL)
        return SR_SUCCESS;
    return sr_ewise_mult(pr->ctx, squares, NULL, SR_PLUS_TIMES, pr->X, pr->X, NULL);
}

static sr_status report(const sr_solver_options *o, const sr_solver_step *step, const char *fn)
{
    if (o->report && o->report(step, o->report_user) != 0)
        return sr_error(SR_ERROR_CANCELLED, "%s: stopped by the report callback after iteration %d", fn,
                        step->iteration);
    return SR_SUCCESS;
}

/* ------------------------------------------------------------------ ridge */

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
static sr_status column_sums(const problem *pr, sr_matrix M, double alpha, const sr_dense *sums)
{
    double *ones = sr_malloc((size_t)(pr->m + 1) * sizeof(double));
    if (!ones)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "sr_ridge: out of host memory");
    for (int64_t i = 0; i < pr->m; i++)
        ones[i] = 1.0;
    sr_dense ov = vec(ones, pr->m);
    sr_status st = sr_fused_pattern(pr->ctx, SR_FORM_XTY, sums, alpha, M, NULL, &ov, 0.0, NULL);
    free(ones);
    return st;
}

/* xbar = Xᵀ·1 / m (the mean row), one pass. */
static sr_status mean_row(const problem *pr, sr_dense *xbar)
{
    return column_sums(pr, pr->X, pr->m ? 1.0 / (double)pr->m : 0.0, xbar);
}

/* The diagonal of XcᵀXc + λI on the host: Σ_i x_ij² (X∘X's column sums; X's own for bool X),
 * less m·xbar_j² when centered. */
static sr_status normal_diagonal(const problem *pr, double lambda, ridge_vectors *rv, bool centered, double *d)
{
    sr_matrix squares;
    SR_TRY(entry_squares(pr, &squares));
    sr_dense dv = vec(d, pr->n);
    sr_status st = column_sums(pr, squares ? squares : pr->X, 1.0, &dv);
    sr_matrix_free(squares);
    SR_TRY(st);
    double *xbar = centered ? sr_malloc((size_t)(pr->n + 1) * sizeof(double)) : NULL;
    if (centered && !xbar)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "sr_ridge: out of host memory");
    sr_dense xv = vec(xbar, pr->n);
    st = centered ? sr_vector_copy(pr->ctx, &xv, &rv->v[R_XBAR]) : SR_SUCCESS;
    for (int64_t j = 0; j < pr->n && st == SR_SUCCESS; j++)
        d[j] += lambda - (centered ? (double)pr->m * xbar[j] * xbar[j] : 0.0);
    free(xbar);
    return st;
}

/* diag(values) as an n x n matrix in `where` (*out), so that diag(values)·y is one X·y pass of it
 * (sr_fused_pattern, SR_FORM_XY): the solvers' elementwise scaling, on the public API. */
static sr_status diagonal_matrix(sr_context ctx, int64_t n, const double *values, sr_location where, sr_matrix *out)
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

/* The Jacobi preconditioner: diag(XcᵀXc + λI)⁻¹ where X lives. A column whose diagonal is not
 * positive (λ = 0 and the column empty or constant) keeps 1. */
static sr_status jacobi_preconditioner(const problem *pr, double lambda, ridge_vectors *rv, bool centered)
{
    double *inverse = sr_malloc((size_t)(pr->n + 1) * sizeof(double));
    if (!inverse)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "sr_ridge: out of host memory");
    sr_status st = normal_diagonal(pr, lambda, rv, centered, inverse);
    for (int64_t j = 0; j < pr->n && st == SR_SUCCESS; j++)
        inverse[j] = inverse[j] > 0 && isfinite(inverse[j]) ? 1.0 / inverse[j] : 1.0;
    if (st == SR_SUCCESS)
        st = diagonal_matrix(pr->ctx, pr->n, inverse, sr_algo_where(pr->X), &rv->jacobi);
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
static sr_status normal_product(const problem *pr, double lambda, ridge_vectors *rv, bool centered, sr_algo_scalars *c)
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
static sr_status cg_step(const problem *pr, double lambda, double target_rr, bool centered, ridge_vectors *rv,
                         sr_algo_scalars *c)
{
    sr_context ctx = pr->ctx;
    sr_dense *r = &rv->v[R_R], *p = &rv->v[R_P], *q = &rv->v[R_Q], *s = c->s;
    const sr_dense *z = rv->jacobi ? &rv->v[R_Z] : r;
    SR_TRY(normal_product(pr, lambda, rv, centered, c));
    SR_TRY(sr_vector_dot_s(ctx, p, q, &s[S_PQ]));
    SR_TRY(sr_vector_and_greater(ctx, &s[S_ACTIVE], &s[S_RR], target_rr));
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
    return rv->jacobi ? sr_vector_copy(ctx, &s[S_RZ], &s[S_NEXT_RZ]) : SR_SUCCESS;
}

/* CG on (XcᵀXc + λI)·x = b from x = 0, all in rv, preconditioned when rv->jacobi is set (then
 * z = M⁻¹r steers the directions; the stopping rule stays on ‖r‖: r·r <= (tol·‖b‖)²). *step
 * follows the iterations; with a report callback the host looks after every step. */
static sr_status ridge_cg(const problem *pr, double lambda, const sr_solver_options *o, int max_it, double yy,
                          double ybar, double t0, ridge_vectors *rv, sr_solver_step *step, const char *fn)
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
                st = report(o, step, fn);
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
    SR_TRY(check_options(fn, &o));
    problem pr;
    SR_TRY(start(fn, ctx, X, y, w, &pr));
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
    const bool jacobi = preconditioned(&o);
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

/* ------------------------------------------------------------------ logistic (trust-region Newton) */

typedef struct {
    problem pr;
    double C;
    bool intercept;      /* the variables are (w, b): N = n + 1 */
    int64_t N;
    const double *label; /* ±1 */
    double *z, *d, *t;   /* X·w + b, the Hessian's weights C·σ(1 − σ), scratch (m each) */
    sr_dense dw;         /* d where X lives, for the Hessian products */
    sr_dense qw;         /* with an intercept: Xᵀ·d (n) where X lives; with sum_d = Σ d, the */
    double sum_d;        /* intercept's rows of the Hessian */
    /* The truncated CG's preconditioner (Hsia, Chiang and Lin 2018, as LIBLINEAR): M = (1 − a)·I +
     * a·diag(H), a = 0.01, renewed with the Hessian at every accepted step; the trust region is then
     * measured in M's norm. */
    bool pcg;
    sr_matrix squares;           /* X∘X for diag(H) (NULL for bool X: X itself) */
    double *m_host;              /* M's N entries (the intercept's last) */
    sr_matrix m_diag, m_inverse; /* diag(M) and diag(M)⁻¹ of the n coefficients, where X lives */
} logistic;

/* LIBLINEAR's weight of diag(H) in the preconditioner. */
#define PCG_MIX 0.01

/* A vector of the trust region's N variables: the n coefficients where X lives (sr_vector_*, so
 * the truncated CG moves no vector over the bus), the intercept's entry (0 without one) here. */
typedef struct {
    sr_dense v;
    double b;
} tr_vector;

static sr_status tr_dot(sr_context ctx, const tr_vector *x, const tr_vector *y, double *out)
{
    SR_TRY(sr_vector_dot(ctx, &x->v, &y->v, out));
    *out += x->b * y->b;
    return SR_SUCCESS;
}

/* y = α·x + β·y (x unread when α = 0, y when β = 0, as sr_vector_axpby, intercept included). */
static sr_status tr_axpby(sr_context ctx, double alpha, const tr_vector *x, double beta, tr_vector *y)
{
    SR_TRY(sr_vector_axpby(ctx, alpha, &x->v, beta, &y->v));
    y->b = (alpha == 0.0 ? 0.0 : alpha * x->b) + (beta == 0.0 ? 0.0 : beta * y->b);
    return SR_SUCCESS;
}

/* out = diag(D)·x: the coefficients by one pass of the diagonal matrix D, the intercept times db. */
static sr_status tr_scale(sr_context ctx, sr_matrix D, double db, const tr_vector *x, tr_vector *out)
{
    SR_TRY(sr_fused_pattern(ctx, SR_FORM_XY, &out->v, 1.0, D, NULL, &x->v, 0.0, NULL));
    out->b = db * x->b;
    return SR_SUCCESS;
}

/* x·M·y with the preconditioner (scratch takes M·y), else x·y. */
static sr_status tr_mdot(const logistic *lg, const tr_vector *x, const tr_vector *y, tr_vector *scratch, double *out)
{
    if (!lg->pcg)
        return tr_dot(lg->pr.ctx, x, y, out);
    SR_TRY(tr_scale(lg->pr.ctx, lg->m_diag, lg->intercept ? lg->m_host[lg->pr.n] : 0.0, y, scratch));
    return tr_dot(lg->pr.ctx, x, scratch, out);
}

/* host[0 .. n) and host[n] (with an intercept) to or from v. */
static sr_status tr_exchange(const logistic *lg, tr_vector *v, double *host, bool to_host)
{
    sr_dense hv = vec(host, lg->pr.n);
    if (to_host) {
        SR_TRY(sr_vector_copy(lg->pr.ctx, &hv, &v->v));
        if (lg->intercept)
            host[lg->pr.n] = v->b;
    } else {
        SR_TRY(sr_vector_copy(lg->pr.ctx, &v->v, &hv));
        v->b = lg->intercept ? host[lg->pr.n] : 0.0;
    }
    return SR_SUCCESS;
}

/* log(1 + exp(−u)) without overflow. */
static double log1pexp_neg(double u) { return u >= 0 ? log1p(exp(-u)) : -u + log1p(exp(u)); }

/* f(w, b) = ½‖w‖² + C·Σ log(1 + exp(−y_i z_i)), z = X·w + b (kept in lg->z). */
static sr_status objective(logistic *lg, double *w, double *f)
{
    sr_dense wv = vec(w, lg->pr.n), zv = vec(lg->z, lg->pr.m);
    SR_TRY(sr_fused_pattern(lg->pr.ctx, SR_FORM_XY, &zv, 1.0, lg->pr.X, NULL, &wv, 0.0, NULL));
    const double b = lg->intercept ? w[lg->pr.n] : 0.0;
    double loss = 0;
#pragma omp parallel for reduction(+ : loss) schedule(static)
    for (int64_t i = 0; i < lg->pr.m; i++) {
        lg->z[i] += b;
        loss += log1pexp_neg(lg->label[i] * lg->z[i]);
    }
    *f = 0.5 * sr_algo_dot(w, w, lg->pr.n) + lg->C * loss;
    return SR_SUCCESS;
}

/* M = (1 − a)·I + a·diag(H) at the Hessian's current weights d: diag(H) = 1 + (X∘X)ᵀ·d for the
 * coefficients, Σ d for the (unpenalized) intercept; one pass over X∘X. */
static sr_status renew_preconditioner(logistic *lg)
{
    const int64_t n = lg->pr.n;
    sr_dense hv = vec(lg->m_host, n), dv = vec(lg->d, lg->pr.m);
    SR_TRY(sr_fused_pattern(lg->pr.ctx, SR_FORM_XTY, &hv, 1.0, lg->squares ? lg->squares : lg->pr.X, NULL, &dv, 0.0,
                            NULL));
    for (int64_t j = 0; j < n; j++)
        lg->m_host[j] = (1 - PCG_MIX) + PCG_MIX * (1 + lg->m_host[j]);
    if (lg->intercept)
        lg->m_host[n] = (1 - PCG_MIX) + PCG_MIX * lg->sum_d;
    double *inverse = sr_malloc((size_t)(n + 1) * sizeof(double));
    if (!inverse)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "sr_logistic: out of host memory");
    for (int64_t j = 0; j < n; j++)
        inverse[j] = 1.0 / lg->m_host[j];
    sr_matrix_free(lg->m_diag), sr_matrix_free(lg->m_inverse);
    lg->m_diag = lg->m_inverse = NULL;
    const sr_location where = sr_algo_where(lg->pr.X);
    sr_status st = diagonal_matrix(lg->pr.ctx, n, lg->m_host, where, &lg->m_diag);
    if (st == SR_SUCCESS)
        st = diagonal_matrix(lg->pr.ctx, n, inverse, where, &lg->m_inverse);
    free(inverse);
    return st;
}

/* x's norm on the host: in M's norm with the preconditioner, else Euclidean. */
static double tr_norm(const logistic *lg, const double *x)
{
    if (!lg->pcg)
        return sqrt(sr_algo_dot(x, x, lg->N));
    double sum = 0;
    for (int64_t j = 0; j < lg->N; j++)
        sum += lg->m_host[j] * x[j] * x[j];
    return sqrt(sum);
}

/* g = (w + C·Xᵀt, C·Σt), t = (σ(y·z) − 1)·y, and the Hessian's weights (copied where X lives),
 * at the w objective() saw last; with an intercept also q = Xᵀd and Σd. */
static sr_status gradient(logistic *lg, double *w, double *g)
{
    double sum_t = 0, sum_d = 0;
#pragma omp parallel for reduction(+ : sum_t, sum_d) schedule(static)
    for (int64_t i = 0; i < lg->pr.m; i++) {
        const double s = 1.0 / (1.0 + exp(-lg->label[i] * lg->z[i]));
        lg->t[i] = (s - 1.0) * lg->label[i];
        lg->d[i] = lg->C * s * (1.0 - s);
        sum_t += lg->t[i];
        sum_d += lg->d[i];
    }
    sr_dense tv = vec(lg->t, lg->pr.m), gv = vec(g, lg->pr.n), wv = vec(w, lg->pr.n);
    SR_TRY(sr_fused_pattern(lg->pr.ctx, SR_FORM_XTY, &gv, lg->C, lg->pr.X, NULL, &tv, 1.0, &wv));
    sr_dense dv = vec(lg->d, lg->pr.m);
    SR_TRY(sr_vector_copy(lg->pr.ctx, &lg->dw, &dv));
    if (lg->intercept) {
        g[lg->pr.n] = lg->C * sum_t;
        lg->sum_d = sum_d;
        SR_TRY(sr_fused_pattern(lg->pr.ctx, SR_FORM_XTY, &lg->qw, 1.0, lg->pr.X, NULL, &lg->dw, 0.0, NULL));
    }
    return lg->pcg ? renew_preconditioner(lg) : SR_SUCCESS;
}

/* H·(s, sb) = (s + Xᵀ(d ⊙ X·s) + sb·q, q·s + sb·Σd): one pass over X. */
static sr_status hessian_product(logistic *lg, const tr_vector *s, tr_vector *hs)
{
    sr_context ctx = lg->pr.ctx;
    SR_TRY(sr_fused_pattern(ctx, SR_FORM_XTVXY, &hs->v, 1.0, lg->pr.X, &lg->dw, &s->v, 1.0, &s->v));
    hs->b = 0.0;
    if (lg->intercept) {
        double qs;
        SR_TRY(sr_vector_axpby(ctx, s->b, &lg->qw, 1.0, &hs->v));
        SR_TRY(sr_vector_dot(ctx, &lg->qw, &s->v, &qs));
        hs->b = qs + s->b * lg->sum_d;
    }
    return SR_SUCCESS;
}

/* The truncated CG's vectors: its result s, the residual r = −g − H·s, the direction, H·direction,
 * g itself, and with the preconditioner z = M⁻¹·r and a scratch for M·x. */
enum { T_S, T_R, T_DIR, T_HD, T_G, T_Z, T_MX, T_VECTORS };

/* z = M⁻¹·r and z·r with the preconditioner; without, z is r and z·r = r·r. */
static sr_status precondition_residual(const logistic *lg, const tr_vector *r, tr_vector *z, double *zr)
{
    if (lg->pcg)
        SR_TRY(tr_scale(lg->pr.ctx, lg->m_inverse, lg->intercept ? 1.0 / lg->m_host[lg->pr.n] : 0.0, r, z));
    return tr_dot(lg->pr.ctx, z, r, zr);
}

/* Steihaug's truncated CG for H·s = −g inside ‖s‖ <= delta (M's norm with the preconditioner),
 * preconditioned by M when lg->pcg; r receives −g − H·s. */
static sr_status trust_cg(logistic *lg, double delta, tr_vector *t, int *steps)
{
    sr_context ctx = lg->pr.ctx;
    tr_vector *s = &t[T_S], *r = &t[T_R], *dir = &t[T_DIR], *hd = &t[T_HD], *g = &t[T_G];
    tr_vector *z = lg->pcg ? &t[T_Z] : r, *mx = &t[T_MX];
    SR_TRY(tr_axpby(ctx, 0.0, g, 0.0, s));
    SR_TRY(tr_axpby(ctx, -1.0, g, 0.0, r));
    double rr;
    SR_TRY(precondition_residual(lg, r, z, &rr)); /* r·M⁻¹·r: g's norm in M⁻¹'s */
    SR_TRY(tr_axpby(ctx, 1.0, z, 0.0, dir));
    const double tol = 0.1 * sqrt(rr);
    /* CG ends within N steps in exact arithmetic; rounding (a huge C) can keep the residual above
     * tol for ever, so the steps are capped, and a direction without positive curvature (NaN or
     * overflow: the Hessian is positive definite) ends the loop with the step so far */
    const int64_t most = 2 * lg->N + 20;
    for (int64_t it = 0; sqrt(rr) > tol && it < most; it++) {
        SR_TRY(hessian_product(lg, dir, hd));
        (*steps)++;
        double curvature, ss;
        SR_TRY(tr_dot(ctx, dir, hd, &curvature));
        if (!(curvature > 0) || !isfinite(curvature))
            break;
        const double a = rr / curvature;
        SR_TRY(tr_axpby(ctx, a, dir, 1.0, s));
        SR_TRY(tr_mdot(lg, s, s, mx, &ss));
        if (sqrt(ss) > delta) { /* back to the boundary along dir */
            SR_TRY(tr_axpby(ctx, -a, dir, 1.0, s));
            double std, sts, dd;
            SR_TRY(tr_mdot(lg, s, dir, mx, &std));
            SR_TRY(tr_mdot(lg, s, s, mx, &sts));
            SR_TRY(tr_mdot(lg, dir, dir, mx, &dd));
            const double room = delta * delta - sts, root = sqrt(std * std + dd * room);
            const double tau = std >= 0 ? room / (std + root) : (root - std) / dd;
            SR_TRY(tr_axpby(ctx, tau, dir, 1.0, s));
            return tr_axpby(ctx, -tau, hd, 1.0, r);
        }
        SR_TRY(tr_axpby(ctx, -a, hd, 1.0, r));
        double next;
        SR_TRY(precondition_residual(lg, r, z, &next));
        SR_TRY(tr_axpby(ctx, 1.0, z, next / rr, dir));
        rr = next;
    }
    return SR_SUCCESS;
}

/* The CG on the trust region's vectors t (where X lives): g in from the host, s and r back. */
static sr_status trust_step(logistic *lg, double delta, tr_vector *t, double *g, double *s, double *r, int *steps)
{
    SR_TRY(tr_exchange(lg, &t[T_G], g, false));
    SR_TRY(trust_cg(lg, delta, t, steps));
    SR_TRY(tr_exchange(lg, &t[T_S], s, true));
    return tr_exchange(lg, &t[T_R], r, true);
}

sr_status sr_logistic(sr_context ctx, sr_matrix X, const sr_dense *y, double C, const sr_solver_options *options,
                      const sr_dense *w_out, sr_solver_step *last)
{
    const char *fn = "sr_logistic";
    const double t0 = sr_algo_now();
    const sr_solver_options o = options ? *options : sr_solver_options_default();
    SR_CHECK_ARG(isfinite(C) && C > 0, "%s: C (%g) must be finite and > 0", fn, C);
    SR_TRY(check_options(fn, &o));
    logistic lg;
    memset(&lg, 0, sizeof lg);
    SR_TRY(start(fn, ctx, X, y, w_out, &lg.pr));
    const int64_t m = lg.pr.m, n = lg.pr.n, N = n + (o.fit_intercept ? 1 : 0);
    const int max_it = o.max_iterations ? o.max_iterations : 100;
    lg.C = C;
    lg.intercept = o.fit_intercept;
    lg.N = N;
    double *label = sr_malloc((size_t)(m + 1) * sizeof(double));
    lg.z = sr_malloc((size_t)(m + 1) * sizeof(double));
    lg.d = sr_malloc((size_t)(m + 1) * sizeof(double));
    lg.t = sr_malloc((size_t)(m + 1) * sizeof(double));
    double *w = sr_calloc((size_t)N + 1, sizeof(double)), *g = sr_calloc((size_t)N + 1, sizeof(double));
    double *s = sr_calloc((size_t)N + 1, sizeof(double)), *r = sr_calloc((size_t)N + 1, sizeof(double));
    double *trial = sr_calloc((size_t)N + 1, sizeof(double));
    sr_status st = label && lg.z && lg.d && lg.t && w && g && s && r && trial
                       ? SR_SUCCESS
                       : sr_error(SR_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    const sr_location where = sr_algo_where(lg.pr.X);
    lg.pcg = preconditioned(&o);
    if (st == SR_SUCCESS && lg.pcg && !(lg.m_host = sr_calloc((size_t)N + 1, sizeof(double))))
        st = sr_error(SR_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    if (st == SR_SUCCESS && lg.pcg)
        st = entry_squares(&lg.pr, &lg.squares);
    tr_vector t[T_VECTORS];
    memset(t, 0, sizeof t);
    for (int k = 0; k < T_VECTORS && st == SR_SUCCESS; k++)
        st = sr_vector_alloc(ctx, n, SR_TYPE_FLOAT64, where, &t[k].v);
    if (st == SR_SUCCESS)
        st = sr_vector_alloc(ctx, m, SR_TYPE_FLOAT64, where, &lg.dw);
    if (st == SR_SUCCESS && o.fit_intercept)
        st = sr_vector_alloc(ctx, n, SR_TYPE_FLOAT64, where, &lg.qw);
    for (int64_t i = 0; i < m && st == SR_SUCCESS; i++) {
        const double v = ((const double *)y->data)[i];
        if (v != 1.0 && v != -1.0 && v != 0.0)
            st = sr_error(SR_ERROR_INVALID_ARGUMENT, "%s: label %lld is %g; labels are +1 and -1 (or 1 and 0)", fn,
                          (long long)i, v);
        label[i] = v > 0 ? 1.0 : -1.0;
    }
    lg.label = label;
    const bool started = st == SR_SUCCESS; /* the inputs passed: w_out gets the iterate, even on a later failure */
    double f = 0, gnorm = 0, gnorm0 = 0, delta = 0;
    if (st == SR_SUCCESS)
        st = objective(&lg, w, &f);
    if (st == SR_SUCCESS)
        st = gradient(&lg, w, g);
    if (st == SR_SUCCESS) /* g may be missing: an allocation failed */
        gnorm0 = gnorm = delta = sqrt(sr_algo_dot(g, g, N));
    if (lg.pcg && st == SR_SUCCESS) { /* the trust region starts at ‖g‖ in M⁻¹'s norm */
        double gmg = 0;
        for (int64_t j = 0; j < N; j++)
            gmg += g[j] * g[j] / lg.m_host[j];
        delta = sqrt(gmg);
    }
    sr_solver_step step = {0, 0, f, gnorm, sr_algo_now() - t0, 0.0};
    /* the trust region's constants (Lin, Weng and Keerthi 2008, Algorithm 2) */
    const double eta0 = 1e-4, eta1 = 0.25, eta2 = 0.75, sigma1 = 0.25, sigma2 = 0.5, sigma3 = 4.0;
    int it = 1, inner = 0;
    while (st == SR_SUCCESS && it <= max_it && gnorm > o.tolerance * gnorm0 && gnorm > 0) {
        st = trust_step(&lg, delta, t, g, s, r, &inner);
        if (st != SR_SUCCESS)
            break;
        for (int64_t j = 0; j < N; j++)
            trial[j] = w[j] + s[j];
        const double gs = sr_algo_dot(g, s, N), predicted = -0.5 * (gs - sr_algo_dot(s, r, N)), snorm = tr_norm(&lg, s);
        double fnew;
        st = objective(&lg, trial, &fnew);
        if (st != SR_SUCCESS)
            break;
        /* below the objective's rounding (a few ulps of f summed over m terms), f's change is noise:
         * the Newton step is trusted as predicted, so the gradient can reach a tight tolerance */
        const bool in_noise = fabs(predicted) <= 1e-13 * fabs(f);
        const double actual = in_noise ? predicted : f - fnew;
        if (it == 1)
            delta = fmin(delta, snorm);
        const double a = fnew - f - gs <= 0 ? sigma3 : fmax(sigma1, -0.5 * (gs / (fnew - f - gs)));
        if (actual < eta0 * predicted)
            delta = fmin(fmax(a, sigma1) * snorm, sigma2 * delta);
        else if (actual < eta1 * predicted)
            delta = fmax(sigma1 * delta, fmin(a * snorm, sigma2 * delta));
        else if (actual < eta2 * predicted)
            delta = fmax(sigma1 * delta, fmin(a * snorm, sigma3 * delta));
        else
            delta = fmax(delta, fmin(a * snorm, sigma3 * delta));
        if (actual > eta0 * predicted) { /* accept: z is X·trial now */
            memcpy(w, trial, (size_t)N * sizeof(double));
            f = fnew;
            const double before = gnorm;
            st = gradient(&lg, w, g);
            gnorm = sqrt(sr_algo_dot(g, g, N));
            step = (sr_solver_step){it, inner, f, gnorm, sr_algo_now() - t0, o.fit_intercept ? w[n] : 0.0};
            memcpy(w_out->data, w, (size_t)n * sizeof(double));
            if (st == SR_SUCCESS)
                st = report(&o, &step, fn);
            it++;
            if (in_noise && !(gnorm < before)) /* at the precision's limit: no step helps any more */
                break;
        } /* rejected: w, f, g and the Hessian's weights stay; only z holds the trial's X·s */
        if (st == SR_SUCCESS && actual <= 0 && predicted <= 0)
            break; /* no descent left */
    }
    if (started) {
        memcpy(w_out->data, w, (size_t)n * sizeof(double));
        step.intercept = o.fit_intercept ? w[n] : 0.0;
        if (last)
            *last = step;
    }
    free(label), free(lg.z), free(lg.d), free(lg.t);
    free(w), free(g), free(s), free(r), free(trial);
    for (int k = 0; k < T_VECTORS; k++)
        sr_vector_free(ctx, &t[k].v);
    sr_vector_free(ctx, &lg.dw);
    sr_vector_free(ctx, &lg.qw);
    sr_matrix_free(lg.squares), sr_matrix_free(lg.m_diag), sr_matrix_free(lg.m_inverse);
    free(lg.m_host);
    sr_matrix_free(lg.pr.owned);
    return st;
}
