/* The fused pattern w = α·Xᵀ·(v ⊙ (X·y)) + β·z and its forms (Xᵀ·y, X·y), sparse and dense X,
 * against a float64 loop on tall, wide, empty-row, single-column and dense inputs, on the CPU
 * backend and (when present) CUDA. */
#include "test_util.h"
#include "user_cg.h"

static sr_context ctx;
static sr_location where;

static double *random_vector(int64_t n)
{
    double *x = malloc((size_t)(n + 1) * sizeof(double));
    for (int64_t i = 0; i < n; i++)
        x[i] = test_uniform() * 2 - 1;
    return x;
}

/* A vector view of the values in `type` (a new host array). */
static sr_dense typed(const double *x, int64_t n, sr_type type)
{
    void *data = malloc((size_t)(n + 1) * 8);
    for (int64_t i = 0; i < n; i++)
        if (type == SR_TYPE_FLOAT32)
            ((float *)data)[i] = (float)x[i];
        else
            ((double *)data)[i] = x[i];
    return sr_vector_view(data, n, type, SR_HOST);
}

static double at(const sr_dense *d, int64_t i)
{
    return d->type == SR_TYPE_FLOAT32 ? ((float *)d->data)[i] : ((double *)d->data)[i];
}

/* The reference in double, from the test CSR's entries. */
static void reference(sr_pattern_form form, const test_csr *X, double alpha, const double *v, const double *y,
                      double beta, const double *z, double *w, double *scale)
{
    const int64_t m = X->nrows, n = X->ncols, nw = form == SR_FORM_XY ? m : n;
    for (int64_t j = 0; j < nw; j++)
        w[j] = 0, scale[j] = 0;
    for (int64_t i = 0; i < m; i++) {
        double d = 0, mag = 0;
        for (int64_t k = X->rowptr[i]; k < X->rowptr[i + 1]; k++) {
            const double x = test_csr_value(X, k);
            if (form != SR_FORM_XTY)
                d += x * y[X->colind[k]], mag += fabs(x * y[X->colind[k]]);
        }
        const double vi = v ? v[i] : 1.0;
        if (form == SR_FORM_XY) {
            w[i] = d * vi;
            scale[i] = mag * fabs(vi);
            continue;
        }
        const double p = form == SR_FORM_XTY ? vi * y[i] : vi * d, pm = form == SR_FORM_XTY ? fabs(p) : fabs(vi) * mag;
        for (int64_t k = X->rowptr[i]; k < X->rowptr[i + 1]; k++) {
            const double x = test_csr_value(X, k);
            w[X->colind[k]] += x * p;
            scale[X->colind[k]] += fabs(x) * pm;
        }
    }
    for (int64_t j = 0; j < nw; j++) {
        w[j] = alpha * w[j] + (z ? beta * z[j] : 0.0);
        scale[j] = fabs(alpha) * scale[j] + (z ? fabs(beta * z[j]) : 0.0);
    }
}

/* X as a dense view (row-major or column-major) of its values. */
static sr_dense dense_of(const test_csr *X, sr_type type, sr_layout layout)
{
    const int64_t m = X->nrows, n = X->ncols;
    void *data = calloc((size_t)(m * n + 1), 8);
    sr_dense d = sr_dense_view(data, m, n, type, layout, SR_HOST);
    if (d.ld < 1)
        d.ld = 1;
    for (int64_t i = 0; i < m; i++)
        for (int64_t k = X->rowptr[i]; k < X->rowptr[i + 1]; k++) {
            const size_t o = layout == SR_ROW_MAJOR ? (size_t)(i * d.ld + X->colind[k]) : (size_t)(X->colind[k] * d.ld + i);
            if (type == SR_TYPE_FLOAT32)
                ((float *)data)[o] = (float)test_csr_value(X, k);
            else
                ((double *)data)[o] = test_csr_value(X, k);
        }
    return d;
}

/* Set while the cases run again on a deterministic CUDA context (run_all): each call is then made
 * twice more, on that context and on this second deterministic one, and must give the same bits. */
static sr_context twin;

static sr_status call_fused(sr_context c, sr_pattern_form form, const sr_dense *w, double alpha, sr_matrix Xs,
                            const sr_dense *Xd, const sr_dense *v, const sr_dense *y, double beta, const sr_dense *z)
{
    return Xd ? sr_fused_pattern_dense(c, form, w, alpha, Xd, v, y, beta, z)
              : sr_fused_pattern(c, form, w, alpha, Xs, v, y, beta, z);
}

/* The call again on ctx and on twin (X copied there), each into a NaN-poisoned w: the bits of `first`. */
static void check_same_bits_again(const test_csr *X, sr_matrix Xs, const sr_dense *Xd, sr_pattern_form form,
                                  const sr_dense *first, double alpha, const sr_dense *v, const sr_dense *y, double beta,
                                  const sr_dense *z)
{
    const size_t bytes = (size_t)first->nrows * sr_type_size(first->type);
    sr_matrix Xt = Xd ? NULL : test_make_matrix_at(twin, X, where);
    for (int again = 0; again < 2; again++) {
        void *data = malloc(bytes + 8);
        memset(data, 0xff, bytes); /* NaN in either type */
        sr_dense w = sr_vector_view(data, first->nrows, first->type, SR_HOST);
        CHECK_OK(call_fused(again ? twin : ctx, form, &w, alpha, again ? Xt : Xs, Xd, v, y, beta, z));
        int64_t differ = 0;
        for (int64_t j = 0; j < first->nrows; j++)
            differ += memcmp((char *)data + (size_t)j * sr_type_size(w.type),
                             (char *)first->data + (size_t)j * sr_type_size(w.type), sr_type_size(w.type)) != 0;
        CHECK(differ == 0, "deterministic fused form %d, %s X %lld x %lld (%s): %lld of %lld values differ %s",
              (int)form, Xd ? "dense" : "sparse", (long long)X->nrows, (long long)X->ncols, sr_type_name(w.type),
              (long long)differ, (long long)w.nrows, again ? "on a second context" : "on a second call");
        free(data);
    }
    sr_matrix_free(Xt);
}

static void check_matrix(const test_csr *Xp, sr_type type, bool dense, sr_layout layout)
{
    if (!test_part_selected()) /* SR_TEST_PART: another part runs it */
        return;
    const test_csr X = *Xp;
    const int64_t m = X.nrows, n = X.ncols;
    sr_matrix Xs = dense ? NULL : test_make_matrix_at(ctx, &X, where);
    sr_dense Xd = dense ? dense_of(&X, type, layout) : (sr_dense){0};
    sr_dense Xd_here = Xd;
    const sr_pattern_form forms[] = {SR_FORM_XTVXY, SR_FORM_XTY, SR_FORM_XY};
    for (int f = 0; f < 3; f++)
        for (int variant = 0; variant < 4; variant++) {
            const sr_pattern_form form = forms[f];
            const int64_t ny = form == SR_FORM_XTY ? m : n, nw = form == SR_FORM_XY ? m : n;
            const bool with_v = variant & 1, with_z = variant & 2, w_is_z = variant == 3;
            const double alpha = variant == 0 ? 1.0 : -0.75, beta = with_z ? 1.5 : 0.0;
            double *y = random_vector(ny), *v = random_vector(m), *z = random_vector(nw);
            double *want = malloc((size_t)(nw + 1) * sizeof(double)), *scale = malloc((size_t)(nw + 1) * sizeof(double));
            reference(form, &X, alpha, with_v ? v : NULL, y, beta, with_z ? z : NULL, want, scale);
            sr_dense yv = typed(y, ny, type), vv = typed(v, m, type), zv = typed(z, nw, type);
            sr_dense wv = w_is_z ? zv : typed(z, nw, type); /* poisoned with z's values when not z */
            if (!w_is_z)
                for (int64_t j = 0; j < nw; j++)
                    type == SR_TYPE_FLOAT32 ? (void)(((float *)wv.data)[j] = NAN) : (void)(((double *)wv.data)[j] = NAN);
            sr_status s = call_fused(ctx, form, &wv, alpha, Xs, dense ? &Xd_here : NULL, with_v ? &vv : NULL, &yv, beta,
                                     with_z ? &zv : NULL);
            CHECK(s == SR_SUCCESS, "fused form %d on %lld x %lld: %s", (int)form, (long long)m, (long long)n,
                  sr_last_error());
            const double tol = type == SR_TYPE_FLOAT32 ? 1e-5 : 1e-13;
            int64_t bad = 0;
            for (int64_t j = 0; j < nw && s == SR_SUCCESS; j++)
                if (!(fabs(at(&wv, j) - want[j]) <= tol * (scale[j] + 1e-3) * 4) && bad++ < 3)
                    fprintf(stderr, "  form %d (%s%s%s) w[%lld] = %.12g, want %.12g\n", (int)form, dense ? "dense" : "sparse",
                            with_v ? ", v" : "", with_z ? (w_is_z ? ", z = w" : ", z") : "", (long long)j, at(&wv, j),
                            want[j]);
            CHECK(bad == 0, "fused form %d, %s X %lld x %lld (%s), variant %d: %lld wrong", (int)form,
                  dense ? "dense" : "sparse", (long long)m, (long long)n, sr_type_name(type), variant, (long long)bad);
            if (twin && s == SR_SUCCESS && !w_is_z)
                check_same_bits_again(&X, Xs, dense ? &Xd_here : NULL, form, &wv, alpha, with_v ? &vv : NULL, &yv, beta,
                                      with_z ? &zv : NULL);
            if (!w_is_z)
                free(wv.data);
            free(yv.data), free(vv.data), free(zv.data);
            free(y), free(v), free(z), free(want), free(scale);
        }
    sr_matrix_free(Xs);
    free(Xd.data);
}

