// Column ranges for the fused pattern's sums into w on wide X with long rows and evenly spread
// columns (10^4 x 10^7, 1000 entries a row; included by cuda_fused.cu inside its namespace).
//
// There no block's shared memory holds w, no set of hot columns holds most entries, and adding
// each entry into w in global memory costs a random read-modify-write of a 32-byte sector per
// entry (10^7 of them over 40 MB, which does not stay in L2 beside y). Instead, as the CPU backend
// does for X wider than tall: the rows' scales s(i) = α·v(i)·(X(i,:)·y) come first (rows_xy), then
// block b owns w's columns [b·R, (b+1)·R) in shared memory; its threads take a row each and add
// s(i)·X(i,j) for the row's entries in the range, and the block writes w = sums + β·z over its
// range once: w is written in full lines, with no atomics in global memory and no β·z pass.
//
// Where each row's entries of each range start is a per-matrix plan (built on first use for a
// range width, kept with the matrix): searching for it in every block instead read each row's
// columns ~10 sectors at a time in all 264 blocks, 0.85 GB on 10^4 x 10^7, and took 0.60 ms
// against the global atomics' 0.42 (bench/results-fused-h100.txt).
#pragma once
// (needs <mutex> and <new>, included by cuda_fused.cu outside its namespace)

// The plan: for range r (0 <= r <= ranges) and row i, first[r·m + i] = the row's first entry at or
// past column r·width, counted from the row's start (so int32 whatever X's entry count).
struct column_range_plan {
    int64_t width, ranges;
    int32_t *first;
    size_t bytes;
};
std::mutex column_range_mutex;

void free_column_range_plan(sr_matrix_s *A) {
    auto *p = static_cast<column_range_plan *>(A->column_ranges);
    if (p) {
        sr_mem_free(A->ctx, SR_DEVICE, p->first, p->bytes);
        delete p;
    }
    A->column_ranges = nullptr;
}

__global__ void range_starts(const int64_t *rowptr, const int32_t *colind, int64_t m, int64_t width, int64_t ranges,
                             int32_t *first) {
    const int64_t total = (ranges + 1) * m;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total; t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = t / m, i = t % m;
        first[t] = (int32_t)sr_cuda::lower_bound(colind + rowptr[i], rowptr[i + 1] - rowptr[i], r * width);
    }
}

// The plan of X for ranges of `width` columns, built on first use (one per matrix: another width
// replaces it).
sr_status column_ranges_of(sr_context_s *ctx, const sr_matrix_s *X, int64_t width, const column_range_plan **out) {
    std::lock_guard<std::mutex> lock(column_range_mutex);
    auto *A = const_cast<sr_matrix_s *>(X); // the cache is not part of the matrix's value
    auto *p = static_cast<column_range_plan *>(A->column_ranges);
    if (p && p->width == width) {
        *out = p;
        return SR_SUCCESS;
    }
    if (A->free_column_ranges)
        A->free_column_ranges(A);
    const int64_t ranges = (X->ncols + width - 1) / width, m = X->nrows;
    const size_t bytes = (size_t)(ranges + 1) * (size_t)m * sizeof(int32_t);
    void *memory = nullptr;
    SR_TRY(sr_mem_alloc(A->ctx, SR_DEVICE, bytes, &memory));
    range_starts<<<grid_for((ranges + 1) * m), 256, 0, stream_of(ctx)>>>(X->rowptr, X->colind, m, width, ranges,
                                                                        static_cast<int32_t *>(memory));
    cudaError_t launched = cudaGetLastError();
    p = launched == cudaSuccess ? new (std::nothrow) column_range_plan{width, ranges, static_cast<int32_t *>(memory), bytes}
                                : nullptr;
    if (!p) {
        sr_mem_free(A->ctx, SR_DEVICE, memory, bytes);
        return launched != cudaSuccess ? sr_cuda_fail(launched, "range_starts", __FILE__, __LINE__)
                                       : sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for a column-range plan");
    }
    A->column_ranges = p;
    A->free_column_ranges = free_column_range_plan;
    *out = p;
    return SR_SUCCESS;
}

// The scales s(i) = α·v(i)·y(i) of XTY.
template <typename T> __global__ void xty_scales(fused_params<T> p, T *scale) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < p.m; i += (int64_t)gridDim.x * blockDim.x)
        scale[i] = p.alpha * (p.v ? p.v[i] : T(1)) * p.y[i];
}

