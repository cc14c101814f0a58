/* Logistic regression's truncated CG (src/algorithms/logistic_cg.c), on its contract, against a
 * dense Hessian built here: given H = I + XᵀDX (the intercept's row q = Xᵀd, Σd, unpenalized), g
 * and a trust region δ in a diagonal M's norm, the step s it returns stays inside (on the boundary
 * when δ is small, where the device took the crossing step back and the host finished it), its
 * residual r is −g − H·s, it descends (g·s < 0), and inside the region it ends at ‖r‖ <= 0.1‖g‖
 * (M⁻¹'s norm). Looking at the device's numbers every step or every 4 gives the same bits, and
 * on the GPU the host waits for it only at those looks and a few times a CG. CPU
 * backend and (when present) CUDA, with and without the intercept and the preconditioner. */
#include "test_util.h"
#include "../src/algorithms/logistic.h"

static sr_context ctx;
static sr_location where;

/* The problem: X (m x n), D's weights, M's N entries, g; and H dense (N x N). */
typedef struct {
    test_csr X;
    int64_t m, n, N;
    bool intercept;
    double *d, *mdiag, *g, *H;
} cg_problem;

static cg_problem make_problem(bool intercept)
{
    cg_problem p = {test_random_csr(150, 24, 5, SR_TYPE_FLOAT64), 150, 24, 24 + intercept, intercept, 0, 0, 0, 0};
    const int64_t N = p.N, n = p.n;
    p.d = malloc((size_t)p.m * sizeof(double));
    p.mdiag = malloc((size_t)N * sizeof(double));
    p.g = malloc((size_t)N * sizeof(double));
    p.H = calloc((size_t)(N * N), sizeof(double));
    for (int64_t i = 0; i < p.m; i++)
        p.d[i] = 0.01 + 0.24 * test_uniform(); /* C·σ(1 − σ) <= C/4 */
    for (int64_t j = 0; j < N; j++) {
        p.mdiag[j] = 0.5 + 1.5 * test_uniform();
        p.g[j] = 2 * test_uniform() - 1;
        p.H[j * N + j] = j < n ? 1.0 : 0.0;
    }
    const double *x = p.X.values;
    for (int64_t i = 0; i < p.m; i++)
        for (int64_t a = p.X.rowptr[i]; a < p.X.rowptr[i + 1]; a++) {
            for (int64_t b = p.X.rowptr[i]; b < p.X.rowptr[i + 1]; b++)
                p.H[p.X.colind[a] * N + p.X.colind[b]] += p.d[i] * x[a] * x[b];
            if (intercept) {
                p.H[p.X.colind[a] * N + n] += p.d[i] * x[a];
                p.H[n * N + p.X.colind[a]] += p.d[i] * x[a];
            }
        }
    if (intercept)
        for (int64_t i = 0; i < p.m; i++)
            p.H[n * N + n] += p.d[i];
    return p;
}

static void free_problem(cg_problem *p)
{
    test_csr_free(&p->X);
    free(p->d), free(p->mdiag), free(p->g), free(p->H);
}

/* x·diag(scale)·y over N. */
static double scaled_dot(const double *x, const double *scale, const double *y, int64_t N, bool inverse)
{
    double sum = 0;
    for (int64_t j = 0; j < N; j++)
        sum += x[j] * (scale ? (inverse ? 1.0 / scale[j] : scale[j]) : 1.0) * y[j];
    return sum;
}

/* The CG's state for p, built as logistic.c builds it: D where X lives, q = Xᵀd, Σd, M and M⁻¹. */
static void make_state(sr_logistic_state *lg, const cg_problem *p, sr_matrix Xs, bool pcg)
{
    memset(lg, 0, sizeof *lg);
    lg->pr = (sr_solver_problem){ctx, Xs, NULL, p->m, p->n};
    lg->intercept = p->intercept;
    lg->N = p->N;
    lg->pcg = pcg;
    sr_dense dv = sr_vector_view(p->d, p->m, SR_TYPE_FLOAT64, SR_HOST);
    CHECK_OK(sr_vector_alloc(ctx, p->m, SR_TYPE_FLOAT64, where, &lg->dw));
    CHECK_OK(sr_vector_copy(ctx, &lg->dw, &dv));
    if (p->intercept) {
        CHECK_OK(sr_vector_alloc(ctx, p->n, SR_TYPE_FLOAT64, where, &lg->qw));
        CHECK_OK(sr_fused_pattern(ctx, SR_FORM_XTY, &lg->qw, 1.0, Xs, NULL, &lg->dw, 0.0, NULL));
        for (int64_t i = 0; i < p->m; i++)
            lg->sum_d += p->d[i];
    }
    if (pcg) {
        double *inverse = malloc((size_t)p->N * sizeof(double));
        lg->m_host = malloc((size_t)p->N * sizeof(double));
        for (int64_t j = 0; j < p->N; j++)
            lg->m_host[j] = p->mdiag[j], inverse[j] = 1.0 / p->mdiag[j];
        CHECK_OK(sr_solver_diagonal(ctx, p->n, lg->m_host, where, &lg->m_diag));
        CHECK_OK(sr_solver_diagonal(ctx, p->n, inverse, where, &lg->m_inverse));
        free(inverse);
    }
    CHECK_OK(sr_logistic_cg_alloc(lg));
}

