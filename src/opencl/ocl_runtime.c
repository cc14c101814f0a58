/* The OpenCL runtime of the backend: device discovery, the program built once per device and
 * process, buffers, launches and error text. */
#include "../core/memory.h"
#include "ocl_runtime.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/error.h"
#include "opencl.h"

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

extern const char sr_ocl_bool_source[]; /* kernels/bool.cl, embedded by CMake */

bool sr_opencl_built(void) { return true; }

sr_ocl *sr_ocl_of(const struct sr_context_s *ctx) { return (sr_ocl *)ctx->opencl; }

const char *sr_ocl_error_name(cl_int err)
{
    static _Thread_local char text[48];
    const char *name = "unknown OpenCL error";
    switch (err) {
#define SR_CL_NAME(code) \
    case code: name = #code; break;
        SR_CL_NAME(CL_DEVICE_NOT_FOUND)
        SR_CL_NAME(CL_DEVICE_NOT_AVAILABLE)
        SR_CL_NAME(CL_COMPILER_NOT_AVAILABLE)
        SR_CL_NAME(CL_MEM_OBJECT_ALLOCATION_FAILURE)
        SR_CL_NAME(CL_OUT_OF_RESOURCES)
        SR_CL_NAME(CL_OUT_OF_HOST_MEMORY)
        SR_CL_NAME(CL_BUILD_PROGRAM_FAILURE)
        SR_CL_NAME(CL_INVALID_VALUE)
        SR_CL_NAME(CL_INVALID_DEVICE)
        SR_CL_NAME(CL_INVALID_CONTEXT)
        SR_CL_NAME(CL_INVALID_COMMAND_QUEUE)
        SR_CL_NAME(CL_INVALID_MEM_OBJECT)
        SR_CL_NAME(CL_INVALID_BUFFER_SIZE)
        SR_CL_NAME(CL_INVALID_PROGRAM)
        SR_CL_NAME(CL_INVALID_PROGRAM_EXECUTABLE)
        SR_CL_NAME(CL_INVALID_KERNEL_NAME)
        SR_CL_NAME(CL_INVALID_KERNEL)
        SR_CL_NAME(CL_INVALID_ARG_INDEX)
        SR_CL_NAME(CL_INVALID_ARG_VALUE)
        SR_CL_NAME(CL_INVALID_ARG_SIZE)
        SR_CL_NAME(CL_INVALID_KERNEL_ARGS)
        SR_CL_NAME(CL_INVALID_WORK_GROUP_SIZE)
        SR_CL_NAME(CL_INVALID_WORK_ITEM_SIZE)
        SR_CL_NAME(CL_INVALID_GLOBAL_WORK_SIZE)
        SR_CL_NAME(CL_INVALID_OPERATION)
#undef SR_CL_NAME
    case -1001: /* CL_PLATFORM_NOT_FOUND_KHR: the ICD loader found no platform */
        name = "CL_PLATFORM_NOT_FOUND_KHR";
        break;
    default:
        break;
    }
    snprintf(text, sizeof text, "%s (%d)", name, (int)err);
    return text;
}

sr_status sr_ocl_check(cl_int err, const char *what)
{
    if (err == CL_SUCCESS)
        return SR_SUCCESS;
    sr_status s = err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES ? SR_ERROR_DEVICE_OUT_OF_MEMORY
                                                                                         : SR_ERROR_DEVICE;
    return sr_error(s, "OpenCL: %s failed: %s", what, sr_ocl_error_name(err));
}

/* ------------------------------------------------------------------ devices */

/* Every device of every platform, GPUs and accelerators first: *n of them (at most cap). */
static cl_int list_devices(cl_device_id *out, int cap, int *n)
{
    cl_platform_id platforms[16];
    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(16, platforms, &np);
    *n = 0;
    if (err != CL_SUCCESS)
        return err;
    if (np > 16)
        np = 16;
    for (int pass = 0; pass < 2; pass++) { /* pass 0: GPUs and accelerators; pass 1: the others */
        cl_device_type type = pass == 0 ? (CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR)
                                        : (CL_DEVICE_TYPE_ALL & ~(CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR));
        for (cl_uint p = 0; p < np && *n < cap; p++) {
            cl_uint nd = 0;
            if (clGetDeviceIDs(platforms[p], type, (cl_uint)(cap - *n), out + *n, &nd) == CL_SUCCESS)
                *n += (int)(nd < (cl_uint)(cap - *n) ? nd : (cl_uint)(cap - *n));
        }
    }
    return CL_SUCCESS;
}

