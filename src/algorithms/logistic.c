/* Logistic regression by a trust-region Newton method (sr_logistic in sparsering.h; Lin, Weng and
 * Keerthi 2008, as LIBLINEAR): the outer steps (a few per solve) run on the host in float64; the
 * truncated CG inside each (logistic_cg.c) keeps its vectors and numbers where X lives, every
 * Hessian product one sr_fused_pattern call, which reads X once. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/memory.h"
#include "logistic.h"

/* LIBLINEAR's weight of diag(H) in the preconditioner. */
#define PCG_MIX 0.01

/* log(1 + exp(−u)) without overflow. */
static double log1pexp_neg(double u) { return u >= 0 ? log1p(exp(-u)) : -u + log1p(exp(u)); }

typedef struct {
    sr_logistic_state *lg;
    double b;
} loss_terms;

/* z(i) += b and Σ log(1 + exp(−y_i z_i)) over rows [lo, hi). */
static void add_loss(int64_t lo, int64_t hi, void *user, double *sums)
{
    const loss_terms *t = user;
    for (int64_t i = lo; i < hi; i++) {
        t->lg->z[i] += t->b;
        sums[0] += log1pexp_neg(t->lg->label[i] * t->lg->z[i]);
    }
}

/* f(w, b) = ½‖w‖² + C·Σ log(1 + exp(−y_i z_i)), z = X·w + b (kept in lg->z). */
static sr_status objective(sr_logistic_state *lg, double *w, double *f)
{
    sr_dense wv = sr_solver_vec(w, lg->pr.n), zv = sr_solver_vec(lg->z, lg->pr.m);
    SR_TRY(sr_fused_pattern(lg->pr.ctx, SR_FORM_XY, &zv, 1.0, lg->pr.X, NULL, &wv, 0.0, NULL));
    loss_terms terms = {lg, lg->intercept ? w[lg->pr.n] : 0.0};
    double loss;
    sr_algo_sum_ranges(lg->pr.m, 1, add_loss, &terms, &loss);
    *f = 0.5 * sr_algo_dot(w, w, lg->pr.n) + lg->C * loss;
    return SR_SUCCESS;
}

/* M = (1 − a)·I + a·diag(H) at the Hessian's current weights d: diag(H) = 1 + (X∘X)ᵀ·d for the
 * coefficients, Σ d for the (unpenalized) intercept; one pass over X∘X. */
static sr_status renew_preconditioner(sr_logistic_state *lg)
{
    const int64_t n = lg->pr.n;
    sr_dense hv = sr_solver_vec(lg->m_host, n), dv = sr_solver_vec(lg->d, lg->pr.m);
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
    sr_status st = sr_solver_diagonal(lg->pr.ctx, n, lg->m_host, where, &lg->m_diag);
    if (st == SR_SUCCESS)
        st = sr_solver_diagonal(lg->pr.ctx, n, inverse, where, &lg->m_inverse);
    free(inverse);
    return st;
}

/* x's norm on the host: in M's norm with the preconditioner, else Euclidean. */
static double tr_norm(const sr_logistic_state *lg, const double *x)
{
    if (!lg->pcg)
        return sqrt(sr_algo_dot(x, x, lg->N));
    double sum = 0;
    for (int64_t j = 0; j < lg->N; j++)
        sum += lg->m_host[j] * x[j] * x[j];
    return sqrt(sum);
}

/* t(i), d(i) for rows [lo, hi), and their sums. */
static void add_weights(int64_t lo, int64_t hi, void *user, double *sums)
{
    sr_logistic_state *lg = user;
    for (int64_t i = lo; i < hi; i++) {
        const double s = 1.0 / (1.0 + exp(-lg->label[i] * lg->z[i]));
        lg->t[i] = (s - 1.0) * lg->label[i];
        lg->d[i] = lg->C * s * (1.0 - s);
        sums[0] += lg->t[i];
        sums[1] += lg->d[i];
    }
}

/* g = (w + C·Xᵀt, C·Σt), t = (σ(y·z) − 1)·y, and the Hessian's weights (copied where X lives),
 * at the w objective() saw last; with an intercept also q = Xᵀd and Σd. */
static sr_status gradient(sr_logistic_state *lg, double *w, double *g)
{
    double sums[2];
    sr_algo_sum_ranges(lg->pr.m, 2, add_weights, lg, sums);
    const double sum_t = sums[0], sum_d = sums[1];
    sr_dense tv = sr_solver_vec(lg->t, lg->pr.m), gv = sr_solver_vec(g, lg->pr.n), wv = sr_solver_vec(w, lg->pr.n);
    SR_TRY(sr_fused_pattern(lg->pr.ctx, SR_FORM_XTY, &gv, lg->C, lg->pr.X, NULL, &tv, 1.0, &wv));
    sr_dense dv = sr_solver_vec(lg->d, lg->pr.m);
    SR_TRY(sr_vector_copy(lg->pr.ctx, &lg->dw, &dv));
    if (lg->intercept) {
        g[lg->pr.n] = lg->C * sum_t;
        lg->sum_d = sum_d;
        SR_TRY(sr_fused_pattern(lg->pr.ctx, SR_FORM_XTY, &lg->qw, 1.0, lg->pr.X, NULL, &lg->dw, 0.0, NULL));
    }
    return lg->pcg ? renew_preconditioner(lg) : SR_SUCCESS;
}

sr_status sr_logistic(sr_context ctx, sr_matrix X, const sr_dense *y, double C, const sr_solver_options *options,
                      const sr_dense *w_out, sr_solver_step *last)
{
    const char *fn = "sr_logistic";
    const double t0 = sr_algo_now();
    const sr_solver_options o = options ? *options : sr_solver_options_default();
    SR_CHECK_ARG(isfinite(C) && C > 0, "%s: C (%g) must be finite and > 0", fn, C);
    SR_TRY(sr_solver_check_options(fn, &o));
    sr_logistic_state lg;
    memset(&lg, 0, sizeof lg);
    SR_TRY(sr_solver_start(fn, ctx, X, y, w_out, &lg.pr));
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
    lg.pcg = sr_solver_preconditioned(&o);
    if (st == SR_SUCCESS && lg.pcg && !(lg.m_host = sr_calloc((size_t)N + 1, sizeof(double))))
        st = sr_error(SR_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    if (st == SR_SUCCESS && lg.pcg)
        st = sr_solver_entry_squares(&lg.pr, &lg.squares);
    if (st == SR_SUCCESS)
        st = sr_logistic_cg_alloc(&lg);
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
        st = sr_logistic_cg(&lg, delta, g, s, r, &inner);
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
                st = sr_solver_report(&o, &step, fn);
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
    sr_logistic_cg_free(&lg);
    sr_vector_free(ctx, &lg.dw);
    sr_vector_free(ctx, &lg.qw);
    sr_matrix_free(lg.squares), sr_matrix_free(lg.m_diag), sr_matrix_free(lg.m_inverse);
    free(lg.m_host);
    sr_matrix_free(lg.pr.owned);
    return st;
}
