#include "memory.h"
#include "context.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../opencl/opencl.h"
#include "device_api.h"
#include "error.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define SR_HOST_WORKSPACE_DEFAULT ((size_t)1 << 30)

sr_context_options sr_context_options_default(void)
{
    sr_context_options o;
    memset(&o, 0, sizeof o);
    o.backend = SR_BACKEND_AUTO;
    return o;
}

/* SPARSERING_BACKEND=cpu|cuda|opencl|auto overrides an AUTO request. */
static sr_status backend_from_environment(sr_backend *backend)
{
    const char *env = getenv("SPARSERING_BACKEND");
    if (env == NULL || *env == '\0' || strcasecmp(env, "auto") == 0)
        return SR_SUCCESS;
    if (strcasecmp(env, "cpu") == 0)
        *backend = SR_BACKEND_CPU;
    else if (strcasecmp(env, "cuda") == 0 || strcasecmp(env, "gpu") == 0)
        *backend = SR_BACKEND_CUDA;
    else if (strcasecmp(env, "opencl") == 0)
        *backend = SR_BACKEND_OPENCL;
    else
        return sr_error(SR_ERROR_INVALID_ARGUMENT,
                        "SPARSERING_BACKEND is '%s'; expected cpu, cuda, opencl or auto", env);
    return SR_SUCCESS;
}

/* SPARSERING_DEVICES: "0,1,3" or "all" (every GPU this process sees), for contexts whose options
 * name no list. *n stays 0 when it is unset. */
static sr_status devices_from_environment(int *n, int *devices)
{
    const char *env = getenv("SPARSERING_DEVICES");
    if (env == NULL || *env == '\0')
        return SR_SUCCESS;
    if (strcasecmp(env, "all") == 0) {
        int count = 0;
        SR_TRY(sr_device_count(&count));
        for (int d = 0; d < count && d < SR_MAX_DEVICES; d++)
            devices[d] = d;
        *n = count < SR_MAX_DEVICES ? count : SR_MAX_DEVICES;
        return SR_SUCCESS;
    }
    int count = 0;
    for (const char *p = env; *p;) {
        char *end = NULL;
        long d = strtol(p, &end, 10);
        if (end == p || d < 0 || d > 1024 || count == SR_MAX_DEVICES || (*end != ',' && *end != '\0'))
            return sr_error(SR_ERROR_INVALID_ARGUMENT,
                            "SPARSERING_DEVICES is '%s'; expected CUDA ordinals separated by commas "
                            "(at most %d), or all", env, SR_MAX_DEVICES);
        devices[count++] = (int)d;
        p = *end == ',' ? end + 1 : end;
    }
    *n = count;
    return SR_SUCCESS;
}

/* SPARSERING_PARTITION=rows|balanced overrides the options' partition. */
static sr_status partition_from_environment(sr_partition *partition)
{
    const char *env = getenv("SPARSERING_PARTITION");
    if (env == NULL || *env == '\0')
        return SR_SUCCESS;
    if (strcasecmp(env, "rows") == 0)
        *partition = SR_PARTITION_ROWS;
    else if (strcasecmp(env, "balanced") == 0 || strcasecmp(env, "nnz") == 0)
        *partition = SR_PARTITION_BALANCED;
    else
        return sr_error(SR_ERROR_INVALID_ARGUMENT, "SPARSERING_PARTITION is '%s'; expected balanced or rows", env);
    return SR_SUCCESS;
}

/* An on/off setting from the environment (1|0, also true/false, on/off) overrides the options'. */
static sr_status switch_from_environment(const char *name, bool *on)
{
    const char *env = getenv(name);
    if (env == NULL || *env == '\0')
        return SR_SUCCESS;
    if (strcmp(env, "1") == 0 || strcasecmp(env, "true") == 0 || strcasecmp(env, "on") == 0)
        *on = true;
    else if (strcmp(env, "0") == 0 || strcasecmp(env, "false") == 0 || strcasecmp(env, "off") == 0)
        *on = false;
    else
        return sr_error(SR_ERROR_INVALID_ARGUMENT, "%s is '%s'; expected 1 or 0", name, env);
    return SR_SUCCESS;
}

/* The device list of a context over several GPUs: checked, then a one-GPU context for each (its
 * own stream; the first GPU's works beside this context, which keeps the caller's stream and the
 * caller's matrices). */
