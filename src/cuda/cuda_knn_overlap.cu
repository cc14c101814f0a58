// k-NN on the GPU whose work follows the overlap (the device twin of src/cpu/cpu_overlap.c; the
// algebra is in docs/knn-overlap.md), taken only when asked (SPARSERING_KNN_OVERLAP=1).
//
// For a batch of queries: every (query, index row) pair that shares a column gets the metric's
// intersection terms, expanded in the query's column order, sorted by (query, row) with a stable
// radix sort and summed in that order (the dense kernel sums the same terms, in an order its
// atomics pick); the pairs are finalized into candidates. A warp per query then keeps the k best
// of its candidates and of the rows it shares nothing with, taken by index (the metrics whose
// no-overlap distance is one constant; those walked by an order of keys stay dense on the device)
// until no further row can enter. Right (tests/test_knn_overlap.c), but on the paper-scale SEC-Edgar-like set and
// the PyPI sets 4-6x slower than the dense kernels (bench/results-knn-h100.txt, 2026-11-26): their
// Zipf-popular columns give a query shared columns with ~30% of the index, and expanding, sorting
// and summing those pairs costs more than the dense kernels' tiles.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>
#include <algorithm>

#include "cuda_common.cuh"
#include "cuda_topk.cuh"

extern "C" {
#include "../semiring/metric.h"
#include "cuda.h"
}

namespace {

using namespace sr_cuda;

// The intersection terms of one pair, in the dense kernel's accumulator type.
template <typename Acc> struct terms {
    Acc a0, a1;
};

// deg[e - e0] = how many index rows hold query entry e's column (the pairs it makes).
__global__ void entry_pairs(const int32_t *qcol, const int64_t *xtptr, int64_t e0, int64_t entries, int64_t *deg) {
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t <= entries;
         t += (int64_t)gridDim.x * blockDim.x)
        deg[t] = t < entries ? xtptr[qcol[e0 + t] + 1] - xtptr[qcol[e0 + t]] : 0;
}

// A warp a query: the pairs of each of its entries, in column order, at off[e - e0].
template <typename T, typename Acc>
__global__ void expand_pairs(const int64_t *qptr, const int32_t *qcol, const T *qval, const int64_t *xtptr,
                             const int32_t *xtrow, const T *xtval, int64_t q0, int64_t rows, sr_metric m, double p,
                             const int64_t *off, uint64_t *key, terms<Acc> *val) {
    const int lane = threadIdx.x & 31;
    const int64_t e0 = qptr[q0];
    for (int64_t r = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; r < rows;
         r += (int64_t)gridDim.x * blockDim.x / 32) {
        for (int64_t e = qptr[q0 + r]; e < qptr[q0 + r + 1]; e++) {
            const int32_t c = qcol[e];
            const double q = (double)qval[e];
            const int64_t t0 = xtptr[c], base = off[e - e0];
            for (int64_t t = t0 + lane; t < xtptr[c + 1]; t += 32) {
                double a0 = 0.0, a1 = 0.0;
                sr_metric_intersect(m, q, (double)xtval[t], p, &a0, &a1);
                key[base + t - t0] = (uint64_t)r << 32 | (uint32_t)xtrow[t];
                val[base + t - t0] = terms<Acc>{(Acc)a0, (Acc)a1};
            }
        }
    }
}

// Each pair's terms summed in order (the run of its key), finalized and rounded to T.
template <typename T, typename Acc>
__global__ void finalize_pairs(const uint64_t *unique, const int64_t *count, const int64_t *start, const int *runs,
                               const terms<Acc> *val, sr_metric m, double p, double d, const double *qnorm,
                               const double *xnorm, int64_t q0, T *cand_val) {
    for (int64_t u = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; u < *runs; u += (int64_t)gridDim.x * blockDim.x) {
        Acc a0 = 0, a1 = 0;
        for (int64_t t = start[u]; t < start[u] + count[u]; t++) {
            a0 += val[t].a0;
            a1 += val[t].a1;
        }
        const int64_t j = q0 + (int64_t)(unique[u] >> 32), i = (int64_t)(unique[u] & 0xffffffffu);
        cand_val[u] = (T)sr_metric_finalize(m, (double)a0, (double)a1, qnorm[2 * j], qnorm[2 * j + 1], xnorm[2 * i],
                                            xnorm[2 * i + 1], d, p);
    }
}

// The first u in [lo, hi) with key[u] >= target.
__device__ inline int64_t first_at_least(const uint64_t *key, int64_t lo, int64_t hi, uint64_t target) {
    return lo + sr_cuda::lower_bound(key + lo, hi - lo, target);
}

template <typename T> struct select_args {
    const uint64_t *unique; // the batch's pairs, (query, row) ascending
    const T *cand_val;
    const int *runs;
    const double *qnorm, *xnorm;
    int64_t q0, rows, n, k;
    sr_metric m;
    double p, d, sign;
    int64_t *idx;
    T *dist;
    int64_t rs, cs;
};

