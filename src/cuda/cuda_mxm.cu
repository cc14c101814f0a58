// Sparse x sparse semiring product on the device, in two passes over the same kernels: a count
// pass sizes each output row, a fill pass writes it.
//
// Rows are binned by their product count's upper bound ub (sum of the B-row lengths they touch):
//   ub <= 64 / 128, <= 32 A entries  a warp per row, the products sorted in registers (ESC)
//   2·ub <= 128 / 256 / 512 / 1024   a warp per row, a hash table of that many slots in shared memory
//                                    (measured: 8 or 16 lanes per small row were 1.3-1.4x slower)
//   2·ub <= 4096 / 16384             a block per row, a table in Hopper's large shared memory
//   larger      a column bitmap and a value array (compaction in column order needs no sort): a
//               block per row in shared memory a column tile at a time, or a whole row in device
//               memory, its A entries split over several blocks (cuda_mxm_dense.cuh says which
//               suits which row)
// The rows are grouped by bin in one array, a counting sort (cuda_mxm_binning.cuh).
// The fill pass compacts a table's occupied slots and merge-sorts them in registers (cub's warp
// and block merge sorts, their scratch in the table's own memory).
// ⊕ uses native atomics where the hardware has them, else a compare-and-swap loop, so every
// semiring and type works the same way. On a deterministic context the float sums of every row
// are added in A-entry order by a pass of their own instead (cuda_mxm_ordered.cuh).
// A user semiring's product is the built-in structural product's pattern with every row's values
// from that pass, compiled by NVRTC with the user's operators (user_mxm below).
#include "cuda_atomic.cuh"
#include "cuda_mxm_ordered.cuh"
#include "cuda_semiring.cuh"
#include "cuda_user.cuh"

#include <cub/cub.cuh>

#include <algorithm>
#include <utility>
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern "C" {
#include "../core/types.h"
#include "cuda.h"
}

namespace {

using namespace sr_cuda;

constexpr int kBlock = kMxmBlock;
// Hash bins: the team that takes a row and its table's slots; a row goes to the first bin whose
// table holds twice its product bound, and rows beyond the last go to the dense bin. Shared
// memory is reserved for a bin's largest table, so small tables in their own bins let more
// blocks stay resident on each multiprocessor.
struct hash_bin {
    int team, table;
};
constexpr hash_bin kHashBins[] = {{32, 128}, {32, 256}, {32, 512}, {32, 1024}, {kBlock, 4096}, {kBlock, 16384}};
constexpr int kHashBinCount = sizeof kHashBins / sizeof kHashBins[0];
constexpr int kBinDense = kHashBinCount, kBinTiled = kHashBinCount + 1, kBinEscSmall = kHashBinCount + 2,
              kBinEscLarge = kHashBinCount + 3, kBins = kHashBinCount + 4;
constexpr int kDenseThreads = 1024; // the block of a tiled dense row, and of a global one's drain

template <int B = 0> __device__ inline int bin_of(int64_t ub) {
    if constexpr (B == kHashBinCount)
        return kBinDense;
    else
        return 2 * ub <= kHashBins[B].table ? B : bin_of<B + 1>(ub);
}

// The first hash bin whose team is `team` threads (the bins' teams only grow).
constexpr int first_bin_of_team(int team, int b = 0) {
    return b == kHashBinCount || kHashBins[b].team == team ? b : first_bin_of_team(team, b + 1);
}

#include "cuda_mxm_rows.cuh"
#include "cuda_mxm_dense.cuh"
#include "cuda_mxm_esc.cuh"
#include "cuda_mxm_binning.cuh"

// Whether the order of a row's products changes the bits: float sums. min and max pick the same
// value in any order, and integer sums are exact.
template <class Ops> constexpr bool order_changes_bits() {
    return std::is_floating_point_v<typename Ops::value> && Ops::add_kind == SR_ADD_OP_PLUS;
}

// What ordered_values reads of a product's arguments.
template <class Ops> ordered_args<typename Ops::value> ordered_args_of(const mxm_args<Ops> &p) {
    return {p.a_rowptr, p.a_colind, p.a_values, p.b_rowptr, p.b_colind, p.b_values, p.c_rowptr, p.c_colind, p.c_values};
}

// SPARSERING_MXM_ESC=0 sends the smallest rows to the hash bins instead, for comparison and tests
// (read at every product).
bool esc_enabled() { return sr_setting("SPARSERING_MXM_ESC", 1) != 0; }

template <typename T> __global__ void fill_value(T *data, size_t n, T value) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        data[i] = value;
}

