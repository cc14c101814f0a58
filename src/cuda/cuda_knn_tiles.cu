// k-NN on the GPU selecting while it scores (cuda_tile_select.cuh): each warp keeps the k best of
// the rows it is handed (cuda_topk.cuh), the block merges its warps' lists, and a last pass merges
// a query's blocks. No block of batch × n distances exists in device memory (on SEC-Edgar-like
// data, 663K index rows, it was 4.4·10¹¹ values written and read again all-vs-all), and the batches
// are no longer sized by it. A row sharing nothing with the query is offered only while the
// distance its bound gives could still enter the list.
//
// The neighbours and distances are the dense path's: the same sums (the same atomics) and
// finalizer rounded to the output type, compared as cuda_select.cu compares them (order_key),
// ties to the smaller index.
#include <algorithm>

#include "cuda_common.cuh"
#include "cuda_knn_candidates.cuh"
#include "cuda_tile_select.cuh"
#include "cuda_topk.cuh"

extern "C" {
#include "../semiring/metric.h"
#include "cuda.h"
}

namespace {

using namespace sr_cuda;

// The rows' values into the warps' lists; bounds apply once a warp's list is full, against its
// worst (a value ties with it by index).
template <typename T> struct best_sink {
    using Key = typename order_key<T>::type;
    struct params {
        tiles_out<T> o;
        const double *floors;
    };
    tiles_out<T> o;
    warp_best<Key> best;
    floor_memo memo;
    __device__ best_sink(const tile_args<T> &, params p, int64_t) : o(p.o), best(p.o.k) { memo.floors = p.floors; }
    __device__ bool ready() const { return best.full(); }
    __device__ bool cannot_count(T v, int64_t i) const { return !best.enters(order_key<T>::of(v, o.largest), i); }
    __device__ bool disjoint_out(const tile_args<T> &, int64_t group_row, double qmax) {
        return chebyshev_disjoint_out<T>(*this, group_row, qmax);
    }
    __device__ void lanes(const tile_args<T> &, bool has, T value, int64_t i) {
        best.offer_lanes(has, order_key<T>::of(value, o.largest), i);
    }
    __device__ void one(const tile_args<T> &, T value, int64_t i) {
        best.insert(order_key<T>::of(value, o.largest), i);
    }
    __device__ void finish(unsigned char *space) { write_block_best<T, kThreads>(best, space, o); }
};

template <typename T>
sr_status knn_tiles_rows(const sr_distance_inputs *in, int64_t q0, int64_t q1, int64_t k, int64_t *idx,
                         const sr_strided_out *dist) {
    sr_context_s *ctx = in->Q->ctx;
    const int64_t nq = q1 - q0;
    tiles_out<T> o{};
    o.k = (int)k;
    o.largest = sr_metric_is_similarity(in->metric);
    buffer<typename order_key<T>::type> keys(ctx); // candidates of (query, block along y)
    buffer<int64_t> rows(ctx);
    return run_tiles<T, best_sink<T>>(
        in, q0, q1,
        [&](int64_t ys, typename best_sink<T>::params &sp) -> sr_status {
            SR_TRY(keys.allocate((size_t)(nq * ys * k)));
            SR_TRY(rows.allocate((size_t)(nq * ys * k)));
            o.key = keys.get();
            o.row = rows.get();
            sp.o = o;
            return SR_SUCCESS;
        },
        [&](int64_t ys) -> sr_status {
            merge_blocks<T><<<grid_for(nq * 32), 256, 0, stream_of(ctx)>>>(
                o, nq, ys * k, idx, static_cast<T *>(dist->data), dist->row_stride, dist->col_stride);
            SR_CUDA_LAUNCHED();
            return SR_SUCCESS;
        });
}

} // namespace

extern "C" bool sr_cuda_knn_tiles_apply(const sr_distance_inputs *in, int64_t k) {
    return k <= kMaxK && tiles_apply(in);
}

extern "C" size_t sr_cuda_knn_tiles_scratch_per_row(const sr_distance_inputs *in, int64_t k) {
    const size_t key_bytes = in->Q->type == SR_TYPE_FLOAT64 ? 8 : 4;
    return (size_t)(tile_blocks_along(in, 1) * k) * (sizeof(int64_t) + key_bytes);
}

extern "C" sr_status sr_cuda_knn_tiles_rows(const sr_distance_inputs *in, int64_t q0, int64_t q1, int64_t k,
                                            int64_t *idx, const sr_strided_out *dist) {
    device_guard guard(in->Q->ctx->device);
    if (q1 <= q0)
        return SR_SUCCESS;
    if (q1 - q0 > ((int64_t)1 << 30))
        return sr_error(SR_ERROR_INTERNAL, "knn tiles: a batch of %lld queries is past the grid", (long long)(q1 - q0));
    return in->Q->type == SR_TYPE_FLOAT32 ? knn_tiles_rows<float>(in, q0, q1, k, idx, dist)
                                          : knn_tiles_rows<double>(in, q0, q1, k, idx, dist);
}