static void check_case(int64_t m, int64_t n, double degree, sr_type type, sr_type xtype, bool dense, sr_layout layout)
{
    test_csr X = test_random_csr(m, n, degree, xtype);
    check_matrix(&X, type, dense, layout);
    test_csr_free(&X);
}

/* Short rows (0 to 12 entries) with a row of `long_len` entries every `long_every` rows: the GPU's
 * row tiles take the short ones many to a tile and a long one (past a tile) with the whole block. */
static test_csr short_and_long_rows(int64_t m, int64_t n, int64_t long_every, int64_t long_len, sr_type type)
{
    test_csr X = {m, n, 0, type, calloc((size_t)m + 1, sizeof(int64_t)), NULL, NULL};
    for (int64_t i = 0; i < m; i++)
        X.rowptr[i + 1] = X.rowptr[i] + (i % long_every == long_every / 2 ? long_len : test_below(13));
    X.nnz = X.rowptr[m];
    X.colind = malloc((size_t)(X.nnz + 1) * sizeof(int32_t));
    X.values = type == SR_TYPE_BOOL ? NULL : malloc((size_t)(X.nnz + 1) * sr_type_size(type));
    for (int64_t i = 0; i < m; i++) {
        int32_t *c = X.colind + X.rowptr[i];
        const int64_t d = X.rowptr[i + 1] - X.rowptr[i];
        if (d > 12) { /* a long row: selection sampling, sorted as it goes */
            for (int64_t j = 0, got = 0; j < n && got < d; j++)
                if (test_below(n - j) < d - got)
                    c[got++] = (int32_t)j;
        } else { /* a short row: distinct random columns, insertion-sorted */
            for (int64_t got = 0; got < d;) {
                const int32_t j = (int32_t)test_below(n);
                int64_t at = got;
                bool seen = false;
                for (int64_t a = 0; a < got; a++)
                    seen |= c[a] == j;
                if (seen)
                    continue;
                for (; at > 0 && c[at - 1] > j; at--)
                    c[at] = c[at - 1];
                c[at] = j;
                got++;
            }
        }
        for (int64_t k = X.rowptr[i]; k < X.rowptr[i + 1]; k++)
            test_random_value(type, X.values, k);
    }
    return X;
}

/* The GPU's row tiles (short rows) under each setting, against the same reference: 4 and 8
 * entries a thread and the vector kernel (SPARSERING_FUSED_TILES=4, 8, 0); w in shared memory
 * whole (narrow), by hot columns (skewed wide), or in global memory (spread wide); many blocks. */
static void check_row_tiles(void)
{
    const sr_type f = SR_TYPE_FLOAT32, d = SR_TYPE_FLOAT64;
    const char *settings[] = {"", "8", "0"};
    for (int s = 0; s < (where == SR_DEVICE ? 3 : 1); s++) { /* the setting is the GPU's */
        setenv("SPARSERING_FUSED_TILES", settings[s], 1);
        test_csr X = short_and_long_rows(20000, 9000, 997, 5000, d);
        check_matrix(&X, d, false, SR_ROW_MAJOR);
        test_csr_free(&X);
        X = short_and_long_rows(3000, 40000, 500, 4097, f);
        check_matrix(&X, f, false, SR_ROW_MAJOR);
        test_csr_free(&X);
        X = short_and_long_rows(5000, 100, 1000000, 0, SR_TYPE_BOOL); /* no long row, n tiny */
        check_matrix(&X, d, false, SR_ROW_MAJOR);
        test_csr_free(&X);
        check_case(200000, 300, 6, f, f, false, SR_ROW_MAJOR);   /* many tiles and blocks */
        check_case(6000, 60000, 8, f, f, false, SR_ROW_MAJOR);   /* hot columns */
        check_case(6000, 2000000, 8, d, d, false, SR_ROW_MAJOR); /* spread columns: global memory */
        check_case(3, 50, 2, d, d, false, SR_ROW_MAJOR);         /* fewer rows than a warp */
    }
    unsetenv("SPARSERING_FUSED_TILES");
}

static void check_errors(void)
{
    if (!test_part_selected()) /* SR_TEST_PART: another part runs it */
        return;
    test_csr X = test_random_csr(6, 4, 2, SR_TYPE_FLOAT64);
    sr_matrix Xs = test_make_matrix_at(ctx, &X, where);
    double y[6] = {1, 2, 3, 4, 5, 6}, w[6] = {0}, v[6] = {1, 1, 1, 1, 1, 1};
    float yf[4] = {0};
    sr_dense y4 = sr_vector_view(y, 4, SR_TYPE_FLOAT64, SR_HOST), y6 = sr_vector_view(y, 6, SR_TYPE_FLOAT64, SR_HOST);
    sr_dense w4 = sr_vector_view(w, 4, SR_TYPE_FLOAT64, SR_HOST), v6 = sr_vector_view(v, 6, SR_TYPE_FLOAT64, SR_HOST);
    sr_dense yf4 = sr_vector_view(yf, 4, SR_TYPE_FLOAT32, SR_HOST);
    CHECK_FAILS(sr_fused_pattern(ctx, SR_FORM_XTVXY, &w4, 1, Xs, NULL, &y6, 0, NULL), SR_ERROR_INVALID_ARGUMENT, "4 x 1");
    CHECK_FAILS(sr_fused_pattern(ctx, SR_FORM_XTY, &w4, 1, Xs, NULL, &y4, 0, NULL), SR_ERROR_INVALID_ARGUMENT, "6 x 1");
    CHECK_FAILS(sr_fused_pattern(ctx, SR_FORM_XTVXY, &w4, 1, Xs, NULL, &yf4, 0, NULL), SR_ERROR_INVALID_ARGUMENT, "type");
    CHECK_FAILS(sr_fused_pattern(ctx, SR_FORM_XTVXY, &y4, 1, Xs, NULL, &y4, 0, NULL), SR_ERROR_INVALID_ARGUMENT, "shares");
    CHECK_FAILS(sr_fused_pattern(ctx, (sr_pattern_form)9, &w4, 1, Xs, &v6, &y4, 0, NULL), SR_ERROR_INVALID_ARGUMENT, "form");
    CHECK_FAILS(sr_fused_pattern(ctx, SR_FORM_XTVXY, &w4, NAN, Xs, &v6, &y4, 0, NULL), SR_ERROR_INVALID_ARGUMENT, "NaN");
    sr_matrix_free(Xs);
    test_csr_free(&X);
}

/* The solvers refuse NaN and infinity in y and in X (float64 and float32, on the device where X
 * lives there), naming where: they had returned all-zero coefficients. */
