/* The trust region's truncated CG (Steihaug; LIBLINEAR's, with its preconditioner) with its
 * vectors and numbers where X lives: every dot product goes to a float64 scalar beside the vectors
 * (sr_vector_dot_s and the rest), so a step never waits for the device; the host looks at the
 * numbers every few steps (sr_algo_look_every), as ridge's CG does. A step runs scaled by a go-on
 * flag, so the steps queued past the stop change nothing, and the step that crosses the trust
 * region's boundary is taken back on the device and finished on the boundary by the host (once
 * per CG: a quadratic's root). On the host backend a look is free and comes after every step. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "../core/queued.h"
#include "logistic.h"

/* The CG's numbers (float64 scalars where X lives): r·z, the next r·z, dir·H·dir and its negation,
 * the step α, α taken back, M-norm² of s, the flags (go on, stopped = 1 − go on, crossed the
 * boundary this step, crossed it at all), steps taken, 1, β, Σd (the intercept's Hessian entry),
 * the boundary's three products, then each vector's intercept entry. */
enum {
    C_RR, C_NEXT, C_CURVE, C_NEG_CURVE, C_ALPHA, C_UNDO, C_SS, C_OUT, C_ACTIVE, C_STOPPED, C_HIT, C_STEPS,
    C_ONE, C_BETA, C_SUM_D, C_STD, C_STS, C_DD, C_B, C_COUNT = C_B + T_VECTORS
};

/* out = x·y, intercepts included. */
static sr_status tr_dot(const sr_logistic_state *lg, const sr_tr_vector *x, const sr_tr_vector *y,
                        const sr_dense *out)
{
    SR_TRY(sr_vector_dot_s(lg->pr.ctx, &x->v, &y->v, out));
    return lg->intercept ? sr_vector_axpby_s(lg->pr.ctx, 1.0, &x->b, &y->b, 1.0, NULL, out) : SR_SUCCESS;
}

/* y = (α·a)·x + (β·b)·y on both parts, a and b scalars (NULL: 1); x unread where α·a = 0, y where
 * β·b = 0 (sr_vector_axpby_s). */
static sr_status tr_axpby(const sr_logistic_state *lg, double alpha, const sr_dense *a, const sr_tr_vector *x,
                          double beta, const sr_dense *b, const sr_tr_vector *y)
{
    SR_TRY(sr_vector_axpby_s(lg->pr.ctx, alpha, a, &x->v, beta, b, &y->v));
    return lg->intercept ? sr_vector_axpby_s(lg->pr.ctx, alpha, a, &x->b, beta, b, &y->b) : SR_SUCCESS;
}

/* out = diag(D)·x: the coefficients by one pass of the diagonal matrix D, the intercept times db. */
static sr_status tr_scale(const sr_logistic_state *lg, sr_matrix D, double db, const sr_tr_vector *x,
                          const sr_tr_vector *out)
{
    SR_TRY(sr_fused_pattern_queued(lg->pr.ctx, SR_FORM_XY, &out->v, 1.0, D, NULL, &x->v, 0.0, NULL));
    return lg->intercept ? sr_vector_axpby_s(lg->pr.ctx, db, NULL, &x->b, 0.0, NULL, &out->b) : SR_SUCCESS;
}

/* out = x·M·y with the preconditioner (scratch takes M·y), else x·y. */
static sr_status tr_mdot(const sr_logistic_state *lg, const sr_tr_vector *x, const sr_tr_vector *y,
                         const sr_tr_vector *scratch, const sr_dense *out)
{
    if (!lg->pcg)
        return tr_dot(lg, x, y, out);
    SR_TRY(tr_scale(lg, lg->m_diag, lg->intercept ? lg->m_host[lg->pr.n] : 0.0, y, scratch));
    return tr_dot(lg, x, scratch, out);
}

