/* The command-line program without its signal handling (main.c adds it; fuzz/fuzz_cli.c calls
 * cli_main directly): global options, usage, the command table. Subcommands live in cmd_*.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

static const char usage_text[] =
            "usage: sparsering [--backend auto|cpu|cuda|opencl] [--device N] [--threads N] [--host-memory SIZE]\n"
            "                  [--deterministic] COMMAND [ARGS]\n"
            "       sparsering COMMAND --help    sparsering --version\n"
            "\n"
            "commands:\n"
            "  info FILE.mtx[.gz]              shape, entries, type, degrees and memory of a Matrix Market file\n"
            "  convert IN.mtx OUT.mtx[.gz]     rewrite a matrix: --type bool|int32|float32|float64, --transpose,\n"
            "                                  --symmetric, --array, --comment TEXT\n"
            "  knn DATA.mtx [--metric NAME | --metric-file DEF] [-k K] [--p P] [--queries Q.mtx] [--out FILE]\n"
            "      [--precision float64|exact|tf32|float32]\n"
            "                                  the k nearest rows of DATA to each query row (default: DATA's own\n"
            "                                  rows); metrics: euclidean, cosine, manhattan, jaccard, ... (see README),\n"
            "                                  or one defined in DEF (name, pair, norm, distance, over, similarity, ...)\n"
            "                                  exact and tf32: float32 distances, tensor cores on the GPU\n"
            "  knn-graph DATA.mtx [--metric NAME | --metric-file DEF] [-k K] [--p P] [--mode connectivity|distance]\n"
            "            [--include-self] [--symmetrize] [--out GRAPH.mtx] [--precision exact|tf32|float32|float64]\n"
            "                                  the k-NN graph of DATA's rows as a sparse matrix\n"
            "  radius DATA.mtx --radius R [--metric NAME | --metric-file DEF] [--p P] [--queries Q.mtx]\n"
            "         [--mode connectivity|distance] [--include-self] [--out PAIRS.mtx]\n"
            "                                  every pair of rows within R (DATA against itself, self left\n"
            "                                  out, or each query row against DATA) as a sparse matrix\n"
            "  bool OP A.mtx [B.mtx] [--mask M.mtx [--complement]] [--accumulate C.mtx] [--out OUT.mtx]\n"
            "                                  a Boolean operation on patterns: mxm, add, mult, kron, transpose,\n"
            "                                  reduce, extract --rows R0:N --cols C0:N, nnz, equal\n"
            "  pagerank GRAPH.mtx [--damping D] [--tol T] [--max-iter N] [--no-plan] [--float32] [--top K]\n"
            "                                  PageRank by power iteration on a planned SpMV\n"
            "  closure GRAPH.mtx [--method semi-naive|squaring] [--out CLOSURE.mtx]\n"
            "                                  transitive closure: every pair joined by a path\n"
            "  reach GRAPH.mtx (--sources V1,V2,... | --all) [--out REACHED.mtx]\n"
            "                                  what each source reaches (BFS, 64 sources a machine word)\n"
            "  cfpq GRAMMAR.txt (--graph EDGES.txt | --label NAME=GRAPH.mtx ...) [--reverse] [--symbol S]\n"
            "       [--out PAIRS.mtx] [--allow-missing-labels]\n"
            "                                  context-free path query: the pairs joined by a path whose labels\n"
            "                                  spell a word of the grammar (README: grammar and edge formats)\n"
            "  mxm A.mtx B.mtx [--semiring NAME | --semiring-file DEF] [--mask M.mtx [--complement]]\n"
            "      [--float32] [--out C.mtx]\n"
            "                                  C = A (+).(x) B under a built-in semiring or one defined in DEF\n"
            "                                  (name, add, multiply, identity, type: docs/user-semirings.md)\n"
            "  sddmm S.mtx A.mtx B.mtx [--alpha X] [--beta Y] [--semiring NAME | --semiring-file DEF] [--pattern]\n"
            "        [--spmm V.mtx [--softmax]] [--float64 | --precision exact|tf32|float32] [--out OUT.mtx]\n"
            "                                  sampled product alpha*(S.*(A*B^T)) + beta*S at S's entries; with\n"
            "                                  --spmm, the fused (S.*(A*B^T))*V (--softmax: row softmax first);\n"
            "                                  --precision: GPU tensor cores for well-filled S (exact, tf32)\n"
            "  factorize RATINGS.csv[.gz]|.mtx [--rank K] [--lambda L] [--iterations N] [--cg-steps S]\n"
            "            [--test-fraction F] [--seed S] [--factors PREFIX]\n"
            "                                  ALS matrix factorization, train and held-out RMSE per sweep\n"
            "  fused X.mtx Y [--form xtvxy|xty|xy] [--v V] [--z Z] [--alpha A] [--beta B] [--out W.txt]\n"
            "                                  w = alpha*X^T(v.*(X y)) + beta*z and its forms, X read once\n"
            "  ridge X.mtx LABELS [--lambda L] [--fit-intercept] [--plain-cg] [--tol T] [--max-iter N] [--out W.txt]\n"
            "                                  ridge regression: Jacobi-preconditioned CG on the normal equations,\n"
            "                                  X read once a step (--plain-cg: without the preconditioner)\n"
            "  logistic X.mtx LABELS [--C C] [--fit-intercept] [--plain-cg] [--tol T] [--max-iter N] [--out W.txt]\n"
            "                                  L2 logistic regression: trust-region Newton with preconditioned\n"
            "                                  CG steps (--plain-cg: without the preconditioner)\n"
            "  demo [--rows N --cols N --degree D --queries N -k K --metric NAME --seed S]\n"
            "                                  k-NN on a generated bag-of-words set, timed on CPU and GPU\n"
            "  version                         print the library version\n"
            "\n"
            "exit codes: 0 success, 1 the operation failed, 2 bad command line, 3 unreadable or malformed\n"
            "input file, 4 the CUDA or OpenCL backend was asked for but no device is usable, 130 interrupted\n"
            "(Ctrl-C). SPARSERING_BACKEND=cpu|cuda|opencl sets the default backend. opencl runs the Boolean\n"
            "operations (bool, closure, cfpq) on an OpenCL device and the rest on the CPU; --device N picks\n"
            "the CUDA device, or the OpenCL device (GPUs first, in platform order). --host-memory (e.g. 64G)\n"
            "caps one host allocation and lets a file whose row pointers dwarf its entries be read.\n"
            "SPARSERING_DEVICES=0,1 (or all) spreads knn, knn-graph, radius and sddmm over the GPUs of this host.\n"
            "--deterministic (or SPARSERING_DETERMINISTIC=1) sums in a fixed order on the GPU where the fast path\n"
            "adds floats atomically: the same bits on every run, at a cost (docs/c-library.md).\n";

static void usage(FILE *out) { fputs(usage_text, out); }

static int print_version(void)
{
    printf("sparsering %s\n", sr_version_string());
    return CLI_OK;
}

/* COMMAND's block of usage_text: its line ("  NAME ...") and the deeper-indented lines after it.
 * False when usage_text has no such command. */
