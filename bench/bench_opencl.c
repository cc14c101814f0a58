/* The Boolean operations on every backend of this build, in one process: the CPU backend, CUDA
 * (device-resident matrices) and each OpenCL device asked for (host matrices; a call includes
 * moving its operands to the device and its result back). Each result is checked against the
 * CPU backend's. Prints a table of medians and writes one JSON object per row.
 *
 * usage: bench_opencl [--data DIR] [--reps N] [--opencl I[,J...]] [--json FILE] [--quick] [--only TEXT] [--op NAME]
 *   --opencl: the OpenCL device indices to run (default 0: GPUs first, in platform order)
 *   --quick:  debian-depends and R-MAT 14 only
 *   --only:   the inputs whose name contains TEXT; --op: that operation alone (as printed, e.g. "M·M")
 * SPARSERING_PROFILE=1 prints each OpenCL kernel's device time and each copy on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_time.h"
#include "sparsering.h"

#define SR_OK(x)                                                              \
    do {                                                                      \
        sr_status e_ = (x);                                                   \
        if (e_ != SR_SUCCESS) {                                               \
            fprintf(stderr, "%s: %s\n", #x, sr_last_error());                 \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

/* Graph500's R-MAT (a = 0.57, b = c = 0.19), vertices permuted, self loops and repeats dropped. */
static sr_matrix rmat(sr_context ctx, int scale, int edge_factor, uint64_t seed)
{
    const int64_t n = (int64_t)1 << scale, m = (int64_t)edge_factor << scale;
    int64_t *rows = malloc((size_t)m * sizeof *rows), *perm = malloc((size_t)n * sizeof *perm);
    int32_t *cols = malloc((size_t)m * sizeof *cols);
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
#define NEXT_U (x ^= x >> 12, x ^= x << 25, x ^= x >> 27, (double)((x * 2685821657736338717ull) >> 11) / 9007199254740992.0)
    for (int64_t v = 0; v < n; v++)
        perm[v] = v;
    for (int64_t v = n - 1; v > 0; v--) {
        int64_t w = (int64_t)(NEXT_U * (double)(v + 1)), t = perm[v];
        perm[v] = perm[w];
        perm[w] = t;
    }
    int64_t kept = 0;
    for (int64_t e = 0; e < m; e++) {
        int64_t r = 0, c = 0;
        for (int bit = 0; bit < scale; bit++) {
            const double u = NEXT_U;
            r |= (int64_t)(u >= 0.76) << bit;
            c |= (int64_t)((u >= 0.57 && u < 0.76) || u >= 0.95) << bit;
        }
        if (perm[r] != perm[c]) {
            rows[kept] = perm[r];
            cols[kept++] = (int32_t)perm[c];
        }
    }
#undef NEXT_U
    sr_matrix A;
    SR_OK(sr_matrix_from_coo(ctx, &A, n, n, SR_TYPE_BOOL, kept, rows, cols, NULL, SR_DUPLICATES_SUM, SR_HOST));
    free(rows), free(cols), free(perm);
    return A;
}

typedef enum { OP_MXM, OP_MXM_ACC, OP_TRANSPOSE, OP_ADD_T, OP_MULT_T, OP_CLOSURE, OP_COUNT } op_kind;
static const char *op_names[OP_COUNT] = {"M·M", "M + M·M", "Mᵀ", "M + Mᵀ", "M .* Mᵀ", "closure"};

