/* Public entry points for vectors kept where the work runs (sr_vector_* in sparsering.h):
 * checks, then the host loops or the device kernels. */
#include <string.h>

#include "../core/memory.h"
#include "../core/types.h"
#include "../cpu/cpu.h"
#include "../cuda/cuda.h"
#include "ops_common.h"

static sr_status check_vector(const char *fn, const char *name, const sr_dense *v)
{
    SR_TRY(sr_ops_check_vector(fn, name, v, -1));
    SR_CHECK_ARG(v->type == SR_TYPE_FLOAT32 || v->type == SR_TYPE_FLOAT64, "%s: %s is %s, not float32 or float64",
                 fn, name, sr_type_name(v->type));
    return SR_SUCCESS;
}

/* Threads for a pass over n elements: a vectorized element is half a step of
 * sr_context_threads_for, so vectors under 32K elements stay on one thread. */
static int vector_threads(sr_context ctx, int64_t n) { return sr_context_threads_for(ctx, n / 2); }

/* x and y: vectors of one length and type; `same_place` asks for one location too. */
static sr_status check_pair(const char *fn, const sr_dense *x, const sr_dense *y, bool same_place)
{
    SR_TRY(check_vector(fn, "x", x));
    SR_TRY(check_vector(fn, "y", y));
    SR_CHECK_ARG(x->nrows == y->nrows && x->type == y->type, "%s: x is %lld %s, y is %lld %s", fn, (long long)x->nrows,
                 sr_type_name(x->type), (long long)y->nrows, sr_type_name(y->type));
    SR_CHECK_ARG(!same_place || x->location == y->location, "%s: x and y live in different places", fn);
    return SR_SUCCESS;
}

sr_status sr_vector_alloc(sr_context ctx, int64_t n, sr_type type, sr_location where, sr_dense *v)
{
    const char *fn = "sr_vector_alloc";
    SR_CHECK_ARG(ctx != NULL && v != NULL, "%s: the context or the output is NULL", fn);
    memset(v, 0, sizeof *v);
    SR_CHECK_ARG(n >= 0, "%s: negative length %lld", fn, (long long)n);
    SR_CHECK_ARG(type == SR_TYPE_FLOAT32 || type == SR_TYPE_FLOAT64, "%s: the type must be float32 or float64, not %s",
                 fn, sr_type_name(type));
    SR_CHECK_ARG(where == SR_HOST || where == SR_DEVICE, "%s: unknown location %d", fn, (int)where);
    sr_backend backend;
    SR_TRY(sr_context_get_backend(ctx, &backend));
    SR_CHECK_ARG(where == SR_HOST || backend == SR_BACKEND_CUDA, "%s: a device vector needs a CUDA context", fn);
    void *data = NULL;
    const size_t bytes = (size_t)(n > 0 ? n : 1) * sr_type_size(type);
    SR_TRY(sr_mem_alloc(ctx, where, bytes, &data));
    sr_status st = where == SR_DEVICE ? sr_cuda_zero(ctx, data, bytes) : (memset(data, 0, bytes), SR_SUCCESS);
    if (st != SR_SUCCESS) {
        sr_mem_free(ctx, where, data, bytes);
        return st;
    }
    *v = sr_vector_view(data, n, type, where);
    return SR_SUCCESS;
}

sr_status sr_vector_free(sr_context ctx, sr_dense *v)
{
    SR_CHECK_ARG(ctx != NULL && v != NULL, "sr_vector_free: the context or the vector is NULL");
    if (v->data)
        sr_mem_free(ctx, v->location, v->data, (size_t)(v->nrows > 0 ? v->nrows : 1) * sr_type_size(v->type));
    memset(v, 0, sizeof *v);
    return SR_SUCCESS;
}

