/* sparsering fused / ridge / logistic: the fused pattern w = α·Xᵀ(v ⊙ X·y) + β·z and the
 * regression solvers on it. X is a Matrix Market file (samples x features); vectors are text
 * files of one number a line ('#' comments) or Matrix Market n x 1 files. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* A vector from a file: Matrix Market (.mtx, .mtx.gz) or one number a line. *n receives its
 * length; prints the file and line on error and returns NULL. */
static double *read_vector(sr_context ctx, const char *path, int64_t *n)
{
    if (strstr(path, ".mtx")) {
        sr_matrix M = NULL;
        sr_matrix_info info;
        if (sr_matrix_read_mm(ctx, path, SR_TYPE_FLOAT64, &M, NULL) != SR_SUCCESS ||
            sr_matrix_get_info(M, &info) != SR_SUCCESS || info.ncols != 1) {
            fprintf(stderr, "sparsering: %s: %s\n", path, M ? "not a column vector (n x 1)" : sr_last_error());
            sr_matrix_free(M);
            return NULL;
        }
        double *x = calloc((size_t)info.nrows + 1, sizeof(double));
        sr_dense d = sr_vector_view(x, info.nrows, SR_TYPE_FLOAT64, SR_HOST);
        if (!x || sr_matrix_export_dense(ctx, M, &d) != SR_SUCCESS) {
            fprintf(stderr, "sparsering: %s: %s\n", path, x ? sr_last_error() : "out of memory");
            free(x);
            x = NULL;
        }
        *n = info.nrows;
        sr_matrix_free(M);
        return x;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "sparsering: %s: %s\n", path, strerror(errno));
        return NULL;
    }
    int64_t cap = 1024, count = 0;
    double *x = malloc((size_t)cap * sizeof(double));
    char line[256];
    long long lineno = 0;
    while (x && fgets(line, sizeof line, f)) {
        lineno++;
        char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '#' || *p == '\n' || *p == '\r' || *p == '\0')
            continue;
        char *end;
        const double v = strtod(p, &end);
        while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
            end++;
        if (end == p || *end != '\0') {
            fprintf(stderr, "sparsering: %s:%lld: expected one number\n", path, lineno);
            free(x);
            x = NULL;
            break;
        }
        if (count == cap) {
            double *grown = realloc(x, (size_t)(cap *= 2) * sizeof(double));
            if (!grown) {
                free(x);
                x = NULL;
                break;
            }
            x = grown;
        }
        x[count++] = v;
    }
    fclose(f);
    *n = count;
    return x;
}

static int write_vector(const char *path, const double *x, int64_t n)
{
    FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
    if (!f) {
        fprintf(stderr, "sparsering: %s: %s\n", path, strerror(errno));
        return CLI_FAILED;
    }
    for (int64_t i = 0; i < n; i++)
        fprintf(f, "%.17g\n", x[i]);
    if (f != stdout && fclose(f) != 0) {
        fprintf(stderr, "sparsering: %s: %s\n", path, strerror(errno));
        return CLI_FAILED;
    }
    return CLI_OK;
}

static int wrong_length(const char *what, const char *path, int64_t got, int64_t want)
{
    fprintf(stderr, "sparsering: %s (%s) has %lld values; X needs %lld\n", what, path, (long long)got, (long long)want);
    return CLI_USAGE;
}

