// Core's device API (src/core/device_api.h) on CUDA: presence, streams, memory, copies.
#include "cuda_common.cuh"

extern "C" {
#include "../core/device_api.h"
}

#include <cstdio>
#include <mutex>
#include <vector>

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

// Copies between the device and pageable host memory (numpy arrays, Python buffers) go through
// pinned staging buffers that this file fills and drains with several host threads, two chunks in
// flight, so the host's memcpy overlaps the DMA. The driver's own pageable path moves about
// 6.5 GB/s on the lent H100 hosts, which made host operands the whole cost of an SDDMM on several
// GPUs. Pinned memory (cudaHostAlloc, cupy's pinned pools, registered buffers) and small copies
// go directly. The staging sets (two chunks of pinned memory each) are kept while any context
// lives, one per copy that ran at once (one per GPU of a context over several), so only the first
// large copies pay for pinning them; the last context's end unpins them (kept for the process's
// life, compute-sanitizer's leak check reported them in every suite that copies 4 MiB or more).
namespace {

constexpr size_t kStageChunk = (size_t)8 << 20, kStageMin = (size_t)4 << 20;

std::mutex staging_mutex;
std::vector<char *> staging_free; // sets of 2 * kStageChunk pinned bytes, not in use
int staging_now = 0;              // staged copies running (under staging_mutex)
int streams_alive = 0;            // the contexts' streams (under staging_mutex): the sets go with the last

// The host threads a staged copy gets: the copies running at once (one per GPU of a context
// over several) share the memory bus, so they share sr_host_copy_threads() too.
int copy_threads() {
    std::lock_guard<std::mutex> lock(staging_mutex);
    return std::max(1, sr_host_copy_threads() / std::max(1, staging_now));
}

char *take_staging() {
    {
        std::lock_guard<std::mutex> lock(staging_mutex);
        staging_now++;
        if (!staging_free.empty()) {
            char *set = staging_free.back();
            staging_free.pop_back();
            return set;
        }
    }
    void *set = nullptr;
    if (cudaHostAlloc(&set, 2 * kStageChunk, cudaHostAllocPortable) != cudaSuccess) {
        cudaGetLastError();
        std::lock_guard<std::mutex> lock(staging_mutex);
        staging_now--;
        return nullptr; // the copy goes directly
    }
    return static_cast<char *>(set);
}

void give_back_staging(char *set) {
    std::lock_guard<std::mutex> lock(staging_mutex);
    staging_free.push_back(set);
    staging_now--;
}

bool pageable(const void *p) {
    cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        cudaGetLastError();
        return false; // unknown to CUDA: let the driver's copy decide
    }
    return a.type == cudaMemoryTypeUnregistered;
}

// Whether a host<->device copy of `bytes` goes through the staging sets.
bool staged(sr_location dst_loc, const void *dst, sr_location src_loc, const void *src, size_t bytes) {
    if (bytes < kStageMin || dst_loc == src_loc)
        return false;
    return pageable(dst_loc == SR_HOST ? dst : src);
}

// The events marking the two staging buffers' turns (buffer i % 2), destroyed with the pair, after
// the copy's last synchronization.
struct turn_events {
    cudaEvent_t e[2] = {nullptr, nullptr};
    cudaError_t err;
    turn_events() {
        err = cudaEventCreateWithFlags(&e[0], cudaEventDisableTiming);
        if (err == cudaSuccess)
            err = cudaEventCreateWithFlags(&e[1], cudaEventDisableTiming);
    }
    ~turn_events() {
        for (cudaEvent_t x : e)
            if (x)
                cudaEventDestroy(x);
    }
    cudaEvent_t operator[](size_t i) const { return e[i % 2]; }
};

// bytes from pageable host memory to the device, chunk i through staging buffer i % 2: the
// host fills one while the other is on its way.
cudaError_t stage_to_device(cudaStream_t s, char *set, char *dst, const char *src, size_t bytes) {
    const turn_events sent;
    cudaError_t err = sent.err;
    const int threads = copy_threads();
    for (size_t off = 0, i = 0; off < bytes && err == cudaSuccess; off += kStageChunk, i++) {
        const size_t len = std::min(kStageChunk, bytes - off);
        char *buf = set + (i % 2) * kStageChunk;
        if (i >= 2 && (err = cudaEventSynchronize(sent[i])) != cudaSuccess)
            break;
        sr_host_copy(buf, src + off, len, threads);
        err = cudaMemcpyAsync(dst + off, buf, len, cudaMemcpyHostToDevice, s);
        if (err == cudaSuccess)
            err = cudaEventRecord(sent[i], s);
    }
    const cudaError_t done = sr_cuda::wait_stream(s); // the buffers are free again either way
    return err != cudaSuccess ? err : done;
}

