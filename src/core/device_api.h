/* What core needs from a device backend: its presence, memory and streams. The CUDA backend
 * implements these (src/cuda/device_memory.cu); without CUDA, src/cuda/no_device.c answers
 * SR_ERROR_NO_DEVICE. Core knows nothing else about backends. */
#ifndef SR_CORE_DEVICE_API_H
#define SR_CORE_DEVICE_API_H

#include "sparsering.h"

#ifdef __cplusplus
extern "C" {
#endif

/* true when this build has a device backend. */
bool sr_device_built(void);
/* SR_SUCCESS when `device` can be used; else SR_ERROR_NO_DEVICE with the reason set. */
sr_status sr_device_check(int device);
/* The GPUs this process sees (0 without CUDA or without a GPU). */
sr_status sr_device_count(int *count);
sr_status sr_device_stream_create(int device, void **stream);
void sr_device_stream_destroy(int device, void *stream);
sr_status sr_device_synchronize(int device, void *stream);
/* Stream-ordered allocation from the device's memory pool, which keeps freed memory for reuse
 * (cudaMalloc/cudaFree per call cost more than many kernels). Usable on `stream` at once. */
sr_status sr_device_malloc(int device, void *stream, size_t bytes, void **ptr);
void sr_device_free(int device, void *stream, void *ptr);
/* Free bytes on the device now (for the automatic workspace limit). */
sr_status sr_device_free_bytes(int device, size_t *free_bytes);
/* Copies bytes between any two locations and waits for it to finish. */
sr_status sr_device_memcpy(int device, void *stream, void *dst, sr_location dst_loc, const void *src,
                           sr_location src_loc, size_t bytes);
/* A device-to-device copy queued on `stream`, not waited for (later work on the stream sees it). */
sr_status sr_device_memcpy_queued(int device, void *stream, void *dst, const void *src, size_t bytes);
/* A 2-D copy: `rows` rows of `width` bytes with the given pitches. */
sr_status sr_device_memcpy2d(int device, void *stream, void *dst, size_t dst_pitch, sr_location dst_loc,
                             const void *src, size_t src_pitch, sr_location src_loc, size_t width, size_t rows);

#ifdef __cplusplus
}
#endif

#endif
