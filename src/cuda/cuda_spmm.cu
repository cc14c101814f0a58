// Dense-output semiring products on the device: C = A ⊕.⊗ B (SpMV is the one-column case).
//
// Load balance over skewed rows: short rows are handled by a group of G lanes each; SpMM rows
// above kMidRow entries take a block each; rows above kLongRow are cut into kChunk-entry chunks
// that write partial results, which a combine pass reduces in chunk order. Every reduction has a
// fixed order (deterministic for every semiring, no atomics). The mid and long rows come from the
// matrix's cached row plan, so a call launches only the kernels its rows need and waits once.
#include "cuda_mxm_ordered.cuh"
#include "cuda_row_plan.cuh"
#include "cuda_semiring.cuh"
#include "cuda_spmm_kernels.cuh"
#include "cuda_spmv_plan.cuh"
#include "cuda_spmv_split_kernels.cuh"
#include "cuda_user.cuh"

#include <algorithm>
#include <cstdlib>
#include <cstring>

extern "C" {
#include "../core/types.h"
#include "cuda.h"
}

namespace {

using namespace sr_cuda;

template <typename T> dense_ref<T> ref_of(const sr_dense *d) {
    const bool row_major = d->layout == SR_ROW_MAJOR;
    return {static_cast<T *>(d->data), row_major ? d->ld : 1, row_major ? 1 : d->ld};
}

#include "cuda_spmv_split.cuh"

// Whether a dense operand is row-major with 16-byte aligned rows of whole vectors.
template <typename T> bool rows_of_vectors(const dense_ref<const T> &d, int64_t K) {
    constexpr int V = kVec<T>;
    return V > 1 && K > 16 && d.col_stride == 1 && K % V == 0 && d.row_stride % V == 0 &&
           reinterpret_cast<uintptr_t>(d.base) % 16 == 0;
}

// SPARSERING_SPMV_LANES (2..32) overrides the choice, for tuning.
int64_t spmv_lanes(int64_t mean_row) {
    const int64_t forced = sr_setting("SPARSERING_SPMV_LANES", 0);
    if (forced >= 2 && forced <= 32)
        return forced;
    return mean_row; // a group reads a whole typical row: full 32-byte sectors (measured best on H100)
}

template <class Ops, int G> sr_status launch_spmv_rows(const product_args<Ops> &p, cudaStream_t s) {
    if constexpr (is_user_ops<Ops>)
        return launch_user(user_kernel_name("spmv_rows", {G}), grid_for(p.nrows * G), kBlock, s, p);
    else
        spmv_rows<Ops, G><<<grid_for(p.nrows * G), kBlock, 0, s>>>(p);
    return SR_SUCCESS;
}

template <class Ops, int G> sr_status launch_spmm_rows(const product_args<Ops> &p, cudaStream_t s) {
    if constexpr (is_user_ops<Ops>)
        return launch_user(user_kernel_name("spmm_rows", {G}), grid_for(p.nrows * G), kBlock, s, p);
    else
        spmm_rows<Ops, G><<<grid_for(p.nrows * G), kBlock, 0, s>>>(p);
    return SR_SUCCESS;
}

template <class Ops, int G> sr_status launch_spmm_rows_vec(const product_args<Ops> &p, bool store_vec, cudaStream_t s) {
    if constexpr (is_user_ops<Ops>)
        return launch_user(user_kernel_name("spmm_rows_vec", {G}), grid_for(p.nrows * G), kBlock, s, p, store_vec);
    else
        spmm_rows_vec<Ops, G><<<grid_for(p.nrows * G), kBlock, 0, s>>>(p, store_vec);
    return SR_SUCCESS;
}

// The name expressions of the kernels spmm_launcher<user_ops<T>> may launch for an SpMV (one
// column) or an SpMM (V: kVec<T>): a program each, so a first SpMV compiles only its own nine.
std::vector<std::string> user_product_kernels(bool spmv, int V) {
    std::vector<std::string> names = {user_kernel_name("combine_chunks", {})};
    if (spmv) {
        for (const char *k : {"spmv_chunks", "spmv_split", "spmv_split_fixup"})
            names.push_back(user_kernel_name(k, {}));
        for (int G : {2, 4, 8, 16, 32})
            names.push_back(user_kernel_name("spmv_rows", {G}));
        return names;
    }
    for (int G : {8, 16, 32}) {
        names.push_back(user_kernel_name("spmm_rows", {G}));
        names.push_back(user_kernel_name("spmm_chunks", {G}));
        names.push_back(user_kernel_name("spmm_mid_rows", {G, 1}));
        if (V > 1) {
            names.push_back(user_kernel_name("spmm_rows_vec", {G}));
            names.push_back(user_kernel_name("spmm_mid_rows", {G, V}));
        }
    }
    return names;
}

// dst (cols x rows, leading dimension dst_ld) = src (rows x cols, leading dimension src_ld)^T,
// through 32 x 33 shared-memory tiles (the padding column avoids bank conflicts).
template <typename T>
__global__ void transpose_tiles(const T *src, int64_t rows, int64_t cols, int64_t src_ld, T *dst, int64_t dst_ld) {
    __shared__ T tile[32][33];
    const int64_t tiles_c = (cols + 31) / 32, tiles = ((rows + 31) / 32) * tiles_c;
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const int64_t r0 = (t / tiles_c) * 32, c0 = (t % tiles_c) * 32;
        for (int y = threadIdx.y; y < 32; y += blockDim.y)
            if (r0 + y < rows && c0 + threadIdx.x < cols)
                tile[y][threadIdx.x] = src[(r0 + y) * src_ld + c0 + threadIdx.x];
        __syncthreads();
        for (int y = threadIdx.y; y < 32; y += blockDim.y)
            if (c0 + y < cols && r0 + threadIdx.x < rows)
                dst[(c0 + y) * dst_ld + r0 + threadIdx.x] = tile[threadIdx.x][y];
        __syncthreads();
    }
}

