// Sampled products on the device (the cuSDDMM paper, ../shared/papers/sddmm.txt).
//
// SDDMM: a group of L lanes computes an entry's dot product, K/L elements a lane read as vectors
// (VEC elements: 16 bytes) and summed by shuffles within the group (the paper's virtual warps),
// several entries in flight a group. Each group takes a chunk of consecutive entries of S (so
// the writes coalesce and power-law rows split evenly: the paper's COO balance, without storing
// rows), and keeps its row's A fragment in registers while its entries stay in that row (the
// paper keeps A's rows in shared memory for the same reuse). Where rows side by side share
// columns, row panels (cuda_sddmm_panels.cuh) keep A's rows of a panel in shared memory instead
// and read each B row once per panel. Otherwise B's rows come through L2: when B is
// larger than a share of L2 and rows are long, the entries are visited column tile by column tile
// (column_tile_order) so that a tile of B stays resident, as the paper's SM-L2 scheme does. Where
// S is dense enough that a tile of B's rows serves a thousand entries of a panel, dense tiles
// (cuda_sddmm_dense.cuh, the paper's SM-SM scheme) keep both A's panel and B's tile in shared
// memory; where a 128 x 128 tile holds 3,000 entries or more, GEMM tiles (cuda_sddmm_gemm.cuh)
// compute the whole tile's product on the FMA pipes and keep the sampled cells. The comment above
// launch_rounds documents the choices.
//
// Fused SDDMM→SpMM: a group per chunk of entries computes each entry's score as above (the rows
// of B and V of its next few entries requested together) and adds score·V(j) to accumulators in
// registers (an online softmax rescales them when a larger score comes); short rows belong whole
// to the chunk they begin in, long rows cut by a chunk's ends leave partial states that a second
// kernel merges. Where the GEMM tiles pay, float32 with p <= 128 goes by whole tiles instead
// (cuda_sddmm_fused_gemm.cuh): each tile's scores and its product with V's rows both on the FMA
// pipes, the weights never leaving shared memory.
#include "cuda_common.cuh"
#include "cuda_sddmm_kernels.cuh"
#include "cuda_semiring.cuh"
#include "cuda_tf32_mma.cuh"
#include "cuda_user.cuh"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <new>
#include <vector>
#include <cub/cub.cuh>

extern "C" {
#include "cuda.h"
}

