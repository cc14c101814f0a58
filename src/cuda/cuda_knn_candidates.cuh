// A k-NN's candidates, for kernels that keep each warp's k best (cuda_topk.cuh) of the index rows
// a block is handed: the block's k best written to its slots (per query and block along y), then
// a warp a query merging its blocks' slots into the answer, best first, ties to the smaller index.
// Shared by the tiles (cuda_knn_tiles.cu) and the dense panel (cuda_knn_panel.cu).
#pragma once

#include "cuda_common.cuh"
#include "cuda_topk.cuh"

namespace {

using namespace sr_cuda;

constexpr int kMaxK = 32; // a warp's list: lane l holds place l

template <typename T> struct tiles_out {
    typename order_key<T>::type *key; // k candidates per (query of the batch, block along y)
    int64_t *row;                     // -1: an empty place
    int k;
    bool largest;
};

// The block's k best: the warps' lists through shared memory (`space`, free by now: the block has
// passed its last barrier over it) into warp 0's, written to the block's slots.
template <typename T, int kThreads>
__device__ void write_block_best(warp_best<typename order_key<T>::type> &best, unsigned char *space,
                                 const tiles_out<T> &o) {
    using Key = typename order_key<T>::type;
    constexpr int warps = kThreads / 32;
    const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
    Key *keys = reinterpret_cast<Key *>(space);
    int64_t *rows_of = reinterpret_cast<int64_t *>(keys + warps * kMaxK);
    rows_of[warp * kMaxK + lane] = lane < best.count ? best.row : -1;
    keys[warp * kMaxK + lane] = best.key;
    __syncthreads();
    if (warp != 0)
        return;
    for (int w = 1; w < warps; w++) {
        const int64_t rr = rows_of[w * kMaxK + lane];
        best.offer_lanes(rr >= 0, keys[w * kMaxK + lane], rr);
    }
    if (lane < o.k) {
        const int64_t slot = ((int64_t)blockIdx.x * gridDim.y + blockIdx.y) * o.k + lane;
        o.key[slot] = best.key;
        o.row[slot] = lane < best.count ? best.row : -1;
    }
}

// A warp a query: the k best of its blocks' candidates, written best first.
template <typename T>
__global__ void merge_blocks(tiles_out<T> o, int64_t nq, int64_t per_query, int64_t *idx, T *dist, int64_t rs,
                             int64_t cs) {
    const int lane = threadIdx.x & 31;
    for (int64_t q = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; q < nq;
         q += (int64_t)gridDim.x * blockDim.x / 32) {
        warp_best<typename order_key<T>::type> best(o.k);
        for (int64_t c0 = q * per_query; c0 < (q + 1) * per_query; c0 += 32) {
            const int64_t c = c0 + lane;
            const bool inside = c < (q + 1) * per_query;
            const int64_t rr = inside ? o.row[c] : -1;
            best.offer_lanes(rr >= 0, inside ? o.key[c] : 0, rr);
        }
        if (lane < o.k) {
            idx[q * o.k + lane] = best.row;
            dist[q * rs + lane * cs] = order_key<T>::value(best.key, o.largest);
        }
    }
}

} // namespace
