// Bit-packed Boolean blocks on the device, 64 columns a word. Y = A or.and X gives each row of A
// a warp: with 32 or more words a row, lanes take words (a warp reads 256 consecutive bytes of an X
// row per entry); with fewer, the warp splits into groups of lanes over the row's entries, a lane
// a word, and the groups' words are ORed by shuffles.
#include "cuda_scan.cuh"

extern "C" {
#include "cuda.h"
}

namespace {

using namespace sr_cuda;

__device__ inline uint64_t tail_mask(int64_t ncols) {
    return ncols % 64 ? (1ull << (ncols % 64)) - 1 : ~0ull;
}

struct bits_product {
    const int64_t *rowptr;
    const int32_t *colind;
    int64_t nrows;
    sr_bits y, mask, x; // mask.words nullptr: no mask
    sr_bits_update u;
};

__device__ inline uint64_t masked_word(uint64_t old, uint64_t acc, const bits_product &p, int64_t i, int64_t w) {
    uint64_t computed = p.u.accumulate ? old | acc : acc;
    if (p.mask.words == nullptr)
        return computed;
    const uint64_t m = p.mask.words[i * p.mask.ld + w], allowed = p.u.complement ? ~m : m;
    return (computed & allowed) | (p.u.replace ? 0 : old & ~allowed);
}

// LANES lanes a word group; 32 / LANES groups split the entries.
template <int LANES>
__global__ void mxm_bits_rows(const bits_product p, unsigned long long *count) {
    const int lane = threadIdx.x % 32, group = lane / LANES, sub = lane % LANES;
    constexpr int kGroups = 32 / LANES;
    const int64_t words = (p.y.ncols + 63) / 64, warps = (int64_t)gridDim.x * blockDim.x / 32;
    const uint64_t tail = tail_mask(p.y.ncols);
    unsigned long long set = 0;
    for (int64_t i = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; i < p.nrows; i += warps) {
        const int64_t k0 = p.rowptr[i], k1 = p.rowptr[i + 1];
        for (int64_t w0 = 0; w0 < words; w0 += LANES) {
            const int64_t w = w0 + sub;
            uint64_t acc = 0;
            if (w < words)
                for (int64_t k = k0 + group; k < k1; k += kGroups)
                    acc |= p.x.words[(int64_t)p.colind[k] * p.x.ld + w];
            for (int off = LANES; off < 32; off *= 2) // OR the groups' words together
                acc |= __shfl_xor_sync(0xffffffffu, acc, off);
            if (group == 0 && w < words) {
                uint64_t *y = p.y.words + i * p.y.ld + w;
                uint64_t v = masked_word(*y, acc, p, i, w);
                if (w == words - 1)
                    v &= tail;
                *y = v;
                set += __popcll(v);
            }
        }
    }
    if (count) {
        for (int off = 16; off > 0; off /= 2)
            set += __shfl_down_sync(0xffffffffu, set, off);
        if (lane == 0 && set)
            atomicAdd(count, set);
    }
}

// Y |= X (X may be absent), counting Y's bits.
__global__ void or_words(sr_bits y, sr_bits x, unsigned long long *count) {
    const int64_t words = (y.ncols + 63) / 64, n = y.nrows * words;
    unsigned long long set = 0;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < n; t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = t / words, w = t % words;
        uint64_t v = y.words[i * y.ld + w];
        if (x.words) {
            v |= x.words[i * x.ld + w];
            y.words[i * y.ld + w] = v;
        }
        set += __popcll(v);
    }
    if (count) {
        for (int off = 16; off > 0; off /= 2)
            set += __shfl_down_sync(0xffffffffu, set, off);
        if (threadIdx.x % 32 == 0 && set)
            atomicAdd(count, set);
    }
}

__global__ void set_bits(const int64_t *rowptr, const int32_t *colind, int64_t nrows, sr_bits x) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < nrows; i += (int64_t)gridDim.x * blockDim.x)
        for (int64_t k = rowptr[i]; k < rowptr[i + 1]; k++) // a row's entries are its own: no other thread writes them
            x.words[i * x.ld + colind[k] / 64] |= 1ull << (colind[k] % 64);
}

__global__ void row_popcounts(sr_bits x, int64_t *counts) {
    const int64_t words = (x.ncols + 63) / 64;
    const uint64_t tail = tail_mask(x.ncols);
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < x.nrows; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t n = 0;
        for (int64_t w = 0; w < words; w++)
            n += __popcll(w == words - 1 ? x.words[i * x.ld + w] & tail : x.words[i * x.ld + w]);
        counts[i] = n;
    }
}

__global__ void bits_to_columns(sr_bits x, const int64_t *rowptr, int32_t *colind) {
    const int64_t words = (x.ncols + 63) / 64;
    const uint64_t tail = tail_mask(x.ncols);
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < x.nrows; i += (int64_t)gridDim.x * blockDim.x) {
        int32_t *out = colind + rowptr[i];
        for (int64_t w = 0; w < words; w++)
            for (uint64_t b = w == words - 1 ? x.words[i * x.ld + w] & tail : x.words[i * x.ld + w]; b; b &= b - 1)
                *out++ = (int32_t)(w * 64 + __ffsll((long long)b) - 1);
    }
}

