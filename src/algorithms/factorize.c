/* Matrix factorization by ALS-WR, each least-squares system solved by conjugate gradient for all
 * rows at once (sr_factorize in sparsering.h). The CG vectors live on the host in double, one
 * K-vector a row; the one product a CG step needs, P ↦ (S ⊙ P·Yᵀ)·Y + λ·n ⊙ P, is a single fused
 * SDDMM→SpMM on the ratings' pattern (sr_sddmm_spmm), so the Gram matrices Σ h_j h_jᵀ that plain
 * ALS forms (K² a rating) are never built. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/memory.h"
#include "algo_util.h"

static const char *const fn = "sr_factorize";

sr_factorize_options sr_factorize_options_default(void)
{
    sr_factorize_options o;
    memset(&o, 0, sizeof o);
    o.rank = 32;
    o.lambda = 0.1;
    o.iterations = 10;
    o.cg_steps = 3;
    o.seed = 42;
    o.center = true;
    return o;
}

/* One side of the alternation: the ratings with the side being solved as rows. */
typedef struct {
    sr_matrix S;         /* centered ratings (rows: this side) */
    int64_t rows, cols;
    double *count;       /* ratings per row */
} side;

typedef struct {
    sr_context ctx;
    sr_type type;
    int64_t K;
    double lambda;
    int cg_steps;
    /* scratch: a T array of the larger side's rows x K, twice, and four double ones */
    void *t_in, *t_out;
    double *b, *r, *p, *q;
} als;

static void to_type(sr_type t, const double *x, void *out, int64_t n)
{
    if (t == SR_TYPE_FLOAT32)
        for (int64_t i = 0; i < n; i++)
            ((float *)out)[i] = (float)x[i];
    else
        memcpy(out, x, (size_t)n * sizeof(double));
}

static void from_type(sr_type t, const void *in, double *x, int64_t n)
{
    if (t == SR_TYPE_FLOAT32)
        for (int64_t i = 0; i < n; i++)
            x[i] = ((const float *)in)[i];
    else
        memcpy(x, in, (size_t)n * sizeof(double));
}

/* q = (S ⊙ P·Yᵀ)·Y + λ·n ⊙ P for the rows of one side; y is Y in the value type. */
static sr_status gram_product(als *a, const side *sd, const void *y, const double *P, double *q)
{
    const int64_t n = sd->rows * a->K;
    to_type(a->type, P, a->t_in, n);
    sr_dense Pv = sr_dense_view(a->t_in, sd->rows, a->K, a->type, SR_ROW_MAJOR, SR_HOST);
    sr_dense Qv = sr_dense_view(a->t_out, sd->rows, a->K, a->type, SR_ROW_MAJOR, SR_HOST);
    sr_dense Yv = sr_dense_view((void *)y, sd->cols, a->K, a->type, SR_ROW_MAJOR, SR_HOST);
    const sr_descriptor at_pattern = {.sample_pattern = true};
    SR_TRY(sr_sddmm_spmm(a->ctx, &Qv, 1.0, sd->S, &Pv, &Yv, &Yv, SR_NORMALIZE_NONE, &at_pattern));
    from_type(a->type, a->t_out, q, n);
    const int64_t K = a->K;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < sd->rows; i++)
        for (int64_t k = 0; k < K; k++)
            q[i * K + k] += a->lambda * sd->count[i] * P[i * K + k];
    return SR_SUCCESS;
}

/* X (rows x K, double) ← the ALS-WR solution for this side given the other side's factors y (in
 * the value type), by cg_steps of conjugate gradient from X. */
