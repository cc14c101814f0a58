// The device SpGEMM's per-row kernels (included by cuda_mxm.cu, which bins the rows and runs
// them): the products of a row, and hash tables in shared memory with a merge sort in registers
// (the dense rows are in cuda_mxm_dense.cuh). Each kernel runs twice: a count pass (FILL false)
// writes each row's entry count, a fill pass writes the row. Uses kBlock from cuda_mxm.cu, inside
// its anonymous namespace, and the row packing and team barrier of cuda_mxm_ordered.cuh.
#pragma once

template <class Ops> struct mxm_args {
    using T = typename Ops::value;
    const int64_t *a_rowptr;
    const int32_t *a_colind;
    const T *a_values;
    const int64_t *b_rowptr;
    const int32_t *b_colind;
    const T *b_values;
    int64_t nrows, ncols;
    mask_view mask;
    int64_t *counts;       // count pass: entries of each output row
    const int64_t *c_rowptr; // fill pass
    int32_t *c_colind;
    T *c_values;           // nullptr for bool output
    bool values_later;     // a deterministic context: the fill pass writes the pattern alone, and
                           // ordered_values (cuda_mxm_ordered.cuh) the values
    // Whether the fill pass writes values.
    __device__ bool fills_values() const { return c_values != nullptr && !values_later; }
    __device__ T a(int64_t k) const { return Ops::reads_values && a_values ? a_values[k] : T(1); }
    __device__ T b(int64_t k) const { return Ops::reads_values && b_values ? b_values[k] : T(1); }
};

// Sum over the team (every lane gets it).
template <int TEAM> __device__ inline int64_t team_sum(int64_t v) {
    if constexpr (TEAM == 32) {
        for (int offset = 16; offset > 0; offset /= 2)
            v += __shfl_xor_sync(0xffffffffu, v, offset);
        return v;
    } else {
        using reduce = cub::BlockReduce<int64_t, TEAM>;
        __shared__ typename reduce::TempStorage storage;
        __shared__ int64_t total;
        const int64_t t = reduce(storage).Sum(v);
        if (threadIdx.x == 0)
            total = t;
        __syncthreads();
        const int64_t result = total;
        __syncthreads();
        return result;
    }
}

// Threads per A entry for a row: about its mean B-row length (ub / A-row length), a power of two
// up to the team. The team's groups take different A entries; a group's lanes share a B row. A
// block's group may be wider than a warp: a row of a few A entries with long B rows (Debian's
// A·Aᵀ) then keeps every thread busy, where groups of at most 32 left most of the block idle.
template <int TEAM> __device__ inline int lanes_per_entry(int64_t ub, int64_t a_len) {
    int s = 1;
    while (s < TEAM && (int64_t)s * a_len < ub)
        s <<= 1;
    return s;
}

// ub of a row (the sum of the B-row lengths its entries select), summed over a warp.
__device__ inline int64_t row_bound(const int64_t *a_rowptr, const int32_t *a_colind, const int64_t *b_rowptr,
                                    int64_t row, int lane) {
    int64_t ub = 0;
    for (int64_t ka = a_rowptr[row] + lane; ka < a_rowptr[row + 1]; ka += 32)
        ub += b_rowptr[a_colind[ka] + 1] - b_rowptr[a_colind[ka]];
    return team_sum<32>(ub);
}

// Calls visit(j, a_ik * b_kj) for this lane's share of the products of A entries [ka0, ka1) of the
// row (that the mask allows, with check_mask): groups of `width` lanes take different A entries, a group's lanes
// share a B row.
template <int TEAM, class Ops, class Visit>
__device__ void for_each_product_of(const mxm_args<Ops> &p, int64_t row, int64_t ka0, int64_t ka1, int width,
                                    int lane, bool check_mask, Visit visit) {
    const int sub = lane % width;
    for (int64_t ka = ka0 + lane / width; ka < ka1; ka += TEAM / width) {
        const int32_t k = p.a_colind[ka];
        const typename Ops::value a = p.a(ka);
        for (int64_t kb = p.b_rowptr[k] + sub; kb < p.b_rowptr[k + 1]; kb += width) {
            const int32_t j = p.b_colind[kb];
            if (!check_mask || p.mask.allows(row, j))
                visit(j, Ops::mul(a, p.b(kb)));
        }
    }
}

