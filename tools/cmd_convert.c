/* sparsering convert IN OUT: read, optionally cast or transpose, write. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static int parse_type(const char *name, sr_type *type)
{
    const sr_type all[] = {SR_TYPE_BOOL, SR_TYPE_INT32, SR_TYPE_FLOAT32, SR_TYPE_FLOAT64};
    for (int t = 0; t < 4; t++)
        if (strcmp(name, sr_type_name(all[t])) == 0) {
            *type = all[t];
            return 1;
        }
    return 0;
}

int cmd_convert(const cli_globals *g, int argc, char **argv)
{
    const char *in = NULL, *out = NULL;
    int type = -1;
    bool transpose = false;
    sr_mm_write_options opt = {false, false, NULL};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--type") == 0 && i + 1 < argc) {
            sr_type t;
            if (!parse_type(argv[++i], &t)) {
                fprintf(stderr, "sparsering convert: unknown type '%s' (bool, int32, float32, float64)\n", argv[i]);
                return CLI_USAGE;
            }
            type = (int)t;
        } else if (strcmp(argv[i], "--transpose") == 0) {
            transpose = true;
        } else if (strcmp(argv[i], "--symmetric") == 0) {
            opt.symmetric = true;
        } else if (strcmp(argv[i], "--array") == 0) {
            opt.array = true;
        } else if (strcmp(argv[i], "--comment") == 0 && i + 1 < argc) {
            opt.comment = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "sparsering convert: unknown option '%s'\n", argv[i]);
            return CLI_USAGE;
        } else if (!in) {
            in = argv[i];
        } else if (!out) {
            out = argv[i];
        } else {
            fprintf(stderr, "sparsering convert: too many arguments\n");
            return CLI_USAGE;
        }
    }
    if (!in || !out) {
        fprintf(stderr, "usage: sparsering convert IN.mtx OUT.mtx[.gz] [--type T] [--transpose] [--symmetric] "
                        "[--array] [--comment TEXT]\n");
        return CLI_USAGE;
    }
    sr_context ctx;
    int rc = cli_context(g, &ctx);
    if (rc != CLI_OK)
        return rc;
    sr_matrix A = NULL, B = NULL;
    sr_status s = sr_matrix_read_mm(ctx, in, type, &A, NULL);
    if (s != SR_SUCCESS) {
        sr_context_destroy(ctx);
        return cli_fail(s, "convert");
    }
    if (transpose) {
        s = sr_matrix_transpose(ctx, A, &B);
        sr_matrix_free(A);
        A = B;
    }
    if (s == SR_SUCCESS)
        s = sr_matrix_write_mm(ctx, A, out, &opt);
    sr_matrix_free(A);
    sr_context_destroy(ctx);
    if (s != SR_SUCCESS)
        return s == SR_ERROR_IO ? (fprintf(stderr, "sparsering: convert: %s\n", sr_last_error()), CLI_FAILED)
                                : cli_fail(s, "convert");
    return CLI_OK;
}
