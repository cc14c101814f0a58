/* sparsering mxm: C = A ⊕.⊗ B of two Matrix Market files under a built-in semiring or one defined
 * in a small file (docs/user-semirings.md), with an optional structural mask. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *const usage_text =
    "usage: sparsering mxm A.mtx B.mtx [--semiring NAME | --semiring-file DEF] [--mask M.mtx [--complement]]\n"
    "                      [--float32] [--out C.mtx]\n"
    "  C = A (+).(x) B; --semiring one of plus_times (default), min_plus, max_plus, max_times, min_times,\n"
    "  max_min, plus_pair; --semiring-file a user semiring, lines 'key = value' with keys name, add, multiply,\n"
    "  identity (when add is an expression) and type (int32, float32 or float64; default float64)\n";

int cmd_mxm(const cli_globals *g, int argc, char **argv)
{
    const char *paths[2] = {NULL, NULL}, *out = NULL, *mask_path = NULL, *name = "plus_times", *def_path = NULL;
    bool complement = false, f32 = false;
    int npaths = 0, bad = 0;
    for (int i = 1; i < argc && !bad; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--semiring") == 0)
            name = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--semiring-file") == 0)
            def_path = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--mask") == 0)
            mask_path = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--out") == 0)
            out = argv[++i];
        else if (strcmp(argv[i], "--complement") == 0)
            complement = true;
        else if (strcmp(argv[i], "--float32") == 0)
            f32 = true;
        else if (argv[i][0] != '-' && npaths < 2)
            paths[npaths++] = argv[i];
        else
            bad = 1;
    }
    sr_semiring semiring = SR_SEMIRING_COUNT;
    for (int s = 0; s < SR_SEMIRING_COUNT && !def_path; s++)
        if (strcmp(sr_semiring_name((sr_semiring)s), name) == 0)
            semiring = (sr_semiring)s;
    if (bad || npaths != 2 || (!def_path && semiring == SR_SEMIRING_COUNT) || (complement && !mask_path)) {
        if (!def_path && semiring == SR_SEMIRING_COUNT)
            fprintf(stderr, "sparsering mxm: unknown semiring '%s' (a user semiring comes with --semiring-file)\n", name);
        fputs(usage_text, stderr);
        return CLI_USAGE;
    }
    sr_type type = f32 ? SR_TYPE_FLOAT32 : SR_TYPE_FLOAT64;
    double t_define = 0;
    if (def_path) {
        const double t0 = cli_seconds();
        const int rc = cli_define_semiring(def_path, "mxm", &semiring, &type);
        t_define = cli_seconds() - t0;
        if (rc != CLI_OK)
            return rc;
    }
    sr_context ctx;
    int rc = cli_context(g, &ctx);
    if (rc != CLI_OK)
        return rc;
    sr_matrix A = NULL, B = NULL, M = NULL, C = NULL;
    const char *what = paths[0];
    const double t0 = cli_seconds();
    sr_status s = sr_matrix_read_mm(ctx, paths[0], (int)type, &A, NULL);
    if (s == SR_SUCCESS && (what = paths[1]))
        s = sr_matrix_read_mm(ctx, paths[1], (int)type, &B, NULL);
    if (s == SR_SUCCESS && mask_path && (what = mask_path))
        s = sr_matrix_read_mm(ctx, mask_path, (int)SR_TYPE_BOOL, &M, NULL);
    if (s == SR_SUCCESS && (what = "moving the operands to the device"))
        s = cli_to_backend(ctx, &A);
    if (s == SR_SUCCESS)
        s = cli_to_backend(ctx, &B);
    if (s == SR_SUCCESS && M)
        s = cli_to_backend(ctx, &M);
    const double t_read = cli_seconds() - t0;
    double t_op = 0;
    if (s == SR_SUCCESS && (what = "the product")) {
        const sr_descriptor d = {.mask_complement = complement};
        const double t1 = cli_seconds();
        s = sr_mxm(ctx, &C, M, semiring, A, B, &d);
        t_op = cli_seconds() - t1;
    }
    if (s == SR_SUCCESS && out && (what = out))
        s = sr_matrix_write_mm(ctx, C, out, NULL);
    if (s != SR_SUCCESS) {
        rc = cli_fail(s, what);
    } else {
        sr_matrix_info ai, ci;
        sr_matrix_get_info(A, &ai);
        sr_matrix_get_info(C, &ci);
        printf("mxm (%s%s): A %lld x %lld, C %lld x %lld with %lld entries; %s backend: read %.3f s, ",
               sr_semiring_name(semiring), def_path ? ", user-defined" : "", (long long)ai.nrows, (long long)ai.ncols,
               (long long)ci.nrows, (long long)ci.ncols, (long long)ci.nnz, cli_backend_name(ctx), t_read);
        if (def_path)
            printf("definition %.3f s, ", t_define);
        printf("product %.4f s%s%s\n", t_op, out ? "; written to " : "", out ? out : "");
    }
    sr_matrix_free(A), sr_matrix_free(B), sr_matrix_free(M), sr_matrix_free(C);
    sr_context_destroy(ctx);
    return rc;
}
