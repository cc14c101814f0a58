/* CSR construction, validation messages, exports, COO, dense, transpose, cast, on the CPU backend. */
#include "test_util.h"

static sr_context ctx;

static void test_validation_messages(void)
{
    int64_t rp[] = {0, 2, 3, 5};
    int32_t ci[] = {0, 2, 1, 0, 3};
    double v[] = {1, 2, 3, 4, 5};
    sr_matrix sentinel = (sr_matrix)(uintptr_t)0xdeadbeef, A = sentinel;
    CHECK_OK(sr_matrix_from_csr(ctx, &A, 3, 4, SR_TYPE_FLOAT64, rp, ci, v, SR_HOST));
    CHECK(A != sentinel, "valid input made no matrix");
    sr_matrix_free(A);

    A = sentinel;
    int32_t unsorted[] = {2, 0, 1, 0, 3};
    CHECK_FAILS(sr_matrix_from_csr(ctx, &A, 3, 4, SR_TYPE_FLOAT64, rp, unsorted, v, SR_HOST), SR_ERROR_INVALID_MATRIX,
                "column indices of row 0 are not sorted: 0 follows 2 (entry 1)");
    int32_t repeated[] = {0, 2, 1, 3, 3};
    CHECK_FAILS(sr_matrix_from_csr(ctx, &A, 3, 4, SR_TYPE_FLOAT64, rp, repeated, v, SR_HOST), SR_ERROR_INVALID_MATRIX,
                "column 3 appears twice in row 2 (entries 3 and 4)");
    int32_t out_of_range[] = {0, 2, 4, 0, 3};
    CHECK_FAILS(sr_matrix_from_csr(ctx, &A, 3, 4, SR_TYPE_FLOAT64, rp, out_of_range, v, SR_HOST),
                SR_ERROR_INVALID_MATRIX, "column index 4 of row 1 (entry 2) is out of range [0, 4)");
    int32_t negative[] = {0, 2, 1, -1, 3};
    CHECK_FAILS(sr_matrix_from_csr(ctx, &A, 3, 4, SR_TYPE_FLOAT64, rp, negative, v, SR_HOST), SR_ERROR_INVALID_MATRIX,
                "column index -1 of row 2");
    int64_t decreasing[] = {0, 3, 2, 5};
    CHECK_FAILS(sr_matrix_from_csr(ctx, &A, 3, 4, SR_TYPE_FLOAT64, decreasing, ci, v, SR_HOST),
                SR_ERROR_INVALID_MATRIX, "row pointers decrease at row 1: rowptr[1] = 3 > rowptr[2] = 2");
    int64_t nonzero_start[] = {1, 2, 3, 5};
    CHECK_FAILS(sr_matrix_from_csr(ctx, &A, 3, 4, SR_TYPE_FLOAT64, nonzero_start, ci, v, SR_HOST),
                SR_ERROR_INVALID_MATRIX, "row pointers must start at 0, but rowptr[0] = 1");
    CHECK_FAILS(sr_matrix_from_csr(ctx, &A, 3, (int64_t)1 << 31, SR_TYPE_FLOAT64, rp, ci, v, SR_HOST),
                SR_ERROR_OVERFLOW, "exceed the 32-bit column index limit");
    CHECK_FAILS(sr_matrix_from_csr(ctx, &A, -1, 4, SR_TYPE_FLOAT64, rp, ci, v, SR_HOST), SR_ERROR_INVALID_ARGUMENT,
                "negative shape");
    CHECK_FAILS(sr_matrix_from_csr(ctx, &A, 3, 4, SR_TYPE_FLOAT64, rp, ci, NULL, SR_HOST), SR_ERROR_INVALID_ARGUMENT,
                "values is NULL for a float64 matrix");
    CHECK_FAILS(sr_matrix_from_csr(ctx, &A, 3, 4, (sr_type)9, rp, ci, v, SR_HOST), SR_ERROR_INVALID_ARGUMENT,
                "unknown type 9");
    CHECK_FAILS(sr_matrix_from_csr(NULL, &A, 3, 4, SR_TYPE_FLOAT64, rp, ci, v, SR_HOST), SR_ERROR_INVALID_ARGUMENT,
                "context");
    CHECK(A == sentinel, "a failed call changed the output handle");

    /* bool needs no values; the same arrays are a valid pattern */
    CHECK_OK(sr_matrix_from_csr(ctx, &A, 3, 4, SR_TYPE_BOOL, rp, ci, NULL, SR_HOST));
    sr_matrix_info info;
    CHECK_OK(sr_matrix_get_info(A, &info));
    CHECK(info.nnz == 5 && info.type == SR_TYPE_BOOL && info.location == SR_HOST && info.device == -1, "bad info");
    const void *values = (const void *)1;
    CHECK_OK(sr_matrix_csr_arrays(A, NULL, NULL, &values));
    CHECK(values == NULL, "a bool matrix stores values");
    sr_matrix_free(A);
}

