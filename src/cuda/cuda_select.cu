// k-selection on the GPU. A long row is cut into chunks; one block per (row, chunk) keeps the
// chunk's k best as candidates, and a second launch selects among a row's candidates. A block
// alone streams a row far below the memory's speed (few loads in flight), so a batch of few long
// rows needs many blocks per row to fill the device.
//
// Values become order-preserving unsigned keys (negated for `largest`). Radix narrowing: a
// histogram of the next 11 key bits over the elements that match the bits fixed so far finds
// the digit holding the k-th smallest key; repeat until the elements below that prefix plus
// those in it fit a 2048-entry shared buffer (or every bit is fixed: then they are all equal).
// A last pass gathers the sure ones (below the prefix) and, in index order, the candidates (in
// it); a bitonic sort by (key, index) leaves the k best first, ties to the smaller index.
#include <cub/block/block_scan.cuh>

#include "cuda_common.cuh"
#include "cuda_topk.cuh"

extern "C" {
#include "cuda.h"
}

namespace {

using namespace sr_cuda;

constexpr int kSelectThreads = 512;
constexpr int kDigitBits = 11;
constexpr int kBins = 1 << kDigitBits;
constexpr int kBuffer = 2048; // >= 2 * the largest k (1024)
constexpr int kUnroll = 4;

// Where a selection goes: the caller's outputs (final) or a row's candidate slots (chunked).
template <typename T> struct select_out {
    int64_t *idx;
    int64_t ld_idx;
    T *dist;
    int64_t rs, cs;
    T *cand_val; // non-null: write k (value, index) candidates per (row, chunk) here
    int32_t *cand_idx;
};

template <typename T> struct select_shared {
    using K = typename order_key<T>::type;
    using scan = cub::BlockScan<int, kSelectThreads>;
    typename scan::TempStorage scan_storage;
    int hist[kBins];
    K key[kBuffer];
    int idx[kBuffer];
    int digit, below, in_bin, sure_count, cand_count;
};

// row[base + u * kSelectThreads + tid] for every u (0 past n), all loaded before any is used:
// several loads in flight per thread.
template <typename T> __device__ inline void load_unrolled(const T *row, int64_t n, int64_t base, T (&v)[kUnroll]) {
#pragma unroll
    for (int u = 0; u < kUnroll; u++) {
        const int64_t i = base + u * kSelectThreads + threadIdx.x;
        v[u] = i < n ? row[i] : T(0);
    }
}

// Block (row, chunk) selects the k best of row[chunk * blockIdx.y, ...) of the block; `in_idx`
// (stage two) maps positions to the indices the candidates came from.
template <typename T>
__global__ void __launch_bounds__(kSelectThreads)
    select_kernel(const T *block, int64_t n_row, int64_t ld, int64_t chunk, int k_want, bool largest,
                  const int32_t *in_idx, select_out<T> out) {
    using K = typename order_key<T>::type;
    constexpr int kKeyBits = 8 * sizeof(K);
    __shared__ select_shared<T> sh;
    const int64_t begin = (int64_t)blockIdx.y * chunk;
    const int64_t n = n_row - begin < chunk ? n_row - begin : chunk;
    const int k = n < k_want ? (int)n : k_want;
    const T *row = block + (int64_t)blockIdx.x * ld + begin;
    const int tid = threadIdx.x;

    // narrowing: `known` high bits are fixed to `prefix`; `need` more must come from inside it
    K prefix = 0;
    int known = 0, need = k;
    for (;;) {
        const int shift = kKeyBits - known - kDigitBits > 0 ? kKeyBits - known - kDigitBits : 0;
        const int width = kKeyBits - known - shift;
        for (int b = tid; b < kBins; b += kSelectThreads)
            sh.hist[b] = 0;
        __syncthreads();
        for (int64_t base = 0; base < n; base += kUnroll * kSelectThreads) {
            T v[kUnroll];
            load_unrolled(row, n, base, v);
#pragma unroll
            for (int u = 0; u < kUnroll; u++) {
                if (base + u * kSelectThreads >= n)
                    break; // uniform across the block
                const int64_t i = base + u * kSelectThreads + tid;
                const K key = order_key<T>::of(v[u], largest);
                const bool match = i < n && (known == 0 || (key >> (kKeyBits - known)) == prefix);
                const int digit = (int)((key >> shift) & (((K)1 << width) - 1));
                const unsigned peers = __match_any_sync(~0u, match ? digit : -1);
                if (match && (__ffs(peers) - 1) == (tid & 31)) // one atomic per digit per warp
                    atomicAdd(&sh.hist[digit], __popc(peers));
            }
        }
        __syncthreads();
        int counts[kBins / kSelectThreads], inclusive[kBins / kSelectThreads];
        for (int t = 0; t < kBins / kSelectThreads; t++)
            counts[t] = sh.hist[tid * (kBins / kSelectThreads) + t];
        typename select_shared<T>::scan(sh.scan_storage).InclusiveSum(counts, inclusive);
        for (int t = 0; t < kBins / kSelectThreads; t++)
            if (inclusive[t] - counts[t] < need && need <= inclusive[t]) {
                sh.digit = tid * (kBins / kSelectThreads) + t;
                sh.below = inclusive[t] - counts[t];
                sh.in_bin = counts[t];
            }
        __syncthreads();
        need -= sh.below;
        prefix = (known == 0 ? 0 : prefix << width) | (K)sh.digit;
        known += width;
        const int in_bin = sh.in_bin;
        __syncthreads();
        if ((k - need) + in_bin <= kBuffer || known == kKeyBits)
            break;
    }

    // gather: the sure ones anywhere in [0, k - need), the candidates after them. Their order
    // only matters when more candidates than slots remain (all bits fixed: equal keys, and the
    // smallest indices must win), so a fast pass takes them as they come and an ordered pass
    // redoes the candidates only then.
    const int sure_total = k - need, cand_cap = kBuffer - sure_total;
    if (tid == 0) {
        sh.sure_count = 0;
        sh.cand_count = 0;
    }
    __syncthreads();
    const int lane = tid & 31;
    const unsigned lanes_below = (1u << lane) - 1;
    for (int64_t base = 0; base < n; base += kUnroll * kSelectThreads) {
        T v[kUnroll];
        load_unrolled(row, n, base, v);
#pragma unroll
        for (int u = 0; u < kUnroll; u++) {
            const int64_t i = base + u * kSelectThreads + tid;
            const K key = order_key<T>::of(v[u], largest);
            const K top = known == kKeyBits ? key : key >> (kKeyBits - known);
            const bool sure = i < n && top < prefix, cand = i < n && top == prefix;
            const unsigned sure_lanes = __ballot_sync(~0u, sure), cand_lanes = __ballot_sync(~0u, cand);
            int sure_at = 0, cand_at = 0;
            if (lane == 0) {
                sure_at = sure_lanes ? atomicAdd(&sh.sure_count, __popc(sure_lanes)) : 0;
                cand_at = cand_lanes ? atomicAdd(&sh.cand_count, __popc(cand_lanes)) : 0;
            }
            sure_at = __shfl_sync(~0u, sure_at, 0) + __popc(sure_lanes & lanes_below);
            cand_at = __shfl_sync(~0u, cand_at, 0) + __popc(cand_lanes & lanes_below);
            if (sure) {
                sh.key[sure_at] = key;
                sh.idx[sure_at] = (int)i;
            }
            if (cand && cand_at < cand_cap) {
                sh.key[sure_total + cand_at] = key;
                sh.idx[sure_total + cand_at] = (int)i;
            }
        }
    }
    __syncthreads();
    if (sh.cand_count > cand_cap) { // equal keys overflow the slots: take them in index order
        __syncthreads();
        if (tid == 0)
            sh.cand_count = 0;
        __syncthreads();
        for (int64_t base = 0; base < n && sh.cand_count < cand_cap; base += kSelectThreads) {
            const int64_t i = base + tid;
            const bool cand = i < n && (order_key<T>::of(row[i], largest) >> (kKeyBits - known)) == prefix;
            int offset, total;
            typename select_shared<T>::scan(sh.scan_storage).ExclusiveSum(cand ? 1 : 0, offset, total);
            const int at = sh.cand_count + offset;
            if (cand && at < cand_cap) {
                sh.key[sure_total + at] = order_key<T>::of(row[i], largest);
                sh.idx[sure_total + at] = (int)i;
            }
            __syncthreads();
            if (tid == 0)
                sh.cand_count += total;
            __syncthreads();
        }
    }
    const int filled = sure_total + (sh.cand_count < cand_cap ? sh.cand_count : cand_cap);
    int sorted = 2; // the power of two that holds them: usually far fewer stages than the buffer
    while (sorted < filled)
        sorted *= 2;
    for (int t = filled + tid; t < sorted; t += kSelectThreads) {
        sh.key[t] = ~(K)0;
        sh.idx[t] = INT32_MAX;
    }
    __syncthreads();

    // bitonic sort of the filled part by (key, index)
    for (int size = 2; size <= sorted; size *= 2)
        for (int stride = size / 2; stride > 0; stride /= 2) {
            for (int t = tid; t < sorted; t += kSelectThreads) {
                const int partner = t ^ stride;
                if (partner > t) {
                    const bool ascending = (t & size) == 0;
                    const K ka = sh.key[t], kb = sh.key[partner];
                    const int ia = sh.idx[t], ib = sh.idx[partner];
                    const bool a_after_b = ka > kb || (ka == kb && ia > ib);
                    if (a_after_b == ascending) {
                        sh.key[t] = kb;
                        sh.key[partner] = ka;
                        sh.idx[t] = ib;
                        sh.idx[partner] = ia;
                    }
                }
            }
            __syncthreads();
        }
    for (int t = tid; t < k_want; t += kSelectThreads) {
        const bool real = t < k;
        const int i = real ? sh.idx[t] : 0;
        const T v = real ? row[i] : (T)order_key<T>::value(~(K)0, largest); // padding sorts last
        const int64_t from = in_idx ? in_idx[(int64_t)blockIdx.x * ld + begin + i] : begin + i;
        if (out.cand_val) {
            const int64_t slot = ((int64_t)blockIdx.x * gridDim.y + blockIdx.y) * k_want + t;
            out.cand_val[slot] = v;
            out.cand_idx[slot] = real ? (int32_t)from : INT32_MAX;
        } else {
            out.idx[(int64_t)blockIdx.x * out.ld_idx + t] = from;
            out.dist[(int64_t)blockIdx.x * out.rs + t * out.cs] = v;
        }
    }
}

// Chunk length: long enough that the candidates are a small part of the row, short enough that
// a batch of a few hundred rows still makes thousands of blocks.
int64_t chunk_length(int64_t k) { return k * 16 > 16384 ? k * 16 : 16384; }

int64_t chunks_of(int64_t n, int64_t k) { return n > 2 * chunk_length(k) ? (n + chunk_length(k) - 1) / chunk_length(k) : 1; }

template <typename T>
sr_status select_rows(sr_context_s *ctx, const T *block, int64_t rows, int64_t n, int64_t ld, int k, bool largest,
                      select_out<T> out, cudaStream_t stream) {
    const int64_t chunks = chunks_of(n, k);
    if (chunks == 1) {
        select_kernel<T><<<dim3((unsigned)rows), kSelectThreads, 0, stream>>>(block, n, ld, n, k, largest, nullptr, out);
        SR_CUDA_LAUNCHED();
        return SR_SUCCESS;
    }
    const int64_t width = chunks * k; // candidates per row
    buffer<T> cand_val(ctx);
    buffer<int32_t> cand_idx(ctx);
    SR_TRY(cand_val.allocate((size_t)(rows * width)));
    SR_TRY(cand_idx.allocate((size_t)(rows * width)));
    select_out<T> stage1 = out;
    stage1.cand_val = cand_val.get();
    stage1.cand_idx = cand_idx.get();
    select_kernel<T><<<dim3((unsigned)rows, (unsigned)chunks), kSelectThreads, 0, stream>>>(
        block, n, ld, chunk_length(k), k, largest, nullptr, stage1);
    SR_CUDA_LAUNCHED();
    select_kernel<T><<<dim3((unsigned)rows), kSelectThreads, 0, stream>>>(cand_val.get(), width, width, width, k,
                                                                        largest, cand_idx.get(), out);
    SR_CUDA_LAUNCHED();
    SR_CUDA_TRY(sr_cuda::wait_stream(stream)); // before the candidates are freed
    return SR_SUCCESS;
}

} // namespace

