// The OpenCL backend's kernels for value-free (Boolean) CSR matrices: 64-bit row pointers, 32-bit
// column indices, rows sorted without repeats. OpenCL C 1.2 (what NVIDIA, AMD, Intel and PoCL all
// compile). Every output is built in two passes over the same code: a count pass writes each
// row's length, the host scans the lengths into row pointers, and a fill pass writes the columns
// of a batch of rows [r_begin, r_end) whose entries start at c_base.
//
// Set at build time: WG (work-group size of the group kernels, a power of two), BITMAP_WORDS
// (the words of a product row's column bitmap in local memory) and SMALL_LIMIT (the most
// products of a row that sorts in local memory, at most 2·WG; longer rows take the bitmap).

#define NO_COL 0x7fffffff
#define TILE_COLS (BITMAP_WORDS * 32)
#define SHORT_ROW 32 // rows of at most this many products or entries take a work-item each

// The first position in a[0, n) whose value is not below key.
#define LOWER_BOUND(NAME, SPACE)                                                                   \
    inline long NAME(SPACE const int *a, long n, int key)                                          \
    {                                                                                              \
        long lo = 0, hi = n;                                                                       \
        while (lo < hi) {                                                                          \
            const long mid = (lo + hi) >> 1;                                                       \
            if (a[mid] < key)                                                                      \
                lo = mid + 1;                                                                      \
            else                                                                                   \
                hi = mid;                                                                          \
        }                                                                                          \
        return lo;                                                                                 \
    }
LOWER_BOUND(lower_bound, __global)

// Whether row `row` of a CSR pattern holds column `col`.
inline bool has_col(__global const long *rowptr, __global const int *colind, long row, int col)
{
    const long s = rowptr[row], n = rowptr[row + 1] - s;
    const long p = lower_bound(colind + s, n, col);
    return p < n && colind[s + p] == col;
}

// Mask modes: 0 none, 1 keep what the mask holds, 2 keep what it does not (its complement).
inline bool mask_allows(int mode, __global const long *m_rowptr, __global const int *m_colind, long row, int col)
{
    return mode == 0 || has_col(m_rowptr, m_colind, row, col) == (mode == 1);
}