template <typename T>
sr_status transpose_dense(const T *src, int64_t rows, int64_t cols, int64_t src_ld, T *dst, int64_t dst_ld,
                          cudaStream_t stream) {
    if (rows == 0 || cols == 0)
        return SR_SUCCESS;
    const int64_t tiles = ((rows + 31) / 32) * ((cols + 31) / 32);
    const unsigned grid = (unsigned)(tiles < 65535 * 16 ? tiles : 65535 * 16);
    transpose_tiles<T><<<grid, dim3(32, 8), 0, stream>>>(src, rows, cols, src_ld, dst, dst_ld);
    SR_CUDA_LAUNCHED();
    return SR_SUCCESS;
}

// The same for elements of `type`, whatever the kernel's value type: B is bool under plus_pair and
// any_pair while the output is int32 or float (read as the output's type, a bool B was read 4-8
// times past its end: compute-sanitizer memcheck on test_products, H200).
sr_status transpose_typed(sr_type type, const void *src, int64_t rows, int64_t cols, int64_t src_ld, void *dst,
                          int64_t dst_ld, cudaStream_t stream) {
    switch (sr_type_size(type)) {
    case 1:
        return transpose_dense(static_cast<const uint8_t *>(src), rows, cols, src_ld, static_cast<uint8_t *>(dst),
                               dst_ld, stream);
    case 4:
        return transpose_dense(static_cast<const uint32_t *>(src), rows, cols, src_ld, static_cast<uint32_t *>(dst),
                               dst_ld, stream);
    case 8:
        return transpose_dense(static_cast<const uint64_t *>(src), rows, cols, src_ld, static_cast<uint64_t *>(dst),
                               dst_ld, stream);
    default:
        return sr_error(SR_ERROR_INTERNAL, "transpose: elements of %zu bytes", sr_type_size(type));
    }
}

