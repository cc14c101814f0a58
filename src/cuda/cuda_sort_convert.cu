// Conversions built on a stable radix sort: COO -> CSR, transpose, and CSR -> COO rows.
#include "cuda_common.cuh"

#include <cub/cub.cuh>

extern "C" {
#include "../core/types.h"
#include "cuda.h"
}

namespace {

constexpr int kColumnBits = 31; // column indices are < 2^31

__global__ void expand_rows_kernel(const int64_t *rowptr, int64_t nrows, int64_t nnz, int64_t *rows) {
    for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < nnz; k += (int64_t)gridDim.x * blockDim.x)
        rows[k] = sr_cuda::row_of_entry(rowptr, nrows, k);
}

__global__ void first_bad_triplet(const int64_t *rows, const int32_t *cols, int64_t nnz, int64_t nrows,
                                  int64_t ncols, unsigned long long *first) {
    for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < nnz; k += (int64_t)gridDim.x * blockDim.x)
        if (rows[k] < 0 || rows[k] >= nrows || cols[k] < 0 || cols[k] >= ncols)
            atomicMin(first, (unsigned long long)k);
}

__global__ void make_keys(const int64_t *rows, const int32_t *cols, int64_t nnz, uint64_t *keys, int64_t *order) {
    for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < nnz; k += (int64_t)gridDim.x * blockDim.x) {
        keys[k] = ((uint64_t)rows[k] << kColumnBits) | (uint64_t)cols[k];
        order[k] = k;
    }
}

// head[j] = 1 where a new (row, col) starts; first_dup records the first repeat.
__global__ void mark_heads(const uint64_t *keys, int64_t nnz, int64_t *head, unsigned long long *first_dup) {
    for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < nnz; j += (int64_t)gridDim.x * blockDim.x) {
        bool is_head = j == 0 || keys[j] != keys[j - 1];
        head[j] = is_head;
        if (!is_head)
            atomicMin(first_dup, (unsigned long long)j);
    }
}

// At each head j (slot = position[j] - 1): the column, and the values of its run summed in input order.
template <typename T>
__global__ void write_unique(const uint64_t *keys, const int64_t *order, const int64_t *position, int64_t nnz,
                             const T *vals, int32_t *colind, T *values) {
    for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < nnz; j += (int64_t)gridDim.x * blockDim.x) {
        if (j > 0 && keys[j] == keys[j - 1])
            continue;
        const int64_t slot = position[j] - 1;
        colind[slot] = (int32_t)(keys[j] & ((1ull << kColumnBits) - 1));
        if (values != nullptr) {
            T sum = vals[order[j]];
            for (int64_t t = j + 1; t < nnz && keys[t] == keys[j]; t++)
                sum += vals[order[t]];
            values[slot] = sum;
        }
    }
}

// rowptr[r] = output slot of the first entry of row r or later: lower_bound of r's first key.
__global__ void rowptr_from_keys(const uint64_t *keys, const int64_t *position, int64_t nnz, int64_t nrows,
                                 int64_t *rowptr) {
    for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r <= nrows; r += (int64_t)gridDim.x * blockDim.x) {
        const int64_t lo = sr_cuda::lower_bound(keys, nnz, (uint64_t)r << kColumnBits);
        rowptr[r] = lo < nnz ? position[lo] - 1 : (nnz > 0 ? position[nnz - 1] : 0);
    }
}

template <typename T>
sr_status write_entries(sr_context_s *ctx, const uint64_t *keys, const int64_t *order, const int64_t *position,
                        int64_t nnz, const void *vals, sr_matrix_s *A) {
    write_unique<T><<<sr_cuda::blocks_for(nnz, 256), 256, 0, sr_cuda::stream_of(ctx)>>>(
        keys, order, position, nnz, static_cast<const T *>(vals), A->colind, static_cast<T *>(A->values));
    SR_CUDA_LAUNCHED();
    return SR_SUCCESS;
}