namespace {

using namespace sr_cuda;

constexpr int kThreads = kSddmmThreads;

// K within registers (K <= R·L·VEC): a group of L lanes takes `chunk` consecutive entries (of S,
// or of the column-tile order) in rounds of L. Each lane reads one entry of the round (its index,
// column, row), then the group computes the round's entries U at a time, their U rows of B
// requested before any is used: one entry at a time a group waits on a chain of dependent loads
// (index, row, column, B's row), so few lanes an entry and several entries in flight beat wide
// groups (bench/probes/sddmm_probe.cu: 1.8-2.3x at K = 128). The A fragment of the current row
// stays in registers while the entries stay in that row; three blocks of 256 an SM (80 registers)
// hold enough entries in flight. ORDERED: the entries come through the
// column-tile order (rows rise within a tile only), else in S's order (rows rise throughout).
template <class Ops, int VEC, int L, int R, int U, bool ORDERED>
__global__ void __launch_bounds__(kThreads, R <= 4 ? 3 : 2) sddmm_rounds(sddmm_params<typename Ops::value> p, int64_t chunk) {
    using T = typename Ops::value;
    const int lane = threadIdx.x % L;
    const unsigned mask = group_mask<L>();
    const int64_t group = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / L;
    const int64_t groups = (int64_t)gridDim.x * blockDim.x / L;
    const int64_t nvec = p.K / VEC;
    for (int64_t c0 = group * chunk; c0 < p.nnz; c0 += groups * chunk) {
        const int64_t c1 = min(c0 + chunk, p.nnz);
        int64_t row = ORDERED ? -1 : row_of_entry(p.rowptr, p.nrows, c0), cached = -1;
        frag<T, VEC> a[R];
        for (int64_t base = c0; base < c1; base += L) {
            const int count = (int)min((int64_t)L, c1 - base);
            int64_t my_e = 0, my_row = row;
            int32_t my_col = 0;
            if (lane < count) {
                my_e = ORDERED ? p.order[base + lane] : base + lane;
                if (ORDERED)
                    my_row = find_row(p.rowptr, p.nrows, row, my_e);
                else
                    while (p.rowptr[my_row + 1] <= my_e)
                        my_row++;
                my_col = p.colind[my_e];
            }
            row = __shfl_sync(mask, my_row, count - 1, L);
            for (int j = 0; j < count; j += U) {
                int64_t rows[U];
                int32_t cols[U];
#pragma unroll
                for (int u = 0; u < U; u++) {
                    rows[u] = __shfl_sync(mask, my_row, (j + u) % L, L);
                    cols[u] = __shfl_sync(mask, my_col, (j + u) % L, L);
                }
                frag<T, VEC> b[U][R];
#pragma unroll
                for (int u = 0; u < U; u++)
                    if (j + u < count)
                        load_row<T, VEC, L, R>(b[u], p.B + (size_t)cols[u] * (size_t)p.K, lane, nvec);
                T sum[U];
#pragma unroll
                for (int u = 0; u < U; u++) {
                    sum[u] = Ops::identity();
                    if (j + u >= count)
                        continue;
                    if (rows[u] != cached) {
                        load_row<T, VEC, L, R>(a, p.A + (size_t)rows[u] * (size_t)p.K, lane, nvec);
                        cached = rows[u];
                    }
#pragma unroll
                    for (int r = 0; r < R; r++)
                        if (r * L + lane < nvec)
#pragma unroll
                            for (int v = 0; v < VEC; v++)
                                sum[u] = Ops::add(sum[u], Ops::mul(a[r].v[v], b[u][r].v[v]));
                }
#pragma unroll
                for (int u = 0; u < U; u++) {
                    sum[u] = group_reduce<Ops, L>(sum[u]);
                    if (lane == j + u && j + u < count) // each entry written by the lane that read it
                        p.out[my_e] = finish<Ops>(p, sum[u], my_e);
                }
            }
        }
    }
}

template <class Ops> struct sddmm_launcher;

// The column tiles of the paper's SM-L2 scheme: the entries in order of (column tile, row), so
// that all the work on one tile of B's rows runs while that tile is in L2. Built on first use and
// kept with S.
sr_status column_tile_order(const sr_matrix_s *S, int64_t tile_cols, const int64_t **order);

template <typename T> bool aligned_for(const void *p, int vec) {
    return reinterpret_cast<uintptr_t>(p) % (sizeof(T) * vec) == 0;
}

// The launch choices (docs/sddmm.md):
// - plus_times with K of 8 to 32 vectors (32 to 128 floats): sddmm_rounds, its lanes, vectors
//   a lane and entries in flight from round_lanes;
// - other K up to 256 vectors: sddmm_interleaved with the A fragment in registers, the fewest
//   lanes that cover K in one round of vectors (with_lanes, at most 32, then R up to 8); past 256
//   vectors, or another semiring: sddmm_interleaved with a warp an entry striding over K;
// - sddmm_rounds: chunks of 64 entries a group, fewer when S is too small to fill the device;
// - vectors: 16-byte loads when K is a multiple of VEC and the rows are aligned, else scalars;
// - column tiles (the paper's Tj = sqrt(L2 / (c·ρ)), bounded so a tile of B takes at most half
//   of L2): only when B is larger than half of L2 and rows are long enough for the tiles to pay,
//   i.e. the A rows re-read per tile (at most min(row length, tiles) per row) cost less than the
//   B rows they keep from DRAM (sddmm_tile_cols).
template <typename T, int VEC, int L, int R, int U, class Ops>
sr_status launch_rounds(const sddmm_params<T> &p, cudaStream_t stream) {
    const int64_t groups_wanted = (int64_t)sm_count() * (2048 / L);
    int64_t chunk = 64;
    if ((p.nnz + chunk - 1) / chunk < groups_wanted) // whole rounds: a multiple of L
        chunk = ((p.nnz + groups_wanted - 1) / groups_wanted + L - 1) / L * L;
    const int64_t groups = (p.nnz + chunk - 1) / chunk;
    const unsigned blocks = (unsigned)std::max<int64_t>(
        1, std::min<int64_t>((groups * L + kThreads - 1) / kThreads, (int64_t)sm_count() * 64));
    if (p.order)
        sddmm_rounds<Ops, VEC, L, R, U, true><<<blocks, kThreads, 0, stream>>>(p, chunk);
    else
        sddmm_rounds<Ops, VEC, L, R, U, false><<<blocks, kThreads, 0, stream>>>(p, chunk);
    SR_CUDA_LAUNCHED();
    return SR_SUCCESS;
}

template <typename T, int VEC, int L, int R, class Ops>
sr_status launch_interleaved(const sddmm_params<T> &p, cudaStream_t stream) {
    constexpr int G = 32 / L;
    const int64_t warps_wanted = (int64_t)sm_count() * 32;
    int64_t chunk = 16 * G;
    if ((p.nnz + chunk - 1) / chunk < warps_wanted)
        chunk = std::max<int64_t>(G, (p.nnz + warps_wanted - 1) / warps_wanted);
    const int64_t warps = (p.nnz + chunk - 1) / chunk;
    const int64_t blocks = std::min<int64_t>((warps * 32 + kThreads - 1) / kThreads, (int64_t)sm_count() * 64);
    const unsigned grid = (unsigned)std::max<int64_t>(blocks, 1);
    if constexpr (is_user_ops<Ops>) { // the current user program's (sr_cuda_sddmm)
        return launch_user(user_kernel_name("sddmm_interleaved", {VEC, L, R}), grid, kThreads, stream, p, chunk);
    } else {
        sddmm_interleaved<Ops, VEC, L, R><<<grid, kThreads, 0, stream>>>(p, chunk);
        SR_CUDA_LAUNCHED();
        return SR_SUCCESS;
    }
}

// The lanes an entry (L, a power of two up to a warp) and vectors a lane (R) of the interleaved
// and panel kernels for nvec vectors of A's row: the fewest lanes that cover K in one round of
// vectors, launch(L, R) with both as integral constants.
template <class Launch> sr_status with_lanes(int64_t nvec, Launch launch) {
    using std::integral_constant;
    if (nvec <= 4)
        return launch(integral_constant<int, 4>{}, integral_constant<int, 1>{});
    if (nvec <= 8)
        return launch(integral_constant<int, 8>{}, integral_constant<int, 1>{});
    if (nvec <= 16)
        return launch(integral_constant<int, 16>{}, integral_constant<int, 1>{});
    if (nvec <= 32)
        return launch(integral_constant<int, 32>{}, integral_constant<int, 1>{});
    if (nvec <= 64)
        return launch(integral_constant<int, 32>{}, integral_constant<int, 2>{});
    if (nvec <= 128)
        return launch(integral_constant<int, 32>{}, integral_constant<int, 4>{});
    return launch(integral_constant<int, 32>{}, integral_constant<int, 8>{});
}

// sddmm_rounds' lanes an entry (L), vectors a lane (R) and entries in flight a group (U) for 8 to
// 32 vectors of A's row: launch(L, R, U) as integral constants. Measured on the H100
// (bench/probes/sddmm_probe.cu, docs/sddmm.md): 8 lanes of 4 vectors and 2 entries in flight at
// K = 128 floats (a warp an entry waits longer on each); at K = 32 floats 4 lanes of 2 vectors
// and 4 entries in flight (kernel 0.41 -> 0.33 ms on PyPI names' 3-grams, 0.44 -> 0.41 on a
// power-law graph, 0.098 -> 0.099 on PyPI summaries, against 8 lanes an entry interleaved).
template <class Launch> sr_status round_lanes(int64_t nvec, Launch launch) {
    using std::integral_constant;
    if (nvec <= 8)
        return launch(integral_constant<int, 4>{}, integral_constant<int, 2>{}, integral_constant<int, 4>{});
    if (nvec <= 16)
        return launch(integral_constant<int, 4>{}, integral_constant<int, 4>{}, integral_constant<int, 2>{});
    return launch(integral_constant<int, 8>{}, integral_constant<int, 4>{}, integral_constant<int, 2>{});
}

// The kernel for K (the choices above launch_rounds). Measured on the H100 against the
// interleaved kernel: sddmm_rounds took 0.5x its time at K = 128 floats on PyPI names' 3-grams,
// 0.7x on PyPI summaries, 1.07x on a power-law graph whose B overflows L2, 0.8x at K = 32 on the
// 3-grams with 4 lanes an entry; at K = 512 it was slower on the bags of words (registers: fewer
// groups resident).
bool takes_rounds(int64_t nvec) { return nvec >= 8 && nvec <= 32; }

template <typename T, int VEC, class Ops> sr_status launch_fast(const sddmm_params<T> &p, cudaStream_t stream) {
    const int64_t nvec = p.K / VEC;
    if (nvec > 256) // rows past 8 vectors a lane stream through instead of sitting in registers
        return launch_interleaved<T, VEC, 32, 0, Ops>(p, stream);
    if (takes_rounds(nvec))
        return round_lanes(nvec, [&](auto L, auto R, auto U) {
            return launch_rounds<T, VEC, decltype(L)::value, decltype(R)::value, decltype(U)::value, Ops>(p, stream);
        });
    return with_lanes(nvec, [&](auto L, auto R) {
        return launch_interleaved<T, VEC, decltype(L)::value, decltype(R)::value, Ops>(p, stream);
    });
}

template <class Ops> struct is_plus_times : std::false_type {};
template <> struct is_plus_times<ops_PLUS_TIMES_float> : std::true_type {};
template <> struct is_plus_times<ops_PLUS_TIMES_double> : std::true_type {};

// The bytes of L2 a tile of B may take.
size_t l2_share() {
    static size_t bytes = 0;
    if (bytes == 0) {
        int device = 0, l2 = 0;
        cudaGetDevice(&device);
        if (cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device) != cudaSuccess || l2 <= 0)
            l2 = 40 << 20;
        bytes = (size_t)l2 / 2;
    }
    return bytes;
}