static sr_status solve_side(als *a, const side *sd, double *X, const void *y)
{
    const int64_t K = a->K, rows = sd->rows;
    sr_dense Yv = sr_dense_view((void *)y, sd->cols, K, a->type, SR_ROW_MAJOR, SR_HOST);
    sr_dense Bv = sr_dense_view(a->t_out, rows, K, a->type, SR_ROW_MAJOR, SR_HOST);
    SR_TRY(sr_spmm(a->ctx, &Bv, NULL, SR_PLUS_TIMES, sd->S, &Yv, NULL)); /* b = Σ_j (r_ij − μ) y_j */
    from_type(a->type, a->t_out, a->b, rows * K);
    SR_TRY(gram_product(a, sd, y, X, a->q));
    double *rs = sr_malloc((size_t)(rows > 0 ? rows : 1) * sizeof(double));
    if (!rs)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "%s: out of host memory for %lld CG residuals", fn, (long long)rows);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < rows; i++) {
        if (sd->count[i] == 0) /* nothing rated: the regularized solution is 0 */
            memset(X + i * K, 0, (size_t)K * sizeof(double));
        for (int64_t k = 0; k < K; k++) {
            const double r = sd->count[i] == 0 ? 0.0 : a->b[i * K + k] - a->q[i * K + k];
            a->r[i * K + k] = r;
            a->p[i * K + k] = r;
        }
        rs[i] = sr_algo_dot(a->r + i * K, a->r + i * K, K);
    }
    sr_status st = SR_SUCCESS;
    for (int step = 0; step < a->cg_steps && st == SR_SUCCESS; step++) {
        st = gram_product(a, sd, y, a->p, a->q);
        if (st != SR_SUCCESS)
            break;
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < rows; i++) {
            double *x = X + i * K, *r = a->r + i * K, *p = a->p + i * K;
            const double *q = a->q + i * K;
            const double pq = sr_algo_dot(p, q, K);
            if (!(pq > 0) || !(rs[i] > 0)) /* converged (or an empty row) */
                continue;
            const double alpha = rs[i] / pq;
            for (int64_t k = 0; k < K; k++) {
                x[k] += alpha * p[k];
                r[k] -= alpha * q[k];
            }
            const double next = sr_algo_dot(r, r, K), beta = next / rs[i];
            for (int64_t k = 0; k < K; k++)
                p[k] = r[k] + beta * p[k];
            rs[i] = next;
        }
    }
    free(rs);
    return st;
}

typedef struct {
    const double *centered;
    const void *pred;
    bool single;
} squared_errors;

static void add_squared_errors(int64_t lo, int64_t hi, void *user, double *sums)
{
    const squared_errors *e = user;
    for (int64_t k = lo; k < hi; k++) {
        const double p = e->single ? ((const float *)e->pred)[k] : ((const double *)e->pred)[k];
        sums[0] += (e->centered[k] - p) * (e->centered[k] - p);
    }
}

/* sqrt(mean((value_e − w_i·h_j)²)) over the entries of S, whose centered values are `centered`. */
static sr_status rmse_of(als *a, sr_matrix S, const double *centered, int64_t nnz, const void *w, int64_t users,
                         const void *h, int64_t items, double *out)
{
    *out = NAN;
    if (nnz == 0)
        return SR_SUCCESS;
    void *pred = sr_malloc((size_t)nnz * (a->type == SR_TYPE_FLOAT32 ? 4 : 8));
    if (!pred)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "%s: out of host memory for %lld predictions", fn, (long long)nnz);
    sr_dense Pv = sr_vector_view(pred, nnz, a->type, SR_HOST);
    sr_dense Wv = sr_dense_view((void *)w, users, a->K, a->type, SR_ROW_MAJOR, SR_HOST);
    sr_dense Hv = sr_dense_view((void *)h, items, a->K, a->type, SR_ROW_MAJOR, SR_HOST);
    const sr_descriptor at_pattern = {.sample_pattern = true};
    sr_status st = sr_sddmm_values(a->ctx, &Pv, SR_PLUS_TIMES, 1.0, S, &Wv, &Hv, 0.0, &at_pattern);
    if (st == SR_SUCCESS) {
        squared_errors errors = {centered, pred, a->type == SR_TYPE_FLOAT32};
        double sum;
        sr_algo_sum_ranges(nnz, 1, add_squared_errors, &errors, &sum);
        *out = sqrt(sum / (double)nnz);
    }
    free(pred);
    return st;
}

/* The ratings of M on the host, minus mu, in M's entry order; *nnz their count. */
static sr_status centered_values(sr_context ctx, sr_matrix M, double mu, double **out, int64_t *nnz,
                                 int64_t **rowptr, int32_t **colind)
{
    sr_matrix_info info;
    SR_TRY(sr_matrix_get_info(M, &info));
    *nnz = info.nnz;
    *out = sr_malloc((size_t)(info.nnz + 1) * sizeof(double));
    *rowptr = sr_malloc((size_t)(info.nrows + 1) * sizeof(int64_t));
    *colind = sr_malloc((size_t)(info.nnz + 1) * sizeof(int32_t));
    void *raw = sr_malloc((size_t)(info.nnz + 1) * 8);
    sr_status st = *out && *rowptr && *colind && raw ? SR_SUCCESS
                                                     : sr_error(SR_ERROR_OUT_OF_MEMORY, "%s: out of host memory for %lld ratings",
                                                                fn, (long long)info.nnz);
    if (st == SR_SUCCESS)
        st = sr_matrix_export_csr(ctx, M, *rowptr, *colind, raw, SR_HOST);
    if (st == SR_SUCCESS) {
        from_type(info.type, raw, *out, info.nnz);
        for (int64_t e = 0; e < info.nnz; e++)
            (*out)[e] -= mu;
    }
    free(raw);
    return st;
}