sr_status sr_vector_copy(sr_context ctx, const sr_dense *dst, const sr_dense *src)
{
    const char *fn = "sr_vector_copy";
    SR_CHECK_ARG(ctx != NULL, "%s: the context is NULL", fn);
    SR_TRY(check_pair(fn, src, dst, false));
    if (dst->nrows == 0 || dst->data == src->data)
        return SR_SUCCESS;
    return sr_mem_copy_queued(ctx, dst->data, dst->location, src->data, src->location,
                              (size_t)dst->nrows * sr_type_size(dst->type));
}

sr_status sr_vector_dot(sr_context ctx, const sr_dense *x, const sr_dense *y, double *result)
{
    const char *fn = "sr_vector_dot";
    SR_CHECK_ARG(ctx != NULL && result != NULL, "%s: the context or the result is NULL", fn);
    SR_TRY(check_pair(fn, x, y, true));
    *result = 0.0;
    if (x->nrows == 0)
        return SR_SUCCESS;
    if (x->location == SR_DEVICE)
        return sr_cuda_vector_dot(ctx, x, y, result);
    *result = sr_cpu_vector_dot(x, y, vector_threads(ctx, x->nrows));
    return SR_SUCCESS;
}

sr_status sr_vector_asum(sr_context ctx, const sr_dense *x, double *result)
{
    const char *fn = "sr_vector_asum";
    SR_CHECK_ARG(ctx != NULL && result != NULL, "%s: the context or the result is NULL", fn);
    SR_TRY(check_vector(fn, "x", x));
    *result = 0.0;
    if (x->nrows == 0)
        return SR_SUCCESS;
    if (x->location == SR_DEVICE)
        return sr_cuda_vector_dot(ctx, x, NULL, result);
    *result = sr_cpu_vector_dot(x, NULL, vector_threads(ctx, x->nrows));
    return SR_SUCCESS;
}

sr_status sr_vector_axpby(sr_context ctx, double alpha, const sr_dense *x, double beta, const sr_dense *y)
{
    const char *fn = "sr_vector_axpby";
    SR_CHECK_ARG(ctx != NULL, "%s: the context is NULL", fn);
    SR_TRY(check_pair(fn, x, y, true));
    if (x->nrows == 0)
        return SR_SUCCESS;
    if (x->location == SR_DEVICE)
        return sr_cuda_vector_axpby(ctx, alpha, x, beta, y);
    sr_cpu_vector_axpby(alpha, x, beta, y, vector_threads(ctx, x->nrows));
    return SR_SUCCESS;
}

/* s: a float64 vector of length 1 where `place` is (a scalar of sr_vector_dot_s, _axpby_s). */
static sr_status check_scalar(const char *fn, const char *name, const sr_dense *s, sr_location place)
{
    SR_TRY(sr_ops_check_vector(fn, name, s, 1));
    SR_CHECK_ARG(s->type == SR_TYPE_FLOAT64, "%s: the scalar %s is %s, not float64", fn, name, sr_type_name(s->type));
    SR_CHECK_ARG(s->location == place, "%s: the scalar %s lives on the %s but the vectors on the %s", fn, name,
                 sr_ops_place(s->location), sr_ops_place(place));
    return SR_SUCCESS;
}

/* *s = Σ x_i·y_i (Σ |x_i| with y NULL) on x's side, x, y and s checked: the sum of sr_vector_dot
 * and sr_vector_asum, into a scalar. */
static sr_status sum_into(sr_context ctx, const sr_dense *x, const sr_dense *y, const sr_dense *s)
{
    if (x->location == SR_DEVICE)
        return sr_cuda_vector_dot_s(ctx, x, y, s);
    *(double *)s->data = x->nrows ? sr_cpu_vector_dot(x, y, vector_threads(ctx, x->nrows)) : 0.0;
    return SR_SUCCESS;
}

