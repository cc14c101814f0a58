// The value-making kernels of the Kronecker product and the row reduction (cuda_structure.cu
// sizes the rows and launches them), over an Ops as cuda_spmm_kernels.cuh's: compiled by nvcc for
// the built-ins and by NVRTC for user semirings (cuda_user.cu). Device code only.
#pragma once

#include "cuda_device_base.cuh"

namespace sr_cuda {

// A warp per output row of A ⊗ B: its lanes walk the row's (A entry, B entry) pairs in order.
template <class Ops>
__global__ void kron_fill(const csr_ref a, const csr_ref b, const int64_t *c_rowptr, int32_t *c_colind,
                          typename Ops::value *c_values) {
    using T = typename Ops::value;
    const T *av = static_cast<const T *>(a.values), *bv = static_cast<const T *>(b.values);
    const int lane = threadIdx.x % 32;
    const int64_t n = a.nrows * b.nrows, warps = (int64_t)gridDim.x * blockDim.x / 32;
    for (int64_t r = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; r < n; r += warps) {
        const int64_t i = r / b.nrows, k = r % b.nrows;
        const int64_t b0 = b.rowptr[k], bn = b.rowptr[k + 1] - b0, a0 = a.rowptr[i];
        const int64_t total = c_rowptr[r + 1] - c_rowptr[r];
        for (int64_t t = lane; t < total; t += 32) {
            const int64_t x = a0 + t / bn, y = b0 + t % bn, o = c_rowptr[r] + t;
            c_colind[o] = (int32_t)((int64_t)a.colind[x] * b.ncols + b.colind[y]);
            if (c_values)
                c_values[o] = Ops::mul(av[x], bv[y]);
        }
    }
}

template <bool Small, typename T> struct shuffle_word { using type = T; };
template <typename T> struct shuffle_word<true, T> { using type = int; }; // shuffles move 4 or 8 bytes

// A warp per row: the ⊕ of its entries (the rows with none were given no entry).
template <class Ops>
__global__ void reduce_fill(const csr_ref a, const int64_t *v_rowptr, int32_t *v_colind, typename Ops::value *v_values) {
    using T = typename Ops::value;
    const T *av = static_cast<const T *>(a.values);
    const int lane = threadIdx.x % 32;
    const int64_t warps = (int64_t)gridDim.x * blockDim.x / 32;
    for (int64_t i = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; i < a.nrows; i += warps) {
        const int64_t k0 = a.rowptr[i], k1 = a.rowptr[i + 1];
        if (k0 == k1)
            continue;
        T acc = Ops::identity();
        if (v_values) // lanes take entries in a fixed pattern and combine in a fixed tree: deterministic
            for (int64_t k = k0 + lane; k < k1; k += 32)
                acc = Ops::add(acc, av[k]);
        using W = typename shuffle_word<(sizeof(T) < 4), T>::type;
        for (int off = 16; off > 0; off /= 2)
            acc = Ops::add(acc, (T)__shfl_down_sync(0xffffffffu, (W)acc, off));
        if (lane == 0) {
            v_colind[v_rowptr[i]] = 0;
            if (v_values)
                v_values[v_rowptr[i]] = acc;
        }
    }
}

} // namespace sr_cuda
