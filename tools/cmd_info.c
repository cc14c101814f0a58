/* sparsering info FILE: what a Matrix Market file holds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *symmetry_name(sr_mm_symmetry s)
{
    return s == SR_MM_SYMMETRIC ? "symmetric" : s == SR_MM_SKEW_SYMMETRIC ? "skew-symmetric" : "general";
}

int cmd_info(const cli_globals *g, int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: sparsering info FILE.mtx[.gz]\n");
        return CLI_USAGE;
    }
    sr_context ctx;
    int rc = cli_context(g, &ctx);
    if (rc != CLI_OK)
        return rc;
    sr_matrix A = NULL;
    sr_mm_header h;
    double t0 = cli_seconds();
    sr_status s = sr_matrix_read_mm(ctx, argv[1], -1, &A, &h);
    double seconds = cli_seconds() - t0;
    if (s != SR_SUCCESS) {
        sr_context_destroy(ctx);
        return cli_fail(s, "info");
    }
    sr_matrix_info info;
    sr_matrix_get_info(A, &info);
    const int64_t *rowptr;
    const int32_t *colind;
    sr_matrix_csr_arrays(A, &rowptr, &colind, NULL);
    int64_t min_deg = info.nrows ? INT64_MAX : 0, max_deg = 0, empty_rows = 0, empty_cols = 0;
    for (int64_t i = 0; i < info.nrows; i++) {
        int64_t d = rowptr[i + 1] - rowptr[i];
        min_deg = d < min_deg ? d : min_deg;
        max_deg = d > max_deg ? d : max_deg;
        empty_rows += d == 0;
    }
    unsigned char *seen = calloc((size_t)info.ncols + 1, 1);
    for (int64_t k = 0; seen && k < info.nnz; k++)
        seen[colind[k]] = 1;
    for (int64_t j = 0; seen && j < info.ncols; j++)
        empty_cols += !seen[j];
    free(seen);
    double cells = (double)info.nrows * (double)info.ncols;
    size_t bytes = (size_t)(info.nrows + 1) * 8 + (size_t)info.nnz * (4 + (info.type == SR_TYPE_BOOL ? 0 : sr_type_size(info.type)));
    printf("file:          %s\n", argv[1]);
    printf("format:        %s, %s\n", h.coordinate ? "coordinate" : "array", symmetry_name(h.symmetry));
    printf("shape:         %lld x %lld\n", (long long)info.nrows, (long long)info.ncols);
    printf("stored:        %lld entries in the file\n", (long long)h.stored_entries);
    printf("nonzeros:      %lld (density %.3g%%)\n", (long long)info.nnz, cells > 0 ? 100.0 * info.nnz / cells : 0.0);
    printf("type:          %s\n", sr_type_name(info.type));
    printf("row degree:    min %lld, mean %.2f, max %lld; %lld empty rows, %lld empty columns\n", (long long)min_deg,
           info.nrows ? (double)info.nnz / info.nrows : 0.0, (long long)max_deg, (long long)empty_rows,
           (long long)empty_cols);
    printf("CSR memory:    %.2f MB\n", bytes / 1e6);
    printf("read in:       %.3f s\n", seconds);
    sr_matrix_free(A);
    sr_context_destroy(ctx);
    return CLI_OK;
}