static pthread_mutex_t devices_lock = PTHREAD_MUTEX_INITIALIZER;
static sr_ocl_device *devices[64]; /* built programs, by device: kept for the process */

/* A power of two from the environment (for tuning runs), else `fallback`. */
static long power_of_two_from(const char *name, long fallback, long lo, long hi)
{
    const char *env = getenv(name);
    const long v = env ? strtol(env, NULL, 10) : 0;
    return v >= lo && v <= hi && (v & (v - 1)) == 0 ? v : fallback;
}

/* WG (a power of two, at most 256) and the local bitmap of the product kernel, from the device;
 * SPARSERING_OPENCL_WG and SPARSERING_OPENCL_BITMAP_WORDS override them (tuning runs). */
static void group_sizes(cl_device_id id, size_t *group, int *bitmap_words)
{
    size_t max_group = 256;
    cl_ulong local = 32768;
    clGetDeviceInfo(id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof max_group, &max_group, NULL);
    clGetDeviceInfo(id, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local, &local, NULL);
    size_t g = (size_t)power_of_two_from("SPARSERING_OPENCL_WG", 256, 32, 1024);
    while (g > max_group && g > 1)
        g /= 2;
    *group = g;
    /* the rest of the kernel's local memory is 32 bytes a work-item; leave 1 KiB spare */
    cl_ulong room = local > 32 * g + 1024 ? local - 32 * g - 1024 : 0;
    int words = 8192; /* 256K columns a tile at most: enough for most graphs in one tile */
    while (words > 32 && (cl_ulong)words * 4 > room)
        words /= 2;
    *bitmap_words = (int)power_of_two_from("SPARSERING_OPENCL_BITMAP_WORDS", words, 32, words);
}

