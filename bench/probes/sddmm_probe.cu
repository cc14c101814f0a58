// SDDMM's CSR-order kernel on the device alone (cudaEvents, no call overhead): the library's
// design (a group of L lanes per entry, one entry a step, the row found per entry) against batched
// forms (a group reads the columns and rows of its next L entries at once, a lane each, then takes
// U entries a step so that U rows of B are in flight), with L and U varied. float32, plus_times,
// out = A·Bᵀ at S's entries. Reads S from files that bench/probes/sddmm_probe.py writes.
//   nvcc -O3 -arch=sm_90 -std=c++17 -o sddmm_probe bench/probes/sddmm_probe.cu
//   python3 bench/probes/sddmm_probe.py ../shared/data /tmp/sddmm && ./sddmm_probe /tmp/sddmm/*.csr
// H100 (2026-11-24; lane_entry 2026-11-26), kernel medians (floor: bench_sddmm.floor_bytes at 2.95 TB/s):
//   PyPI summaries K = 32: current L8 0.097 ms, batched L8 U2 0.095 (floor 0.025); K = 128: current
//   L32 0.290, batched L8 U2 0.160, L16 U4 0.191, L32 U4 0.222 (floor 0.081).
//   PyPI names 3-grams K = 32: 0.411, batched L4 U4 0.329, folded L4 U4 0.307 (floor 0.090);
//   K = 128: 1.519, batched L8 U2 0.648, L16 U4 0.780, L32 U4 1.010 (floor 0.211).
//   power-law 500K avg 20 K = 32: 0.442, batched L4 U4 0.406 (floor 0.107); K = 128: 1.800,
//   batched L16 U4 1.685, L8 U2 1.714 (floor 0.536): B overflows L2, the gathers go to DRAM.
//   Chunks of 64 entries a group beat 256 everywhere; the folded reduction (L - 1 shuffles a
//   round of L entries instead of log2(L) an entry) did not pay beyond 3-grams at K = 32.
//   K = 32, 2026-11-26: batched L4 U4 c64 0.099 / 0.328 / 0.409 ms (summaries / 3-grams /
//   power-law, now the library's choice), folded L4 U4 c64 0.095 / 0.306 / 0.403, lane-entry U1
//   c256 0.129 / 0.573 / 0.509 (c1024: 0.148 / 0.556 / 0.472): a lane an entry loses.
//   2026-11-26 (eighteenth session): batched L4 U4 c64 at four blocks an SM (64 registers) 0.112 /
//   0.356 / 0.473, with 8 entries in flight 0.231 / 0.869 / 1.121; hot (the H most frequent
//   columns' rows of B in shared memory) H = 256 0.126 / 0.422 / 0.466, 512 0.136 / 0.440 / 0.479,
//   768 0.188 / 0.579 / 0.552 (51-65% / 30-53% / 0% of the entries in hot columns): all slower.
#include "probe_common.cuh"

struct params {
    const int64_t *rowptr;
    const int32_t *colind;
    const float *A, *B;
    int64_t K, nrows, nnz;
    float *out;
};

template <int L> __device__ __forceinline__ unsigned group_mask() {
    return L == 32 ? 0xffffffffu : (((1u << L) - 1u) << (threadIdx.x % 32 / L * L));
}
template <int L> __device__ __forceinline__ float group_sum(float x) {
#pragma unroll
    for (int o = L / 2; o > 0; o /= 2)
        x += __shfl_xor_sync(group_mask<L>(), x, o, L);
    return x;
}
__device__ __forceinline__ int64_t row_of_entry(const int64_t *rowptr, int64_t nrows, int64_t k) {
    int64_t lo = 0, hi = nrows;
    while (hi - lo > 1) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (rowptr[mid] <= k)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}
__device__ __forceinline__ int64_t find_row(const int64_t *rowptr, int64_t nrows, int64_t row, int64_t e) {
    if (row >= 0 && rowptr[row] <= e)
        for (int step = 0; step < 8; step++, row++)
            if (rowptr[row + 1] > e)
                return row;
    return row_of_entry(rowptr, nrows, e);
}
__device__ __forceinline__ float dot4(float4 a, float4 b, float s) {
    return s + a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
}