// SPARSERING_PROFILE=1: per-phase device times and bin sizes of each product, on stderr.
struct phase_timer {
    bool on = getenv("SPARSERING_PROFILE") != nullptr;
    cudaStream_t stream;
    cudaEvent_t last{};
    explicit phase_timer(cudaStream_t s) : stream(s) {
        if (on) {
            cudaEventCreate(&last);
            cudaEventRecord(last, stream);
        }
    }
    void mark(const char *phase) {
        if (!on)
            return;
        cudaEvent_t now;
        cudaEventCreate(&now);
        cudaEventRecord(now, stream);
        cudaEventSynchronize(now);
        float ms = 0;
        cudaEventElapsedTime(&ms, last, now);
        fprintf(stderr, "  [mxm] %-22s %8.3f ms\n", phase, ms);
        cudaEventDestroy(last);
        last = now;
    }
    void mark(int team, int table, bool fill) {
        if (!on)
            return;
        char phase[48];
        snprintf(phase, sizeof phase, "%s: %d lanes, %d slots", fill ? "fill" : "count", team, table);
        mark(phase);
    }
    ~phase_timer() {
        if (on)
            cudaEventDestroy(last);
    }
};

// Streams and events for running the bins concurrently; released with the scope.
// A stream for each bin that has rows, when two or more have: a product whose rows all fall in
// one bin (small ones mostly) creates none, since making and destroying streams costs more than
// its kernels (a CFPQ round on a 200-vertex graph makes about ten products).
struct stream_set {
    cudaStream_t streams[kBins] = {};
    cudaEvent_t events[kBins + 1] = {};
    bool used = false;
    // The per-bin streams when forked, else null: the passes then run on the caller's stream.
    cudaStream_t *forked() { return used ? streams : nullptr; }
    sr_status create(const unsigned long long *sizes) {
        int busy = 0;
        for (int b = 0; b < kBins; b++)
            busy += sizes[b] > 0;
        if (busy < 2)
            return SR_SUCCESS;
        used = true;
        for (int b = 0; b < kBins; b++)
            if (sizes[b] > 0)
                SR_CUDA_TRY(cudaStreamCreateWithFlags(&streams[b], cudaStreamNonBlocking));
        for (int e = 0; e <= kBins; e++)
            SR_CUDA_TRY(cudaEventCreateWithFlags(&events[e], cudaEventDisableTiming));
        return SR_SUCCESS;
    }
    ~stream_set() {
        for (cudaStream_t s : streams)
            if (s)
                cudaStreamDestroy(s);
        for (cudaEvent_t e : events)
            if (e)
                cudaEventDestroy(e);
    }
};

