// The fused pattern w = α·Xᵀ·(v ⊙ (X·y)) + β·z on the device (the kernel-fusion paper,
// ../shared/papers/kernel-fusion-xtvxy.txt), X read once.
//
// Sparse X (Algorithm 2): a vector of VS lanes per row (VS from the mean row length, the paper's
// Equation 4), each vector taking rows a grid apart (coarsening: the grid is what the chip holds
// at once, so each vector does C = m / (vectors) rows); the row's dot with y is reduced by
// shuffles, scaled by v, and spread back over the row's columns into a block-wide copy of w in
// shared memory (inter-vector aggregation), which the block adds to w in global memory once at
// the end (inter-block). When w does not fit in shared memory (wide X), the vectors add to global
// memory directly. Dense X (Algorithm 3): a warp per row, each lane holding TL of the row's
// elements and TL of y in registers, its partial w in registers until the end.
// β·z is written first by a separate kernel (no inter-block barrier exists), then the fused
// kernel adds α·Xᵀ(...) atomically.
#include "cuda_common.cuh"

#include <algorithm>

extern "C" {
#include "cuda.h"
}

namespace {

using namespace sr_cuda;

template <typename T> struct fused_params {
    sr_pattern_form form;
    const int64_t *rowptr;
    const int32_t *colind;
    const T *values; // nullptr: bool X, entries count 1
    const T *Xd;     // dense X (row-major, ld), when rowptr is nullptr
    int64_t ld, m, n;
    const T *y, *v, *z;
    T *w;
    T alpha, beta;
};

template <int VS, typename T> __device__ __forceinline__ T vector_sum(T x) {
#pragma unroll
    for (int o = VS / 2; o > 0; o /= 2)
        x += __shfl_xor_sync(VS == 32 ? 0xffffffffu : (((1u << VS) - 1u) << (threadIdx.x % 32 / VS * VS)), x, o, VS);
    return x;
}

// w = β·z (or 0), before the atomic sums.
template <typename T> __global__ void start_w(T *w, const T *z, T beta, int64_t n) {
    for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < n; j += (int64_t)gridDim.x * blockDim.x)
        w[j] = z ? beta * z[j] : T(0);
}

// The scale of row i: v(i)·(X(i,:)·y) for XTVXY, v(i)·y(i) for XTY (every lane gets it).
template <int VS, typename T> __device__ __forceinline__ T row_scale(const fused_params<T> &p, int64_t i, int lane) {
    const T vi = p.v ? p.v[i] : T(1);
    if (p.form == SR_FORM_XTY)
        return vi * p.y[i];
    T d = 0;
    for (int64_t k = p.rowptr[i] + lane; k < p.rowptr[i + 1]; k += VS)
        d += (p.values ? p.values[k] : T(1)) * p.y[p.colind[k]];
    return vi * vector_sum<VS>(d);
}

// Sparse XTVXY / XTY with w's partial sums in shared memory (n fits), then one atomic add per
// column a block.
template <int VS, typename T> __global__ void __launch_bounds__(256) sparse_shared(fused_params<T> p) {
    extern __shared__ unsigned char smem_raw[];
    T *part = reinterpret_cast<T *>(smem_raw);
    for (int64_t j = threadIdx.x; j < p.n; j += blockDim.x)
        part[j] = 0;
    __syncthreads();
    const int lane = threadIdx.x % VS;
    const int64_t vector = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / VS;
    const int64_t vectors = (int64_t)gridDim.x * blockDim.x / VS;
    for (int64_t i = vector; i < p.m; i += vectors) {
        const T s = row_scale<VS>(p, i, lane);
        if (s != T(0))
            for (int64_t k = p.rowptr[i] + lane; k < p.rowptr[i + 1]; k += VS)
                atomicAdd(&part[p.colind[k]], (p.values ? p.values[k] : T(1)) * s);
    }
    __syncthreads();
    for (int64_t j = threadIdx.x; j < p.n; j += blockDim.x)
        if (part[j] != T(0))
            atomicAdd(&p.w[j], p.alpha * part[j]);
}

// The same for wide X: the vectors add to w in global memory.
template <int VS, typename T> __global__ void __launch_bounds__(256) sparse_global(fused_params<T> p) {
    const int lane = threadIdx.x % VS;
    const int64_t vector = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / VS;
    const int64_t vectors = (int64_t)gridDim.x * blockDim.x / VS;
    for (int64_t i = vector; i < p.m; i += vectors) {
        const T s = p.alpha * row_scale<VS>(p, i, lane);
        if (s != T(0))
            for (int64_t k = p.rowptr[i] + lane; k < p.rowptr[i + 1]; k += VS)
                atomicAdd(&p.w[p.colind[k]], (p.values ? p.values[k] : T(1)) * s);
    }
}