// bytes from the device to pageable host memory: chunk i + 1 comes into one buffer while the
// host empties chunk i from the other.
cudaError_t stage_to_host(cudaStream_t s, char *set, char *dst, const char *src, size_t bytes) {
    const turn_events came;
    cudaError_t err = came.err;
    const int threads = copy_threads();
    const size_t chunks = (bytes + kStageChunk - 1) / kStageChunk;
    auto fetch = [&](size_t i) {
        const size_t off = i * kStageChunk;
        cudaError_t e = cudaMemcpyAsync(set + (i % 2) * kStageChunk, src + off, std::min(kStageChunk, bytes - off),
                                        cudaMemcpyDeviceToHost, s);
        return e == cudaSuccess ? cudaEventRecord(came[i], s) : e;
    };
    if (err == cudaSuccess)
        err = fetch(0);
    for (size_t i = 0; i < chunks && err == cudaSuccess; i++) {
        if (i + 1 < chunks && (err = fetch(i + 1)) != cudaSuccess) // its buffer was emptied at i - 1
            break;
        if ((err = cudaEventSynchronize(came[i])) != cudaSuccess)
            break;
        const size_t off = i * kStageChunk;
        sr_host_copy(dst + off, set + (i % 2) * kStageChunk, std::min(kStageChunk, bytes - off), threads);
    }
    const cudaError_t done = sr_cuda::wait_stream(s);
    return err != cudaSuccess ? err : done;
}

// A host<->device copy through the staging sets; false when none could be pinned (the caller
// copies directly).
bool copy_staged(cudaStream_t s, void *dst, sr_location dst_loc, const void *src, size_t bytes, cudaError_t *err) {
    char *set = take_staging();
    if (!set)
        return false;
    *err = dst_loc == SR_DEVICE
               ? stage_to_device(s, set, static_cast<char *>(dst), static_cast<const char *>(src), bytes)
               : stage_to_host(s, set, static_cast<char *>(dst), static_cast<const char *>(src), bytes);
    give_back_staging(set);
    return true;
}

} // namespace

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
    std::lock_guard<std::mutex> lock(staging_mutex);
    streams_alive++;
    return SR_SUCCESS;
}

void sr_device_stream_destroy(int device, void *stream) {
    sr_cuda::device_guard guard(device);
    cudaStreamDestroy(static_cast<cudaStream_t>(stream));
    std::lock_guard<std::mutex> lock(staging_mutex);
    if (--streams_alive == 0 && staging_now == 0) { // no context left to copy with
        for (char *set : staging_free)
            cudaFreeHost(set);
        staging_free.clear();
    }
}

sr_status sr_device_synchronize(int device, void *stream) {
    sr_cuda::device_guard guard(device);
    SR_CUDA_TRY(sr_cuda::wait_stream(static_cast<cudaStream_t>(stream)));
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
        sr_cuda::wait_stream(s);
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
    cudaError_t err = cudaSuccess;
    if (staged(dst_loc, dst, src_loc, src, bytes) && copy_staged(s, dst, dst_loc, src, bytes, &err)) {
        SR_CUDA_TRY(err);
        return SR_SUCCESS;
    }
    SR_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, copy_kind(dst_loc, src_loc), s));
    SR_CUDA_TRY(sr_cuda::wait_stream(s));
    return SR_SUCCESS;
}

sr_status sr_device_memcpy_queued(int device, void *stream, void *dst, const void *src, size_t bytes) {
    sr_cuda::device_guard guard(device);
    SR_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(stream)));
    return SR_SUCCESS;
}

sr_status sr_device_memcpy2d(int device, void *stream, void *dst, size_t dst_pitch, sr_location dst_loc,
                             const void *src, size_t src_pitch, sr_location src_loc, size_t width, size_t rows) {
    if (width == dst_pitch && width == src_pitch) // packed rows: one run of bytes
        return sr_device_memcpy(device, stream, dst, dst_loc, src, src_loc, width * rows);
    sr_cuda::device_guard guard(device);
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    SR_CUDA_TRY(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, rows, copy_kind(dst_loc, src_loc), s));
    SR_CUDA_TRY(sr_cuda::wait_stream(s));
    return SR_SUCCESS;
}

} // extern "C"