int cmd_fused(const cli_globals *g, int argc, char **argv)
{
    const char *x_path = NULL, *y_path = NULL, *v_path = NULL, *z_path = NULL, *out = "-", *form_name = "xtvxy";
    double alpha = 1, beta = 0;
    int bad = 0;
    for (int i = 1; i < argc && !bad; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--form") == 0)
            form_name = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--v") == 0)
            v_path = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--z") == 0)
            z_path = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--alpha") == 0)
            alpha = atof(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--beta") == 0)
            beta = atof(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--out") == 0)
            out = argv[++i];
        else if (argv[i][0] != '-' && !x_path)
            x_path = argv[i];
        else if (argv[i][0] != '-' && !y_path)
            y_path = argv[i];
        else
            bad = 1;
    }
    const sr_pattern_form form = strcmp(form_name, "xty") == 0 ? SR_FORM_XTY
                                 : strcmp(form_name, "xy") == 0 ? SR_FORM_XY
                                                                 : SR_FORM_XTVXY;
    if (bad || !y_path || (form == SR_FORM_XTVXY && strcmp(form_name, "xtvxy") != 0)) {
        fputs("usage: sparsering fused X.mtx Y [--form xtvxy|xty|xy] [--v V] [--z Z] [--alpha A] [--beta B]\n"
              "                        [--out W.txt]\n"
              "  w = alpha * X^T (v .* (X y)) + beta * z (xtvxy), alpha * X^T (v .* y) + beta * z (xty),\n"
              "  alpha * v .* (X y) + beta * z (xy), X read once; vectors: one number a line, or n x 1 .mtx\n",
              stderr);
        return CLI_USAGE;
    }
    sr_context ctx;
    int rc = cli_context(g, &ctx);
    if (rc != CLI_OK)
        return rc;
    sr_matrix X = NULL;
    sr_status s = sr_matrix_read_mm(ctx, x_path, SR_TYPE_FLOAT64, &X, NULL);
    if (s == SR_SUCCESS)
        s = cli_to_backend(ctx, &X);
    double *y = NULL, *v = NULL, *z = NULL, *w = NULL;
    int64_t ny = 0, nv = 0, nz = 0;
    sr_matrix_info info = {0};
    if (s != SR_SUCCESS) {
        rc = cli_fail(s, x_path);
    } else {
        sr_matrix_get_info(X, &info);
        const int64_t want_y = form == SR_FORM_XTY ? info.nrows : info.ncols, nw = form == SR_FORM_XY ? info.nrows : info.ncols;
        if (!(y = read_vector(ctx, y_path, &ny)) || (v_path && !(v = read_vector(ctx, v_path, &nv))) ||
            (z_path && !(z = read_vector(ctx, z_path, &nz))))
            rc = CLI_BAD_INPUT;
        else if (ny != want_y)
            rc = wrong_length("y", y_path, ny, want_y);
        else if (v && nv != info.nrows)
            rc = wrong_length("v", v_path, nv, info.nrows);
        else if (z && nz != nw)
            rc = wrong_length("z", z_path, nz, nw);
        if (rc == CLI_OK) {
            w = calloc((size_t)nw + 1, sizeof(double));
            sr_dense wv = sr_vector_view(w, nw, SR_TYPE_FLOAT64, SR_HOST), yv = sr_vector_view(y, ny, SR_TYPE_FLOAT64, SR_HOST);
            sr_dense vv = sr_vector_view(v, nv, SR_TYPE_FLOAT64, SR_HOST), zv = sr_vector_view(z, nz, SR_TYPE_FLOAT64, SR_HOST);
            const double t0 = cli_seconds();
            s = sr_fused_pattern(ctx, form, &wv, alpha, X, v ? &vv : NULL, &yv, beta, z ? &zv : NULL);
            const double t = cli_seconds() - t0;
            if (s != SR_SUCCESS)
                rc = cli_fail(s, "fused pattern");
            else if ((rc = write_vector(out, w, nw)) == CLI_OK && strcmp(out, "-") != 0)
                printf("fused %s: X %lld x %lld, %lld entries; %s backend, %.4f s; w written to %s\n", form_name,
                       (long long)info.nrows, (long long)info.ncols, (long long)info.nnz, cli_backend_name(ctx), t, out);
        }
    }
    free(y), free(v), free(z), free(w);
    sr_matrix_free(X);
    sr_context_destroy(ctx);
    return rc;
}

static int print_step(const sr_solver_step *step, void *user)
{
    (void)user;
    printf("%9d %8d %20.12g %14.6g %10.3f\n", step->iteration, step->inner, step->loss, step->gradient_norm,
           step->seconds);
    fflush(stdout);
    return cli_interrupted; /* Ctrl-C: stop after this iteration */
}

/* ridge and logistic: X.mtx LABELS [--lambda L | --C C] [--plain-cg] [--tol T] [--max-iter N] [--out W.txt] */
static int solver_command(const cli_globals *g, int argc, char **argv, bool logistic)
{
    const char *x_path = NULL, *y_path = NULL, *out = NULL;
    double param = 1.0;
    sr_solver_options o = sr_solver_options_default();
    int bad = 0;
    for (int i = 1; i < argc && !bad; i++) {
        if (i + 1 < argc && strcmp(argv[i], logistic ? "--C" : "--lambda") == 0)
            param = atof(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--tol") == 0)
            o.tolerance = atof(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--max-iter") == 0)
            o.max_iterations = atoi(argv[++i]);
        else if (strcmp(argv[i], "--fit-intercept") == 0)
            o.fit_intercept = true;
        else if (strcmp(argv[i], "--plain-cg") == 0)
            o.preconditioner = SR_PRECONDITIONER_NONE;
        else if (i + 1 < argc && strcmp(argv[i], "--out") == 0)
            out = argv[++i];
        else if (argv[i][0] != '-' && !x_path)
            x_path = argv[i];
        else if (argv[i][0] != '-' && !y_path)
            y_path = argv[i];
        else
            bad = 1;
    }
    if (bad || !y_path) {
        fprintf(stderr,
                "usage: sparsering %s X.mtx LABELS [%s] [--fit-intercept] [--plain-cg] [--tol T] [--max-iter N] [--out W.txt]\n"
                "  %s; --plain-cg: CG without the diagonal preconditioner; LABELS: one number a line (or an n x 1 .mtx)%s\n",
                logistic ? "logistic" : "ridge", logistic ? "--C C" : "--lambda L",
                logistic ? "L2 logistic regression by trust-region Newton (LIBLINEAR's objective)"
                         : "ridge regression by CG on the normal equations",
                logistic ? ", +1/-1 or 1/0" : "");
        return CLI_USAGE;
    }
    sr_context ctx;
    int rc = cli_context(g, &ctx);
    if (rc != CLI_OK)
        return rc;
    sr_matrix X = NULL;
    const double t0 = cli_seconds();
    sr_status s = sr_matrix_read_mm(ctx, x_path, SR_TYPE_FLOAT64, &X, NULL);
    if (s == SR_SUCCESS)
        s = cli_to_backend(ctx, &X);
    double *y = NULL, *w = NULL;
    int64_t ny = 0;
    if (s != SR_SUCCESS) {
        rc = cli_fail(s, x_path);
    } else if (!(y = read_vector(ctx, y_path, &ny))) {
        rc = CLI_BAD_INPUT;
    } else {
        sr_matrix_info info;
        sr_matrix_get_info(X, &info);
        if (ny != info.nrows) {
            rc = wrong_length("the labels", y_path, ny, info.nrows);
        } else {
            w = calloc((size_t)info.ncols + 1, sizeof(double));
            printf("%s: X %lld x %lld, %lld entries; %s %g; %s backend, read %.3f s\n", logistic ? "logistic" : "ridge",
                   (long long)info.nrows, (long long)info.ncols, (long long)info.nnz, logistic ? "C" : "lambda", param,
                   cli_backend_name(ctx), cli_seconds() - t0);
            printf("%9s %8s %20s %14s %10s\n", "iteration", "CG steps", "objective", "|gradient|", "seconds");
            o.report = print_step;
            sr_dense yv = sr_vector_view(y, ny, SR_TYPE_FLOAT64, SR_HOST), wv = sr_vector_view(w, info.ncols, SR_TYPE_FLOAT64, SR_HOST);
            sr_solver_step last;
            s = logistic ? sr_logistic(ctx, X, &yv, param, &o, &wv, &last) : sr_ridge(ctx, X, &yv, param, &o, &wv, &last);
            if (s != SR_SUCCESS) {
                rc = cli_fail(s, logistic ? "logistic regression" : "ridge regression");
            } else {
                if (o.fit_intercept)
                    printf("intercept %.17g\n", last.intercept);
                if (out)
                    rc = write_vector(out, w, info.ncols);
            }
        }
    }
    free(y), free(w);
    sr_matrix_free(X);
    sr_context_destroy(ctx);
    return rc;
}

int cmd_ridge(const cli_globals *g, int argc, char **argv) { return solver_command(g, argc, argv, false); }
int cmd_logistic(const cli_globals *g, int argc, char **argv) { return solver_command(g, argc, argv, true); }