// XY: w(i) = α·v(i)·(X(i,:)·y) + β·z(i), a vector a row (sparse) or a warp a row (dense).
template <int VS, typename T> __global__ void __launch_bounds__(256) rows_xy(fused_params<T> p) {
    const int lane = threadIdx.x % VS;
    const int64_t vector = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / VS;
    const int64_t vectors = (int64_t)gridDim.x * blockDim.x / VS;
    for (int64_t i = vector; i < p.m; i += vectors) {
        T d = 0;
        if (p.rowptr) {
            for (int64_t k = p.rowptr[i] + lane; k < p.rowptr[i + 1]; k += VS)
                d += (p.values ? p.values[k] : T(1)) * p.y[p.colind[k]];
        } else {
            const T *x = p.Xd + (size_t)i * (size_t)p.ld;
            for (int64_t k = lane; k < p.n; k += VS)
                d += x[k] * p.y[k];
        }
        d = vector_sum<VS>(d);
        if (lane == 0)
            p.w[i] = p.alpha * (p.v ? p.v[i] : T(1)) * d + (p.z ? p.beta * p.z[i] : T(0));
    }
}

// Dense XTVXY / XTY, n <= 32·TL: a warp a row, lane l holding X(i, l + 32t) and y(l + 32t) for
// t < TL in registers (the paper's generated kernel, by templates instead of code generation),
// and its columns' partial w in registers until the end.
template <int TL, typename T> __global__ void __launch_bounds__(256) dense_rows(fused_params<T> p) {
    const int lane = threadIdx.x % 32;
    const int64_t warp = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int64_t warps = (int64_t)gridDim.x * blockDim.x / 32;
    T ly[TL], lw[TL];
#pragma unroll
    for (int t = 0; t < TL; t++) {
        const int64_t j = lane + 32 * t;
        ly[t] = p.form == SR_FORM_XTY || j >= p.n ? T(0) : p.y[j];
        lw[t] = 0;
    }
    for (int64_t i = warp; i < p.m; i += warps) {
        const T *x = p.Xd + (size_t)i * (size_t)p.ld;
        T lx[TL], d = 0;
#pragma unroll
        for (int t = 0; t < TL; t++) {
            const int64_t j = lane + 32 * t;
            lx[t] = j < p.n ? x[j] : T(0);
            d += lx[t] * ly[t];
        }
        const T s = (p.v ? p.v[i] : T(1)) * (p.form == SR_FORM_XTY ? p.y[i] : vector_sum<32>(d));
#pragma unroll
        for (int t = 0; t < TL; t++)
            lw[t] += lx[t] * s;
    }
#pragma unroll
    for (int t = 0; t < TL; t++) {
        const int64_t j = lane + 32 * t;
        if (j < p.n && lw[t] != T(0))
            atomicAdd(&p.w[j], p.alpha * lw[t]);
    }
}

// Dense X wider than the register tiles: a warp a row reads it twice (the second time from L1).
template <typename T> __global__ void __launch_bounds__(256) dense_wide(fused_params<T> p) {
    const int lane = threadIdx.x % 32;
    const int64_t warp = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int64_t warps = (int64_t)gridDim.x * blockDim.x / 32;
    for (int64_t i = warp; i < p.m; i += warps) {
        const T *x = p.Xd + (size_t)i * (size_t)p.ld;
        T d = 0;
        if (p.form != SR_FORM_XTY)
            for (int64_t j = lane; j < p.n; j += 32)
                d += x[j] * p.y[j];
        const T s = p.alpha * (p.v ? p.v[i] : T(1)) * (p.form == SR_FORM_XTY ? p.y[i] : vector_sum<32>(d));
        if (s != T(0))
            for (int64_t j = lane; j < p.n; j += 32)
                atomicAdd(&p.w[j], x[j] * s);
    }
}

// Blocks of 256 that fill the chip (the paper's coarsening: each vector then takes m / vectors
// rows, so blocks add their shared copies of w to global memory once each).
template <typename K> unsigned resident_blocks(K kernel, size_t smem) {
    int per_sm = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, 256, smem) != cudaSuccess || per_sm < 1)
        per_sm = 1;
    return (unsigned)(per_sm * sm_count());
}

// The paper's Equation 4: lanes a row from the mean row length μ: 32 past 32, else the power of
// two 2^i with 2^i < μ <= 2^(i+1) (i = 1..4), else 1.
int vector_size(double mu) {
    if (mu > 32)
        return 32;
    for (int vs = 16; vs >= 2; vs /= 2)
        if (mu > vs)
            return vs;
    return 1;
}

