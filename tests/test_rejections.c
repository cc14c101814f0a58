/* Issue 27's table test, past its first column (NULL handles: test_null_handles.c): each row
 * calls a public entry point with one bad argument (a mismatched shape or type, an unsorted,
 * repeated or out-of-range index, a negative size, a size whose product overflows, NaN or
 * infinity where a metric forbids it, k past the index, an empty matrix where one is refused) and
 * expects its status and a message naming the problem, an output handle left as it was, a dense
 * output left unwritten, and the inputs unchanged. */
#include "test_util.h"

static sr_context ctx;
static sr_matrix A, B, S, I32, NaNs, Wide; /* A 6x5, B 5x4, S 6x4 float64; I32 6x5 int32 */
static sr_matrix out;                       /* every call's matrix output: stays the sentinel */
static double buf[256], buf2[256];          /* dense inputs and outputs, poisoned */
static int64_t idx[256];

#define SENTINEL ((sr_matrix)(uintptr_t)0x1)
#define POISON 12345.678

typedef sr_status (*call_fn)(void);

typedef struct {
    const char *name;
    call_fn call;
    sr_status want;
    const char *message; /* a piece the error message must hold */
} row;

static sr_dense dense(double *data, int64_t r, int64_t c) { return sr_dense_view(data, r, c, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST); }

/* ---- constructors */
static const int64_t rp_ok[4] = {0, 2, 3, 4};
static sr_status csr_negative_rows(void)
{
    return sr_matrix_from_csr(ctx, &out, -3, 5, SR_TYPE_FLOAT64, rp_ok, (int32_t[]){0, 1, 2, 3}, buf, SR_HOST);
}
static sr_status csr_unsorted(void)
{
    return sr_matrix_from_csr(ctx, &out, 3, 5, SR_TYPE_FLOAT64, rp_ok, (int32_t[]){1, 0, 2, 3}, buf, SR_HOST);
}
static sr_status csr_repeated(void)
{
    return sr_matrix_from_csr(ctx, &out, 3, 5, SR_TYPE_FLOAT64, rp_ok, (int32_t[]){1, 1, 2, 3}, buf, SR_HOST);
}
static sr_status csr_column_out_of_range(void)
{
    return sr_matrix_from_csr(ctx, &out, 3, 5, SR_TYPE_FLOAT64, rp_ok, (int32_t[]){0, 1, 5, 3}, buf, SR_HOST);
}
static sr_status csr_rowptr_decreasing(void)
{
    return sr_matrix_from_csr(ctx, &out, 3, 5, SR_TYPE_FLOAT64, (int64_t[]){0, 3, 2, 4}, (int32_t[]){0, 1, 2, 3}, buf,
                              SR_HOST);
}
static sr_status csr_too_many_columns(void)
{
    return sr_matrix_from_csr(ctx, &out, 3, (int64_t)1 << 40, SR_TYPE_FLOAT64, rp_ok, (int32_t[]){0, 1, 2, 3}, buf,
                              SR_HOST);
}
static sr_status coo_row_out_of_range(void)
{
    return sr_matrix_from_coo(ctx, &out, 3, 5, SR_TYPE_FLOAT64, 2, (int64_t[]){0, 3}, (int32_t[]){0, 1}, buf, SR_DUPLICATES_ERROR,
                              SR_HOST);
}
static sr_status coo_negative_count(void)
{
    return sr_matrix_from_coo(ctx, &out, 3, 5, SR_TYPE_FLOAT64, -1, (int64_t[]){0}, (int32_t[]){0}, buf, SR_DUPLICATES_ERROR,
                              SR_HOST);
}
static sr_status dense_size_overflow(void)
{
    sr_dense d = dense(buf, (int64_t)1 << 40, (int64_t)1 << 40);
    return sr_matrix_from_dense(ctx, &out, &d);
}