static sr_status open_peers(struct sr_context_s *ctx, const sr_context_options *o, int n, const int *devices)
{
    for (int g = 0; g < n; g++) {
        SR_CHECK_ARG(devices[g] >= 0, "sr_context_create: device %d of the list is %d, negative", g, devices[g]);
        for (int h = 0; h < g; h++)
            SR_CHECK_ARG(devices[h] != devices[g], "sr_context_create: device %d appears twice in the list",
                         devices[g]);
        SR_TRY(sr_device_check(devices[g])); /* its message names the device */
    }
    if (pthread_mutex_init(&ctx->spread_lock, NULL) != 0)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "sr_context_create: no mutex for the GPUs' calls");
    ctx->ndevices = n;
    for (int g = 0; g < n; g++)
        ctx->devices[g] = devices[g];
    for (int g = 0; g < n; g++) {
        sr_context_options po = sr_context_options_default();
        po.backend = SR_BACKEND_CUDA;
        po.device = devices[g];
        po.ndevices = 1; /* not SPARSERING_DEVICES's list again */
        po.devices[0] = devices[g];
        po.threads = o->threads;
        po.workspace_limit = o->workspace_limit;
        po.host_memory_limit = o->host_memory_limit;
        po.deterministic = o->deterministic;
        po.asynchronous = o->asynchronous;
        SR_TRY(sr_context_create(&ctx->peers[g], &po));
    }
    return SR_SUCCESS;
}

sr_status sr_context_create(sr_context *out, const sr_context_options *options)
{
    SR_CHECK_ARG(out != NULL, "sr_context_create: the output pointer is NULL");
    sr_context_options o = options ? *options : sr_context_options_default();
    SR_CHECK_ARG(o.backend >= SR_BACKEND_AUTO && o.backend <= SR_BACKEND_OPENCL,
                 "sr_context_create: unknown backend %d", (int)o.backend);
    SR_CHECK_ARG(o.device >= 0, "sr_context_create: device ordinal %d is negative", o.device);
    SR_CHECK_ARG(o.threads >= 0, "sr_context_create: thread count %d is negative", o.threads);
    SR_CHECK_ARG(o.ndevices >= 0 && o.ndevices <= SR_MAX_DEVICES,
                 "sr_context_create: ndevices is %d; it must be 0 to %d", o.ndevices, SR_MAX_DEVICES);
    SR_CHECK_ARG(o.partition == SR_PARTITION_BALANCED || o.partition == SR_PARTITION_ROWS,
                 "sr_context_create: unknown partition %d", (int)o.partition);
    SR_TRY(partition_from_environment(&o.partition));
    SR_TRY(switch_from_environment("SPARSERING_DETERMINISTIC", &o.deterministic));
    SR_TRY(switch_from_environment("SPARSERING_ASYNCHRONOUS", &o.asynchronous));

    sr_backend wanted = o.backend;
    if (wanted == SR_BACKEND_AUTO)
        SR_TRY(backend_from_environment(&wanted));

    /* a list of GPUs (the options', else SPARSERING_DEVICES's) starts at its first */
    int ndevices = o.ndevices, devices[SR_MAX_DEVICES];
    memcpy(devices, o.devices, sizeof devices);
    if (wanted != SR_BACKEND_CPU && wanted != SR_BACKEND_OPENCL && ndevices == 0 && sr_device_built())
        SR_TRY(devices_from_environment(&ndevices, devices));
    if (wanted != SR_BACKEND_CPU && wanted != SR_BACKEND_OPENCL && ndevices >= 1)
        o.device = devices[0];
    /* an OpenCL context's device ordinal is OpenCL's: it does not look for a CUDA device */
    bool device_usable = wanted != SR_BACKEND_OPENCL && sr_device_built() && sr_device_check(o.device) == SR_SUCCESS;
    if (wanted == SR_BACKEND_CUDA && !device_usable) {
        if (!sr_device_built())
            return sr_error(SR_ERROR_NO_DEVICE, "the CUDA backend was asked for, but this build of "
                                                "sparsering has no CUDA support (rebuild with nvcc on PATH)");
        return sr_device_check(o.device); /* its message says why */
    }
    sr_backend resolved = (wanted == SR_BACKEND_CPU || !device_usable) ? SR_BACKEND_CPU : SR_BACKEND_CUDA;
    void *opencl = NULL;
    if (wanted == SR_BACKEND_OPENCL) {
        SR_TRY(sr_opencl_open(o.device, &opencl)); /* its message says why not */
        resolved = SR_BACKEND_OPENCL;
    }

    struct sr_context_s *ctx = sr_calloc(1, sizeof *ctx);
    if (ctx == NULL) {
        sr_opencl_close(opencl);
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "sr_context_create: out of host memory");
    }
    ctx->refcount = 1;
    pthread_mutex_init(&ctx->blas_lock, NULL); /* cannot fail with default attributes on Linux */
    ctx->backend = resolved;
    ctx->opencl = opencl;
    ctx->device_usable = device_usable;
    ctx->device = o.device;
    ctx->threads = o.threads;
    ctx->workspace_limit = o.workspace_limit;
    ctx->host_limit = o.host_memory_limit;
    ctx->stream = o.stream;
    /* Only a CUDA context makes a stream: creating one initializes the device, which a CPU
     * context must not pay for. A CPU context that meets device data uses the legacy default
     * stream (NULL). */
    if (resolved == SR_BACKEND_CUDA && o.stream == NULL) {
        sr_status s = sr_device_stream_create(o.device, &ctx->stream);
        if (s != SR_SUCCESS) {
            pthread_mutex_destroy(&ctx->blas_lock);
            free(ctx);
            return s;
        }
        ctx->owns_stream = true;
    }
    ctx->partition = o.partition;
    ctx->deterministic = o.deterministic;
    ctx->asynchronous = o.asynchronous;
    if (resolved == SR_BACKEND_CUDA && ndevices > 1) {
        sr_status s = open_peers(ctx, &o, ndevices, devices);
        if (s != SR_SUCCESS) {
            sr_context_release(ctx);
            return s;
        }
    }
    *out = ctx;
    return SR_SUCCESS;
}