// The same over the whole row, lanes_per_entry lanes a group.
template <int TEAM, class Ops, class Visit>
__device__ void for_each_product(const mxm_args<Ops> &p, int64_t row, int64_t ub, int lane, Visit visit) {
    const int64_t a_start = p.a_rowptr[row], a_end = p.a_rowptr[row + 1];
    for_each_product_of<TEAM>(p, row, a_start, a_end, lanes_per_entry<TEAM>(ub, a_end - a_start), lane, true, visit);
}

__device__ inline unsigned hash_slot(int32_t j, int table) { return ((unsigned)j * 2654435761u) & (unsigned)(table - 1); }

// Bytes of one team's shared region: TABLE keys and TABLE values.
template <typename T, int TABLE> __host__ __device__ constexpr size_t team_region_bytes() {
    return (4 + sizeof(T)) * (size_t)TABLE;
}

// A merge sort of TEAM * ITEMS (key, value) pairs in registers: a warp's or the whole block's.
template <int TEAM, int ITEMS, typename T>
using team_sorter = std::conditional_t<TEAM == 32, cub::WarpMergeSort<int32_t, ITEMS, 32, T>,
                                       cub::BlockMergeSort<int32_t, TEAM, ITEMS, T>>;

struct key_less {
    __device__ bool operator()(int32_t a, int32_t b) const { return a < b; }
};

// Sorts the count pairs at the front of keys/vals by key and writes them to out_cols/out_vals
// (out_vals may be null). The pairs go to registers (blocked: lane l holds l*ITEMS ..), a merge
// sort orders them with the team's region as its scratch, and they return to shared memory in
// order so the global writes are coalesced. A merge sort costs its full width whatever the count,
// so a row that fits a quarter of the width (many duplicate products) takes a narrower sort.
template <int TEAM, int ITEMS, typename T>
__device__ void sort_and_write(int32_t *keys, T *vals, unsigned char *region, int count, int lane, bool with_values,
                               int32_t *out_cols, T *out_vals) {
    if constexpr (ITEMS >= 4) {
        if (count <= TEAM * (ITEMS / 4)) { // the same for the whole team
            sort_and_write<TEAM, ITEMS / 4>(keys, vals, region, count, lane, with_values, out_cols, out_vals);
            return;
        }
    }
    using sorter = team_sorter<TEAM, ITEMS, T>;
    static_assert(sizeof(typename sorter::TempStorage) <= (4 + sizeof(T)) * 2 * TEAM * ITEMS,
                  "the sort's scratch must fit in the team's table region");
    int32_t k[ITEMS];
    T v[ITEMS];
#pragma unroll
    for (int r = 0; r < ITEMS; r++) {
        const int at = lane * ITEMS + r;
        k[r] = at < count ? keys[at] : INT32_MAX;
        v[r] = at < count && with_values ? vals[at] : T{};
    }
    team_sync<TEAM>();
    sorter(*reinterpret_cast<typename sorter::TempStorage *>(region)).Sort(k, v, key_less{}, count, INT32_MAX);
    team_sync<TEAM>();
#pragma unroll
    for (int r = 0; r < ITEMS; r++) {
        const int at = lane * ITEMS + r;
        if (at < count) {
            keys[at] = k[r];
            vals[at] = v[r];
        }
    }
    team_sync<TEAM>();
    for (int t = lane; t < count; t += TEAM) {
        out_cols[t] = keys[t];
        if (out_vals)
            out_vals[t] = vals[t];
    }
    team_sync<TEAM>();
}