static void check_nonfinite_refused(void)
{
    if (!test_part_selected()) /* SR_TEST_PART: another part runs it */
        return;
    const int64_t m = 40, n = 12;
    for (int t = 0; t < 2; t++) {
        const sr_type type = t ? SR_TYPE_FLOAT32 : SR_TYPE_FLOAT64;
        test_csr X = test_random_csr(m, n, 5, type);
        double *y = random_vector(m), w[12] = {0};
        sr_dense yv = sr_vector_view(y, m, SR_TYPE_FLOAT64, SR_HOST), wv = sr_vector_view(w, n, SR_TYPE_FLOAT64, SR_HOST);
        y[7] = NAN;
        sr_matrix Xs = test_make_matrix_at(ctx, &X, where);
        CHECK_FAILS(sr_ridge(ctx, Xs, &yv, 0.5, NULL, &wv, NULL), SR_ERROR_INVALID_ARGUMENT, "y holds NaN at 7");
        y[7] = INFINITY;
        CHECK_FAILS(sr_ridge(ctx, Xs, &yv, 0.5, NULL, &wv, NULL), SR_ERROR_INVALID_ARGUMENT, "y holds infinity at 7");
        sr_matrix_free(Xs);
        for (int64_t i = 0; i < m; i++)
            y[i] = y[i] > 0 ? 1.0 : -1.0;
        /* the last entry of the middle row that has two or more, then a second bad entry later */
        int64_t row = m / 2;
        while (X.rowptr[row + 1] - X.rowptr[row] < 2)
            row++;
        const int64_t e = X.rowptr[row + 1] - 1;
        const double bad[3] = {NAN, INFINITY, -INFINITY};
        const char *names[3] = {"NaN", "infinity", "-infinity"};
        for (int b = 0; b < 3; b++) {
            if (type == SR_TYPE_FLOAT32)
                ((float *)X.values)[e] = (float)bad[b], ((float *)X.values)[X.nnz - 1] = (float)bad[b];
            else
                ((double *)X.values)[e] = bad[b], ((double *)X.values)[X.nnz - 1] = bad[b];
            Xs = test_make_matrix_at(ctx, &X, where);
            char want[96];
            snprintf(want, sizeof want, "X holds %s at row %lld, column %d", names[b], (long long)row, X.colind[e]);
            CHECK_FAILS(sr_ridge(ctx, Xs, &yv, 0.5, NULL, &wv, NULL), SR_ERROR_INVALID_ARGUMENT, want);
            CHECK_FAILS(sr_logistic(ctx, Xs, &yv, 1.0, NULL, &wv, NULL), SR_ERROR_INVALID_ARGUMENT, want);
            sr_matrix_free(Xs);
        }
        /* huge finite values whose row sum overflows are not refused */
        for (int64_t k = 0; k < X.nnz; k++)
            if (type == SR_TYPE_FLOAT32)
                ((float *)X.values)[k] = 1.0f;
            else
                ((double *)X.values)[k] = X.rowptr[row] <= k && k < X.rowptr[row + 1] ? 1.5e308 : 1.0;
        Xs = test_make_matrix_at(ctx, &X, where);
        sr_solver_options o = sr_solver_options_default();
        o.max_iterations = 2;
        CHECK(sr_ridge(ctx, Xs, &yv, 0.5, &o, &wv, NULL) != SR_ERROR_INVALID_ARGUMENT || !strstr(sr_last_error(), "holds"),
              "a row of finite values whose sum overflows was refused: %s", sr_last_error());
        sr_matrix_free(Xs);
        free(y);
        test_csr_free(&X);
    }
}

/* ‖∇f(w, b)‖ of logistic regression's objective ½‖w‖² + C·Σ log(1 + exp(−y_i·(x_i·w + b))) (b's
 * entry with an intercept) by float64 loops over X, and in *at_zero its norm at w = 0, b = 0. */
static double logistic_gradient(const test_csr *X, const double *label, double C, const double *w, double b,
                                bool intercept, double *at_zero)
{
    const int64_t n = X->ncols;
    const double *values = X->values;
    double *g = calloc((size_t)n + 1, sizeof(double)), *g0 = calloc((size_t)n + 1, sizeof(double));
    for (int64_t j = 0; j < n; j++)
        g[j] = w[j];
    for (int64_t i = 0; i < X->nrows; i++) {
        double z = intercept ? b : 0.0;
        for (int64_t k = X->rowptr[i]; k < X->rowptr[i + 1]; k++)
            z += values[k] * w[X->colind[k]];
        const double s = 1.0 / (1.0 + exp(-label[i] * z));
        for (int64_t k = X->rowptr[i]; k < X->rowptr[i + 1]; k++) {
            g[X->colind[k]] += C * (s - 1) * label[i] * values[k];
            g0[X->colind[k]] += C * -0.5 * label[i] * values[k];
        }
        if (intercept)
            g[n] += C * (s - 1) * label[i], g0[n] += C * -0.5 * label[i];
    }
    double gn = 0, zero = 0;
    for (int64_t j = 0; j <= n; j++)
        gn += g[j] * g[j], zero += g0[j] * g0[j];
    free(g), free(g0);
    *at_zero = sqrt(zero);
    return sqrt(gn);
}

/* sr_ridge against the normal equations solved exactly; sr_logistic to a zero gradient. */
static void check_solvers(void)
{
    if (!test_part_selected()) /* SR_TEST_PART: another part runs it */
        return;
    const int64_t m = 300, n = 12;
    test_csr X = test_random_csr(m, n, 5, SR_TYPE_FLOAT64);
    sr_matrix Xs = test_make_matrix_at(ctx, &X, where);
    double *y = random_vector(m), *w = calloc((size_t)n, sizeof(double)), *G = calloc((size_t)(n * n), sizeof(double));
    double *b = calloc((size_t)n, sizeof(double)), *label = malloc((size_t)m * sizeof(double));
    const double lambda = 0.3, C = 2.0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t k = X.rowptr[i]; k < X.rowptr[i + 1]; k++) {
            const double xk = ((double *)X.values)[k];
            b[X.colind[k]] += xk * y[i];
            for (int64_t l = X.rowptr[i]; l < X.rowptr[i + 1]; l++)
                G[X.colind[k] * n + X.colind[l]] += xk * ((double *)X.values)[l];
        }
    for (int64_t j = 0; j < n; j++)
        G[j * n + j] += lambda;
    test_spd_solve(G, b, n);
    sr_dense yv = sr_vector_view(y, m, SR_TYPE_FLOAT64, SR_HOST), wv = sr_vector_view(w, n, SR_TYPE_FLOAT64, SR_HOST);
    sr_solver_step last;
    CHECK_OK(sr_ridge(ctx, Xs, &yv, lambda, NULL, &wv, &last));
    double worst = 0;
    for (int64_t j = 0; j < n; j++)
        worst = fmax(worst, fabs(w[j] - b[j]) / (fabs(b[j]) + 1e-3));
    CHECK(worst < 1e-8, "ridge: coefficients differ from the exact solve by %.3g (after %d CG steps)", worst,
          last.iteration);
    for (int64_t i = 0; i < m; i++)
        label[i] = y[i] > 0 ? 1.0 : -1.0;
    sr_dense lv = sr_vector_view(label, m, SR_TYPE_FLOAT64, SR_HOST);
    CHECK_OK(sr_logistic(ctx, Xs, &lv, C, NULL, &wv, &last));
    double g0;
    const double gn = logistic_gradient(&X, label, C, w, 0.0, false, &g0);
    CHECK(gn <= 1e-8 * g0 && fabs(last.gradient_norm - gn) <= 1e-6 * g0,
          "logistic: |gradient| %.3g of %.3g at the start (reported %.3g)", gn, g0, last.gradient_norm);
    label[0] = 0.5;
    CHECK_FAILS(sr_logistic(ctx, Xs, &lv, C, NULL, &wv, NULL), SR_ERROR_INVALID_ARGUMENT, "label 0");
    sr_matrix_free(Xs);
    free(y), free(w), free(G), free(b), free(label);
    test_csr_free(&X);
}

typedef sr_status (*solver_fn)(sr_context, sr_matrix, const sr_dense *, double, const sr_solver_options *,
                               const sr_dense *, sr_solver_step *);

/* One solver with its preconditioner (w[0], last[0]) and without (w[1], last[1]); *worst = the
 * coefficients' largest difference, *scale = the largest plain coefficient. */
static void solve_both_ways(solver_fn solve, sr_matrix Xs, const sr_dense *y, double param, bool intercept, int64_t n,
                            double *w[2], sr_solver_step last[2], double *worst, double *scale)
{
    for (int plain = 0; plain < 2; plain++) {
        sr_solver_options o = sr_solver_options_default();
        o.fit_intercept = intercept;
        o.preconditioner = plain ? SR_PRECONDITIONER_NONE : SR_PRECONDITIONER_JACOBI;
        sr_dense wv = sr_vector_view(w[plain], n, SR_TYPE_FLOAT64, SR_HOST);
        CHECK_OK(solve(ctx, Xs, y, param, &o, &wv, &last[plain]));
    }
    *worst = *scale = 0;
    for (int64_t j = 0; j < n; j++)
        *worst = fmax(*worst, fabs(w[0][j] - w[1][j])), *scale = fmax(*scale, fabs(w[1][j]));
}

/* How many of n doubles differ in their bits between a and b. */
static int64_t differing_doubles(const double *a, const double *b, int64_t n)
{
    int64_t differ = 0;
    for (int64_t j = 0; j < n; j++)
        differ += memcmp(&a[j], &b[j], sizeof(double)) != 0;
    return differ;
}

/* Whether two fits are the same bits: coefficients (*differ: how many are not), step counts, loss
 * and intercept. */