static void test_coo(void)
{
    /* triplets out of order with one duplicate pair */
    int64_t rows[] = {2, 0, 1, 0, 2, 2};
    int32_t cols[] = {3, 1, 0, 0, 3, 1};
    float vals[] = {1.5f, 2.0f, -3.0f, 4.0f, 0.25f, 7.0f};
    sr_matrix A = NULL;
    CHECK_FAILS(sr_matrix_from_coo(ctx, &A, 3, 4, SR_TYPE_FLOAT32, 6, rows, cols, vals, SR_DUPLICATES_ERROR, SR_HOST),
                SR_ERROR_INVALID_MATRIX, "duplicate entry (2, 3): triplets 0 and 4");
    CHECK(A == NULL, "failed call made a matrix");
    CHECK_OK(sr_matrix_from_coo(ctx, &A, 3, 4, SR_TYPE_FLOAT32, 6, rows, cols, vals, SR_DUPLICATES_SUM, SR_HOST));
    int64_t rp[4];
    int32_t ci[5];
    float v[5];
    CHECK_OK(sr_matrix_export_csr(ctx, A, rp, ci, v, SR_HOST));
    int64_t want_rp[] = {0, 2, 3, 5};
    int32_t want_ci[] = {0, 1, 0, 1, 3};
    float want_v[] = {4.0f, 2.0f, -3.0f, 7.0f, 1.75f};
    CHECK(memcmp(rp, want_rp, sizeof rp) == 0, "rowptr after summing duplicates");
    CHECK(memcmp(ci, want_ci, sizeof ci) == 0, "colind after summing duplicates");
    CHECK(memcmp(v, want_v, sizeof v) == 0, "values after summing duplicates");
    sr_matrix_free(A);
    int64_t bad_rows[] = {0, 5};
    int32_t bad_cols[] = {0, 0};
    CHECK_FAILS(sr_matrix_from_coo(ctx, &A, 3, 4, SR_TYPE_BOOL, 2, bad_rows, bad_cols, NULL, SR_DUPLICATES_ERROR,
                                   SR_HOST),
                SR_ERROR_INVALID_MATRIX, "row index 5 of triplet 1 is out of range [0, 3)");
}