// Column tiles when B overflows L2 and the mean row holds at least 16 entries a tile: each tile
// re-reads the rows of A it touches, so tiles pay when rows are much longer than the tile count
// (NYTimes-like bags of words), not on sparse graphs: a power-law graph of degree 20 in 3 tiles
// (K = 32) took 0.69 ms a call through them and 0.53 ms in S's order (H100, the same kernel).
// SPARSERING_SDDMM_TILES=0 turns the tiles off (for comparison).
int64_t sddmm_tile_cols(const sr_matrix_s *S, int64_t K, size_t es) {
    const bool allowed = sr_setting("SPARSERING_SDDMM_TILES", 1) != 0;
    const size_t b_bytes = (size_t)S->ncols * (size_t)K * es;
    if (!allowed)
        return 0;
    if (b_bytes <= l2_share() || S->nrows == 0)
        return 0;
    const int64_t tiles = (int64_t)((b_bytes + l2_share() - 1) / l2_share());
    const double mean_row = (double)S->nnz / (double)S->nrows;
    if (mean_row < 16.0 * (double)tiles)
        return 0;
    return (S->ncols + tiles - 1) / tiles;
}

// The grid of the whole-tile kernels (dense and GEMM tiles): blocks of (row panel, column range),
// enough to keep every multiprocessor busy with a few blocks each; a panel is cut into column
// ranges of whole tiles only when the panels alone are too few. `blocks` 0: nothing to launch.
struct panel_grid {
    int64_t range_cols = 0, ranges = 0, blocks = 0;
};
// Cuts each panel's `ncols` columns into at most `splits` ranges of whole tiles; blocks no more
// than the (panel, range) pairs.
inline void panel_grid_split(panel_grid *g, int64_t panels, int64_t ncols, int64_t tile_cols, int64_t splits) {
    const int64_t tiles = (ncols + tile_cols - 1) / tile_cols;
    g->range_cols = (tiles + splits - 1) / splits * tile_cols;
    g->ranges = (ncols + g->range_cols - 1) / g->range_cols;
    g->blocks = std::min(g->blocks, panels * g->ranges);
}
template <typename Kernel>
sr_status panel_grid_for(Kernel kernel, int threads, size_t smem, int64_t panels, int64_t ncols, int64_t tile_cols,
                         panel_grid *g) {
    *g = panel_grid{};
    if (panels <= 0 || ncols <= 0)
        return SR_SUCCESS;
    SR_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    int per_sm = 1;
    SR_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem));
    const int64_t resident = (int64_t)sm_count() * std::max(per_sm, 1);
    const int64_t tiles = (ncols + tile_cols - 1) / tile_cols;
    g->blocks = resident * 16;
    panel_grid_split(g, panels, ncols, tile_cols, std::clamp<int64_t>((4 * resident + panels - 1) / panels, 1, tiles));
    return SR_SUCCESS;
}

// A whole-tile kernel's row cursor: the first entry of `row` at or past column c_lo (S's columns
// rise within a row) and the row's end; the cursor's column lowers *next_col, the first tile's start.
__device__ __forceinline__ void row_cursor(const int64_t *rowptr, const int32_t *colind, int64_t row, int64_t c_lo,
                                           int32_t *next_col, int64_t *cursor, int64_t *end) {
    const int64_t b = rowptr[row];
    *end = rowptr[row + 1];
    *cursor = c_lo == 0 ? b : b + lower_bound(colind + b, *end - b, (int32_t)c_lo);
    if (*cursor < *end)
        atomicMin(next_col, colind[*cursor]);
}

#include "cuda_sddmm_panels.cuh"
#include "cuda_sddmm_dense.cuh"
#include "cuda_sddmm_gemm.cuh"

// The whole tiles' arithmetic for a precision at K: one TF32 product for TF32, the FMA pipes for
// FLOAT32; for EXACT the split on the tensor cores from K = 64 on, the FMA pipes below. On the H200
// (bench/results-sddmm-tc-h200.txt) the split took 8K x 8K at 25% from 1.95 to 1.51 ms at K = 512
// and 0.70 to 0.57-0.60 at K = 128, but at K = 32, where the tiles' entry walk is the time, it was
// no faster (0.30 against 0.32) and its error is 2-5x the FMAs' (the tensor cores' float32
// accumulation: 4.6e-6 of the largest value against 1.0e-6 at K = 512).
// SPARSERING_SDDMM_MATH=0/1/3 overrides (comparisons).
constexpr int64_t kSplitFromK = 64;
tile_math tile_math_for(sr_precision precision, int64_t K) {
    const int forced = sr_setting("SPARSERING_SDDMM_MATH", -1);
    if (forced == kMathFma || forced == kMathTf32 || forced == kMathTf32x3)
        return (tile_math)forced;
    if (precision == SR_PRECISION_TF32)
        return kMathTf32;
    return precision == SR_PRECISION_EXACT && K >= kSplitFromK ? kMathTf32x3 : kMathFma;
}

// The row panels' order of S's entries, when it pays.
sr_status panel_order(const sr_matrix_s *S, int64_t P, int64_t K, size_t es, bool force, panel_order_view *view);

// Whether S's dense tiles pay for rows of nvec vectors (K elements of es bytes); sampled once per
// tiling and kept with S.
sr_status dense_tiles_pay(const sr_matrix_s *S, int64_t nvec, int64_t K, size_t es, bool *pay);

// Whether S's 128 x 128 tiles hold enough entries for whole tile products (kGemmFill); sampled
// once and kept with S.
sr_status gemm_tiles_pay(const sr_matrix_s *S, bool *pay);

// An optional speed-up's status: success when it failed for want of device memory (the call
// goes on without it; the context's last error still says what did not fit).
sr_status without_if_out_of_memory(sr_status st) { return st == SR_ERROR_DEVICE_OUT_OF_MEMORY ? SR_SUCCESS : st; }

// Row panels: SPARSERING_SDDMM_PANELS=0 never, =1 whenever they can run (tests, comparisons),
// otherwise when their reuse pays. They need K within the register fragment (R <= 8) and
// panels of fewer than 2^24 entries.
int panels_setting() {
    return sr_setting("SPARSERING_SDDMM_PANELS", -1);
}

