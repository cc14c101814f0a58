// The sampled product's kernel for any semiring (sddmm_interleaved) and the helpers the tuned
// plus_times kernels share with it (cuda_sddmm.cu launches them), over an Ops as
// cuda_spmm_kernels.cuh's: compiled by nvcc for the built-ins and by NVRTC for user semirings
// (cuda_user.cu). Device code only.
#pragma once

#include "cuda_device_base.cuh"

namespace sr_cuda {

constexpr int kSddmmThreads = 256;

template <typename T, int VEC> struct alignas(sizeof(T) * VEC) frag {
    T v[VEC];
};

template <typename T, int VEC> __device__ __forceinline__ frag<T, VEC> load_frag(const T *p) {
    return *reinterpret_cast<const frag<T, VEC> *>(p);
}

// A lane's share of a row of nvec vectors held by a group of L lanes: vectors lane, L + lane, ...
// (R of them; those past the row's end are left as they are).
template <typename T, int VEC, int L, int R>
__device__ __forceinline__ void load_row(frag<T, VEC> (&f)[R], const T *row, int lane, int64_t nvec) {
#pragma unroll
    for (int r = 0; r < R; r++)
        if (r * L + lane < nvec)
            f[r] = load_frag<T, VEC>(row + (size_t)(r * L + lane) * VEC);
}

// The lanes of this thread's group of L (for shuffles among diverged groups).
template <int L> __device__ __forceinline__ unsigned group_mask() {
    return L == 32 ? 0xffffffffu : (((1u << L) - 1u) << (threadIdx.x % 32 / L * L));
}

template <class Ops, int L> __device__ __forceinline__ typename Ops::value group_reduce(typename Ops::value x) {
    const unsigned mask = group_mask<L>();
#pragma unroll
    for (int o = L / 2; o > 0; o /= 2)
        x = Ops::add(x, __shfl_xor_sync(mask, x, o, L));
    return x;
}

template <typename T> struct sddmm_params {
    const int64_t *rowptr;
    const int32_t *colind;
    const T *svals;     // S's values in the product; nullptr samples the pattern
    const T *beta_vals; // S's values for the β term; nullptr counts 1 (bool S)
    const T *A, *B;
    int64_t K, nrows, nnz;
    double alpha, beta;
    T *out;
    const int64_t *order; // entries in visiting order (column tiles), or nullptr for CSR order
};

// An entry's output from its product d, S's value s (used when p.svals) and its β value b (used
// when p.beta != 0 and p.beta_vals), loaded by the caller.
template <class Ops>
__device__ __forceinline__ typename Ops::value finish_with(const sddmm_params<typename Ops::value> &p,
                                                           typename Ops::value d, typename Ops::value s,
                                                           typename Ops::value b) {
    using T = typename Ops::value;
    if (p.svals)
        d = Ops::mul(s, d);
    double r = p.alpha * (double)d;
    if (p.beta != 0.0)
        r += p.beta * (p.beta_vals ? (double)b : 1.0);
    return (T)r;
}

template <class Ops> __device__ __forceinline__ typename Ops::value finish(const sddmm_params<typename Ops::value> &p,
                                                                          typename Ops::value d, int64_t e) {
    using T = typename Ops::value;
    return finish_with<Ops>(p, d, p.svals ? p.svals[e] : T(1),
                            p.beta != 0.0 && p.beta_vals ? p.beta_vals[e] : T(1));
}

// The row of entry e, stepping forward from `row` (the previous entry's, or -1) when it is near:
// a group's entries rise within a tile.
__device__ __forceinline__ int64_t find_row(const int64_t *rowptr, int64_t nrows, int64_t row, int64_t e) {
    if (row >= 0 && rowptr[row] <= e)
        for (int step = 0; step < 8; step++, row++)
            if (rowptr[row + 1] > e)
                return row;
    return row_of_entry(rowptr, nrows, e);
}

// A warp per chunk of `chunk` entries (of S, or of the column-tile order), its 32/L groups of L
// lanes taking entries g, g + G, ... one at a time, so a warp's writes coalesce. With R > 0 the
// A fragment of the group's row (R vectors a lane, K <= R·L·VEC) stays in registers while its
// entries stay in that row (small K, where this beats sddmm_rounds); with R = 0 the lanes stride
// over any K and A's row is read per entry (any K, any semiring).
template <class Ops, int VEC, int L, int R>
__global__ void __launch_bounds__(kSddmmThreads) sddmm_interleaved(sddmm_params<typename Ops::value> p, int64_t chunk) {
    using T = typename Ops::value;
    constexpr int G = 32 / L;
    const int lane = threadIdx.x % L, group = threadIdx.x % 32 / L;
    const int64_t warp = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int64_t warps = (int64_t)gridDim.x * blockDim.x / 32;
    const int64_t nvec = p.K / VEC;
    for (int64_t c0 = warp * chunk; c0 < p.nnz; c0 += warps * chunk) {
        int64_t row = -1, cached = -1;
        frag<T, VEC> a[R > 0 ? R : 1];
        for (int64_t at = c0 + group; at < min(c0 + chunk, p.nnz); at += G) {
            const int64_t e = p.order ? p.order[at] : at;
            row = find_row(p.rowptr, p.nrows, row, e);
            const T *arow = p.A + (size_t)row * (size_t)p.K;
            const T *brow = p.B + (size_t)p.colind[e] * (size_t)p.K;
            T sum = Ops::identity();
            if constexpr (R > 0) {
                if (row != cached) {
                    load_row<T, VEC, L, R>(a, arow, lane, nvec);
                    cached = row;
                }
#pragma unroll
                for (int r = 0; r < R; r++)
                    if (r * L + lane < nvec) {
                        const frag<T, VEC> b = load_frag<T, VEC>(brow + (size_t)(r * L + lane) * VEC);
#pragma unroll
                        for (int v = 0; v < VEC; v++)
                            sum = Ops::add(sum, Ops::mul(a[r].v[v], b.v[v]));
                    }
            } else {
#pragma unroll 4
                for (int64_t q = lane; q < nvec; q += L) {
                    const frag<T, VEC> x = load_frag<T, VEC>(arow + q * VEC), b = load_frag<T, VEC>(brow + q * VEC);
#pragma unroll
                    for (int v = 0; v < VEC; v++)
                        sum = Ops::add(sum, Ops::mul(x.v[v], b.v[v]));
                }
            }
            sum = group_reduce<Ops, L>(sum);
            if (lane == 0)
                p.out[e] = finish<Ops>(p, sum, e);
        }
    }
}

} // namespace sr_cuda