/* Every conversion of a random matrix, against the reference element lookup. */
static void test_conversions(const test_csr *m)
{
    sr_matrix A = test_make_matrix(ctx, m);
    int64_t nnz = m->nnz;

    /* COO export, then shuffled back in: the same matrix */
    int64_t *rows = malloc((size_t)(nnz + 1) * sizeof *rows);
    int32_t *cols = malloc((size_t)(nnz + 1) * sizeof *cols);
    size_t es = sr_type_size(m->type);
    char *vals = malloc((size_t)(nnz + 1) * es);
    for (int64_t k = 0; k < nnz; k++)
        rows[k] = -7; /* poison */
    CHECK_OK(sr_matrix_export_coo(ctx, A, rows, cols, m->type == SR_TYPE_BOOL ? NULL : vals, SR_HOST));
    bool rows_ok = true;
    for (int64_t i = 0; i < m->nrows; i++)
        for (int64_t k = m->rowptr[i]; k < m->rowptr[i + 1]; k++)
            rows_ok &= rows[k] == i && cols[k] == m->colind[k];
    CHECK(rows_ok, "COO export differs from the input");
    for (int64_t k = nnz - 1; k > 0; k--) { /* shuffle */
        int64_t j = test_below(k + 1);
        int64_t tr = rows[k]; rows[k] = rows[j]; rows[j] = tr;
        int32_t tc = cols[k]; cols[k] = cols[j]; cols[j] = tc;
        char tmp[8];
        memcpy(tmp, vals + k * es, es); memcpy(vals + k * es, vals + j * es, es); memcpy(vals + j * es, tmp, es);
    }
    sr_matrix B = NULL;
    CHECK_OK(sr_matrix_from_coo(ctx, &B, m->nrows, m->ncols, m->type, nnz, rows, cols, vals, SR_DUPLICATES_ERROR,
                                SR_HOST));
    bool same = false;
    if (B)
        CHECK_OK(sr_matrix_equal(ctx, A, B, &same));
    CHECK(same, "COO round trip changed the matrix (%lld x %lld, %s)", (long long)m->nrows, (long long)m->ncols,
          sr_type_name(m->type));
    sr_matrix_free(B);

    /* dense, both layouts, with padding that must stay untouched */
    for (int layout = 0; layout < 2; layout++) {
        sr_dense d = sr_dense_view(NULL, m->nrows, m->ncols, m->type, (sr_layout)layout, SR_HOST);
        d.ld += 3;
        int64_t outer = layout == SR_ROW_MAJOR ? m->nrows : m->ncols;
        size_t bytes = (size_t)(outer * d.ld + 1) * es;
        d.data = malloc(bytes);
        memset(d.data, 0x7b, bytes);
        CHECK_OK(sr_matrix_export_dense(ctx, A, &d));
        bool ok = true;
        for (int64_t i = 0; i < m->nrows; i++)
            for (int64_t j = 0; j < m->ncols; j++)
                ok &= test_dense_at(&d, i, j) == test_csr_at(m, i, j);
        CHECK(ok, "dense export differs from the reference (layout %d)", layout);
        int64_t inner = layout == SR_ROW_MAJOR ? m->ncols : m->nrows;
        bool pad_ok = true;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t p = inner; p < d.ld; p++)
                pad_ok &= ((unsigned char *)d.data)[(size_t)(o * d.ld + p) * es] == 0x7b;
        CHECK(pad_ok, "dense export wrote into the padding");
        sr_matrix C = NULL;
        CHECK_OK(sr_matrix_from_dense(ctx, &C, &d));
        same = false;
        if (C)
            CHECK_OK(sr_matrix_equal(ctx, A, C, &same));
        CHECK(same, "dense round trip changed the matrix (layout %d)", layout);
        sr_matrix_free(C);
        free(d.data);
    }

    /* transpose: element (i, j) of A is (j, i) of A^T, and rows of A^T are sorted */
    sr_matrix AT = NULL, ATT = NULL;
    CHECK_OK(sr_matrix_transpose(ctx, A, &AT));
    if (AT) {
        sr_matrix_info info;
        sr_matrix_get_info(AT, &info);
        CHECK(info.nrows == m->ncols && info.ncols == m->nrows && info.nnz == nnz, "transpose shape");
        int64_t *trp = malloc((size_t)(m->ncols + 1) * sizeof *trp);
        int32_t *tci = malloc((size_t)(nnz + 1) * sizeof *tci);
        char *tv = malloc((size_t)(nnz + 1) * es);
        CHECK_OK(sr_matrix_export_csr(ctx, AT, trp, tci, tv, SR_HOST));
        test_csr t = {m->ncols, m->nrows, nnz, m->type, trp, tci, m->type == SR_TYPE_BOOL ? NULL : tv};
        bool ok = true;
        for (int64_t i = 0; i < m->nrows && ok; i++)
            for (int64_t j = 0; j < m->ncols; j++)
                ok &= test_csr_at(m, i, j) == test_csr_at(&t, j, i);
        CHECK(ok, "transpose differs from the reference");
        free(trp);
        free(tci);
        free(tv);
        CHECK_OK(sr_matrix_transpose(ctx, AT, &ATT));
        same = false;
        if (ATT)
            CHECK_OK(sr_matrix_equal(ctx, A, ATT, &same));
        CHECK(same, "transpose twice is not the identity");
    }
    sr_matrix_free(AT);
    sr_matrix_free(ATT);

    /* cast to every type and back where exact */
    for (int t = 0; t < 4; t++) {
        sr_matrix C = NULL, D = NULL;
        CHECK_OK(sr_matrix_cast(ctx, A, test_all_types[t], &C));
        if (!C)
            continue;
        if (m->type == SR_TYPE_BOOL || test_all_types[t] == SR_TYPE_FLOAT64 ||
            (m->type == test_all_types[t])) { /* lossless */
            CHECK_OK(sr_matrix_cast(ctx, C, m->type, &D));
            same = false;
            if (D)
                CHECK_OK(sr_matrix_equal(ctx, A, D, &same));
            CHECK(same, "cast %s -> %s -> back changed the matrix", sr_type_name(m->type),
                  sr_type_name(test_all_types[t]));
        }
        sr_matrix_free(C);
        sr_matrix_free(D);
    }
    free(rows);
    free(cols);
    free(vals);
    sr_matrix_free(A);
}