// The library's kernel today (sddmm_entries with CACHE, U = 1, VEC = 4).
template <int L, int R> __global__ void __launch_bounds__(256) current(params p, int64_t chunk) {
    constexpr int G = 32 / L;
    const int lane = threadIdx.x % L, group = threadIdx.x % 32 / L;
    const int64_t warp = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int64_t warps = (int64_t)gridDim.x * blockDim.x / 32;
    const int64_t nvec = p.K / 4;
    for (int64_t c0 = warp * chunk; c0 < p.nnz; c0 += warps * chunk) {
        const int64_t c1 = min(c0 + chunk, p.nnz);
        int64_t row = -1, cached = -1;
        float4 a[R];
        for (int64_t e = c0 + group; e < c1; e += G) {
            row = find_row(p.rowptr, p.nrows, row, e);
            if (row != cached) {
                for (int r = 0; r < R; r++)
                    if (r * L + lane < nvec)
                        a[r] = reinterpret_cast<const float4 *>(p.A + row * p.K)[r * L + lane];
                cached = row;
            }
            const float4 *b = reinterpret_cast<const float4 *>(p.B + (int64_t)p.colind[e] * p.K);
            float s = 0;
#pragma unroll
            for (int r = 0; r < R; r++)
                if (r * L + lane < nvec)
                    s = dot4(a[r], b[r * L + lane], s);
            s = group_sum<L>(s);
            if (lane == 0)
                p.out[e] = s;
        }
    }
}

// Batched with the transposed reduction: the group's L lanes hold partial sums of L entries (a
// round) and fold them in L - 1 shuffles, halving the entries a lane keeps each step, so lane i
// ends with the whole sum of one entry (i, bit-reversed by the folds' order) instead of every lane
// paying log2(L) shuffles per entry. Rows of B for U entries are loaded before any is used.
template <int L, int R, int U> __global__ void __launch_bounds__(256) folded(params p, int64_t chunk) {
    const int lane = threadIdx.x % L;
    const unsigned mask = group_mask<L>();
    const int64_t group = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / L;
    const int64_t groups = (int64_t)gridDim.x * blockDim.x / L;
    const int64_t nvec = p.K / 4;
    for (int64_t c0 = group * chunk; c0 < p.nnz; c0 += groups * chunk) {
        const int64_t c1 = min(c0 + chunk, p.nnz);
        int64_t row = row_of_entry(p.rowptr, p.nrows, c0), cached = -1;
        float4 a[R];
        for (int64_t base = c0; base < c1; base += L) {
            const int64_t mine = base + lane;
            const int count = (int)min((int64_t)L, c1 - base);
            int32_t my_col = 0;
            int64_t my_row = row;
            if (lane < count) {
                my_col = p.colind[mine];
                while (p.rowptr[my_row + 1] <= mine)
                    my_row++;
            }
            row = __shfl_sync(mask, my_row, count - 1, L);
            float part[L];
#pragma unroll
            for (int j = 0; j < L; j += U) {
                int32_t col[U];
                int64_t rw[U];
                float4 b[U][R];
#pragma unroll
                for (int u = 0; u < U; u++) {
                    col[u] = __shfl_sync(mask, my_col, j + u, L);
                    rw[u] = __shfl_sync(mask, my_row, j + u, L);
                }
#pragma unroll
                for (int u = 0; u < U; u++)
                    if (j + u < count)
#pragma unroll
                        for (int r = 0; r < R; r++)
                            if (r * L + lane < nvec)
                                b[u][r] = reinterpret_cast<const float4 *>(p.B + (int64_t)col[u] * p.K)[r * L + lane];
#pragma unroll
                for (int u = 0; u < U; u++) {
                    part[j + u] = 0;
                    if (j + u >= count)
                        continue;
                    if (rw[u] != cached) {
#pragma unroll
                        for (int r = 0; r < R; r++)
                            if (r * L + lane < nvec)
                                a[r] = reinterpret_cast<const float4 *>(p.A + rw[u] * p.K)[r * L + lane];
                        cached = rw[u];
                    }
#pragma unroll
                    for (int r = 0; r < R; r++)
                        if (r * L + lane < nvec)
                            part[j + u] = dot4(a[r], b[u][r], part[j + u]);
                }
            }
            // fold: at width w, lanes with bit w/2 set keep the upper half of the w entries
#pragma unroll
            for (int w = L; w > 1; w /= 2) {
                const bool upper = lane & (w / 2);
#pragma unroll
                for (int i = 0; i < w / 2; i++) {
                    const float send = upper ? part[i] : part[i + w / 2];
                    const float keep = upper ? part[i + w / 2] : part[i];
                    part[i] = keep + __shfl_xor_sync(mask, send, w / 2, L);
                }
            }
            // lane l holds entry sum(bit b of l set -> w/2 offset) = l itself: the upper lanes kept
            // index i + w/2 at each width, so lane l ends with entry l
            if (lane < count)
                p.out[mine] = part[0];
        }
    }
}