static bool same_fit(const double *w0, const double *w1, int64_t n, const sr_solver_step *a, const sr_solver_step *b,
                     int64_t *differ)
{
    *differ = differing_doubles(w0, w1, n);
    return *differ == 0 && a->iteration == b->iteration && a->inner == b->inner &&
           memcmp(&a->loss, &b->loss, sizeof(double)) == 0 && memcmp(&a->intercept, &b->intercept, sizeof(double)) == 0;
}

/* Ridge's CG queues its steps and looks at its numbers every few (SPARSERING_LOOK_EVERY; 8 on
 * the GPU, 1 on the CPU): the steps queued past the stop change nothing, so any interval gives the
 * bits and step counts of a look every step (on the GPU on a deterministic context, whose fused
 * pattern sums in a fixed order); with and without the preconditioner and the
 * intercept, and with a step cap that stops it early. */
static void check_ridge_looks(void)
{
    if (!test_part_selected()) /* SR_TEST_PART: another part runs it */
        return;
    CHECK_OK(sr_context_set_deterministic(ctx, true)); /* the GPU's bits are the same only so */
    const int64_t m = 500, n = 60;
    test_csr X = test_random_csr(m, n, 7, SR_TYPE_FLOAT64);
    sr_matrix Xs = test_make_matrix_at(ctx, &X, where);
    double *y = random_vector(m), *w[2] = {calloc((size_t)n, sizeof(double)), calloc((size_t)n, sizeof(double))};
    sr_dense yv = sr_vector_view(y, m, SR_TYPE_FLOAT64, SR_HOST);
    const char *intervals[] = {"1", "5", "64"};
    for (int variant = 0; variant < 8; variant++) {
        sr_solver_step last[2];
        for (int k = 0; k < 3; k++) {
            sr_solver_options o = sr_solver_options_default();
            o.fit_intercept = variant & 1;
            o.preconditioner = variant & 2 ? SR_PRECONDITIONER_NONE : SR_PRECONDITIONER_JACOBI;
            o.max_iterations = variant & 4 ? 13 : 0;
            setenv("SPARSERING_LOOK_EVERY", intervals[k], 1);
            sr_dense wv = sr_vector_view(w[k > 0], n, SR_TYPE_FLOAT64, SR_HOST);
            CHECK_OK(sr_ridge(ctx, Xs, &yv, 0.3, &o, &wv, &last[k > 0]));
            if (k == 0)
                continue;
            int64_t differ;
            CHECK(same_fit(w[0], w[1], n, &last[0], &last[1], &differ),
                  "ridge (variant %d) looking every %s steps: %lld of %lld coefficients differ, %d against %d "
                  "steps, loss %.17g against %.17g",
                  variant, intervals[k], (long long)differ, (long long)n, last[1].iteration, last[0].iteration,
                  last[1].loss, last[0].loss);
        }
        /* the cap stops the run mid-way (the uncapped run needs more than 13 steps) */
        CHECK(variant & 4 ? last[0].iteration == 13 : last[0].iteration > 13, "ridge (variant %d): %d CG steps",
              variant, last[0].iteration);
    }
    CHECK_OK(sr_context_set_deterministic(ctx, false));
    unsetenv("SPARSERING_LOOK_EVERY");
    free(y), free(w[0]), free(w[1]);
    sr_matrix_free(Xs);
    test_csr_free(&X);
}

/* Logistic regression's truncated CG queues its steps as ridge's does: looking every 1, 3 or 16
 * steps gives the same bits. Values scaled by 40 and C up to 1e4 make the trust region shrink
 * after rejected steps, so CGs end on its boundary (each set here did, counted with a probe
 * when written): that step, crossed on the device and finished by the host, is checked too. */
static void check_logistic_looks(void)
{
    if (!test_part_selected()) /* SR_TEST_PART: another part runs it */
        return;
    CHECK_OK(sr_context_set_deterministic(ctx, true)); /* the GPU's bits are the same only so */
    const int64_t m = 400, n = 50;
    test_csr X = test_random_csr(m, n, 6, SR_TYPE_FLOAT64);
    for (int64_t e = 0; e < X.nnz; e++)
        ((double *)X.values)[e] *= 40.0;
    sr_matrix Xs = test_make_matrix_at(ctx, &X, where);
    double *y = random_vector(m), *w[2] = {calloc((size_t)n, sizeof(double)), calloc((size_t)n, sizeof(double))};
    for (int64_t i = 0; i < m; i++)
        y[i] = y[i] > 0 ? 1.0 : -1.0;
    sr_dense yv = sr_vector_view(y, m, SR_TYPE_FLOAT64, SR_HOST);
    const char *intervals[] = {"1", "3", "16"};
    for (int variant = 0; variant < 8; variant++) {
        const double C = variant & 4 ? 1e4 : 30.0;
        sr_solver_step last[2];
        for (int k = 0; k < 3; k++) {
            sr_solver_options o = sr_solver_options_default();
            o.fit_intercept = variant & 1;
            o.preconditioner = variant & 2 ? SR_PRECONDITIONER_NONE : SR_PRECONDITIONER_JACOBI;
            setenv("SPARSERING_LOOK_EVERY", intervals[k], 1);
            sr_dense wv = sr_vector_view(w[k > 0], n, SR_TYPE_FLOAT64, SR_HOST);
            CHECK_OK(sr_logistic(ctx, Xs, &yv, C, &o, &wv, &last[k > 0]));
            if (k == 0) { /* to a zero gradient, computed here */
                double g0;
                const double gn = logistic_gradient(&X, y, C, w[0], last[0].intercept, o.fit_intercept, &g0);
                CHECK(gn <= 1e-8 * g0, "logistic (variant %d): |gradient| %.3g of %.3g at the start", variant, gn, g0);
                continue;
            }
            int64_t differ;
            CHECK(same_fit(w[0], w[1], n, &last[0], &last[1], &differ),
                  "logistic (variant %d) looking every %s steps: %lld of %lld coefficients differ, %d/%d against "
                  "%d/%d Newton/CG steps, loss %.17g against %.17g",
                  variant, intervals[k], (long long)differ, (long long)n, last[1].iteration, last[1].inner,
                  last[0].iteration, last[0].inner, last[1].loss, last[0].loss);
        }
        CHECK(last[0].inner > last[0].iteration, "logistic (variant %d): %d CG steps in %d Newton steps", variant,
              last[0].inner, last[0].iteration);
    }
    CHECK_OK(sr_context_set_deterministic(ctx, false));
    unsetenv("SPARSERING_LOOK_EVERY");
    free(y), free(w[0]), free(w[1]);
    sr_matrix_free(Xs);
    test_csr_free(&X);
}

/* Deterministic contexts: ridge and logistic regression give the same bits on a second context
 * (on one context the look checks above repeat them). */
static void check_solver_contexts(void)
{
    if (!test_part_selected()) /* SR_TEST_PART: another part runs it */
        return;
    const int64_t m = 300, n = 40;
    test_csr X = test_random_csr(m, n, 6, SR_TYPE_FLOAT64);
    double *y = random_vector(m), *w[2] = {calloc((size_t)n, sizeof(double)), calloc((size_t)n, sizeof(double))};
    for (int64_t i = 0; i < m; i++)
        y[i] = y[i] > 0 ? 1.0 : -1.0;
    sr_dense yv = sr_vector_view(y, m, SR_TYPE_FLOAT64, SR_HOST);
    sr_context_options o;
    CHECK_OK(sr_context_get_options(ctx, &o));
    o.deterministic = true;
    for (int logistic = 0; logistic < 2; logistic++) {
        sr_solver_step last[2];
        for (int c = 0; c < 2; c++) {
            sr_context here = NULL;
            CHECK_OK(sr_context_create(&here, &o));
            sr_matrix Xs = test_make_matrix_at(here, &X, where);
            sr_solver_options so = sr_solver_options_default();
            so.fit_intercept = true;
            sr_dense wv = sr_vector_view(w[c], n, SR_TYPE_FLOAT64, SR_HOST);
            CHECK_OK(logistic ? sr_logistic(here, Xs, &yv, 10.0, &so, &wv, &last[c])
                              : sr_ridge(here, Xs, &yv, 0.3, &so, &wv, &last[c]));
            sr_matrix_free(Xs);
            sr_context_destroy(here);
        }
        int64_t differ;
        CHECK(same_fit(w[0], w[1], n, &last[0], &last[1], &differ),
              "%s on two deterministic contexts: %lld of %lld coefficients differ", logistic ? "logistic" : "ridge",
              (long long)differ, (long long)n);
    }
    free(y), free(w[0]), free(w[1]);
    test_csr_free(&X);
}

/* The host waits for the GPU (sr_device_waits): none in the scalar calls and device-to-device
 * copies; in ridge's CG, one look every 8 steps (48 more steps cost at most 6 more waits, plus one
 * for where the look falls); on the CPU none at all. */
