#include "../core/memory.h"
#include "../core/settings.h"
#include "algo_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double sr_algo_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

sr_location sr_algo_where(sr_matrix A)
{
    sr_matrix_info info;
    return sr_matrix_get_info(A, &info) == SR_SUCCESS ? info.location : SR_HOST;
}

int64_t sr_algo_nnz(sr_matrix A)
{
    sr_matrix_info info;
    return sr_matrix_get_info(A, &info) == SR_SUCCESS ? info.nnz : 0;
}

sr_status sr_algo_pairs(sr_context ctx, int64_t nrows, int64_t ncols, int64_t n, const int64_t *rows,
                        const int32_t *cols, sr_location where, sr_matrix *M)
{
    sr_matrix host = NULL;
    SR_TRY(sr_matrix_from_coo(ctx, &host, nrows, ncols, SR_TYPE_BOOL, n, rows, cols, NULL, SR_DUPLICATES_SUM,
                              SR_HOST));
    if (where == SR_HOST) {
        *M = host;
        return SR_SUCCESS;
    }
    sr_status st = sr_matrix_copy_to(ctx, host, where, M);
    sr_matrix_free(host);
    return st;
}

sr_status sr_algo_one_per_column(sr_context ctx, int64_t nrows, int64_t S, const int64_t *rows, int64_t row0,
                                 sr_location where, sr_matrix *M)
{
    int64_t *r = sr_malloc((size_t)(S ? S : 1) * sizeof *r);
    int32_t *c = sr_malloc((size_t)(S ? S : 1) * sizeof *c);
    sr_status st = r && c ? SR_SUCCESS : sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for %lld pairs", (long long)S);
    for (int64_t s = 0; st == SR_SUCCESS && s < S; s++) {
        r[s] = rows ? rows[s] : row0 + s;
        c[s] = (int32_t)s;
    }
    if (st == SR_SUCCESS)
        st = sr_algo_pairs(ctx, nrows, S, S, r, c, where, M);
    free(r);
    free(c);
    return st;
}

sr_status sr_algo_pattern(const char *fn, sr_context ctx, sr_matrix A, sr_matrix *pattern, sr_matrix *owned)
{
    sr_matrix_info info;
    *owned = NULL;
    SR_CHECK_ARG(ctx != NULL, "%s: the context is NULL", fn);
    SR_CHECK_ARG(A != NULL, "%s: the graph is NULL", fn);
    SR_TRY(sr_matrix_get_info(A, &info));
    SR_CHECK_ARG(info.nrows == info.ncols, "%s: the graph must be square, not %lld x %lld", fn, (long long)info.nrows,
                 (long long)info.ncols);
    if (info.type == SR_TYPE_BOOL) {
        *pattern = A;
        return SR_SUCCESS;
    }
    SR_TRY(sr_matrix_cast(ctx, A, SR_TYPE_BOOL, owned));
    *pattern = *owned;
    return SR_SUCCESS;
}

sr_status sr_algo_union_into(sr_context ctx, sr_matrix *C, sr_matrix N)
{
    sr_matrix U = NULL;
    SR_TRY(sr_ewise_add(ctx, &U, NULL, SR_OR_AND, *C, N, NULL));
    sr_matrix_free(*C);
    *C = U;
    return SR_SUCCESS;
}

sr_status sr_algo_progress(const char *fn, const sr_query_options *options, int64_t round, int64_t entries)
{
    if (options && options->progress && options->progress(round, entries, options->progress_user))
        return sr_error(SR_ERROR_CANCELLED, "%s: stopped by the progress callback after round %lld", fn,
                        (long long)round);
    return SR_SUCCESS;
}

sr_status sr_algo_deliver(sr_status st, sr_matrix result, sr_matrix *out, sr_query_stats local, double t0,
                          sr_query_stats *stats)
{
    if (st != SR_SUCCESS) {
        sr_matrix_free(result);
        return st;
    }
    local.seconds = sr_algo_now() - t0;
    if (stats)
        *stats = local;
    *out = result;
    return SR_SUCCESS;
}

double sr_algo_dot(const double *x, const double *y, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++)
        s += x[i] * y[i];
    return s;
}

void sr_algo_sum_ranges(int64_t n, int k, void (*range)(int64_t lo, int64_t hi, void *user, double *sums), void *user,
                        double *sums)
{
    double part[SR_ALGO_SUM_CHUNKS][SR_ALGO_SUM_MAX];
    const int chunks = n < SR_ALGO_SUM_CHUNKS ? (n > 0 ? (int)n : 1) : SR_ALGO_SUM_CHUNKS;
#pragma omp parallel for schedule(static) if (n >= 4 * SR_ALGO_SUM_CHUNKS)
    for (int c = 0; c < chunks; c++) {
        for (int j = 0; j < k; j++)
            part[c][j] = 0;
        range(n * c / chunks, n * (c + 1) / chunks, user, part[c]);
    }
    for (int j = 0; j < k; j++) {
        sums[j] = 0;
        for (int c = 0; c < chunks; c++)
            sums[j] += part[c][j];
    }
}