/* H·(s, sb) = (s + Xᵀ(d ⊙ X·s) + sb·q, q·s + sb·Σd): one pass over X. */
static sr_status hessian_product(const sr_logistic_state *lg, const sr_tr_vector *s, const sr_tr_vector *hs)
{
    sr_context ctx = lg->pr.ctx;
    SR_TRY(sr_fused_pattern_queued(ctx, SR_FORM_XTVXY, &hs->v, 1.0, lg->pr.X, &lg->dw, &s->v, 1.0, &s->v));
    if (!lg->intercept)
        return SR_SUCCESS;
    SR_TRY(sr_vector_axpby_s(ctx, 1.0, &s->b, &lg->qw, 1.0, NULL, &hs->v));
    SR_TRY(sr_vector_dot_s(ctx, &lg->qw, &s->v, &hs->b));
    return sr_vector_axpby_s(ctx, 1.0, &s->b, &lg->c.s[C_SUM_D], 1.0, NULL, &hs->b);
}

/* z = M⁻¹·r and out = z·r with the preconditioner; without, z is r and out = r·r. */
static sr_status precondition_residual(const sr_logistic_state *lg, const sr_tr_vector *r, const sr_tr_vector *z,
                                       const sr_dense *out)
{
    if (lg->pcg)
        SR_TRY(tr_scale(lg, lg->m_inverse, lg->intercept ? 1.0 / lg->m_host[lg->pr.n] : 0.0, r, z));
    return tr_dot(lg, z, r, out);
}

/* to = flag·x (a scalar: x unread where the flag is 0, so NaN there gives 0). */
static sr_status gate(sr_context ctx, const sr_dense *flag, const sr_dense *x, const sr_dense *to)
{
    return sr_vector_axpby_s(ctx, 1.0, flag, x, 0.0, NULL, to);
}

/* One CG step, queued and scaled by the go-on flag, which drops to 0 for good once a direction has
 * no positive finite curvature (the Hessian is positive definite: NaN or overflow, a huge C), the
 * step would leave the trust region (then the step is taken back and HIT set, for the host to
 * finish it on the boundary), or at the step's end ‖r‖ (M⁻¹'s norm) <= tol. The tests compare
 * squares (r·z > tol², s·M·s > δ²) where the host loop compared the roots. */
static sr_status cg_step(const sr_logistic_state *lg, double tol_sq, double delta_sq)
{
    sr_context ctx = lg->pr.ctx;
    const sr_tr_vector *t = lg->tv, *s = &t[T_S], *r = &t[T_R], *dir = &t[T_DIR], *hd = &t[T_HD];
    const sr_tr_vector *z = lg->pcg ? &t[T_Z] : r;
    const sr_dense *c = lg->c.s;
    SR_TRY(hessian_product(lg, dir, hd));
    SR_TRY(sr_vector_axpby_s(ctx, 1.0, &c[C_ACTIVE], &c[C_ONE], 1.0, NULL, &c[C_STEPS]));
    SR_TRY(tr_dot(lg, dir, hd, &c[C_CURVE]));
    SR_TRY(sr_vector_and_greater(ctx, &c[C_ACTIVE], &c[C_CURVE], 0.0));
    SR_TRY(sr_vector_axpby_s(ctx, -1.0, NULL, &c[C_CURVE], 0.0, NULL, &c[C_NEG_CURVE]));
    SR_TRY(sr_vector_and_greater(ctx, &c[C_ACTIVE], &c[C_NEG_CURVE], -DBL_MAX)); /* finite */
    SR_TRY(sr_vector_divide(ctx, &c[C_ALPHA], &c[C_RR], &c[C_CURVE]));
    SR_TRY(gate(ctx, &c[C_ACTIVE], &c[C_ALPHA], &c[C_ALPHA]));
    SR_TRY(tr_axpby(lg, 1.0, &c[C_ALPHA], dir, 1.0, NULL, s));
    SR_TRY(tr_mdot(lg, s, s, &t[T_MX], &c[C_SS]));
    /* past the boundary: OUT for this step, the go-on flag down, s back where it was */
    SR_TRY(sr_vector_copy(ctx, &c[C_OUT], &c[C_ACTIVE]));
    SR_TRY(sr_vector_and_greater(ctx, &c[C_OUT], &c[C_SS], delta_sq));
    SR_TRY(sr_vector_axpby_s(ctx, -1.0, NULL, &c[C_OUT], 1.0, NULL, &c[C_ACTIVE]));
    SR_TRY(sr_vector_axpby_s(ctx, 1.0, NULL, &c[C_OUT], 1.0, NULL, &c[C_HIT]));
    SR_TRY(gate(ctx, &c[C_OUT], &c[C_ALPHA], &c[C_UNDO]));
    SR_TRY(tr_axpby(lg, -1.0, &c[C_UNDO], dir, 1.0, NULL, s));
    SR_TRY(gate(ctx, &c[C_ACTIVE], &c[C_ALPHA], &c[C_ALPHA]));
    SR_TRY(tr_axpby(lg, -1.0, &c[C_ALPHA], hd, 1.0, NULL, r));
    SR_TRY(precondition_residual(lg, r, z, &c[C_NEXT]));
    /* β = next / rr, and 1 once stopped, so that dir = go·z + β·dir keeps the last direction (the
     * boundary's finish reads it) */
    SR_TRY(sr_vector_divide(ctx, &c[C_BETA], &c[C_NEXT], &c[C_RR]));
    SR_TRY(gate(ctx, &c[C_ACTIVE], &c[C_BETA], &c[C_BETA]));
    SR_TRY(sr_vector_copy(ctx, &c[C_STOPPED], &c[C_ONE]));
    SR_TRY(sr_vector_axpby_s(ctx, -1.0, NULL, &c[C_ACTIVE], 1.0, NULL, &c[C_STOPPED]));
    SR_TRY(sr_vector_axpby_s(ctx, 1.0, &c[C_STOPPED], &c[C_ONE], 1.0, NULL, &c[C_BETA]));
    SR_TRY(tr_axpby(lg, 1.0, &c[C_ACTIVE], z, 1.0, &c[C_BETA], dir));
    SR_TRY(sr_vector_copy(ctx, &c[C_RR], &c[C_NEXT])); /* stopped, r is unchanged: the same r·z */
    /* the loop's test, at the step's end: a look after it sees the stop */
    return sr_vector_and_greater(ctx, &c[C_ACTIVE], &c[C_RR], tol_sq);
}