// A device counter read back after the stream's work: the count of set bits.
struct counter {
    buffer<unsigned long long> cell;
    explicit counter(sr_context_s *ctx) : cell(ctx) {}
    sr_status start(cudaStream_t stream) {
        SR_TRY(cell.allocate(1));
        SR_CUDA_TRY(cudaMemsetAsync(cell.get(), 0, sizeof(unsigned long long), stream));
        return SR_SUCCESS;
    }
    sr_status finish(cudaStream_t stream, int64_t *count) {
        unsigned long long v = 0;
        SR_CUDA_TRY(cudaMemcpyAsync(&v, cell.get(), sizeof v, cudaMemcpyDeviceToHost, stream));
        SR_CUDA_TRY(sr_cuda::wait_stream(stream));
        *count = (int64_t)v;
        return SR_SUCCESS;
    }
};

} // namespace

extern "C" sr_status sr_cuda_mxm_bits(sr_context_s *ctx, const sr_matrix_s *A, const sr_bits *Y, const sr_bits *mask,
                                      const sr_bits *X, const sr_bits_update *u, int64_t *count) {
    device_guard guard(ctx->device);
    cudaStream_t stream = stream_of(ctx);
    bits_product p{A->rowptr, A->colind, A->nrows, *Y, {}, *X, *u};
    if (mask)
        p.mask = *mask;
    counter c(ctx);
    if (count)
        SR_TRY(c.start(stream));
    unsigned long long *cell = count ? c.cell.get() : nullptr;
    const int64_t words = (Y->ncols + 63) / 64;
    if (A->nrows > 0 && words > 0) {
        const unsigned grid = grid_for(A->nrows * 32);
        if (words >= 32)
            mxm_bits_rows<32><<<grid, 256, 0, stream>>>(p, cell);
        else if (words >= 8)
            mxm_bits_rows<8><<<grid, 256, 0, stream>>>(p, cell);
        else if (words >= 2)
            mxm_bits_rows<2><<<grid, 256, 0, stream>>>(p, cell);
        else
            mxm_bits_rows<1><<<grid, 256, 0, stream>>>(p, cell);
        SR_CUDA_LAUNCHED();
    }
    if (count)
        return c.finish(stream, count);
    cudaError_t err = sr_cuda::wait_stream(stream);
    return err == cudaSuccess ? SR_SUCCESS : sr_cuda_fail(err, "sr_mxm_bits", __FILE__, __LINE__);
}

extern "C" sr_status sr_cuda_bits_or(sr_context_s *ctx, const sr_bits *Y, const sr_bits *X, int64_t *count) {
    device_guard guard(ctx->device);
    cudaStream_t stream = stream_of(ctx);
    counter c(ctx);
    if (count)
        SR_TRY(c.start(stream));
    const int64_t n = Y->nrows * ((Y->ncols + 63) / 64);
    sr_bits none{};
    if (n > 0) {
        or_words<<<grid_for(n), 256, 0, stream>>>(*Y, X ? *X : none, count ? c.cell.get() : nullptr);
        SR_CUDA_LAUNCHED();
    }
    if (count)
        return c.finish(stream, count);
    cudaError_t err = sr_cuda::wait_stream(stream);
    return err == cudaSuccess ? SR_SUCCESS : sr_cuda_fail(err, "sr_bits_or", __FILE__, __LINE__);
}

extern "C" sr_status sr_cuda_bits_zero(sr_context_s *ctx, const sr_bits *X) {
    device_guard guard(ctx->device);
    cudaStream_t stream = stream_of(ctx);
    const size_t bytes = (size_t)X->nrows * (size_t)X->ld * sizeof(uint64_t);
    if (bytes)
        SR_CUDA_TRY(cudaMemsetAsync(X->words, 0, bytes, stream));
    SR_CUDA_TRY(sr_cuda::wait_stream(stream));
    return SR_SUCCESS;
}

extern "C" sr_status sr_cuda_bits_from_matrix(sr_context_s *ctx, const sr_matrix_s *A, const sr_bits *X) {
    device_guard guard(ctx->device);
    cudaStream_t stream = stream_of(ctx);
    if (X->nrows > 0 && X->ld > 0) // clear the rows' used words (an ld wider than needed keeps its padding)
        SR_CUDA_TRY(cudaMemset2DAsync(X->words, (size_t)X->ld * 8, 0, (size_t)((X->ncols + 63) / 64) * 8,
                                      (size_t)X->nrows, stream));
    if (A->nrows > 0) {
        set_bits<<<grid_for(A->nrows), 256, 0, stream>>>(A->rowptr, A->colind, A->nrows, *X);
        SR_CUDA_LAUNCHED();
    }
    SR_CUDA_TRY(sr_cuda::wait_stream(stream));
    return SR_SUCCESS;
}

extern "C" sr_status sr_cuda_matrix_from_bits(sr_context_s *ctx, const sr_bits *X, sr_matrix_s **out) {
    device_guard guard(ctx->device);
    cudaStream_t stream = stream_of(ctx);
    sr_matrix_s *A = nullptr;
    SR_TRY(sr_matrix_alloc(ctx, X->nrows, X->ncols, 0, SR_TYPE_BOOL, SR_DEVICE, &A));
    return build_rows(
        ctx, A, [&](int64_t *counts) { row_popcounts<<<grid_for(X->nrows), 256, 0, stream>>>(*X, counts); },
        [&] { bits_to_columns<<<grid_for(X->nrows), 256, 0, stream>>>(*X, A->rowptr, A->colind); },
        "sr_matrix_from_bits", out);
}