template <class Ops> struct mxm_launcher {
    using T = typename Ops::value;

    template <int TEAM, int TABLE, bool FILL>
    static sr_status launch_hash(const mxm_args<Ops> &p, const int64_t *rows, const unsigned long long *count,
                                 int64_t nrows, cudaStream_t stream) {
        constexpr int teams = kBlock / TEAM;
        constexpr size_t smem = (sizeof(T) + 4) * (size_t)TABLE * teams + 4 * teams;
        if (smem > 48 * 1024)
            SR_CUDA_TRY(cudaFuncSetAttribute(hash_rows<Ops, TEAM, TABLE, FILL>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        hash_rows<Ops, TEAM, TABLE, FILL><<<grid_for(nrows * TEAM), kBlock, smem, stream>>>(p, rows, count);
        SR_CUDA_LAUNCHED();
        return SR_SUCCESS;
    }

    template <bool FILL, size_t... B>
    static sr_status launch_hash_bins(const mxm_args<Ops> &p, const int64_t *bins,
                                      const unsigned long long *bin_sizes, const unsigned long long *sizes,
                                      const bin_starts &starts, const cudaStream_t *on, phase_timer &timer,
                                      std::index_sequence<B...>) {
        sr_status st = SR_SUCCESS;
        auto one = [&](auto bin) {
            constexpr int b = decltype(bin)::value;
            if (st == SR_SUCCESS && sizes[b])
                st = launch_hash<kHashBins[b].team, kHashBins[b].table, FILL>(p, bins + starts.at[b], bin_sizes + b,
                                                                              (int64_t)sizes[b], on[b]);
            timer.mark(kHashBins[b].team, kHashBins[b].table, FILL);
        };
        (one(std::integral_constant<int, (int)B>{}), ...);
        return st;
    }

    // An ESC bin's rows (ITEMS products a lane), a warp each.
    template <bool FILL, int ITEMS>
    static sr_status launch_esc(const mxm_args<Ops> &p, const int64_t *bins, const unsigned long long *bin_sizes,
                                const unsigned long long *sizes, const bin_starts &starts, int bin,
                                const cudaStream_t *on, phase_timer &timer) {
        if (sizes[bin] > 0) {
            esc_rows<Ops, FILL, ITEMS><<<grid_for((int64_t)sizes[bin] * 32), kBlock, 0, on[bin]>>>(
                p, bins + starts.at[bin], bin_sizes + bin);
            SR_CUDA_LAUNCHED();
        }
        char phase[32];
        snprintf(phase, sizeof phase, "%s: esc, %d", FILL ? "fill" : "count", 32 * ITEMS);
        timer.mark(phase);
        return SR_SUCCESS;
    }

    // A deterministic context's values (cuda_mxm_ordered.cuh), after the fill pass wrote the
    // pattern: the warp-table bins and the ESC bins a warp a row, the rest a block a row.
    static sr_status fill_ordered_values(const mxm_args<Ops> &p, const int64_t *bins, const bin_starts &starts,
                                         const unsigned long long *sizes, cudaStream_t stream) {
        constexpr int first_block_bin = first_bin_of_team(kBlock);
        const int64_t warp_rows = starts.at[first_block_bin] - starts.at[0];
        const int64_t block_rows = starts.at[kBinEscSmall] - starts.at[first_block_bin];
        const int64_t esc_rows = (int64_t)(sizes[kBinEscSmall] + sizes[kBinEscLarge]); // adjacent bins
        static_assert(kBinEscLarge == kBinEscSmall + 1, "the ESC bins' rows lie together");
        for (const auto &[first, rows] : {std::pair<int64_t, int64_t>{starts.at[0], warp_rows},
                                          std::pair<int64_t, int64_t>{starts.at[kBinEscSmall], esc_rows}})
            if (rows > 0) {
                ordered_values<Ops, 32><<<grid_for(rows * 32), kBlock, 0, stream>>>(ordered_args_of(p), bins + first, rows);
                SR_CUDA_LAUNCHED();
            }
        if (block_rows > 0) {
            ordered_values<Ops, kBlock><<<grid_for(block_rows * kBlock), kBlock, 0, stream>>>(
                ordered_args_of(p), bins + starts.at[first_block_bin], block_rows);
            SR_CUDA_LAUNCHED();
        }
        return SR_SUCCESS;
    }

    // The bins are independent: each runs on its own stream, forked from and joined back
    // into the context's stream, so a pass costs about its slowest bin rather than their sum.
    template <bool FILL>
    static sr_status run_pass(const mxm_args<Ops> &p, const int64_t *bins, const unsigned long long *bin_sizes,
                              const unsigned long long *sizes, const bin_starts &starts, int dense_blocks, uint32_t *bitmaps,
                              T *dense_vals, int64_t tile, cudaStream_t stream, phase_timer &timer, const cudaStream_t *lanes,
                              cudaEvent_t *events) {
        if (timer.on) // profiling: one bin after another on the main stream, each timed
            lanes = nullptr;
        cudaStream_t on[kBins];
        for (int b = 0; b < kBins; b++)
            on[b] = lanes && lanes[b] ? lanes[b] : stream;
        if (lanes) {
            SR_CUDA_TRY(cudaEventRecord(events[kBins], stream));
            for (int b = 0; b < kBins; b++)
                if (lanes[b])
                    SR_CUDA_TRY(cudaStreamWaitEvent(lanes[b], events[kBins], 0));
        }
        SR_TRY((launch_esc<FILL, kEscSmallItems>(p, bins, bin_sizes, sizes, starts, kBinEscSmall, on, timer)));
        SR_TRY((launch_esc<FILL, kEscLargeItems>(p, bins, bin_sizes, sizes, starts, kBinEscLarge, on, timer)));
        SR_TRY(launch_hash_bins<FILL>(p, bins, bin_sizes, sizes, starts, on, timer,
                                      std::make_index_sequence<kHashBinCount>{}));
        // Global dense rows: waves of dense_blocks rows (one accumulator row each), each row's A
        // entries split so that a wave has about four blocks per multiprocessor.
        for (int64_t w0 = 0; dense_blocks > 0 && w0 < (int64_t)sizes[kBinDense]; w0 += dense_blocks) {
            const int wave = (int)std::min<int64_t>(dense_blocks, (int64_t)sizes[kBinDense] - w0);
            const int splits = std::clamp((4 * sm_count() + wave - 1) / wave, 1, 64);
            const int64_t *wave_rows = bins + starts.at[kBinDense] + w0;
            dense_global_scatter<Ops, FILL><<<dim3(wave, splits), kBlock, 0, on[kBinDense]>>>(p, wave_rows, bitmaps,
                                                                                             dense_vals);
            SR_CUDA_LAUNCHED();
            dense_global_drain<Ops, FILL><<<wave, kDenseThreads, 0, on[kBinDense]>>>(p, wave_rows, bitmaps, dense_vals);
            SR_CUDA_LAUNCHED();
        }
        timer.mark(FILL ? "fill: dense, global" : "count: dense, global");
        if (sizes[kBinTiled] > 0) {
            constexpr bool values = tile_has_values<Ops>(FILL);
            if (!values) // counting: bitmap tiles, wider than the fill's
                tile = dense_tile<Ops>(p.ncols, false);
            const size_t smem = dense_tile_bytes<Ops>(tile, values);
            SR_CUDA_TRY(cudaFuncSetAttribute(dense_rows_tiled<Ops, FILL>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             (int)smem));
            int per_sm = 1;
            SR_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, dense_rows_tiled<Ops, FILL>,
                                                                      kDenseThreads, smem));
            const int blocks = (int)std::min<unsigned long long>(sizes[kBinTiled],
                                                                 (unsigned long long)sm_count() * std::max(per_sm, 1));
            dense_rows_tiled<Ops, FILL><<<blocks, kDenseThreads, smem, on[kBinTiled]>>>(
                p, bins + starts.at[kBinTiled], bin_sizes + kBinTiled, tile);
            SR_CUDA_LAUNCHED();
        }
        timer.mark(FILL ? "fill: dense, tiled" : "count: dense, tiled");
        if (lanes)
            for (int b = 0; b < kBins; b++)
                if (lanes[b]) {
                    SR_CUDA_TRY(cudaEventRecord(events[b], lanes[b]));
                    SR_CUDA_TRY(cudaStreamWaitEvent(stream, events[b], 0));
                }
        return SR_SUCCESS;
    }

    static sr_status run(sr_context_s *ctx, const sr_matrix_s *A, const sr_matrix_s *B, const sr_matrix_s *mask,
                         bool complement, sr_type out_type, sr_matrix_s **out) {
        cudaStream_t stream = stream_of(ctx);
        const int64_t nrows = A->nrows, ncols = B->ncols;
        if (nrows >= (int64_t)UINT32_MAX)
            return sr_error(SR_ERROR_UNSUPPORTED, "sr_mxm on the device supports fewer than 2^32 rows");
        mxm_args<Ops> p{};
        p.a_rowptr = A->rowptr;
        p.a_colind = A->colind;
        p.a_values = static_cast<const T *>(A->values);
        p.b_rowptr = B->rowptr;
        p.b_colind = B->colind;
        p.b_values = static_cast<const T *>(B->values);
        p.nrows = nrows;
        p.ncols = ncols;
        p.mask = mask ? mask_view{mask->rowptr, mask->colind, complement} : mask_view{};
        p.values_later = ctx->deterministic && order_changes_bits<Ops>();

        sr_matrix_s *C = nullptr;
        SR_TRY(sr_matrix_alloc(ctx, nrows, ncols, 0, out_type, SR_DEVICE, &C));
        auto fail = [&](sr_status s) {
            sr_matrix_destroy(C);
            return s;
        };
        // The rows grouped by bin (one entry each), and each bin's row count then its fill cursor.
        buffer<int64_t> bins(ctx);
        buffer<unsigned long long> bin_sizes(ctx);
        sr_status st = bins.allocate((size_t)(nrows ? nrows : 1));
        if (st == SR_SUCCESS)
            st = bin_sizes.allocate(2 * kBins);
        if (st != SR_SUCCESS)
            return fail(st);
        // counts live in C's rowptr[1..]: an in-place inclusive scan turns them into row pointers
        p.counts = C->rowptr + 1;
        phase_timer timer(stream);
        cudaError_t err = cudaMemsetAsync(bin_sizes.get(), 0, 2 * kBins * sizeof(unsigned long long), stream);
        if (err == cudaSuccess)
            err = cudaMemsetAsync(C->rowptr, 0, sizeof(int64_t), stream);
        if (err != cudaSuccess)
            return fail(sr_cuda_fail(err, "mxm setup", __FILE__, __LINE__));
        const int64_t tile = dense_tile<Ops>(ncols), tiles = (ncols + tile - 1) / tile;
        if (nrows > 0) {
            bound_and_bin<<<grid_for(nrows * 32), kBlock, 0, stream>>>(A->rowptr, A->colind, B->rowptr, nrows, tiles,
                                                                        esc_enabled(), p.counts, bin_sizes.get());
            if ((err = cudaGetLastError()) != cudaSuccess)
                return fail(sr_cuda_fail(err, "bound_and_bin", __FILE__, __LINE__));
        }
        // How many rows each bin has (one small copy): empty bins launch nothing, and the global
        // dense bin gets only as many accumulator rows as it has rows (up to 2 per SM), within a
        // quarter of the workspace.
        unsigned long long sizes[kBins] = {};
        bin_starts starts{};
        if (nrows > 0) {
            err = cudaMemcpyAsync(sizes, bin_sizes.get(), sizeof sizes, cudaMemcpyDeviceToHost, stream);
            if (err == cudaSuccess)
                err = sr_cuda::wait_stream(stream);
            if (err != cudaSuccess)
                return fail(sr_cuda_fail(err, "mxm bin sizes", __FILE__, __LINE__));
            for (int b = 1; b < kBins; b++)
                starts.at[b] = starts.at[b - 1] + (int64_t)sizes[b - 1];
            group_by_bin<<<grid_for(nrows), kBlock, 0, stream>>>(p.counts, nrows, starts, bin_sizes.get() + kBins,
                                                                   bins.get());
            if ((err = cudaGetLastError()) != cudaSuccess)
                return fail(sr_cuda_fail(err, "group_by_bin", __FILE__, __LINE__));
        }
        timer.mark("bounds and bins");
        const bool with_values = out_type != SR_TYPE_BOOL && !p.values_later; // dense value rows needed
        const size_t words = (size_t)bitmap_words(ncols ? ncols : 1);
        const size_t row_bytes = words * sizeof(uint32_t) + (with_values ? (size_t)(ncols ? ncols : 1) * sizeof(T) : 0);
        const size_t budget = sr_context_workspace(ctx, SR_DEVICE) / 4;
        int dense_blocks = (int)std::min<unsigned long long>(sizes[kBinDense], (unsigned long long)(2 * sm_count()));
        dense_blocks = (int)std::min<size_t>((size_t)dense_blocks, budget / row_bytes);
        if (sizes[kBinDense] > 0 && dense_blocks < 1)
            return fail(sr_error(SR_ERROR_DEVICE_OUT_OF_MEMORY,
                                 "sr_mxm: one dense accumulator row of %lld columns (%zu bytes) exceeds the workspace",
                                 (long long)ncols, row_bytes));
        buffer<uint32_t> bitmaps(ctx);
        buffer<T> dense_vals(ctx);
        // The dense accumulators (cleared), in a wave of dense_blocks rows, or in smaller waves,
        // down to one row, when the device cannot hold it: the output is the only part of a
        // product that must fit whole.
        auto fit_wave = [&]() -> sr_status {
            sr_status got = SR_ERROR_DEVICE_OUT_OF_MEMORY;
            for (; dense_blocks > 0; dense_blocks /= 2) {
                got = bitmaps.allocate((size_t)dense_blocks * words);
                if (got == SR_SUCCESS && with_values)
                    got = dense_vals.allocate((size_t)dense_blocks * (size_t)ncols);
                if (got != SR_ERROR_DEVICE_OUT_OF_MEMORY || dense_blocks == 1)
                    break;
            }
            SR_TRY(got);
            SR_CUDA_TRY(cudaMemsetAsync(bitmaps.get(), 0, (size_t)dense_blocks * words * sizeof(uint32_t), stream));
            if (with_values) {
                const size_t cells = (size_t)dense_blocks * (size_t)ncols;
                fill_value<<<grid_for((int64_t)cells), kBlock, 0, stream>>>(dense_vals.get(), cells, Ops::identity());
                SR_CUDA_LAUNCHED();
            }
            return SR_SUCCESS;
        };
        if (dense_blocks > 0 && (st = fit_wave()) != SR_SUCCESS)
            return fail(st);

        stream_set lanes;
        if ((st = lanes.create(sizes)) != SR_SUCCESS)
            return fail(st);
        timer.mark("setup");
        if (timer.on) {
            fprintf(stderr, "  [mxm] rows per bin (table: rows): esc 64: %llu, esc 128: %llu", sizes[kBinEscSmall],
                    sizes[kBinEscLarge]);
            for (int b = 0; b < kHashBinCount; b++)
                fprintf(stderr, " %d: %llu", kHashBins[b].table, sizes[b]);
            fprintf(stderr, ", dense global: %llu, dense tiled: %llu (of %lld)\n", sizes[kBinDense], sizes[kBinTiled],
                    (long long)nrows);
        }
        if (nrows > 0 && (st = run_pass<false>(p, bins.get(), bin_sizes.get(), sizes, starts, dense_blocks, bitmaps.get(),
                                               nullptr, tile, stream, timer, lanes.forked(), lanes.events)) != SR_SUCCESS)
            return fail(st);
        size_t temp_bytes = 0;
        int64_t nnz = 0;
        if (nrows > 0) {
            cub::DeviceScan::InclusiveSum(nullptr, temp_bytes, p.counts, p.counts, nrows, stream);
            buffer<unsigned char> temp(ctx);
            if ((st = temp.allocate(temp_bytes)) != SR_SUCCESS)
                return fail(st);
            err = cub::DeviceScan::InclusiveSum(temp.get(), temp_bytes, p.counts, p.counts, nrows, stream);
            if (err == cudaSuccess)
                err = cudaMemcpyAsync(&nnz, C->rowptr + nrows, sizeof nnz, cudaMemcpyDeviceToHost, stream);
            if (err == cudaSuccess)
                err = sr_cuda::wait_stream(stream);
            if (err != cudaSuccess)
                return fail(sr_cuda_fail(err, "mxm row pointers", __FILE__, __LINE__));
        }
        timer.mark("scan");
        st = sr_matrix_alloc_entries(C, nnz);
        if (st == SR_ERROR_DEVICE_OUT_OF_MEMORY && dense_blocks > 0) { // the output first, then what waves fit beside it
            bitmaps.allocate(0);
            dense_vals.allocate(0);
            if ((st = sr_matrix_alloc_entries(C, nnz)) == SR_SUCCESS)
                st = fit_wave();
        }
        if (st != SR_SUCCESS)
            return fail(st);
        timer.mark("allocate C");
        p.c_rowptr = C->rowptr;
        p.c_colind = C->colind;
        p.c_values = static_cast<T *>(C->values);
        if (nrows > 0 && nnz > 0 &&
            (st = run_pass<true>(p, bins.get(), bin_sizes.get(), sizes, starts, dense_blocks, bitmaps.get(), dense_vals.get(),
                                 tile, stream, timer, lanes.forked(), lanes.events)) != SR_SUCCESS)
            return fail(st);
        if (nrows > 0 && nnz > 0 && p.values_later && (st = fill_ordered_values(p, bins.get(), starts, sizes, stream)) != SR_SUCCESS)
            return fail(st);
        timer.mark("fill: ordered values");
        if ((err = sr_cuda::wait_stream(stream)) != cudaSuccess)
            return fail(sr_cuda_fail(err, "sr_mxm", __FILE__, __LINE__));
        *out = C;
        return SR_SUCCESS;
    }
};