static void check_waits(void)
{
    if (!test_part_selected()) /* SR_TEST_PART: another part runs it */
        return;
    sr_dense x, s, t;
    CHECK_OK(sr_vector_alloc(ctx, 1000, SR_TYPE_FLOAT64, where, &x));
    CHECK_OK(sr_vector_alloc(ctx, 1, SR_TYPE_FLOAT64, where, &s));
    CHECK_OK(sr_vector_alloc(ctx, 1, SR_TYPE_FLOAT64, where, &t));
    const int64_t before = sr_device_waits();
    for (int k = 0; k < 10; k++) {
        CHECK_OK(sr_vector_dot_s(ctx, &x, &x, &s));
        CHECK_OK(sr_vector_asum_s(ctx, &x, &t));
        CHECK_OK(sr_vector_divide(ctx, &t, &s, &t));
        CHECK_OK(sr_vector_and_greater(ctx, &t, &s, 0.5));
        CHECK_OK(sr_vector_axpby_s(ctx, 1.0, &s, &x, 0.5, &t, &x));
        CHECK_OK(sr_vector_copy(ctx, &s, &t));
    }
    CHECK(sr_device_waits() == before, "60 scalar calls waited %lld times for the device",
          (long long)(sr_device_waits() - before));
    sr_vector_free(ctx, &x), sr_vector_free(ctx, &s), sr_vector_free(ctx, &t);

    test_csr X = test_random_csr(3000, 200, 6, SR_TYPE_FLOAT64);
    sr_matrix Xs = test_make_matrix_at(ctx, &X, where);
    double *y = random_vector(X.nrows), *w = calloc((size_t)X.ncols, sizeof(double));
    sr_dense yv = sr_vector_view(y, X.nrows, SR_TYPE_FLOAT64, SR_HOST), wv = sr_vector_view(w, X.ncols, SR_TYPE_FLOAT64, SR_HOST);
    int64_t waits[2];
    for (int run = 0; run < 2; run++) {
        sr_solver_options o = sr_solver_options_default();
        o.tolerance = 0; /* exactly max_iterations steps */
        o.max_iterations = run ? 64 : 16;
        const int64_t start = sr_device_waits();
        CHECK_OK(sr_ridge(ctx, Xs, &yv, 1.0, &o, &wv, NULL));
        waits[run] = sr_device_waits() - start;
    }
    CHECK(where == SR_DEVICE ? waits[1] - waits[0] <= 7 : waits[0] == 0 && waits[1] == 0,
          "ridge waited %lld times in 16 CG steps and %lld in 64", (long long)waits[0], (long long)waits[1]);
    free(y), free(w);
    sr_matrix_free(Xs);
    test_csr_free(&X);
}

/* The system user_cg solves in check_asynchronous and check_device_scalars: X of 700 × 300 (its
 * matrix M made at matrix_at), b on `where`, and room for two answers w. */
typedef struct {
    test_csr X;
    sr_matrix M;
    sr_dense b;
    double *b_host, *w[2];
} cg_problem;

static cg_problem cg_problem_make(sr_location matrix_at)
{
    cg_problem p = {.X = test_random_csr(700, 300, 20, SR_TYPE_FLOAT64)};
    p.M = test_make_matrix_at(ctx, &p.X, matrix_at);
    p.b_host = random_vector(p.X.ncols);
    for (int k = 0; k < 2; k++)
        p.w[k] = malloc((size_t)p.X.ncols * sizeof(double));
    const sr_dense bh = sr_vector_view(p.b_host, p.X.ncols, SR_TYPE_FLOAT64, SR_HOST);
    CHECK_OK(sr_vector_alloc(ctx, p.X.ncols, SR_TYPE_FLOAT64, where, &p.b));
    CHECK_OK(sr_vector_copy(ctx, &p.b, &bh));
    return p;
}

static void cg_problem_free(cg_problem *p)
{
    sr_vector_free(ctx, &p->b);
    free(p->b_host), free(p->w[0]), free(p->w[1]);
    sr_matrix_free(p->M);
    test_csr_free(&p->X);
}

/* An asynchronous context (sr_context_options.asynchronous): sr_fused_pattern and sr_spmv return
 * queued on device operands, so a user's CG with device scalars waits only where it reads r·r, and
 * SpMVs in a row (both kernels) wait not at all; every answer has the bits of the waiting context.
 * A host matrix beside device vectors is staged each call and so waits: the matrix lives at `where`. */
static void check_asynchronous(void)
{
    if (!test_part_selected()) /* SR_TEST_PART: another part runs it */
        return;
    cg_problem p = cg_problem_make(where);
    test_csr X = p.X;
    sr_matrix M = p.M;
    sr_dense bd = p.b;
    double *w[2] = {p.w[0], p.w[1]}, rr[2];
    /* deterministic: the default context's fused pattern adds floats atomically on the GPU, so two
     * CGs on it differ in their last bits whether or not they wait (the gate of 2026-12-07 saw it) */
    sr_context_options o;
    CHECK_OK(sr_context_get_options(ctx, &o));
    const bool was_deterministic = o.deterministic;
    CHECK_OK(sr_context_set_deterministic(ctx, true));
    CHECK_OK(user_cg(ctx, where, M, &bd, 2.0, 60, true, 8, w[0], &rr[0]));
    CHECK_OK(sr_context_set_asynchronous(ctx, true));
    CHECK_OK(sr_context_get_options(ctx, &o));
    CHECK(o.asynchronous, "sr_context_get_options does not report the asynchronous context");
    const int64_t before = sr_device_waits();
    CHECK_OK(user_cg(ctx, where, M, &bd, 2.0, 60, true, 8, w[1], &rr[1]));
    const int64_t cg_waits = sr_device_waits() - before;
    /* 7 looks, the last r·r and w read back, and the set-up's copies */
    CHECK(where == SR_DEVICE ? cg_waits <= 7 + 6 : cg_waits == 0,
          "CG of 60 steps looking every 8 on an asynchronous context waited %lld times", (long long)cg_waits);
    const int64_t differ = differing_doubles(w[0], w[1], X.ncols);
    CHECK(differ == 0 && memcmp(&rr[0], &rr[1], sizeof(double)) == 0,
          "CG on an asynchronous context: %lld of %lld coefficients and r·r (%.17g, %.17g) differ", (long long)differ,
          (long long)X.ncols, rr[0], rr[1]);

    /* SpMV y = M·x: the split kernel (M has more entries than rows) and the row kernel, forced */
    double *y[2] = {malloc(X.nrows * sizeof(double)), malloc(X.nrows * sizeof(double))};
    sr_dense yd, xd = sr_vector_view(bd.data, X.ncols, SR_TYPE_FLOAT64, where);
    CHECK_OK(sr_vector_alloc(ctx, X.nrows, SR_TYPE_FLOAT64, where, &yd));
    for (int kernel = 0; kernel < 2; kernel++) {
        setenv("SPARSERING_SPMV_KERNEL", kernel ? "rows" : "split", 1);
        for (int async = 0; async < 2; async++) {
            CHECK_OK(sr_context_set_asynchronous(ctx, async == 1));
            CHECK_OK(sr_spmv(ctx, &yd, NULL, SR_PLUS_TIMES, M, &xd, NULL)); /* the first makes M's plans */
            const int64_t start = sr_device_waits();
            for (int k = 0; k < 10; k++)
                CHECK_OK(sr_spmv(ctx, &yd, NULL, SR_PLUS_TIMES, M, &xd, NULL));
            const int64_t waits = sr_device_waits() - start;
            CHECK(!async || waits == 0, "10 SpMVs (%s kernel) on an asynchronous context waited %lld times",
                  kernel ? "row" : "split", (long long)waits);
            sr_dense yh = sr_vector_view(y[async], X.nrows, SR_TYPE_FLOAT64, SR_HOST);
            CHECK_OK(sr_vector_copy(ctx, &yh, &yd));
        }
        CHECK(memcmp(y[0], y[1], X.nrows * sizeof(double)) == 0,
              "SpMV (%s kernel) on an asynchronous context gives other bits", kernel ? "row" : "split");
    }
    unsetenv("SPARSERING_SPMV_KERNEL");
    CHECK_OK(sr_context_set_asynchronous(ctx, false));
    CHECK_OK(sr_context_set_deterministic(ctx, was_deterministic));
    CHECK(sr_context_set_asynchronous(NULL, true) == SR_ERROR_INVALID_ARGUMENT, "a NULL context was accepted");
    sr_vector_free(ctx, &yd);
    free(y[0]), free(y[1]);
    cg_problem_free(&p);
}

/* Ridge and logistic regression with and without their preconditioners, with and without an
 * intercept, on columns of scales 1 to 1000 (an ill-conditioned Hessian that its diagonal mostly
 * undoes): the same coefficients and fewer CG steps, on each backend. */