sr_status dispatch_write_entries(sr_context_s *ctx, const uint64_t *keys, const int64_t *order,
                                 const int64_t *position, int64_t nnz, const void *vals, sr_matrix_s *A) {
    switch (A->type) {
    case SR_TYPE_BOOL: return write_entries<uint8_t>(ctx, keys, order, position, nnz, nullptr, A);
    case SR_TYPE_INT32: return write_entries<int32_t>(ctx, keys, order, position, nnz, vals, A);
    case SR_TYPE_FLOAT32: return write_entries<float>(ctx, keys, order, position, nnz, vals, A);
    case SR_TYPE_FLOAT64: return write_entries<double>(ctx, keys, order, position, nnz, vals, A);
    }
    return sr_error(SR_ERROR_INTERNAL, "unknown type %d", (int)A->type);
}

template <typename T> T copy_one(const T *device_ptr) {
    T value{};
    cudaMemcpy(&value, device_ptr, sizeof(T), cudaMemcpyDeviceToHost);
    return value;
}

} // namespace

extern "C" sr_status sr_cuda_expand_rows(const sr_matrix_s *A, int64_t *rows) {
    sr_cuda::device_guard guard(A->ctx->device);
    cudaStream_t stream = sr_cuda::stream_of(A->ctx);
    expand_rows_kernel<<<sr_cuda::blocks_for(A->nnz, 256), 256, 0, stream>>>(A->rowptr, A->nrows, A->nnz, rows);
    SR_CUDA_LAUNCHED();
    SR_CUDA_TRY(sr_cuda::wait_stream(stream));
    return SR_SUCCESS;
}

