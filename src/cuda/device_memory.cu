// Core's device API (src/core/device_api.h) on CUDA: presence, streams, memory, copies.
#include "cuda_common.cuh"

extern "C" {
#include "../core/device_api.h"
}

#include <cstdio>

sr_status sr_cuda_fail(cudaError_t err, const char *what, const char *file, int line) {
    if (err == cudaErrorMemoryAllocation)
        return sr_error(SR_ERROR_DEVICE_OUT_OF_MEMORY, "device out of memory in %s (%s:%d)", what, file, line);
    return sr_error(SR_ERROR_DEVICE, "CUDA error %s (%s) in %s (%s:%d)", cudaGetErrorName(err),
                    cudaGetErrorString(err), what, file, line);
}

static cudaMemcpyKind copy_kind(sr_location dst, sr_location src) {
    if (dst == SR_DEVICE)
        return src == SR_DEVICE ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice;
    return src == SR_DEVICE ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost;
}

extern "C" {

bool sr_device_built(void) { return true; }

sr_status sr_device_check(int device) {
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
        cudaGetLastError(); // clear the sticky-free error state
        return sr_error(SR_ERROR_NO_DEVICE, "no usable CUDA device: %s (%s)", cudaGetErrorName(err),
                        cudaGetErrorString(err));
    }
    if (device >= count)
        return sr_error(SR_ERROR_NO_DEVICE, "CUDA device %d was asked for, but %d device%s present", device, count,
                        count == 1 ? " is" : "s are");
    return SR_SUCCESS;
}

sr_status sr_device_count(int *count) {
    *count = 0;
    if (cudaGetDeviceCount(count) != cudaSuccess) {
        cudaGetLastError();
        *count = 0;
    }
    return SR_SUCCESS;
}

sr_status sr_device_stream_create(int device, void **stream) {
    sr_cuda::device_guard guard(device);
    cudaStream_t s;
    /* A blocking stream: it waits for work on the legacy default stream (where cupy, torch's
     * default and plain cudaMemcpy put theirs), so caller arrays filled there are complete
     * before our kernels read them. */
    SR_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamDefault));
    *stream = s;
    return SR_SUCCESS;
}

void sr_device_stream_destroy(int device, void *stream) {
    sr_cuda::device_guard guard(device);
    cudaStreamDestroy(static_cast<cudaStream_t>(stream));
}

sr_status sr_device_synchronize(int device, void *stream) {
    sr_cuda::device_guard guard(device);
    SR_CUDA_TRY(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
    return SR_SUCCESS;
}

// Once per device: let the default pool keep freed memory instead of returning it at each sync.
static void retain_pool_memory(int device) {
    static bool configured[64];
    if (device < 0 || device >= 64 || __atomic_load_n(&configured[device], __ATOMIC_ACQUIRE))
        return;
    cudaMemPool_t pool;
    if (cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess) {
        uint64_t keep = UINT64_MAX;
        cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
    }
    cudaGetLastError();
    __atomic_store_n(&configured[device], true, __ATOMIC_RELEASE);
}

sr_status sr_device_malloc(int device, void *stream, size_t bytes, void **ptr) {
    sr_cuda::device_guard guard(device);
    retain_pool_memory(device);
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    cudaError_t err = cudaMallocAsync(ptr, bytes, s);
    if (err == cudaErrorMemoryAllocation) { // give the pool's cached memory back and try once more
        cudaGetLastError();
        cudaMemPool_t pool;
        cudaStreamSynchronize(s);
        if (cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess)
            cudaMemPoolTrimTo(pool, 0);
        err = cudaMallocAsync(ptr, bytes, s);
    }
    if (err != cudaSuccess) {
        cudaGetLastError();
        *ptr = nullptr;
        if (err == cudaErrorMemoryAllocation) {
            size_t free_bytes = 0, total = 0;
            cudaMemGetInfo(&free_bytes, &total);
            return sr_error(SR_ERROR_DEVICE_OUT_OF_MEMORY,
                            "device %d is out of memory: %zu bytes asked for, %zu of %zu free", device, bytes,
                            free_bytes, total);
        }
        return sr_cuda_fail(err, "cudaMallocAsync", __FILE__, __LINE__);
    }
    return SR_SUCCESS;
}

void sr_device_free(int device, void *stream, void *ptr) {
    sr_cuda::device_guard guard(device);
    cudaFreeAsync(ptr, static_cast<cudaStream_t>(stream));
}

sr_status sr_device_free_bytes(int device, size_t *free_bytes) {
    sr_cuda::device_guard guard(device);
    size_t total = 0;
    SR_CUDA_TRY(cudaMemGetInfo(free_bytes, &total));
    cudaMemPool_t pool; // memory our pool holds but does not use is free to us
    uint64_t reserved = 0, used = 0;
    if (cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess &&
        cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved) == cudaSuccess &&
        cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used) == cudaSuccess && reserved > used)
        *free_bytes += (size_t)(reserved - used);
    cudaGetLastError();
    return SR_SUCCESS;
}

sr_status sr_device_memcpy(int device, void *stream, void *dst, sr_location dst_loc, const void *src,
                           sr_location src_loc, size_t bytes) {
    sr_cuda::device_guard guard(device);
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    SR_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, copy_kind(dst_loc, src_loc), s));
    SR_CUDA_TRY(cudaStreamSynchronize(s));
    return SR_SUCCESS;
}

sr_status sr_device_memcpy2d(int device, void *stream, void *dst, size_t dst_pitch, sr_location dst_loc,
                             const void *src, size_t src_pitch, sr_location src_loc, size_t width, size_t rows) {
    sr_cuda::device_guard guard(device);
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    SR_CUDA_TRY(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, rows, copy_kind(dst_loc, src_loc), s));
    SR_CUDA_TRY(cudaStreamSynchronize(s));
    return SR_SUCCESS;
}

} // extern "C"