extern "C" size_t sr_cuda_select_scratch_per_row(int64_t n, int64_t k, sr_type type) {
    const int64_t chunks = chunks_of(n, k);
    return chunks == 1 ? 0 : (size_t)(chunks * k) * (sr_type_size(type) + sizeof(int32_t));
}

extern "C" sr_status sr_cuda_select_rows(sr_context_s *ctx, const void *block, sr_type type, int64_t rows, int64_t n,
                                         int64_t ld, int64_t k, bool largest, int64_t *idx, int64_t ld_idx,
                                         const sr_strided_out *dist) {
    device_guard guard(ctx->device);
    if (k > kBuffer / 2)
        return sr_error(SR_ERROR_UNSUPPORTED, "k-NN on the device: k = %lld exceeds %d", (long long)k, kBuffer / 2);
    if (n > INT32_MAX)
        return sr_error(SR_ERROR_OVERFLOW, "k-NN on the device: rows of %lld distances exceed the 32-bit limit",
                        (long long)n);
    cudaStream_t stream = stream_of(ctx);
    for (int64_t r0 = 0; r0 < rows; r0 += 65535) { // grid y carries the chunks, x the rows
        const int64_t count = rows - r0 < 65535 ? rows - r0 : 65535;
        if (type == SR_TYPE_FLOAT32) {
            select_out<float> out = {idx + r0 * ld_idx, ld_idx, static_cast<float *>(dist->data) + r0 * dist->row_stride,
                                     dist->row_stride, dist->col_stride, nullptr, nullptr};
            SR_TRY(select_rows<float>(ctx, static_cast<const float *>(block) + r0 * ld, count, n, ld, (int)k, largest,
                                      out, stream));
        } else {
            select_out<double> out = {idx + r0 * ld_idx, ld_idx,
                                      static_cast<double *>(dist->data) + r0 * dist->row_stride, dist->row_stride,
                                      dist->col_stride, nullptr, nullptr};
            SR_TRY(select_rows<double>(ctx, static_cast<const double *>(block) + r0 * ld, count, n, ld, (int)k,
                                       largest, out, stream));
        }
    }
    SR_CUDA_TRY(sr_cuda::wait_stream(stream));
    return SR_SUCCESS;
}