template <int VS, typename T> sr_status launch_sparse(const fused_params<T> &p, cudaStream_t stream) {
    if (p.form == SR_FORM_XY) {
        rows_xy<VS, T><<<resident_blocks(rows_xy<VS, T>, 0), 256, 0, stream>>>(p);
        SR_CUDA_LAUNCHED();
        return SR_SUCCESS;
    }
    // w's copy in shared memory when it fits in a third of the SM's (so a few blocks share an SM)
    int device = 0, smem_max = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&smem_max, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    const size_t smem = (size_t)p.n * sizeof(T);
    if (smem <= (size_t)smem_max / 3 && smem <= ((size_t)96 << 10)) {
        SR_CUDA_TRY(cudaFuncSetAttribute(sparse_shared<VS, T>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        const unsigned blocks = std::min<unsigned>(resident_blocks(sparse_shared<VS, T>, smem),
                                                   (unsigned)std::max<int64_t>(1, (p.m * VS + 255) / 256));
        sparse_shared<VS, T><<<blocks, 256, smem, stream>>>(p);
    } else {
        sparse_global<VS, T><<<resident_blocks(sparse_global<VS, T>, 0), 256, 0, stream>>>(p);
    }
    SR_CUDA_LAUNCHED();
    return SR_SUCCESS;
}

template <typename T> sr_status launch_dense(const fused_params<T> &p, cudaStream_t stream) {
    if (p.form == SR_FORM_XY) {
        rows_xy<32, T><<<resident_blocks(rows_xy<32, T>, 0), 256, 0, stream>>>(p);
        SR_CUDA_LAUNCHED();
        return SR_SUCCESS;
    }
    const int64_t tl = (p.n + 31) / 32;
#define SR_DENSE_TL(TL)                                                                                  \
    if (tl <= TL) {                                                                                      \
        dense_rows<TL, T><<<resident_blocks(dense_rows<TL, T>, 0), 256, 0, stream>>>(p);                 \
        SR_CUDA_LAUNCHED();                                                                              \
        return SR_SUCCESS;                                                                               \
    }
    SR_DENSE_TL(1)
    SR_DENSE_TL(2)
    SR_DENSE_TL(4)
    SR_DENSE_TL(8)
    SR_DENSE_TL(16)
#undef SR_DENSE_TL
    dense_wide<T><<<resident_blocks(dense_wide<T>, 0), 256, 0, stream>>>(p);
    SR_CUDA_LAUNCHED();
    return SR_SUCCESS;
}

template <typename T> sr_status run(sr_context_s *ctx, const sr_fused_args *a) {
    cudaStream_t stream = stream_of(ctx);
    fused_params<T> p{};
    p.form = a->form;
    if (a->X) {
        p.rowptr = a->X->rowptr;
        p.colind = a->X->colind;
        p.values = a->X->type == SR_TYPE_BOOL ? nullptr : static_cast<const T *>(a->X->values);
    }
    p.Xd = static_cast<const T *>(a->Xd);
    p.ld = a->ld;
    p.m = a->m;
    p.n = a->n;
    p.y = static_cast<const T *>(a->y);
    p.v = static_cast<const T *>(a->v);
    p.z = static_cast<const T *>(a->z);
    p.w = static_cast<T *>(a->w);
    p.alpha = (T)a->alpha;
    p.beta = (T)a->beta;
    const int64_t out = a->form == SR_FORM_XY ? a->m : a->n;
    if (a->form != SR_FORM_XY && out > 0) {
        start_w<T><<<grid_for(out), 256, 0, stream>>>(p.w, p.z, p.beta, out);
        SR_CUDA_LAUNCHED();
    }
    if (a->m > 0 && out > 0) {
        if (a->X) {
            const double mu = (double)a->X->nnz / (double)std::max<int64_t>(1, a->m);
            switch (vector_size(mu)) {
            case 1: SR_TRY((launch_sparse<1, T>(p, stream))); break;
            case 2: SR_TRY((launch_sparse<2, T>(p, stream))); break;
            case 4: SR_TRY((launch_sparse<4, T>(p, stream))); break;
            case 8: SR_TRY((launch_sparse<8, T>(p, stream))); break;
            case 16: SR_TRY((launch_sparse<16, T>(p, stream))); break;
            default: SR_TRY((launch_sparse<32, T>(p, stream))); break;
            }
        } else {
            SR_TRY(launch_dense<T>(p, stream));
        }
    }
    SR_CUDA_TRY(cudaStreamSynchronize(stream));
    return SR_SUCCESS;
}

} // namespace

extern "C" sr_status sr_cuda_fused(sr_context_s *ctx, const sr_fused_args *a) {
    device_guard guard(ctx->device);
    return a->type == SR_TYPE_FLOAT32 ? run<float>(ctx, a) : run<double>(ctx, a);
}