static bool command_usage(FILE *out, const char *name)
{
    const size_t len = strlen(name);
    for (const char *line = usage_text; *line;) {
        const char *end = strchr(line, '\n');
        end = end ? end + 1 : line + strlen(line);
        if (strncmp(line, "  ", 2) == 0 && line[2] != ' ' && strncmp(line + 2, name, len) == 0 &&
            (line[2 + len] == ' ' || line[2 + len] == '\n')) {
            fputs("usage: sparsering [--backend auto|cpu|cuda|opencl] [--device N] [--threads N] [--host-memory SIZE]\n"
                  "                  [--deterministic]\n",
                  out);
            fwrite(line, 1, (size_t)(end - line), out);
            for (line = end; strncmp(line, "   ", 3) == 0;) { /* continuation lines */
                end = strchr(line, '\n');
                end = end ? end + 1 : line + strlen(line);
                fwrite(line, 1, (size_t)(end - line), out);
                line = end;
            }
            fputs("\n(sparsering --help lists every command, the exit codes and the environment.)\n", out);
            return true;
        }
        line = end;
    }
    return false;
}

volatile sig_atomic_t cli_interrupted = 0;

double cli_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int cli_fail(sr_status status, const char *what)
{
    if (status == SR_ERROR_CANCELLED && cli_interrupted) {
        fprintf(stderr, "\nsparsering: %s: interrupted\n", what);
        return CLI_INTERRUPTED;
    }
    fprintf(stderr, "sparsering: %s: %s\n", what, sr_last_error());
    switch (status) {
    case SR_ERROR_IO:
    case SR_ERROR_PARSE: return CLI_BAD_INPUT;
    case SR_ERROR_NO_DEVICE: return CLI_NO_DEVICE;
    case SR_ERROR_INVALID_ARGUMENT: return CLI_USAGE;
    default: return CLI_FAILED;
    }
}

const char *cli_backend_name(sr_context ctx)
{
    sr_backend b;
    sr_context_get_backend(ctx, &b);
    return b == SR_BACKEND_CUDA ? "cuda" : b == SR_BACKEND_OPENCL ? "opencl" : "cpu";
}

int cli_context(const cli_globals *g, sr_context *ctx)
{
    sr_context_options o = sr_context_options_default();
    o.backend = g->backend;
    o.device = g->device;
    o.threads = g->threads;
    o.host_memory_limit = g->host_memory;
    sr_status s = sr_context_create(ctx, &o);
    if (s == SR_SUCCESS && g->deterministic) /* the flag turns it on; SPARSERING_DETERMINISTIC alone may too */
        s = sr_context_set_deterministic(*ctx, true);
    return s == SR_SUCCESS ? CLI_OK : cli_fail(s, "cannot start");
}

