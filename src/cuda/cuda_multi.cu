// Several GPUs of one context: moving bytes between them (NCCL, or peer copies in a build without
// it) and the small kernels that cut matrices into row blocks and put the blocks' answers together
// (src/ops/multi_gpu.c does the rest on the public calls of each GPU's own context).
#include "cuda_common.cuh"
#include "cuda_scan.cuh"

extern "C" {
#include "cuda.h"
}

#include <mutex>

#ifdef SR_HAVE_NCCL
#include <nccl.h>
#endif

namespace sr_cuda {
namespace {

// The stream a GPU's moves run on: the caller's context's own for the first GPU (its matrices are
// the sources and the gathered answers' destinations), each GPU's context's for the others.
cudaStream_t rank_stream(const sr_context_s *ctx, int g) { return stream_of(g == 0 ? ctx : ctx->peers[g]); }

// A move within one GPU runs on that GPU's own context's stream: on the first GPU it then
// overlaps the bytes arriving from the others on the context's stream.
cudaStream_t copy_stream(const sr_context_s *ctx, int g) { return stream_of(ctx->peers[g]); }

sr_status sync_ranks(const sr_context_s *ctx, const bool *used) {
    for (int g = 0; g < ctx->ndevices; g++)
        if (used[g]) {
            device_guard guard(ctx->devices[g]);
            SR_CUDA_TRY(sr_cuda::wait_stream(rank_stream(ctx, g)));
            SR_CUDA_TRY(sr_cuda::wait_stream(copy_stream(ctx, g)));
        }
    return SR_SUCCESS;
}

#ifdef SR_HAVE_NCCL
std::mutex comms_mutex;

struct multi_comms {
    ncclComm_t comm[SR_MAX_DEVICES];
};

sr_status nccl_fail(ncclResult_t r, const char *what) {
    return sr_error(SR_ERROR_DEVICE, "NCCL %s failed: %s (%s)", what, ncclGetErrorString(r), ncclGetLastError(nullptr));
}

#define SR_NCCL_TRY(call, what)                   \
    do {                                          \
        ncclResult_t sr_nccl_r_ = (call);         \
        if (sr_nccl_r_ != ncclSuccess)            \
            return nccl_fail(sr_nccl_r_, what);   \
    } while (0)

void free_comms(sr_context_s *ctx) {
    auto *c = static_cast<multi_comms *>(ctx->comms);
    for (int g = 0; c && g < ctx->ndevices; g++)
        if (c->comm[g])
            ncclCommDestroy(c->comm[g]);
    delete c;
    ctx->comms = nullptr;
}

// One communicator a GPU, all in this process (ncclCommInitAll), made on first use.
sr_status comms_of(sr_context_s *ctx, multi_comms **out) {
    std::lock_guard<std::mutex> lock(comms_mutex);
    if (ctx->comms == nullptr) {
        auto *c = new (std::nothrow) multi_comms{};
        if (c == nullptr)
            return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for NCCL communicators");
        ncclResult_t r = ncclCommInitAll(c->comm, ctx->ndevices, ctx->devices);
        if (r != ncclSuccess) {
            delete c;
            return nccl_fail(r, "ncclCommInitAll (the communicators of the context's GPUs)");
        }
        ctx->comms = c;
        ctx->free_comms = free_comms;
    }
    *out = static_cast<multi_comms *>(ctx->comms);
    return SR_SUCCESS;
}
#endif

} // namespace
} // namespace sr_cuda

using namespace sr_cuda;

extern "C" bool sr_cuda_multi_nccl(void) {
#ifdef SR_HAVE_NCCL
    return true;
#else
    return false;
#endif
}