template <class Ops> struct sddmm_launcher {
    using T = typename Ops::value;

    // The plus_times kernel family for S at K (nvec vectors a row; `vectors`: 16-byte rows): the
    // GEMM tiles (float32), the dense tiles, the row panels (then *order holds their order) or S's
    // entry order.
    static sr_status choose(const sr_matrix_s *S, int64_t K, int64_t nvec, bool vectors, sr_sddmm_strategy *strategy,
                            panel_order_view *order) {
        const int setting = panels_setting();
        const int64_t P = panel_rows(K, sizeof(T));
        const int dense = dense_setting();
        if constexpr (std::is_same<T, float>::value) { // whole tile products: float32 rows of float4s
            const int gemm = gemm_setting();
            bool pay = gemm >= 1 && vectors; // 2 (the CPU's B packing, for tests) forces them too
            if (gemm == -1 && vectors && setting != 1 && dense != 1)
                SR_TRY(gemm_tiles_pay(S, &pay));
            if (pay) {
                *strategy = SR_SDDMM_GEMM_TILES;
                return SR_SUCCESS;
            }
        }
        bool tiles_pay = false; // forced row panels keep their cases (tests) unless the tiles are forced too
        if (dense == -1 && setting != 1)
            SR_TRY(dense_tiles_pay(S, nvec, K, sizeof(T), &tiles_pay));
        if (nvec <= 8 * 32 && (dense == 1 || tiles_pay)) {
            *strategy = SR_SDDMM_DENSE_TILES;
            return SR_SUCCESS;
        }
        // The entry orders are kept with S to speed later calls; one that does not fit in device
        // memory is done without (the CSR-order kernel needs nothing beyond the output). Panels
        // never beat sddmm_rounds (panels_pay): where it runs the order is not even built, unless
        // forced (the first call would sort S's entries for nothing). Few panels are cut into
        // parts, a block each (launch_panel_entries; with a block a panel, 16K x 16K at 5% in 64
        // panels took 2.9 ms at K = 32 against 0.58 in CSR order, and they were not used below
        // two panels an SM: at K = 256 that S has 256 and now takes 1.98-2.03 ms against 2.24).
        const bool wanted = setting == 1 || (setting != 0 && !takes_rounds(nvec));
        if (wanted && S->nnz > 0 && nvec <= 8 * 32)
            SR_TRY(without_if_out_of_memory(panel_order(S, P, K, sizeof(T), setting == 1, order)));
        *strategy = order->records ? SR_SDDMM_PANELS : SR_SDDMM_ROWS;
        return SR_SUCCESS;
    }

    static sr_status strategy(const sr_sddmm_args *a, sr_sddmm_strategy *out) {
        *out = SR_SDDMM_ROWS;
        if constexpr (is_plus_times<Ops>::value) {
            constexpr int VEC = 16 / sizeof(T);
            const bool vectors = a->K % VEC == 0 && aligned_for<T>(static_cast<const T *>(a->A), VEC) &&
                                 aligned_for<T>(static_cast<const T *>(a->B), VEC);
            panel_order_view order{};
            return choose(a->S, a->K, a->K / (vectors ? VEC : 1), vectors, out, &order);
        }
        return SR_SUCCESS;
    }

    static sr_status run(const sr_sddmm_args *a, void *out) {
        const sr_matrix_s *S = a->S;
        sr_context_s *ctx = S->ctx;
        cudaStream_t stream = stream_of(ctx);
        sddmm_params<T> p{};
        p.rowptr = S->rowptr;
        p.colind = S->colind;
        p.svals = a->pattern ? nullptr : static_cast<const T *>(S->values);
        p.beta_vals = S->type == SR_TYPE_BOOL ? nullptr : static_cast<const T *>(S->values);
        p.A = static_cast<const T *>(a->A);
        p.B = static_cast<const T *>(a->B);
        p.K = a->K;
        p.nrows = S->nrows;
        p.nnz = S->nnz;
        p.alpha = a->alpha;
        p.beta = a->beta;
        p.out = static_cast<T *>(out);
        if constexpr (is_plus_times<Ops>::value) { // the tuned kernels, instantiated for plus_times only
            constexpr int VEC = 16 / sizeof(T);
            const bool vectors = p.K % VEC == 0 && aligned_for<T>(p.A, VEC) && aligned_for<T>(p.B, VEC);
            const int64_t P = panel_rows(p.K, sizeof(T));
            const int64_t nvec = p.K / (vectors ? VEC : 1);
            panel_order_view order{};
            sr_sddmm_strategy strategy = a->strategy;
            if (strategy == SR_SDDMM_AUTO)
                SR_TRY(choose(S, p.K, nvec, vectors, &strategy, &order));
            else if (strategy == SR_SDDMM_PANELS) // told by the whole S: this block builds its own order
                SR_TRY(without_if_out_of_memory(panel_order(S, P, p.K, sizeof(T), true, &order)));
            if constexpr (std::is_same<T, float>::value)
                if (strategy == SR_SDDMM_GEMM_TILES && vectors) { // else (told, unaligned) S's order
                    SR_TRY(launch_gemm_tiles<Ops>(p, S->ncols, tile_math_for(a->precision, a->K), stream));
                    SR_CUDA_TRY(sr_cuda::wait_stream(stream));
                    return SR_SUCCESS;
                }
            if (strategy == SR_SDDMM_DENSE_TILES) {
                if (vectors)
                    SR_TRY((launch_dense<T, VEC, Ops>(p, S->ncols, stream)));
                else
                    SR_TRY((launch_dense<T, 1, Ops>(p, S->ncols, stream)));
                SR_CUDA_TRY(sr_cuda::wait_stream(stream));
                return SR_SUCCESS;
            }
            if (order.records) {
                if (vectors)
                    SR_TRY((launch_panels<T, VEC, Ops>(p, order, P, stream)));
                else
                    SR_TRY((launch_panels<T, 1, Ops>(p, order, P, stream)));
            } else {
                const int64_t tile_cols = sddmm_tile_cols(S, a->K, sizeof(T));
                if (tile_cols > 0)
                    SR_TRY(without_if_out_of_memory(column_tile_order(S, tile_cols, &p.order)));
                if (vectors)
                    SR_TRY((launch_fast<T, VEC, Ops>(p, stream)));
                else
                    SR_TRY((launch_fast<T, 1, Ops>(p, stream)));
            }
        } else {
            SR_TRY((launch_interleaved<T, 1, 32, 0, Ops>(p, stream)));
        }
        SR_CUDA_TRY(sr_cuda::wait_stream(stream));
        return SR_SUCCESS;
    }
};

// ------------------------------------------------------------------ column tiles

__global__ void tile_keys(const int32_t *colind, int64_t nnz, int64_t tile_cols, int32_t *keys, int64_t *entries) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < nnz; e += (int64_t)gridDim.x * blockDim.x) {
        keys[e] = (int32_t)(colind[e] / tile_cols);
        entries[e] = e;
    }
}

// The entries sorted by column tile, stably: rows stay in order within a tile, so a group's
// consecutive entries share a row and its cached A fragment.
sr_status build_tile_order(sr_context_s *ctx, const sr_matrix_s *S, int64_t tile_cols, int64_t *order) {
    cudaStream_t stream = stream_of(ctx);
    const int64_t nnz = S->nnz, tiles = (S->ncols + tile_cols - 1) / tile_cols;
    buffer<int32_t> keys(ctx), keys_out(ctx);
    buffer<int64_t> entries(ctx);
    SR_TRY(keys.allocate((size_t)nnz));
    SR_TRY(keys_out.allocate((size_t)nnz));
    SR_TRY(entries.allocate((size_t)nnz));
    tile_keys<<<grid_for(nnz), 256, 0, stream>>>(S->colind, nnz, tile_cols, keys.get(), entries.get());
    SR_CUDA_LAUNCHED();
    int bits = 1;
    while (((int64_t)1 << bits) < tiles)
        bits++;
    size_t temp_bytes = 0;
    SR_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys.get(), keys_out.get(), entries.get(), order,
                                                nnz, 0, bits, stream));
    buffer<unsigned char> temp(ctx);
    SR_TRY(temp.allocate(temp_bytes));
    SR_CUDA_TRY(cub::DeviceRadixSort::SortPairs(temp.get(), temp_bytes, keys.get(), keys_out.get(), entries.get(),
                                                order, nnz, 0, bits, stream));
    SR_CUDA_TRY(sr_cuda::wait_stream(stream)); // before the scratch goes
    return SR_SUCCESS;
}

