// SpMV split by entries, for large matrices with skewed rows (included by cuda_spmm.cu inside its
// anonymous namespace, so the headers it needs are included there, at file scope).
//
// The row kernel gives each row a fixed group of lanes, so on a power-law matrix most lanes of a
// group idle on the many short rows while its warp waits for the long ones. Here a warp takes a
// tile of kSplitTile consecutive entries whatever rows they belong to: every lane loads the same
// number of entries, coalesced, and their products go to shared memory. Then the tile's rows are
// reduced from there, a lane per short segment and the warp per long one. A row that crosses
// tiles leaves a partial in each (its head in a tile it started before, its tail in the tile it
// started in); a fix-up pass adds them in a fixed order, so results are deterministic for every
// semiring, as in the row kernel. The tiles' first rows come from the matrix's plan
// (cuda_spmv_plan.cuh), built by its first SpMV.
#pragma once

// (its kernels: cuda_spmv_split_kernels.cuh, included by cuda_spmm.cu at file scope)

// Which SpMV kernel: SPARSERING_SPMV_KERNEL=rows|split forces one, for tuning and tests. The
// split kernel won on every matrix measured on the H100 (power-law 2M rows 0.43 -> 0.35 ms,
// Debian's dependency graph 0.054 -> 0.035, pushpull 0.052 -> 0.036); the row kernel stays for
// matrices with more rows than entries, where a tile would loop over thousands of empty rows.
inline bool spmv_use_split(int64_t nrows, int64_t nnz) {
    // read each call (a getenv is ~0.1 us), so that a test can force one kernel for a while
    const char *env = getenv("SPARSERING_SPMV_KERNEL");
    const int forced = env && strcmp(env, "split") == 0 ? 1 : env && strcmp(env, "rows") == 0 ? 0 : 2; // 2: choose
    if (nnz == 0 || forced == 0)
        return false;
    return forced == 1 || nnz >= nrows;
}

// The shared memory the hot kernel may give its slots: what the device allows a block, less its
// warps' tiles.
template <class Ops> size_t hot_slot_bytes() {
    using T = typename Ops::value;
    int device = 0, per_block = 0;
    cudaGetDevice(&device);
    cudaFuncAttributes attr{};
    if (cudaDeviceGetAttribute(&per_block, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess ||
        cudaFuncGetAttributes(&attr, spmv_split_hot<Ops>) != cudaSuccess)
        return 0;
    const size_t used = attr.sharedSizeBytes + kHotTileBytes<T>;
    return (size_t)per_block > used ? (size_t)per_block - used : 0;
}

// With the matrix's plan (cuda_spmv_plan.cuh): its tiles' first rows and long spans and, when it
// has slots (sr_spmv_plan), the hot kernel.
template <class Ops> sr_status run_spmv_split(const product_args<Ops> &p, int64_t nnz, sr_context_s *ctx,
                                              cudaStream_t stream, const spmv_plan &plan) {
    using T = typename Ops::value;
    split_args<Ops> a;
    a.p = p;
    a.nnz = nnz;
    a.tiles = (nnz + kSplitTile - 1) / kSplitTile;
    a.first_row = plan.first_row;
    // one scratch allocation a call: each tile's tail row, head and tail partials, then the slots' x
    buffer<unsigned char> scratch(ctx);
    SR_TRY(scratch.allocate((size_t)a.tiles * (sizeof(int64_t) + 2 * sizeof(T)) + (size_t)plan.slots * sizeof(T)));
    a.tail_row = reinterpret_cast<int64_t *>(scratch.get());
    a.heads = reinterpret_cast<T *>(a.tail_row + a.tiles);
    a.tails = a.heads + a.tiles;
    T *x_hot = a.tails + a.tiles;
    if (plan.slots > 0) {
        a.p.colind = plan.colind;
        if constexpr (is_user_ops<Ops>) {
            return sr_error(SR_ERROR_INTERNAL, "a user semiring's SpMV takes the plain split kernel (no slots)");
        } else {
            gather_hot_x<Ops><<<grid_for(plan.slots), kBlock, 0, stream>>>(p, plan.column_of, plan.slots, x_hot);
            SR_CUDA_LAUNCHED();
            const size_t bytes = kHotTileBytes<T> + (size_t)plan.slots * sizeof(T);
            SR_CUDA_TRY(
                cudaFuncSetAttribute(spmv_split_hot<Ops>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
            spmv_split_hot<Ops><<<(unsigned)sm_count(), kHotBlock, bytes, stream>>>(a, x_hot, plan.slots);
        }
    } else if constexpr (is_user_ops<Ops>) {
        SR_TRY(launch_user(user_kernel_name("spmv_split", {}), grid_for(a.tiles * 32, kSplitBlock), kSplitBlock, stream,
                           a));
    } else {
        spmv_split<Ops><<<grid_for(a.tiles * 32, kSplitBlock), kSplitBlock, 0, stream>>>(a);
    }
    SR_CUDA_LAUNCHED();
    const int64_t tile_blocks = (a.tiles + kBlock - 1) / kBlock;
    const unsigned fixup_blocks = (unsigned)(tile_blocks + plan.n_long_spans);
    if constexpr (is_user_ops<Ops>)
        SR_TRY(launch_user(user_kernel_name("spmv_split_fixup", {}), fixup_blocks, kBlock, stream, a, plan.long_spans,
                           tile_blocks));
    else
        spmv_split_fixup<Ops><<<fixup_blocks, kBlock, 0, stream>>>(a, plan.long_spans, tile_blocks);
    SR_CUDA_LAUNCHED();
    // no wait: the caller waits unless the call is queued (a solver's step, an asynchronous
    // context), and the scratch is freed in stream order
    return SR_SUCCESS;
}