/* ---- products */
static sr_status mxm_shapes(void) { return sr_mxm(ctx, &out, NULL, SR_PLUS_TIMES, A, A, NULL); }
static sr_status mxm_types(void) { return sr_mxm(ctx, &out, NULL, SR_PLUS_TIMES, I32, B, NULL); }
static sr_status mxm_mask_shape(void) { return sr_mxm(ctx, &out, B, SR_PLUS_TIMES, A, B, NULL); }
static sr_status spmv_length(void)
{
    sr_dense x = sr_vector_view(buf, 4, SR_TYPE_FLOAT64, SR_HOST), y = sr_vector_view(buf2, 6, SR_TYPE_FLOAT64, SR_HOST);
    return sr_spmv(ctx, &y, NULL, SR_PLUS_TIMES, A, &x, NULL);
}
static sr_status spmm_inner(void)
{
    sr_dense b = dense(buf, 4, 3), c = dense(buf2, 6, 3);
    return sr_spmm(ctx, &c, NULL, SR_PLUS_TIMES, A, &b, NULL);
}
static sr_status spmm_output_type(void)
{
    sr_dense b = dense(buf, 5, 3), c = sr_dense_view(buf2, 6, 3, SR_TYPE_INT32, SR_ROW_MAJOR, SR_HOST);
    return sr_spmm(ctx, &c, NULL, SR_PLUS_TIMES, A, &b, NULL);
}
static sr_status add_shapes(void) { return sr_ewise_add(ctx, &out, NULL, SR_PLUS_TIMES, A, S, NULL); }
static sr_status mult_shapes(void) { return sr_ewise_mult(ctx, &out, NULL, SR_PLUS_TIMES, A, B, NULL); }
static sr_status kron_overflow(void) { return sr_kronecker(ctx, &out, NULL, SR_PLUS_TIMES, Wide, Wide, NULL); }
static sr_status extract_out_of_range(void) { return sr_extract(ctx, &out, A, 4, 0, 3, 5); }
static sr_status extract_negative(void) { return sr_extract(ctx, &out, A, -1, 0, 2, 5); }

/* ---- sampled and fused */
static sr_status sddmm_inner(void)
{
    sr_dense a = dense(buf, 6, 3), b = dense(buf2, 4, 2);
    return sr_sddmm(ctx, &out, SR_PLUS_TIMES, 1.0, S, &a, &b, 0.0, NULL);
}
static sr_status sddmm_rows(void)
{
    sr_dense a = dense(buf, 5, 3), b = dense(buf2, 4, 3);
    return sr_sddmm(ctx, &out, SR_PLUS_TIMES, 1.0, S, &a, &b, 0.0, NULL);
}
static sr_status sddmm_infinite_alpha(void)
{
    sr_dense a = dense(buf, 6, 3), b = dense(buf2, 4, 3);
    return sr_sddmm(ctx, &out, SR_PLUS_TIMES, INFINITY, S, &a, &b, 0.0, NULL);
}
static sr_status fused_length(void)
{
    sr_dense w = sr_vector_view(buf2, 5, SR_TYPE_FLOAT64, SR_HOST), y = sr_vector_view(buf, 6, SR_TYPE_FLOAT64, SR_HOST);
    return sr_fused_pattern(ctx, SR_FORM_XTVXY, &w, 1.0, A, NULL, &y, 0.0, NULL);
}
static sr_status fused_nan_alpha(void)
{
    sr_dense w = sr_vector_view(buf2, 5, SR_TYPE_FLOAT64, SR_HOST), y = sr_vector_view(buf, 5, SR_TYPE_FLOAT64, SR_HOST);
    return sr_fused_pattern(ctx, SR_FORM_XTVXY, &w, NAN, A, NULL, &y, 0.0, NULL);
}

/* ---- distances and neighbours */
static sr_status distance_columns(void)
{
    sr_dense d = dense(buf2, 6, 5);
    return sr_pairwise_distance(ctx, A, B, SR_METRIC_L2, 0, &d);
}
static sr_status distance_nan(void)
{
    sr_dense d = dense(buf2, 2, 6);
    return sr_pairwise_distance(ctx, NaNs, A, SR_METRIC_L2, 0, &d);
}
static sr_status distance_output_shape(void)
{
    sr_dense d = dense(buf2, 6, 5);
    return sr_pairwise_distance(ctx, A, A, SR_METRIC_L2, 0, &d);
}
static sr_status knn_k_past_index(void)
{
    sr_dense d = dense(buf2, 6, 7);
    return sr_knn(ctx, A, A, 7, SR_METRIC_COSINE, 0, idx, &d, NULL);
}
static sr_status knn_k_zero(void)
{
    sr_dense d = dense(buf2, 6, 1);
    return sr_knn(ctx, A, A, 0, SR_METRIC_COSINE, 0, idx, &d, NULL);
}
static sr_status knn_graph_k_huge(void) { return sr_knn_graph(ctx, A, INT64_MAX, SR_METRIC_L2, 0, NULL, &out); }
static sr_status radius_nan(void) { return sr_radius_neighbors(ctx, A, NULL, NAN, SR_METRIC_L2, 0, NULL, &out); }
static sr_status minkowski_p(void)
{
    sr_dense d = dense(buf2, 6, 6);
    return sr_pairwise_distance(ctx, A, A, SR_METRIC_MINKOWSKI, -1.0, &d);
}

