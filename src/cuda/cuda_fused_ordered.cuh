// The fused pattern summed in a fixed order, for a deterministic context
// (sr_context_options.deterministic; included by cuda_fused.cu inside its namespace). The kernels of cuda_fused.cu add the rows' terms into w with
// float atomics (in shared memory, then a block's copy into global memory), whose order, and so
// the last bits of w, change from run to run. Here the two halves run apart, each a gather whose
// sums have one order: s = α·v ⊙ (X·y) (α·v ⊙ y for XTY) one row a vector (rows_xy, a fixed
// shuffle tree), then w = Xᵀ·s + β·z, for sparse X by the split SpMV over Xᵀ (cuda_spmv_split.cuh:
// a fix-up adds a long row's tiles in a fixed order), Xᵀ built on the first call and kept with X,
// for dense X by cuBLAS gemv (bit-wise reproducible on one GPU model, cuBLAS's documentation). X is
// read twice instead of once, and Xᵀ takes X's memory again: docs/c-library.md#reproducible-results
// gives the measured cost.
#pragma once

std::mutex fused_transpose_mutex;

void free_fused_transpose(sr_matrix_s *X) {
    sr_matrix_destroy(static_cast<sr_matrix_s *>(X->fused_transpose));
    X->fused_transpose = nullptr;
}

// Xᵀ with values of `type` (bool X: every value 1), made on first use and kept with X.
sr_status fused_transpose_of(const sr_matrix_s *X, sr_type type, const sr_matrix_s **out) {
    std::lock_guard<std::mutex> lock(fused_transpose_mutex);
    auto *matrix = const_cast<sr_matrix_s *>(X); // the cache is not part of the matrix's value
    auto *kept = static_cast<sr_matrix_s *>(matrix->fused_transpose);
    if (kept && kept->type == type) {
        *out = kept;
        return SR_SUCCESS;
    }
    free_fused_transpose(matrix); // kept for the other vector type
    sr_matrix_s *XT = nullptr;
    SR_TRY(sr_matrix_alloc(X->ctx, X->ncols, X->nrows, X->nnz, type, SR_DEVICE, &XT));
    sr_status st = sr_cuda_transpose(X, XT); // bool X: the pattern alone
    if (st == SR_SUCCESS && X->type != type)
        st = sr_cuda_cast_values(X, XT); // from bool: ones
    if (st != SR_SUCCESS) {
        sr_matrix_destroy(XT);
        return st;
    }
    matrix->fused_transpose = XT;
    matrix->free_fused_transpose = free_fused_transpose;
    *out = XT;
    return SR_SUCCESS;
}

// s(i) = α·v(i)·y(i): XTY's row scales.
template <typename T> __global__ void scaled_rows(T *s, const T *y, const T *v, T alpha, int64_t m) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < m; i += (int64_t)gridDim.x * blockDim.x)
        s[i] = alpha * (v ? v[i] : T(1)) * y[i];
}

sr_dense device_vector(void *data, int64_t n, sr_type type) {
    return sr_dense{data, n, 1, n, type, SR_COL_MAJOR, SR_DEVICE};
}

template <typename T> sr_status gemv(sr_context_s *ctx, const fused_params<T> &p, const T *s, T beta) {
    cublasHandle_t h;
    SR_TRY(blas_handle(ctx, &h));
    const T one = 1;
    // row-major X (m x n, ld) is a column-major n x m matrix: Xᵀ·s is its product with s
    cublasStatus_t st;
    if constexpr (sizeof(T) == 4)
        st = cublasSgemv(h, CUBLAS_OP_N, (int)p.n, (int)p.m, &one, p.Xd, (int)p.ld, s, 1, &beta, p.w, 1);
    else
        st = cublasDgemv(h, CUBLAS_OP_N, (int)p.n, (int)p.m, &one, p.Xd, (int)p.ld, s, 1, &beta, p.w, 1);
    return st == CUBLAS_STATUS_SUCCESS ? SR_SUCCESS : blas_fail(st, "the ordered fused pattern's gemv");
}

// XTVXY and XTY in a fixed order (m > 0, n > 0); `rows_xy_launch` runs the XY form.
template <typename T, typename RowsXY>
sr_status run_ordered(sr_context_s *ctx, const sr_fused_args *a, const fused_params<T> &p, cudaStream_t stream,
                      RowsXY rows_xy_launch) {
    if (a->X && a->X->nnz == 0)
        return start_sums(p, stream); // Xᵀ·s is 0
    if (!a->X && (p.n > INT32_MAX || p.m > INT32_MAX || p.ld > INT32_MAX))
        return sr_error(SR_ERROR_UNSUPPORTED, "a deterministic context's fused pattern takes dense X up to 2^31 - 1 "
                                              "rows, columns and leading dimension (%lld x %lld, ld %lld)",
                        (long long)p.m, (long long)p.n, (long long)p.ld);
    buffer<T> s(ctx);
    SR_TRY(s.allocate((size_t)p.m));
    if (p.form == SR_FORM_XTY) {
        scaled_rows<T><<<grid_for(p.m), 256, 0, stream>>>(s.get(), p.y, p.v, p.alpha, p.m);
        SR_CUDA_LAUNCHED();
    } else {
        fused_params<T> q = p;
        q.form = SR_FORM_XY;
        q.w = s.get();
        q.z = nullptr;
        q.beta = 0;
        SR_TRY(rows_xy_launch(q));
    }
    if (!a->X) {
        SR_TRY(start_sums(p, stream));
        return gemv<T>(ctx, p, s.get(), T(1));
    }
    const sr_matrix_s *XT = nullptr;
    SR_TRY(fused_transpose_of(a->X, a->type, &XT));
    if (p.z)
        SR_TRY(start_sums(p, stream)); // w = β·z, then w += Xᵀ·s
    const sr_dense sv = device_vector(s.get(), p.m, a->type), wv = device_vector(p.w, p.n, a->type);
    return sr_cuda_spmm(XT, &sv, &wv, nullptr, SR_PLUS_TIMES, false, p.z != nullptr, true);
}
