/* sr_spmv_plan on the CPU: A's columns renumbered by entry count (most first, ties to the smaller
 * column), so that the popular columns' x values share cache lines at the front of a renumbered
 * copy of x; a call gathers that copy (one pass over x) and runs the plain kernel on the plan's
 * columns. Each row's entries keep their order, so its sum is the plain call's, bit for bit. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "../core/memory.h"
#include "../core/error.h"
#include "../core/types.h"
#include "cpu.h"

struct cpu_spmv_plan {
    int32_t *colind;    /* nnz: each entry's column under the new numbering */
    int32_t *column_of; /* ncols: the original column of each new number */
};

static void destroy(struct cpu_spmv_plan *p)
{
    if (p) {
        free(p->colind);
        free(p->column_of);
        free(p);
    }
}

static void free_plan(struct sr_matrix_s *A)
{
    destroy(A->spmv_plan);
    A->spmv_plan = NULL;
    A->free_spmv_plan = NULL;
}

/* A's plan becomes p (NULL: none), which sr_cpu_spmm then takes from A. */
static void install(struct sr_matrix_s *A, struct cpu_spmv_plan *p)
{
    A->spmv_plan = p;
    A->free_spmv_plan = p ? free_plan : NULL;
}

/* column_of = the columns by descending entry count, ties to the smaller (a counting sort:
 * stable and linear); *hot = the entries of the first `front` of them. */
static sr_status rank_columns(const struct sr_matrix_s *A, int32_t *column_of, int64_t front, int64_t *hot)
{
    const int64_t n = A->ncols, nnz = A->rowptr[A->nrows];
    int64_t *count = sr_calloc((size_t)n, sizeof *count);
    if (!count)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for an SpMV plan's column counts");
    int64_t most = 0;
    for (int64_t k = 0; k < nnz; k++)
        count[A->colind[k]]++;
    for (int64_t j = 0; j < n; j++)
        most = count[j] > most ? count[j] : most;
    int64_t *start = sr_calloc((size_t)most + 2, sizeof *start); /* by count, descending */
    if (!start) {
        free(count);
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for an SpMV plan's column ranks");
    }
    for (int64_t j = 0; j < n; j++)
        start[most - count[j] + 1]++;
    for (int64_t c = 1; c <= most + 1; c++)
        start[c] += start[c - 1];
    *hot = 0;
    for (int64_t j = 0; j < n; j++) {
        const int64_t at = start[most - count[j]]++;
        column_of[at] = (int32_t)j;
    }
    for (int64_t r = 0; r < front && r < n; r++)
        *hot += count[column_of[r]];
    free(start);
    free(count);
    return SR_SUCCESS;
}

static void gather(const sr_dense *x, const int32_t *column_of, int64_t n, void *out, int threads)
{
    const size_t es = sr_type_size(x->type);
    const int64_t stride = x->layout == SR_ROW_MAJOR ? x->ld : 1;
    if (es == 8) {
        const uint64_t *src = x->data;
        uint64_t *dst = out;
        _Pragma("omp parallel for num_threads(threads) schedule(static)")
        for (int64_t j = 0; j < n; j++)
            dst[j] = src[(size_t)column_of[j] * (size_t)stride];
    } else {
        const uint32_t *src = x->data;
        uint32_t *dst = out;
        _Pragma("omp parallel for num_threads(threads) schedule(static)")
        for (int64_t j = 0; j < n; j++)
            dst[j] = src[(size_t)column_of[j] * (size_t)stride];
    }
}

bool sr_cpu_spmv_planned(const struct sr_matrix_s *A)
{
    return A->spmv_plan != NULL && A->free_spmv_plan == free_plan;
}

sr_status sr_cpu_spmv_plan_operands(const struct sr_matrix_s *A, const sr_dense *x, int threads,
                                    struct sr_matrix_s *A_plan, sr_dense *x_plan, void **x_memory)
{
    const struct cpu_spmv_plan *p = A->spmv_plan;
    *x_memory = sr_malloc((size_t)A->ncols * sr_type_size(x->type) + 1);
    if (!*x_memory)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for x in the SpMV plan's order (%lld values)",
                        (long long)A->ncols);
    gather(x, p->column_of, A->ncols, *x_memory, threads);
    *A_plan = *A;
    A_plan->colind = p->colind;
    *x_plan = sr_dense_view(*x_memory, A->ncols, 1, x->type, SR_COL_MAJOR, SR_HOST);
    return SR_SUCCESS;
}