static uint64_t splitmix(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static sr_status check_factor(const char *name, const sr_dense *F, int64_t rows, int64_t K, sr_type type)
{
    SR_CHECK_ARG(F != NULL, "%s: %s is NULL", fn, name);
    SR_CHECK_ARG(F->location == SR_HOST && F->layout == SR_ROW_MAJOR && F->ld == K && F->nrows == rows &&
                     F->ncols == K && F->type == type && (F->data != NULL || rows * K == 0),
                 "%s: %s must be a packed row-major host view of %lld x %lld %s values", fn, name, (long long)rows,
                 (long long)K, type == SR_TYPE_FLOAT32 ? "float32" : "float64");
    return SR_SUCCESS;
}

/* Builds a matrix of M's pattern with the given values, where M lives. */
static sr_status with_values(sr_context ctx, sr_matrix M, const int64_t *rowptr, const int32_t *colind,
                             const double *centered, sr_matrix *out)
{
    sr_matrix_info info;
    SR_TRY(sr_matrix_get_info(M, &info));
    void *vals = sr_malloc((size_t)(info.nnz + 1) * 8);
    if (!vals)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "%s: out of host memory for %lld ratings", fn, (long long)info.nnz);
    to_type(info.type, centered, vals, info.nnz);
    sr_matrix H = NULL;
    sr_status st = sr_matrix_from_csr(ctx, &H, info.nrows, info.ncols, info.type, rowptr, colind, vals, SR_HOST);
    free(vals);
    if (st == SR_SUCCESS && info.location == SR_DEVICE) {
        st = sr_matrix_copy_to(ctx, H, SR_DEVICE, out);
        sr_matrix_free(H);
    } else if (st == SR_SUCCESS) {
        *out = H;
    }
    return st;
}

