// Device code that both nvcc and NVRTC compile: the kernels user semirings run are the built-ins'
// own (cuda_spmm_kernels.cuh), compiled again at run time with the user's operators
// (cuda_nvrtc.cu), so what they include holds no host code. Under NVRTC there are no system
// headers: the prelude gives the few types and constants the kernels and expressions use.
#pragma once

#ifdef __CUDACC_RTC__
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
typedef unsigned long long uintptr_t;
typedef unsigned long size_t;
#define INT32_MAX 2147483647
#define INT32_MIN (-2147483647 - 1)
#define INFINITY __int_as_float(0x7f800000)
#define NAN __int_as_float(0x7fffffff)
#else
#include <cstdint>
#include <cstring>
#endif

namespace sr_cuda {

// The first i in [0, n) with sorted[i] >= key (n when none).
template <typename T, typename K> __device__ inline int64_t lower_bound(const T *sorted, int64_t n, K key) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (sorted[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

// The row holding entry k: the last i with rowptr[i] <= k (rows may be empty).
__device__ inline int64_t row_of_entry(const int64_t *rowptr, int64_t nrows, int64_t k) {
    int64_t lo = 0, hi = nrows; // invariant: rowptr[lo] <= k < rowptr[hi]
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (rowptr[mid] <= k)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

// A CSR matrix as kernels that NVRTC also compiles read it (cuda_common.cuh's csr_ref_of makes one).
struct csr_ref {
    const int64_t *rowptr; // nullptr: no matrix (an element-wise merge's absent B)
    const int32_t *colind;
    const void *values;
    int64_t nrows, ncols;
};

// Structural mask test for output (i, j): binary search in the mask's row i.
struct mask_view {
    const int64_t *rowptr = nullptr; // nullptr: no mask
    const int32_t *colind = nullptr;
    bool complement = false;
    __device__ bool allows(int64_t i, int64_t j) const {
        if (rowptr == nullptr)
            return true;
        const int64_t start = rowptr[i], n = rowptr[i + 1] - start;
        const bool found = n > 0 && [&] {
            const int64_t at = lower_bound(colind + start, n, (int32_t)j);
            return at < n && colind[start + at] == (int32_t)j;
        }();
        return found != complement;
    }
};

// Rows of at most short_max entries are short; above long_min, long; in between, mid
// (cuda_row_plan.cuh builds and caches the plan).
struct row_classes {
    int64_t short_max, long_min, chunk;
    __host__ __device__ bool operator==(const row_classes &o) const {
        return short_max == o.short_max && long_min == o.long_min && chunk == o.chunk;
    }
};

// Device arrays of the mid and long rows (short rows are the rest, found by their length).
struct row_plan {
    row_classes classes;
    int64_t n_mid, n_long, n_chunks;
    const int64_t *mid_rows;    // n_mid rows, ascending
    const int64_t *long_rows;   // n_long rows, ascending
    const int64_t *chunk_first; // n_long + 1: long row l has chunks chunk_first[l] .. chunk_first[l + 1] - 1
    const int64_t *chunk_owner; // n_chunks: the long row l (index into long_rows) of each chunk

    // The row and entry range of chunk c.
    __device__ void chunk_range(const int64_t *rowptr, int64_t c, int64_t *row, int64_t *start, int64_t *end) const {
        const int64_t l = chunk_owner[c], r = long_rows[l];
        const int64_t s = rowptr[r] + (c - chunk_first[l]) * classes.chunk;
        *row = r;
        *start = s;
        *end = min(rowptr[r + 1], s + classes.chunk);
    }
};

} // namespace sr_cuda