// The visiting orders of a matrix's entries (column tiles, row panels), each built once per
// width and kept with S (S is fixed across the calls of an iterative method: ALS, LDA), so a
// sort's cost is paid on the first call only. A panel order that does not pay is remembered
// with its reuse and no order.
struct entry_orders {
    int64_t tile_cols = 0;
    int64_t *tiles = nullptr;
    size_t tile_bytes = 0;
    int64_t panel_rows = 0;
    void *panels = nullptr; // the records (4 bytes an entry), then the columns (4 bytes an entry)
    size_t panel_bytes = 0;
    double panel_reuse = 0;
    int64_t dense_rows = 0, dense_cols = 0; // the dense tiling sampled (0: none yet)
    double dense_fill = 0;                  // its entries per (panel, touched tile)
    double gemm_fill = -1;                  // entries per touched 128 x 128 tile (-1: not sampled)
};
std::mutex orders_mutex;

void free_entry_orders(sr_matrix_s *A) {
    auto *o = static_cast<entry_orders *>(A->tile_orders);
    if (o) {
        if (o->tiles)
            sr_mem_free(A->ctx, SR_DEVICE, o->tiles, o->tile_bytes);
        if (o->panels)
            sr_mem_free(A->ctx, SR_DEVICE, o->panels, o->panel_bytes);
        delete o;
    }
    A->tile_orders = nullptr;
}

// S's orders, created empty on first use (the caller holds orders_mutex).
sr_status orders_of(const sr_matrix_s *S, entry_orders **out) {
    auto *matrix = const_cast<sr_matrix_s *>(S); // the cache is not part of the matrix's value
    if (!matrix->tile_orders) {
        auto *o = new (std::nothrow) entry_orders{};
        if (!o)
            return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for an entry order");
        matrix->tile_orders = o;
        matrix->free_tile_orders = free_entry_orders;
    }
    *out = static_cast<entry_orders *>(matrix->tile_orders);
    return SR_SUCCESS;
}

sr_status column_tile_order(const sr_matrix_s *S, int64_t tile_cols, const int64_t **order) {
    std::lock_guard<std::mutex> lock(orders_mutex);
    entry_orders *o = nullptr;
    SR_TRY(orders_of(S, &o));
    if (!o->tiles || o->tile_cols != tile_cols) { // none yet, or K changed
        if (o->tiles)
            sr_mem_free(S->ctx, SR_DEVICE, o->tiles, o->tile_bytes);
        o->tiles = nullptr;
        void *memory = nullptr;
        const size_t bytes = (size_t)S->nnz * sizeof(int64_t);
        SR_TRY(sr_mem_alloc(S->ctx, SR_DEVICE, bytes, &memory));
        const sr_status st = build_tile_order(S->ctx, S, tile_cols, static_cast<int64_t *>(memory));
        if (st != SR_SUCCESS) {
            sr_mem_free(S->ctx, SR_DEVICE, memory, bytes);
            return st;
        }
        o->tile_cols = tile_cols;
        o->tiles = static_cast<int64_t *>(memory);
        o->tile_bytes = bytes;
    }
    *order = o->tiles;
    return SR_SUCCESS;
}

sr_status dense_tiles_pay(const sr_matrix_s *S, int64_t nvec, int64_t K, size_t es, bool *pay) {
    *pay = false;
    const dense_tiling t = dense_tiles_for(K, es);
    // a panel too short to fill even one tile needs no sample
    const double panel_entries = S->nrows ? (double)S->nnz / (double)S->nrows * (double)t.panel_rows : 0.0;
    if (nvec > kDenseMaxVectors || panel_entries < kDenseFill)
        return SR_SUCCESS;
    std::lock_guard<std::mutex> lock(orders_mutex);
    entry_orders *o = nullptr;
    SR_TRY(orders_of(S, &o));
    if (o->dense_rows != t.panel_rows || o->dense_cols != t.tile_cols) {
        SR_TRY(sample_tile_fill(S->ctx, S, t, &o->dense_fill));
        o->dense_rows = t.panel_rows;
        o->dense_cols = t.tile_cols;
    }
    *pay = o->dense_fill >= kDenseFill;
    return SR_SUCCESS;
}

sr_status gemm_tiles_pay(const sr_matrix_s *S, bool *pay) {
    *pay = false;
    const double panel_entries = S->nrows ? (double)S->nnz / (double)S->nrows * kGemmRows : 0.0;
    if (panel_entries < kGemmFill) // a panel too sparse to fill even one tile needs no sample
        return SR_SUCCESS;
    std::lock_guard<std::mutex> lock(orders_mutex);
    entry_orders *o = nullptr;
    SR_TRY(orders_of(S, &o));
    if (o->gemm_fill < 0)
        SR_TRY(sample_tile_fill(S->ctx, S, dense_tiling{kGemmRows, kGemmCols, 0, 0}, &o->gemm_fill));
    *pay = o->gemm_fill >= kGemmFill;
    return SR_SUCCESS;
}

// The panel order for P rows a panel when it pays against sddmm_interleaved (panels_pay for rows
// of K elements of es bytes; or `force` and the order could be built), else an order with no
// records.
sr_status panel_order(const sr_matrix_s *S, int64_t P, int64_t K, size_t es, bool force, panel_order_view *view) {
    std::lock_guard<std::mutex> lock(orders_mutex);
    entry_orders *o = nullptr;
    SR_TRY(orders_of(S, &o));
    if (o->panel_rows != P) {
        if (o->panels)
            sr_mem_free(S->ctx, SR_DEVICE, o->panels, o->panel_bytes);
        o->panels = nullptr;
        o->panel_rows = 0;
        double sampled = 0;
        SR_TRY(sample_reuse(S->ctx, S, P, &sampled));
        if (!force && sampled < 1.6) { // remembered: this S, this P, panels do not pay
            o->panel_rows = P;
            o->panel_reuse = sampled;
            *view = panel_order_view{};
            return SR_SUCCESS;
        }
        void *memory = nullptr;
        const size_t bytes = (size_t)S->nnz * (sizeof(uint32_t) + sizeof(int32_t));
        SR_TRY(sr_mem_alloc(S->ctx, SR_DEVICE, bytes, &memory));
        double reuse = 1.0;
        auto *records = static_cast<uint32_t *>(memory);
        const sr_status st = build_panel_order(S->ctx, S, P, records, reinterpret_cast<int32_t *>(records + S->nnz), &reuse);
        if (st != SR_SUCCESS || reuse == 0) {
            sr_mem_free(S->ctx, SR_DEVICE, memory, bytes);
            memory = nullptr;
        }
        SR_TRY(st);
        o->panel_rows = P;
        o->panels = memory;
        o->panel_bytes = memory ? bytes : 0;
        o->panel_reuse = reuse;
    }
    const bool use = o->panels && (force || panels_pay(o->panel_reuse, K, es));
    const auto *records = static_cast<const uint32_t *>(o->panels);
    *view = use ? panel_order_view{records, reinterpret_cast<const int32_t *>(records + S->nnz)} : panel_order_view{};
    return SR_SUCCESS;
}

// ------------------------------------------------------------------ fused SDDMM→SpMM

template <typename T> struct fused_params {
    const int64_t *rowptr;
    const int32_t *colind;
    const T *svals;
    const T *A, *B, *V;
    int64_t K, p, nrows;
    T alpha;
    bool softmax, accumulate;
    T *O;
    int64_t o_row, o_col;
    int64_t nnz, chunk, nchunks; // a group takes `chunk` consecutive entries of S
    // Each chunk's two partial slots: 2c for a row begun before the chunk, 2c + 1 for a row begun
    // in it that goes on past it. A slot holds top, sum and p sums (partials + slot·(p + 2)); its
    // row is in partial_row (-1: unused).
    T *partials;
    int64_t *partial_row;
};