static void test_cast_errors(void)
{
    int64_t rp[] = {0, 2};
    int32_t ci[] = {0, 1};
    double v[] = {1.0, NAN};
    sr_matrix A = test_make_matrix(ctx, &(test_csr){1, 2, 2, SR_TYPE_FLOAT64, rp, ci, v});
    sr_matrix B = NULL;
    CHECK_FAILS(sr_matrix_cast(ctx, A, SR_TYPE_INT32, &B), SR_ERROR_INVALID_ARGUMENT, "cannot cast entry 1");
    CHECK(B == NULL, "failed cast made a matrix");
    bool same = true;
    CHECK_OK(sr_matrix_equal(ctx, A, A, &same));
    CHECK(same, "NaN must equal NaN in sr_matrix_equal");
    sr_matrix_free(A);
}

static void test_large_transpose(void)
{
    /* enough entries for the multi-block transpose path */
    test_csr m = test_random_csr(20000, 5000, 20, SR_TYPE_FLOAT32);
    sr_matrix A = test_make_matrix(ctx, &m), AT = NULL, ATT = NULL;
    CHECK_OK(sr_matrix_transpose(ctx, A, &AT));
    CHECK_OK(sr_matrix_transpose(ctx, AT, &ATT));
    bool same = false;
    if (ATT)
        CHECK_OK(sr_matrix_equal(ctx, A, ATT, &same));
    CHECK(same, "large transpose twice is not the identity (nnz %lld)", (long long)m.nnz);
    /* column counts of A equal row lengths of A^T */
    int64_t *counts = calloc((size_t)m.ncols, sizeof *counts), *trp = malloc((size_t)(m.ncols + 1) * sizeof *trp);
    for (int64_t k = 0; k < m.nnz; k++)
        counts[m.colind[k]]++;
    const int64_t *rp = NULL;
    if (AT)
        sr_matrix_csr_arrays(AT, &rp, NULL, NULL);
    bool ok = rp != NULL;
    for (int64_t c = 0; ok && c < m.ncols; c++)
        ok = rp[c + 1] - rp[c] == counts[c];
    CHECK(ok, "row lengths of A^T differ from column counts of A");
    /* the same with a workspace too small for the per-thread column table: threads split the
     * columns instead (with one thread this is the plain path again) */
    sr_context_set_workspace_limit(ctx, 4096);
    sr_matrix AT2 = NULL;
    CHECK_OK(sr_matrix_transpose(ctx, A, &AT2));
    same = false;
    if (AT2)
        CHECK_OK(sr_matrix_equal(ctx, AT, AT2, &same));
    CHECK(same, "transpose by column ranges differs from transpose by row blocks");
    sr_context_set_workspace_limit(ctx, 0);
    sr_matrix_free(AT2);
    free(counts);
    free(trp);
    sr_matrix_free(A);
    sr_matrix_free(AT);
    sr_matrix_free(ATT);
    test_csr_free(&m);
}

/* Host copies of a few MiB and more are split over the context's threads (sr_host_copy, whole
 * pages a thread): a matrix built from one long row keeps every byte, for lengths that split
 * evenly and not, on one thread and on four. */
