/* sparsering sddmm: the sampled product C = α·(S ⊙ A·Bᵀ) + β·S, or with --spmm V the fused
 * O = N(α·S ⊙ A·Bᵀ)·V (--softmax normalizes each row's scores). Dense operands are Matrix Market
 * files (array or coordinate). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *const usage_text =
    "usage: sparsering sddmm S.mtx A.mtx B.mtx [--alpha X] [--beta Y] [--semiring NAME | --semiring-file DEF]\n"
    "                        [--pattern]\n"
    "                        [--float64 | --precision exact|tf32|float32] [--spmm V.mtx [--softmax]]\n"
    "                        [--out OUT.mtx]\n"
    "  C = alpha * (S .* (A * B^T)) + beta * S at the entries of S (A: m x K, B: n x K);\n"
    "  --semiring-file: a user semiring (docs/user-semirings.md), float32 or float64, CPU backend;\n"
    "  --pattern samples at S's pattern (ignores its values in the product); with --spmm V,\n"
    "  O = (alpha * S .* (A * B^T)) * V without storing the sampled matrix (--softmax: row softmax first);\n"
    "  --precision: float32 tile products on GPU tensor cores, exact (default: float32's accuracy) or tf32\n"
    "  (about 1e-3), or float32 on the CUDA cores (docs/tensor-cores.md)\n";

/* A dense host copy (row-major, packed) of a Matrix Market matrix. */
static sr_status read_dense(sr_context ctx, const char *path, sr_type type, sr_dense *d)
{
    sr_matrix M = NULL;
    sr_status s = sr_matrix_read_mm(ctx, path, (int)type, &M, NULL);
    sr_matrix_info info;
    if (s == SR_SUCCESS)
        s = sr_matrix_get_info(M, &info);
    if (s == SR_SUCCESS) {
        void *data = calloc((size_t)(info.nrows * info.ncols + 1), sr_type_size(type));
        *d = sr_dense_view(data, info.nrows, info.ncols, type, SR_ROW_MAJOR, SR_HOST);
        s = data ? sr_matrix_export_dense(ctx, M, d) : SR_ERROR_OUT_OF_MEMORY;
    }
    sr_matrix_free(M);
    return s;
}