// Exclusive prefix sum of v over the work-group; *total gets the sum. Every item must call it.
inline long group_scan(long v, __local long *scratch, long *total)
{
    const int lid = get_local_id(0);
    scratch[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int d = 1; d < WG; d <<= 1) {
        const long add = lid >= d ? scratch[lid - d] : 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        scratch[lid] += add;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const long inclusive = scratch[lid];
    *total = scratch[WG - 1];
    barrier(CLK_LOCAL_MEM_FENCE); // scratch is rewritten by the next call
    return inclusive - v;
}

// Sorts a[0, n) ascending with a bitonic network whose comparators all put the smaller value
// first, so the positions from n up to the next power of two act as +infinity and are never
// read or written: any length sorts in place. Every item of the group must call it.
#define SORT_ASCENDING(NAME, SPACE, FENCE)                                                         \
    inline void NAME(SPACE int *a, long n)                                                         \
    {                                                                                              \
        long p = 1;                                                                                \
        while (p < n)                                                                              \
            p <<= 1;                                                                               \
        for (long k = 2; k <= p; k <<= 1) {                                                        \
            for (long j = k >> 1; j > 0; j >>= 1) {                                                \
                for (long t = get_local_id(0); t < p / 2; t += WG) {                               \
                    long lo, hi;                                                                   \
                    if (j == k >> 1) { /* the flip: t-th from the start against t-th from the end */ \
                        lo = (t / j) * k + t % j;                                                  \
                        hi = (t / j) * k + k - 1 - t % j;                                          \
                    } else {                                                                       \
                        lo = (t / j) * 2 * j + t % j;                                              \
                        hi = lo + j;                                                               \
                    }                                                                              \
                    if (hi < n && a[hi] < a[lo]) {                                                 \
                        const int x = a[lo];                                                       \
                        a[lo] = a[hi];                                                             \
                        a[hi] = x;                                                                 \
                    }                                                                              \
                }                                                                                  \
                barrier(FENCE);                                                                    \
            }                                                                                      \
        }                                                                                          \
    }
SORT_ASCENDING(sort_local, __local, CLK_LOCAL_MEM_FENCE)
SORT_ASCENDING(sort_global, __global, CLK_GLOBAL_MEM_FENCE)

// ---------------------------------------------------------------------------------------- mxm
// One work-group a row of C = A·B. A row's products are dealt out evenly over the group, whatever
// the lengths of the B rows they come from: WG A entries at a time, each item finds its entry's
// stretch of its B row (within the column tile), a scan places the stretches end to end, and
// item t takes products t, t + WG, ..., finding its stretch by a binary search of the offsets.
// A lane per A entry would leave most lanes idle behind the few walking a hub's long B row.

typedef struct {
    __local long *start;  // WG: the stretch's first B entry
    __local long *offset; // WG: the stretch's first product in the chunk
    __local long *scan;   // WG: scratch of group_scan
} chunk_space;

// Sets up the stretches of A entries [chunk, chunk + count) in columns [c0, c1); returns the
// chunk's products. Every item must call it.
inline long chunk_setup(__global const int *a_colind, __global const long *b_rowptr, __global const int *b_colind,
                        long chunk, int count, int c0, int c1, int ncols, chunk_space s)
{
    const int lid = get_local_id(0);
    long first = 0, len = 0;
    if (lid < count) {
        const int k = a_colind[chunk + lid];
        const long b0 = b_rowptr[k], bn = b_rowptr[k + 1] - b0;
        const long lo = c0 > 0 ? lower_bound(b_colind + b0, bn, c0) : 0;
        const long hi = c1 < ncols ? lo + lower_bound(b_colind + b0 + lo, bn - lo, c1) : bn;
        first = b0 + lo;
        len = hi - lo;
    }
    long total;
    const long offset = group_scan(len, s.scan, &total);
    s.start[lid] = first;
    s.offset[lid] = offset;
    barrier(CLK_LOCAL_MEM_FENCE);
    return total;
}

// The B entry of product q of the chunk (q < the chunk's total).
inline long chunk_entry(long q, int count, chunk_space s)
{
    int lo = 0, hi = count; // the last stretch starting at or before q
    while (hi - lo > 1) {
        const int mid = (lo + hi) >> 1;
        if (s.offset[mid] <= q)
            lo = mid;
        else
            hi = mid;
    }
    return s.start[lo] + (q - s.offset[lo]);
}

// The products of a row that fit 2·WG keys: gathered, sorted and made unique in local memory.
inline long small_row(__global const long *a_rowptr, __global const int *a_colind, __global const long *b_rowptr,
                      __global const int *b_colind, __global const long *m_rowptr, __global const int *m_colind,
                      int mask_mode, int ncols, long row, __global int *out, chunk_space s, __local int *keys)
{
    const int lid = get_local_id(0);
    keys[lid] = NO_COL;
    keys[lid + WG] = NO_COL;
    barrier(CLK_LOCAL_MEM_FENCE);
    const long a_start = a_rowptr[row], a_end = a_rowptr[row + 1];
    long base = 0;
    for (long chunk = a_start; chunk < a_end; chunk += WG) {
        const int count = (int)min((long)WG, a_end - chunk);
        const long total = chunk_setup(a_colind, b_rowptr, b_colind, chunk, count, 0, ncols, ncols, s);
        for (long q = lid; q < total; q += WG) {
            const int col = b_colind[chunk_entry(q, count, s)];
            keys[base + q] = mask_allows(mask_mode, m_rowptr, m_colind, row, col) ? col : NO_COL;
        }
        base += total;
        barrier(CLK_LOCAL_MEM_FENCE); // the stretches are rewritten by the next chunk
    }
    sort_local(keys, base); // the keys past the products are NO_COL already, the largest
    // item lid judges keys 2·lid and 2·lid + 1: kept when set and unlike the key before
    int kept[2];
    for (int u = 0; u < 2; u++) {
        const int i = 2 * lid + u;
        kept[u] = keys[i] != NO_COL && (i == 0 || keys[i - 1] != keys[i]);
    }
    long total;
    const long offset = group_scan(kept[0] + kept[1], s.scan, &total);
    if (out) {
        long o = offset;
        for (int u = 0; u < 2; u++)
            if (kept[u])
                out[o++] = keys[2 * lid + u];
    }
    barrier(CLK_LOCAL_MEM_FENCE); // keys are rewritten by the next row
    return total;
}

// The products of a longer row: a column bitmap per tile of TILE_COLS columns in local memory,
// walked in order, so the row comes out sorted without a sort.
inline long bitmap_row(__global const long *a_rowptr, __global const int *a_colind, __global const long *b_rowptr,
                       __global const int *b_colind, __global const long *m_rowptr, __global const int *m_colind,
                       int mask_mode, int ncols, long row, __global int *out, chunk_space s,
                       volatile __local uint *bits)
{
    const int lid = get_local_id(0);
    const long a_start = a_rowptr[row], a_end = a_rowptr[row + 1];
    long written = 0;
    for (int c0 = 0; c0 < ncols; c0 += min(TILE_COLS, ncols - c0)) {
        const int c1 = c0 + min(TILE_COLS, ncols - c0), words = (c1 - c0 + 31) / 32;
        for (int w = lid; w < words; w += WG)
            bits[w] = 0u;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (long chunk = a_start; chunk < a_end; chunk += WG) {
            const int count = (int)min((long)WG, a_end - chunk);
            const long total = chunk_setup(a_colind, b_rowptr, b_colind, chunk, count, c0, c1, ncols, s);
            for (long q = lid; q < total; q += WG) {
                const int col = b_colind[chunk_entry(q, count, s)];
                if (mask_mode != 1 || has_col(m_rowptr, m_colind, row, col))
                    atomic_or(&bits[(col - c0) >> 5], 1u << ((col - c0) & 31));
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (mask_mode == 2) { // the complement: clear what the mask row holds in the tile
            const long m0 = m_rowptr[row], mn = m_rowptr[row + 1] - m0;
            const long lo = lower_bound(m_colind + m0, mn, c0);
            for (long e = m0 + lo + lid; e < m0 + mn && m_colind[e] < c1; e += WG)
                atomic_and(&bits[(m_colind[e] - c0) >> 5], ~(1u << ((m_colind[e] - c0) & 31)));
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        // item lid owns a run of consecutive words; a scan of their counts places its columns
        const int per = (words + WG - 1) / WG, w0 = min(words, lid * per), w1 = min(words, w0 + per);
        long mine = 0;
        for (int w = w0; w < w1; w++)
            mine += popcount(bits[w]);
        long total;
        long o = group_scan(mine, s.scan, &total);
        if (out)
            for (int w = w0; w < w1; w++)
                for (uint x = bits[w]; x != 0u; x &= x - 1u)
                    out[written + o++] = c0 + w * 32 + (31 - clz(x & (0u - x)));
        written += total;
        barrier(CLK_LOCAL_MEM_FENCE); // the bitmap is cleared for the next tile
    }
    return written;
}

// Each row's product bound: the entries of the B rows its A entries name (a work-item a row).
__kernel void mxm_bounds(__global const long *a_rowptr, __global const int *a_colind, __global const long *b_rowptr,
                         long nrows, __global long *bounds)
{
    const long row = get_global_id(0);
    if (row >= nrows)
        return;
    long bound = 0;
    for (long ka = a_rowptr[row]; ka < a_rowptr[row + 1]; ka++)
        bound += b_rowptr[a_colind[ka] + 1] - b_rowptr[a_colind[ka]];
    bounds[row] = bound;
}

// The listed rows of C = A·B (under the mask) that lie in [r_begin, r_end), a work-group a row:
// count pass (fill 0): counts[row] = the row's entries; fill pass: its columns at
// c_colind[c_rowptr[row] - c_base ...]. Rows of up to SMALL_LIMIT products sort in local memory,
// longer ones take the bitmap.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
mxm_rows(__global const long *rows, long listed, __global const long *bounds, __global const long *a_rowptr,
         __global const int *a_colind, __global const long *b_rowptr, __global const int *b_colind,
         __global const long *m_rowptr, __global const int *m_colind, int mask_mode, int ncols, long r_begin,
         long r_end, int fill, __global long *counts, __global const long *c_rowptr, __global int *c_colind,
         long c_base)
{
    __local long start[WG], offset[WG], scan[WG];
    __local int keys[2 * WG];
    __local uint bits[BITMAP_WORDS];
    chunk_space s = {start, offset, scan};
    for (long idx = get_group_id(0); idx < listed; idx += get_num_groups(0)) {
        const long row = rows[idx];
        if (row < r_begin || row >= r_end)
            continue;
        __global int *out = fill ? c_colind + (c_rowptr[row] - c_base) : 0;
        const long n = bounds[row] <= SMALL_LIMIT ? small_row(a_rowptr, a_colind, b_rowptr, b_colind, m_rowptr, m_colind,
                                                         mask_mode, ncols, row, out, s, keys)
                                             : bitmap_row(a_rowptr, a_colind, b_rowptr, b_colind, m_rowptr, m_colind,
                                                          mask_mode, ncols, row, out, s, bits);
        if (!fill && get_local_id(0) == 0)
            counts[row] = n;
    }
}

// The listed rows of at most SHORT_ROW products, a work-item a row: the products are kept sorted
// and unique in private memory as they come (no barriers, no local memory: most rows of sparse
// graphs are such rows, and a work-group each would spend far more on its scans and sort).
__kernel void mxm_short_rows(__global const long *rows, long listed, __global const long *a_rowptr,
                             __global const int *a_colind, __global const long *b_rowptr,
                             __global const int *b_colind, __global const long *m_rowptr,
                             __global const int *m_colind, int mask_mode, long r_begin, long r_end, int fill,
                             __global long *counts, __global const long *c_rowptr, __global int *c_colind,
                             long c_base)
{
    const long idx = get_global_id(0);
    if (idx >= listed)
        return;
    const long row = rows[idx];
    if (row < r_begin || row >= r_end)
        return;
    int cols[SHORT_ROW];
    int n = 0;
    for (long ka = a_rowptr[row]; ka < a_rowptr[row + 1]; ka++) {
        const int k = a_colind[ka];
        for (long kb = b_rowptr[k]; kb < b_rowptr[k + 1]; kb++) {
            const int col = b_colind[kb];
            int p = n;
            while (p > 0 && cols[p - 1] > col)
                p--;
            if ((p > 0 && cols[p - 1] == col) || !mask_allows(mask_mode, m_rowptr, m_colind, row, col))
                continue;
            for (int q = n; q > p; q--)
                cols[q] = cols[q - 1];
            cols[p] = col;
            n++;
        }
    }
    if (!fill) {
        counts[row] = n;
        return;
    }
    __global int *out = c_colind + (c_rowptr[row] - c_base);
    for (int i = 0; i < n; i++)
        out[i] = cols[i];
}

// ------------------------------------------------------------------------------- element-wise
// A work-item a row: C = A ∪ B (merge 0), A ∩ B (merge 1) or A (merge 2, B unread), under the
// mask; rows merged in column order, the mask row walked alongside.
__kernel void ewise_bool(__global const long *a_rowptr, __global const int *a_colind, __global const long *b_rowptr,
                         __global const int *b_colind, __global const long *m_rowptr, __global const int *m_colind,
                         int mask_mode, int merge, long r_begin, long r_end, int fill, __global long *counts,
                         __global const long *c_rowptr, __global int *c_colind, long c_base)
{
    const long row = r_begin + get_global_id(0);
    if (row >= r_end)
        return;
    long a = a_rowptr[row], b = merge == 2 ? 0 : b_rowptr[row];
    const long a_end = a_rowptr[row + 1], b_end = merge == 2 ? 0 : b_rowptr[row + 1];
    long m = mask_mode ? m_rowptr[row] : 0;
    const long m_end = mask_mode ? m_rowptr[row + 1] : 0;
    __global int *out = fill ? c_colind + (c_rowptr[row] - c_base) : 0;
    long n = 0;
    while (a < a_end || b < b_end) {
        const int ca = a < a_end ? a_colind[a] : NO_COL, cb = b < b_end ? b_colind[b] : NO_COL;
        const int col = min(ca, cb);
        const bool both = ca == cb;
        a += ca == col;
        b += cb == col;
        if (merge == 1 ? !both : (merge == 2 && ca != col))
            continue;
        if (mask_mode) {
            while (m < m_end && m_colind[m] < col)
                m++;
            if ((m < m_end && m_colind[m] == col) != (mask_mode == 1))
                continue;
        }
        if (out)
            out[n] = col;
        n++;
    }
    if (!fill)
        counts[row - r_begin] = n;
}

// ---------------------------------------------------------------------------------- structure
// C = A ⊗ B (Kronecker) for A m x n, B p x q: output row r = i·p + k holds a·q + b for each a of
// A's row i and b of B's row k, already in order. A work-item an output row; the host knows the
// lengths (len_A(i)·len_B(k)), so there is only a fill pass.
__kernel void kronecker_bool(__global const long *a_rowptr, __global const int *a_colind,
                             __global const long *b_rowptr, __global const int *b_colind, long p, int q,
                             long r_begin, long r_end, __global const long *c_rowptr, __global int *c_colind,
                             long c_base)
{
    const long r = r_begin + get_global_id(0);
    if (r >= r_end)
        return;
    const long i = r / p, k = r % p;
    __global int *out = c_colind + (c_rowptr[r] - c_base);
    const long b0 = b_rowptr[k], bn = b_rowptr[k + 1] - b0;
    for (long a = a_rowptr[i]; a < a_rowptr[i + 1]; a++) {
        const int base = a_colind[a] * q;
        for (long e = 0; e < bn; e++)
            *out++ = base + b_colind[b0 + e];
    }
}

// C = A[row0 + r, col0 : col0 + ncols] for output rows [r_begin, r_end): both ends found by
// binary search, so the count pass reads no entries.
__kernel void extract_bool(__global const long *a_rowptr, __global const int *a_colind, long row0, int col0,
                           int ncols, long r_begin, long r_end, int fill, __global long *counts,
                           __global const long *c_rowptr, __global int *c_colind, long c_base)
{
    const long r = r_begin + get_global_id(0);
    if (r >= r_end)
        return;
    const long s = a_rowptr[row0 + r], n = a_rowptr[row0 + r + 1] - s;
    const long lo = lower_bound(a_colind + s, n, col0);
    const long hi = lo + lower_bound(a_colind + s + lo, n - lo, (int)min((long)col0 + ncols, (long)NO_COL));
    if (!fill) {
        counts[r - r_begin] = hi - lo;
        return;
    }
    __global int *out = c_colind + (c_rowptr[r] - c_base);
    for (long e = lo; e < hi; e++)
        out[e - lo] = a_colind[s + e] - col0;
}

// v = the rows of A with an entry, as a column (SPbLA's reduceToColumn): counts of 0 or 1.
__kernel void reduce_rows_bool(__global const long *a_rowptr, long nrows, __global long *counts)
{
    const long r = get_global_id(0);
    if (r < nrows)
        counts[r] = a_rowptr[r + 1] > a_rowptr[r];
}

// ---------------------------------------------------------------------------------- transpose
// Aᵀ in three steps: entries per column (atomics), a scatter of each entry to its column's row
// (atomics: in no particular order), then each output row sorted by a work-group.
__kernel void transpose_count(__global const int *a_colind, long nnz, __global uint *counts)
{
    for (long e = get_global_id(0); e < nnz; e += get_global_size(0))
        atomic_inc(&counts[a_colind[e]]);
}

__kernel void transpose_scatter(__global const long *a_rowptr, __global const int *a_colind, long nrows,
                                __global const long *t_rowptr, __global uint *cursor, __global int *t_colind)
{
    const long row = get_global_id(0);
    if (row >= nrows)
        return;
    for (long e = a_rowptr[row]; e < a_rowptr[row + 1]; e++) {
        const int col = a_colind[e];
        t_colind[t_rowptr[col] + atomic_inc(&cursor[col])] = (int)row;
    }
}

// Sorts the listed rows of a CSR pattern (those of more than SHORT_ROW entries): a work-group a
// row, in local memory when the row fits 2·WG, in place in global memory otherwise.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
sort_rows(__global const long *rows, long listed, __global const long *rowptr, __global int *colind)
{
    __local int keys[2 * WG];
    const int lid = get_local_id(0);
    for (long idx = get_group_id(0); idx < listed; idx += get_num_groups(0)) {
        const long row = rows[idx], s = rowptr[row], n = rowptr[row + 1] - s;
        if (n <= 2 * WG) {
            for (long i = lid; i < n; i += WG)
                keys[i] = colind[s + i];
            barrier(CLK_LOCAL_MEM_FENCE);
            sort_local(keys, n);
            for (long i = lid; i < n; i += WG)
                colind[s + i] = keys[i];
            barrier(CLK_LOCAL_MEM_FENCE);
        } else {
            sort_global(colind + s, n);
        }
    }
}

// The rows of 2 to SHORT_ROW entries, a work-item a row: an insertion sort in private memory.
__kernel void sort_short_rows(__global const long *rowptr, __global int *colind, long nrows)
{
    const long row = get_global_id(0);
    if (row >= nrows)
        return;
    const long s = rowptr[row], n = rowptr[row + 1] - s;
    if (n < 2 || n > SHORT_ROW)
        return;
    int v[SHORT_ROW];
    for (int i = 0; i < n; i++) {
        const int x = colind[s + i];
        int p = i;
        for (; p > 0 && v[p - 1] > x; p--)
            v[p] = v[p - 1];
        v[p] = x;
    }
    for (int i = 0; i < n; i++)
        colind[s + i] = v[i];
}
