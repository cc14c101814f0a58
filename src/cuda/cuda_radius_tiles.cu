// Radius neighbours on the GPU deciding as it scores (cuda_tile_select.cuh): each row the keep
// rule takes is appended to the batch's pairs (a slot a row, claimed a warp at a time) as a sort
// key (query, row) and its value, and one radix sort of the pairs makes the batch's CSR (columns
// ascending, as the dense path's). No block of batch × n distances is written, and rows sharing
// nothing with the query are ruled out by their bounds without reading their norms where the
// radius excludes them (cosine within 1: every one).
//
// The values are the dense path's: the same sums (the same atomics) and finalizer rounded to the
// output type, kept as cuda_dense.cu keeps them ((double)v <= radius, or >= for a similarity; NaN
// never).
#include <cub/device/device_radix_sort.cuh>

#include "cuda_common.cuh"
#include "cuda_tile_select.cuh"

extern "C" {
#include "../core/keep_rule.h"
#include "../semiring/metric.h"
#include "cuda.h"
}

namespace {

using namespace sr_cuda;

constexpr int kRowBits = 31; // a pair's key: its query (from the batch's first) above its row

template <typename T> struct radius_out {
    uint64_t *key; // (query << kRowBits) | row
    T *value;
    unsigned long long *count; // pairs found (past capacity: counted, not written)
    int64_t capacity;
    double bound;
    bool at_least;       // a similarity: values at least the bound
    int64_t self_offset; // query j leaves out row j + self_offset (SR_KEEP_NO_SELF: none)
};

// The kept rows appended to the batch's pairs.
template <typename T> struct radius_sink {
    struct params {
        radius_out<T> o;
        const double *floors;
    };
    radius_out<T> o;
    int64_t query, self_row;
    floor_memo memo;
    __device__ radius_sink(const tile_args<T> &, params p, int64_t query_of_block)
        : o(p.o), query(query_of_block),
          self_row(p.o.self_offset == SR_KEEP_NO_SELF ? -1 : query_of_block + p.o.self_offset) {
        memo.floors = p.floors;
    }
    __device__ bool keeps(T v) const { return o.at_least ? (double)v >= o.bound : (double)v <= o.bound; }
    __device__ bool ready() const { return true; }
    __device__ bool cannot_count(T v, int64_t) const { return !keeps(v); }
    __device__ bool disjoint_out(const tile_args<T> &, int64_t group_row, double qmax) {
        return chebyshev_disjoint_out<T>(*this, group_row, qmax);
    }
    __device__ void put(unsigned long long slot, T value, int64_t i) const {
        if (slot < (unsigned long long)o.capacity) {
            o.key[slot] = ((uint64_t)query << kRowBits) | (uint64_t)i;
            o.value[slot] = value;
        }
    }
    __device__ void lanes(const tile_args<T> &, bool has, T value, int64_t i) {
        const int lane = threadIdx.x & 31;
        const bool kept = has && i != self_row && keeps(value);
        const unsigned who = __ballot_sync(~0u, kept);
        if (who == 0)
            return;
        unsigned long long base = 0;
        if (lane == 0)
            base = atomicAdd(o.count, (unsigned long long)__popc(who));
        base = __shfl_sync(~0u, base, 0);
        if (kept)
            put(base + __popc(who & ((1u << lane) - 1)), value, i);
    }
    __device__ void one(const tile_args<T> &, T value, int64_t i) {
        if ((threadIdx.x & 31) == 0 && i != self_row && keeps(value))
            put(atomicAdd(o.count, 1ull), value, i);
    }
    __device__ void finish(unsigned char *) const {}
};

// The sorted pairs' rows as CSR columns, and each query's first pair.
__global__ void split_keys(const uint64_t *key, int64_t pairs, int64_t nq, int32_t *colind, int64_t *rowptr) {
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < pairs || t <= nq;
         t += (int64_t)gridDim.x * blockDim.x) {
        if (t < pairs)
            colind[t] = (int32_t)(key[t] & ((1ull << kRowBits) - 1));
        if (t <= nq)
            rowptr[t] = lower_bound(key, pairs, (uint64_t)t << kRowBits);
    }
}

