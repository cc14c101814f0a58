/* What the OpenCL operations share: the opened device, buffers, kernel launches, error text. */
#ifndef SR_OCL_RUNTIME_H
#define SR_OCL_RUNTIME_H

#define CL_TARGET_OPENCL_VERSION 120
#ifdef __APPLE__
#include <OpenCL/opencl.h>
#else
#include <CL/cl.h>
#endif

#include <pthread.h>

#include "../core/context.h"

/* One per device and process: the OpenCL context and the built program. */
typedef struct sr_ocl_device {
    cl_device_id id;
    cl_context context;
    cl_program program;
    char name[256];
    size_t max_alloc;  /* CL_DEVICE_MAX_MEM_ALLOC_SIZE: the largest one buffer */
    size_t group;      /* WG of the group kernels */
    bool cpu;          /* a CPU device (PoCL): host memory is its memory */
} sr_ocl_device;

/* One per sr_context: its device and its own in-order queue. */
typedef struct sr_ocl {
    sr_ocl_device *dev;
    cl_command_queue queue;
    bool profile; /* SPARSERING_PROFILE=1: each kernel's device time and each copy on stderr */
    /* Large copies go through pinned host memory, a buffer made with CL_MEM_ALLOC_HOST_PTR and kept
     * mapped (made on the first large copy; not on CPU devices): NVIDIA's OpenCL copied to and
     * from pageable memory at about 1 GB/s (R-MAT 17's 735 MB product: 0.7 s a call). */
    bool stage;
    size_t stage_bytes;
    cl_mem staging;
    void *staging_ptr;
    pthread_mutex_t stage_lock; /* calls of one context may run on several threads at once */
} sr_ocl;

/* The context's OpenCL state (an OpenCL context has one). */
sr_ocl *sr_ocl_of(const struct sr_context_s *ctx);

/* "CL_OUT_OF_RESOURCES (-5)" */
const char *sr_ocl_error_name(cl_int err);
/* SR_SUCCESS, or the error (SR_ERROR_DEVICE_OUT_OF_MEMORY for allocation failures, else
 * SR_ERROR_DEVICE) with "OpenCL: what failed: CL_..." as the message. */
sr_status sr_ocl_check(cl_int err, const char *what);

/* A read-only copy of host bytes on the device (8 bytes when there are none: OpenCL has no
 * empty buffers). */
sr_status sr_ocl_upload(sr_ocl *o, const void *host, size_t bytes, cl_mem *out);
/* A device buffer of `bytes` (at least 8), zeroed when `zero`. */
sr_status sr_ocl_alloc(sr_ocl *o, size_t bytes, bool zero, cl_mem *out);
/* Zeroes the first `bytes` of a buffer (queued; nothing for 0 bytes). */
sr_status sr_ocl_zero(sr_ocl *o, cl_mem buffer, size_t bytes);
/* Copies bytes from the start of a buffer to the host and waits for them. */
sr_status sr_ocl_download(sr_ocl *o, cl_mem buffer, void *host, size_t bytes);
void sr_ocl_release(cl_mem buffer); /* NULL is allowed */

/* A kernel argument: a value of `size` bytes (a cl_mem handle for buffers). */
typedef struct sr_ocl_arg {
    size_t size;
    const void *value;
} sr_ocl_arg;
#define SR_OCL_ARG(x) ((sr_ocl_arg){sizeof(x), &(x)})

/* Runs `kernel` over `items` work-items in groups of `group` (0: the runtime's choice), rounding
 * the items up to whole groups. */
sr_status sr_ocl_run(sr_ocl *o, const char *kernel, size_t items, size_t group, int nargs, const sr_ocl_arg *args);

#endif
