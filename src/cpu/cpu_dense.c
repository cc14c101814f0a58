/* CSR <-> dense on the host. */
#include <string.h>

#include "../core/types.h"
#include "cpu.h"

static inline double dense_value(const sr_dense *d, size_t at)
{
    switch (d->type) {
    case SR_TYPE_BOOL: return ((const uint8_t *)d->data)[at];
    case SR_TYPE_INT32: return ((const int32_t *)d->data)[at];
    case SR_TYPE_FLOAT32: return ((const float *)d->data)[at];
    case SR_TYPE_FLOAT64: return ((const double *)d->data)[at];
    }
    return 0.0;
}

static inline bool dense_keeps(const sr_dense *d, int64_t i, int64_t j, const sr_keep_rule *rule)
{
    if (rule->self_offset != SR_KEEP_NO_SELF && j == i + rule->self_offset)
        return false;
    const double v = dense_value(d, sr_dense_offset(d, i, j));
    switch (rule->kind) {
    case SR_KEEP_NONZERO: return v != 0.0; /* NaN != 0: kept */
    case SR_KEEP_AT_MOST: return v <= rule->bound;
    case SR_KEEP_AT_LEAST: return v >= rule->bound;
    }
    return false;
}

void sr_cpu_csr_to_dense(const struct sr_matrix_s *A, const sr_dense *d, int threads)
{
    size_t esize = sr_type_size(d->type);
    int64_t inner = d->layout == SR_ROW_MAJOR ? d->ncols : d->nrows;
    int64_t outer = d->layout == SR_ROW_MAJOR ? d->nrows : d->ncols;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t o = 0; o < outer; o++)
        memset((char *)d->data + (size_t)o * (size_t)d->ld * esize, 0, (size_t)inner * esize);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 256)
    for (int64_t i = 0; i < A->nrows; i++)
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
            char *dst = (char *)d->data + sr_dense_offset(d, i, A->colind[k]) * esize;
            if (A->type == SR_TYPE_BOOL)
                *(uint8_t *)dst = 1;
            else
                memcpy(dst, (const char *)A->values + (size_t)k * esize, esize);
        }
}

void sr_cpu_dense_rowptr(const sr_dense *d, const sr_keep_rule *rule, int64_t *rowptr, int threads)
{
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < d->nrows; i++) {
        int64_t n = 0;
        for (int64_t j = 0; j < d->ncols; j++)
            n += dense_keeps(d, i, j, rule);
        rowptr[i + 1] = n;
    }
    sr_cpu_prefix_sum(rowptr, d->nrows);
}

void sr_cpu_dense_fill(const sr_dense *d, const sr_keep_rule *rule, struct sr_matrix_s *A, int threads)
{
    size_t vsize = sr_value_size(A->type);
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < d->nrows; i++) {
        int64_t at = A->rowptr[i];
        for (int64_t j = 0; j < d->ncols; j++) {
            if (!dense_keeps(d, i, j, rule))
                continue;
            A->colind[at] = (int32_t)j;
            if (vsize)
                memcpy((char *)A->values + (size_t)at * vsize, (const char *)d->data + sr_dense_offset(d, i, j) * vsize,
                       vsize);
            at++;
        }
    }
}