/* The step that crossed the boundary, finished on it: s += τ·dir with ‖s + τ·dir‖ = δ, τ >= 0
 * (the root of a quadratic, in the form that does not cancel), and r −= τ·H·dir. After the stop
 * the queued steps left dir as it was and recomputed H·dir from it. */
static sr_status finish_on_boundary(sr_logistic_state *lg, double delta)
{
    const sr_tr_vector *t = lg->tv, *s = &t[T_S], *dir = &t[T_DIR], *mx = &t[T_MX];
    const sr_dense *c = lg->c.s;
    SR_TRY(tr_mdot(lg, s, dir, mx, &c[C_STD]));
    SR_TRY(tr_mdot(lg, s, s, mx, &c[C_STS]));
    SR_TRY(tr_mdot(lg, dir, dir, mx, &c[C_DD]));
    SR_TRY(sr_algo_scalars_look(lg->pr.ctx, &lg->c));
    const double std = lg->c.seen[C_STD], sts = lg->c.seen[C_STS], dd = lg->c.seen[C_DD];
    const double room = delta * delta - sts, root = sqrt(std * std + dd * room);
    const double tau = std >= 0 ? room / (std + root) : (root - std) / dd;
    SR_TRY(tr_axpby(lg, tau, NULL, dir, 1.0, NULL, s));
    return tr_axpby(lg, -tau, NULL, &t[T_HD], 1.0, NULL, &t[T_R]);
}

/* host[0 .. n) and host[n] (with an intercept) from v. */
static sr_status to_host(const sr_logistic_state *lg, const sr_tr_vector *v, double *host)
{
    sr_dense hv = sr_solver_vec(host, lg->pr.n), hb = sr_solver_vec(host + lg->pr.n, 1);
    SR_TRY(sr_vector_copy(lg->pr.ctx, &hv, &v->v));
    return lg->intercept ? sr_vector_copy(lg->pr.ctx, &hb, &v->b) : SR_SUCCESS;
}