// Moves the occupied slots (key != -1) of keys/vals[0, table) to the front, keeping slot order,
// in place: chunks of TEAM slots are read into registers, then written below their source.
template <int TEAM, typename T>
__device__ void compact_slots(int32_t *keys, T *vals, int table, int *counter, int lane, bool with_values) {
    if (lane == 0)
        *counter = 0;
    team_sync<TEAM>();
    for (int base = 0; base < table; base += TEAM) {
        const int32_t k = keys[base + lane];
        const T v = vals[base + lane];
        const bool occupied = k != -1;
        int before, total;
        if constexpr (TEAM == 32) {
            const unsigned mask = __ballot_sync(0xffffffffu, occupied);
            before = __popc(mask & ((1u << lane) - 1));
            total = __popc(mask);
        } else {
            using scan = cub::BlockScan<int, TEAM>;
            __shared__ typename scan::TempStorage storage;
            scan(storage).ExclusiveSum(occupied ? 1 : 0, before, total);
        }
        const int at = *counter + before; // at <= base + lane: never overwrites an unread slot
        team_sync<TEAM>();
        if (occupied) {
            keys[at] = k;
            if (with_values)
                vals[at] = v;
        }
        if (lane == 0)
            *counter += total;
        team_sync<TEAM>();
    }
}

// Hash-table rows: TEAM threads per row, TABLE slots in shared memory per team.
template <class Ops, int TEAM, int TABLE, bool FILL>
__global__ void hash_rows(mxm_args<Ops> p, const int64_t *rows, const unsigned long long *row_count) {
    using T = typename Ops::value;
    extern __shared__ __align__(16) unsigned char smem[];
    constexpr int kTeams = kBlock / TEAM;
    const int team = threadIdx.x / TEAM, lane = threadIdx.x % TEAM;
    // Each team's region: TABLE keys, then TABLE values (the sort's scratch reuses the whole region).
    unsigned char *region = smem + team_region_bytes<T, TABLE>() * team;
    int32_t *keys = reinterpret_cast<int32_t *>(region);
    T *vals = reinterpret_cast<T *>(region + 4 * TABLE);
    int *counter = reinterpret_cast<int *>(smem + team_region_bytes<T, TABLE>() * kTeams) + team;
    const bool with_values = FILL && p.fills_values();
    const int64_t n = (int64_t)*row_count;
    for (int64_t idx = (int64_t)blockIdx.x * kTeams + team; idx < n; idx += (int64_t)gridDim.x * kTeams) {
        const int64_t entry = rows[idx], row = packed_row(entry), ub = packed_bound(entry);
        // This row's table: twice its product bound, a power of two, at least a team's width.
        int table = TEAM;
        while (table < 2 * ub && table < TABLE)
            table <<= 1;
        for (int s = lane; s < table; s += TEAM) {
            keys[s] = -1;
            vals[s] = Ops::identity();
        }
        if (lane == 0)
            *counter = 0;
        team_sync<TEAM>();
        for_each_product<TEAM>(p, row, ub, lane, [&](int32_t j, T product) {
            unsigned slot = hash_slot(j, table);
            for (;;) {
                const int32_t seen = atomicCAS(&keys[slot], -1, j);
                if (seen == -1 || seen == j) {
                    if (seen == -1)
                        atomicAdd(counter, 1);
                    if (with_values)
                        atomic_combine<Ops>(&vals[slot], product);
                    return;
                }
                slot = (slot + 1) & (unsigned)(table - 1);
            }
        });
        team_sync<TEAM>();
        const int count = *counter;
        team_sync<TEAM>(); // every lane has read the count before lane 0 reuses the counter below
        if constexpr (!FILL) {
            if (lane == 0)
                p.counts[row] = count;
            team_sync<TEAM>();
        } else {
            // Compact the occupied slots to the front in place: slot s moves to a position below s
            // only after every lane has read its slots (ordered by a prefix over the team's slots).
            compact_slots<TEAM>(keys, vals, table, counter, lane, with_values);
            sort_and_write<TEAM, TABLE / 2 / TEAM>(keys, vals, region, count, lane, with_values,
                                                     p.c_colind + p.c_rowptr[row],
                                                     with_values ? p.c_values + p.c_rowptr[row] : nullptr);
        }
    }
}
