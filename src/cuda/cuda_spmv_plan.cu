// sr_spmv_plan on the device (cuda_spmv_plan.cuh): rank A's columns by entry count, give the
// first ones slots in shared memory, time the candidates on A itself and keep the fastest.
#include "cuda_spmv_plan.cuh"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

extern "C" {
#include "../core/types.h"
#include "cuda.h"
}

namespace sr_cuda {

namespace {

struct plan_memory {
    spmv_plan plan;
    int64_t *first_row = nullptr; // tiles + 1, then the long spans' pairs
    size_t first_row_bytes = 0;
    int32_t *hot = nullptr; // the encoded columns (nnz), then column_of (slots)
    size_t hot_bytes = 0;
};
std::mutex plan_mutex;

void release(sr_context_s *ctx, plan_memory *p) {
    if (!p)
        return;
    sr_mem_free(ctx, SR_DEVICE, p->first_row, p->first_row_bytes);
    sr_mem_free(ctx, SR_DEVICE, p->hot, p->hot_bytes);
    delete p;
}

void free_plan(sr_matrix_s *A) {
    release(A->ctx, static_cast<plan_memory *>(A->spmv_plan));
    A->spmv_plan = nullptr;
    A->free_spmv_plan = nullptr;
}

// out[k] = ~slot for an entry whose column has a slot, its column otherwise.
__global__ void encode_hot(const int32_t *colind, int64_t nnz, const int32_t *slot_of, int32_t *out) {
    for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < nnz; k += (int64_t)gridDim.x * blockDim.x) {
        const int32_t c = colind[k], s = slot_of[c];
        out[k] = s >= 0 ? ~s : c;
    }
}

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Median seconds of one SpMV on A with `plan` (the split kernel's), after a warm-up.
sr_status time_spmv(const sr_matrix_s *A, const sr_dense *x, const sr_dense *y, const spmv_plan *plan, double *seconds) {
    constexpr int kReps = 7;
    SR_TRY(spmv_with_plan(A, x, y, plan));
    std::vector<double> t(kReps);
    for (double &s : t) {
        const double t0 = now();
        SR_TRY(spmv_with_plan(A, x, y, plan));
        s = now() - t0;
    }
    std::nth_element(t.begin(), t.begin() + kReps / 2, t.end());
    *seconds = t[kReps / 2];
    return SR_SUCCESS;
}

// SPARSERING_SPMV_PLAN=tiles|hot keeps that candidate whatever the timing says (tests cover each
// kernel with it): 0 the plain kernel with cached tiles, 1 the hot kernel; -1 when unset.
int forced_candidate() {
    const char *env = getenv("SPARSERING_SPMV_PLAN");
    if (!env)
        return -1;
    return strcmp(env, "tiles") == 0 ? 0 : strcmp(env, "hot") == 0 ? 1 : -1;
}

// The tiles into p (their first rows and the long spans): all a call needs that has no slots.
sr_status build_tiles(const sr_matrix_s *A, plan_memory *p) {
    const int64_t tiles = spmv_split_tile_count(A), room = spmv_long_spans_room(A);
    p->first_row_bytes = (size_t)(tiles + 1 + 2 * room) * sizeof(int64_t);
    SR_TRY(sr_mem_alloc(A->ctx, SR_DEVICE, p->first_row_bytes, reinterpret_cast<void **>(&p->first_row)));
    int64_t *spans = p->first_row + tiles + 1, n_spans = 0;
    SR_TRY(spmv_split_tiles(A, p->first_row, spans, &n_spans));
    p->plan = spmv_plan{nullptr, nullptr, p->first_row, spans, n_spans, 0};
    return SR_SUCCESS;
}

void install(sr_matrix_s *A, plan_memory *p) {
    A->spmv_plan = p;
    A->free_spmv_plan = free_plan;
}

// Builds the plan into p (which `release` frees on failure): the tiles, then the slots for as
// many columns as shared memory holds, timed against the tiles alone on A itself.
sr_status analyse(const sr_matrix_s *A, plan_memory *p, sr_spmv_plan_info *info) {
    sr_context_s *ctx = A->ctx;
    cudaStream_t stream = stream_of(ctx);
    const size_t elem = sr_type_size(A->type);
    SR_TRY(build_tiles(A, p));
    const int64_t slots = std::min<int64_t>((int64_t)(spmv_hot_slot_bytes(A->type) / elem) / 32 * 32, A->ncols);
    if (slots <= 0)
        return SR_SUCCESS;
    p->hot_bytes = (size_t)(A->nnz + slots) * sizeof(int32_t);
    SR_TRY(sr_mem_alloc(ctx, SR_DEVICE, p->hot_bytes, reinterpret_cast<void **>(&p->hot)));
    buffer<int32_t> slot_of(ctx);
    buffer<unsigned long long> hot_count(ctx);
    SR_TRY(slot_of.allocate((size_t)A->ncols));
    SR_TRY(hot_count.allocate(1));
    unsigned long long hot = 0;
    SR_TRY(rank_hot_columns(A, slots, slot_of.get(), p->hot + A->nnz, &hot));
    encode_hot<<<grid_for(A->nnz), 256, 0, stream>>>(A->colind, A->nnz, slot_of.get(), p->hot);
    SR_CUDA_LAUNCHED();

    // Scratch x (zeros: the gathers cost the same whatever the values) and y.
    buffer<unsigned char> x_memory(ctx), y_memory(ctx);
    SR_TRY(x_memory.allocate((size_t)A->ncols * elem));
    SR_TRY(y_memory.allocate((size_t)A->nrows * elem));
    SR_CUDA_TRY(cudaMemsetAsync(x_memory.get(), 0, (size_t)A->ncols * elem, stream));
    const sr_dense x = sr_dense_view(x_memory.get(), A->ncols, 1, A->type, SR_COL_MAJOR, SR_DEVICE);
    const sr_dense y = sr_dense_view(y_memory.get(), A->nrows, 1, A->type, SR_COL_MAJOR, SR_DEVICE);
    const spmv_plan tiles = p->plan;
    spmv_plan with_slots = tiles;
    with_slots.colind = p->hot;
    with_slots.column_of = p->hot + A->nnz;
    with_slots.slots = slots;
    SR_TRY(time_spmv(A, &x, &y, &tiles, &info->plain_seconds));
    SR_TRY(time_spmv(A, &x, &y, &with_slots, &info->planned_seconds));
    const int forced = forced_candidate();
    // kept where it beats the plain call by more than the timing's noise (or when forced)
    if (forced == 1 || (forced < 0 && info->planned_seconds <= 0.97 * info->plain_seconds)) {
        p->plan = with_slots;
        info->in_use = true;
        info->hot_columns = slots;
        info->hot_share = A->nnz > 0 ? (double)hot / (double)A->nnz : 0.0;
    } else {
        sr_mem_free(ctx, SR_DEVICE, p->hot, p->hot_bytes);
        p->hot = nullptr;
        p->hot_bytes = 0;
    }
    info->bytes = info->in_use ? p->first_row_bytes + p->hot_bytes : 0;
    return SR_SUCCESS;
}

} // namespace

sr_status spmv_plan_for_call(const sr_matrix_s *A, const spmv_plan **plan) {
    std::lock_guard<std::mutex> lock(plan_mutex);
    auto *matrix = const_cast<sr_matrix_s *>(A); // the cache is not part of the matrix's value
    if (!A->spmv_plan) {
        auto *p = new (std::nothrow) plan_memory{};
        if (!p)
            return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for an SpMV's tiles");
        const sr_status st = build_tiles(A, p);
        if (st != SR_SUCCESS) {
            release(A->ctx, p);
            return st;
        }
        install(matrix, p);
    }
    *plan = &static_cast<const plan_memory *>(A->spmv_plan)->plan;
    return SR_SUCCESS;
}

} // namespace sr_cuda

using namespace sr_cuda;

extern "C" sr_status sr_cuda_spmv_plan(struct sr_matrix_s *A, sr_spmv_plan_info *info) {
    device_guard guard(A->ctx->device);
    std::lock_guard<std::mutex> lock(plan_mutex);
    const double t0 = now();
    if (A->free_spmv_plan)
        A->free_spmv_plan(A);
    *info = sr_spmv_plan_info{};
    // a Boolean A reads no x; a matrix the row kernel serves (more rows than entries) has no tiles
    if (A->type != SR_TYPE_BOOL && A->nnz > 0 && spmv_runs_split(A)) {
        auto *p = new (std::nothrow) plan_memory{};
        if (!p)
            return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for an SpMV plan");
        const sr_status st = analyse(A, p, info);
        if (st != SR_SUCCESS) {
            release(A->ctx, p);
            *info = sr_spmv_plan_info{};
            return st;
        }
        install(A, p);
    }
    info->seconds = now() - t0;
    return SR_SUCCESS;
}
