// Shared helpers for the CUDA backend: error mapping, device guard, owned device buffers.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda_device_base.cuh"

extern "C" {
#include "../core/context.h"
#include "../core/error.h"
#include "../core/matrix.h"
#include "../core/memory.h"
#include "../core/settings.h"
}

// Maps a CUDA error to a status with a message naming the call.
sr_status sr_cuda_fail(cudaError_t err, const char *what, const char *file, int line);

#define SR_CUDA_TRY(call)                                               \
    do {                                                                \
        cudaError_t sr_cuda_err_ = (call);                              \
        if (sr_cuda_err_ != cudaSuccess)                                \
            return sr_cuda_fail(sr_cuda_err_, #call, __FILE__, __LINE__); \
    } while (0)

// After a kernel launch: launch-configuration errors surface here.
#define SR_CUDA_LAUNCHED() SR_CUDA_TRY(cudaGetLastError())

namespace sr_cuda {

inline cudaStream_t stream_of(const sr_context_s *ctx) { return static_cast<cudaStream_t>(ctx->stream); }

inline csr_ref csr_ref_of(const sr_matrix_s *M) { return {M->rowptr, M->colind, M->values, M->nrows, M->ncols}; }

// The host waits for a stream: every such wait of the backend goes through here, counted
// (sr_device_waits), so that a test can hold an iterative loop to the waits it means to make.
inline cudaError_t wait_stream(cudaStream_t stream) {
    sr_count_device_wait();
    return cudaStreamSynchronize(stream);
}

// Makes the context's device current for the scope and restores the previous one.
class device_guard {
  public:
    explicit device_guard(int device) {
        cudaGetDevice(&previous_);
        if (previous_ != device)
            cudaSetDevice(device);
    }
    ~device_guard() {
        int now = -1;
        cudaGetDevice(&now);
        if (now != previous_)
            cudaSetDevice(previous_);
    }
    device_guard(const device_guard &) = delete;
    device_guard &operator=(const device_guard &) = delete;

  private:
    int previous_ = 0;
};

// Device scratch memory accounted to the context; freed when it goes out of scope.
template <typename T> class buffer {
  public:
    explicit buffer(sr_context_s *ctx) : ctx_(ctx) {}
    ~buffer() { sr_mem_free(ctx_, SR_DEVICE, ptr_, bytes_); }
    buffer(const buffer &) = delete;
    buffer &operator=(const buffer &) = delete;
    sr_status allocate(size_t count) {
        sr_mem_free(ctx_, SR_DEVICE, ptr_, bytes_);
        ptr_ = nullptr;
        bytes_ = count * sizeof(T);
        void *p = nullptr;
        sr_status s = sr_mem_alloc_array(ctx_, SR_DEVICE, count, sizeof(T), &p);
        ptr_ = static_cast<T *>(p);
        if (s != SR_SUCCESS)
            bytes_ = 0;
        return s;
    }
    T *get() const { return ptr_; }

  private:
    sr_context_s *ctx_;
    T *ptr_ = nullptr;
    size_t bytes_ = 0;
};

constexpr unsigned long long kNoIndex = ~0ull;

// A device cell that kernels lower with atomicMin to report the first bad index they see.
class first_index {
  public:
    explicit first_index(sr_context_s *ctx) : ctx_(ctx), cell_(ctx) {}
    // Allocates the cell once and sets it to kNoIndex.
    sr_status reset() {
        if (cell_.get() == nullptr)
            SR_TRY(cell_.allocate(1));
        SR_CUDA_TRY(cudaMemsetAsync(cell_.get(), 0xff, sizeof(unsigned long long), stream_of(ctx_)));
        return SR_SUCCESS;
    }
    unsigned long long *get() const { return cell_.get(); }
    // Waits for the stream and reads the cell (kNoIndex when nothing was flagged).
    sr_status read(unsigned long long *index) const {
        SR_CUDA_TRY(cudaMemcpyAsync(index, cell_.get(), sizeof *index, cudaMemcpyDeviceToHost, stream_of(ctx_)));
        SR_CUDA_TRY(sr_cuda::wait_stream(stream_of(ctx_)));
        return SR_SUCCESS;
    }

  private:
    sr_context_s *ctx_;
    buffer<unsigned long long> cell_;
};

inline unsigned blocks_for(int64_t n, int threads) {
    int64_t b = (n + threads - 1) / threads;
    const int64_t cap = 1 << 20; // kernels below use grid-stride loops
    return static_cast<unsigned>(b < 1 ? 1 : (b > cap ? cap : b));
}

// The bits a value up to max_value takes (0 for 0): radix sorts' end bits.
inline int bits_for(uint64_t max_value) {
    int bits = 0;
    while (bits < 64 && (max_value >> bits) != 0)
        bits++;
    return bits;
}

// Multiprocessors of the current device (read once).
inline int sm_count() {
    static int sms = 0;
    if (sms == 0) {
        int device = 0;
        cudaGetDevice(&device);
        if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || sms <= 0)
            sms = 80;
    }
    return sms;
}

// Blocks for a grid-stride kernel of `threads_wanted` threads: no more than fill the chip.
inline unsigned grid_for(int64_t threads_wanted, int block = 256) {
    const int64_t blocks = (threads_wanted + block - 1) / block;
    const int64_t cap = (int64_t)sm_count() * 16;
    return (unsigned)(blocks < 1 ? 1 : (blocks > cap ? cap : blocks));
}

} // namespace sr_cuda