__device__ __forceinline__ float fast_exp(float x) { return __expf(x); }
__device__ __forceinline__ double fast_exp(double x) { return exp(x); }

// A running softmax state: what has been summed is scaled as if by exp(score - top).
template <typename T, int VEC, int R> struct row_state {
    frag<T, VEC> acc[R];
    T top, sum;
    __device__ void clear() {
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int v = 0; v < VEC; v++)
                acc[r].v[v] = 0;
        top = -INFINITY;
        sum = 0;
    }
    // The weight to add a score with, rescaling the sums when the score is a new maximum.
    __device__ T weigh(T w, bool softmax) {
        if (!softmax)
            return w;
        if (w > top) {
            const T scale = fast_exp(top - w);
#pragma unroll
            for (int r = 0; r < R; r++)
#pragma unroll
                for (int v = 0; v < VEC; v++)
                    acc[r].v[v] *= scale;
            sum *= scale;
            top = w;
        }
        w = fast_exp(w - top);
        sum += w;
        return w;
    }
};

// The score of entry e for this group (all its lanes get it), from B's row already in `b`.
template <typename T, int VEC, int L, int R>
__device__ __forceinline__ T entry_score(const fused_params<T> &p, const frag<T, VEC> (&a)[R],
                                         const frag<T, VEC> (&b)[R], int lane, int64_t e) {
    const int64_t nvec = p.K / VEC;
    T dot = 0;
#pragma unroll
    for (int r = 0; r < R; r++)
        if (r * L + lane < nvec)
#pragma unroll
            for (int v = 0; v < VEC; v++)
                dot += a[r].v[v] * b[r].v[v];
    using Ops = typename std::conditional<sizeof(T) == 4, ops_PLUS_TIMES_float, ops_PLUS_TIMES_double>::type;
    dot = group_reduce<Ops, L>(dot);
    return p.alpha * (p.svals ? p.svals[e] * dot : dot);
}

// s.acc += w·v, v the fragments of V's row (B's, when V is B: ALS's product, self-attention).
template <typename T, int VEC, int L, int R>
__device__ __forceinline__ void add_row(const fused_params<T> &p, row_state<T, VEC, R> &s, int lane, T w,
                                        const frag<T, VEC> (&v)[R]) {
    const int64_t pvec = p.p / VEC;
#pragma unroll
    for (int r = 0; r < R; r++)
        if (r * L + lane < pvec)
#pragma unroll
            for (int q = 0; q < VEC; q++)
                s.acc[r].v[q] += w * v[r].v[q];
}

// O(row, col) = x, or += x when the call accumulates.
template <typename T> __device__ __forceinline__ void put_output(const fused_params<T> &p, int64_t row, int64_t col, T x) {
    T *cell = p.O + row * p.o_row + col * p.o_col;
    *cell = p.accumulate ? *cell + x : x;
}

template <typename T, int VEC, int L, int R>
__device__ __forceinline__ void store_row(const fused_params<T> &p, const row_state<T, VEC, R> &s, int lane, int64_t row,
                                          T divide) {
    const int64_t pvec = p.p / VEC;
#pragma unroll
    for (int r = 0; r < R; r++)
        if (r * L + lane < pvec)
#pragma unroll
            for (int q = 0; q < VEC; q++) {
                const int64_t c = (r * L + lane) * VEC + q;
                put_output(p, row, c, divide > 0 ? s.acc[r].v[q] / divide : s.acc[r].v[q]);
            }
}

template <typename T, int VEC, int L, int R>
__device__ __forceinline__ void store_partial(const fused_params<T> &p, const row_state<T, VEC, R> &s, int lane,
                                              int64_t slot, int64_t row) {
    T *out = p.partials + slot * (p.p + 2);
    if (lane == 0) {
        out[0] = s.top;
        out[1] = s.sum;
        p.partial_row[slot] = row;
    }
    const int64_t pvec = p.p / VEC;
#pragma unroll
    for (int r = 0; r < R; r++)
        if (r * L + lane < pvec)
#pragma unroll
            for (int q = 0; q < VEC; q++)
                out[2 + (r * L + lane) * VEC + q] = s.acc[r].v[q];
}

// A group per chunk of `chunk` consecutive entries: the rows that begin in the chunk are its own,
// whole, when they are short (at most `chunk` entries), so short-row matrices need no merging;
// long rows (power-law hubs) are cut at chunk ends and shared by the chunks they cross, each
// leaving a partial state for merge_partials. A row is walked U entries a step so that U rows of
// B (and of V) are in flight at once.
template <typename T, int VEC, int L, int R, int U, bool SAME>
__global__ void __launch_bounds__(kThreads) fused_chunks(fused_params<T> p) {
    const int lane = threadIdx.x % L;
    const int64_t group = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / L;
    const int64_t groups = (int64_t)gridDim.x * blockDim.x / L;
    for (int64_t c = group; c < p.nchunks; c += groups) {
        const int64_t e0 = c * p.chunk, e1 = min(e0 + p.chunk, p.nnz);
        for (int64_t row = row_of_entry(p.rowptr, p.nrows, e0); row < p.nrows && p.rowptr[row] < e1; row++) {
            const int64_t r0 = p.rowptr[row], r1 = p.rowptr[row + 1];
            const bool is_long = r1 - r0 > p.chunk;
            if (r1 == r0 || (r0 < e0 && !is_long)) // empty, or a short row begun in an earlier chunk
                continue;
            const int64_t s0 = is_long ? max(r0, e0) : r0, s1 = is_long ? min(r1, e1) : r1;
            frag<T, VEC> a[R];
            load_row<T, VEC, L, R>(a, p.A + (size_t)row * (size_t)p.K, lane, p.K / VEC);
            row_state<T, VEC, R> s;
            s.clear();
            for (int64_t e = s0; e < s1; e += U) {
                // the U entries' rows of B (and of V) requested before any is used
                frag<T, VEC> b[U][R];
                [[maybe_unused]] frag<T, VEC> vr[SAME ? 1 : U][R];
#pragma unroll
                for (int u = 0; u < U; u++)
                    if (e + u < s1) {
                        const int64_t j = p.colind[e + u];
                        load_row<T, VEC, L, R>(b[u], p.B + (size_t)j * (size_t)p.K, lane, p.K / VEC);
                        if constexpr (!SAME)
                            load_row<T, VEC, L, R>(vr[u], p.V + (size_t)j * (size_t)p.p, lane, p.p / VEC);
                    }
                T score[U];
#pragma unroll
                for (int u = 0; u < U; u++)
                    if (e + u < s1)
                        score[u] = entry_score<T, VEC, L, R>(p, a, b[u], lane, e + u);
#pragma unroll
                for (int u = 0; u < U; u++)
                    if (e + u < s1) {
                        if constexpr (SAME)
                            add_row<T, VEC, L, R>(p, s, lane, s.weigh(score[u], p.softmax), b[u]);
                        else
                            add_row<T, VEC, L, R>(p, s, lane, s.weigh(score[u], p.softmax), vr[u]);
                    }
            }
            if (s0 == r0 && s1 == r1)
                store_row<T, VEC, L, R>(p, s, lane, row, p.softmax ? s.sum : T(0));
            else
                store_partial<T, VEC, L, R>(p, s, lane, s0 == r0 ? 2 * c + 1 : 2 * c, row);
        }
    }
}

