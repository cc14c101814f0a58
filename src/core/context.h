/* The context: backend, device, stream, threads, workspace limit, device memory accounting. */
#ifndef SR_CORE_CONTEXT_H
#define SR_CORE_CONTEXT_H

#include <pthread.h>

#include "sparsering.h"

#ifdef __cplusplus
extern "C" {
#endif

struct sr_context_s {
    int refcount;              /* one for the caller's handle, one per live matrix */
    bool destroyed;            /* the caller's handle has been released */
    sr_backend backend;        /* resolved: CPU, CUDA or OpenCL */
    void *opencl;              /* an OpenCL context's device and queue (src/opencl) */
    bool device_usable;        /* a device was found (even for a CPU context with device data) */
    int device;
    void *stream;
    bool owns_stream;
    int threads;
    size_t workspace_limit;
    size_t host_limit;         /* sr_context_options.host_memory_limit */
    size_t device_bytes;       /* updated with __atomic builtins: matrices may be freed on any thread */
    size_t device_peak;
    /* A context over several GPUs (ndevices > 1; else 0): `device` is devices[0], where the
     * caller's matrices live; peers[g] is a one-GPU context of devices[g] with its own stream, which
     * runs that GPU's share of a call (src/ops/multi_gpu.c); the NCCL communicators are made on
     * first use (src/cuda/cuda_multi.cu) and freed by free_comms. */
    int ndevices;
    int devices[SR_MAX_DEVICES];
    struct sr_context_s *peers[SR_MAX_DEVICES];
    sr_partition partition;
    bool deterministic;        /* sr_context_options.deterministic */
    bool asynchronous;         /* sr_context_options.asynchronous */
    pthread_mutex_t spread_lock; /* one spread call at a time: they share the GPUs' streams and NCCL */
    void *comms;
    void (*free_comms)(struct sr_context_s *ctx);
    /* the cuBLAS handle of the tensor-core paths, made on first use (src/cuda/cuda_blas.cu) */
    void *blas;
    void (*free_blas)(struct sr_context_s *ctx);
    pthread_mutex_t blas_lock;
};

/* Whether a call on `ctx` (which may be NULL: it then fails its own checks) returns queued on
 * device operands: sr_context_options.asynchronous. */
static inline bool sr_context_queues(const struct sr_context_s *ctx) { return ctx != NULL && ctx->asynchronous; }

void sr_context_retain(sr_context ctx);
void sr_context_release(sr_context ctx);
/* Threads for an OpenMP region (>= 1). */
int sr_context_threads(const struct sr_context_s *ctx);
/* The threads for one step of about `work` elementary steps (entries read, products made): one
 * below SR_SERIAL_WORK, where waking a team costs more than the step, then one per
 * SR_SERIAL_WORK up to sr_context_threads (the environment's SPARSERING_SERIAL_WORK overrides). */
#define SR_SERIAL_WORK 16384
int sr_context_threads_for(const struct sr_context_s *ctx, int64_t work);
/* The workspace limit in bytes for a location, resolving 0 to the automatic choice. */
size_t sr_context_workspace(const struct sr_context_s *ctx, sr_location where);
/* SR_SUCCESS when device memory can be used through ctx (CUDA built in and a GPU present). */
sr_status sr_context_require_device(const struct sr_context_s *ctx);
/* Counts one host wait for a GPU stream (sr_device_waits); the CUDA backend's every stream wait
 * calls it (sr_cuda::wait_stream). */
void sr_count_device_wait(void);

#ifdef __cplusplus
}
#endif

#endif