sr_status sr_factorize(sr_context ctx, sr_matrix R, sr_matrix R_test, const sr_factorize_options *options,
                       const sr_dense *W, const sr_dense *H, double *mean, sr_factorize_step *last)
{
    const double t0 = sr_algo_now();
    const sr_factorize_options o = options ? *options : sr_factorize_options_default();
    SR_CHECK_ARG(ctx != NULL && R != NULL, "%s: the context or R is NULL", fn);
    sr_matrix_info info, tinfo;
    SR_TRY(sr_matrix_get_info(R, &info));
    SR_CHECK_ARG(info.type == SR_TYPE_FLOAT32 || info.type == SR_TYPE_FLOAT64,
                 "%s: the ratings must be float32 or float64", fn);
    SR_CHECK_ARG(o.rank >= 1 && o.rank <= 4096, "%s: rank %lld is outside 1..4096", fn, (long long)o.rank);
    SR_CHECK_ARG(o.iterations >= 0 && o.cg_steps >= 1, "%s: iterations (%d) must be >= 0 and cg_steps (%d) >= 1", fn,
                 o.iterations, o.cg_steps);
    SR_CHECK_ARG(isfinite(o.lambda) && o.lambda >= 0, "%s: lambda (%g) must be finite and >= 0", fn, o.lambda);
    if (R_test) {
        SR_TRY(sr_matrix_get_info(R_test, &tinfo));
        SR_CHECK_ARG(tinfo.nrows == info.nrows && tinfo.ncols == info.ncols && tinfo.type == info.type &&
                         tinfo.location == info.location,
                     "%s: the test ratings must have R's shape, type and location", fn);
    }
    SR_TRY(sr_algo_refuse_nonfinite(fn, "R", ctx, R));
    if (R_test)
        SR_TRY(sr_algo_refuse_nonfinite(fn, "R_test", ctx, R_test));
    const int64_t K = o.rank, users = info.nrows, items = info.ncols;
    SR_TRY(check_factor("W", W, users, K, info.type));
    SR_TRY(check_factor("H", H, items, K, info.type));

    als a = {ctx, info.type, K, o.lambda, o.cg_steps, NULL, NULL, NULL, NULL, NULL, NULL};
    side us = {NULL, users, items, NULL}, them = {NULL, items, users, NULL};
    double *train = NULL, *test = NULL, *X = NULL, *Y = NULL, mu = 0;
    int64_t nnz = 0, test_nnz = 0, *rowptr = NULL, *trow = NULL;
    int32_t *colind = NULL, *tcol = NULL;
    sr_matrix test_centered = NULL;
    sr_status st = centered_values(ctx, R, 0.0, &train, &nnz, &rowptr, &colind);
    if (st == SR_SUCCESS && o.center && nnz > 0) {
        for (int64_t e = 0; e < nnz; e++)
            mu += train[e];
        mu /= (double)nnz;
        for (int64_t e = 0; e < nnz; e++)
            train[e] -= mu;
    }
    if (st == SR_SUCCESS && R_test)
        st = centered_values(ctx, R_test, mu, &test, &test_nnz, &trow, &tcol);
    if (st == SR_SUCCESS && R_test)
        st = with_values(ctx, R_test, trow, tcol, test, &test_centered);
    if (st == SR_SUCCESS)
        st = with_values(ctx, R, rowptr, colind, train, &us.S);
    if (st == SR_SUCCESS)
        st = sr_matrix_transpose(ctx, us.S, &them.S);
    const int64_t widest = users > items ? users : items;
    const size_t vec = (size_t)(widest * K + 1);
    us.count = sr_calloc((size_t)users + 1, sizeof(double));
    them.count = sr_calloc((size_t)items + 1, sizeof(double));
    X = sr_malloc(vec * sizeof(double));
    Y = sr_malloc(vec * sizeof(double));
    a.t_in = sr_malloc(vec * 8);
    a.t_out = sr_malloc(vec * 8);
    a.b = sr_malloc(vec * sizeof(double));
    a.r = sr_malloc(vec * sizeof(double));
    a.p = sr_malloc(vec * sizeof(double));
    a.q = sr_malloc(vec * sizeof(double));
    if (st == SR_SUCCESS && !(us.count && them.count && X && Y && a.t_in && a.t_out && a.b && a.r && a.p && a.q))
        st = sr_error(SR_ERROR_OUT_OF_MEMORY, "%s: out of host memory for the factors and CG vectors (%lld x %lld)",
                      fn, (long long)widest, (long long)K);
    if (st == SR_SUCCESS) {
        for (int64_t i = 0; i < users; i++)
            us.count[i] = (double)(rowptr[i + 1] - rowptr[i]);
        for (int64_t e = 0; e < nnz; e++)
            them.count[colind[e]] += 1;
        memset(X, 0, (size_t)(users * K) * sizeof(double)); /* W: solved first */
        if (o.use_initial) {
            from_type(info.type, H->data, Y, items * K);
        } else {
            uint64_t state = o.seed;
            for (int64_t e = 0; e < items * K; e++)
                Y[e] = ((double)(splitmix(&state) >> 11) / 9007199254740992.0 - 0.5) / sqrt((double)K);
        }
        to_type(info.type, Y, H->data, items * K);
        to_type(info.type, X, W->data, users * K);
    }
    sr_factorize_step step = {0, NAN, NAN, 0};
    for (int it = 1; it <= o.iterations && st == SR_SUCCESS; it++) {
        st = solve_side(&a, &us, X, H->data); /* users, given the items */
        if (st == SR_SUCCESS) {
            to_type(info.type, X, W->data, users * K);
            st = solve_side(&a, &them, Y, W->data); /* items, given the users */
        }
        if (st == SR_SUCCESS) {
            to_type(info.type, Y, H->data, items * K);
            step.iteration = it;
            st = rmse_of(&a, us.S, train, nnz, W->data, users, H->data, items, &step.train_rmse);
        }
        if (st == SR_SUCCESS && test_centered)
            st = rmse_of(&a, test_centered, test, test_nnz, W->data, users, H->data, items, &step.test_rmse);
        step.seconds = sr_algo_now() - t0;
        if (st == SR_SUCCESS && o.report && o.report(&step, o.report_user) != 0)
            st = sr_error(SR_ERROR_CANCELLED, "%s: stopped by the report callback after sweep %d", fn, it);
    }
    if (mean)
        *mean = mu;
    if (last)
        *last = step;
    sr_matrix_free(us.S);
    sr_matrix_free(them.S);
    sr_matrix_free(test_centered);
    free(us.count), free(them.count), free(X), free(Y);
    free(a.t_in), free(a.t_out), free(a.b), free(a.r), free(a.p), free(a.q);
    free(train), free(test), free(rowptr), free(colind), free(trow), free(tcol);
    return st;
}