static void test_large_host_copies(void)
{
    const int64_t sizes[] = {(1 << 20) + 1, 3 << 20, (3 << 20) + 1021};
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++)
        for (int threads = 1; threads <= 4; threads += 3) {
            const int64_t nnz = sizes[z];
            int64_t rowptr[2] = {0, nnz};
            int32_t *colind = malloc((size_t)nnz * sizeof *colind);
            double *values = malloc((size_t)nnz * sizeof *values);
            for (int64_t k = 0; k < nnz; k++) {
                colind[k] = (int32_t)k;
                values[k] = test_uniform() - 0.5;
            }
            sr_context_options o = sr_context_options_default();
            o.backend = SR_BACKEND_CPU;
            o.threads = threads;
            sr_context c = NULL;
            sr_matrix A = NULL;
            CHECK_OK(sr_context_create(&c, &o));
            if (c)
                CHECK_OK(sr_matrix_from_csr(c, &A, 1, nnz, SR_TYPE_FLOAT64, rowptr, colind, values, SR_HOST));
            if (A) {
                const int64_t *rp;
                const int32_t *ci;
                const void *v;
                sr_matrix_csr_arrays(A, &rp, &ci, &v);
                CHECK(rp[1] == nnz && memcmp(ci, colind, (size_t)nnz * sizeof *colind) == 0 &&
                          memcmp(v, values, (size_t)nnz * sizeof *values) == 0,
                      "%lld entries on %d threads: the matrix's arrays differ from the caller's", (long long)nnz,
                      threads);
            }
            sr_matrix_free(A);
            sr_context_destroy(c);
            free(colind);
            free(values);
        }
}

/* What the fuzzers found (fuzz/fuzz_csr.c), kept: no triplets at all, and int32 duplicates whose
 * sum passes the type (an error naming the row, not a wrapped value). */
static void test_fuzz_regressions(void)
{
    sr_matrix A = NULL;
    int64_t r[3] = {1, 1, 0};
    int32_t c[3] = {2, 2, 0};
    int32_t v[3] = {2000000000, 2000000000, 5};
    CHECK_OK(sr_matrix_from_coo(ctx, &A, 4, 3, SR_TYPE_FLOAT64, 0, r, c, NULL, SR_DUPLICATES_SUM, SR_HOST));
    sr_matrix_info info;
    CHECK_OK(sr_matrix_get_info(A, &info));
    CHECK(info.nnz == 0 && info.nrows == 4, "no triplets gave %lld entries", (long long)info.nnz);
    sr_matrix_free(A);
    A = NULL;
    CHECK_FAILS(sr_matrix_from_coo(ctx, &A, 4, 3, SR_TYPE_INT32, 3, r, c, v, SR_DUPLICATES_SUM, SR_HOST),
                SR_ERROR_OVERFLOW, "row 1 pass the int32 range");
    CHECK(A == NULL, "a failed constructor wrote its output");
    v[1] = -2000000000;
    CHECK_OK(sr_matrix_from_coo(ctx, &A, 4, 3, SR_TYPE_INT32, 3, r, c, v, SR_DUPLICATES_SUM, SR_HOST));
    sr_matrix_free(A);
}

int main(void)
{
    test_seed("test_matrix");
    sr_context_options o = sr_context_options_default();
    o.backend = SR_BACKEND_CPU;
    if (sr_context_create(&ctx, &o) != SR_SUCCESS) {
        fprintf(stderr, "context: %s\n", sr_last_error());
        return 1;
    }
    test_validation_messages();
    test_coo();
    test_cast_errors();
    test_fuzz_regressions();
    test_large_host_copies();
    for (size_t s = 0; s < sizeof test_shapes / sizeof test_shapes[0]; s++)
        for (int t = 0; t < 4; t++) {
            test_csr m = test_random_csr(test_shapes[s].nrows, test_shapes[s].ncols, test_shapes[s].degree,
                                         test_all_types[t]);
            test_conversions(&m);
            test_csr_free(&m);
        }
    test_large_transpose();
    sr_context_destroy(ctx);
    return test_finish("test_matrix");
}
