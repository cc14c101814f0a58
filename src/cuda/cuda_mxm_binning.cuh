// The device SpGEMM's row binning (included by cuda_mxm.cu after the row kernels' headers): each
// row's product bound and bin, then the rows grouped by bin into one array of nrows entries (a
// counting sort), which the per-bin kernels read from their bin's start. Uses kBins, kBinDense,
// kBinTiled, kBinEscSmall, kBinEscLarge and bin_of from cuda_mxm.cu.
//
// Every row counting into a handful of global counters serialized on them: 0.24 ms of the 300K
// power-law A·A (ncu), more than most bins' kernels. Each block counts in shared memory and adds
// its totals once, so a counter sees one atomic per block.
#pragma once

// Between the two kernels a row's bin and bound wait in its count slot (C's row pointers, which
// the count pass overwrites): the bound above 8 bits, the bin below; kNoBin marks an empty row.
constexpr int64_t kNoBin = 0xff;
__device__ inline int64_t binned(int bin, int64_t ub) {
    return ((ub < INT32_MAX ? ub : (int64_t)INT32_MAX) << 8) | bin;
}

struct bin_starts {
    int64_t at[kBins]; // where each bin's rows begin in the grouped array
};

// The bin of a row with bound ub > 0 and a_len A entries; a dense row of a product whose columns
// make `tiles` tiles goes to the tiled bin when that is the cheaper kernel for it.
__device__ inline int bin_for(int64_t ub, int64_t a_len, int64_t tiles, bool esc) {
    const int esc_bin = esc ? esc_items(ub, a_len) : 0;
    if (esc_bin)
        return esc_bin == kEscSmallItems ? kBinEscSmall : kBinEscLarge;
    const int bin = bin_of(ub);
    return bin == kBinDense && tiled_is_cheaper(ub, a_len, tiles) ? kBinTiled : bin;
}

// ub and bin per row (a warp per row, lanes over A's entries) into slots[row]; bin_sizes counts
// each bin's rows.
__global__ void bound_and_bin(const int64_t *a_rowptr, const int32_t *a_colind, const int64_t *b_rowptr, int64_t nrows,
                              int64_t tiles, bool esc, int64_t *slots, unsigned long long *bin_sizes) {
    __shared__ unsigned block_sizes[kBins];
    if (threadIdx.x < kBins)
        block_sizes[threadIdx.x] = 0;
    __syncthreads();
    const int lane = threadIdx.x % 32;
    const int64_t warps = (int64_t)gridDim.x * blockDim.x / 32;
    for (int64_t row = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; row < nrows; row += warps) {
        const int64_t ub = row_bound(a_rowptr, a_colind, b_rowptr, row, lane);
        if (lane == 0) {
            if (ub > 0) {
                const int bin = bin_for(ub, a_rowptr[row + 1] - a_rowptr[row], tiles, esc);
                slots[row] = binned(bin, ub);
                atomicAdd(&block_sizes[bin], 1u);
            } else {
                slots[row] = kNoBin;
            }
        }
    }
    __syncthreads();
    if (threadIdx.x < kBins && block_sizes[threadIdx.x])
        atomicAdd(&bin_sizes[threadIdx.x], (unsigned long long)block_sizes[threadIdx.x]);
}

// Writes each binned row, packed with its bound, into its bin's part of rows (a thread per row;
// each block reserves its rows of a bin with one atomic on cursors) and zeroes the row's count slot.
__global__ void group_by_bin(int64_t *slots, int64_t nrows, bin_starts starts, unsigned long long *cursors,
                             int64_t *rows) {
    __shared__ unsigned block_sizes[kBins];
    __shared__ unsigned long long block_base[kBins];
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    // Every thread takes each iteration (the barriers), past the last row too.
    for (int64_t first = (int64_t)blockIdx.x * blockDim.x; first < nrows; first += stride) {
        const int64_t row = first + threadIdx.x;
        if (threadIdx.x < kBins)
            block_sizes[threadIdx.x] = 0;
        __syncthreads();
        int64_t slot = kNoBin;
        if (row < nrows) {
            slot = slots[row];
            slots[row] = 0;
        }
        const int bin = (int)(slot & 0xff);
        const unsigned rank = bin != kNoBin ? atomicAdd(&block_sizes[bin], 1u) : 0u;
        __syncthreads();
        if (threadIdx.x < kBins && block_sizes[threadIdx.x])
            block_base[threadIdx.x] = (unsigned long long)starts.at[threadIdx.x] +
                                      atomicAdd(&cursors[threadIdx.x], (unsigned long long)block_sizes[threadIdx.x]);
        __syncthreads();
        if (bin != kNoBin)
            rows[block_base[bin] + rank] = pack_row(row, slot >> 8);
        __syncthreads(); // block_base is read before the next iteration rewrites it
    }
}