/* ---- graphs and solvers */
static sr_status closure_not_square(void) { return sr_transitive_closure(ctx, A, SR_CLOSURE_AUTO, &out, NULL, NULL); }
static sr_status ridge_labels(void)
{
    sr_dense y = sr_vector_view(buf, 5, SR_TYPE_FLOAT64, SR_HOST), w = sr_vector_view(buf2, 5, SR_TYPE_FLOAT64, SR_HOST);
    return sr_ridge(ctx, A, &y, 1.0, NULL, &w, NULL);
}
static sr_status ridge_negative_lambda(void)
{
    sr_dense y = sr_vector_view(buf, 6, SR_TYPE_FLOAT64, SR_HOST), w = sr_vector_view(buf2, 5, SR_TYPE_FLOAT64, SR_HOST);
    return sr_ridge(ctx, A, &y, -1.0, NULL, &w, NULL);
}
static sr_status logistic_bad_label(void)
{
    for (int i = 0; i < 6; i++)
        buf[i] = i == 3 ? 0.5 : 1.0;
    sr_dense y = sr_vector_view(buf, 6, SR_TYPE_FLOAT64, SR_HOST), w = sr_vector_view(buf2, 5, SR_TYPE_FLOAT64, SR_HOST);
    return sr_logistic(ctx, A, &y, 1.0, NULL, &w, NULL);
}

static const row table[] = {
    {"from_csr: negative rows", csr_negative_rows, SR_ERROR_INVALID_ARGUMENT, "-3"},
    {"from_csr: unsorted columns", csr_unsorted, SR_ERROR_INVALID_MATRIX, "row 0"},
    {"from_csr: a repeated column", csr_repeated, SR_ERROR_INVALID_MATRIX, "twice"},
    {"from_csr: a column past ncols", csr_column_out_of_range, SR_ERROR_INVALID_MATRIX, "5"},
    {"from_csr: row pointers going down", csr_rowptr_decreasing, SR_ERROR_INVALID_MATRIX, "row"},
    {"from_csr: 2^40 columns (int32 indices)", csr_too_many_columns, SR_ERROR_OVERFLOW, "column index limit"},
    {"from_coo: a row past nrows", coo_row_out_of_range, SR_ERROR_INVALID_MATRIX, "3"},
    {"from_coo: a negative count", coo_negative_count, SR_ERROR_INVALID_ARGUMENT, "-1"},
    {"from_dense: 2^40 x 2^40", dense_size_overflow, SR_ERROR_OVERFLOW, ""},
    {"mxm: 6x5 times 6x5", mxm_shapes, SR_ERROR_INVALID_ARGUMENT, "6 x 5"},
    {"mxm: int32 times float64", mxm_types, SR_ERROR_INVALID_ARGUMENT, "int32"},
    {"mxm: a mask of another shape", mxm_mask_shape, SR_ERROR_INVALID_ARGUMENT, "mask"},
    {"spmv: x of 4 for 5 columns", spmv_length, SR_ERROR_INVALID_ARGUMENT, "4"},
    {"spmm: B of 4 rows for 5 columns", spmm_inner, SR_ERROR_INVALID_ARGUMENT, "4"},
    {"spmm: an int32 output for float64", spmm_output_type, SR_ERROR_INVALID_ARGUMENT, "int32"},
    {"ewise_add: 6x5 and 6x4", add_shapes, SR_ERROR_INVALID_ARGUMENT, "6 x 4"},
    {"ewise_mult: 6x5 and 5x4", mult_shapes, SR_ERROR_INVALID_ARGUMENT, "5 x 4"},
    {"kronecker: 2^31-1 columns squared", kron_overflow, SR_ERROR_OVERFLOW, ""},
    {"extract: rows 4..6 of 6", extract_out_of_range, SR_ERROR_INVALID_ARGUMENT, "row"},
    {"extract: a negative first row", extract_negative, SR_ERROR_INVALID_ARGUMENT, "-1"},
    {"sddmm: K of 3 and 2", sddmm_inner, SR_ERROR_INVALID_ARGUMENT, "3"},
    {"sddmm: A of 5 rows for S's 6", sddmm_rows, SR_ERROR_INVALID_ARGUMENT, "5"},
    {"sddmm: alpha infinite", sddmm_infinite_alpha, SR_ERROR_INVALID_ARGUMENT, "finite"},
    {"fused: y of 6 for 5 columns", fused_length, SR_ERROR_INVALID_ARGUMENT, "y"},
    {"fused: alpha NaN", fused_nan_alpha, SR_ERROR_INVALID_ARGUMENT, "NaN"},
    {"distance: 5 and 4 columns", distance_columns, SR_ERROR_INVALID_ARGUMENT, "column"},
    {"distance: a NaN entry", distance_nan, SR_ERROR_INVALID_ARGUMENT, "NaN"},
    {"distance: D of 6x5 for 6x6", distance_output_shape, SR_ERROR_INVALID_ARGUMENT, "6"},
    {"minkowski: p = -1", minkowski_p, SR_ERROR_INVALID_ARGUMENT, "p"},
    {"knn: k = 7 of 6 rows", knn_k_past_index, SR_ERROR_INVALID_ARGUMENT, "7"},
    {"knn: k = 0", knn_k_zero, SR_ERROR_INVALID_ARGUMENT, "k"},
    {"knn_graph: k = INT64_MAX", knn_graph_k_huge, SR_ERROR_INVALID_ARGUMENT, "k"},
    {"radius: NaN", radius_nan, SR_ERROR_INVALID_ARGUMENT, "NaN"},
    {"closure: a 6x5 graph", closure_not_square, SR_ERROR_INVALID_ARGUMENT, "square"},
    {"ridge: 5 labels for 6 rows", ridge_labels, SR_ERROR_INVALID_ARGUMENT, "6"},
    {"ridge: lambda -1", ridge_negative_lambda, SR_ERROR_INVALID_ARGUMENT, "lambda"},
    {"logistic: a label of 0.5", logistic_bad_label, SR_ERROR_INVALID_ARGUMENT, "label"}, /* once wrote w before refusing */
};