// A lane an entry (2026-11-26; slower than groups of 4 lanes, see the top): a warp takes `chunk` consecutive entries in
// rounds of 32·U, lane l the entries base + l + 32u, so each entry's index, row and column work is
// done once (the library's groups of 8 lanes repeat it 8 times at K = 32: ncu, instruction-bound).
// A lane finds its row stepping from the round's first row, keeps its row of A (NV vectors) in
// registers while the row does not change, and loads its U rows of B before using any; the
// writes of a round coalesce. K = NV·4 floats exactly.
template <int NV, int U> __global__ void __launch_bounds__(256) lane_entry(params p, int64_t chunk) {
    const int lane = threadIdx.x % 32;
    const int64_t warp = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int64_t warps = (int64_t)gridDim.x * blockDim.x / 32;
    const float4 *A4 = reinterpret_cast<const float4 *>(p.A), *B4 = reinterpret_cast<const float4 *>(p.B);
    for (int64_t c0 = warp * chunk; c0 < p.nnz; c0 += warps * chunk) {
        const int64_t c1 = min(c0 + chunk, p.nnz);
        int64_t row = row_of_entry(p.rowptr, p.nrows, c0), cached = -1;
        float4 a[NV];
        for (int64_t base = c0; base < c1; base += 32 * U) {
            int64_t e[U], rw[U];
            int32_t col[U];
            int64_t from = row;
#pragma unroll
            for (int u = 0; u < U; u++) {
                e[u] = base + 32 * u + lane;
                rw[u] = from;
                col[u] = 0;
                if (e[u] < c1) {
                    col[u] = p.colind[e[u]];
                    rw[u] = find_row(p.rowptr, p.nrows, from, e[u]);
                    from = rw[u];
                }
            }
            float4 b[U][NV];
#pragma unroll
            for (int u = 0; u < U; u++)
                if (e[u] < c1)
#pragma unroll
                    for (int v = 0; v < NV; v++)
                        b[u][v] = B4[(int64_t)col[u] * NV + v];
#pragma unroll
            for (int u = 0; u < U; u++) {
                if (e[u] >= c1)
                    continue;
                if (rw[u] != cached) {
#pragma unroll
                    for (int v = 0; v < NV; v++)
                        a[v] = A4[rw[u] * NV + v];
                    cached = rw[u];
                }
                float s = 0;
#pragma unroll
                for (int v = 0; v < NV; v++)
                    s = dot4(a[v], b[u][v], s);
                p.out[e[u]] = s;
            }
            // the next round starts from the row of this round's last entry
            const int64_t last = min(base + 32 * U, c1) - 1 - base;
            int64_t pick = rw[0];
#pragma unroll
            for (int u = 1; u < U; u++)
                if (u == (int)(last / 32))
                    pick = rw[u];
            row = __shfl_sync(~0u, pick, (int)(last % 32));
        }
    }
}

static std::vector<char> slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    std::vector<char> b((size_t)ftell(f));
    fseek(f, 0, SEEK_SET);
    if (fread(b.data(), 1, b.size(), f) != b.size())
        exit(1);
    fclose(f);
    return b;
}

// Batched: a group takes `chunk` consecutive entries; per round of L entries each lane reads one
// entry's column and finds its row (stepping from the round's first row), then the group takes
// the round's entries U at a time, their U rows of B loaded before any is used. HOT: the rows of
// B of the H most frequent columns of S sit in shared memory (loaded once a block; the grid is
// one resident wave): an entry in a hot column reads its row of B from there, the others through
// L1/L2 as before. ncu (H100, 3-grams K = 32): the plain kernel hits L1 67% and L2 81%, at 34%
// occupancy and 51% of L2's throughput, latency-bound.
struct hot_rows_of_b {
    const int32_t *slot_of = nullptr, *column_of = nullptr;
    int H = 0;
};