extern "C" sr_status sr_cuda_coo_to_csr(sr_context_s *ctx, int64_t nrows, int64_t ncols, sr_type type, int64_t nnz,
                                        const int64_t *rows, const int32_t *cols, const void *vals,
                                        sr_duplicates dup, sr_matrix_s **out) {
    sr_cuda::device_guard guard(ctx->device);
    cudaStream_t stream = sr_cuda::stream_of(ctx);
    const int key_bits = kColumnBits + sr_cuda::bits_for(nrows > 0 ? (uint64_t)(nrows - 1) : 0);
    if (key_bits > 64)
        return sr_error(SR_ERROR_UNSUPPORTED, "device COO input supports at most 2^33 rows (%lld given)",
                        (long long)nrows);

    sr_cuda::first_index flag(ctx);
    unsigned long long first = sr_cuda::kNoIndex;
    SR_TRY(flag.reset());
    first_bad_triplet<<<sr_cuda::blocks_for(nnz, 256), 256, 0, stream>>>(rows, cols, nnz, nrows, ncols, flag.get());
    SR_CUDA_LAUNCHED();
    SR_TRY(flag.read(&first));
    if (first != sr_cuda::kNoIndex) {
        int64_t r = copy_one(rows + first);
        int32_t c = copy_one(cols + first);
        if (r < 0 || r >= nrows)
            return sr_error(SR_ERROR_INVALID_MATRIX, "row index %lld of triplet %llu is out of range [0, %lld)",
                            (long long)r, first, (long long)nrows);
        return sr_error(SR_ERROR_INVALID_MATRIX, "column index %d of triplet %llu is out of range [0, %lld)", (int)c,
                        first, (long long)ncols);
    }

    sr_cuda::buffer<uint64_t> keys_in(ctx), keys(ctx);
    sr_cuda::buffer<int64_t> order_in(ctx), order(ctx), position(ctx);
    SR_TRY(keys_in.allocate(nnz));
    SR_TRY(keys.allocate(nnz));
    SR_TRY(order_in.allocate(nnz));
    SR_TRY(order.allocate(nnz));
    SR_TRY(position.allocate(nnz));
    make_keys<<<sr_cuda::blocks_for(nnz, 256), 256, 0, stream>>>(rows, cols, nnz, keys_in.get(), order_in.get());
    SR_CUDA_LAUNCHED();
    size_t temp_bytes = 0;
    SR_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys_in.get(), keys.get(), order_in.get(),
                                                order.get(), nnz, 0, key_bits, stream));
    sr_cuda::buffer<unsigned char> temp(ctx);
    SR_TRY(temp.allocate(temp_bytes));
    SR_CUDA_TRY(cub::DeviceRadixSort::SortPairs(temp.get(), temp_bytes, keys_in.get(), keys.get(), order_in.get(),
                                                order.get(), nnz, 0, key_bits, stream));

    // Heads of runs; their inclusive sum numbers the distinct entries 1..unique.
    int64_t *head = order_in.get(); // free again after the sort
    SR_TRY(flag.reset());
    mark_heads<<<sr_cuda::blocks_for(nnz, 256), 256, 0, stream>>>(keys.get(), nnz, head, flag.get());
    SR_CUDA_LAUNCHED();
    SR_TRY(flag.read(&first));
    if (first != sr_cuda::kNoIndex && dup == SR_DUPLICATES_ERROR) {
        uint64_t key = copy_one(keys.get() + first);
        int64_t a = copy_one(order.get() + first - 1), b = copy_one(order.get() + first);
        return sr_error(SR_ERROR_INVALID_MATRIX, "duplicate entry (%lld, %d): triplets %lld and %lld",
                        (long long)(key >> kColumnBits), (int)(key & ((1ull << kColumnBits) - 1)), (long long)a,
                        (long long)b);
    }
    size_t scan_bytes = 0;
    SR_CUDA_TRY(cub::DeviceScan::InclusiveSum(nullptr, scan_bytes, head, position.get(), nnz, stream));
    if (scan_bytes > temp_bytes) {
        SR_TRY(temp.allocate(scan_bytes));
        temp_bytes = scan_bytes;
    }
    SR_CUDA_TRY(cub::DeviceScan::InclusiveSum(temp.get(), temp_bytes, head, position.get(), nnz, stream));
    int64_t unique = 0;
    if (nnz > 0) {
        SR_CUDA_TRY(cudaMemcpyAsync(&unique, position.get() + nnz - 1, sizeof unique, cudaMemcpyDeviceToHost, stream));
        SR_CUDA_TRY(sr_cuda::wait_stream(stream));
    }

    sr_matrix_s *A = nullptr;
    SR_TRY(sr_matrix_alloc(ctx, nrows, ncols, unique, type, SR_DEVICE, &A));
    sr_status s = dispatch_write_entries(ctx, keys.get(), order.get(), position.get(), nnz, vals, A);
    if (s == SR_SUCCESS) {
        rowptr_from_keys<<<sr_cuda::blocks_for(nrows + 1, 256), 256, 0, stream>>>(keys.get(), position.get(), nnz,
                                                                                   nrows, A->rowptr);
        cudaError_t err = cudaGetLastError();
        if (err == cudaSuccess)
            err = sr_cuda::wait_stream(stream);
        if (err != cudaSuccess)
            s = sr_cuda_fail(err, "rowptr_from_keys", __FILE__, __LINE__);
    }
    if (s != SR_SUCCESS) {
        sr_matrix_destroy(A);
        return s;
    }
    *out = A;
    return SR_SUCCESS;
}

namespace {

// Row heads: rows[rowptr[i]] = i for each non-empty row; a max-scan then fills every entry.
__global__ void mark_row_heads(const int64_t *rowptr, int64_t nrows, int32_t *rows) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < nrows; i += (int64_t)gridDim.x * blockDim.x)
        if (rowptr[i] < rowptr[i + 1])
            rows[rowptr[i]] = (int32_t)i;
}

struct max_op {
    __device__ int32_t operator()(int32_t a, int32_t b) const { return a > b ? a : b; }
};

// rows[k] = the row of entry k, as int32 (the transpose's column indices).
sr_status expand_rows32(const sr_matrix_s *A, int32_t *rows, sr_cuda::buffer<unsigned char> &temp, size_t &temp_bytes) {
    cudaStream_t stream = sr_cuda::stream_of(A->ctx);
    SR_CUDA_TRY(cudaMemsetAsync(rows, 0, (size_t)A->nnz * sizeof(int32_t), stream));
    mark_row_heads<<<sr_cuda::blocks_for(A->nrows, 256), 256, 0, stream>>>(A->rowptr, A->nrows, rows);
    SR_CUDA_LAUNCHED();
    size_t need = 0;
    SR_CUDA_TRY(cub::DeviceScan::InclusiveScan(nullptr, need, rows, rows, max_op(), A->nnz, stream));
    if (need > temp_bytes) {
        SR_TRY(temp.allocate(need));
        temp_bytes = need;
    }
    SR_CUDA_TRY(cub::DeviceScan::InclusiveScan(temp.get(), temp_bytes, rows, rows, max_op(), A->nnz, stream));
    return SR_SUCCESS;
}

