/* libFuzzer target: the CSR and COO constructors on arbitrary arrays read from the input (sizes,
 * row pointers, columns, values), then a transpose and an export of whatever is accepted. The
 * library must reject every invalid array with a status, never read past them or crash. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sparsering.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The next 8 bytes of the input (cycling; zero when empty). */
static uint64_t take(const uint8_t *data, size_t size, size_t *at)
{
    uint64_t v = 0;
    for (int i = 0; i < 8 && size > 0; i++, (*at)++)
        v |= (uint64_t)data[*at % size] << (8 * i);
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static sr_context ctx = NULL;
    if (!ctx) {
        sr_context_options o = sr_context_options_default();
        o.backend = SR_BACKEND_CPU;
        o.threads = 1;
        o.host_memory_limit = (size_t)1 << 28;
        if (sr_context_create(&ctx, &o) != SR_SUCCESS)
            abort();
    }
    size_t at = 0;
    const uint64_t shape = take(data, size, &at);
    /* mostly small shapes, sometimes huge or negative ones */
    const int64_t nrows = (shape & 0x100) ? (int64_t)take(data, size, &at) : (int64_t)(shape & 63);
    const int64_t ncols = (shape & 0x200) ? (int64_t)take(data, size, &at) : (int64_t)((shape >> 10) & 63);
    const int64_t nnz = (int64_t)((shape >> 16) & 255);
    const sr_type type = (sr_type)((shape >> 24) & 3);
    const int64_t rows_len = nrows >= 0 && nrows < 64 ? nrows + 1 : 1;
    int64_t *rowptr = calloc((size_t)rows_len, sizeof(int64_t)), *rows = calloc((size_t)nnz + 1, sizeof(int64_t));
    /* the CSR call reads rowptr[nrows] (< 300) columns and values: the arrays hold that many */
    int32_t *cols = calloc(512, sizeof(int32_t));
    double *values = calloc(512, sizeof(double));
    for (int64_t i = 0; i < rows_len; i++)
        rowptr[i] = (int64_t)(take(data, size, &at) % 300) - 10;
    for (int64_t k = 0; k < 512; k++) {
        cols[k] = (int32_t)(take(data, size, &at) % 80) - 5;
        uint64_t bits = take(data, size, &at);
        memcpy(&values[k], &bits, sizeof bits); /* NaN, infinities and subnormals included */
    }
    for (int64_t k = 0; k < nnz; k++) {
        rows[k] = (int64_t)(take(data, size, &at) % 80) - 5;
    }
    sr_matrix A = NULL;
    const void *vals = type == SR_TYPE_BOOL ? NULL : values;
    if (nrows >= 0 && nrows < 64 &&
        sr_matrix_from_csr(ctx, &A, nrows, ncols, type, rowptr, cols, vals, SR_HOST) == SR_SUCCESS) {
        sr_matrix T = NULL;
        if (sr_matrix_transpose(ctx, A, &T) == SR_SUCCESS)
            sr_matrix_free(T);
        sr_matrix_free(A);
        A = NULL;
    }
    for (int dup = 0; dup < 2; dup++)
        if (sr_matrix_from_coo(ctx, &A, nrows, ncols, type, nnz, rows, cols, vals, (sr_duplicates)dup, SR_HOST) ==
            SR_SUCCESS) {
            sr_matrix_info info;
            sr_matrix_get_info(A, &info);
            int64_t *r = calloc((size_t)info.nnz + 1, sizeof(int64_t));
            int32_t *c = calloc((size_t)info.nnz + 1, sizeof(int32_t));
            double *v = calloc((size_t)info.nnz + 1, 8);
            if (sr_matrix_export_coo(ctx, A, r, c, type == SR_TYPE_BOOL ? NULL : v, SR_HOST) != SR_SUCCESS)
                abort(); /* a valid matrix exports */
            free(r), free(c), free(v);
            sr_matrix_free(A);
            A = NULL;
        }
    free(rowptr), free(rows), free(cols), free(values);
    return 0;
}
