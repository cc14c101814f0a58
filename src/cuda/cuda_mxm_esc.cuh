// The device SpGEMM's smallest rows (included by cuda_mxm.cu after cuda_mxm_rows.cuh): a row of
// at most 32 A entries and 32 * ITEMS products (ITEMS = 2 or 4) is expanded, sorted and
// compressed in one warp's registers (ESC), with no hash table to clear, probe and compact. A
// power-law A·A has most of its rows here (255K of 300K below 128 products), and their
// hash-table fixed costs outweighed their few products. Uses kBlock.
#pragma once

constexpr int kEscWarps = kBlock / 32;

// __shfl_sync from lane src for every value type (1-byte ones through an int).
template <typename T> __device__ inline T shfl_from(T v, int src) {
    if constexpr (sizeof(T) == 1)
        return (T)__shfl_sync(0xffffffffu, (int)v, src);
    else
        return __shfl_sync(0xffffffffu, v, src);
}

// Exclusive prefix sum of v over the warp (lane = threadIdx.x % 32); *total gets the warp's sum.
__device__ inline int warp_exclusive_sum(int v, int lane, int *total) {
    int inclusive = v;
#pragma unroll
    for (int offset = 1; offset < 32; offset *= 2) {
        const int up = __shfl_up_sync(0xffffffffu, inclusive, offset);
        if (lane >= offset)
            inclusive += up;
    }
    *total = __shfl_sync(0xffffffffu, inclusive, 31);
    return inclusive - v;
}

// The ESC bins' products per lane: rows of up to 64 products sort 2 keys a lane, up to 128 four.
constexpr int kEscSmallItems = 2, kEscLargeItems = 4;

// The ESC bin of a row (kEscSmallItems or kEscLargeItems), or 0 when it needs a hash table: its A
// entries must fit one lane each, its products the registers.
__device__ inline int esc_items(int64_t ub, int64_t a_len) {
    if (a_len > 32 || ub > 32 * kEscLargeItems)
        return 0;
    return ub <= 32 * kEscSmallItems ? kEscSmallItems : kEscLargeItems;
}

// The count pass sorts the columns alone; the fill pass sorts them with their products' values.
template <class Ops, bool FILL, int ITEMS>
using esc_sorter = std::conditional_t<FILL, cub::WarpMergeSort<int32_t, ITEMS, 32, typename Ops::value>,
                                      cub::WarpMergeSort<int32_t, ITEMS, 32>>;

template <class Ops, bool FILL, int ITEMS>
__global__ void __launch_bounds__(kBlock) esc_rows(mxm_args<Ops> p, const int64_t *rows,
                                                   const unsigned long long *row_count) {
    using T = typename Ops::value;
    using sorter = esc_sorter<Ops, FILL, ITEMS>;
    constexpr int kProducts = 32 * ITEMS;
    __shared__ typename sorter::TempStorage sort_storage[kEscWarps];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const bool with_values = FILL && p.fills_values(); // on a deterministic context, the ordered pass's
    const int64_t n = (int64_t)*row_count;
    for (int64_t idx = (int64_t)blockIdx.x * kEscWarps + warp; idx < n; idx += (int64_t)gridDim.x * kEscWarps) {
        const int64_t row = packed_row(rows[idx]);
        const int64_t a0 = p.a_rowptr[row];
        const int a_len = (int)(p.a_rowptr[row + 1] - a0);
        // Lane l holds A entry l: its B row's start and length, and where its products begin.
        int64_t b_start = 0;
        int b_len = 0;
        T a_val = T{};
        if (lane < a_len) {
            const int32_t k = p.a_colind[a0 + lane];
            b_start = p.b_rowptr[k];
            b_len = (int)(p.b_rowptr[k + 1] - b_start);
            if constexpr (FILL)
                a_val = p.a(a0 + lane);
        }
        int total;
        const int first = warp_exclusive_sum(b_len, lane, &total);
        // Product q (blocked: lane l holds l*ITEMS + i) comes from the last A entry m whose
        // products begin at or before q (an empty B row begins where the next one does).
        int32_t keys[ITEMS];
        T vals[ITEMS];
#pragma unroll
        for (int i = 0; i < ITEMS; i++) {
            const int q = lane * ITEMS + i;
            int m = 0;
#pragma unroll
            for (int step = 16; step > 0; step /= 2) {
                const int starts = __shfl_sync(0xffffffffu, first, m + step < 32 ? m + step : 31);
                if (m + step < a_len && starts <= q)
                    m += step;
            }
            const int64_t m_start = shfl_from<long long>(b_start, m);
            const int m_first = shfl_from(first, m);
            const T m_a = FILL ? shfl_from(a_val, m) : T{};
            keys[i] = INT32_MAX; // past the row's products, or masked out: sorts last, dropped
            vals[i] = T{};
            if (q < total) {
                const int64_t kb = m_start + (q - m_first);
                const int32_t j = p.b_colind[kb];
                if (p.mask.allows(row, j)) {
                    keys[i] = j;
                    if constexpr (FILL)
                        vals[i] = Ops::mul(m_a, p.b(kb));
                }
            }
        }
        if constexpr (FILL)
            sorter(sort_storage[warp]).Sort(keys, vals, key_less{});
        else
            sorter(sort_storage[warp]).Sort(keys, key_less{});
        // Equal columns are now adjacent; the first of each run (a head) stands for the run.
        const int32_t before = __shfl_up_sync(0xffffffffu, keys[ITEMS - 1], 1);
        int heads = 0;
#pragma unroll
        for (int i = 0; i < ITEMS; i++) {
            const int32_t prev = i > 0 ? keys[i - 1] : lane > 0 ? before : -1;
            heads += keys[i] != INT32_MAX && keys[i] != prev;
        }
        int count;
        int out = warp_exclusive_sum(heads, lane, &count);
        if constexpr (!FILL) {
            if (lane == 0)
                p.counts[row] = count;
        } else {
            // Each head combines its run in sorted order (deterministic), from the warp's staging.
            __shared__ int32_t sorted_cols[kEscWarps][kProducts];
            __shared__ T sorted_vals[kEscWarps][kProducts];
#pragma unroll
            for (int i = 0; i < ITEMS; i++) {
                sorted_cols[warp][lane * ITEMS + i] = keys[i];
                sorted_vals[warp][lane * ITEMS + i] = vals[i];
            }
            __syncwarp();
            const int64_t c0 = p.c_rowptr[row];
#pragma unroll
            for (int i = 0; i < ITEMS; i++) {
                const int at = lane * ITEMS + i;
                const int32_t prev = at > 0 ? sorted_cols[warp][at - 1] : -1;
                if (keys[i] == INT32_MAX || keys[i] == prev)
                    continue;
                p.c_colind[c0 + out] = keys[i];
                if (with_values) {
                    T acc = vals[i];
                    for (int r = at + 1; r < kProducts && sorted_cols[warp][r] == keys[i]; r++)
                        acc = Ops::add(acc, sorted_vals[warp][r]);
                    p.c_values[c0 + out] = acc;
                }
                out++;
            }
            __syncwarp(); // the staging is read before the next row overwrites it
        }
    }
}