// rowptr[c] = lower_bound(sorted columns, c).
__global__ void rowptr_from_sorted(const int32_t *sorted, int64_t nnz, int64_t ncols, int64_t *rowptr) {
    for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c <= ncols; c += (int64_t)gridDim.x * blockDim.x) {
        rowptr[c] = sr_cuda::lower_bound(sorted, nnz, c);
    }
}

// Payloads that ride through the sort and become the output directly.
__global__ void pack_row_value(const int32_t *rows, const uint32_t *bits, int64_t nnz, uint64_t *packed) {
    for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < nnz; k += (int64_t)gridDim.x * blockDim.x)
        packed[k] = ((uint64_t)(uint32_t)rows[k] << 32) | bits[k];
}

__global__ void unpack_row_value(const uint64_t *packed, int64_t nnz, int32_t *cols, uint32_t *bits) {
    for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < nnz; j += (int64_t)gridDim.x * blockDim.x) {
        const uint64_t p = packed[j];
        cols[j] = (int32_t)(p >> 32);
        bits[j] = (uint32_t)p;
    }
}

// For 8-byte values: the payload is the entry number, and the row and value are gathered.
__global__ void pack_entry(int64_t nnz, uint32_t *entry) {
    for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < nnz; k += (int64_t)gridDim.x * blockDim.x)
        entry[k] = (uint32_t)k;
}

template <typename T>
__global__ void gather_by_entry(const uint32_t *entry, const int32_t *rows, const T *values, int64_t nnz, int32_t *cols,
                                T *out) {
    for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < nnz; j += (int64_t)gridDim.x * blockDim.x) {
        const uint32_t k = entry[j];
        cols[j] = rows[k];
        out[j] = values[k];
    }
}

// Stable radix sort of payloads by column (within a column, rows stay ascending), ping-ponging
// between caller buffers: keys[0] gets a copy of the column indices, keys[1] and payload[1]
// are scratch. On return keys[0]/payload[0] point at the sorted data (which may be either buffer).
template <typename P>
sr_status sort_by_column(const sr_matrix_s *A, int32_t *keys[2], P *payload[2], sr_cuda::buffer<unsigned char> &temp,
                         size_t &temp_bytes) {
    cudaStream_t stream = sr_cuda::stream_of(A->ctx);
    const int end_bit = sr_cuda::bits_for(A->ncols > 1 ? (uint64_t)(A->ncols - 1) : 1);
    SR_CUDA_TRY(cudaMemcpyAsync(keys[0], A->colind, (size_t)A->nnz * sizeof(int32_t), cudaMemcpyDeviceToDevice, stream));
    cub::DoubleBuffer<int32_t> k(keys[0], keys[1]);
    cub::DoubleBuffer<P> v(payload[0], payload[1]);
    size_t need = 0;
    SR_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, need, k, v, A->nnz, 0, end_bit, stream));
    if (need > temp_bytes) {
        SR_TRY(temp.allocate(need));
        temp_bytes = need;
    }
    SR_CUDA_TRY(cub::DeviceRadixSort::SortPairs(temp.get(), temp_bytes, k, v, A->nnz, 0, end_bit, stream));
    keys[0] = k.Current();
    payload[0] = v.Current();
    return SR_SUCCESS;
}

} // namespace