extern "C" sr_status sr_cuda_multi_moves(sr_context_s *ctx, const sr_cuda_move *moves, int n) {
    bool used[SR_MAX_DEVICES] = {};
    for (int m = 0; m < n; m++)
        if (moves[m].bytes > 0)
            used[moves[m].from] = used[moves[m].to] = true;
#ifdef SR_HAVE_NCCL
    multi_comms *c = nullptr;
    SR_TRY(comms_of(ctx, &c));
    SR_NCCL_TRY(ncclGroupStart(), "ncclGroupStart");
    for (int m = 0; m < n; m++) {
        const sr_cuda_move &v = moves[m];
        if (v.bytes == 0)
            continue;
        if (v.from == v.to) {
            device_guard guard(ctx->devices[v.from]);
            cudaError_t err = cudaMemcpyAsync(v.dst, v.src, v.bytes, cudaMemcpyDeviceToDevice, copy_stream(ctx, v.from));
            if (err != cudaSuccess) {
                ncclGroupEnd();
                return sr_cuda_fail(err, "cudaMemcpyAsync (a move within one GPU)", __FILE__, __LINE__);
            }
            continue;
        }
        ncclResult_t r = ncclSend(v.src, v.bytes, ncclInt8, v.to, c->comm[v.from], rank_stream(ctx, v.from));
        if (r == ncclSuccess)
            r = ncclRecv(v.dst, v.bytes, ncclInt8, v.from, c->comm[v.to], rank_stream(ctx, v.to));
        if (r != ncclSuccess) {
            ncclGroupEnd();
            return nccl_fail(r, "ncclSend/ncclRecv");
        }
    }
    SR_NCCL_TRY(ncclGroupEnd(), "ncclGroupEnd (moves between GPUs)");
#else
    for (int m = 0; m < n; m++) {
        const sr_cuda_move &v = moves[m];
        if (v.bytes == 0)
            continue;
        device_guard guard(ctx->devices[v.to]);
        SR_CUDA_TRY(cudaMemcpyPeerAsync(v.dst, ctx->devices[v.to], v.src, ctx->devices[v.from], v.bytes,
                                        v.from == v.to ? copy_stream(ctx, v.to) : rank_stream(ctx, v.to)));
    }
#endif
    return sync_ranks(ctx, used);
}

extern "C" sr_status sr_cuda_multi_broadcast(sr_context_s *ctx, const void *src, void *const *dst, size_t bytes) {
    if (bytes == 0)
        return SR_SUCCESS;
    bool used[SR_MAX_DEVICES] = {};
    for (int g = 0; g < ctx->ndevices; g++)
        used[g] = true;
#ifdef SR_HAVE_NCCL
    multi_comms *c = nullptr;
    SR_TRY(comms_of(ctx, &c));
    SR_NCCL_TRY(ncclGroupStart(), "ncclGroupStart");
    for (int g = 0; g < ctx->ndevices; g++) {
        void *recv = g == 0 ? const_cast<void *>(src) : dst[g]; // in place at the root
        ncclResult_t r = ncclBroadcast(src, recv, bytes, ncclInt8, 0, c->comm[g], rank_stream(ctx, g));
        if (r != ncclSuccess) {
            ncclGroupEnd();
            return nccl_fail(r, "ncclBroadcast");
        }
    }
    SR_NCCL_TRY(ncclGroupEnd(), "ncclGroupEnd (a broadcast)");
#else
    for (int g = 1; g < ctx->ndevices; g++) {
        device_guard guard(ctx->devices[g]);
        SR_CUDA_TRY(cudaMemcpyPeerAsync(dst[g], ctx->devices[g], src, ctx->devices[0], bytes, rank_stream(ctx, g)));
    }
#endif
    return sync_ranks(ctx, used);
}

// ------------------------------------------------------------------ kernels on one GPU

namespace sr_cuda {
namespace {

__global__ void shift_values(int64_t *data, int64_t n, int64_t delta) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        data[i] += delta;
}

// out[i + 1] = the multiply-adds of row i of A·B: the lengths of the rows of B that row i names
// (a warp a row: hub rows are long).
__global__ void row_flops(const int64_t *rowptr, const int32_t *colind, int64_t nrows, const int64_t *browptr,
                          int64_t *out) {
    const int lane = threadIdx.x & 31;
    const int64_t warps = (int64_t)gridDim.x * (blockDim.x / 32);
    for (int64_t i = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; i < nrows; i += warps) {
        int64_t sum = 0;
        for (int64_t e = rowptr[i] + lane; e < rowptr[i + 1]; e += 32) {
            const int32_t c = colind[e];
            sum += browptr[c + 1] - browptr[c];
        }
        for (int o = 16; o > 0; o >>= 1)
            sum += __shfl_down_sync(0xffffffffu, sum, o);
        if (lane == 0)
            out[i + 1] = sum;
    }
}

// Row r of the k nearest from the parts' candidates: part g holds k_of[g] a row (closest first,
// local index rows, ties to the smaller); the merge takes the best by (distance, global row), so
// ties still go to the smaller row.
template <typename T>
__global__ void merge_topk(const int64_t *cidx, const T *cdist, sr_topk_parts parts, int64_t rows, int64_t k,
                           bool largest, int64_t *out_idx, T *out_dist, int64_t row_stride, int64_t col_stride) {
    for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < rows; r += (int64_t)gridDim.x * blockDim.x) {
        int pos[SR_MAX_DEVICES];
        for (int g = 0; g < parts.n; g++)
            pos[g] = 0;
        for (int64_t j = 0; j < k; j++) {
            int best = -1;
            T bd = 0;
            int64_t bi = 0;
            for (int g = 0; g < parts.n; g++) {
                if (pos[g] >= parts.k_of[g])
                    continue;
                const int64_t at = (int64_t)g * parts.part_stride + r * parts.k_of[g] + pos[g];
                const T d = cdist[at];
                const int64_t i = cidx[at] + parts.row0[g];
                const bool better = best < 0 || (largest ? d > bd : d < bd) || (d == bd && i < bi);
                if (better) {
                    best = g;
                    bd = d;
                    bi = i;
                }
            }
            pos[best]++;
            out_idx[r * k + j] = bi;
            out_dist[r * row_stride + j * col_stride] = bd;
        }
    }
}