// Block r adds s(i)·X(i,j) for the entries of each row i in its range [c0, c1) into its shared
// sums, then writes w over the range. G lanes take a row's entries in the range together (coalesced
// reads of colind and values), each warp U·32/G rows at once, so that each thread has U loads in
// flight: one thread a row walking its entries alone read 32 rows' scattered sectors per warp
// instruction and stayed latency-bound.
template <int G, int U, typename T>
__global__ void __launch_bounds__(1024, 1)
    column_range_sums(fused_params<T> p, const T *scale, int64_t width, const int32_t *first) {
    extern __shared__ unsigned char smem_raw[];
    T *sums = reinterpret_cast<T *>(smem_raw);
    const int64_t r = blockIdx.x, c0 = r * width, c1 = c0 + width < p.n ? c0 + width : p.n;
    const int32_t *starts = first + r * p.m, *ends = starts + p.m;
    for (int64_t j = threadIdx.x; j < c1 - c0; j += blockDim.x)
        sums[j] = 0;
    __syncthreads();
    // a warp takes 32/G·U rows a round, its G-lane groups U each; the loops stay warp-uniform for
    // __any_sync
    constexpr int kWarpRows = 32 / G * U;
    const int lane = threadIdx.x % 32, part = lane % G, mine = lane / G * U;
    const int64_t warps = blockDim.x / 32;
    for (int64_t base = (int64_t)(threadIdx.x / 32) * kWarpRows; base < p.m; base += warps * kWarpRows) {
        int64_t k[U], end[U];
        T s[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int64_t i = base + mine + u < p.m ? base + mine + u : -1;
            s[u] = i >= 0 ? scale[i] : T(0);
            const int64_t row = i >= 0 ? p.rowptr[i] : 0;
            k[u] = i >= 0 && s[u] != T(0) ? row + starts[i] + part : 0;
            end[u] = i >= 0 && s[u] != T(0) ? row + ends[i] : 0;
        }
        for (bool more = true; __any_sync(0xffffffffu, more);) {
            int32_t col[U];
            T x[U];
#pragma unroll
            for (int u = 0; u < U; u++)
                if (k[u] < end[u]) {
                    col[u] = p.colind[k[u]];
                    x[u] = p.values ? p.values[k[u]] : T(1);
                }
            more = false;
#pragma unroll
            for (int u = 0; u < U; u++)
                if (k[u] < end[u]) {
                    atomicAdd(&sums[col[u] - c0], x[u] * s[u]);
                    k[u] += G;
                    more |= k[u] < end[u];
                }
        }
    }
    __syncthreads();
    for (int64_t j = threadIdx.x; j < c1 - c0; j += blockDim.x)
        p.w[c0 + j] = sums[j] + (p.z ? p.beta * p.z[c0 + j] : T(0));
}

// Ranges as wide as a block's shared memory holds, narrowed so that they fill whole waves of one
// block an SM.
template <typename T> int64_t column_range_width(int64_t n) {
    const int64_t widest = (int64_t)(shared_per_block() / sizeof(T)), sms = sm_count();
    const int64_t waves = (n + widest * sms - 1) / (widest * sms);
    return (n + waves * sms - 1) / (waves * sms);
}

// Column ranges pay where X is wider than a block's shared memory holds, its rows past the row
// tiles' (μ > kTileMaxMean) and long enough that each range meets a row about once or more, so the
// plan (ranges + 1 int32s a row) takes at most one int32 an entry, and its columns are spread (the
// hot columns of a block's width hold under half the entries: else launch_sums keeps those in
// shared memory; `coverage` is that share). SPARSERING_FUSED_COLUMNS=0 turns them off.
template <typename T> bool column_ranges_pay(const sr_matrix_s *X, double coverage) {
    if (sr_setting("SPARSERING_FUSED_COLUMNS", 1) == 0)
        return false;
    const double mu = (double)X->nnz / (double)(X->nrows > 0 ? X->nrows : 1);
    const int64_t width = column_range_width<T>(X->ncols), ranges = (X->ncols + width - 1) / width;
    return (size_t)X->ncols * sizeof(T) > shared_per_block() && mu > kTileMaxMean &&
           (ranges + 1) * X->nrows <= X->nnz && coverage < 0.5;
}

template <int G, typename T>
sr_status launch_range_sums(const fused_params<T> &p, const T *scale, const column_range_plan *plan,
                            cudaStream_t stream) {
    constexpr int kRowsInFlight = 4; // a group's rows loaded together
    auto kernel = column_range_sums<G, kRowsInFlight, T>;
    const size_t smem = (size_t)plan->width * sizeof(T);
    SR_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    kernel<<<(unsigned)plan->ranges, 1024, smem, stream>>>(p, scale, plan->width, plan->first);
    SR_CUDA_LAUNCHED();
    return SR_SUCCESS;
}

// w = α·Xᵀ(v ⊙ X·y) + β·z (XTVXY) or α·Xᵀ(v ⊙ y) + β·z (XTY), all of w written.
template <int VS, typename T>
sr_status launch_column_ranges(sr_context_s *ctx, const fused_params<T> &p, const sr_matrix_s *X,
                               cudaStream_t stream) {
    const column_range_plan *plan = nullptr;
    SR_TRY(column_ranges_of(ctx, X, column_range_width<T>(p.n), &plan));
    buffer<T> scale(ctx);
    SR_TRY(scale.allocate((size_t)p.m));
    if (p.form == SR_FORM_XTY) {
        xty_scales<T><<<grid_for(p.m), 256, 0, stream>>>(p, scale.get());
    } else {
        fused_params<T> q = p; // s(i) = α·v(i)·(X(i,:)·y) into scale, as X·y writes w
        q.w = scale.get();
        q.z = nullptr;
        rows_xy<VS, T><<<resident_blocks(rows_xy<VS, T>, 0), 256, 0, stream>>>(q);
    }
    SR_CUDA_LAUNCHED();
    // lanes a row: about as many as a row has entries in a range
    const double per_range = (double)X->nnz / ((double)std::max<int64_t>(1, p.m) * (double)plan->ranges);
    if (per_range >= 24)
        return launch_range_sums<32, T>(p, scale.get(), plan, stream);
    if (per_range >= 6)
        return launch_range_sums<8, T>(p, scale.get(), plan, stream);
    if (per_range >= 3)
        return launch_range_sums<4, T>(p, scale.get(), plan, stream);
    return launch_range_sums<2, T>(p, scale.get(), plan, stream);
}
