/* Shared pieces of the sparsering command-line program. */
#ifndef SR_CLI_H
#define SR_CLI_H

#include <signal.h>

#include "sparsering.h"

/* Exit codes (documented in --help and README). */
enum {
    CLI_OK = 0,
    CLI_FAILED = 1,      /* the operation failed */
    CLI_USAGE = 2,       /* bad command line */
    CLI_BAD_INPUT = 3,   /* an input file could not be read or is malformed */
    CLI_NO_DEVICE = 4,   /* --backend cuda, but no usable GPU */
    CLI_INTERRUPTED = 130 /* Ctrl-C (the shell's 128 + SIGINT) */
};

/* Set by the first Ctrl-C; progress callbacks return it, so the running call stops cleanly. */
extern volatile sig_atomic_t cli_interrupted;

typedef struct {
    sr_backend backend;
    int threads;
    int device;         /* --device: the CUDA device, or the OpenCL device's index */
    size_t host_memory; /* --host-memory: sr_context_options.host_memory_limit */
    bool deterministic; /* --deterministic: sr_context_options.deterministic */
} cli_globals;

/* The whole program on an argument vector (argv[0] is the program's name): parses the global
 * options, runs the command and returns its exit code. */
int cli_main(int argc, char **argv);
/* Prints "sparsering: <what>: <library message>" and returns the exit code for status. */
int cli_fail(sr_status status, const char *what);
/* Creates the context the global options ask for. */
int cli_context(const cli_globals *g, sr_context *ctx);
/* "cuda", "opencl" or "cpu": where the context computes, for the commands' timing lines. */
const char *cli_backend_name(sr_context ctx);
double cli_seconds(void);

int cmd_info(const cli_globals *g, int argc, char **argv);
int cmd_convert(const cli_globals *g, int argc, char **argv);
int cmd_demo(const cli_globals *g, int argc, char **argv);
int cmd_knn(const cli_globals *g, int argc, char **argv);
int cmd_knn_graph(const cli_globals *g, int argc, char **argv);
int cmd_radius(const cli_globals *g, int argc, char **argv);
int cmd_bool(const cli_globals *g, int argc, char **argv);
int cmd_pagerank(const cli_globals *g, int argc, char **argv);
int cmd_closure(const cli_globals *g, int argc, char **argv);
int cmd_reach(const cli_globals *g, int argc, char **argv);
int cmd_cfpq(const cli_globals *g, int argc, char **argv);
int cmd_sddmm(const cli_globals *g, int argc, char **argv);
int cmd_mxm(const cli_globals *g, int argc, char **argv);
/* User definitions from 'key = value' files (cli_defs.c): each value at most CLI_DEF_VALUE - 1
 * bytes; the define calls return a CLI exit code (messages printed). */
#define CLI_DEF_VALUE 512
bool cli_read_keys(const char *path, const char *who, const char *const *keys, int n, char values[][CLI_DEF_VALUE],
                   bool *have);
int cli_define_metric(const char *path, const char *who, sr_metric *metric);
int cli_define_semiring(const char *path, const char *who, sr_semiring *semiring, sr_type *type);
/* "@PATH": --metric-file PATH as a --metric value (cli_knn_start defines the metric it holds). */
const char *cli_at_path(const char *path);
int cmd_factorize(const cli_globals *g, int argc, char **argv);
int cmd_fused(const cli_globals *g, int argc, char **argv);
int cmd_ridge(const cli_globals *g, int argc, char **argv);
int cmd_logistic(const cli_globals *g, int argc, char **argv);
/* Shared by the k-NN commands (cmd_knn.c): a progress line on stderr at most once a second
 * (user: a double holding the last report's time), and moving a matrix to the device when the
 * context is CUDA. */
int cli_knn_progress(int64_t done, int64_t total, void *user);
/* Takes the options both k-NN commands share (--metric NAME, -k K, --p P) at argv[*i]. */
bool cli_knn_option(int argc, char **argv, int *i, const char **metric_name, int64_t *k, double *p);
/* --mode NAME of the graph commands: "connectivity" or "distance" (false for anything else). */
bool cli_graph_mode(const char *name, sr_graph_mode *mode);
/* --precision NAME: exact|tf32|float32 (float32 distances; the first two may use tensor cores) or,
 * where float64 is allowed, float64 (*float64 set). false for any other name. */
bool cli_precision(const char *name, bool float64_allowed, sr_precision *precision, bool *float64);
sr_status cli_to_backend(sr_context ctx, sr_matrix *M);
/* The metric by name and a context (CLI_OK, or the exit code with the message printed), and the
 * inputs read as float32 where that context computes (queries may be NULL: Q is then left alone). */
int cli_knn_start(const cli_globals *g, const char *what, const char *metric_name, sr_metric *metric, sr_context *ctx);
sr_status cli_read_inputs(sr_context ctx, const char *data, const char *queries, sr_matrix *X, sr_matrix *Q);

#endif