/* One operation on ctx; M and Mt live where ctx computes. Returns the result. */
static sr_matrix run_op(sr_context ctx, op_kind op, sr_matrix M, sr_matrix Mt)
{
    sr_matrix C = NULL;
    switch (op) {
    case OP_MXM: SR_OK(sr_mxm(ctx, &C, NULL, SR_OR_AND, M, M, NULL)); break;
    case OP_MXM_ACC: {
        sr_descriptor d = {.accumulate = true};
        SR_OK(sr_matrix_dup(ctx, M, &C));
        SR_OK(sr_mxm(ctx, &C, NULL, SR_OR_AND, M, M, &d));
        break;
    }
    case OP_TRANSPOSE: SR_OK(sr_matrix_transpose(ctx, M, &C)); break;
    case OP_ADD_T: SR_OK(sr_ewise_add(ctx, &C, NULL, SR_OR_AND, M, Mt, NULL)); break;
    case OP_MULT_T: SR_OK(sr_ewise_mult(ctx, &C, NULL, SR_OR_AND, M, Mt, NULL)); break;
    case OP_CLOSURE: SR_OK(sr_transitive_closure(ctx, M, SR_CLOSURE_SEMINAIVE, &C, NULL, NULL)); break;
    default: break;
    }
    return C;
}

typedef struct {
    const char *name;
    sr_context ctx;
    sr_location where;
} backend;