template <int L, int R, int U, int MINB = 1, bool HOT = false>
__global__ void __launch_bounds__(256, MINB) batched(params p, int64_t chunk, hot_rows_of_b hot) {
    extern __shared__ float4 hot_rows[];
    const int lane = threadIdx.x % L;
    const unsigned mask = group_mask<L>();
    const int64_t nvec = p.K / 4;
    if (HOT) {
        for (int i = threadIdx.x; i < hot.H * nvec; i += blockDim.x)
            hot_rows[i] = reinterpret_cast<const float4 *>(p.B + (int64_t)hot.column_of[i / nvec] * p.K)[i % nvec];
        __syncthreads();
    }
    const int64_t group = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / L;
    const int64_t groups = (int64_t)gridDim.x * blockDim.x / L;
    for (int64_t c0 = group * chunk; c0 < p.nnz; c0 += groups * chunk) {
        const int64_t c1 = min(c0 + chunk, p.nnz);
        int64_t row = row_of_entry(p.rowptr, p.nrows, c0), cached = -1;
        float4 a[R];
        for (int64_t base = c0; base < c1; base += L) {
            const int64_t mine = base + lane;
            const int count = (int)min((int64_t)L, c1 - base);
            int32_t my_col = 0, my_slot = -1;
            int64_t my_row = row;
            if (lane < count) {
                my_col = p.colind[mine];
                my_slot = HOT ? hot.slot_of[my_col] : -1;
                while (p.rowptr[my_row + 1] <= mine)
                    my_row++;
            }
            row = __shfl_sync(mask, my_row, count - 1, L);
            for (int j = 0; j < count; j += U) {
                int64_t rw[U];
                float4 b[U][R];
#pragma unroll
                for (int u = 0; u < U; u++) {
                    const int32_t col = __shfl_sync(mask, my_col, (j + u) % L, L);
                    const int32_t slot = __shfl_sync(mask, my_slot, (j + u) % L, L);
                    rw[u] = __shfl_sync(mask, my_row, (j + u) % L, L);
                    const float4 *src = HOT && slot >= 0 ? hot_rows + (int64_t)slot * nvec
                                                  : reinterpret_cast<const float4 *>(p.B + (int64_t)col * p.K);
                    if (j + u < count)
#pragma unroll
                        for (int r = 0; r < R; r++)
                            if (r * L + lane < nvec)
                                b[u][r] = src[r * L + lane];
                }
                float s[U];
#pragma unroll
                for (int u = 0; u < U; u++) {
                    s[u] = 0;
                    if (j + u >= count)
                        continue;
                    if (rw[u] != cached) {
#pragma unroll
                        for (int r = 0; r < R; r++)
                            if (r * L + lane < nvec)
                                a[r] = reinterpret_cast<const float4 *>(p.A + rw[u] * p.K)[r * L + lane];
                        cached = rw[u];
                    }
#pragma unroll
                    for (int r = 0; r < R; r++)
                        if (r * L + lane < nvec)
                            s[u] = dot4(a[r], b[u][r], s[u]);
                }
#pragma unroll
                for (int u = 0; u < U; u++)
                    s[u] = group_sum<L>(s[u]);
                if (lane == 0)
#pragma unroll
                    for (int u = 0; u < U; u++)
                        if (j + u < count)
                            p.out[base + j + u] = s[u];
            }
        }
    }
}