/* A fingerprint of a matrix's contents, to see that a failed call left its inputs alone. */
static double fingerprint(sr_matrix M)
{
    sr_matrix_info info;
    const int64_t *rp;
    const int32_t *ci;
    const void *v;
    sr_matrix_get_info(M, &info);
    sr_matrix_csr_arrays(M, &rp, &ci, &v);
    double f = (double)info.nrows * 7 + (double)info.ncols * 13 + (double)info.nnz;
    for (int64_t k = 0; k < info.nnz; k++)
        f += (double)ci[k] * (double)(k + 1) +
             (info.type == SR_TYPE_FLOAT64 ? ((const double *)v)[k] : (double)((const int32_t *)v)[k]) * 0.5;
    return f;
}

static sr_matrix from(const test_csr *t) { return test_make_matrix(ctx, t); }

int main(void)
{
    test_seed("test_rejections");
    sr_context_options o = sr_context_options_default();
    o.backend = SR_BACKEND_CPU;
    CHECK_OK(sr_context_create(&ctx, &o));
    test_csr ta = test_random_csr(6, 5, 3, SR_TYPE_FLOAT64), tb = test_random_csr(5, 4, 2, SR_TYPE_FLOAT64);
    test_csr ts = test_random_csr(6, 4, 2, SR_TYPE_FLOAT64), ti = test_random_csr(6, 5, 3, SR_TYPE_INT32);
    A = from(&ta), B = from(&tb), S = from(&ts), I32 = from(&ti);
    const double nan_values[2] = {NAN, 1.0};
    CHECK_OK(sr_matrix_from_csr(ctx, &NaNs, 2, 5, SR_TYPE_FLOAT64, (int64_t[]){0, 1, 2}, (int32_t[]){0, 3}, nan_values,
                                SR_HOST));
    CHECK_OK(sr_matrix_from_csr(ctx, &Wide, 1, INT32_MAX, SR_TYPE_FLOAT64, (int64_t[]){0, 1}, (int32_t[]){7},
                                (double[]){2.0}, SR_HOST));
    const sr_matrix inputs[] = {A, B, S, I32, NaNs, Wide};
    double before[6];
    for (int i = 0; i < 6; i++)
        before[i] = fingerprint(inputs[i]);
    for (size_t r = 0; r < sizeof table / sizeof *table; r++) {
        for (int i = 0; i < 256; i++)
            buf[i] = (double)(i % 7) - 3.0, buf2[i] = POISON, idx[i] = -7;
        out = SENTINEL;
        const sr_status s = table[r].call();
        const char *msg = sr_last_error();
        CHECK(s == table[r].want, "%s: %s, want %s (%s)", table[r].name, sr_status_name(s),
              sr_status_name(table[r].want), msg);
        CHECK(msg[0] != '\0' && strstr(msg, table[r].message) != NULL, "%s: the message '%s' lacks '%s'",
              table[r].name, msg, table[r].message);
        CHECK(out == SENTINEL, "%s: the output handle was changed", table[r].name);
        bool clean = true;
        for (int i = 0; i < 256; i++)
            clean = clean && buf2[i] == POISON && idx[i] == -7;
        CHECK(clean, "%s: a dense output was written", table[r].name);
        if (out != SENTINEL)
            sr_matrix_free(out);
    }
    for (int i = 0; i < 6; i++)
        CHECK(fingerprint(inputs[i]) == before[i] || isnan(before[i]), "input %d changed", i);
    for (int i = 0; i < 6; i++)
        sr_matrix_free(inputs[i]);
    test_csr_free(&ta), test_csr_free(&tb), test_csr_free(&ts), test_csr_free(&ti);
    sr_context_destroy(ctx);
    return test_finish("test_rejections");
}