// A row's partial states (top, sum, then p sums; state(k) for k < n) rescaled to their common
// maximum (the softmax), summed in order k = 0 .. n - 1 and written to O, by a warp. A state with
// no entries (top -inf) adds nothing.
template <typename T, class State>
__device__ __forceinline__ void merge_row_states(const fused_params<T> &p, int64_t row, int64_t n, State state) {
    const int lane = threadIdx.x % 32;
    T top = -INFINITY, sum = 0;
    if (p.softmax) {
        for (int64_t k = 0; k < n; k++)
            top = max(top, state(k)[0]);
        for (int64_t k = 0; k < n; k++)
            if (state(k)[0] != -INFINITY)
                sum += state(k)[1] * fast_exp(state(k)[0] - top);
    }
    for (int64_t col = lane; col < p.p; col += 32) {
        T x = 0;
        for (int64_t k = 0; k < n; k++) {
            const T *part = state(k);
            if (!p.softmax)
                x += part[2 + col];
            else if (part[0] != -INFINITY)
                x += part[2 + col] * fast_exp(part[0] - top);
        }
        put_output(p, row, col, p.softmax && sum > 0 ? x / sum : x);
    }
}

// A warp per chunk whose last (long) row goes on past it: that row's partial states (its slot
// 2c + 1, then slot 2c' of the chunks c' after that carry it) merged and written.
template <typename T> __global__ void merge_partials(fused_params<T> p) {
    const int64_t warp = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int64_t warps = (int64_t)gridDim.x * blockDim.x / 32;
    for (int64_t c = warp; c < p.nchunks; c += warps) {
        const int64_t row = p.partial_row[2 * c + 1];
        if (row < 0)
            continue;
        int64_t last = c + 1;
        while (last < p.nchunks && p.partial_row[2 * last] == row)
            last++;
        merge_row_states(p, row, last - c,
                         [&](int64_t k) { return p.partials + (k == 0 ? 2 * c + 1 : 2 * (c + k)) * (p.p + 2); });
    }
}

// Rows with no entries get zeros (no chunk visits them).
template <typename T> __global__ void zero_empty_rows(fused_params<T> p) {
    for (int64_t x = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; x < p.nrows * p.p;
         x += (int64_t)gridDim.x * blockDim.x) {
        const int64_t row = x / p.p;
        if (p.rowptr[row] == p.rowptr[row + 1])
            p.O[row * p.o_row + (x % p.p) * p.o_col] = 0;
    }
}

// Any K and p (past the register fragments): a warp per row, A and V read per entry, the row's
// sums kept in O itself (each lane owns its columns), rescaled there for the softmax. O must be
// the call's own (not accumulating).
template <typename T> __global__ void __launch_bounds__(kThreads) fused_rows_wide(fused_params<T> p) {
    const int lane = threadIdx.x % 32;
    const int64_t warp = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int64_t warps = (int64_t)gridDim.x * blockDim.x / 32;
    using Ops = typename std::conditional<sizeof(T) == 4, ops_PLUS_TIMES_float, ops_PLUS_TIMES_double>::type;
    for (int64_t row = warp; row < p.nrows; row += warps) {
        T *o = p.O + row * p.o_row;
        for (int64_t c = lane; c < p.p; c += 32)
            o[c * p.o_col] = 0;
        T top = -INFINITY, sum = 0;
        const T *arow = p.A + (size_t)row * (size_t)p.K;
        for (int64_t e = p.rowptr[row]; e < p.rowptr[row + 1]; e++) {
            const T *brow = p.B + (size_t)p.colind[e] * (size_t)p.K;
            T dot = 0;
            for (int64_t k = lane; k < p.K; k += 32)
                dot += arow[k] * brow[k];
            dot = group_reduce<Ops, 32>(dot);
            T w = p.alpha * (p.svals ? p.svals[e] * dot : dot);
            if (p.softmax) {
                if (w > top) {
                    const T scale = fast_exp(top - w);
                    for (int64_t c = lane; c < p.p; c += 32)
                        o[c * p.o_col] *= scale;
                    sum *= scale;
                    top = w;
                }
                w = fast_exp(w - top);
                sum += w;
            }
            const T *vrow = p.V + (size_t)p.colind[e] * (size_t)p.p;
            for (int64_t c = lane; c < p.p; c += 32)
                o[c * p.o_col] += w * vrow[c];
        }
        if (p.softmax && sum > 0)
            for (int64_t c = lane; c < p.p; c += 32)
                o[c * p.o_col] /= sum;
    }
}

// O (strided) += T (m x p, row-major).
template <typename T> __global__ void add_rows(T *O, int64_t o_row, int64_t o_col, const T *t, int64_t m, int64_t p) {
    for (int64_t x = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; x < m * p; x += (int64_t)gridDim.x * blockDim.x)
        O[(x / p) * o_row + (x % p) * o_col] += t[x];
}

template <typename T, int VEC, int L, int R>
sr_status launch_fused(fused_params<T> p, sr_context_s *ctx, cudaStream_t stream) {
    // Rows of B and of V in flight per group: U·R each, all requested before any is used. On the
    // H100, as ratios to our unfused pair in the same run (docs/sddmm.md): power-law 500K, whose
    // rows overflow L2, 0.89-0.92x at K = 32 and 1.16-1.20x at 128 (V = B 1.26-1.31x, 2.03-2.12x)
    // against the earlier kernel's 0.72-0.75x and 1.03-1.07x (V = B 1.01-1.16x, 1.64-1.69x), which
    // read V's row after the score; PyPI names' 3-grams, whose rows stay in L2, 0.84-0.89x at
    // K = 32 against its 0.93x, and a variant reading every row where it is used did worse there
    // (0.66x). With V's rows in flight too, a warp an entry holds U_V = 2 entries (102 registers
    // at U = 4; PyPI summaries K = 128 0.62 ms against 0.58 at U_V = 2).
    constexpr int U = R == 1 ? 4 : R == 2 ? 2 : 1, U_V = R == 1 && L == 32 ? 2 : U;
    // about four chunks for each group the chip holds at once, 32 to 1024 entries each
    const int64_t resident = (int64_t)sm_count() * (2048 / L);
    p.chunk = std::min<int64_t>(1024, std::max<int64_t>(32, p.nnz / (4 * resident) + 1));
    p.nchunks = (p.nnz + p.chunk - 1) / p.chunk;
    buffer<T> partials(ctx);
    buffer<int64_t> partial_row(ctx);
    SR_TRY(partials.allocate((size_t)(2 * p.nchunks) * (size_t)(p.p + 2)));
    SR_TRY(partial_row.allocate((size_t)(2 * p.nchunks)));
    SR_CUDA_TRY(cudaMemsetAsync(partial_row.get(), 0xff, (size_t)(2 * p.nchunks) * sizeof(int64_t), stream));
    p.partials = partials.get();
    p.partial_row = partial_row.get();
    if (!p.accumulate) {
        zero_empty_rows<T><<<grid_for(p.nrows * p.p), 256, 0, stream>>>(p);
        SR_CUDA_LAUNCHED();
    }
    const int64_t blocks = std::min<int64_t>((p.nchunks * L + kThreads - 1) / kThreads, (int64_t)sm_count() * 32);
    const unsigned grid = (unsigned)std::max<int64_t>(blocks, 1);
    if (p.V == p.B && p.p == p.K)
        fused_chunks<T, VEC, L, R, U, true><<<grid, kThreads, 0, stream>>>(p);
    else
        fused_chunks<T, VEC, L, R, U_V, false><<<grid, kThreads, 0, stream>>>(p);
    SR_CUDA_LAUNCHED();
    merge_partials<T><<<grid_for(p.nchunks * 32), 256, 0, stream>>>(p);
    SR_CUDA_LAUNCHED();
    SR_CUDA_TRY(sr_cuda::wait_stream(stream)); // before the scratch goes
    return SR_SUCCESS;
}