static void check_preconditioners(void)
{
    if (!test_part_selected()) /* SR_TEST_PART: another part runs it */
        return;
    const int64_t m = 400, n = 40;
    test_csr X = test_random_csr(m, n, 8, SR_TYPE_FLOAT64);
    for (int64_t k = 0; k < X.nnz; k++)
        ((double *)X.values)[k] *= pow(10.0, (double)(X.colind[k] % 4));
    sr_matrix Xs = test_make_matrix_at(ctx, &X, where);
    double *y = random_vector(m), *w[2] = {calloc((size_t)n, sizeof(double)), calloc((size_t)n, sizeof(double))};
    sr_dense yv = sr_vector_view(y, m, SR_TYPE_FLOAT64, SR_HOST);
    for (int intercept = 0; intercept < 2; intercept++) {
        sr_solver_step last[2];
        double worst, scale;
        solve_both_ways(sr_ridge, Xs, &yv, 0.5, intercept, n, w, last, &worst, &scale);
        CHECK(worst <= 1e-6 * scale, "ridge (intercept %d): Jacobi and plain CG differ by %.3g of %.3g", intercept,
              worst, scale);
        CHECK(fabs(last[0].intercept - last[1].intercept) <= 1e-6 * (fabs(last[1].intercept) + 1e-3),
              "ridge: intercepts %.12g and %.12g", last[0].intercept, last[1].intercept);
        CHECK(last[0].iteration < last[1].iteration,
              "ridge (intercept %d): Jacobi took %d CG steps, plain %d", intercept, last[0].iteration,
              last[1].iteration);
    }
    /* logistic regression's truncated CG, preconditioned by M = 0.99·I + 0.01·diag(H) */
    double *label = malloc((size_t)m * sizeof(double));
    for (int64_t i = 0; i < m; i++)
        label[i] = y[i] > 0 ? 1.0 : -1.0;
    sr_dense lv = sr_vector_view(label, m, SR_TYPE_FLOAT64, SR_HOST);
    for (int intercept = 0; intercept < 2; intercept++) {
        sr_solver_step last[2];
        double worst, scale;
        solve_both_ways(sr_logistic, Xs, &lv, 3.0, intercept, n, w, last, &worst, &scale);
        CHECK(worst <= 1e-6 * scale && fabs(last[0].intercept - last[1].intercept) <= 1e-6 * (scale + 1e-3),
              "logistic (intercept %d): preconditioned and plain differ by %.3g of %.3g", intercept, worst, scale);
        CHECK(last[0].inner < last[1].inner,
              "logistic (intercept %d): %d CG steps preconditioned, %d plain", intercept, last[0].inner,
              last[1].inner);
    }
    sr_solver_options bad = sr_solver_options_default();
    bad.preconditioner = (sr_preconditioner)7;
    sr_dense wv = sr_vector_view(w[0], n, SR_TYPE_FLOAT64, SR_HOST);
    CHECK_FAILS(sr_ridge(ctx, Xs, &yv, 0.5, &bad, &wv, NULL), SR_ERROR_INVALID_ARGUMENT, "preconditioner 7");
    CHECK_FAILS(sr_logistic(ctx, Xs, &lv, 1.0, &bad, &wv, NULL), SR_ERROR_INVALID_ARGUMENT, "preconditioner 7");
    free(label);
    sr_matrix_free(Xs);
    free(y), free(w[0]), free(w[1]);
    test_csr_free(&X);
}

/* The solvers' vector calls (sr_vector_*): alloc, copies both ways, dot and axpby against float64
 * loops, β = 0 ignoring what y held (NaN), x aliasing y, an empty vector, and the rejections. */
static void check_vectors(sr_type type, int64_t n)
{
    if (!test_part_selected()) /* SR_TEST_PART: another part runs it */
        return;
    double *x = random_vector(n), *y = random_vector(n);
    sr_dense hx = typed(x, n, type), hy = typed(y, n, type), dx, dy;
    CHECK_OK(sr_vector_alloc(ctx, n, type, where, &dx));
    CHECK_OK(sr_vector_alloc(ctx, n, type, where, &dy));
    double dot = -1;
    CHECK_OK(sr_vector_dot(ctx, &dx, &dx, &dot));
    CHECK(dot == 0.0, "sr_vector_alloc: a new vector is not zero (x·x = %g)", dot);
    CHECK_OK(sr_vector_copy(ctx, &dx, &hx));
    CHECK_OK(sr_vector_copy(ctx, &dy, &hy));
    double want = 0, scale = 1;
    for (int64_t i = 0; i < n; i++) {
        want += at(&hx, i) * at(&hy, i);
        scale += fabs(at(&hx, i) * at(&hy, i));
    }
    CHECK_OK(sr_vector_dot(ctx, &dx, &dy, &dot));
    CHECK(fabs(dot - want) <= 1e-12 * scale, "sr_vector_dot %s n=%lld: %.17g, expected %.17g", sr_type_name(type),
          (long long)n, dot, want);
    /* y = 0.5·x − 2·y, then y = 3·y (x aliasing y), then y = −x with β = 0 over a NaN y */
    CHECK_OK(sr_vector_axpby(ctx, 0.5, &dx, -2.0, &dy));
    CHECK_OK(sr_vector_axpby(ctx, 3.0, &dy, 0.0, &dy));
    CHECK_OK(sr_vector_copy(ctx, &hy, &dy));
    const double tol = type == SR_TYPE_FLOAT32 ? 1e-5 : 1e-13;
    int bad = 0;
    for (int64_t i = 0; i < n; i++)
        bad += fabs(at(&hy, i) - 3.0 * (0.5 * at(&hx, i) - 2.0 * (type == SR_TYPE_FLOAT32 ? (double)(float)y[i] : y[i]))) >
               tol * 8;
    CHECK(bad == 0, "sr_vector_axpby %s n=%lld: %d wrong entries", sr_type_name(type), (long long)n, bad);
    for (int64_t i = 0; i < n; i++)
        if (type == SR_TYPE_FLOAT32)
            ((float *)hy.data)[i] = NAN;
        else
            ((double *)hy.data)[i] = NAN;
    CHECK_OK(sr_vector_copy(ctx, &dy, &hy));
    CHECK_OK(sr_vector_axpby(ctx, -1.0, &dx, 0.0, &dy));
    CHECK_OK(sr_vector_dot(ctx, &dx, &dy, &dot));
    CHECK(n == 0 || (dot == dot && dot < 0), "sr_vector_axpby with beta 0 read y (x·y = %g)", dot);
    /* α = β = 0 zeroes y without reading x (NaN) or y (NaN) */
    CHECK_OK(sr_vector_copy(ctx, &dy, &hy));
    CHECK_OK(sr_vector_copy(ctx, &dx, &hy));
    CHECK_OK(sr_vector_axpby(ctx, 0.0, &dx, 0.0, &dy));
    CHECK_OK(sr_vector_dot(ctx, &dy, &dy, &dot));
    CHECK(dot == 0.0, "sr_vector_axpby(0, NaN x, 0, NaN y) is not zero (y·y = %g)", dot);
    /* rejections: lengths, places, shapes, types */
    sr_dense shorter = sr_vector_view(hx.data, n > 0 ? n - 1 : 0, type, SR_HOST);
    if (n > 0)
        CHECK_FAILS(sr_vector_copy(ctx, &dx, &shorter), SR_ERROR_INVALID_ARGUMENT, "x is");
    if (where == SR_DEVICE)
        CHECK_FAILS(sr_vector_dot(ctx, &dx, &hy, &dot), SR_ERROR_INVALID_ARGUMENT, "different places");
    sr_dense wide = sr_dense_view(hx.data, 1, n, type, SR_ROW_MAJOR, SR_HOST);
    if (n > 1)
        CHECK_FAILS(sr_vector_axpby(ctx, 1.0, &wide, 1.0, &wide), SR_ERROR_INVALID_ARGUMENT, "n x 1");
    sr_dense ints;
    CHECK_FAILS(sr_vector_alloc(ctx, 4, SR_TYPE_INT32, where, &ints), SR_ERROR_INVALID_ARGUMENT, "float32 or float64");
    CHECK_OK(sr_vector_free(ctx, &dx));
    CHECK_OK(sr_vector_free(ctx, &dy));
    CHECK_OK(sr_vector_free(ctx, &dx)); /* a cleared view again: nothing to free */
    free(hx.data), free(hy.data), free(x), free(y);
}

/* Device scalars: a CG written with them gives the bits of the one with host numbers (the same
 * sums and products, α and β formed in float64 either way); dot_s of an empty vector is 0; a
 * scale of 0 reads neither x nor y (NaN); divide element by element; the rejections. */