/* Median seconds of one plus_times SpMV on A (with or without the plan installed). */
static sr_status time_spmv(const struct sr_matrix_s *A, const sr_dense *x, const sr_dense *y, double *seconds)
{
    enum { REPS = 7 };
    double t[REPS];
    SR_TRY(sr_cpu_spmm(A, x, y, NULL, SR_PLUS_TIMES, false, false));
    for (int r = 0; r < REPS; r++) {
        const double t0 = omp_get_wtime();
        SR_TRY(sr_cpu_spmm(A, x, y, NULL, SR_PLUS_TIMES, false, false));
        t[r] = omp_get_wtime() - t0;
    }
    for (int i = 1; i < REPS; i++) /* insertion sort: seven values */
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
            const double s = t[j];
            t[j] = t[j - 1];
            t[j - 1] = s;
        }
    *seconds = t[REPS / 2];
    return SR_SUCCESS;
}

static sr_status analyse(struct sr_matrix_s *A, struct cpu_spmv_plan *p, sr_spmv_plan_info *info)
{
    const int64_t n = A->ncols, nnz = A->rowptr[A->nrows];
    const size_t es = sr_type_size(A->type);
    const int threads = sr_context_threads_for(A->ctx, nnz);
    p->column_of = sr_malloc((size_t)n * sizeof(int32_t) + 1);
    p->colind = sr_malloc((size_t)nnz * sizeof(int32_t) + 1);
    int32_t *new_of = sr_malloc((size_t)n * sizeof(int32_t) + 1);
    void *x = sr_calloc((size_t)n + 1, es), *y = sr_calloc((size_t)A->nrows + 1, es);
    sr_status st = SR_SUCCESS;
    if (!p->column_of || !p->colind || !new_of || !x || !y) {
        st = sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for an SpMV plan of %lld entries", (long long)nnz);
        goto done;
    }
    const int64_t front = (int64_t)((size_t)1 << 20) / (int64_t)es; /* the values that fit 1 MiB of cache */
    int64_t hot = 0;
    if ((st = rank_columns(A, p->column_of, front, &hot)) != SR_SUCCESS)
        goto done;
    for (int64_t r = 0; r < n; r++)
        new_of[p->column_of[r]] = (int32_t)r;
    const int32_t *colind = A->colind;
    int32_t *renumbered = p->colind;
    _Pragma("omp parallel for num_threads(threads) schedule(static)")
    for (int64_t k = 0; k < nnz; k++)
        renumbered[k] = new_of[colind[k]];

    const sr_dense xv = sr_dense_view(x, n, 1, A->type, SR_COL_MAJOR, SR_HOST);
    const sr_dense yv = sr_dense_view(y, A->nrows, 1, A->type, SR_COL_MAJOR, SR_HOST);
    if ((st = time_spmv(A, &xv, &yv, &info->plain_seconds)) != SR_SUCCESS)
        goto done;
    install(A, p); /* for the trial */
    st = time_spmv(A, &xv, &yv, &info->planned_seconds);
    install(A, NULL);
    info->hot_columns = front < n ? front : n;
    info->hot_share = nnz > 0 ? (double)hot / (double)nnz : 0.0;
    info->bytes = (size_t)(n + nnz) * sizeof(int32_t);
done:
    free(new_of);
    free(x);
    free(y);
    return st;
}

sr_status sr_cpu_spmv_plan(struct sr_matrix_s *A, sr_spmv_plan_info *info)
{
    const double t0 = omp_get_wtime();
    if (A->free_spmv_plan)
        A->free_spmv_plan(A);
    memset(info, 0, sizeof *info);
    if (A->type == SR_TYPE_BOOL || A->rowptr[A->nrows] == 0) { /* a Boolean A reads no x */
        info->seconds = omp_get_wtime() - t0;
        return SR_SUCCESS;
    }
    struct cpu_spmv_plan *p = sr_calloc(1, sizeof *p);
    if (!p)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for an SpMV plan");
    sr_status st = analyse(A, p, info);
    /* kept only where it beats the plain call by 10%, more than a busy host's timing noise (the
     * renumbered x costs a pass over x a call); always with SPARSERING_SPMV_PLAN set (tests run
     * the planned kernel with it whatever the timing says) */
    const char *forced = getenv("SPARSERING_SPMV_PLAN");
    if (st == SR_SUCCESS && ((forced && *forced) || info->planned_seconds <= 0.9 * info->plain_seconds)) {
        install(A, p);
        info->in_use = true;
    } else {
        destroy(p);
        info->hot_columns = 0;
        info->hot_share = 0;
        info->bytes = 0;
    }
    info->seconds = omp_get_wtime() - t0;
    return st;
}