template <class Ops> struct spmm_launcher {
    using T = typename Ops::value;
    // Column-major B or C (more than one column): the kernels read B rows and write C rows, so
    // large such operands go through row-major scratch (B transposed in; C transposed out, and in
    // when its old values matter); small ones are read and written in place, strided.
    static sr_status run(const sr_matrix_s *A, const sr_dense *B, const sr_dense *C, const sr_matrix_s *mask,
                         bool complement, bool accumulate, const spmv_plan *plan, bool queued = false) {
        sr_context_s *ctx = A->ctx;
        cudaStream_t stream = stream_of(ctx);
        const int64_t K = C->ncols;
        const bool b_cols = K > 1 && B->layout == SR_COL_MAJOR, c_cols = K > 1 && C->layout == SR_COL_MAJOR;
        // For a few columns (K <= 16) held in L2 (50 MB on an H100), strided access costs less than
        // the two transposes; from K = 32 on, the transposes win even on small graphs (measured with
        // bench_products.py on debian-depends and pushpull, 2026-11-23).
        const size_t dense_bytes = ((size_t)B->nrows + (size_t)C->nrows) * (size_t)K * sizeof(T);
        if ((!b_cols && !c_cols) || (K <= 16 && dense_bytes <= ((size_t)24 << 20))) {
            SR_TRY(run_row_major(A, B, C, mask, complement, accumulate, plan));
            if (!queued) // queued (a solver's step): the next call on the stream reads C in order
                SR_CUDA_TRY(sr_cuda::wait_stream(stream));
            return SR_SUCCESS;
        }
        buffer<unsigned char> b_rows(ctx); // B's own type: bool under the pair semirings
        buffer<T> c_rows(ctx);
        sr_dense b = *B, c = *C;
        if (b_cols) {
            SR_TRY(b_rows.allocate((size_t)B->nrows * (size_t)K * sr_type_size(B->type)));
            SR_TRY(transpose_typed(B->type, B->data, K, B->nrows, B->ld, b_rows.get(), K, stream));
            b = sr_dense_view(b_rows.get(), B->nrows, K, B->type, SR_ROW_MAJOR, SR_DEVICE);
        }
        if (c_cols) {
            SR_TRY(c_rows.allocate((size_t)C->nrows * (size_t)K));
            if (accumulate || mask)
                SR_TRY(transpose_dense<T>(static_cast<const T *>(C->data), K, C->nrows, C->ld, c_rows.get(), K, stream));
            c = sr_dense_view(c_rows.get(), C->nrows, K, C->type, SR_ROW_MAJOR, SR_DEVICE);
        }
        SR_TRY(run_row_major(A, &b, &c, mask, complement, accumulate, nullptr));
        if (c_cols)
            SR_TRY(transpose_dense<T>(c_rows.get(), C->nrows, K, K, static_cast<T *>(C->data), C->ld, stream));
        SR_CUDA_TRY(sr_cuda::wait_stream(stream)); // once, after the last kernel: C is ready on return
        return SR_SUCCESS;
    }

    // The chunk kernel (G lanes a chunk) and the mid-row kernel (groups of M lanes, reading B as
    // vectors when kVectors), when A has such rows.
    template <int G, int M = G, bool kVectors = false>
    static sr_status launch_mid_and_long(const product_args<Ops> &p, cudaStream_t stream) {
        SR_CUDA_LAUNCHED(); // the short-row kernel before
        if (p.plan.n_chunks > 0) {
            // G lanes walk a chunk's 1024 entries once for G columns (vectors would give fewer lanes
            // the same walk: no shorter)
            if constexpr (is_user_ops<Ops>)
                SR_TRY(launch_user(user_kernel_name("spmm_chunks", {G}), grid_for(p.plan.n_chunks * G), kBlock,
                                   stream, p));
            else
                spmm_chunks<Ops, G><<<grid_for(p.plan.n_chunks * G), kBlock, 0, stream>>>(p);
            SR_CUDA_LAUNCHED();
        }
        if (p.plan.n_mid > 0) {
            // a block per mid row, a few waves' worth at most
            const int64_t blocks = std::min<int64_t>(p.plan.n_mid, 8 * sm_count());
            constexpr int V = kVectors ? kVec<T> : 1;
            if constexpr (is_user_ops<Ops>)
                SR_TRY(launch_user(user_kernel_name("spmm_mid_rows", {M, V}), (unsigned)blocks, kBlock, stream, p));
            else
                spmm_mid_rows<Ops, M, V><<<(unsigned)blocks, kBlock, 0, stream>>>(p);
            SR_CUDA_LAUNCHED();
        }
        return SR_SUCCESS;
    }

    static sr_status run_row_major(const sr_matrix_s *A, const sr_dense *B, const sr_dense *C, const sr_matrix_s *mask,
                                   bool complement, bool accumulate, const spmv_plan *plan) {
        sr_context_s *ctx = A->ctx;
        cudaStream_t stream = stream_of(ctx);
        const int64_t K = C->ncols, nrows = A->nrows;
        product_args<Ops> p{};
        p.rowptr = A->rowptr;
        p.colind = A->colind;
        p.values = Ops::reads_values ? static_cast<const T *>(A->values) : nullptr;
        p.nrows = nrows;
        p.ncols_out = K;
        dense_ref<T> b = ref_of<T>(B);
        p.B = {b.base, b.row_stride, b.col_stride};
        p.C = ref_of<T>(C);
        p.mask = mask ? mask_view{mask->rowptr, mask->colind, complement} : mask_view{};
        p.accumulate = accumulate;
        if (nrows == 0 || K == 0)
            return SR_SUCCESS;
        if (K == 1 && plan) {
            if constexpr (is_user_ops<Ops>) { // the plain split kernel: the slots' kernel is plus_times's
                spmv_plan plain = *plan;
                plain.slots = 0;
                return run_spmv_split(p, A->nnz, ctx, stream, plain);
            } else {
                return run_spmv_split(p, A->nnz, ctx, stream, *plan);
            }
        }

        // Which rows are mid (SpMM only) and long comes from A's cached plan: no scan, no round trip,
        // and only the kernels these rows need.
        SR_TRY(row_plan_of(A, row_classes{K == 1 ? kLongRow : kMidRow, kLongRow, kChunk}, &p.plan));
        buffer<T> partials(ctx);
        if (p.plan.n_chunks > 0)
            SR_TRY(partials.allocate((size_t)p.plan.n_chunks * (size_t)K));
        p.partials = partials.get();

        if (K == 1) {
            // Lanes per row: about the mean row length, 2 to 32.
            const int64_t lanes = spmv_lanes(A->nnz / nrows);
            if (lanes <= 2) SR_TRY((launch_spmv_rows<Ops, 2>(p, stream)));
            else if (lanes <= 4) SR_TRY((launch_spmv_rows<Ops, 4>(p, stream)));
            else if (lanes <= 8) SR_TRY((launch_spmv_rows<Ops, 8>(p, stream)));
            else if (lanes <= 16) SR_TRY((launch_spmv_rows<Ops, 16>(p, stream)));
            else SR_TRY((launch_spmv_rows<Ops, 32>(p, stream)));
            SR_CUDA_LAUNCHED();
            if (p.plan.n_chunks > 0) {
                if constexpr (is_user_ops<Ops>)
                    SR_TRY(launch_user(user_kernel_name("spmv_chunks", {}), grid_for(p.plan.n_chunks * 32), kBlock,
                                       stream, p));
                else
                    spmv_chunks<Ops><<<grid_for(p.plan.n_chunks * 32), kBlock, 0, stream>>>(p);
            }
        } else if (K <= 8) {
            SR_TRY((launch_spmm_rows<Ops, 8>(p, stream)));
            SR_TRY(launch_mid_and_long<8>(p, stream));
        } else if (K <= 16) {
            SR_TRY((launch_spmm_rows<Ops, 16>(p, stream)));
            SR_TRY(launch_mid_and_long<16>(p, stream));
        } else if (rows_of_vectors<T>(p.B, K)) {
            if constexpr (kVec<T> > 1) {
                const dense_ref<const T> c{p.C.base, p.C.row_stride, p.C.col_stride};
                const bool store_vec = !mask && rows_of_vectors<T>(c, K);
                const int64_t lanes = K / kVec<T>; // > 4: K > 16
                if (lanes <= 8) {
                    SR_TRY((launch_spmm_rows_vec<Ops, 8>(p, store_vec, stream)));
                    SR_TRY((launch_mid_and_long<32, 8, true>(p, stream)));
                } else if (lanes <= 16) {
                    SR_TRY((launch_spmm_rows_vec<Ops, 16>(p, store_vec, stream)));
                    SR_TRY((launch_mid_and_long<32, 16, true>(p, stream)));
                } else {
                    SR_TRY((launch_spmm_rows_vec<Ops, 32>(p, store_vec, stream)));
                    SR_TRY((launch_mid_and_long<32, 32, true>(p, stream)));
                }
            }
        } else {
            SR_TRY((launch_spmm_rows<Ops, 32>(p, stream)));
            SR_TRY(launch_mid_and_long<32>(p, stream));
        }
        SR_CUDA_LAUNCHED();
        if (p.plan.n_chunks > 0) {
            if constexpr (is_user_ops<Ops>)
                SR_TRY(launch_user(user_kernel_name("combine_chunks", {}), grid_for(p.plan.n_long * K), kBlock, stream,
                                   p));
            else
                combine_chunks<Ops><<<grid_for(p.plan.n_long * K), kBlock, 0, stream>>>(p);
            SR_CUDA_LAUNCHED();
        }
        return SR_SUCCESS; // queued on the stream; run() waits once for everything

    }
};