int main(int argc, char **argv) {
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    for (int f = 1; f < argc; f++) {
        // file: int64 m, n, nnz, then m + 1 int64 row pointers, then nnz int32 columns
        std::vector<char> raw = slurp(argv[f]);
        const int64_t *h = reinterpret_cast<const int64_t *>(raw.data());
        const int64_t m = h[0], n = h[1], nnz = h[2];
        params p{};
        int64_t *rowptr;
        int32_t *colind;
        CK(cudaMalloc(&rowptr, (m + 1) * 8));
        CK(cudaMalloc(&colind, nnz * 4));
        CK(cudaMemcpy(rowptr, h + 3, (m + 1) * 8, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(colind, h + 3 + m + 1, nnz * 4, cudaMemcpyHostToDevice));
        // the columns by entry count, most first: slot_of[j] (-1 past the first 1024), column_of
        std::vector<int64_t> counts(n, 0);
        const int32_t *cols_host = reinterpret_cast<const int32_t *>(h + 3 + m + 1);
        for (int64_t e = 0; e < nnz; e++)
            counts[cols_host[e]]++;
        std::vector<int32_t> by_count(n), slot_host(n, -1);
        for (int64_t j = 0; j < n; j++)
            by_count[j] = (int32_t)j;
        const int64_t most = std::min<int64_t>(n, 1024);
        std::partial_sort(by_count.begin(), by_count.begin() + most, by_count.end(),
                          [&](int32_t x, int32_t y) { return counts[x] > counts[y]; });
        int32_t *slot_of, *column_of;
        CK(cudaMalloc(&slot_of, n * 4));
        CK(cudaMalloc(&column_of, most * 4));
        CK(cudaMemcpy(column_of, by_count.data(), most * 4, cudaMemcpyHostToDevice));
        auto set_hot = [&](int64_t H) { // the first H columns hot; their share of the entries
            std::fill(slot_host.begin(), slot_host.end(), -1);
            int64_t covered = 0;
            for (int64_t r = 0; r < H; r++)
                slot_host[by_count[r]] = (int32_t)r, covered += counts[by_count[r]];
            CK(cudaMemcpy(slot_of, slot_host.data(), n * 4, cudaMemcpyHostToDevice));
            return (double)covered / (double)std::max<int64_t>(nnz, 1);
        };
        p.rowptr = rowptr, p.colind = colind, p.nrows = m, p.nnz = nnz;
        float *out, *ref;
        CK(cudaMalloc(&out, nnz * 4));
        CK(cudaMalloc(&ref, nnz * 4));
        printf("%s: %lld x %lld, %lld entries\n", argv[f], (long long)m, (long long)n, (long long)nnz);
        for (int K : {32, 128}) {
            float *A, *B;
            CK(cudaMalloc(&A, m * K * 4));
            CK(cudaMalloc(&B, n * K * 4));
            fill<<<1024, 256>>>(A, m * K, 1);
            fill<<<1024, 256>>>(B, n * K, 2);
            p.A = A, p.B = B, p.K = K;
            std::vector<float> want(nnz), got(nnz);
            auto timed = [&](const char *name, auto launch, bool is_ref) {
                p.out = is_ref ? ref : out;
                CK(cudaMemset(p.out, 0, nnz * 4));
                const float ms = median_ms(launch);
                double err = 0;
                if (is_ref) {
                    CK(cudaMemcpy(want.data(), ref, nnz * 4, cudaMemcpyDeviceToHost));
                } else {
                    CK(cudaMemcpy(got.data(), out, nnz * 4, cudaMemcpyDeviceToHost));
                    for (int64_t i = 0; i < nnz; i++)
                        err = std::max(err, (double)std::abs(got[i] - want[i]) / (std::abs(want[i]) + 1e-3));
                }
                printf("  K %4d %-26s %8.3f ms  %7.0f GFLOP/s  err %.1e\n", K, name, ms, 2.0 * nnz * K / ms / 1e6,
                       err);
                fflush(stdout);
            };
            auto cur_launch = [&](auto kernel, int G) {
                const int64_t warps_wanted = (int64_t)sms * 32;
                int64_t chunk = 16 * G;
                if ((nnz + chunk - 1) / chunk < warps_wanted)
                    chunk = std::max<int64_t>(G, (nnz + warps_wanted - 1) / warps_wanted);
                const int64_t warps = (nnz + chunk - 1) / chunk;
                const int64_t blocks = std::min<int64_t>((warps * 32 + 255) / 256, (int64_t)sms * 64);
                kernel<<<(unsigned)blocks, 256>>>(p, chunk);
            };
            auto group_launch = [&](auto kernel, int L, int64_t chunk, auto... extra) {
                const int64_t groups = (nnz + chunk - 1) / chunk;
                const int64_t blocks = std::min<int64_t>((groups * L + 255) / 256, (int64_t)sms * 64);
                kernel<<<(unsigned)std::max<int64_t>(blocks, 1), 256>>>(p, chunk, extra...);
            };
            if (K == 32) {
                timed("current L8", [&] { cur_launch(current<8, 1>, 4); }, true);
                for (int64_t chunk : {64, 256}) {
                    char name[64];
                    snprintf(name, sizeof name, "batched L8 U2 c%lld", (long long)chunk);
                    timed(name, [&] { group_launch(batched<8, 1, 2>, 8, chunk, hot_rows_of_b{}); }, false);
                    snprintf(name, sizeof name, "batched L8 U4 c%lld", (long long)chunk);
                    timed(name, [&] { group_launch(batched<8, 1, 4>, 8, chunk, hot_rows_of_b{}); }, false);
                    snprintf(name, sizeof name, "batched L4 U4 c%lld", (long long)chunk);
                    timed(name, [&] { group_launch(batched<4, 2, 4>, 4, chunk, hot_rows_of_b{}); }, false);
                    snprintf(name, sizeof name, "folded L8 U4 c%lld", (long long)chunk);
                    timed(name, [&] { group_launch(folded<8, 1, 4>, 8, chunk); }, false);
                    snprintf(name, sizeof name, "folded L4 U4 c%lld", (long long)chunk);
                    timed(name, [&] { group_launch(folded<4, 2, 4>, 4, chunk); }, false);
                }
                timed("batched L4 U4 c64 minb4", [&] { group_launch(batched<4, 2, 4, 4>, 4, 64, hot_rows_of_b{}); }, false);
                timed("batched L4 U8 c64 minb3", [&] { group_launch(batched<4, 2, 8, 3>, 4, 64, hot_rows_of_b{}); }, false);
                timed("batched L4 U4 c64 minb3", [&] { group_launch(batched<4, 2, 4, 3>, 4, 64, hot_rows_of_b{}); }, false);
                auto hot_launch = [&](auto kernel, int H) {
                    const size_t smem = (size_t)H * K * 4;
                    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
                    int per_sm = 0;
                    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, 256, smem));
                    const int64_t groups = (nnz + 63) / 64;
                    const int64_t blocks = std::min<int64_t>((groups * 4 + 255) / 256, (int64_t)sms * std::max(per_sm, 1));
                    kernel<<<(unsigned)std::max<int64_t>(blocks, 1), 256, smem>>>(p, 64, hot_rows_of_b{slot_of, column_of, H});
                };
                for (int H : {256, 512, 768}) {
                    if (H > most)
                        continue;
                    char name[64];
                    const double cover = set_hot(H);
                    snprintf(name, sizeof name, "hot H%d (%.0f%%) minb3", H, 100 * cover);
                    timed(name, [&] { hot_launch(batched<4, 2, 4, 3, true>, H); }, false);
                    snprintf(name, sizeof name, "hot H%d (%.0f%%) minb2", H, 100 * cover);
                    timed(name, [&] { hot_launch(batched<4, 2, 4, 2, true>, H); }, false);
                }
                for (int64_t chunk : {256}) {
                    char name[64];
                    snprintf(name, sizeof name, "lane-entry U1 c%lld", (long long)chunk);
                    timed(name, [&] { group_launch(lane_entry<8, 1>, 32, chunk); }, false);
                    snprintf(name, sizeof name, "lane-entry U2 c%lld", (long long)chunk);
                    timed(name, [&] { group_launch(lane_entry<8, 2>, 32, chunk); }, false);
                }
            } else {
                timed("current L32", [&] { cur_launch(current<32, 1>, 1); }, true);
                for (int64_t chunk : {64, 256}) {
                    char name[64];
                    snprintf(name, sizeof name, "batched L32 U4 c%lld", (long long)chunk);
                    timed(name, [&] { group_launch(batched<32, 1, 4>, 32, chunk, hot_rows_of_b{}); }, false);
                    snprintf(name, sizeof name, "batched L16 U4 c%lld", (long long)chunk);
                    timed(name, [&] { group_launch(batched<16, 2, 4>, 16, chunk, hot_rows_of_b{}); }, false);
                    snprintf(name, sizeof name, "batched L8 U2 c%lld", (long long)chunk);
                    timed(name, [&] { group_launch(batched<8, 4, 2>, 8, chunk, hot_rows_of_b{}); }, false);
                    snprintf(name, sizeof name, "batched L8 U4 c%lld", (long long)chunk);
                    timed(name, [&] { group_launch(batched<8, 4, 4>, 8, chunk, hot_rows_of_b{}); }, false);
                    snprintf(name, sizeof name, "folded L8 U4 c%lld", (long long)chunk);
                    timed(name, [&] { group_launch(folded<8, 4, 4>, 8, chunk); }, false);
                    snprintf(name, sizeof name, "folded L16 U4 c%lld", (long long)chunk);
                    timed(name, [&] { group_launch(folded<16, 2, 4>, 16, chunk); }, false);
                }
            }
            CK(cudaFree(A));
            CK(cudaFree(B));
        }
        CK(cudaFree(rowptr));
        CK(cudaFree(colind));
        CK(cudaFree(slot_of));
        CK(cudaFree(column_of));
        CK(cudaFree(out));
        CK(cudaFree(ref));
    }
    return 0;
}