static sr_status build_program(sr_ocl_device *d)
{
    int bitmap_words;
    group_sizes(d->id, &d->group, &bitmap_words);
    cl_int err;
    const char *src = sr_ocl_bool_source;
    d->program = clCreateProgramWithSource(d->context, 1, &src, NULL, &err);
    SR_TRY(sr_ocl_check(err, "clCreateProgramWithSource"));
    const long small = power_of_two_from("SPARSERING_OPENCL_SMALL_LIMIT", (long)(2 * d->group), 32, (long)(2 * d->group));
    /* SPARSERING_OPENCL_OPTIONS: compiler options added after the library's (e.g. -cl-mad-enable) */
    const char *extra = getenv("SPARSERING_OPENCL_OPTIONS");
    char options[512];
    snprintf(options, sizeof options, "-cl-std=CL1.2 -DWG=%zu -DBITMAP_WORDS=%d -DSMALL_LIMIT=%ld %s", d->group,
             bitmap_words, small, extra ? extra : "");
    if (getenv("SPARSERING_PROFILE"))
        fprintf(stderr, "  [opencl] building for %s: %s\n", d->name, options);
    err = clBuildProgram(d->program, 1, &d->id, options, NULL, NULL);
    if (err == CL_SUCCESS)
        return SR_SUCCESS;
    char log[700] = "";
    clGetProgramBuildInfo(d->program, d->id, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
    log[sizeof log - 1] = '\0';
    return sr_error(SR_ERROR_DEVICE, "OpenCL: the kernels did not build for %s (%s): %s", d->name,
                    sr_ocl_error_name(err), log[0] ? log : "no build log");
}

static void device_free(sr_ocl_device *d)
{
    if (d->program)
        clReleaseProgram(d->program);
    if (d->context)
        clReleaseContext(d->context);
    free(d);
}

/* The device's built program, made on first use (under devices_lock). */
static sr_status device_get(cl_device_id id, sr_ocl_device **out)
{
    int free_slot = -1;
    for (int i = 0; i < 64; i++) {
        if (devices[i] && devices[i]->id == id) {
            *out = devices[i];
            return SR_SUCCESS;
        }
        if (!devices[i] && free_slot < 0)
            free_slot = i;
    }
    if (free_slot < 0)
        return sr_error(SR_ERROR_UNSUPPORTED, "OpenCL: more than 64 devices opened in one process");
    sr_ocl_device *d = sr_calloc(1, sizeof *d);
    if (!d)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for an OpenCL device");
    d->id = id;
    char device[160] = "", version[80] = "";
    clGetDeviceInfo(id, CL_DEVICE_NAME, sizeof device - 1, device, NULL);
    clGetDeviceInfo(id, CL_DEVICE_VERSION, sizeof version - 1, version, NULL);
    snprintf(d->name, sizeof d->name, "%s (%s)", device, version);
    cl_ulong max_alloc = 0;
    clGetDeviceInfo(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, NULL);
    cl_device_type type = 0;
    clGetDeviceInfo(id, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    d->cpu = (type & CL_DEVICE_TYPE_CPU) != 0;
    d->max_alloc = max_alloc > 0 ? (size_t)max_alloc : (size_t)128 << 20;
    cl_int err;
    d->context = clCreateContext(NULL, 1, &id, NULL, NULL, &err);
    sr_status s = sr_ocl_check(err, "clCreateContext");
    if (s == SR_SUCCESS)
        s = build_program(d);
    if (s != SR_SUCCESS) {
        device_free(d);
        return s;
    }
    devices[free_slot] = d;
    *out = d;
    return SR_SUCCESS;
}

sr_status sr_opencl_open(int device, void **state)
{
    cl_device_id ids[64];
    int n = 0;
    cl_int err = list_devices(ids, 64, &n);
    if (err != CL_SUCCESS || n == 0)
        return sr_error(SR_ERROR_NO_DEVICE, "the OpenCL backend was asked for, but no OpenCL device was found%s%s "
                        "(an ICD such as PoCL or a GPU vendor's must be installed: /etc/OpenCL/vendors)",
                        err != CL_SUCCESS ? ": clGetPlatformIDs: " : "",
                        err != CL_SUCCESS ? sr_ocl_error_name(err) : "");
    if (device >= n)
        return sr_error(SR_ERROR_NO_DEVICE, "OpenCL device %d was asked for, but there are %d (0 to %d)", device, n,
                        n - 1);
    sr_ocl *o = sr_calloc(1, sizeof *o);
    if (!o)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for an OpenCL context");
    pthread_mutex_init(&o->stage_lock, NULL);
    pthread_mutex_lock(&devices_lock);
    sr_status s = device_get(ids[device], &o->dev);
    pthread_mutex_unlock(&devices_lock);
    if (s == SR_SUCCESS) {
        const char *profile = getenv("SPARSERING_PROFILE"), *stage = getenv("SPARSERING_OPENCL_STAGING");
        o->profile = profile && *profile && strcmp(profile, "0") != 0;
        /* SPARSERING_OPENCL_STAGING=0|1 and _STAGING_BYTES: for tests and tuning runs */
        o->stage = stage && *stage ? strcmp(stage, "0") != 0 : !o->dev->cpu;
        o->stage_bytes = (size_t)power_of_two_from("SPARSERING_OPENCL_STAGING_BYTES", 64L << 20, 4096, 1L << 30);
        o->queue = clCreateCommandQueue(o->dev->context, o->dev->id, o->profile ? CL_QUEUE_PROFILING_ENABLE : 0, &err);
        s = sr_ocl_check(err, "clCreateCommandQueue");
        if (s != SR_SUCCESS) {
            sr_opencl_close(o);
            return s;
        }
        *state = o;
        return SR_SUCCESS;
    }
    pthread_mutex_destroy(&o->stage_lock);
    free(o);
    return s;
}

void sr_opencl_close(void *state)
{
    sr_ocl *o = state;
    if (!o)
        return;
    if (o->queue) {
        if (o->staging_ptr)
            clEnqueueUnmapMemObject(o->queue, o->staging, o->staging_ptr, 0, NULL, NULL);
        clFinish(o->queue);
        clReleaseCommandQueue(o->queue);
    }
    if (o->staging)
        clReleaseMemObject(o->staging);
    pthread_mutex_destroy(&o->stage_lock);
    free(o); /* the device's program stays for the next context on it: building it costs far more */
}


/* ------------------------------------------------------------------ buffers and launches */

static sr_status check_size(sr_ocl *o, size_t bytes)
{
    if (bytes > o->dev->max_alloc)
        return sr_error(SR_ERROR_DEVICE_OUT_OF_MEMORY,
                        "OpenCL: a buffer of %zu bytes is larger than %s allows in one buffer (%zu bytes)", bytes,
                        o->dev->name, o->dev->max_alloc);
    return SR_SUCCESS;
}

/* Copies of more than this (or than the staging buffer) take the staging buffer. */
#define SR_OCL_STAGE_MIN ((size_t)1 << 20)
static bool staged_size(const sr_ocl *o, size_t bytes)
{
    return o->stage && (bytes > SR_OCL_STAGE_MIN || bytes > o->stage_bytes);
}

/* The pinned staging buffer, made and mapped on first use. */
static sr_status staging(sr_ocl *o)
{
    if (o->staging_ptr)
        return SR_SUCCESS;
    cl_int err;
    o->staging = clCreateBuffer(o->dev->context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, o->stage_bytes, NULL, &err);
    SR_TRY(sr_ocl_check(err, "clCreateBuffer (pinned staging)"));
    o->staging_ptr = clEnqueueMapBuffer(o->queue, o->staging, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, o->stage_bytes,
                                        0, NULL, NULL, &err);
    if (err != CL_SUCCESS) {
        clReleaseMemObject(o->staging);
        o->staging = NULL;
        o->staging_ptr = NULL;
    }
    return sr_ocl_check(err, "clEnqueueMapBuffer (pinned staging)");
}

/* memcpy in 1 MiB pieces over the threads: one thread copies at a fraction of the bus's rate. */
static void copy_parallel(void *dst, const void *src, size_t n)
{
    const size_t piece = (size_t)1 << 20;
    const int64_t pieces = (int64_t)((n + piece - 1) / piece);
#pragma omp parallel for schedule(static) if (pieces > 4)
    for (int64_t p = 0; p < pieces; p++) {
        const size_t off = (size_t)p * piece, len = n - off < piece ? n - off : piece;
        memcpy((char *)dst + off, (const char *)src + off, len);
    }
}

/* Host bytes into a device buffer (dir 0) or out of it (dir 1), through the staging buffer a
 * piece at a time. */
static sr_status staged_pieces(sr_ocl *o, cl_mem buffer, void *host, size_t bytes, int dir)
{
    SR_TRY(staging(o));
    for (size_t off = 0; off < bytes; off += o->stage_bytes) {
        const size_t n = bytes - off < o->stage_bytes ? bytes - off : o->stage_bytes;
        cl_int err;
        if (dir == 0) {
            copy_parallel(o->staging_ptr, (const char *)host + off, n);
            err = clEnqueueWriteBuffer(o->queue, buffer, CL_TRUE, off, n, o->staging_ptr, 0, NULL, NULL);
        } else {
            err = clEnqueueReadBuffer(o->queue, buffer, CL_TRUE, off, n, o->staging_ptr, 0, NULL, NULL);
            if (err == CL_SUCCESS)
                copy_parallel((char *)host + off, o->staging_ptr, n);
        }
        SR_TRY(sr_ocl_check(err, dir == 0 ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer"));
    }
    return SR_SUCCESS;
}

static sr_status staged_copy(sr_ocl *o, cl_mem buffer, void *host, size_t bytes, int dir)
{
    pthread_mutex_lock(&o->stage_lock);
    const sr_status s = staged_pieces(o, buffer, host, bytes, dir);
    pthread_mutex_unlock(&o->stage_lock);
    return s;
}

sr_status sr_ocl_upload(sr_ocl *o, const void *host, size_t bytes, cl_mem *out)
{
    static const int64_t nothing = 0;
    if (bytes == 0 || host == NULL) {
        host = &nothing;
        bytes = sizeof nothing;
    }
    SR_TRY(check_size(o, bytes));
    cl_int err;
    const double t0 = o->profile ? seconds() : 0;
    const bool staged = staged_size(o, bytes);
    *out = clCreateBuffer(o->dev->context, CL_MEM_READ_ONLY | (staged ? 0 : CL_MEM_COPY_HOST_PTR), bytes,
                          staged ? NULL : (void *)host, &err);
    sr_status s = sr_ocl_check(err, "clCreateBuffer (an operand)");
    if (s == SR_SUCCESS && staged && (s = staged_copy(o, *out, (void *)host, bytes, 0)) != SR_SUCCESS) {
        clReleaseMemObject(*out);
        *out = NULL;
    }
    if (o->profile)
        fprintf(stderr, "  [opencl] upload %12zu bytes %8.3f ms%s\n", bytes, 1e3 * (seconds() - t0),
                staged ? " (staged)" : "");
    return s;
}

sr_status sr_ocl_alloc(sr_ocl *o, size_t bytes, bool zero, cl_mem *out)
{
    if (bytes < 8)
        bytes = 8;
    SR_TRY(check_size(o, bytes));
    cl_int err;
    *out = clCreateBuffer(o->dev->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    SR_TRY(sr_ocl_check(err, "clCreateBuffer (a result)"));
    const sr_status s = zero ? sr_ocl_zero(o, *out, bytes) : SR_SUCCESS;
    if (s != SR_SUCCESS) {
        clReleaseMemObject(*out);
        *out = NULL;
    }
    return s;
}

sr_status sr_ocl_zero(sr_ocl *o, cl_mem buffer, size_t bytes)
{
    const cl_uchar z = 0;
    return bytes == 0 ? SR_SUCCESS
                      : sr_ocl_check(clEnqueueFillBuffer(o->queue, buffer, &z, 1, 0, bytes, 0, NULL, NULL),
                                     "clEnqueueFillBuffer");
}

sr_status sr_ocl_download(sr_ocl *o, cl_mem buffer, void *host, size_t bytes)
{
    if (bytes == 0)
        return SR_SUCCESS;
    const double t0 = o->profile ? seconds() : 0;
    const bool staged = staged_size(o, bytes);
    const sr_status s = staged ? staged_copy(o, buffer, host, bytes, 1)
                               : sr_ocl_check(clEnqueueReadBuffer(o->queue, buffer, CL_TRUE, 0, bytes, host, 0, NULL,
                                                                  NULL), "clEnqueueReadBuffer");
    if (o->profile)
        fprintf(stderr, "  [opencl] download %10zu bytes %8.3f ms (with the work queued before it)%s\n", bytes,
                1e3 * (seconds() - t0), staged ? " (staged)" : "");
    return s;
}

void sr_ocl_release(cl_mem buffer)
{
    if (buffer)
        clReleaseMemObject(buffer);
}

sr_status sr_ocl_run(sr_ocl *o, const char *name, size_t items, size_t group, int nargs, const sr_ocl_arg *args)
{
    if (items == 0)
        return SR_SUCCESS;
    cl_int err;
    /* a kernel object per launch: setting arguments is not thread-safe, and contexts (and the
     * calls of one context) may run on several threads */
    cl_kernel k = clCreateKernel(o->dev->program, name, &err);
    SR_TRY(sr_ocl_check(err, "clCreateKernel"));
    for (int i = 0; i < nargs && err == CL_SUCCESS; i++)
        err = clSetKernelArg(k, (cl_uint)i, args[i].size, args[i].value);
    sr_status s = sr_ocl_check(err, "clSetKernelArg");
    if (s == SR_SUCCESS) {
        size_t global = group ? (items + group - 1) / group * group : items;
        char what[96];
        snprintf(what, sizeof what, "the kernel %s", name);
        cl_event done = NULL;
        s = sr_ocl_check(clEnqueueNDRangeKernel(o->queue, k, 1, NULL, &global, group ? &group : NULL, 0, NULL,
                                                o->profile ? &done : NULL),
                         what);
        if (s == SR_SUCCESS && done) { /* profiling: wait for it and print its device time */
            cl_ulong start = 0, end = 0;
            clWaitForEvents(1, &done);
            clGetEventProfilingInfo(done, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL);
            clGetEventProfilingInfo(done, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL);
            fprintf(stderr, "  [opencl] %-18s %8.3f ms (%zu items)\n", name, 1e-6 * (double)(end - start), global);
        }
        if (done)
            clReleaseEvent(done);
    }
    clReleaseKernel(k);
    return s;
}
