// Row panels for SDDMM (the cuSDDMM paper's row-panel tiles, included by cuda_sddmm.cu inside its
// namespace): a block takes a panel of P consecutive rows, copies their rows of A into shared
// memory, and visits the panel's entries sorted by column (the panel order, built once per S and
// P and kept with S). A group keeps B's row in registers over each run of one column, so a
// column met by several rows of the panel is read once from L2 instead of once per entry: on
// PyPI names' 3-grams a panel of 16 to 256 rows meets each of its columns 2.0 to 3.0 times, on a
// random power-law graph about once (then panels do not pay and the CSR-order kernel runs).
#pragma once

// Rows per panel: A's rows of a panel take at most kPanelBytes of shared memory (three blocks
// fit on an H100 multiprocessor), between 8 and 256 rows.
constexpr size_t kPanelBytes = 64 * 1024;
inline int64_t panel_rows(int64_t K, size_t es) {
    const int64_t fit = (int64_t)(kPanelBytes / ((size_t)(K > 0 ? K : 1) * es));
    return std::clamp<int64_t>(fit, 8, 256);
}

// Panels pay when a panel's column runs are long enough that the B rows they save outweigh what
// they add: the order's reads (8 bytes an entry), A's panel copied to shared memory, a group
// working through its entries one after another. Measured on the H100 (docs/sddmm.md) against
// the CSR-order kernel that runs without them: with sddmm_interleaved (K = 32 and 512 floats)
// panels took 0.86x its time at K = 32 with 3.0 entries a (panel, column) (PyPI names' 3-grams)
// but 1.33x with 2.15 (PyPI summaries), 0.79x at K = 512 (2 KiB rows) with 2.1; against
// sddmm_rounds (K = 36 to 128 floats) 2.2x at K = 128 with 2.6, so never against it (the
// launcher does not build the order where sddmm_rounds runs). With 2 KiB rows and more, where
// each entry's B row is most of what the CSR-order kernel moves, from 1.8: uniform 16K x 16K at
// 5%, K = 512 (32-row panels, 1.98), 2.83 ms against 4.22 (2026-11-27, panels cut into parts).
inline bool panels_pay(double reuse, int64_t K, size_t es) {
    const size_t row_bytes = (size_t)K * es;
    return reuse >= 2.5 || (reuse >= 2.0 && row_bytes >= 1024) || (reuse >= 1.8 && row_bytes >= 2048);
}

// A panel entry's record: its row in the panel (8 bits: P <= 256) over its place in the panel's
// range of entries (24 bits), so the kernel needs neither a row search nor the entry's index.
constexpr int kPanelPlaceBits = 24;
__host__ __device__ inline uint32_t panel_record(int64_t row_in_panel, int64_t place) {
    return ((uint32_t)row_in_panel << kPanelPlaceBits) | (uint32_t)place;
}

// Entry e of row r, panel r / P: key (panel, column), value its record.
__global__ void panel_keys(const int64_t *rowptr, const int32_t *colind, int64_t nrows, int64_t nnz, int64_t P,
                           int col_bits, uint64_t *keys, uint32_t *records) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < nnz; e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t row = row_of_entry(rowptr, nrows, e), panel = row / P;
        keys[e] = ((uint64_t)panel << col_bits) | (uint64_t)(uint32_t)colind[e];
        records[e] = panel_record(row - panel * P, e - rowptr[panel * P]);
    }
}

// The sorted keys' columns: the kernel reads an entry's column from the order, not from S.
__global__ void key_columns(const uint64_t *keys, int64_t n, int col_bits, int32_t *cols) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        cols[i] = (int32_t)(keys[i] & ((1ull << col_bits) - 1));
}

// The most entries a panel holds (atomicMax over the panels).
__global__ void widest_panel(const int64_t *rowptr, int64_t nrows, int64_t P, unsigned long long *widest) {
    const int64_t panels = (nrows + P - 1) / P;
    for (int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; q < panels; q += (int64_t)gridDim.x * blockDim.x) {
        const int64_t end = (q + 1) * P < nrows ? (q + 1) * P : nrows;
        atomicMax(widest, (unsigned long long)(rowptr[end] - rowptr[q * P]));
    }
}

// The reuse of a few panels spread over S (8, at most 64K entries each, their columns copied to
// the host): sorting the whole order costs a few SDDMMs, which a matrix whose panels never meet
// a column twice (a random graph) should not pay on its first call.
sr_status sample_reuse(sr_context_s *ctx, const sr_matrix_s *S, int64_t P, double *reuse) {
    cudaStream_t stream = stream_of(ctx);
    const int64_t panels = (S->nrows + P - 1) / P;
    const int samples = (int)std::min<int64_t>(panels, 8);
    int64_t entries = 0, distinct = 0;
    std::vector<int64_t> rowptr((size_t)P + 1);
    std::vector<int32_t> cols;
    for (int k = 0; k < samples; k++) {
        const int64_t r0 = panels * k / samples * P, rows = std::min(P, S->nrows - r0);
        SR_CUDA_TRY(cudaMemcpyAsync(rowptr.data(), S->rowptr + r0, (size_t)(rows + 1) * sizeof(int64_t),
                                    cudaMemcpyDeviceToHost, stream));
        SR_CUDA_TRY(sr_cuda::wait_stream(stream));
        const int64_t n = std::min<int64_t>(rowptr[(size_t)rows] - rowptr[0], 1 << 16);
        cols.resize((size_t)n);
        SR_CUDA_TRY(cudaMemcpyAsync(cols.data(), S->colind + rowptr[0], (size_t)n * sizeof(int32_t),
                                    cudaMemcpyDeviceToHost, stream));
        SR_CUDA_TRY(sr_cuda::wait_stream(stream));
        std::sort(cols.begin(), cols.end());
        entries += n;
        distinct += std::unique(cols.begin(), cols.end()) - cols.begin();
    }
    *reuse = distinct ? (double)entries / (double)distinct : 1.0;
    return SR_SUCCESS;
}