// A warp a query: its pairs, then the rows it shares nothing with by index (their distance is one
// constant, so the walk ends at the first that cannot enter), into the k best; written best first.
template <typename T> __global__ void select_queries(select_args<T> a) {
    const int lane = threadIdx.x & 31;
    for (int64_t r = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; r < a.rows;
         r += (int64_t)gridDim.x * blockDim.x / 32) {
        const int64_t j = a.q0 + r, runs = *a.runs;
        const int64_t lo = first_at_least(a.unique, 0, runs, (uint64_t)r << 32);
        const int64_t hi = first_at_least(a.unique, lo, runs, (uint64_t)(r + 1) << 32);
        warp_best<double> best((int)a.k);
        for (int64_t u0 = lo; u0 < hi; u0 += 32) {
            const int64_t u = u0 + lane;
            const bool has = u < hi;
            best.offer_lanes(has, has ? a.sign * (double)a.cand_val[u] : 0.0,
                             has ? (int64_t)(a.unique[u] & 0xffffffffu) : 0);
        }
        const double qn0 = a.qnorm[2 * j], qn1 = a.qnorm[2 * j + 1];
        bool stop = false;
        for (int64_t w0 = 0; w0 < a.n && !stop; w0 += 32) {
            const int64_t i = w0 + lane < a.n ? w0 + lane : -1;
            bool untouched = false;
            double kk = 0.0;
            if (i >= 0) {
                const uint64_t target = (uint64_t)r << 32 | (uint64_t)i;
                const int64_t at = first_at_least(a.unique, lo, hi, target);
                untouched = at == hi || a.unique[at] != target;
                if (untouched)
                    kk = a.sign * (double)(T)sr_metric_disjoint_value(a.m, qn0, qn1, a.xnorm[2 * i],
                                                                      a.xnorm[2 * i + 1], a.d, a.p);
            }
            unsigned left = __ballot_sync(~0u, untouched);
            while (left) { // in index order: the first row that cannot enter ends the walk
                const int src = __ffs(left) - 1;
                left &= left - 1;
                const double key = __shfl_sync(~0u, kk, src);
                const int64_t row = __shfl_sync(~0u, i, src);
                if (!best.enters(key, row)) {
                    stop = true;
                    break;
                }
                best.insert(key, row);
            }
        }
        if (lane < a.k) {
            a.idx[r * a.k + lane] = best.row;
            a.dist[r * a.rs + lane * a.cs] = (T)(a.sign * best.key);
        }
    }
}