// The parts' columns side by side: row i of the result is row i of part 0, then of part 1 (its
// columns moved past part 0's), ...; with drop_diagonal the entry (i, i) is left out.
struct concat_parts {
    int n;
    const int64_t *rowptr[SR_MAX_DEVICES];
    const int32_t *colind[SR_MAX_DEVICES];
    const unsigned char *values[SR_MAX_DEVICES];
    int64_t col0[SR_MAX_DEVICES + 1];
};

// The position of column c in part g's row i, or -1.
__device__ int64_t find_column(const concat_parts &p, int g, int64_t i, int64_t c) {
    const int64_t b = p.rowptr[g][i], len = p.rowptr[g][i + 1] - b;
    const int64_t at = lower_bound(p.colind[g] + b, len, (int32_t)c);
    return at < len && p.colind[g][b + at] == c ? at : -1;
}

__device__ int owner_of(const concat_parts &p, int64_t c) {
    int g = 0;
    while (g + 1 < p.n && c >= p.col0[g + 1])
        g++;
    return g;
}

__global__ void concat_count(concat_parts p, int64_t nrows, bool drop_diagonal, int64_t *counts) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < nrows; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t len = 0;
        for (int g = 0; g < p.n; g++)
            len += p.rowptr[g][i + 1] - p.rowptr[g][i];
        if (drop_diagonal) {
            const int g = owner_of(p, i);
            if (i < p.col0[g + 1] && find_column(p, g, i, i - p.col0[g]) >= 0)
                len--;
        }
        counts[i] = len;
    }
}

// A warp a row.
__global__ void concat_fill(concat_parts p, int64_t nrows, bool drop_diagonal, size_t vbytes, const int64_t *rowptr,
                            int32_t *colind, unsigned char *values) {
    const int lane = threadIdx.x & 31;
    const int64_t warps = (int64_t)gridDim.x * (blockDim.x / 32);
    for (int64_t i = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; i < nrows; i += warps) {
        int64_t out = rowptr[i];
        for (int g = 0; g < p.n; g++) {
            const int64_t b = p.rowptr[g][i], len = p.rowptr[g][i + 1] - b;
            const int64_t skip = drop_diagonal && i >= p.col0[g] && i < p.col0[g + 1]
                                     ? find_column(p, g, i, i - p.col0[g])
                                     : -1;
            for (int64_t e = lane; e < len; e += 32) {
                if (e == skip)
                    continue;
                const int64_t to = out + e - (skip >= 0 && e > skip ? 1 : 0);
                colind[to] = (int32_t)(p.colind[g][b + e] + p.col0[g]);
                for (size_t v = 0; v < vbytes; v++)
                    values[to * vbytes + v] = p.values[g][(b + e) * vbytes + v];
            }
            out += len - (skip >= 0 ? 1 : 0);
        }
    }
}

} // namespace
} // namespace sr_cuda

extern "C" sr_status sr_cuda_shift(sr_context_s *ctx, int64_t *data, int64_t n, int64_t delta) {
    if (n <= 0 || delta == 0)
        return SR_SUCCESS;
    device_guard guard(ctx->device);
    cudaStream_t stream = stream_of(ctx);
    shift_values<<<grid_for(n), 256, 0, stream>>>(data, n, delta);
    SR_CUDA_LAUNCHED();
    SR_CUDA_TRY(sr_cuda::wait_stream(stream));
    return SR_SUCCESS;
}