// How many distinct keys a sorted key array holds.
__global__ void count_runs(const uint64_t *keys, int64_t n, unsigned long long *runs) {
    unsigned long long mine = 0;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        mine += i == 0 || keys[i] != keys[i - 1];
    if (mine)
        atomicAdd(runs, mine);
}

// The panel order of S for P rows a panel: the k-th entry of each panel's range in column order,
// its record (records[k]) and column (cols[k]); and its reuse, entries per distinct (panel,
// column). *reuse = 0 when a panel holds 2^24 entries or more (no record can place them).
sr_status build_panel_order(sr_context_s *ctx, const sr_matrix_s *S, int64_t P, uint32_t *records, int32_t *cols,
                            double *reuse) {
    cudaStream_t stream = stream_of(ctx);
    const int64_t nnz = S->nnz, panels = (S->nrows + P - 1) / P;
    int col_bits = 1, panel_bits = 1;
    while (((int64_t)1 << col_bits) < S->ncols)
        col_bits++;
    while (((int64_t)1 << panel_bits) < panels)
        panel_bits++;
    buffer<uint64_t> keys(ctx), keys_out(ctx);
    buffer<uint32_t> unsorted(ctx);
    buffer<unsigned long long> runs(ctx);
    SR_TRY(runs.allocate(2));
    SR_CUDA_TRY(cudaMemsetAsync(runs.get(), 0, 2 * sizeof(unsigned long long), stream));
    widest_panel<<<grid_for(panels), 256, 0, stream>>>(S->rowptr, S->nrows, P, runs.get() + 1);
    SR_CUDA_LAUNCHED();
    unsigned long long widest = 0;
    SR_CUDA_TRY(cudaMemcpyAsync(&widest, runs.get() + 1, sizeof widest, cudaMemcpyDeviceToHost, stream));
    SR_CUDA_TRY(sr_cuda::wait_stream(stream));
    if (widest >= (1ull << kPanelPlaceBits)) {
        *reuse = 0;
        return SR_SUCCESS;
    }
    SR_TRY(keys.allocate((size_t)nnz));
    SR_TRY(keys_out.allocate((size_t)nnz));
    SR_TRY(unsorted.allocate((size_t)nnz));
    panel_keys<<<grid_for(nnz), 256, 0, stream>>>(S->rowptr, S->colind, S->nrows, nnz, P, col_bits, keys.get(),
                                                  unsorted.get());
    SR_CUDA_LAUNCHED();
    size_t temp_bytes = 0;
    const int end_bit = col_bits + panel_bits;
    SR_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys.get(), keys_out.get(), unsorted.get(), records,
                                                nnz, 0, end_bit, stream));
    buffer<unsigned char> temp(ctx);
    SR_TRY(temp.allocate(temp_bytes));
    SR_CUDA_TRY(cub::DeviceRadixSort::SortPairs(temp.get(), temp_bytes, keys.get(), keys_out.get(), unsorted.get(), records,
                                                nnz, 0, end_bit, stream));
    key_columns<<<grid_for(nnz), 256, 0, stream>>>(keys_out.get(), nnz, col_bits, cols);
    SR_CUDA_LAUNCHED();
    count_runs<<<grid_for(nnz), 256, 0, stream>>>(keys_out.get(), nnz, runs.get());
    SR_CUDA_LAUNCHED();
    unsigned long long distinct = 0;
    SR_CUDA_TRY(cudaMemcpyAsync(&distinct, runs.get(), sizeof distinct, cudaMemcpyDeviceToHost, stream));
    SR_CUDA_TRY(sr_cuda::wait_stream(stream)); // before the scratch goes
    *reuse = distinct ? (double)nnz / (double)distinct : 1.0;
    return SR_SUCCESS;
}

// A panel order on the device: per entry of S, in panel-then-column order, its record and column.
struct panel_order_view {
    const uint32_t *records;
    const int32_t *cols;
};

