/* sparsering bool OP A.mtx [B.mtx]: one Boolean (pattern) operation on Matrix Market files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *kUsage =
    "usage: sparsering bool OP A.mtx [B.mtx] [--mask M.mtx [--complement]] [--accumulate C.mtx] [--out OUT.mtx]\n"
    "  OP: mxm (A B), add (A | B), mult (A & B), kron (A (x) B), transpose, reduce (rows with an entry),\n"
    "      extract --rows R0:N --cols C0:N, nnz, equal\n"
    "  the files are read as patterns (any value type); --mask and --accumulate apply to mxm, add, mult, kron\n";

typedef enum { OP_MXM, OP_ADD, OP_MULT, OP_KRON, OP_TRANSPOSE, OP_REDUCE, OP_EXTRACT, OP_NNZ, OP_EQUAL, OP_UNKNOWN } bool_op;

static bool_op op_of(const char *name)
{
    static const char *names[] = {"mxm", "add", "mult", "kron", "transpose", "reduce", "extract", "nnz", "equal"};
    for (int k = 0; k < OP_UNKNOWN; k++)
        if (strcmp(name, names[k]) == 0)
            return (bool_op)k;
    return OP_UNKNOWN;
}

static bool binary(bool_op op) { return op <= OP_KRON || op == OP_EQUAL; }

/* "START:COUNT" */
static bool parse_range(const char *text, int64_t *start, int64_t *count)
{
    char *end;
    *start = strtoll(text, &end, 10);
    if (*end != ':')
        return false;
    *count = strtoll(end + 1, &end, 10);
    return *end == '\0' && *start >= 0 && *count >= 0;
}

static sr_status read_pattern(sr_context ctx, const char *path, sr_matrix *M)
{
    if (!path)
        return SR_SUCCESS;
    sr_status s = sr_matrix_read_mm(ctx, path, SR_TYPE_BOOL, M, NULL);
    return s == SR_SUCCESS ? cli_to_backend(ctx, M) : s;
}

static sr_status run(sr_context ctx, bool_op op, sr_matrix A, sr_matrix B, sr_matrix mask, const sr_descriptor *d,
                     int64_t rows[2], int64_t cols[2], sr_matrix *C, bool *equal)
{
    switch (op) {
    case OP_MXM: return sr_mxm(ctx, C, mask, SR_OR_AND, A, B, d);
    case OP_ADD: return sr_ewise_add(ctx, C, mask, SR_OR_AND, A, B, d);
    case OP_MULT: return sr_ewise_mult(ctx, C, mask, SR_OR_AND, A, B, d);
    case OP_KRON: return sr_kronecker(ctx, C, mask, SR_OR_AND, A, B, d);
    case OP_TRANSPOSE: return sr_matrix_transpose(ctx, A, C);
    case OP_REDUCE: return sr_reduce_rows(ctx, C, SR_OR_AND, A);
    case OP_EXTRACT: return sr_extract(ctx, C, A, rows[0], cols[0], rows[1], cols[1]);
    case OP_EQUAL: return sr_matrix_equal(ctx, A, B, equal);
    default: return SR_SUCCESS; /* nnz: A's info */
    }
}

int cmd_bool(const cli_globals *g, int argc, char **argv)
{
    const char *files[2] = {NULL, NULL}, *mask_path = NULL, *acc_path = NULL, *out = NULL;
    int64_t rows[2] = {-1, -1}, cols[2] = {-1, -1};
    sr_descriptor d = {0};
    bool_op op = argc > 1 ? op_of(argv[1]) : OP_UNKNOWN;
    bool ok = op != OP_UNKNOWN;
    for (int i = 2; ok && i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--mask") == 0)
            mask_path = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--accumulate") == 0)
            acc_path = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--out") == 0)
            out = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--rows") == 0)
            ok = parse_range(argv[++i], &rows[0], &rows[1]);
        else if (i + 1 < argc && strcmp(argv[i], "--cols") == 0)
            ok = parse_range(argv[++i], &cols[0], &cols[1]);
        else if (strcmp(argv[i], "--complement") == 0)
            d.mask_complement = true;
        else if (argv[i][0] != '-' && !files[0])
            files[0] = argv[i];
        else if (argv[i][0] != '-' && !files[1])
            files[1] = argv[i];
        else
            ok = false;
    }
    ok = ok && files[0] && (binary(op) == (files[1] != NULL));
    ok = ok && (op != OP_EXTRACT || (rows[0] >= 0 && cols[0] >= 0));
    ok = ok && (!(mask_path || acc_path) || op <= OP_KRON);
    if (!ok) {
        fputs(kUsage, stderr);
        return CLI_USAGE;
    }
    sr_context ctx;
    int rc = cli_context(g, &ctx);
    if (rc != CLI_OK)
        return rc;
    sr_matrix A = NULL, B = NULL, M = NULL, C = NULL;
    double t0 = cli_seconds();
    sr_status s = read_pattern(ctx, files[0], &A);
    if (s == SR_SUCCESS)
        s = read_pattern(ctx, files[1], &B);
    if (s == SR_SUCCESS)
        s = read_pattern(ctx, mask_path, &M);
    if (s == SR_SUCCESS && acc_path) {
        s = read_pattern(ctx, acc_path, &C);
        d.accumulate = true;
    }
    const double t_read = cli_seconds() - t0;
    bool equal = false;
    t0 = cli_seconds();
    if (s == SR_SUCCESS)
        s = run(ctx, op, A, B, M, &d, rows, cols, &C, &equal);
    const double t_op = cli_seconds() - t0;
    if (s == SR_SUCCESS && out && C)
        s = sr_matrix_write_mm(ctx, C, out, NULL);
    if (s != SR_SUCCESS) {
        rc = cli_fail(s, argv[1]);
    } else if (op == OP_EQUAL) {
        printf("%s\n", equal ? "equal" : "different");
        rc = equal ? CLI_OK : CLI_FAILED;
    } else {
        sr_matrix_info info;
        sr_matrix_get_info(C ? C : A, &info);
        printf("bool %s: %lld x %lld, %lld entries; %s backend: read %.3f s, %s %.4f s%s%s\n", argv[1],
               (long long)info.nrows, (long long)info.ncols, (long long)info.nnz, cli_backend_name(ctx), t_read,
               argv[1], t_op, out ? "; written to " : "", out ? out : "");
    }
    sr_matrix_free(A), sr_matrix_free(B), sr_matrix_free(M), sr_matrix_free(C);
    sr_context_destroy(ctx);
    return rc;
}