static const char *nonfinite_name(double v) { return v != v ? "NaN" : v > 0 ? "infinity" : "-infinity"; }

static double value_at(const void *values, sr_type type, int64_t k)
{
    return type == SR_TYPE_FLOAT32 ? (double)((const float *)values)[k] : ((const double *)values)[k];
}

/* A matrix's entries copied to the host, in row-major order, values in its type. */
typedef struct {
    int64_t n, *rows;
    int32_t *cols;
    void *values;
    sr_type type;
} host_entries;

static void host_entries_free(host_entries *h) { free(h->rows), free(h->cols), free(h->values); }

static sr_status host_entries_of(sr_context ctx, sr_matrix A, host_entries *h)
{
    memset(h, 0, sizeof *h);
    sr_matrix_info info;
    SR_TRY(sr_matrix_get_info(A, &info));
    h->n = info.nnz;
    h->type = info.type;
    h->rows = sr_malloc((size_t)(info.nnz + 1) * sizeof *h->rows);
    h->cols = sr_malloc((size_t)(info.nnz + 1) * sizeof *h->cols);
    h->values = sr_malloc((size_t)(info.nnz + 1) * sr_type_size(info.type));
    if (!h->rows || !h->cols || !h->values) {
        host_entries_free(h);
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for %lld entries", (long long)info.nnz);
    }
    sr_status st = sr_matrix_export_coo(ctx, A, h->rows, h->cols, h->values, SR_HOST);
    if (st != SR_SUCCESS)
        host_entries_free(h);
    return st;
}

/* The first non-finite entry of row r of X: *col = its column, or -1. */
static sr_status nonfinite_in_row(sr_context ctx, sr_matrix X, int64_t r, int64_t ncols, int64_t *col, double *value)
{
    *col = -1;
    sr_matrix R = NULL;
    SR_TRY(sr_extract(ctx, &R, X, r, 0, 1, ncols));
    host_entries row;
    sr_status st = host_entries_of(ctx, R, &row);
    sr_matrix_free(R);
    SR_TRY(st);
    for (int64_t k = 0; k < row.n && *col < 0; k++)
        if (!isfinite(value_at(row.values, row.type, k)))
            *col = row.cols[k], *value = value_at(row.values, row.type, k);
    host_entries_free(&row);
    return SR_SUCCESS;
}

sr_status sr_algo_refuse_nonfinite(const char *fn, const char *name, sr_context ctx, sr_matrix X)
{
    sr_matrix_info info;
    SR_TRY(sr_matrix_get_info(X, &info));
    if (info.type != SR_TYPE_FLOAT32 && info.type != SR_TYPE_FLOAT64)
        return SR_SUCCESS;
    sr_matrix sums_matrix = NULL;
    SR_TRY(sr_reduce_rows(ctx, &sums_matrix, SR_PLUS_TIMES, X));
    host_entries sums;
    sr_status st = host_entries_of(ctx, sums_matrix, &sums);
    sr_matrix_free(sums_matrix);
    SR_TRY(st);
    for (int64_t k = 0; st == SR_SUCCESS && k < sums.n; k++) {
        if (isfinite(value_at(sums.values, sums.type, k)))
            continue;
        int64_t col;
        double bad = 0;
        st = nonfinite_in_row(ctx, X, sums.rows[k], info.ncols, &col, &bad);
        if (st == SR_SUCCESS && col >= 0)
            st = sr_error(SR_ERROR_INVALID_ARGUMENT, "%s: %s holds %s at row %lld, column %lld; remove or impute it first",
                          fn, name, nonfinite_name(bad), (long long)sums.rows[k], (long long)col);
    }
    host_entries_free(&sums);
    return st;
}

sr_status sr_algo_refuse_nonfinite_vector(const char *fn, const char *name, const double *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return sr_error(SR_ERROR_INVALID_ARGUMENT, "%s: %s holds %s at %lld; remove or impute it first", fn, name,
                            nonfinite_name(x[i]), (long long)i);
    return SR_SUCCESS;
}

int sr_algo_look_every(sr_location where, bool every_step)
{
    const int forced = sr_setting("SPARSERING_LOOK_EVERY", 0);
    if (every_step)
        return 1;
    return forced >= 1 ? forced : where == SR_HOST ? 1 : 8;
}

sr_status sr_algo_scalars_alloc(sr_context ctx, sr_location where, int count, sr_algo_scalars *c)
{
    SR_TRY(sr_vector_alloc(ctx, count, SR_TYPE_FLOAT64, where, &c->all));
    for (int k = 0; k < count; k++)
        c->s[k] = sr_vector_view((double *)c->all.data + k, 1, SR_TYPE_FLOAT64, where);
    sr_dense host = sr_vector_view(c->seen, count, SR_TYPE_FLOAT64, SR_HOST);
    return sr_vector_copy(ctx, &c->all, &host);
}

sr_status sr_algo_scalars_look(sr_context ctx, sr_algo_scalars *c)
{
    sr_dense host = sr_vector_view(c->seen, c->all.nrows, SR_TYPE_FLOAT64, SR_HOST);
    return sr_vector_copy(ctx, &host, &c->all);
}