/* g in, the go-on flag up, s = 0, r = −g, z = M⁻¹·r, dir = z, rr = r·z: *rr read on the host. */
static sr_status cg_start(sr_logistic_state *lg, const double *g, double *rr)
{
    sr_context ctx = lg->pr.ctx;
    const sr_tr_vector *t = lg->tv, *z = lg->pcg ? &t[T_Z] : &t[T_R];
    double *seen = lg->c.seen;
    seen[C_ACTIVE] = seen[C_ONE] = 1.0;
    seen[C_STOPPED] = seen[C_HIT] = seen[C_STEPS] = 0.0;
    seen[C_SUM_D] = lg->sum_d;
    seen[C_B + T_G] = lg->intercept ? g[lg->pr.n] : 0.0;
    sr_dense all = sr_solver_vec(seen, C_COUNT), gv = sr_solver_vec((double *)g, lg->pr.n);
    SR_TRY(sr_vector_copy(ctx, &lg->c.all, &all));
    SR_TRY(sr_vector_copy(ctx, &t[T_G].v, &gv));
    SR_TRY(tr_axpby(lg, 0.0, NULL, &t[T_G], 0.0, NULL, &t[T_S]));
    SR_TRY(tr_axpby(lg, -1.0, NULL, &t[T_G], 0.0, NULL, &t[T_R]));
    SR_TRY(precondition_residual(lg, &t[T_R], z, &lg->c.s[C_RR]));
    SR_TRY(tr_axpby(lg, 1.0, NULL, z, 0.0, NULL, &t[T_DIR]));
    SR_TRY(sr_algo_scalars_look(ctx, &lg->c));
    *rr = seen[C_RR];
    return SR_SUCCESS;
}

sr_status sr_logistic_cg(sr_logistic_state *lg, double delta, const double *g, double *s, double *r, int *steps)
{
    double rr;
    SR_TRY(cg_start(lg, g, &rr));
    const double tol = 0.1 * sqrt(rr); /* r·M⁻¹·r: g's norm in M⁻¹'s */
    /* CG ends within N steps in exact arithmetic; rounding (a huge C) can keep the residual above
     * tol for ever, so the steps are capped */
    const int64_t most = sqrt(rr) > tol ? 2 * lg->N + 20 : 0; /* NaN: no step */
    const double delta_sq = isnan(delta) ? INFINITY : delta * delta; /* as sqrt(s·M·s) > NaN: never out */
    const int every = sr_algo_look_every(sr_algo_where(lg->pr.X), false);
    for (int64_t queued = 0; queued < most && lg->c.seen[C_ACTIVE] != 0;) {
        for (int k = 0; k < every && queued < most; k++, queued++)
            SR_TRY(cg_step(lg, tol * tol, delta_sq));
        SR_TRY(sr_algo_scalars_look(lg->pr.ctx, &lg->c));
    }
    *steps += (int)lg->c.seen[C_STEPS];
    if (lg->c.seen[C_HIT] != 0)
        SR_TRY(finish_on_boundary(lg, delta));
    SR_TRY(to_host(lg, &lg->tv[T_S], s));
    return to_host(lg, &lg->tv[T_R], r);
}

sr_status sr_logistic_cg_alloc(sr_logistic_state *lg)
{
    sr_context ctx = lg->pr.ctx;
    const sr_location where = sr_algo_where(lg->pr.X);
    memset(&lg->c, 0, sizeof lg->c);
    SR_TRY(sr_algo_scalars_alloc(ctx, where, C_COUNT, &lg->c));
    for (int k = 0; k < T_VECTORS; k++) {
        SR_TRY(sr_vector_alloc(ctx, lg->pr.n, SR_TYPE_FLOAT64, where, &lg->tv[k].v));
        lg->tv[k].b = lg->c.s[C_B + k];
    }
    return SR_SUCCESS;
}

void sr_logistic_cg_free(sr_logistic_state *lg)
{
    for (int k = 0; k < T_VECTORS; k++)
        sr_vector_free(lg->pr.ctx, &lg->tv[k].v);
    sr_vector_free(lg->pr.ctx, &lg->c.all);
}
