/* Transpose (CSR -> CSR of the transpose) on the GPU against cuSPARSE csr2csc, in one process,
 * on synthetic power-law matrices and real graphs. Prints a table; writes JSON rows.
 * usage: bench_transpose [--data DIR] [--json FILE] [--reps N] */
#include <cuda_runtime.h>
#include <cusparse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../tools/powerlaw.h"
#include "bench_time.h"
#include "sparsering.h"

#define CUDA_OK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)
#define SPARSE_OK(x) do { cusparseStatus_t e_ = (x); if (e_ != CUSPARSE_STATUS_SUCCESS) { fprintf(stderr, "%s: %d\n", #x, (int)e_); exit(1); } } while (0)
#define SR_OK(x) do { sr_status e_ = (x); if (e_ != SR_SUCCESS) { fprintf(stderr, "%s: %s\n", #x, sr_last_error()); exit(1); } } while (0)

/* Device-to-device copy bandwidth (bytes read + written per second): the ceiling. */
static double copy_ceiling(void)
{
    size_t bytes = (size_t)1 << 30;
    void *a, *b;
    CUDA_OK(cudaMalloc(&a, bytes));
    CUDA_OK(cudaMalloc(&b, bytes));
    CUDA_OK(cudaMemset(a, 1, bytes));
    double t[10];
    for (int r = -2; r < 10; r++) {
        CUDA_OK(cudaDeviceSynchronize());
        double t0 = now();
        CUDA_OK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
        CUDA_OK(cudaDeviceSynchronize());
        if (r >= 0)
            t[r] = now() - t0;
    }
    cudaFree(a);
    cudaFree(b);
    return 2.0 * (double)bytes / median(t, 10);
}

typedef struct {
    double ours_gpu, cusparse, ours_cpu;
    size_t ours_peak, cusparse_peak;
} result;