int main(int argc, char **argv)
{
    const char *data = "../shared/data", *json_path = NULL, *opencl_list = "0", *only = NULL, *only_op = NULL;
    int reps = 5;
    int quick = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--data") == 0 && i + 1 < argc)
            data = argv[++i];
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--opencl") == 0 && i + 1 < argc)
            opencl_list = argv[++i];
        else if (strcmp(argv[i], "--json") == 0 && i + 1 < argc)
            json_path = argv[++i];
        else if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else if (strcmp(argv[i], "--op") == 0 && i + 1 < argc)
            only_op = argv[++i];
        else {
            fprintf(stderr, "usage: bench_opencl [--data DIR] [--reps N] [--opencl I[,J...]] [--json FILE] [--quick] "
                    "[--only TEXT] [--op NAME]\n");
            return 2;
        }
    }
    if (reps < 1)
        reps = 1;
    printf("sparsering %s\n", sr_version_string());
    backend backends[10];
    int nb = 0;
    static char names[10][64];
    sr_context_options o = sr_context_options_default();
    o.backend = SR_BACKEND_CPU;
    SR_OK(sr_context_create(&backends[nb].ctx, &o));
    backends[nb++] = (backend){"cpu", backends[0].ctx, SR_HOST};
    o.backend = SR_BACKEND_CUDA;
    if (sr_context_create(&backends[nb].ctx, &o) == SR_SUCCESS) {
        backends[nb].name = "cuda";
        backends[nb++].where = SR_DEVICE;
    } else {
        printf("cuda: %s\n", sr_last_error());
    }
    for (const char *p = opencl_list; *p && nb < 10;) {
        o.backend = SR_BACKEND_OPENCL;
        o.device = atoi(p);
        if (sr_context_create(&backends[nb].ctx, &o) == SR_SUCCESS) {
            snprintf(names[nb], sizeof names[nb], "opencl %d", o.device);
            backends[nb].name = names[nb];
            backends[nb++].where = SR_HOST;
        } else {
            printf("opencl %d: %s\n", o.device, sr_last_error());
        }
        p = strchr(p, ',');
        if (!p)
            break;
        p++;
    }
    FILE *json = json_path ? fopen(json_path, "w") : NULL;

    sr_context cpu = backends[0].ctx;
    struct {
        char name[64];
        sr_matrix M;
    } inputs[6];
    int ni = 0;
    char path[1024];
    snprintf(path, sizeof path, "%s/graphs/debian-depends.mtx.gz", data);
    if (only && !strstr("debian-depends", only))
        ; /* not asked for */
    else if (sr_matrix_read_mm(cpu, path, SR_TYPE_BOOL, &inputs[ni].M, NULL) == SR_SUCCESS)
        snprintf(inputs[ni++].name, 64, "debian-depends");
    else
        printf("debian-depends skipped: %s\n", sr_last_error());
    const int scales[] = {14, 16, 17};
    for (int s = 0; s < (quick ? 1 : 3); s++) {
        snprintf(inputs[ni].name, 64, "R-MAT %d, ef 8", scales[s]);
        if (!only || strstr(inputs[ni].name, only))
            inputs[ni++].M = rmat(cpu, scales[s], 8, 7);
    }

    printf("\n%-18s %-9s %12s", "input", "operation", "result nnz");
    for (int b = 0; b < nb; b++)
        printf(" %14s", backends[b].name);
    printf("   (median ms of %d; x = the CPU backend's time over this one's)\n", reps);
    for (int i = 0; i < ni; i++) {
        sr_matrix_info info;
        SR_OK(sr_matrix_get_info(inputs[i].M, &info));
        for (int op = 0; op < OP_COUNT; op++) {
            if (op == OP_CLOSURE && strcmp(inputs[i].name, "debian-depends") != 0)
                continue; /* R-MAT's closure is nearly complete: n² entries */
            if (only_op && strcmp(op_names[op], only_op) != 0)
                continue;
            sr_matrix expected = NULL;
            double ms[10] = {0};
            int64_t nnz = -1;
            for (int b = 0; b < nb; b++) {
                sr_matrix M = NULL, Mt = NULL, H = NULL;
                if (backends[b].where == SR_DEVICE)
                    SR_OK(sr_matrix_copy_to(backends[b].ctx, inputs[i].M, SR_DEVICE, &M));
                else
                    SR_OK(sr_matrix_dup(backends[b].ctx, inputs[i].M, &M));
                SR_OK(sr_matrix_transpose(backends[b].ctx, M, &Mt));
                double t[64];
                int r = reps < 64 ? reps : 64;
                sr_matrix C = run_op(backends[b].ctx, (op_kind)op, M, Mt); /* warm-up (and OpenCL's JIT) */
                SR_OK(sr_context_synchronize(backends[b].ctx));
                for (int k = 0; k < r; k++) {
                    sr_matrix_free(C);
                    const double t0 = now();
                    C = run_op(backends[b].ctx, (op_kind)op, M, Mt);
                    SR_OK(sr_context_synchronize(backends[b].ctx));
                    t[k] = now() - t0;
                }
                ms[b] = 1e3 * median(t, r);
                SR_OK(sr_matrix_copy_to(cpu, C, SR_HOST, &H));
                if (b == 0) {
                    expected = H;
                    sr_matrix_info ci;
                    SR_OK(sr_matrix_get_info(H, &ci));
                    nnz = ci.nnz;
                } else {
                    bool same = false;
                    SR_OK(sr_matrix_equal(cpu, expected, H, &same));
                    if (!same) {
                        fprintf(stderr, "%s %s on %s differs from the CPU backend's result\n", inputs[i].name,
                                op_names[op], backends[b].name);
                        return 1;
                    }
                    sr_matrix_free(H);
                }
                sr_matrix_free(C), sr_matrix_free(M), sr_matrix_free(Mt);
                if (json)
                    fprintf(json, "{\"operation\": \"%s\", \"input\": \"%s\", \"nnz\": %lld, \"backend\": \"%s\", "
                            "\"median_s\": %.9f, \"cpu_s\": %.9f}\n", op_names[op], inputs[i].name,
                            (long long)info.nnz, backends[b].name, ms[b] * 1e-3, ms[0] * 1e-3);
            }
            printf("%-18s %-9s %12lld", inputs[i].name, op_names[op], (long long)nnz);
            for (int b = 0; b < nb; b++)
                printf(b ? " %7.3f (%4.1fx)" : " %14.3f", ms[b], ms[0] / ms[b]);
            printf("\n");
            fflush(stdout);
            sr_matrix_free(expected);
        }
    }
    for (int i = 0; i < ni; i++)
        sr_matrix_free(inputs[i].M);
    for (int b = 0; b < nb; b++)
        sr_context_destroy(backends[b].ctx);
    if (json)
        fclose(json);
    return 0;
}