// A block per (panel, part) at a time, `parts` parts a panel: A's P rows (row-major, K a row) in
// shared memory; the block's groups of L lanes split the part's share of the panel's
// column-sorted entries into consecutive chunks. A group reads the records and columns of its
// next L entries at once (a lane each, then shuffled), and reloads B's row (R vectors a lane) only
// when the column changes.
template <class Ops, int VEC, int L, int R>
__global__ void __launch_bounds__(kThreads) sddmm_panel_entries(sddmm_params<typename Ops::value> p,
                                                                panel_order_view order, int64_t P, int64_t parts) {
    using T = typename Ops::value;
    constexpr int groups = kThreads / L;
    extern __shared__ __align__(16) unsigned char panel_smem[];
    frag<T, VEC> *As = reinterpret_cast<frag<T, VEC> *>(panel_smem);
    const int64_t nvec = p.K / VEC;
    const int lane = threadIdx.x % L, group = threadIdx.x / L;
    const unsigned mask = group_mask<L>();
    const int64_t panels = (p.nrows + P - 1) / P;
    for (int64_t w = blockIdx.x; w < panels * parts; w += gridDim.x) {
        const int64_t panel = w / parts, part = w % parts;
        const int64_t r0 = panel * P, rows = min(P, p.nrows - r0);
        const frag<T, VEC> *Ag = reinterpret_cast<const frag<T, VEC> *>(p.A + (size_t)r0 * (size_t)p.K);
        for (int64_t i = threadIdx.x; i < rows * nvec; i += kThreads)
            As[i] = Ag[i];
        const int64_t e0 = p.rowptr[r0], n = p.rowptr[r0 + rows] - e0;
        const int64_t b0 = n * part / parts, b1 = n * (part + 1) / parts, chunk = (b1 - b0 + groups - 1) / groups;
        const int64_t c0 = min(b1, b0 + group * chunk), c1 = min(b1, c0 + chunk);
        __syncthreads();
        int32_t cached = -1;
        frag<T, VEC> b[R];
        for (int64_t base = c0; base < c1; base += L) {
            const int64_t mine = base + lane;
            const uint32_t my_record = mine < c1 ? order.records[e0 + mine] : 0;
            const int32_t my_col = mine < c1 ? order.cols[e0 + mine] : -1;
            const int count = (int)min((int64_t)L, c1 - base);
            for (int j = 0; j < count; j++) {
                const uint32_t record = __shfl_sync(mask, my_record, j, L);
                const int32_t col = __shfl_sync(mask, my_col, j, L);
                if (col != cached) {
                    load_row<T, VEC, L, R>(b, p.B + (size_t)col * (size_t)p.K, lane, nvec);
                    cached = col;
                }
                const frag<T, VEC> *arow = As + (int64_t)(record >> kPanelPlaceBits) * nvec;
                T sum = Ops::identity();
#pragma unroll
                for (int r = 0; r < R; r++)
                    if (r * L + lane < nvec) {
                        const frag<T, VEC> x = arow[r * L + lane];
#pragma unroll
                        for (int v = 0; v < VEC; v++)
                            sum = Ops::add(sum, Ops::mul(x.v[v], b[r].v[v]));
                    }
                sum = group_reduce<Ops, L>(sum);
                const int64_t e = e0 + (record & ((1u << kPanelPlaceBits) - 1));
                if (lane == 0)
                    p.out[e] = finish<Ops>(p, sum, e);
            }
        }
        __syncthreads(); // the next panel overwrites A's rows
    }
}

template <typename T> size_t panel_smem_bytes(int64_t P, int64_t K) { return (size_t)P * (size_t)K * sizeof(T); }

// The launch: blocks up to four times those that fit on the device at once, a panel cut into
// parts when the panels alone are fewer (dense-ish S: 16K rows make 64 panels of 256), each part
// keeping at least 16 entries a row of the panel so that copying A's rows stays a small share.
template <typename T, int VEC, int L, int R, class Ops>
sr_status launch_panel_entries(const sddmm_params<T> &p, panel_order_view order, int64_t P, cudaStream_t stream) {
    const size_t smem = panel_smem_bytes<T>(P, p.K);
    auto kernel = sddmm_panel_entries<Ops, VEC, L, R>;
    SR_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    int per_sm = 1;
    SR_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, smem));
    const int64_t panels = (p.nrows + P - 1) / P, wanted = (int64_t)sm_count() * std::max(per_sm, 1) * 4;
    const int64_t most = std::max<int64_t>(1, p.nnz / std::max<int64_t>(1, panels * P * 16));
    const int64_t parts = std::clamp<int64_t>((wanted + panels - 1) / panels, 1, most);
    const int64_t blocks = std::min<int64_t>(panels * parts, wanted);
    kernel<<<(unsigned)std::max<int64_t>(blocks, 1), kThreads, smem, stream>>>(p, order, P, parts);
    SR_CUDA_LAUNCHED();
    return SR_SUCCESS;
}

// The fewest lanes an entry that cover K in one round of vectors (with_lanes, cuda_sddmm.cu).
template <typename T, int VEC, class Ops>
sr_status launch_panels(const sddmm_params<T> &p, panel_order_view order, int64_t P, cudaStream_t stream) {
    return with_lanes(p.K / VEC, [&](auto L, auto R) {
        return launch_panel_entries<T, VEC, decltype(L)::value, decltype(R)::value, Ops>(p, order, P, stream);
    });
}