// The most products a row has that a warp takes (the largest warp hash bin's rows).
constexpr int64_t kWarpRowProducts = kHashBins[first_bin_of_team(kBlock) - 1].table / 2;

// A user semiring's rows for ordered_values: rows with no output entry drop; a row of at most 512
// products (the warp hash bins' rows) goes to the front of `rows` for a warp, a longer one to the
// back for a block. counts[0] and counts[1] count them.
__global__ void user_row_teams(const int64_t *a_rowptr, const int32_t *a_colind, const int64_t *b_rowptr,
                               const int64_t *c_rowptr, int64_t nrows, int64_t *rows, unsigned long long *counts) {
    const int lane = threadIdx.x % 32;
    for (int64_t row = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32; row < nrows;
         row += (int64_t)gridDim.x * blockDim.x / 32) {
        if (c_rowptr[row + 1] == c_rowptr[row])
            continue;
        const int64_t ub = row_bound(a_rowptr, a_colind, b_rowptr, row, lane);
        if (lane == 0) {
            const bool warp = ub <= kWarpRowProducts;
            const unsigned long long at = atomicAdd(&counts[warp ? 0 : 1], 1ull);
            rows[warp ? (int64_t)at : nrows - 1 - (int64_t)at] = row;
        }
    }
}

// A ⊕.⊗ B under a user semiring u of value type T: the pattern from the built-in structural
// product (any_pair, the same mask), then each row's values by ordered_values compiled with u's
// operators, a row's terms in A-entry order. So the answer's bits do not depend on the context's
// determinism, and a built-in written again gives the built-in's bits on a deterministic context.
template <typename T>
sr_status user_mxm(sr_context_s *ctx, const sr_user_semiring *u, const sr_matrix_s *A, const sr_matrix_s *B,
                   const sr_matrix_s *mask, bool complement, sr_matrix_s **out) {
    const std::string warp_kernel = user_kernel_name("ordered_values", {32});
    const std::string block_kernel = user_kernel_name("ordered_values", {kBlock});
    jit_program *program = nullptr;
    SR_TRY(user_program(u, {warp_kernel, block_kernel}, &program)); // a compile error before any work
    sr_matrix_s *C = nullptr;
    SR_TRY(mxm_launcher<ops_OR_PAIR_uint8_t>::run(ctx, A, B, mask, complement, SR_TYPE_BOOL, &C));
    auto fail = [&](sr_status s) {
        sr_matrix_destroy(C);
        return s;
    };
    // C takes values of T in place of the pattern's none (sr_matrix_destroy frees them by C's type)
    C->type = u->def.type;
    sr_status st = sr_mem_alloc_array(ctx, SR_DEVICE, (size_t)C->capacity, sizeof(T), &C->values);
    if (st != SR_SUCCESS || C->nnz == 0)
        return st == SR_SUCCESS ? (*out = C, SR_SUCCESS) : fail(st);
    const int64_t nrows = A->nrows;
    cudaStream_t stream = stream_of(ctx);
    buffer<int64_t> rows(ctx);
    buffer<unsigned long long> counts(ctx);
    if ((st = rows.allocate((size_t)nrows)) != SR_SUCCESS || (st = counts.allocate(2)) != SR_SUCCESS)
        return fail(st);
    unsigned long long teams[2] = {0, 0};
    cudaError_t err = cudaMemsetAsync(counts.get(), 0, sizeof teams, stream);
    if (err == cudaSuccess) {
        user_row_teams<<<grid_for(nrows * 32), kBlock, 0, stream>>>(A->rowptr, A->colind, B->rowptr, C->rowptr, nrows,
                                                                     rows.get(), counts.get());
        err = cudaGetLastError();
    }
    if (err == cudaSuccess)
        err = cudaMemcpyAsync(teams, counts.get(), sizeof teams, cudaMemcpyDeviceToHost, stream);
    if (err == cudaSuccess)
        err = sr_cuda::wait_stream(stream);
    if (err != cudaSuccess)
        return fail(sr_cuda_fail(err, "sr_mxm (user semiring rows)", __FILE__, __LINE__));
    const ordered_args<T> args{A->rowptr, A->colind, static_cast<const T *>(A->values),
                               B->rowptr, B->colind, static_cast<const T *>(B->values),
                               C->rowptr, C->colind, static_cast<T *>(C->values)};
    const int64_t warp_rows = (int64_t)teams[0], block_rows = (int64_t)teams[1];
    user_program_scope scope(program);
    if (warp_rows > 0)
        st = launch_user(warp_kernel, grid_for(warp_rows * 32), kBlock, stream, args, (const int64_t *)rows.get(),
                         warp_rows);
    if (st == SR_SUCCESS && block_rows > 0)
        st = launch_user(block_kernel, grid_for(block_rows * kBlock), kBlock, stream, args,
                         (const int64_t *)rows.get() + nrows - block_rows, block_rows);
    if (st == SR_SUCCESS && (err = sr_cuda::wait_stream(stream)) != cudaSuccess)
        st = sr_cuda_fail(err, "sr_mxm (user semiring values)", __FILE__, __LINE__);
    if (st != SR_SUCCESS)
        return fail(st);
    *out = C;
    return SR_SUCCESS;
}

} // namespace

extern "C" sr_status sr_cuda_mxm(sr_context_s *ctx, const sr_matrix_s *A, const sr_matrix_s *B, const sr_matrix_s *mask,
                                 bool complement, sr_semiring s, sr_type out_type, sr_matrix_s **C) {
    device_guard guard(ctx->device);
    if (const sr_user_semiring *u = sr_user_semiring_of((int)s)) {
        switch (u->def.type) {
        case SR_TYPE_INT32: return user_mxm<int32_t>(ctx, u, A, B, mask, complement, C);
        case SR_TYPE_FLOAT32: return user_mxm<float>(ctx, u, A, B, mask, complement, C);
        case SR_TYPE_FLOAT64: return user_mxm<double>(ctx, u, A, B, mask, complement, C);
        default: return sr_error(SR_ERROR_INTERNAL, "a user semiring on %s values", sr_type_name(u->def.type));
        }
    }
    return dispatch_semiring<mxm_launcher>(s, out_type, ctx, A, B, mask, complement, out_type, C);
}