static void check_device_scalars(void)
{
    if (!test_part_selected()) /* SR_TEST_PART: another part runs it */
        return;
    cg_problem p = cg_problem_make(SR_HOST);
    test_csr X = p.X;
    sr_matrix M = p.M;
    sr_dense bd = p.b;
    double *w[2] = {p.w[0], p.w[1]}, rr[2], bb;
    CHECK_OK(sr_vector_dot(ctx, &bd, &bd, &bb));
    CHECK_OK(user_cg(ctx, where, M, &bd, 2.0, 60, true, 0, w[0], &rr[0]));
    CHECK_OK(user_cg(ctx, where, M, &bd, 2.0, 60, false, 0, w[1], &rr[1]));
    const int64_t differ = differing_doubles(w[0], w[1], X.ncols);
    CHECK(differ == 0 && memcmp(&rr[0], &rr[1], sizeof(double)) == 0,
          "CG with device scalars: %lld of %lld coefficients and r·r (%.17g, %.17g) differ from host numbers",
          (long long)differ, (long long)X.ncols, rr[0], rr[1]);
    CHECK(rr[0] <= 1e-12 * bb, "CG did not converge in 60 steps (r·r %g of b·b %g)", rr[0], bb);

    sr_dense s, s2, nan_x, y, z, host_s;
    double got = -1;
    host_s = sr_vector_view(&got, 1, SR_TYPE_FLOAT64, SR_HOST);
    CHECK_OK(sr_vector_alloc(ctx, 1, SR_TYPE_FLOAT64, where, &s));
    CHECK_OK(sr_vector_alloc(ctx, 1, SR_TYPE_FLOAT64, where, &s2));
    CHECK_OK(sr_vector_dot_s(ctx, &bd, &bd, &s));
    CHECK_OK(sr_vector_dot(ctx, &bd, &bd, &rr[1]));
    CHECK_OK(sr_vector_copy(ctx, &host_s, &s));
    CHECK(memcmp(&got, &rr[1], sizeof got) == 0, "sr_vector_dot_s %.17g, sr_vector_dot %.17g", got, rr[1]);
    CHECK_OK(sr_vector_asum_s(ctx, &bd, &s)); /* b has entries of both signs */
    CHECK_OK(sr_vector_asum(ctx, &bd, &rr[1]));
    CHECK_OK(sr_vector_copy(ctx, &host_s, &s));
    CHECK(memcmp(&got, &rr[1], sizeof got) == 0, "sr_vector_asum_s %.17g, sr_vector_asum %.17g", got, rr[1]);
    sr_dense empty;
    CHECK_OK(sr_vector_alloc(ctx, 0, SR_TYPE_FLOAT64, where, &empty));
    CHECK_OK(sr_vector_dot_s(ctx, &empty, &empty, &s));
    CHECK_OK(sr_vector_copy(ctx, &host_s, &s));
    CHECK(got == 0.0, "sr_vector_dot_s of an empty vector: %g", got);
    const sr_dense b0 = sr_vector_view(bd.data, 1, SR_TYPE_FLOAT64, where);
    CHECK_OK(sr_vector_copy(ctx, &s, &b0)); /* s = b_0 (not 0), then the empty sum */
    CHECK_OK(sr_vector_asum_s(ctx, &empty, &s));
    sr_vector_free(ctx, &empty);
    CHECK_OK(sr_vector_copy(ctx, &host_s, &s));
    CHECK(got == 0.0, "sr_vector_asum_s of an empty vector: %g", got);
    /* y = (2·s)·x + (3·s2)·y with s = 0, s2 = 0: x and y NaN, y becomes 0 */
    const int64_t n = 1000;
    double *nans = malloc(n * sizeof(double)), *yy = malloc(n * sizeof(double)), *zz = malloc(n * sizeof(double));
    for (int64_t i = 0; i < n; i++)
        nans[i] = NAN;
    sr_dense nh = sr_vector_view(nans, n, SR_TYPE_FLOAT64, SR_HOST);
    CHECK_OK(sr_vector_alloc(ctx, n, SR_TYPE_FLOAT64, where, &nan_x));
    CHECK_OK(sr_vector_alloc(ctx, n, SR_TYPE_FLOAT64, where, &y));
    CHECK_OK(sr_vector_alloc(ctx, n, SR_TYPE_FLOAT64, where, &z));
    CHECK_OK(sr_vector_copy(ctx, &nan_x, &nh));
    CHECK_OK(sr_vector_copy(ctx, &y, &nh));
    CHECK_OK(sr_vector_axpby(ctx, 0.0, &s, 0.0, &s)); /* s = s2 = 0 */
    CHECK_OK(sr_vector_copy(ctx, &s2, &s));
    CHECK_OK(sr_vector_axpby_s(ctx, 2.0, &s, &nan_x, 3.0, &s2, &y));
    sr_dense yh = sr_vector_view(yy, n, SR_TYPE_FLOAT64, SR_HOST), zh = sr_vector_view(zz, n, SR_TYPE_FLOAT64, SR_HOST);
    CHECK_OK(sr_vector_copy(ctx, &yh, &y));
    int64_t nonzero = 0;
    for (int64_t i = 0; i < n; i++)
        nonzero += yy[i] != 0.0;
    CHECK(nonzero == 0, "sr_vector_axpby_s with zero scalars read x or y: %lld entries not 0", (long long)nonzero);
    /* z = x / y against a loop, signed zeros and infinities included */
    for (int64_t i = 0; i < n; i++)
        nans[i] = test_uniform() * 4 - 2, yy[i] = i % 97 == 0 ? (i % 2 ? -0.0 : 0.0) : test_uniform() - 0.5;
    CHECK_OK(sr_vector_copy(ctx, &nan_x, &nh));
    CHECK_OK(sr_vector_copy(ctx, &y, &yh));
    CHECK_OK(sr_vector_divide(ctx, &z, &nan_x, &y));
    CHECK_OK(sr_vector_copy(ctx, &zh, &z));
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; i++) {
        const double want = nans[i] / yy[i];
        wrong += memcmp(&want, &zz[i], sizeof want) != 0;
    }
    CHECK(wrong == 0, "sr_vector_divide: %lld of %lld quotients differ from x/y", (long long)wrong, (long long)n);
    /* flag = flag ∧ x > t against a loop: flags 0, 1 and 7 (any nonzero is on), x around t, NaN */
    for (int64_t i = 0; i < n; i++)
        yy[i] = i % 3 == 0 ? 0.0 : i % 3 == 1 ? 1.0 : 7.0, nans[i] = i % 11 == 0 ? NAN : i % 5 == 0 ? 0.25 : test_uniform() - 0.25;
    CHECK_OK(sr_vector_copy(ctx, &nan_x, &nh));
    CHECK_OK(sr_vector_copy(ctx, &y, &yh));
    CHECK_OK(sr_vector_and_greater(ctx, &y, &nan_x, 0.25));
    CHECK_OK(sr_vector_copy(ctx, &zh, &y));
    wrong = 0;
    for (int64_t i = 0; i < n; i++)
        wrong += zz[i] != (yy[i] != 0 && nans[i] > 0.25 ? 1.0 : 0.0);
    CHECK(wrong == 0, "sr_vector_and_greater: %lld of %lld flags differ from a loop's", (long long)wrong, (long long)n);
    /* rejections */
    sr_dense f32, two;
    CHECK_OK(sr_vector_alloc(ctx, 1, SR_TYPE_FLOAT32, where, &f32));
    CHECK_OK(sr_vector_alloc(ctx, 2, SR_TYPE_FLOAT64, where, &two));
    CHECK_FAILS(sr_vector_dot_s(ctx, &y, &y, &f32), SR_ERROR_INVALID_ARGUMENT, "not float64");
    CHECK_FAILS(sr_vector_dot_s(ctx, &y, &y, &two), SR_ERROR_INVALID_ARGUMENT, "1 x 1");
    CHECK_FAILS(sr_vector_axpby_s(ctx, 1.0, &two, &y, 1.0, NULL, &y), SR_ERROR_INVALID_ARGUMENT, "1 x 1");
    CHECK_FAILS(sr_vector_divide(ctx, &two, &y, &y), SR_ERROR_INVALID_ARGUMENT, "z is");
    CHECK_FAILS(sr_vector_and_greater(ctx, &two, &y, 0.0), SR_ERROR_INVALID_ARGUMENT, "flag is");
    CHECK_FAILS(sr_vector_and_greater(ctx, &y, &y, NAN), SR_ERROR_INVALID_ARGUMENT, "threshold is NaN");
    if (where == SR_DEVICE) {
        CHECK_FAILS(sr_vector_dot_s(ctx, &y, &y, &host_s), SR_ERROR_INVALID_ARGUMENT, "lives on the host");
        CHECK_FAILS(sr_vector_axpby_s(ctx, 1.0, NULL, &y, 1.0, &host_s, &y), SR_ERROR_INVALID_ARGUMENT,
                    "lives on the host");
    }
    sr_vector_free(ctx, &f32), sr_vector_free(ctx, &two), sr_vector_free(ctx, &s), sr_vector_free(ctx, &s2);
    sr_vector_free(ctx, &nan_x), sr_vector_free(ctx, &y), sr_vector_free(ctx, &z);
    free(nans), free(yy), free(zz);
    cg_problem_free(&p);
}

