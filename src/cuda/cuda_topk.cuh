// The order k-selection keeps, shared by the selection kernels (cuda_select.cu) and the k-NN
// kernels that select as they go (cuda_knn_tiles.cu, cuda_knn_overlap.cu).
#pragma once

#include <cstdint>

namespace {

// Values as order-preserving unsigned keys (negated for `largest`): smaller key, better value;
// ties go to the smaller index.
template <typename T> struct order_key;
template <> struct order_key<float> {
    using type = uint32_t;
    __device__ static type of(float v, bool largest) {
        uint32_t u = __float_as_uint(v);
        u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
        return largest ? ~u : u;
    }
    __device__ static float value(type key, bool largest) { // of()'s inverse
        const uint32_t u = largest ? ~key : key;
        return __uint_as_float((u & 0x80000000u) ? (u & 0x7fffffffu) : ~u);
    }
};
template <> struct order_key<double> {
    using type = unsigned long long;
    __device__ static type of(double v, bool largest) {
        unsigned long long u = (unsigned long long)__double_as_longlong(v);
        u = (u & 0x8000000000000000ull) ? ~u : (u | 0x8000000000000000ull);
        return largest ? ~u : u;
    }
    __device__ static double value(type key, bool largest) {
        const unsigned long long u = largest ? ~key : key;
        return __longlong_as_double(
            (long long)((u & 0x8000000000000000ull) ? (u & 0x7fffffffffffffffull) : ~u));
    }
};

// The k best (key, row) pairs of a warp, best first, lane l holding place l (k <= 32). Every lane
// also holds the worst of a full list (wk, wr), so testing a pair takes no shuffle.
template <typename Key> struct warp_best {
    Key key = Key(0), wk = Key(0);
    int64_t row = 0, wr = 0;
    int count = 0, k;
    __device__ explicit warp_best(int k_) : k(k_) {}
    __device__ bool full() const { return count >= k; }
    // Whether (key, row) would enter: the list is not full or it beats the worst.
    __device__ bool enters(Key kk, int64_t rr) const { return count < k || kk < wk || (kk == wk && rr < wr); }
    // (kk, rr) in its place; the warp calls it together, with the same pair.
    __device__ void insert(Key kk, int64_t rr) {
        if (!enters(kk, rr))
            return;
        const int lane = threadIdx.x & 31;
        const bool before = lane < count && (key < kk || (key == kk && row < rr));
        const int at = __popc(__ballot_sync(~0u, before));
        const Key up_key = __shfl_up_sync(~0u, key, 1);
        const int64_t up_row = __shfl_up_sync(~0u, row, 1);
        if (lane > at && lane < k) {
            key = up_key;
            row = up_row;
        }
        if (lane == at) {
            key = kk;
            row = rr;
        }
        count = count < k ? count + 1 : k;
        if (count == k) {
            wk = __shfl_sync(~0u, key, k - 1);
            wr = __shfl_sync(~0u, row, k - 1);
        }
    }
    // Offers each lane's pair where `has`, in lane order.
    __device__ void offer_lanes(bool has, Key kk, int64_t rr) {
        unsigned want = __ballot_sync(~0u, has && enters(kk, rr));
        while (want) {
            const int src = __ffs(want) - 1;
            want &= want - 1;
            insert(__shfl_sync(~0u, kk, src), __shfl_sync(~0u, rr, src));
        }
    }
};

} // namespace