// The hot kernel's room for slots, for the plan's analysis (plus_times on A's type).
template <class Ops> struct hot_room {
    static sr_status run(size_t *bytes) {
        *bytes = hot_slot_bytes<Ops>();
        return SR_SUCCESS;
    }
};

} // namespace

namespace sr_cuda {

int64_t spmv_split_tile_count(const sr_matrix_s *A) { return (A->nnz + kSplitTile - 1) / kSplitTile; }

// a long span has more than kSerialFixup * kSplitTile entries
int64_t spmv_long_spans_room(const sr_matrix_s *A) { return A->nnz / (kSerialFixup * kSplitTile) + 1; }

sr_status spmv_split_tiles(const sr_matrix_s *A, int64_t *first_row, int64_t *spans, int64_t *n_spans) {
    cudaStream_t stream = stream_of(A->ctx);
    split_first_rows<<<grid_for(A->nrows + 1), kBlock, 0, stream>>>(A->rowptr, A->nrows, spmv_split_tile_count(A),
                                                                    first_row);
    SR_CUDA_LAUNCHED();
    buffer<unsigned long long> count(A->ctx);
    SR_TRY(count.allocate(1));
    SR_CUDA_TRY(cudaMemsetAsync(count.get(), 0, sizeof(unsigned long long), stream));
    find_long_spans<<<grid_for(A->nrows), kBlock, 0, stream>>>(A->rowptr, A->nrows, spans, count.get());
    SR_CUDA_LAUNCHED();
    unsigned long long found = 0;
    SR_CUDA_TRY(cudaMemcpyAsync(&found, count.get(), sizeof found, cudaMemcpyDeviceToHost, stream));
    SR_CUDA_TRY(sr_cuda::wait_stream(stream));
    *n_spans = (int64_t)found;
    return SR_SUCCESS;
}

bool spmv_runs_split(const sr_matrix_s *A) { return A->nrows > 0 && spmv_use_split(A->nrows, A->nnz); }

size_t spmv_hot_slot_bytes(sr_type type) {
    size_t bytes = 0;
    return dispatch_semiring<hot_room>(SR_PLUS_TIMES, type, &bytes) == SR_SUCCESS ? bytes : 0;
}

sr_status spmv_with_plan(const sr_matrix_s *A, const sr_dense *x, const sr_dense *y, const spmv_plan *plan) {
    return dispatch_semiring<spmm_launcher>(SR_PLUS_TIMES, y->type, A, x, y, nullptr, false, false, plan);
}

} // namespace sr_cuda