/* Tall sparse X on the CPU (threads sum into copies of w): the same bits on every call with the
 * same threads (the copies once took whichever rows their thread claimed, and the last bits of a
 * solver's run varied from run to run). */
static void check_tall_repeats(void)
{
    if (!test_part_selected()) /* SR_TEST_PART: another part runs it */
        return;
    test_csr X = test_random_csr(60000, 400, 12, SR_TYPE_FLOAT64);
    double *y = random_vector(X.ncols), *w0 = calloc((size_t)X.ncols, sizeof(double)), *w = calloc((size_t)X.ncols, sizeof(double));
    setenv("SPARSERING_SERIAL_WORK", "0", 1);
    sr_context_options o = sr_context_options_default();
    o.backend = SR_BACKEND_CPU;
    o.threads = 3;
    sr_context c = NULL;
    CHECK(sr_context_create(&c, &o) == SR_SUCCESS, "CPU context: %s", sr_last_error());
    sr_matrix M = test_make_matrix(c, &X);
    sr_dense yv = sr_vector_view(y, X.ncols, SR_TYPE_FLOAT64, SR_HOST);
    int differ = 0;
    for (int rep = 0; rep < 8; rep++) {
        sr_dense wv = sr_vector_view(rep ? w : w0, X.ncols, SR_TYPE_FLOAT64, SR_HOST);
        CHECK(sr_fused_pattern(c, SR_FORM_XTVXY, &wv, 1.0, M, NULL, &yv, 0.5, &yv) == SR_SUCCESS, "%s",
              sr_last_error());
        differ += rep > 0 && memcmp(w, w0, (size_t)X.ncols * sizeof(double)) != 0;
    }
    unsetenv("SPARSERING_SERIAL_WORK");
    CHECK(differ == 0, "tall X on 3 threads: %d of 7 repeated calls gave other bits", differ);
    sr_matrix_free(M);
    sr_context_destroy(c);
    free(y), free(w0), free(w);
    test_csr_free(&X);
}

/* Wide sparse X on the CPU (more columns than rows: threads own ranges of w's columns): each w(j)
 * is summed by one thread in row order, so 1, 2 and 3 threads give the same bits. */
static void check_column_ranges_any_threads(void)
{
    if (!test_part_selected()) /* SR_TEST_PART: another part runs it */
        return;
    test_csr X = test_random_csr(2000, 5000, 300, SR_TYPE_FLOAT64); /* ~100 rows a column */
    double *y = random_vector(X.ncols), *v = random_vector(X.nrows), *w[3];
    setenv("SPARSERING_SERIAL_WORK", "0", 1); /* every thread asked for, however small the work */
    for (int t = 0; t < 3; t++) {
        sr_context_options o = sr_context_options_default();
        o.backend = SR_BACKEND_CPU;
        o.threads = t + 1;
        sr_context c = NULL;
        w[t] = calloc((size_t)X.ncols, sizeof(double));
        CHECK(sr_context_create(&c, &o) == SR_SUCCESS, "CPU context: %s", sr_last_error());
        sr_matrix M = test_make_matrix(c, &X);
        sr_dense wv = sr_vector_view(w[t], X.ncols, SR_TYPE_FLOAT64, SR_HOST);
        sr_dense yv = sr_vector_view(y, X.ncols, SR_TYPE_FLOAT64, SR_HOST);
        sr_dense vv = sr_vector_view(v, X.nrows, SR_TYPE_FLOAT64, SR_HOST);
        CHECK(sr_fused_pattern(c, SR_FORM_XTVXY, &wv, 0.5, M, &vv, &yv, 0.0, NULL) == SR_SUCCESS, "%s",
              sr_last_error());
        sr_matrix_free(M);
        sr_context_destroy(c);
    }
    unsetenv("SPARSERING_SERIAL_WORK");
    const int64_t differ = differing_doubles(w[0], w[1], X.ncols) + differing_doubles(w[0], w[2], X.ncols);
    CHECK(differ == 0, "wide X: %lld of w's %lld sums differ between 1, 2 and 3 threads", (long long)differ,
          (long long)X.ncols);
    for (int t = 0; t < 3; t++)
        free(w[t]);
    free(y), free(v);
    test_csr_free(&X);
}

static void check_cases(void)
{
    const sr_type f = SR_TYPE_FLOAT32, d = SR_TYPE_FLOAT64;
    check_case(0, 0, 1, d, d, false, SR_ROW_MAJOR);
    check_case(2000, 30, 6, d, d, false, SR_ROW_MAJOR);   /* tall */
    check_case(2000, 30, 6, f, f, false, SR_ROW_MAJOR);
    check_case(2000, 5000, 6, d, d, false, SR_ROW_MAJOR); /* w fits a GPU block's shared memory once */
    /* wide, w past a GPU block's shared memory: the skewed columns put most entries in the ones
     * that fit there (hot columns in shared memory, the rest in global memory), or, past 10^5
     * columns, a minority (everything in global memory) */
    check_case(20, 50000, 300, d, d, false, SR_ROW_MAJOR);
    check_case(20, 50000, 300, f, f, false, SR_ROW_MAJOR);
    check_case(20, 50000, 300, d, SR_TYPE_BOOL, false, SR_ROW_MAJOR);
    check_case(20, 400000, 300, f, f, false, SR_ROW_MAJOR);
    /* long rows over wide X with spread columns, in float64, float32 and bool: on the GPU by column
     * ranges, whose lanes a row (8, 4, 2, 32) follow its entries in a range (19, 5.3, 1.5, 38 here,
     * over ~132 ranges); on the CPU by the threads' column ranges */
    check_case(12, 300000, 2500, d, d, false, SR_ROW_MAJOR);
    check_case(12, 300000, 700, f, SR_TYPE_BOOL, false, SR_ROW_MAJOR);
    check_case(3000, 2000000, 200, d, d, false, SR_ROW_MAJOR); /* many rows */
    check_case(12, 300000, 5000, f, f, false, SR_ROW_MAJOR);
    check_case(500, 1, 1, d, d, false, SR_ROW_MAJOR);     /* a single column */
    check_case(300, 200, 40, f, SR_TYPE_BOOL, false, SR_ROW_MAJOR); /* bool X: entries count 1 */
    check_case(400, 40, 40, d, d, true, SR_ROW_MAJOR);    /* dense, register tiles */
    check_case(150, 33, 33, f, f, true, SR_COL_MAJOR);    /* dense, column-major */
    check_case(60, 1500, 1500, d, d, true, SR_ROW_MAJOR); /* dense, wider than the register tiles */
    check_case(70000, 100, 60, f, f, true, SR_ROW_MAJOR); /* dense, more rows than a grid's warps take at once */
    check_row_tiles();
}

/* The cases on a deterministic CUDA context (the fixed-order sums of cuda_fused_ordered.cuh): the
 * same answers, and the same bits on a second call and a second context. */
static void check_cases_deterministic(void)
{
    sr_context_options o;
    CHECK_OK(sr_context_get_options(ctx, &o));
    o.deterministic = true;
    CHECK_OK(sr_context_create(&twin, &o));
    CHECK_OK(sr_context_set_deterministic(ctx, true));
    check_cases();
    CHECK_OK(sr_context_set_deterministic(ctx, false));
    sr_context_destroy(twin);
    twin = NULL;
}

static void run_all(void)
{
    check_cases();
    if (where == SR_DEVICE)
        check_cases_deterministic();
    if (where == SR_HOST) {
        check_column_ranges_any_threads();
        check_tall_repeats();
    }
    check_errors();
    check_nonfinite_refused();
    check_vectors(SR_TYPE_FLOAT64, 100003);
    check_vectors(SR_TYPE_FLOAT32, 777);
    check_vectors(SR_TYPE_FLOAT64, 0);
    check_device_scalars();
    check_solvers();
    check_ridge_looks();
    check_logistic_looks();
    check_solver_contexts();
    check_waits();
    check_asynchronous();
    check_preconditioners();
}

int main(void)
{
    test_seed("test_fused");
    test_on_each_backend(&ctx, &where, run_all);
    return test_finish("test_fused");
}