int cmd_sddmm(const cli_globals *g, int argc, char **argv)
{
    const char *paths[3] = {NULL, NULL, NULL}, *out = NULL, *v_path = NULL, *semiring_name = "plus_times";
    const char *precision_name = "exact", *def_path = NULL;
    double alpha = 1, beta = 0;
    bool pattern = false, softmax = false, f64 = false;
    int npaths = 0, bad = 0;
    for (int i = 1; i < argc && !bad; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--alpha") == 0)
            alpha = atof(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--beta") == 0)
            beta = atof(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--semiring") == 0)
            semiring_name = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--semiring-file") == 0)
            def_path = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--spmm") == 0)
            v_path = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--out") == 0)
            out = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--precision") == 0)
            precision_name = argv[++i];
        else if (strcmp(argv[i], "--pattern") == 0)
            pattern = true;
        else if (strcmp(argv[i], "--softmax") == 0)
            softmax = true;
        else if (strcmp(argv[i], "--float64") == 0)
            f64 = true;
        else if (argv[i][0] != '-' && npaths < 3)
            paths[npaths++] = argv[i];
        else
            bad = 1;
    }
    sr_semiring semiring = SR_SEMIRING_COUNT;
    for (int s = 0; s < SR_SEMIRING_COUNT && !def_path; s++)
        if (strcmp(sr_semiring_name((sr_semiring)s), semiring_name) == 0)
            semiring = (sr_semiring)s;
    if (def_path && !bad && !v_path) {
        sr_type defined = SR_TYPE_FLOAT64;
        const int rc = cli_define_semiring(def_path, "sddmm", &semiring, &defined);
        if (rc != CLI_OK)
            return rc;
        if (defined == SR_TYPE_INT32) {
            fprintf(stderr, "sparsering sddmm: %s: the semiring is int32; sddmm reads float32 or float64\n", def_path);
            return CLI_BAD_INPUT;
        }
        f64 = defined == SR_TYPE_FLOAT64;
    }
    sr_precision precision = SR_PRECISION_EXACT;
    bool precision_float64 = false;
    if (!cli_precision(precision_name, false, &precision, &precision_float64))
        bad = 1;
    if (bad || npaths != 3 || semiring == SR_SEMIRING_COUNT || (softmax && !v_path) ||
        (v_path && semiring != SR_PLUS_TIMES)) {
        if (def_path && v_path)
            fprintf(stderr, "sparsering sddmm: --spmm takes plus_times only, not --semiring-file\n");
        else if (semiring == SR_SEMIRING_COUNT)
            fprintf(stderr, "sparsering sddmm: unknown semiring '%s'\n", semiring_name);
        fputs(usage_text, stderr);
        return CLI_USAGE;
    }
    sr_context ctx;
    int rc = cli_context(g, &ctx);
    if (rc != CLI_OK)
        return rc;
    const sr_type type = f64 ? SR_TYPE_FLOAT64 : SR_TYPE_FLOAT32;
    sr_matrix S = NULL, C = NULL;
    sr_dense A = {0}, B = {0}, V = {0}, O = {0};
    const double t0 = cli_seconds();
    sr_status s = sr_matrix_read_mm(ctx, paths[0], (int)type, &S, NULL);
    const char *what = paths[0];
    if (s == SR_SUCCESS && (what = paths[1]))
        s = read_dense(ctx, paths[1], type, &A);
    if (s == SR_SUCCESS && (what = paths[2]))
        s = read_dense(ctx, paths[2], type, &B);
    if (s == SR_SUCCESS && v_path && (what = v_path))
        s = read_dense(ctx, v_path, type, &V);
    if (s == SR_SUCCESS && (what = "moving S to the device"))
        s = cli_to_backend(ctx, &S);
    const double t_read = cli_seconds() - t0;
    double t_op = 0;
    if (s == SR_SUCCESS) {
        what = v_path ? "the fused product" : "the sampled product";
        const sr_descriptor d = {.sample_pattern = pattern, .precision = precision};
        const double t1 = cli_seconds();
        if (v_path) {
            void *data = calloc((size_t)(A.nrows * V.ncols + 1), sr_type_size(type));
            O = sr_dense_view(data, A.nrows, V.ncols, type, SR_ROW_MAJOR, SR_HOST);
            s = data ? sr_sddmm_spmm(ctx, &O, alpha, S, &A, &B, &V, softmax ? SR_NORMALIZE_SOFTMAX : SR_NORMALIZE_NONE,
                                     &d)
                     : SR_ERROR_OUT_OF_MEMORY;
        } else {
            s = sr_sddmm(ctx, &C, semiring, alpha, S, &A, &B, beta, &d);
        }
        t_op = cli_seconds() - t1;
    }
    if (s == SR_SUCCESS && out && (what = out)) {
        sr_matrix W = NULL;
        if (v_path) {
            sr_mm_write_options wo = {0};
            wo.array = true;
            s = sr_matrix_from_dense(ctx, &W, &O);
            if (s == SR_SUCCESS)
                s = sr_matrix_write_mm(ctx, W, out, &wo);
            sr_matrix_free(W);
        } else {
            s = sr_matrix_write_mm(ctx, C, out, NULL);
        }
    }
    if (s != SR_SUCCESS) {
        rc = cli_fail(s, what);
    } else {
        sr_matrix_info si;
        sr_matrix_get_info(S, &si);
        printf("%s: S %lld x %lld with %lld entries, K = %lld%s; %s backend: read %.3f s, product %.4f s "
               "(%.1f GFLOP/s)%s%s\n",
               v_path ? (softmax ? "sddmm + softmax + spmm (fused)" : "sddmm + spmm (fused)") : "sddmm",
               (long long)si.nrows, (long long)si.ncols, (long long)si.nnz, (long long)A.ncols,
               v_path ? "" : "", cli_backend_name(ctx), t_read, t_op,
               t_op > 0 ? 2.0 * (double)si.nnz * (double)A.ncols * (v_path ? 2.0 : 1.0) / t_op / 1e9 : 0.0,
               out ? "; written to " : "", out ? out : "");
    }
    free(A.data), free(B.data), free(V.data), free(O.data);
    sr_matrix_free(S);
    sr_matrix_free(C);
    sr_context_destroy(ctx);
    return rc;
}