// A user semiring's product: its program (compiled on first use), then the built-ins' launcher.
static sr_status user_spmm(const sr_user_semiring *u, const sr_matrix_s *A, const sr_dense *B, const sr_dense *C,
                           const sr_matrix_s *mask, bool complement, bool accumulate, bool queued) {
    const int V = C->type == SR_TYPE_FLOAT64 ? kVec<double> : C->type == SR_TYPE_FLOAT32 ? kVec<float> : kVec<int32_t>;
    jit_program *program = nullptr;
    SR_TRY(user_program(u, user_product_kernels(C->ncols == 1, V), &program));
    user_program_scope scope(program);
    const spmv_plan *plan = nullptr; // SpMV's split kernel, as the built-ins'
    if (C->ncols == 1 && spmv_runs_split(A))
        SR_TRY(spmv_plan_for_call(A, &plan));
    switch (C->type) {
    case SR_TYPE_INT32:
        return spmm_launcher<user_ops<int32_t>>::run(A, B, C, mask, complement, accumulate, plan, queued);
    case SR_TYPE_FLOAT32:
        return spmm_launcher<user_ops<float>>::run(A, B, C, mask, complement, accumulate, plan, queued);
    case SR_TYPE_FLOAT64:
        return spmm_launcher<user_ops<double>>::run(A, B, C, mask, complement, accumulate, plan, queued);
    default:
        return sr_error(SR_ERROR_INTERNAL, "a user semiring on %s values", sr_type_name(C->type));
    }
}

