/* libFuzzer target: the Matrix Market reader (text and gzip: zlib reads both) on arbitrary
 * bytes, with and without a requested type; a success must give a valid matrix of the declared
 * shape. Build: cmake -DSPARSERING_FUZZ=ON with clang (README, "Fuzzing"). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "sparsering.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static sr_context ctx = NULL;
    static char path[64];
    if (!ctx) {
        sr_context_options o = sr_context_options_default();
        o.backend = SR_BACKEND_CPU;
        o.threads = 1;
        o.host_memory_limit = (size_t)1 << 28; /* a quarter GiB: the fuzzer's own limit is 2 GiB */
        if (sr_context_create(&ctx, &o) != SR_SUCCESS)
            abort();
        snprintf(path, sizeof path, "/tmp/sr_fuzz_mm_%d.mtx", (int)getpid());
    }
    FILE *f = fopen(path, "wb");
    if (!f)
        return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    const int types[] = {-1, SR_TYPE_BOOL, SR_TYPE_INT32, SR_TYPE_FLOAT64};
    for (int t = 0; t < 4; t++) {
        sr_matrix A = NULL;
        sr_mm_header h;
        if (sr_matrix_read_mm(ctx, path, types[t], &A, &h) == SR_SUCCESS) {
            sr_matrix_info info;
            if (sr_matrix_get_info(A, &info) != SR_SUCCESS || info.nrows != h.nrows || info.ncols != h.ncols)
                abort(); /* a read that succeeds gives the declared shape */
            sr_matrix T = NULL;
            if (sr_matrix_transpose(ctx, A, &T) == SR_SUCCESS)
                sr_matrix_free(T);
        } else if (A != NULL) {
            abort(); /* a failed read writes nothing */
        }
        sr_matrix_free(A);
    }
    sr_mm_header h;
    (void)sr_mm_read_header(path, &h);
    unlink(path);
    return 0;
}