template <typename T>
sr_status radius_tiles_rows(const sr_distance_inputs *in, int64_t q0, int64_t q1, const sr_keep_rule *rule,
                            int64_t capacity, sr_matrix_s **piece, int64_t *pairs) {
    sr_context_s *ctx = in->Q->ctx;
    cudaStream_t stream = stream_of(ctx);
    const int64_t nq = q1 - q0;
    buffer<uint64_t> keys(ctx), keys_alt(ctx);
    buffer<T> values(ctx), values_alt(ctx);
    buffer<unsigned long long> count(ctx);
    SR_TRY(keys.allocate((size_t)capacity));
    SR_TRY(values.allocate((size_t)capacity));
    SR_TRY(count.allocate(1));
    SR_CUDA_TRY(cudaMemsetAsync(count.get(), 0, sizeof(unsigned long long), stream));
    radius_out<T> o{keys.get(), values.get(), count.get(), capacity, rule->bound, rule->kind == SR_KEEP_AT_LEAST,
                    rule->self_offset};
    SR_TRY((run_tiles<T, radius_sink<T>>(
        in, q0, q1,
        [&](int64_t, typename radius_sink<T>::params &sp) -> sr_status {
            sp.o = o;
            return SR_SUCCESS;
        },
        [](int64_t) -> sr_status { return SR_SUCCESS; })));
    unsigned long long found = 0;
    SR_CUDA_TRY(cudaMemcpyAsync(&found, count.get(), sizeof found, cudaMemcpyDeviceToHost, stream));
    SR_CUDA_TRY(sr_cuda::wait_stream(stream));
    *pairs = (int64_t)found;
    if ((int64_t)found > capacity)
        return SR_SUCCESS; // *piece stays NULL: the caller takes fewer queries
    const int64_t m = (int64_t)found;
    // the pairs in (query, row) order: blocks and warps appended them in an order of their own
    SR_TRY(keys_alt.allocate((size_t)m));
    SR_TRY(values_alt.allocate((size_t)m));
    cub::DoubleBuffer<uint64_t> k(keys.get(), keys_alt.get());
    cub::DoubleBuffer<T> v(values.get(), values_alt.get());
    const int end_bit = kRowBits + bits_for((uint64_t)(nq > 1 ? nq - 1 : 0));
    size_t temp_bytes = 0;
    SR_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, k, v, m, 0, end_bit, stream));
    buffer<unsigned char> temp(ctx);
    SR_TRY(temp.allocate(temp_bytes));
    SR_CUDA_TRY(cub::DeviceRadixSort::SortPairs(temp.get(), temp_bytes, k, v, m, 0, end_bit, stream));
    sr_matrix_s *A = nullptr;
    SR_TRY(sr_matrix_alloc(ctx, nq, in->X->nrows, m, in->Q->type, SR_DEVICE, &A));
    split_keys<<<grid_for(std::max<int64_t>(m, nq + 1)), 256, 0, stream>>>(k.Current(), m, nq, A->colind, A->rowptr);
    cudaError_t err = cudaGetLastError();
    if (err == cudaSuccess && m > 0)
        err = cudaMemcpyAsync(A->values, v.Current(), (size_t)m * sizeof(T), cudaMemcpyDeviceToDevice, stream);
    if (err == cudaSuccess)
        err = sr_cuda::wait_stream(stream);
    if (err != cudaSuccess) {
        sr_matrix_destroy(A);
        return sr_cuda_fail(err, "radius tiles", __FILE__, __LINE__);
    }
    *piece = A;
    return SR_SUCCESS;
}

} // namespace

extern "C" bool sr_cuda_radius_tiles_apply(const sr_distance_inputs *in) { return tiles_apply(in); }

extern "C" sr_status sr_cuda_radius_tiles_rows(const sr_distance_inputs *in, int64_t q0, int64_t q1,
                                               const sr_keep_rule *rule, int64_t capacity, sr_matrix_s **piece,
                                               int64_t *pairs) {
    device_guard guard(in->Q->ctx->device);
    *piece = nullptr;
    *pairs = 0;
    if (q1 - q0 > ((int64_t)1 << 30))
        return sr_error(SR_ERROR_INTERNAL, "radius tiles: a batch of %lld queries is past the grid",
                        (long long)(q1 - q0));
    if (rule->kind == SR_KEEP_NONZERO)
        return sr_error(SR_ERROR_INTERNAL, "radius tiles: the rule must be a radius");
    capacity = capacity < 1 ? 1 : capacity;
    return in->Q->type == SR_TYPE_FLOAT32 ? radius_tiles_rows<float>(in, q0, q1, rule, capacity, piece, pairs)
                                          : radius_tiles_rows<double>(in, q0, q1, rule, capacity, piece, pairs);
}