void sr_context_retain(sr_context ctx) { __atomic_add_fetch(&ctx->refcount, 1, __ATOMIC_RELAXED); }

void sr_context_release(sr_context ctx)
{
    if (__atomic_sub_fetch(&ctx->refcount, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    if (ctx->free_comms)
        ctx->free_comms(ctx);
    if (ctx->free_blas)
        ctx->free_blas(ctx);
    pthread_mutex_destroy(&ctx->blas_lock);
    for (int g = 0; g < ctx->ndevices; g++)
        if (ctx->peers[g])
            sr_context_destroy(ctx->peers[g]);
    if (ctx->ndevices > 1)
        pthread_mutex_destroy(&ctx->spread_lock);
    if (ctx->owns_stream)
        sr_device_stream_destroy(ctx->device, ctx->stream);
    sr_opencl_close(ctx->opencl);
    free(ctx);
}

sr_status sr_context_destroy(sr_context ctx)
{
    if (ctx == NULL)
        return SR_SUCCESS;
    SR_CHECK_ARG(!ctx->destroyed, "sr_context_destroy: the context was already destroyed");
    ctx->destroyed = true;
    sr_context_release(ctx);
    return SR_SUCCESS;
}

sr_status sr_context_get_backend(sr_context ctx, sr_backend *backend)
{
    SR_CHECK_ARG(ctx != NULL && backend != NULL, "sr_context_get_backend: NULL argument");
    *backend = ctx->backend;
    return SR_SUCCESS;
}

sr_status sr_context_get_options(sr_context ctx, sr_context_options *options)
{
    SR_CHECK_ARG(ctx != NULL && options != NULL, "sr_context_get_options: NULL argument");
    options->backend = ctx->backend;
    options->device = ctx->device;
    options->stream = ctx->stream;
    options->threads = ctx->threads;
    options->workspace_limit = ctx->workspace_limit;
    options->host_memory_limit = ctx->host_limit;
    options->ndevices = ctx->ndevices;
    memset(options->devices, 0, sizeof options->devices);
    for (int g = 0; g < ctx->ndevices; g++)
        options->devices[g] = ctx->devices[g];
    options->partition = ctx->partition;
    options->deterministic = ctx->deterministic;
    options->asynchronous = ctx->asynchronous;
    return SR_SUCCESS;
}

sr_status sr_context_set_threads(sr_context ctx, int threads)
{
    SR_CHECK_ARG(ctx != NULL, "sr_context_set_threads: the context is NULL");
    SR_CHECK_ARG(threads >= 0, "sr_context_set_threads: thread count %d is negative", threads);
    ctx->threads = threads;
    for (int g = 0; g < ctx->ndevices; g++)
        ctx->peers[g]->threads = threads;
    return SR_SUCCESS;
}

sr_status sr_context_set_host_memory_limit(sr_context ctx, size_t bytes)
{
    SR_CHECK_ARG(ctx != NULL, "sr_context_set_host_memory_limit: the context is NULL");
    ctx->host_limit = bytes;
    return SR_SUCCESS;
}

/* A switch (the bool at `field` of the context) set on the context and on its devices' peers,
 * which the calls on one device read. */
static sr_status set_switch(sr_context ctx, const char *who, size_t field, bool on)
{
    SR_CHECK_ARG(ctx != NULL, "%s: the context is NULL", who);
    *(bool *)((char *)ctx + field) = on;
    for (int g = 0; g < ctx->ndevices; g++)
        *(bool *)((char *)ctx->peers[g] + field) = on;
    return SR_SUCCESS;
}

sr_status sr_context_set_deterministic(sr_context ctx, bool deterministic)
{
    return set_switch(ctx, "sr_context_set_deterministic", offsetof(struct sr_context_s, deterministic),
                      deterministic);
}

sr_status sr_context_set_asynchronous(sr_context ctx, bool asynchronous)
{
    return set_switch(ctx, "sr_context_set_asynchronous", offsetof(struct sr_context_s, asynchronous), asynchronous);
}

sr_status sr_context_set_workspace_limit(sr_context ctx, size_t bytes)
{
    SR_CHECK_ARG(ctx != NULL, "sr_context_set_workspace_limit: the context is NULL");
    ctx->workspace_limit = bytes;
    for (int g = 0; g < ctx->ndevices; g++)
        ctx->peers[g]->workspace_limit = bytes;
    return SR_SUCCESS;
}

sr_status sr_context_synchronize(sr_context ctx)
{
    SR_CHECK_ARG(ctx != NULL, "sr_context_synchronize: the context is NULL");
    if (!ctx->device_usable)
        return SR_SUCCESS;
    for (int g = 0; g < ctx->ndevices; g++)
        SR_TRY(sr_device_synchronize(ctx->peers[g]->device, ctx->peers[g]->stream));
    return sr_device_synchronize(ctx->device, ctx->stream);
}

sr_status sr_context_device_memory(sr_context ctx, size_t *current_bytes, size_t *peak_bytes)
{
    SR_CHECK_ARG(ctx != NULL, "sr_context_device_memory: the context is NULL");
    size_t current = 0, peak = 0; /* over several GPUs: with the sums of the GPUs' own contexts */
    for (int g = -1; g < ctx->ndevices; g++) {
        const struct sr_context_s *c = g < 0 ? ctx : ctx->peers[g];
        current += __atomic_load_n(&c->device_bytes, __ATOMIC_RELAXED);
        peak += __atomic_load_n(&c->device_peak, __ATOMIC_RELAXED);
    }
    if (current_bytes)
        *current_bytes = current;
    if (peak_bytes)
        *peak_bytes = peak;
    return SR_SUCCESS;
}

sr_status sr_context_reset_peak_memory(sr_context ctx)
{
    SR_CHECK_ARG(ctx != NULL, "sr_context_reset_peak_memory: the context is NULL");
    for (int g = -1; g < ctx->ndevices; g++) {
        struct sr_context_s *c = g < 0 ? ctx : ctx->peers[g];
        __atomic_store_n(&c->device_peak, __atomic_load_n(&c->device_bytes, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
    }
    return SR_SUCCESS;
}

/* Small steps in long loops (a CFPQ round on a 200-vertex graph, 20,000 rounds) are dominated by
 * the team's wake-up: 17 us a round on one thread, 63 on two, 140 on sixteen.
 * SPARSERING_SERIAL_WORK overrides the grain (0: every step on every thread, which the C tests
 * set so that their small inputs still run the parallel loops). */
static int64_t serial_work(void)
{
    const char *env = getenv("SPARSERING_SERIAL_WORK");
    return env && *env ? strtoll(env, NULL, 10) : SR_SERIAL_WORK;
}

int sr_context_threads_for(const struct sr_context_s *ctx, int64_t work)
{
    const int most = sr_context_threads(ctx);
    const int64_t grain = serial_work();
    if (grain <= 0)
        return most;
    const int64_t fit = work / grain;
    return fit < 1 ? 1 : fit < most ? (int)fit : most;
}

int sr_context_threads(const struct sr_context_s *ctx)
{
    if (ctx->threads > 0)
        return ctx->threads;
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

size_t sr_context_workspace(const struct sr_context_s *ctx, sr_location where)
{
    if (ctx->workspace_limit != 0)
        return ctx->workspace_limit;
    if (where == SR_DEVICE) {
        size_t free_bytes = 0;
        if (sr_device_free_bytes(ctx->device, &free_bytes) == SR_SUCCESS)
            return free_bytes / 2;
    }
    return SR_HOST_WORKSPACE_DEFAULT;
}

sr_status sr_context_require_device(const struct sr_context_s *ctx)
{
    if (ctx->device_usable)
        return SR_SUCCESS;
    if (!sr_device_built())
        return sr_error(SR_ERROR_NO_DEVICE, "device memory was asked for, but this build of sparsering "
                                            "has no CUDA support");
    return sr_device_check(ctx->device);
}

static int64_t device_waits; /* __atomic builtins: calls run on any thread */

void sr_count_device_wait(void) { __atomic_fetch_add(&device_waits, 1, __ATOMIC_RELAXED); }

int64_t sr_device_waits(void) { return __atomic_load_n(&device_waits, __ATOMIC_RELAXED); }
