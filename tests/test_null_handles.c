/* Every public entry point, called with a NULL context, a NULL matrix or a NULL output, fails
 * with SR_ERROR_INVALID_ARGUMENT and a message instead of crashing, and leaves its outputs alone
 * (issue 27's table test, its first column). */
#include "test_util.h"

#define EXPECT_INVALID(call)                                                                             \
    do {                                                                                                 \
        sr_status s_ = (call);                                                                           \
        CHECK(s_ == SR_ERROR_INVALID_ARGUMENT && sr_last_error()[0] != '\0', "%s gave %s (%s)", #call,   \
              sr_status_name(s_), sr_last_error());                                                      \
    } while (0)

int main(void)
{
    test_seed("test_null_handles");
    sr_context ctx = NULL;
    sr_context_options o = sr_context_options_default();
    o.backend = SR_BACKEND_CPU;
    CHECK_OK(sr_context_create(&ctx, &o));
    test_csr t = test_random_csr(6, 5, 2, SR_TYPE_FLOAT64);
    sr_matrix A = test_make_matrix(ctx, &t), B = test_make_matrix(ctx, &t), C = NULL;
    sr_matrix const sentinel = (sr_matrix)(uintptr_t)0x1; /* an output that must stay as it is */
    double d[64] = {0};
    int64_t i64[64] = {0};
    int32_t i32[64] = {0};
    sr_dense dv = sr_dense_view(d, 6, 5, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    sr_dense v6 = sr_vector_view(d, 6, SR_TYPE_FLOAT64, SR_HOST), v5 = sr_vector_view(d + 8, 5, SR_TYPE_FLOAT64, SR_HOST);
    sr_matrix_info info;
    bool eq;
    size_t a, b;
    sr_backend backend;

    /* contexts */
    EXPECT_INVALID(sr_context_create(NULL, &o));
    EXPECT_INVALID(sr_context_get_backend(NULL, &backend));
    EXPECT_INVALID(sr_context_get_options(NULL, &o));
    EXPECT_INVALID(sr_context_set_threads(NULL, 1));
    EXPECT_INVALID(sr_context_set_workspace_limit(NULL, 1));
    EXPECT_INVALID(sr_context_set_host_memory_limit(NULL, 1));
    EXPECT_INVALID(sr_context_set_deterministic(NULL, true));
    EXPECT_INVALID(sr_context_synchronize(NULL));
    EXPECT_INVALID(sr_context_device_memory(NULL, &a, &b));
    EXPECT_INVALID(sr_context_reset_peak_memory(NULL));
    CHECK(sr_context_destroy(NULL) == SR_SUCCESS, "sr_context_destroy(NULL) must be allowed");

    /* matrices */
    C = sentinel;
    EXPECT_INVALID(sr_matrix_from_csr(NULL, &C, 6, 5, SR_TYPE_FLOAT64, t.rowptr, t.colind, t.values, SR_HOST));
    EXPECT_INVALID(sr_matrix_from_csr(ctx, NULL, 6, 5, SR_TYPE_FLOAT64, t.rowptr, t.colind, t.values, SR_HOST));
    EXPECT_INVALID(sr_matrix_from_coo(NULL, &C, 6, 5, SR_TYPE_FLOAT64, 1, i64, i32, d, SR_DUPLICATES_ERROR, SR_HOST));
    EXPECT_INVALID(sr_matrix_from_dense(NULL, &C, &dv));
    EXPECT_INVALID(sr_matrix_from_dense(ctx, &C, NULL));
    CHECK(C == sentinel, "a failed constructor wrote its output");
    CHECK(sr_matrix_free(NULL) == SR_SUCCESS, "sr_matrix_free(NULL) must be allowed");
    EXPECT_INVALID(sr_matrix_get_info(NULL, &info));
    EXPECT_INVALID(sr_matrix_get_info(A, NULL));
    EXPECT_INVALID(sr_matrix_csr_arrays(NULL, NULL, NULL, NULL));
    EXPECT_INVALID(sr_matrix_export_csr(NULL, A, i64, i32, d, SR_HOST));
    EXPECT_INVALID(sr_matrix_export_csr(ctx, NULL, i64, i32, d, SR_HOST));
    EXPECT_INVALID(sr_matrix_export_coo(ctx, NULL, i64, i32, d, SR_HOST));
    EXPECT_INVALID(sr_matrix_export_dense(ctx, NULL, &dv));
    EXPECT_INVALID(sr_matrix_export_dense(ctx, A, NULL));
    EXPECT_INVALID(sr_matrix_dup(ctx, NULL, &C));
    EXPECT_INVALID(sr_matrix_dup(ctx, A, NULL));
    EXPECT_INVALID(sr_matrix_copy_to(NULL, A, SR_HOST, &C));
    EXPECT_INVALID(sr_matrix_transpose(ctx, NULL, &C));
    EXPECT_INVALID(sr_matrix_transpose(ctx, A, NULL));
    EXPECT_INVALID(sr_matrix_cast(ctx, NULL, SR_TYPE_FLOAT32, &C));
    EXPECT_INVALID(sr_matrix_equal(ctx, A, NULL, &eq));
    EXPECT_INVALID(sr_matrix_equal(ctx, A, B, NULL));
    CHECK(C == sentinel, "a failed call wrote its output");

    /* products and element-wise */
    EXPECT_INVALID(sr_spmv(NULL, &v6, NULL, SR_PLUS_TIMES, A, &v5, NULL));
    EXPECT_INVALID(sr_spmv(ctx, NULL, NULL, SR_PLUS_TIMES, A, &v5, NULL));
    EXPECT_INVALID(sr_spmm(ctx, &dv, NULL, SR_PLUS_TIMES, NULL, &dv, NULL));
    EXPECT_INVALID(sr_mxm(ctx, NULL, NULL, SR_PLUS_TIMES, A, B, NULL));
    EXPECT_INVALID(sr_mxm(ctx, &C, NULL, SR_PLUS_TIMES, NULL, B, NULL));
    EXPECT_INVALID(sr_ewise_add(ctx, &C, NULL, SR_PLUS_TIMES, A, NULL, NULL));
    EXPECT_INVALID(sr_ewise_mult(NULL, &C, NULL, SR_PLUS_TIMES, A, B, NULL));
    EXPECT_INVALID(sr_kronecker(ctx, NULL, NULL, SR_PLUS_TIMES, A, B, NULL));
    EXPECT_INVALID(sr_extract(ctx, &C, NULL, 0, 0, 1, 1));
    EXPECT_INVALID(sr_reduce_rows(ctx, NULL, SR_PLUS_TIMES, A));
    EXPECT_INVALID(sr_semiring_output_type(SR_PLUS_TIMES, SR_TYPE_FLOAT64, NULL));
    CHECK(C == sentinel, "a failed product wrote its output");

    /* bit blocks */
    sr_bits X = {0};
    EXPECT_INVALID(sr_bits_alloc(NULL, &X, 4, 4, SR_HOST));
    EXPECT_INVALID(sr_bits_alloc(ctx, NULL, 4, 4, SR_HOST));
    EXPECT_INVALID(sr_bits_from_matrix(ctx, NULL, A));
    EXPECT_INVALID(sr_matrix_from_bits(ctx, NULL, &X));
    EXPECT_INVALID(sr_bits_or(ctx, NULL, &X, NULL));
    EXPECT_INVALID(sr_bits_count(ctx, NULL, NULL));
    EXPECT_INVALID(sr_mxm_bits(ctx, NULL, NULL, A, &X, NULL, NULL));

    /* sampled products, the fused pattern, distances */
    EXPECT_INVALID(sr_sddmm(NULL, &C, SR_PLUS_TIMES, 1, A, &dv, &dv, 0, NULL));
    EXPECT_INVALID(sr_sddmm(ctx, &C, SR_PLUS_TIMES, 1, NULL, &dv, &dv, 0, NULL));
    EXPECT_INVALID(sr_sddmm(ctx, &C, SR_PLUS_TIMES, 1, A, NULL, &dv, 0, NULL));
    EXPECT_INVALID(sr_sddmm_values(ctx, NULL, SR_PLUS_TIMES, 1, A, &dv, &dv, 0, NULL));
    EXPECT_INVALID(sr_sddmm_spmm(ctx, NULL, 1, A, &dv, &dv, &dv, SR_NORMALIZE_NONE, NULL));
    EXPECT_INVALID(sr_sddmm_spmm(ctx, &dv, 1, A, &dv, &dv, NULL, SR_NORMALIZE_NONE, NULL));
    EXPECT_INVALID(sr_fused_pattern(NULL, SR_FORM_XTVXY, &v5, 1, A, NULL, &v5, 0, NULL));
    EXPECT_INVALID(sr_fused_pattern(ctx, SR_FORM_XTVXY, &v5, 1, NULL, NULL, &v5, 0, NULL));
    EXPECT_INVALID(sr_fused_pattern(ctx, SR_FORM_XTVXY, NULL, 1, A, NULL, &v5, 0, NULL));
    EXPECT_INVALID(sr_fused_pattern(ctx, SR_FORM_XTVXY, &v5, 1, A, NULL, NULL, 0, NULL));
    EXPECT_INVALID(sr_fused_pattern_dense(ctx, SR_FORM_XTVXY, &v5, 1, NULL, NULL, &v5, 0, NULL));
    EXPECT_INVALID(sr_metric_from_name(NULL, NULL));
    EXPECT_INVALID(sr_pairwise_distance(ctx, NULL, B, SR_METRIC_L2, 0, &dv));
    EXPECT_INVALID(sr_pairwise_distance(ctx, A, B, SR_METRIC_L2, 0, NULL));
    EXPECT_INVALID(sr_knn(ctx, NULL, A, 1, SR_METRIC_L2, 0, i64, &dv, NULL));
    EXPECT_INVALID(sr_knn(ctx, A, A, 1, SR_METRIC_L2, 0, NULL, &dv, NULL));
    EXPECT_INVALID(sr_knn_graph(ctx, NULL, 1, SR_METRIC_L2, 0, NULL, &C));
    EXPECT_INVALID(sr_knn_graph(ctx, A, 1, SR_METRIC_L2, 0, NULL, NULL));
    EXPECT_INVALID(sr_radius_neighbors(ctx, NULL, NULL, 1.0, SR_METRIC_L2, 0, NULL, &C));
    EXPECT_INVALID(sr_radius_neighbors(ctx, A, NULL, 1.0, SR_METRIC_L2, 0, NULL, NULL));

    /* algorithms and files */
    sr_grammar g = NULL;
    EXPECT_INVALID(sr_transitive_closure(ctx, NULL, SR_CLOSURE_AUTO, &C, NULL, NULL));
    EXPECT_INVALID(sr_transitive_closure(ctx, A, SR_CLOSURE_AUTO, NULL, NULL, NULL));
    EXPECT_INVALID(sr_reachability(ctx, NULL, 1, i64, &C, NULL, NULL));
    EXPECT_INVALID(sr_grammar_parse(NULL, &g));
    EXPECT_INVALID(sr_grammar_parse("S -> a", NULL));
    EXPECT_INVALID(sr_grammar_read(NULL, &g));
    EXPECT_INVALID(sr_cfpq(ctx, NULL, 0, NULL, NULL, NULL, &C, NULL, NULL));
    int64_t nv = 0;
    EXPECT_INVALID(sr_labeled_graph_read(ctx, NULL, SR_HOST, &nv, NULL, NULL, NULL));
    EXPECT_INVALID(sr_factorize(ctx, NULL, NULL, NULL, &dv, &dv, NULL, NULL));
    EXPECT_INVALID(sr_factorize(NULL, A, NULL, NULL, &dv, &dv, NULL, NULL));
    EXPECT_INVALID(sr_ridge(ctx, NULL, &v6, 1.0, NULL, &v5, NULL));
    EXPECT_INVALID(sr_ridge(ctx, A, NULL, 1.0, NULL, &v5, NULL));
    EXPECT_INVALID(sr_logistic(ctx, A, &v6, 1.0, NULL, NULL, NULL));
    EXPECT_INVALID(sr_matrix_read_mm(ctx, NULL, -1, &C, NULL));
    EXPECT_INVALID(sr_matrix_read_mm(NULL, "x.mtx", -1, &C, NULL));
    EXPECT_INVALID(sr_mm_read_header(NULL, NULL));
    EXPECT_INVALID(sr_matrix_write_mm(ctx, NULL, "x.mtx", NULL));
    EXPECT_INVALID(sr_matrix_write_mm(ctx, A, NULL, NULL));
    CHECK(C == sentinel, "a failed algorithm wrote its output");
    /* the vector calls and their scalar forms */
    sr_dense s1 = sr_vector_view(d + 20, 1, SR_TYPE_FLOAT64, SR_HOST), v6b = sr_vector_view(d + 30, 6, SR_TYPE_FLOAT64, SR_HOST);
    double dot = 0;
    EXPECT_INVALID(sr_vector_alloc(NULL, 3, SR_TYPE_FLOAT64, SR_HOST, &v5));
    EXPECT_INVALID(sr_vector_dot(NULL, &v6, &v6b, &dot));
    EXPECT_INVALID(sr_vector_dot(ctx, &v6, &v6b, NULL));
    EXPECT_INVALID(sr_vector_axpby(ctx, 1.0, NULL, 1.0, &v6b));
    EXPECT_INVALID(sr_vector_dot_s(NULL, &v6, &v6b, &s1));
    EXPECT_INVALID(sr_vector_dot_s(ctx, &v6, NULL, &s1));
    EXPECT_INVALID(sr_vector_dot_s(ctx, &v6, &v6b, NULL));
    EXPECT_INVALID(sr_vector_axpby_s(NULL, 1.0, &s1, &v6, 1.0, NULL, &v6b));
    EXPECT_INVALID(sr_vector_axpby_s(ctx, 1.0, &s1, NULL, 1.0, NULL, &v6b));
    EXPECT_INVALID(sr_vector_axpby_s(ctx, 1.0, &s1, &v6, 1.0, NULL, NULL));
    EXPECT_INVALID(sr_vector_divide(NULL, &v6, &v6, &v6b));
    EXPECT_INVALID(sr_vector_divide(ctx, NULL, &v6, &v6b));
    EXPECT_INVALID(sr_vector_divide(ctx, &v6, NULL, &v6b));
    EXPECT_INVALID(sr_vector_asum_s(NULL, &v6, &s1));
    EXPECT_INVALID(sr_vector_asum_s(ctx, NULL, &s1));
    EXPECT_INVALID(sr_vector_asum_s(ctx, &v6, NULL));
    EXPECT_INVALID(sr_vector_and_greater(NULL, &v6, &v6b, 0.0));
    EXPECT_INVALID(sr_vector_and_greater(ctx, NULL, &v6b, 0.0));
    EXPECT_INVALID(sr_vector_and_greater(ctx, &v6, NULL, 0.0));

    sr_matrix_free(A);
    sr_matrix_free(B);
    test_csr_free(&t);
    sr_context_destroy(ctx);
    return test_finish("test_null_handles");
}