template <typename T, typename Acc>
sr_status knn_overlap(const sr_distance_inputs *in, int64_t q0, int64_t q1, int64_t k,
                      int64_t *idx, const sr_strided_out *dist, bool *taken) {
    const sr_matrix_s *Q = in->Q, *X = in->X, *XT = in->XT;
    sr_context_s *ctx = Q->ctx;
    cudaStream_t stream = stream_of(ctx);
    const int64_t rows = q1 - q0, n = X->nrows;
    int64_t qp[2];
    SR_CUDA_TRY(cudaMemcpyAsync(qp, Q->rowptr + q0, sizeof(int64_t), cudaMemcpyDeviceToHost, stream));
    SR_CUDA_TRY(cudaMemcpyAsync(qp + 1, Q->rowptr + q1, sizeof(int64_t), cudaMemcpyDeviceToHost, stream));
    SR_CUDA_TRY(sr_cuda::wait_stream(stream));
    const int64_t entries = qp[1] - qp[0];
    // the pairs: each entry's count, then where its pairs go
    buffer<int64_t> off(ctx);
    SR_TRY(off.allocate((size_t)entries + 1));
    entry_pairs<<<grid_for(entries + 1), 256, 0, stream>>>(Q->colind, XT->rowptr, qp[0], entries, off.get());
    SR_CUDA_LAUNCHED();
    size_t scan_bytes = 0;
    SR_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, off.get(), off.get(), (int)(entries + 1), stream));
    buffer<unsigned char> scan_temp(ctx);
    SR_TRY(scan_temp.allocate(scan_bytes));
    SR_CUDA_TRY(cub::DeviceScan::ExclusiveSum(scan_temp.get(), scan_bytes, off.get(), off.get(), (int)(entries + 1),
                                              stream));
    int64_t pairs = 0;
    SR_CUDA_TRY(cudaMemcpyAsync(&pairs, off.get() + entries, sizeof pairs, cudaMemcpyDeviceToHost, stream));
    SR_CUDA_TRY(sr_cuda::wait_stream(stream));
    if (pairs >= (int64_t)1 << 31) { // cub's item counts
        *taken = false;
        return SR_SUCCESS;
    }
    const int np = (int)pairs;
    const size_t room = (size_t)std::max(np, 1);
    buffer<uint64_t> keys(ctx), keys_sorted(ctx), unique(ctx);
    buffer<terms<Acc>> vals(ctx), vals_sorted(ctx);
    buffer<int64_t> count(ctx), start(ctx);
    buffer<int> runs(ctx);
    buffer<T> cand(ctx);
    SR_TRY(keys.allocate(room));
    SR_TRY(keys_sorted.allocate(room));
    SR_TRY(vals.allocate(room));
    SR_TRY(vals_sorted.allocate(room));
    SR_TRY(unique.allocate(room));
    SR_TRY(count.allocate(room));
    SR_TRY(start.allocate(room));
    SR_TRY(runs.allocate(1));
    SR_TRY(cand.allocate(room));
    SR_CUDA_TRY(cudaMemsetAsync(runs.get(), 0, sizeof(int), stream));
    if (np > 0) {
        expand_pairs<T, Acc><<<grid_for(rows * 32), 256, 0, stream>>>(
            Q->rowptr, Q->colind, static_cast<const T *>(Q->values), XT->rowptr, XT->colind,
            static_cast<const T *>(XT->values), q0, rows, in->metric, in->p, off.get(), keys.get(), vals.get());
        SR_CUDA_LAUNCHED();
        // sorted by (query, row), stably: a pair's terms stay in column order; then the pairs' runs
        int end_bit = 32;
        while (end_bit < 64 && ((uint64_t)1 << (end_bit - 32)) < (uint64_t)rows)
            end_bit++;
        size_t sort_bytes = 0, rle_bytes = 0, starts_bytes = 0;
        SR_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, keys.get(), keys_sorted.get(), vals.get(),
                                                    vals_sorted.get(), np, 0, end_bit, stream));
        SR_CUDA_TRY(cub::DeviceRunLengthEncode::Encode(nullptr, rle_bytes, keys_sorted.get(), unique.get(),
                                                       count.get(), runs.get(), np, stream));
        SR_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, starts_bytes, count.get(), start.get(), np, stream));
        buffer<unsigned char> temp(ctx);
        SR_TRY(temp.allocate(std::max({sort_bytes, rle_bytes, starts_bytes, (size_t)1})));
        SR_CUDA_TRY(cub::DeviceRadixSort::SortPairs(temp.get(), sort_bytes, keys.get(), keys_sorted.get(), vals.get(),
                                                    vals_sorted.get(), np, 0, end_bit, stream));
        // the counts past the last run are zeros: each start needs only the counts before it, but the
        // scan reads all np (compute-sanitizer's initcheck reported the reads of unwritten counts)
        SR_CUDA_TRY(cudaMemsetAsync(count.get(), 0, (size_t)np * sizeof(int64_t), stream));
        SR_CUDA_TRY(cub::DeviceRunLengthEncode::Encode(temp.get(), rle_bytes, keys_sorted.get(), unique.get(),
                                                       count.get(), runs.get(), np, stream));
        SR_CUDA_TRY(cub::DeviceScan::ExclusiveSum(temp.get(), starts_bytes, count.get(), start.get(), np, stream));
        finalize_pairs<T, Acc><<<grid_for(np), 256, 0, stream>>>(unique.get(), count.get(), start.get(), runs.get(),
                                                                 vals_sorted.get(), in->metric, in->p,
                                                                 (double)X->ncols, in->qnorm, in->xnorm, q0,
                                                                 cand.get());
        SR_CUDA_LAUNCHED();
    }
    select_args<T> a{};
    a.unique = unique.get();
    a.cand_val = cand.get();
    a.runs = runs.get();
    a.qnorm = in->qnorm;
    a.xnorm = in->xnorm;
    a.q0 = q0;
    a.rows = rows;
    a.n = n;
    a.k = k;
    a.m = in->metric;
    a.p = in->p;
    a.d = (double)X->ncols;
    a.sign = sr_metric_is_similarity(in->metric) ? -1.0 : 1.0;
    a.idx = idx;
    a.dist = static_cast<T *>(dist->data);
    a.rs = dist->row_stride;
    a.cs = dist->col_stride;
    select_queries<T><<<grid_for(rows * 32), 256, 0, stream>>>(a);
    SR_CUDA_LAUNCHED();
    SR_CUDA_TRY(sr_cuda::wait_stream(stream));
    *taken = true;
    return SR_SUCCESS;
}

} // namespace

extern "C" sr_status sr_cuda_knn_overlap_rows(const sr_distance_inputs *in, int64_t q0,
                                              int64_t q1, int64_t k, int64_t *idx, const sr_strided_out *dist,
                                              bool *taken) {
    *taken = false;
    if (k > 32 || sr_metric_disjoint_order(in->metric) != SR_DISJOINT_BY_INDEX || !in->XT ||
        in->X->nrows > INT32_MAX)
        return SR_SUCCESS;
    const bool wide = sr_metric_kind_of(in->metric) == SR_MK_UNION; // the dense kernel's accumulators
    if (in->Q->type == SR_TYPE_FLOAT64)
        return knn_overlap<double, double>(in, q0, q1, k, idx, dist, taken);
    return wide ? knn_overlap<float, double>(in, q0, q1, k, idx, dist, taken)
                : knn_overlap<float, float>(in, q0, q1, k, idx, dist, taken);
}