// Wide groups: few lanes a row, as sddmm_rounds takes, measured slower here (more accumulator
// registers a lane; PyPI summaries K = 128 0.54 -> 0.67 ms, V = B at K = 32 0.23 -> 0.33 ms).
template <typename T, int VEC>
sr_status launch_fused_vec(const fused_params<T> &p, sr_context_s *ctx, cudaStream_t stream) {
    const int64_t n = std::max(p.K, p.p) / VEC;
    if (n <= 8)
        return launch_fused<T, VEC, 8, 1>(p, ctx, stream);
    if (n <= 32)
        return launch_fused<T, VEC, 32, 1>(p, ctx, stream);
    if (n <= 64)
        return launch_fused<T, VEC, 32, 2>(p, ctx, stream);
    if (n <= 128)
        return launch_fused<T, VEC, 32, 4>(p, ctx, stream);
    return launch_fused<T, VEC, 32, 8>(p, ctx, stream);
}

#include "cuda_sddmm_fused_gemm.cuh"

// Whether the fused product goes by whole tiles: where the SDDMM's GEMM tiles pay (gemm_tiles_pay:
// S's touched 128 x 128 tiles hold 3,000 entries or more), or as SPARSERING_SDDMM_GEMM forces.
sr_status fused_gemm_pays(const sr_matrix_s *S, bool *pay) {
    const int forced = gemm_setting();
    *pay = forced >= 1;
    return forced == -1 ? gemm_tiles_pay(S, pay) : SR_SUCCESS;
}

template <typename T>
sr_status run_fused(const sr_sddmm_args *a, const void *V, int64_t pcols, const sr_sddmm_out *O,
                    sr_row_normalize normalize, bool accumulate) {
    const sr_matrix_s *S = a->S;
    sr_context_s *ctx = S->ctx;
    cudaStream_t stream = stream_of(ctx);
    fused_params<T> p{};
    p.rowptr = S->rowptr;
    p.colind = S->colind;
    p.svals = a->pattern ? nullptr : static_cast<const T *>(S->values);
    p.A = static_cast<const T *>(a->A);
    p.B = static_cast<const T *>(a->B);
    p.V = static_cast<const T *>(V);
    p.K = a->K;
    p.p = pcols;
    p.nrows = S->nrows;
    p.alpha = (T)a->alpha;
    p.softmax = normalize == SR_NORMALIZE_SOFTMAX;
    p.accumulate = accumulate;
    p.O = static_cast<T *>(O->data);
    p.o_row = O->row_stride;
    p.o_col = O->col_stride;
    if (S->nrows == 0 || pcols == 0)
        return SR_SUCCESS;
    constexpr int VEC = 16 / sizeof(T);
    const int64_t widest = std::max(p.K, p.p);
    const bool vec = p.K % VEC == 0 && p.p % VEC == 0 && aligned_for<T>(p.A, VEC) && aligned_for<T>(p.B, VEC) &&
                     aligned_for<T>(p.V, VEC);
    if (widest > (vec ? 256 * VEC : 256)) {
        // past the register fragments: the general kernel, which sums in its output, so an
        // accumulating call runs it into scratch and adds that
        buffer<T> sums(ctx);
        fused_params<T> q = p;
        if (accumulate) {
            SR_TRY(sums.allocate((size_t)S->nrows * (size_t)pcols));
            q.O = sums.get();
            q.o_row = pcols;
            q.o_col = 1;
        }
        fused_rows_wide<T><<<grid_for(S->nrows * 32, kThreads), kThreads, 0, stream>>>(q);
        SR_CUDA_LAUNCHED();
        if (accumulate) {
            add_rows<T><<<grid_for(S->nrows * pcols), 256, 0, stream>>>(p.O, p.o_row, p.o_col, sums.get(), S->nrows,
                                                                        pcols);
            SR_CUDA_LAUNCHED();
        }
        SR_CUDA_TRY(sr_cuda::wait_stream(stream));
        return SR_SUCCESS;
    }
    p.nnz = S->nnz;
    if (p.nnz == 0) {
        if (!accumulate) {
            zero_empty_rows<T><<<grid_for(p.nrows * p.p), 256, 0, stream>>>(p);
            SR_CUDA_LAUNCHED();
        }
        SR_CUDA_TRY(sr_cuda::wait_stream(stream));
        return SR_SUCCESS;
    }
    if constexpr (std::is_same<T, float>::value) {
        bool tiles = false;
        if (vec && p.p <= 128)
            SR_TRY(fused_gemm_pays(S, &tiles));
        if (tiles)
            return launch_fused_gemm(p, S->ncols, tile_math_for(a->precision, a->K), ctx, stream);
    }
    if (vec)
        return launch_fused_vec<T, VEC>(p, ctx, stream);
    return launch_fused_vec<T, 1>(p, ctx, stream);
}

} // namespace

extern "C" sr_status sr_cuda_sddmm(const sr_sddmm_args *a, void *out) {
    device_guard guard(a->S->ctx->device);
    if (const sr_user_semiring *u = sr_user_semiring_of((int)a->semiring)) // the any-semiring kernel from its program
        return run_user<sddmm_launcher>(u, user_kernel_name("sddmm_interleaved", {1, 32, 0}), a, out);
    return dispatch_semiring<sddmm_launcher>(a->semiring, a->out_type, a, out);
}

namespace {
template <class Ops> struct sddmm_chooser {
    static sr_status run(const sr_sddmm_args *a, sr_sddmm_strategy *out) {
        return sddmm_launcher<Ops>::strategy(a, out);
    }
};
} // namespace

extern "C" sr_status sr_cuda_sddmm_strategy(const sr_sddmm_args *a, sr_sddmm_strategy *strategy) {
    device_guard guard(a->S->ctx->device);
    if (sr_user_semiring_of((int)a->semiring)) { // the any-semiring kernel, in S's order
        *strategy = SR_SDDMM_ROWS;
        return SR_SUCCESS;
    }
    return dispatch_semiring<sddmm_chooser>(a->semiring, a->out_type, a, strategy);
}

extern "C" sr_status sr_cuda_sddmm_spmm(const sr_sddmm_args *a, const void *V, int64_t p, const sr_sddmm_out *O,
                                        sr_row_normalize normalize, bool accumulate) {
    device_guard guard(a->S->ctx->device);
    if (a->out_type == SR_TYPE_FLOAT32)
        return run_fused<float>(a, V, p, O, normalize, accumulate);
    return run_fused<double>(a, V, p, O, normalize, accumulate);
}