extern "C" sr_status sr_cuda_row_flops(const sr_matrix_s *A, const sr_matrix_s *B, int64_t *prefix) {
    sr_context_s *ctx = A->ctx;
    device_guard guard(ctx->device);
    cudaStream_t stream = stream_of(ctx);
    buffer<int64_t> out(ctx);
    SR_TRY(out.allocate((size_t)A->nrows + 1));
    SR_CUDA_TRY(cudaMemsetAsync(out.get(), 0, sizeof(int64_t), stream));
    if (A->nrows > 0) {
        row_flops<<<grid_for(A->nrows * 32), 256, 0, stream>>>(A->rowptr, A->colind, A->nrows, B->rowptr, out.get());
        SR_CUDA_LAUNCHED();
        size_t temp_bytes = 0;
        SR_CUDA_TRY(cub::DeviceScan::InclusiveSum(nullptr, temp_bytes, out.get() + 1, out.get() + 1, A->nrows, stream));
        buffer<unsigned char> temp(ctx);
        SR_TRY(temp.allocate(temp_bytes));
        SR_CUDA_TRY(cub::DeviceScan::InclusiveSum(temp.get(), temp_bytes, out.get() + 1, out.get() + 1, A->nrows, stream));
    }
    SR_CUDA_TRY(cudaMemcpyAsync(prefix, out.get(), ((size_t)A->nrows + 1) * sizeof(int64_t), cudaMemcpyDeviceToHost,
                                stream));
    SR_CUDA_TRY(sr_cuda::wait_stream(stream));
    return SR_SUCCESS;
}

extern "C" sr_status sr_cuda_merge_topk(sr_context_s *ctx, const int64_t *cidx, const void *cdist,
                                        const sr_topk_parts *parts, int64_t rows, int64_t k, sr_type type,
                                        bool largest, int64_t *out_idx, const sr_strided_out *out_dist) {
    if (rows == 0)
        return SR_SUCCESS;
    device_guard guard(ctx->device);
    cudaStream_t stream = stream_of(ctx);
    if (type == SR_TYPE_FLOAT32)
        merge_topk<float><<<grid_for(rows, 128), 128, 0, stream>>>(cidx, static_cast<const float *>(cdist), *parts,
                                                                   rows, k, largest, out_idx,
                                                                   static_cast<float *>(out_dist->data),
                                                                   out_dist->row_stride, out_dist->col_stride);
    else
        merge_topk<double><<<grid_for(rows, 128), 128, 0, stream>>>(cidx, static_cast<const double *>(cdist), *parts,
                                                                    rows, k, largest, out_idx,
                                                                    static_cast<double *>(out_dist->data),
                                                                    out_dist->row_stride, out_dist->col_stride);
    SR_CUDA_LAUNCHED();
    SR_CUDA_TRY(sr_cuda::wait_stream(stream));
    return SR_SUCCESS;
}

extern "C" sr_status sr_cuda_concat_columns(sr_context_s *ctx, const sr_matrix_s *const *parts, int n,
                                            const int64_t *col0, bool drop_diagonal, sr_matrix_s **out) {
    device_guard guard(ctx->device);
    concat_parts p{};
    p.n = n;
    for (int g = 0; g < n; g++) {
        p.rowptr[g] = parts[g]->rowptr;
        p.colind[g] = parts[g]->colind;
        p.values[g] = static_cast<const unsigned char *>(parts[g]->values);
        p.col0[g] = col0[g];
    }
    p.col0[n] = col0[n];
    const int64_t nrows = parts[0]->nrows;
    const sr_type type = parts[0]->type;
    const size_t vbytes = type == SR_TYPE_BOOL ? 0 : sr_type_size(type);
    sr_matrix_s *C = nullptr;
    SR_TRY(sr_matrix_alloc(ctx, nrows, col0[n], 0, type, SR_DEVICE, &C));
    cudaStream_t stream = stream_of(ctx);
    return build_rows(
        ctx, C,
        [&](int64_t *counts) { concat_count<<<grid_for(nrows), 256, 0, stream>>>(p, nrows, drop_diagonal, counts); },
        [&]() {
            concat_fill<<<grid_for(nrows * 32), 256, 0, stream>>>(p, nrows, drop_diagonal, vbytes, C->rowptr,
                                                                  C->colind,
                                                                  static_cast<unsigned char *>(C->values));
        },
        "the GPUs' radius neighbours side by side", out);
}
