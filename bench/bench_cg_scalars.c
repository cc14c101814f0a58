/* A CG step three ways on one random sparse X (issue 60): the library's ridge CG (plain, run for a
 * fixed number of steps: tolerance 0), a user's CG on the public API with host numbers
 * (sr_vector_dot returns each sum to the host: on a GPU every call waits for it) and the same CG
 * with device scalars (sr_vector_dot_s, _axpby_s, _divide: the host reads r·r every 32 steps);
 * beside them the step's own work, one fused product (XᵀX + λI)·p alone. Each figure is the
 * difference of a run of 2K steps and one of K, over K: the set-up cancels.
 *
 *   bench_cg_scalars [cpu|cuda] [rows] [cols] [entries a row] [K] [looks]
 *   (defaults cuda 200000 50000 10 500 1,4,8,16,32)
 *
 * Prints ms and host waits for the GPU (sr_device_waits) a step for each, the device-scalar CG once
 * for each look interval in `looks` (the host reads r·r every that many steps), and the CGs' final
 * r·r (the two user CGs' equal bit for bit, whatever the look interval). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_time.h"
#include "sparsering.h"
#include "user_cg.h" /* tests/: the CG written both ways */

#define TRY(call)                                                                                  \
    do {                                                                                           \
        sr_status s_ = (call);                                                                     \
        if (s_ != SR_SUCCESS) {                                                                    \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, sr_status_name(s_), sr_last_error()); \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static sr_context ctx;
static sr_location where;
static sr_matrix X;
static sr_dense b; /* Xᵀ·y, the normal equations' right side, where X lives */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double uniform(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) * 0x1.0p-53;
}

/* m x n, `per_row` distinct columns a row (drawn, repeats redrawn), values in (−1, 1). */
static void make_x(int64_t m, int64_t n, int per_row)
{
    int64_t *rowptr = malloc((size_t)(m + 1) * sizeof *rowptr);
    int32_t *col = malloc((size_t)(m * per_row) * sizeof *col);
    double *val = malloc((size_t)(m * per_row) * sizeof *val);
    for (int64_t i = 0; i <= m; i++)
        rowptr[i] = i * per_row;
    for (int64_t i = 0; i < m; i++) {
        int32_t *c = col + i * per_row;
        for (int k = 0; k < per_row; k++) {
            bool again;
            do {
                c[k] = (int32_t)(uniform() * (double)n);
                again = false;
                for (int j = 0; j < k; j++)
                    again |= c[j] == c[k];
            } while (again);
            for (int j = k; j > 0 && c[j - 1] > c[j]; j--) { /* keep the row sorted */
                const int32_t t = c[j];
                c[j] = c[j - 1], c[j - 1] = t;
            }
        }
        for (int k = 0; k < per_row; k++)
            val[i * per_row + k] = 2 * uniform() - 1;
    }
    sr_matrix on_host; /* the arrays are on the host, and the matrix is made where they live */
    TRY(sr_matrix_from_csr(ctx, &on_host, m, n, SR_TYPE_FLOAT64, rowptr, col, val, SR_HOST));
    free(rowptr), free(col), free(val);
    if (where == SR_HOST) {
        X = on_host;
        return;
    }
    TRY(sr_matrix_copy_to(ctx, on_host, where, &X));
    sr_matrix_free(on_host);
}

/* The library's ridge CG (no preconditioner, no intercept) for exactly `steps` steps. */
static void library_cg(int steps, double lambda, const sr_dense *y, double *w_host)
{
    sr_solver_options o = sr_solver_options_default();
    o.tolerance = 0.0;
    o.max_iterations = steps;
    o.preconditioner = SR_PRECONDITIONER_NONE;
    sr_dense wv = sr_vector_view(w_host, b.nrows, SR_TYPE_FLOAT64, SR_HOST);
    TRY(sr_ridge(ctx, X, y, lambda, &o, &wv, NULL));
}

static void fused_only(int steps, double lambda)
{
    sr_dense p, q;
    TRY(sr_vector_alloc(ctx, b.nrows, SR_TYPE_FLOAT64, where, &p));
    TRY(sr_vector_alloc(ctx, b.nrows, SR_TYPE_FLOAT64, where, &q));
    TRY(sr_vector_copy(ctx, &p, &b));
    for (int it = 0; it < steps; it++)
        TRY(sr_fused_pattern(ctx, SR_FORM_XTVXY, &q, 1.0, X, NULL, &p, lambda, &p));
    double sink;
    TRY(sr_vector_dot(ctx, &q, &q, &sink)); /* waits for the last product */
    sr_vector_free(ctx, &p), sr_vector_free(ctx, &q);
}