static void free_state(sr_logistic_state *lg)
{
    sr_logistic_cg_free(lg);
    sr_vector_free(ctx, &lg->dw);
    sr_vector_free(ctx, &lg->qw);
    sr_matrix_free(lg->m_diag), sr_matrix_free(lg->m_inverse);
    free(lg->m_host);
}

/* One CG for p with δ, looking every `look` steps: s and r (N each) and the steps it took; the
 * host's waits for the device (sr_device_waits) in *waits. */
static int solve(const cg_problem *p, sr_matrix Xs, bool pcg, double delta, const char *look, double *s, double *r,
                 int64_t *waits)
{
    sr_logistic_state lg;
    make_state(&lg, p, Xs, pcg);
    setenv("SPARSERING_LOOK_EVERY", look, 1);
    int steps = 0;
    const int64_t before = sr_device_waits();
    CHECK_OK(sr_logistic_cg(&lg, delta, p->g, s, r, &steps));
    *waits = sr_device_waits() - before;
    unsetenv("SPARSERING_LOOK_EVERY");
    free_state(&lg);
    return steps;
}

static void check_contract(const cg_problem *p, bool pcg, bool small, double delta, const double *s,
                           const double *r, int steps)
{
    const int64_t N = p->N;
    const double *M = pcg ? p->mdiag : NULL;
    double *hs = calloc((size_t)N, sizeof(double)), worst = 0;
    for (int64_t a = 0; a < N; a++)
        for (int64_t b = 0; b < N; b++)
            hs[a] += p->H[a * N + b] * s[b];
    for (int64_t a = 0; a < N; a++)
        worst = fmax(worst, fabs(r[a] - (-p->g[a] - hs[a])));
    const double gnorm = sqrt(scaled_dot(p->g, M, p->g, N, true)), snorm = sqrt(scaled_dot(s, M, s, N, false));
    const double rnorm = sqrt(scaled_dot(r, M, r, N, true)), gs = scaled_dot(p->g, NULL, s, N, false);
    const char *what = small ? "boundary" : "interior";
    CHECK(worst <= 1e-9 * gnorm, "%s (intercept %d, pcg %d): r differs from -g - H·s by %.3g (|g| %.3g)", what,
          p->intercept, pcg, worst, gnorm);
    CHECK(gs < 0, "%s (intercept %d, pcg %d): g·s = %.3g, not a descent", what, p->intercept, pcg, gs);
    CHECK(steps >= 1 && steps <= 2 * N + 20, "%s (intercept %d, pcg %d): %d steps", what, p->intercept, pcg, steps);
    if (small)
        CHECK(fabs(snorm - delta) <= 1e-10 * delta, "boundary (intercept %d, pcg %d): |s| %.17g, delta %.17g",
              p->intercept, pcg, snorm, delta);
    else
        CHECK(snorm < delta && rnorm <= 0.1 * gnorm * (1 + 1e-9),
              "interior (intercept %d, pcg %d): |s| %.3g (delta %.3g), |r| %.3g of |g| %.3g", p->intercept, pcg,
              snorm, delta, rnorm, gnorm);
    free(hs);
}

static void run_all(void)
{
    for (int variant = 0; variant < 4; variant++) {
        const bool intercept = variant & 1, pcg = variant & 2;
        cg_problem p = make_problem(intercept);
        sr_matrix Xs = test_make_matrix_at(ctx, &p.X, where);
        const double gnorm = sqrt(scaled_dot(p.g, pcg ? p.mdiag : NULL, p.g, p.N, true));
        for (int small = 0; small < 2; small++) {
            /* a step of 2% of |g| crosses the boundary (H >= I on the coefficients) */
            const double delta = small ? 0.02 * gnorm : 1e6 * gnorm;
            double *s[2], *r[2];
            int steps[2];
            int64_t waits[2];
            const char *looks[2] = {"1", "4"};
            for (int k = 0; k < 2; k++) {
                s[k] = calloc((size_t)p.N, sizeof(double)), r[k] = calloc((size_t)p.N, sizeof(double));
                steps[k] = solve(&p, Xs, pcg, delta, looks[k], s[k], r[k], &waits[k]);
            }
            /* on the GPU a look every 4 steps, and a few waits a CG: the scalars and g in, the first
             * r·z out, the boundary's three products, s and r back (each with its intercept) */
            CHECK(where == SR_DEVICE ? waits[1] <= (steps[1] + 3) / 4 + 9 : waits[0] == 0 && waits[1] == 0,
                  "variant %d (delta %s): %lld waits for the device in %d steps looking every step, %lld every 4",
                  variant, small ? "small" : "large", (long long)waits[0], steps[0], (long long)waits[1]);
            check_contract(&p, pcg, small, delta, s[0], r[0], steps[0]);
            CHECK(steps[0] == steps[1] && memcmp(s[0], s[1], (size_t)p.N * sizeof(double)) == 0 &&
                      memcmp(r[0], r[1], (size_t)p.N * sizeof(double)) == 0,
                  "variant %d (delta %s): looking every 4 steps gives other bits (%d against %d steps)", variant,
                  small ? "small" : "large", steps[1], steps[0]);
            for (int k = 0; k < 2; k++)
                free(s[k]), free(r[k]);
        }
        sr_matrix_free(Xs);
        free_problem(&p);
    }
}

int main(void)
{
    test_seed("test_logistic_cg");
    test_on_each_backend(&ctx, &where, run_all);
    return test_finish("test_logistic_cg");
}