sr_status sr_vector_dot_s(sr_context ctx, const sr_dense *x, const sr_dense *y, const sr_dense *s)
{
    const char *fn = "sr_vector_dot_s";
    SR_CHECK_ARG(ctx != NULL, "%s: the context is NULL", fn);
    SR_TRY(check_pair(fn, x, y, true));
    SR_TRY(check_scalar(fn, "s", s, x->location));
    return sum_into(ctx, x, y, s);
}

sr_status sr_vector_asum_s(sr_context ctx, const sr_dense *x, const sr_dense *s)
{
    const char *fn = "sr_vector_asum_s";
    SR_CHECK_ARG(ctx != NULL, "%s: the context is NULL", fn);
    SR_TRY(check_vector(fn, "x", x));
    SR_TRY(check_scalar(fn, "s", s, x->location));
    return sum_into(ctx, x, NULL, s);
}

sr_status sr_vector_axpby_s(sr_context ctx, double alpha, const sr_dense *a, const sr_dense *x, double beta,
                            const sr_dense *b, const sr_dense *y)
{
    const char *fn = "sr_vector_axpby_s";
    SR_CHECK_ARG(ctx != NULL, "%s: the context is NULL", fn);
    SR_TRY(check_pair(fn, x, y, true));
    if (a)
        SR_TRY(check_scalar(fn, "a", a, x->location));
    if (b)
        SR_TRY(check_scalar(fn, "b", b, x->location));
    if (x->nrows == 0)
        return SR_SUCCESS;
    if (x->location == SR_DEVICE)
        return sr_cuda_vector_axpby_s(ctx, alpha, a ? a->data : NULL, x, beta, b ? b->data : NULL, y);
    const double ea = a ? alpha * *(const double *)a->data : alpha, eb = b ? beta * *(const double *)b->data : beta;
    sr_cpu_vector_axpby(ea, x, eb, y, vector_threads(ctx, x->nrows));
    return SR_SUCCESS;
}

/* v: a vector of x's length, type and location (x already checked). */
static sr_status check_like(const char *fn, const char *name, const sr_dense *v, const sr_dense *x)
{
    SR_TRY(check_vector(fn, name, v));
    SR_CHECK_ARG(v->nrows == x->nrows && v->type == x->type && v->location == x->location,
                 "%s: %s is %lld %s on the %s, x %lld %s on the %s", fn, name, (long long)v->nrows,
                 sr_type_name(v->type), sr_ops_place(v->location), (long long)x->nrows, sr_type_name(x->type),
                 sr_ops_place(x->location));
    return SR_SUCCESS;
}

sr_status sr_vector_divide(sr_context ctx, const sr_dense *z, const sr_dense *x, const sr_dense *y)
{
    const char *fn = "sr_vector_divide";
    SR_CHECK_ARG(ctx != NULL, "%s: the context is NULL", fn);
    SR_TRY(check_pair(fn, x, y, true));
    SR_TRY(check_like(fn, "z", z, x));
    if (x->nrows == 0)
        return SR_SUCCESS;
    if (x->location == SR_DEVICE)
        return sr_cuda_vector_divide(ctx, z, x, y);
    sr_cpu_vector_divide(z, x, y, vector_threads(ctx, x->nrows));
    return SR_SUCCESS;
}

sr_status sr_vector_and_greater(sr_context ctx, const sr_dense *flag, const sr_dense *x, double threshold)
{
    const char *fn = "sr_vector_and_greater";
    SR_CHECK_ARG(ctx != NULL, "%s: the context is NULL", fn);
    SR_TRY(check_vector(fn, "x", x));
    SR_TRY(check_like(fn, "flag", flag, x));
    SR_CHECK_ARG(threshold == threshold, "%s: the threshold is NaN", fn);
    if (x->nrows == 0)
        return SR_SUCCESS;
    if (x->location == SR_DEVICE)
        return sr_cuda_vector_and_greater(ctx, flag, x, threshold);
    sr_cpu_vector_and_greater(flag, x, threshold, vector_threads(ctx, x->nrows));
    return SR_SUCCESS;
}