extern "C" sr_status sr_cuda_user_compile_check(sr_semiring s, int arch, size_t *cubin_bytes) {
    const sr_user_semiring *u = sr_user_semiring_of((int)s);
    if (!u)
        return sr_error(SR_ERROR_INVALID_ARGUMENT, "sr_cuda_user_compile_check: %d is not a user semiring", (int)s);
    const int V = u->def.type == SR_TYPE_FLOAT64 ? kVec<double> : kVec<float>;
    std::vector<std::string> lowered;
    size_t spmv_bytes = 0, spmm_bytes = 0;
    std::vector<std::string> spmv_and_fills = user_product_kernels(true, V);
    for (const char *fill : {"fill_tiles", "kron_fill", "reduce_fill"}) // cuda_ewise.cu's, cuda_structure.cu's
        spmv_and_fills.push_back(user_kernel_name(fill, {}));
    spmv_and_fills.push_back(user_kernel_name("sddmm_interleaved", {1, 32, 0})); // cuda_sddmm.cu's
    for (int team : {32, kMxmBlock}) // cuda_mxm.cu's user_mxm
        spmv_and_fills.push_back(user_kernel_name("ordered_values", {team}));
    SR_TRY(jit_compile_only(u->def.name, user_source(&u->def), spmv_and_fills, arch, &spmv_bytes, &lowered));
    SR_TRY(jit_compile_only(u->def.name, user_source(&u->def), user_product_kernels(false, V), arch, &spmm_bytes,
                            &lowered));
    *cubin_bytes = spmv_bytes + spmm_bytes;
    return SR_SUCCESS;
}

extern "C" sr_status sr_cuda_spmm(const sr_matrix_s *A, const sr_dense *B, const sr_dense *C, const sr_matrix_s *mask,
                                  sr_semiring s, bool complement, bool accumulate, bool queued) {
    device_guard guard(A->ctx->device);
    if (const sr_user_semiring *u = sr_user_semiring_of((int)s))
        return user_spmm(u, A, B, C, mask, complement, accumulate, queued);
    // a plan serves SpMV's split kernel only
    const spmv_plan *plan = nullptr;
    if (C->ncols == 1 && spmv_runs_split(A))
        SR_TRY(spmv_plan_for_call(A, &plan));
    return dispatch_semiring<spmm_launcher>(s, C->type, A, B, C, mask, complement, accumulate, plan, queued);
}

extern "C" sr_status sr_cuda_dense_row_major(sr_context_s *ctx, const sr_dense *d, void *out) {
    device_guard guard(ctx->device);
    cudaStream_t stream = stream_of(ctx);
    // a column-major view is its transpose stored row-major: ncols rows of nrows, ld apart
    SR_TRY(transpose_typed(d->type, d->data, d->ncols, d->nrows, d->ld, out, d->ncols, stream));
    SR_CUDA_TRY(sr_cuda::wait_stream(stream));
    return SR_SUCCESS;
}
