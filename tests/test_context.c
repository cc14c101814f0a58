/* Context creation, backend resolution, the environment override, errors and versions. */
#include "test_util.h"

int main(void)
{
    test_seed("test_context");
    sr_context ctx = NULL;
    sr_backend backend;

    CHECK_OK(sr_context_create(&ctx, NULL));
    CHECK_OK(sr_context_get_backend(ctx, &backend));
    CHECK(backend == SR_BACKEND_CPU || backend == SR_BACKEND_CUDA, "AUTO must resolve, got %d", (int)backend);
    sr_context_options o;
    CHECK_OK(sr_context_get_options(ctx, &o));
    CHECK(o.backend == backend && o.threads == 0 && o.workspace_limit == 0, "default options");
    CHECK_OK(sr_context_set_threads(ctx, 3));
    CHECK_OK(sr_context_set_workspace_limit(ctx, (size_t)1 << 20));
    CHECK_OK(sr_context_get_options(ctx, &o));
    CHECK(o.threads == 3 && o.workspace_limit == (size_t)1 << 20, "setters did not take");
    CHECK_FAILS(sr_context_set_threads(ctx, -1), SR_ERROR_INVALID_ARGUMENT, "negative");
    CHECK_OK(sr_context_synchronize(ctx));
    size_t current = 1, peak = 1;
    CHECK_OK(sr_context_device_memory(ctx, &current, &peak));
    CHECK(current == 0 && peak == 0, "a fresh context holds device memory");

    /* a matrix outlives its context's handle */
    int64_t rp[] = {0, 1};
    int32_t ci[] = {0};
    sr_matrix A = NULL;
    CHECK_OK(sr_matrix_from_csr(ctx, &A, 1, 1, SR_TYPE_BOOL, rp, ci, NULL, SR_HOST));
    CHECK_OK(sr_context_destroy(ctx));
    sr_matrix_info info;
    CHECK_OK(sr_matrix_get_info(A, &info));
    CHECK(info.nnz == 1, "matrix damaged by destroying its context");
    CHECK_OK(sr_matrix_free(A));
    CHECK_OK(sr_context_destroy(NULL));
    CHECK_OK(sr_matrix_free(NULL));

    /* explicit CPU; the environment overrides only AUTO */
    o = sr_context_options_default();
    o.backend = SR_BACKEND_CPU;
    CHECK_OK(sr_context_create(&ctx, &o));
    sr_context_get_backend(ctx, &backend);
    CHECK(backend == SR_BACKEND_CPU, "explicit CPU");
    sr_context_destroy(ctx);
    setenv("SPARSERING_BACKEND", "cpu", 1);
    CHECK_OK(sr_context_create(&ctx, NULL));
    sr_context_get_backend(ctx, &backend);
    CHECK(backend == SR_BACKEND_CPU, "SPARSERING_BACKEND=cpu ignored");
    sr_context_destroy(ctx);
    setenv("SPARSERING_BACKEND", "tpu", 1);
    ctx = NULL;
    CHECK_FAILS(sr_context_create(&ctx, NULL), SR_ERROR_INVALID_ARGUMENT, "SPARSERING_BACKEND is 'tpu'");
    CHECK(ctx == NULL, "failed create wrote the handle");
    unsetenv("SPARSERING_BACKEND");

    /* CUDA: either it works, or it fails with the reason */
    o.backend = SR_BACKEND_CUDA;
    sr_status s = sr_context_create(&ctx, &o);
    if (s == SR_SUCCESS) {
        sr_context_get_backend(ctx, &backend);
        CHECK(backend == SR_BACKEND_CUDA, "explicit CUDA");
        sr_context_destroy(ctx);
        o.device = 4096;
        CHECK_FAILS(sr_context_create(&ctx, &o), SR_ERROR_NO_DEVICE, "CUDA device 4096 was asked for");
    } else {
        CHECK(s == SR_ERROR_NO_DEVICE && strlen(sr_last_error()) > 10, "no-GPU failure: %s", sr_last_error());
        printf("no GPU here: %s\n", sr_last_error());
        /* device memory cannot be used from a context without a GPU */
        o.backend = SR_BACKEND_CPU;
        o.device = 0;
        CHECK_OK(sr_context_create(&ctx, &o));
        CHECK_FAILS(sr_matrix_from_csr(ctx, &A, 1, 1, SR_TYPE_BOOL, rp, ci, NULL, SR_DEVICE), SR_ERROR_NO_DEVICE, "");
        sr_context_destroy(ctx);
    }
    o = sr_context_options_default();
    o.threads = -2;
    CHECK_FAILS(sr_context_create(&ctx, &o), SR_ERROR_INVALID_ARGUMENT, "thread count -2 is negative");

    /* the deterministic option: off by default, set by the options, the setter and the environment */
    o = sr_context_options_default();
    CHECK_OK(sr_context_create(&ctx, &o));
    sr_context_options got;
    CHECK_OK(sr_context_get_options(ctx, &got));
    CHECK(!got.deterministic, "deterministic on by default");
    CHECK_OK(sr_context_set_deterministic(ctx, true));
    CHECK_OK(sr_context_get_options(ctx, &got));
    CHECK(got.deterministic, "sr_context_set_deterministic(true) did not take");
    sr_context_destroy(ctx);
    o.deterministic = true;
    CHECK_OK(sr_context_create(&ctx, &o));
    CHECK_OK(sr_context_get_options(ctx, &got));
    CHECK(got.deterministic, "options.deterministic did not take");
    sr_context_destroy(ctx);
    o.deterministic = false;
    setenv("SPARSERING_DETERMINISTIC", "1", 1);
    CHECK_OK(sr_context_create(&ctx, &o));
    CHECK_OK(sr_context_get_options(ctx, &got));
    CHECK(got.deterministic, "SPARSERING_DETERMINISTIC=1 ignored");
    sr_context_destroy(ctx);
    setenv("SPARSERING_DETERMINISTIC", "maybe", 1);
    ctx = NULL;
    CHECK_FAILS(sr_context_create(&ctx, &o), SR_ERROR_INVALID_ARGUMENT, "SPARSERING_DETERMINISTIC is 'maybe'");
    CHECK(ctx == NULL, "failed create wrote the handle");
    unsetenv("SPARSERING_DETERMINISTIC");

    /* names and sizes */
    CHECK(strcmp(sr_status_name(SR_ERROR_PARSE), "SR_ERROR_PARSE") == 0, "status name");
    CHECK(sr_type_size(SR_TYPE_FLOAT64) == 8 && sr_type_size(SR_TYPE_BOOL) == 1, "type sizes");
    CHECK(strstr(sr_version_string(), "0.1.0") != NULL, "version %s", sr_version_string());
    sr_dense d = sr_dense_view(NULL, 3, 5, SR_TYPE_FLOAT32, SR_COL_MAJOR, SR_HOST);
    CHECK(d.ld == 3, "column-major packed ld");
    return test_finish("test_context");
}