static result run_case(sr_context gpu, sr_context cpu, sr_matrix H, int reps)
{
    result r = {0, 0, 0, 0, 0};
    sr_matrix_info info;
    sr_matrix_get_info(H, &info);
    double *t = malloc((size_t)reps * sizeof *t);

    /* ours, GPU: output allocation included in every call */
    sr_matrix D = NULL, DT = NULL;
    SR_OK(sr_matrix_copy_to(gpu, H, SR_DEVICE, &D));
    size_t base = 0;
    sr_context_device_memory(gpu, &base, NULL);
    sr_context_reset_peak_memory(gpu);
    for (int i = -2; i < reps; i++) {
        double t0 = now();
        SR_OK(sr_matrix_transpose(gpu, D, &DT));
        if (i >= 0)
            t[i] = now() - t0;
        sr_matrix_free(DT);
    }
    r.ours_gpu = median(t, reps);
    sr_context_device_memory(gpu, NULL, &r.ours_peak);
    r.ours_peak -= base;

    /* cuSPARSE csr2csc: int32 row pointers, output and buffer allocated once (in its favour) */
    const int64_t *drp64;
    const int32_t *dci;
    const void *dv;
    sr_matrix_csr_arrays(D, &drp64, &dci, &dv);
    int64_t n = info.nrows, m = info.ncols, nnz = info.nnz;
    int64_t *hrp64 = malloc((size_t)(n + 1) * sizeof *hrp64);
    int32_t *hrp32 = malloc((size_t)(n + 1) * sizeof *hrp32);
    CUDA_OK(cudaMemcpy(hrp64, drp64, (size_t)(n + 1) * 8, cudaMemcpyDeviceToHost));
    for (int64_t i = 0; i <= n; i++)
        hrp32[i] = (int32_t)hrp64[i];
    int32_t *drp32, *cscp, *csci;
    float *cscv, *vals = NULL;
    CUDA_OK(cudaMalloc((void **)&drp32, (size_t)(n + 1) * 4));
    CUDA_OK(cudaMemcpy(drp32, hrp32, (size_t)(n + 1) * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMalloc((void **)&cscp, (size_t)(m + 1) * 4));
    CUDA_OK(cudaMalloc((void **)&csci, (size_t)(nnz + 1) * 4));
    CUDA_OK(cudaMalloc((void **)&cscv, (size_t)(nnz + 1) * 4));
    if (info.type == SR_TYPE_BOOL) { /* cuSPARSE has no value-free type: give it ones */
        CUDA_OK(cudaMalloc((void **)&vals, (size_t)(nnz + 1) * 4));
        CUDA_OK(cudaMemset(vals, 0, (size_t)(nnz + 1) * 4));
    }
    cusparseHandle_t handle;
    SPARSE_OK(cusparseCreate(&handle));
    size_t buffer_bytes = 0;
    cusparseAction_t action = info.type == SR_TYPE_BOOL ? CUSPARSE_ACTION_SYMBOLIC : CUSPARSE_ACTION_NUMERIC;
    const void *in_vals = info.type == SR_TYPE_BOOL ? (const void *)vals : dv;
    SPARSE_OK(cusparseCsr2cscEx2_bufferSize(handle, (int)n, (int)m, (int)nnz, in_vals, drp32, dci, cscv, cscp, csci,
                                            CUDA_R_32F, action, CUSPARSE_INDEX_BASE_ZERO, CUSPARSE_CSR2CSC_ALG1,
                                            &buffer_bytes));
    void *buffer;
    CUDA_OK(cudaMalloc(&buffer, buffer_bytes + 1));
    for (int i = -2; i < reps; i++) {
        CUDA_OK(cudaDeviceSynchronize());
        double t0 = now();
        SPARSE_OK(cusparseCsr2cscEx2(handle, (int)n, (int)m, (int)nnz, in_vals, drp32, dci, cscv, cscp, csci,
                                     CUDA_R_32F, action, CUSPARSE_INDEX_BASE_ZERO, CUSPARSE_CSR2CSC_ALG1, buffer));
        CUDA_OK(cudaDeviceSynchronize());
        if (i >= 0)
            t[i] = now() - t0;
    }
    r.cusparse = median(t, reps);
    r.cusparse_peak = buffer_bytes + (size_t)(m + 1) * 4 + (size_t)nnz * (info.type == SR_TYPE_BOOL ? 4 : 8);

    /* cross-check: cuSPARSE's column pointers equal our row pointers */
    SR_OK(sr_matrix_transpose(gpu, D, &DT));
    const int64_t *trp;
    sr_matrix_csr_arrays(DT, &trp, NULL, NULL);
    int64_t *ours = malloc((size_t)(m + 1) * 8);
    int32_t *theirs = malloc((size_t)(m + 1) * 4);
    CUDA_OK(cudaMemcpy(ours, trp, (size_t)(m + 1) * 8, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(theirs, cscp, (size_t)(m + 1) * 4, cudaMemcpyDeviceToHost));
    for (int64_t j = 0; j <= m; j++)
        if (ours[j] != theirs[j]) {
            fprintf(stderr, "MISMATCH with cuSPARSE at column %lld\n", (long long)j);
            exit(1);
        }
    sr_matrix_free(DT);

    /* ours, CPU */
    int cpu_reps = reps < 5 ? reps : 5;
    for (int i = -1; i < cpu_reps; i++) {
        double t0 = now();
        SR_OK(sr_matrix_transpose(cpu, H, &DT));
        if (i >= 0)
            t[i] = now() - t0;
        sr_matrix_free(DT);
    }
    r.ours_cpu = median(t, cpu_reps);

    cusparseDestroy(handle);
    cudaFree(buffer);
    cudaFree(drp32);
    cudaFree(cscp);
    cudaFree(csci);
    cudaFree(cscv);
    cudaFree(vals);
    free(hrp64);
    free(hrp32);
    free(ours);
    free(theirs);
    free(t);
    sr_matrix_free(D);
    return r;
}

int main(int argc, char **argv)
{
    const char *data = NULL, *json_path = "bench_transpose.json";
    int reps = 10;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--data") == 0) data = argv[i + 1];
        else if (strcmp(argv[i], "--json") == 0) json_path = argv[i + 1];
        else if (strcmp(argv[i], "--reps") == 0) reps = atoi(argv[i + 1]);
    }
    if (reps < 1 || reps > 1000)
        reps = 10;
    sr_context gpu, cpu;
    sr_context_options o = sr_context_options_default();
    o.backend = SR_BACKEND_CUDA;
    if (sr_context_create(&gpu, &o) != SR_SUCCESS) {
        printf("bench_transpose: no GPU: %s\n", sr_last_error());
        return 0;
    }
    o.backend = SR_BACKEND_CPU;
    SR_OK(sr_context_create(&cpu, &o));
    struct cudaDeviceProp prop;
    CUDA_OK(cudaGetDeviceProperties(&prop, 0));
    double ceiling = copy_ceiling();
    printf("device: %s; copy ceiling %.2f TB/s (read + write); median of %d runs after warm-up\n", prop.name,
           ceiling / 1e12, reps);
    FILE *json = fopen(json_path, "w");

    struct {
        const char *name;
        int64_t rows, cols;
        double degree;
        const char *file;
    } cases[] = {
        {"powerlaw 2Mx2M", 2000000, 2000000, 16, NULL},
        {"powerlaw 4Mx500K", 4000000, 500000, 8, NULL},
        {"powerlaw 500Kx4M", 500000, 4000000, 48, NULL},
        {"debian-depends", 0, 0, 0, "graphs/debian-depends.mtx.gz"},
        {"pushpull", 0, 0, 0, "graphs/pushpull.mtx.gz"},
        {"bcsstk13", 0, 0, 0, "graphs/bcsstk13.mtx.gz"},
    };
    printf("\n%-18s %-7s %11s %9s | %9s %9s %7s %7s | %9s %9s | %9s\n", "matrix", "type", "nnz", "max row",
           "ours ms", "cuSP ms", "speedup", "% ceil", "ours MB", "cuSP MB", "CPU ms");
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        sr_matrix H = NULL;
        if (cases[c].file) {
            char path[2048];
            if (!data)
                continue;
            snprintf(path, sizeof path, "%s/%s", data, cases[c].file);
            if (sr_matrix_read_mm(cpu, path, SR_TYPE_FLOAT32, &H, NULL) != SR_SUCCESS) {
                printf("%-18s skipped: %s\n", cases[c].name, sr_last_error());
                continue;
            }
        } else {
            int64_t *rp;
            int32_t *ci;
            float *v;
            if (!powerlaw_csr(cases[c].rows, cases[c].cols, cases[c].degree, 7 + c, &rp, &ci, &v))
                return 1;
            SR_OK(sr_matrix_from_csr(cpu, &H, cases[c].rows, cases[c].cols, SR_TYPE_FLOAT32, rp, ci, v, SR_HOST));
            free(rp), free(ci), free(v);
        }
        for (int b = 0; b < 2; b++) {
            sr_matrix M = H;
            if (b == 1)
                SR_OK(sr_matrix_cast(cpu, H, SR_TYPE_BOOL, &M));
            sr_matrix_info info;
            sr_matrix_get_info(M, &info);
            const int64_t *rp;
            sr_matrix_csr_arrays(M, &rp, NULL, NULL);
            int64_t max_row = 0;
            for (int64_t i = 0; i < info.nrows; i++)
                max_row = rp[i + 1] - rp[i] > max_row ? rp[i + 1] - rp[i] : max_row;
            result r = run_case(gpu, cpu, M, reps);
            double vbytes = b == 1 ? 0 : 4;
            double bytes = 2.0 * ((double)info.nnz * (4 + vbytes)) + 8.0 * (double)(info.nrows + info.ncols + 2);
            printf("%-18s %-7s %11lld %9lld | %9.3f %9.3f %6.2fx %6.1f%% | %9.1f %9.1f | %9.1f\n", cases[c].name,
                   b ? "bool" : "float32", (long long)info.nnz, (long long)max_row, r.ours_gpu * 1e3, r.cusparse * 1e3,
                   r.cusparse / r.ours_gpu, 100.0 * bytes / r.ours_gpu / ceiling, r.ours_peak / 1e6,
                   r.cusparse_peak / 1e6, r.ours_cpu * 1e3);
            if (json)
                fprintf(json,
                        "{\"operation\": \"transpose\", \"input\": \"%s\", \"type\": \"%s\", \"nnz\": %lld, "
                        "\"backend\": \"cuda\", \"median_s\": %.6e, \"baseline\": \"cusparseCsr2cscEx2\", "
                        "\"baseline_s\": %.6e, \"ratio\": %.3f, \"gbps\": %.1f, \"floor_s\": %.6e, "
                        "\"peak_device_bytes\": %zu, \"baseline_peak_device_bytes\": %zu, \"cpu_median_s\": %.6e}\n",
                        cases[c].name, b ? "bool" : "float32", (long long)info.nnz, r.ours_gpu, r.cusparse,
                        r.cusparse / r.ours_gpu, bytes / r.ours_gpu / 1e9, bytes / ceiling, r.ours_peak,
                        r.cusparse_peak, r.ours_cpu);
            if (b == 1)
                sr_matrix_free(M);
        }
        sr_matrix_free(H);
    }
    if (json)
        fclose(json);
    printf("\nspeedup = cuSPARSE time / ours (> 1: ours faster); %% ceil = bytes of input + output at the copy "
           "ceiling over our time; ours MB = peak device bytes beyond the input matrix (output included); cuSP MB = "
           "its output + buffer.\n");
    sr_context_destroy(gpu);
    sr_context_destroy(cpu);
    return 0;
}
