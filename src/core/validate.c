#include "validate.h"

#include "error.h"
#include "types.h"

sr_status sr_check_shape(const char *fn, int64_t nrows, int64_t ncols, int64_t nnz, int type)
{
    SR_CHECK_ARG(sr_type_valid(type), "%s: unknown type %d", fn, type);
    SR_CHECK_ARG(nrows >= 0 && ncols >= 0, "%s: negative shape %lld x %lld", fn, (long long)nrows,
                 (long long)ncols);
    SR_CHECK_ARG(nnz >= 0, "%s: negative entry count %lld", fn, (long long)nnz);
    if (ncols > INT32_MAX)
        return sr_error(SR_ERROR_OVERFLOW, "%s: %lld columns exceed the 32-bit column index limit (2^31 - 1)", fn,
                        (long long)ncols);
    size_t bytes;
    if (nrows == INT64_MAX || !sr_checked_mul((size_t)nrows + 1, sizeof(int64_t), &bytes) ||
        !sr_checked_mul((size_t)nnz, 8, &bytes))
        return sr_error(SR_ERROR_OVERFLOW, "%s: %lld rows and %lld entries do not fit in memory sizes", fn,
                        (long long)nrows, (long long)nnz);
    return SR_SUCCESS;
}

sr_status sr_check_location(const char *fn, int where)
{
    SR_CHECK_ARG(where == SR_HOST || where == SR_DEVICE, "%s: unknown location %d (SR_HOST or SR_DEVICE)", fn,
                 where);
    return SR_SUCCESS;
}

sr_status sr_check_csr_row(int64_t row, const int32_t *cols, int64_t count, int64_t first, int64_t ncols)
{
    for (int64_t k = 0; k < count; k++) {
        int32_t c = cols[k];
        if (c < 0 || c >= ncols)
            return sr_error(SR_ERROR_INVALID_MATRIX, "column index %d of row %lld (entry %lld) is out of range [0, %lld)",
                            (int)c, (long long)row, (long long)(first + k), (long long)ncols);
        if (k > 0 && c == cols[k - 1])
            return sr_error(SR_ERROR_INVALID_MATRIX, "column %d appears twice in row %lld (entries %lld and %lld)",
                            (int)c, (long long)row, (long long)(first + k - 1), (long long)(first + k));
        if (k > 0 && c < cols[k - 1])
            return sr_error(SR_ERROR_INVALID_MATRIX,
                            "column indices of row %lld are not sorted: %d follows %d (entry %lld)", (long long)row,
                            (int)c, (int)cols[k - 1], (long long)(first + k));
    }
    return SR_SUCCESS;
}

sr_status sr_check_rowptr(const int64_t *rowptr, int64_t nrows, int64_t nnz)
{
    if (rowptr[0] != 0)
        return sr_check_rowptr_ends(rowptr[0], 0, nrows, 0);
    for (int64_t i = 0; i < nrows; i++)
        if (rowptr[i + 1] < rowptr[i])
            return sr_rowptr_decrease_error(i, rowptr[i], rowptr[i + 1]);
    return sr_check_rowptr_ends(rowptr[0], rowptr[nrows], nrows, nnz);
}

sr_status sr_check_rowptr_ends(int64_t first, int64_t last, int64_t nrows, int64_t nnz)
{
    if (first != 0)
        return sr_error(SR_ERROR_INVALID_MATRIX, "row pointers must start at 0, but rowptr[0] = %lld", (long long)first);
    if (last != nnz)
        return sr_error(SR_ERROR_INVALID_MATRIX, "rowptr[%lld] = %lld, but the matrix has %lld entries",
                        (long long)nrows, (long long)last, (long long)nnz);
    return SR_SUCCESS;
}

sr_status sr_rowptr_decrease_error(int64_t row, int64_t at_row, int64_t at_next)
{
    return sr_error(SR_ERROR_INVALID_MATRIX, "row pointers decrease at row %lld: rowptr[%lld] = %lld > rowptr[%lld] = %lld",
                    (long long)row, (long long)row, (long long)at_row, (long long)(row + 1), (long long)at_next);
}

sr_status sr_check_csr_host(const int64_t *rowptr, const int32_t *colind, int64_t nrows, int64_t ncols,
                            int64_t nnz, int threads)
{
    SR_TRY(sr_check_rowptr(rowptr, nrows, nnz));
    /* Find the first bad row in parallel, then describe it serially. */
    int64_t first_bad = nrows;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1024) reduction(min : first_bad)
    for (int64_t i = 0; i < nrows; i++) {
        const int32_t *c = colind + rowptr[i];
        int64_t n = rowptr[i + 1] - rowptr[i];
        for (int64_t k = 0; k < n; k++)
            if (c[k] < 0 || c[k] >= ncols || (k > 0 && c[k] <= c[k - 1])) {
                if (i < first_bad)
                    first_bad = i;
                break;
            }
    }
    if (first_bad == nrows)
        return SR_SUCCESS;
    return sr_check_csr_row(first_bad, colind + rowptr[first_bad], rowptr[first_bad + 1] - rowptr[first_bad],
                            rowptr[first_bad], ncols);
}

sr_status sr_check_dense(const char *fn, const sr_dense *d)
{
    SR_CHECK_ARG(d != NULL, "%s: the dense view is NULL", fn);
    SR_CHECK_ARG(sr_type_valid(d->type), "%s: dense view has unknown type %d", fn, (int)d->type);
    SR_CHECK_ARG(d->layout == SR_ROW_MAJOR || d->layout == SR_COL_MAJOR, "%s: dense view has unknown layout %d", fn,
                 (int)d->layout);
    SR_TRY(sr_check_location(fn, d->location));
    SR_CHECK_ARG(d->nrows >= 0 && d->ncols >= 0, "%s: dense view has negative shape %lld x %lld", fn,
                 (long long)d->nrows, (long long)d->ncols);
    int64_t inner = d->layout == SR_ROW_MAJOR ? d->ncols : d->nrows;
    int64_t outer = d->layout == SR_ROW_MAJOR ? d->nrows : d->ncols;
    SR_CHECK_ARG(d->ld >= inner && d->ld >= 1, "%s: leading dimension %lld is less than %s (%lld)", fn,
                 (long long)d->ld, d->layout == SR_ROW_MAJOR ? "ncols" : "nrows", (long long)inner);
    size_t elements;
    if (!sr_checked_mul((size_t)d->ld, (size_t)outer, &elements) || !sr_checked_mul(elements, 8, &elements))
        return sr_error(SR_ERROR_OVERFLOW, "%s: dense view of %lld x %lld overflows size_t", fn, (long long)d->nrows,
                        (long long)d->ncols);
    SR_CHECK_ARG(d->data != NULL || outer == 0 || inner == 0, "%s: dense view data is NULL", fn);
    if (d->ncols > INT32_MAX)
        return sr_error(SR_ERROR_OVERFLOW, "%s: %lld columns exceed the 32-bit column index limit", fn,
                        (long long)d->ncols);
    return SR_SUCCESS;
}

sr_dense sr_dense_view(void *data, int64_t nrows, int64_t ncols, sr_type type, sr_layout layout,
                       sr_location location)
{
    sr_dense d;
    d.data = data;
    d.nrows = nrows;
    d.ncols = ncols;
    d.ld = layout == SR_ROW_MAJOR ? ncols : nrows;
    if (d.ld < 1)
        d.ld = 1;
    d.type = type;
    d.layout = layout;
    d.location = location;
    return d;
}