int cli_main(int argc, char **argv)
{
    cli_globals g = {SR_BACKEND_AUTO, 0, 0, 0, false};
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return CLI_OK;
        } else if (strcmp(argv[i], "--version") == 0 || strcmp(argv[i], "-V") == 0) {
            return print_version();
        } else if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
            const char *b = argv[++i];
            if (strcmp(b, "auto") == 0)
                g.backend = SR_BACKEND_AUTO;
            else if (strcmp(b, "cpu") == 0)
                g.backend = SR_BACKEND_CPU;
            else if (strcmp(b, "cuda") == 0 || strcmp(b, "gpu") == 0)
                g.backend = SR_BACKEND_CUDA;
            else if (strcmp(b, "opencl") == 0)
                g.backend = SR_BACKEND_OPENCL;
            else {
                fprintf(stderr, "sparsering: unknown backend '%s' (auto, cpu, cuda or opencl)\n", b);
                return CLI_USAGE;
            }
        } else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
            char *end;
            const long d = strtol(argv[++i], &end, 10);
            if (*end != '\0' || end == argv[i] || d < 0 || d > 1024) {
                fprintf(stderr, "sparsering: --device takes a device number (0, 1, ...), not '%s'\n", argv[i]);
                return CLI_USAGE;
            }
            g.device = (int)d;
        } else if (strcmp(argv[i], "--host-memory") == 0 && i + 1 < argc) {
            char *end;
            const double v = strtod(argv[++i], &end);
            const double unit = *end == 'K' || *end == 'k' ? 1024.0 : *end == 'M' || *end == 'm' ? 1048576.0
                                : *end == 'G' || *end == 'g' ? 1073741824.0 : *end == 'T' || *end == 't' ? 1099511627776.0
                                : 1.0;
            if (!(v >= 0) || (unit == 1.0 && *end != '\0') || (unit != 1.0 && end[1] != '\0' && strcmp(end + 1, "B") != 0 &&
                                                                strcmp(end + 1, "iB") != 0)) {
                fprintf(stderr, "sparsering: --host-memory takes a size such as 64G or 500M, not '%s'\n", argv[i]);
                return CLI_USAGE;
            }
            g.host_memory = (size_t)(v * unit);
        } else if (strcmp(argv[i], "--deterministic") == 0) {
            g.deterministic = true;
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            g.threads = atoi(argv[++i]);
            if (g.threads < 0) {
                fprintf(stderr, "sparsering: --threads must be >= 0\n");
                return CLI_USAGE;
            }
        } else {
            fprintf(stderr, "sparsering: unknown option '%s'\n\n", argv[i]);
            usage(stderr);
            return CLI_USAGE;
        }
    }
    if (i == argc) {
        usage(stderr);
        return CLI_USAGE;
    }
    const char *cmd = argv[i];
    int sub_argc = argc - i;
    char **sub_argv = argv + i;
    static const struct {
        const char *name;
        int (*run)(const cli_globals *, int, char **);
    } commands[] = {
        {"info", cmd_info},         {"convert", cmd_convert},     {"knn", cmd_knn},     {"knn-graph", cmd_knn_graph},
        {"radius", cmd_radius},     {"demo", cmd_demo},           {"bool", cmd_bool},   {"sddmm", cmd_sddmm},
        {"factorize", cmd_factorize}, {"fused", cmd_fused},       {"ridge", cmd_ridge}, {"logistic", cmd_logistic},
        {"closure", cmd_closure},   {"reach", cmd_reach},         {"cfpq", cmd_cfpq},
        {"pagerank", cmd_pagerank}, {"mxm", cmd_mxm},
    };
    if (strcmp(cmd, "version") == 0)
        return print_version();
    if (strcmp(cmd, "help") == 0) { /* help, or help COMMAND */
        if (sub_argc > 1 && command_usage(stdout, sub_argv[1]))
            return CLI_OK;
        usage(stdout);
        return sub_argc > 1 ? CLI_USAGE : CLI_OK;
    }
    for (size_t c = 0; c < sizeof commands / sizeof *commands; c++) {
        if (strcmp(cmd, commands[c].name) != 0)
            continue;
        for (int j = 1; j < sub_argc; j++) /* COMMAND --help: that command's usage */
            if (strcmp(sub_argv[j], "--help") == 0 || strcmp(sub_argv[j], "-h") == 0) {
                if (!command_usage(stdout, cmd)) /* every table command has a block; never fall silent */
                    usage(stdout);
                return CLI_OK;
            }
        return commands[c].run(&g, sub_argc, sub_argv);
    }
    fprintf(stderr, "sparsering: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return CLI_USAGE;
}