extern "C" sr_status sr_cuda_transpose(const sr_matrix_s *A, sr_matrix_s *AT) {
    sr_context_s *ctx = A->ctx;
    sr_cuda::device_guard guard(ctx->device);
    cudaStream_t stream = sr_cuda::stream_of(ctx);
    const int64_t nnz = A->nnz;
    if (nnz > (int64_t)UINT32_MAX)
        return sr_error(SR_ERROR_UNSUPPORTED, "device transpose supports up to 2^32 - 1 entries (%lld given)",
                        (long long)nnz);
    const unsigned grid = sr_cuda::blocks_for(nnz, 256);
    sr_cuda::buffer<unsigned char> temp(ctx);
    size_t temp_bytes = 0;
    sr_cuda::buffer<int32_t> rows(ctx), sorted_cols(ctx), key_copy(ctx);
    SR_TRY(rows.allocate(nnz));
    SR_TRY(sorted_cols.allocate(nnz));
    if (sr_value_size(A->type) != 4)
        SR_TRY(key_copy.allocate(nnz));
    SR_TRY(expand_rows32(A, rows.get(), temp, temp_bytes));

    // Scratch: rows (reused as sort keys once packed), the sort's second key buffer, payload
    // pairs per type; the output column array doubles as a payload buffer where it can.
    int32_t *keys[2] = {nullptr, sorted_cols.get()};
    if (A->type == SR_TYPE_BOOL) { // payload = row = the output column index
        keys[0] = key_copy.get();
        int32_t *payload[2] = {rows.get(), AT->colind};
        SR_TRY(sort_by_column<int32_t>(A, keys, payload, temp, temp_bytes));
        if (payload[0] != AT->colind)
            SR_CUDA_TRY(cudaMemcpyAsync(AT->colind, payload[0], (size_t)nnz * sizeof(int32_t), cudaMemcpyDeviceToDevice,
                                        stream));
    } else if (sr_value_size(A->type) == 4) { // payload = row << 32 | value bits
        sr_cuda::buffer<uint64_t> packed_in(ctx), packed_out(ctx);
        SR_TRY(packed_in.allocate(nnz));
        SR_TRY(packed_out.allocate(nnz));
        pack_row_value<<<grid, 256, 0, stream>>>(rows.get(), static_cast<const uint32_t *>(A->values), nnz,
                                                 packed_in.get());
        SR_CUDA_LAUNCHED();
        keys[0] = rows.get(); // free once packed
        uint64_t *payload[2] = {packed_in.get(), packed_out.get()};
        SR_TRY(sort_by_column<uint64_t>(A, keys, payload, temp, temp_bytes));
        unpack_row_value<<<grid, 256, 0, stream>>>(payload[0], nnz, AT->colind, static_cast<uint32_t *>(AT->values));
        SR_CUDA_LAUNCHED();
    } else { // float64: payload = entry number; gather row and value
        keys[0] = key_copy.get();
        sr_cuda::buffer<uint32_t> entry_alt(ctx);
        SR_TRY(entry_alt.allocate(nnz));
        uint32_t *entries[2] = {reinterpret_cast<uint32_t *>(AT->colind), entry_alt.get()}; // output as scratch
        pack_entry<<<grid, 256, 0, stream>>>(nnz, entries[0]);
        SR_CUDA_LAUNCHED();
        SR_TRY(sort_by_column<uint32_t>(A, keys, entries, temp, temp_bytes));
        if (entries[0] == reinterpret_cast<uint32_t *>(AT->colind)) { // gather cannot write in place
            SR_CUDA_TRY(cudaMemcpyAsync(entry_alt.get(), entries[0], (size_t)nnz * sizeof(uint32_t),
                                        cudaMemcpyDeviceToDevice, stream));
            entries[0] = entry_alt.get();
        }
        gather_by_entry<double><<<grid, 256, 0, stream>>>(entries[0], rows.get(),
                                                          static_cast<const double *>(A->values), nnz, AT->colind,
                                                          static_cast<double *>(AT->values));
        SR_CUDA_LAUNCHED();
    }
    const int32_t *sorted = keys[0];
    rowptr_from_sorted<<<sr_cuda::blocks_for(A->ncols + 1, 256), 256, 0, stream>>>(sorted, nnz, A->ncols, AT->rowptr);
    SR_CUDA_LAUNCHED();
    SR_CUDA_TRY(sr_cuda::wait_stream(stream));
    return SR_SUCCESS;
}