int main(int argc, char **argv)
{
    const bool cuda = argc < 2 || strcmp(argv[1], "cuda") == 0;
    const int64_t m = argc > 2 ? atoll(argv[2]) : 200000, n = argc > 3 ? atoll(argv[3]) : 50000;
    const int per_row = argc > 4 ? atoi(argv[4]) : 10, K = argc > 5 ? atoi(argv[5]) : 500;
    int looks[16], nlooks = 0;
    char *list = strdup(argc > 6 ? argv[6] : "1,4,8,16,32");
    for (char *tok = strtok(list, ","); tok && nlooks < 16; tok = strtok(NULL, ","))
        looks[nlooks++] = atoi(tok) > 0 ? atoi(tok) : 1;
    free(list);
    if (nlooks == 0)
        looks[nlooks++] = 32;
    const double lambda = 1.0;
    sr_context_options o = sr_context_options_default();
    o.backend = cuda ? SR_BACKEND_CUDA : SR_BACKEND_CPU;
    TRY(sr_context_create(&ctx, &o));
    where = cuda ? SR_DEVICE : SR_HOST;
    make_x(m, n, per_row);
    double *y = malloc((size_t)m * sizeof *y), *w = malloc((size_t)n * sizeof *w);
    for (int64_t i = 0; i < m; i++)
        y[i] = 2 * uniform() - 1;
    sr_dense yh = sr_vector_view(y, m, SR_TYPE_FLOAT64, SR_HOST), yd;
    TRY(sr_vector_alloc(ctx, m, SR_TYPE_FLOAT64, where, &yd));
    TRY(sr_vector_copy(ctx, &yd, &yh));
    TRY(sr_vector_alloc(ctx, n, SR_TYPE_FLOAT64, where, &b));
    TRY(sr_fused_pattern(ctx, SR_FORM_XTY, &b, 1.0, X, NULL, &yd, 0.0, NULL));
    printf("X %lld x %lld, %lld entries (float64), %s; K = %d\n", (long long)m, (long long)n,
           (long long)(m * per_row), cuda ? "CUDA" : "CPU", K);
    const char *names[] = {"fused product alone", "library ridge CG", "user CG, host numbers",
                           "user CG, device scalars"};
    double per_step[4], rr[4] = {0, 0, 0, 0}, rr_scalars[16];
    bool same_bits = true;
    for (int v = 0; v < 4; v++)
        for (int l = 0; l < (v == 3 ? nlooks : 1); l++) {
            const int look = v == 3 ? looks[l] : 32;
            double t[2];
            int64_t waits[2];
            for (int h = 0; h < 2; h++) {
                const int steps = K * (h + 1);
                TRY(user_cg(ctx, where, X, &b, lambda, 4, v == 3, look, NULL, &rr[v])); /* warm: allocations, the plan */
                const int64_t w0 = sr_device_waits();
                const double t0 = now();
                if (v == 0)
                    fused_only(steps, lambda);
                else if (v == 1)
                    library_cg(steps, lambda, &yh, w);
                else
                    TRY(user_cg(ctx, where, X, &b, lambda, steps, v == 3, look, NULL, &rr[v]));
                t[h] = now() - t0;
                waits[h] = sr_device_waits() - w0;
            }
            per_step[v] = (t[1] - t[0]) / K;
            char name[64];
            snprintf(name, sizeof name, v == 3 ? "%s, look %d" : "%s", names[v], look);
            printf("  %-34s %8.4f ms a step (%.2fx the fused product), %5.3f host waits a step\n", name,
                   1e3 * per_step[v], per_step[v] / per_step[0], (double)(waits[1] - waits[0]) / K);
            if (v == 3) {
                rr_scalars[l] = rr[3];
                same_bits &= memcmp(&rr[2], &rr[3], sizeof(double)) == 0;
            }
        }
    printf("  device scalars (look %d) / host numbers: %.2fx faster\n", looks[nlooks - 1], per_step[2] / per_step[3]);
    printf("  r.r after %d steps: host numbers %.17g", 2 * K, rr[2]);
    for (int l = 0; l < nlooks; l++)
        printf(", look %d %.17g", looks[l], rr_scalars[l]);
    printf(" (%s)\n", same_bits ? "the same bits" : "DIFFERENT");
    sr_vector_free(ctx, &yd), sr_vector_free(ctx, &b);
    sr_matrix_free(X);
    sr_context_destroy(ctx);
    free(y), free(w);
    return same_bits ? 0 : 1;
}
