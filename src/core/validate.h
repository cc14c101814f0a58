/* Checks of caller input, with messages that name the offending row, entry or value. */
#ifndef SR_CORE_VALIDATE_H
#define SR_CORE_VALIDATE_H

#include "sparsering.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Shape, count and type: non-negative, ncols < 2^31, byte sizes that fit size_t. */
sr_status sr_check_shape(const char *fn, int64_t nrows, int64_t ncols, int64_t nnz, int type);
sr_status sr_check_location(const char *fn, int where);

/* One row's column indices: in [0, ncols), strictly increasing. `first` is the entry's global
 * position, for the message. */
sr_status sr_check_csr_row(int64_t row, const int32_t *cols, int64_t count, int64_t first, int64_t ncols);

/* Row pointers: start at 0, never decrease, end at nnz. */
sr_status sr_check_rowptr(const int64_t *rowptr, int64_t nrows, int64_t nnz);

/* The two ends of the row pointers: rowptr[0] == 0 and rowptr[nrows] == nnz. */
sr_status sr_check_rowptr_ends(int64_t first, int64_t last, int64_t nrows, int64_t nnz);
/* The message for rowptr[row] = at_row > rowptr[row+1] = at_next. */
sr_status sr_rowptr_decrease_error(int64_t row, int64_t at_row, int64_t at_next);

/* A whole host CSR (rowptr and every row), in parallel over rows. */
sr_status sr_check_csr_host(const int64_t *rowptr, const int32_t *colind, int64_t nrows, int64_t ncols,
                            int64_t nnz, int threads);

/* A dense view: shape, ld, type, layout, location. */
sr_status sr_check_dense(const char *fn, const sr_dense *d);

#ifdef __cplusplus
}
#endif

#endif
