/* Boolean (value-free) algebra: mxm with mask, complement and accumulate; element-wise add and
 * multiply; Kronecker; transpose; extraction; row reduction; equality; COO in and out; the
 * bit-packed blocks and their product. Each against a dense reference, on the CPU backend and
 * (when present) CUDA. */
#include "test_util.h"

static sr_context ctx;
static sr_location where;

/* ---------------------------------------------------------------- references */

typedef struct {
    int64_t nrows, ncols;
    uint8_t *at; /* row-major, 0/1 */
} dense_bool;

static dense_bool dense_of(const test_csr *m)
{
    dense_bool d = {m->nrows, m->ncols, calloc((size_t)(m->nrows * m->ncols + 1), 1)};
    for (int64_t i = 0; i < m->nrows; i++)
        for (int64_t k = m->rowptr[i]; k < m->rowptr[i + 1]; k++)
            d.at[i * m->ncols + m->colind[k]] = 1;
    return d;
}

static dense_bool dense_new(int64_t nrows, int64_t ncols)
{
    dense_bool d = {nrows, ncols, calloc((size_t)(nrows * ncols + 1), 1)};
    return d;
}

/* The matrix's pattern equals d (shape, entries, sorted distinct columns). */
static void check_pattern(sr_matrix C, const dense_bool *d, const char *what)
{
    sr_matrix H = NULL;
    CHECK_OK(sr_matrix_copy_to(ctx, C, SR_HOST, &H));
    sr_matrix_info info;
    CHECK_OK(sr_matrix_get_info(H, &info));
    CHECK(info.nrows == d->nrows && info.ncols == d->ncols, "%s: shape %lld x %lld, expected %lld x %lld", what,
          (long long)info.nrows, (long long)info.ncols, (long long)d->nrows, (long long)d->ncols);
    const int64_t *rp;
    const int32_t *ci;
    CHECK_OK(sr_matrix_csr_arrays(H, &rp, &ci, NULL));
    int64_t expected = 0, bad = 0;
    for (int64_t i = 0; i < d->nrows && info.nrows == d->nrows; i++) {
        for (int64_t j = 0; j < d->ncols; j++)
            expected += d->at[i * d->ncols + j];
        for (int64_t k = rp[i]; k < rp[i + 1]; k++)
            if (ci[k] < 0 || ci[k] >= d->ncols || !d->at[i * d->ncols + ci[k]] || (k > rp[i] && ci[k] <= ci[k - 1]))
                bad++;
    }
    CHECK(bad == 0 && info.nnz == expected, "%s: %lld wrong entries, %lld entries for %lld expected", what,
          (long long)bad, (long long)info.nnz, (long long)expected);
    sr_matrix_free(H);
}

static sr_matrix on_backend(const test_csr *m) { return test_make_matrix_at(ctx, m, where); }

static void free_all(sr_matrix *m, int n)
{
    for (int i = 0; i < n; i++)
        sr_matrix_free(m[i]);
}

/* ---------------------------------------------------------------- mxm */

static void check_mxm(int64_t m, int64_t k, int64_t n, double da, double db)
{
    test_csr a = test_random_csr(m, k, da, SR_TYPE_BOOL), b = test_random_csr(k, n, db, SR_TYPE_BOOL);
    test_csr mk = test_random_csr(m, n, 0.3 * (double)n + 1, SR_TYPE_BOOL), old = test_random_csr(m, n, 2, SR_TYPE_BOOL);
    dense_bool A = dense_of(&a), B = dense_of(&b), M = dense_of(&mk), O = dense_of(&old), P = dense_new(m, n);
    for (int64_t i = 0; i < m; i++)
        for (int64_t x = 0; x < k; x++)
            if (A.at[i * k + x])
                for (int64_t j = 0; j < n; j++)
                    P.at[i * n + j] |= B.at[x * n + j];
    sr_matrix mats[4] = {on_backend(&a), on_backend(&b), on_backend(&mk), on_backend(&old)};
    char what[128];
    for (int variant = 0; variant < 6; variant++) { /* plain, mask, complement, accumulate, acc+mask, any_pair */
        const bool masked = variant == 1 || variant == 2 || variant == 4, complement = variant == 2;
        const bool acc = variant == 3 || variant == 4;
        dense_bool E = dense_new(m, n);
        for (int64_t t = 0; t < m * n; t++)
            E.at[t] = (P.at[t] && (!masked || (M.at[t] != complement))) || (acc && O.at[t]);
        sr_matrix C = NULL;
        if (acc)
            CHECK_OK(sr_matrix_dup(ctx, mats[3], &C));
        sr_descriptor d = {.accumulate = acc, .mask_complement = complement};
        sr_semiring s = variant == 5 ? SR_ANY_PAIR : SR_OR_AND;
        CHECK_OK(sr_mxm(ctx, &C, masked ? mats[2] : NULL, s, mats[0], mats[1], &d));
        snprintf(what, sizeof what, "mxm %lldx%lldx%lld variant %d on %s", (long long)m, (long long)k, (long long)n,
                 variant, test_backend_name(ctx));
        check_pattern(C, &E, what);
        sr_matrix_free(C);
        free(E.at);
    }
    free_all(mats, 4);
    free(A.at), free(B.at), free(M.at), free(O.at), free(P.at);
    test_csr_free(&a), test_csr_free(&b), test_csr_free(&mk), test_csr_free(&old);
}

/* ---------------------------------------------------------------- element-wise, Kronecker, structure */

static void check_ewise(int64_t m, int64_t n, double degree)
{
    test_csr a = test_random_csr(m, n, degree, SR_TYPE_BOOL), b = test_random_csr(m, n, degree, SR_TYPE_BOOL);
    test_csr mk = test_random_csr(m, n, degree, SR_TYPE_BOOL);
    dense_bool A = dense_of(&a), B = dense_of(&b), M = dense_of(&mk);
    sr_matrix mats[3] = {on_backend(&a), on_backend(&b), on_backend(&mk)};
    for (int op = 0; op < 2; op++)
        for (int variant = 0; variant < 4; variant++) { /* plain, mask, complement, accumulate into A */
            dense_bool E = dense_new(m, n);
            for (int64_t t = 0; t < m * n; t++) {
                bool v = op == 0 ? (A.at[t] || B.at[t]) : (A.at[t] && B.at[t]);
                if (variant == 1 || variant == 2)
                    v = v && (M.at[t] != (variant == 2));
                E.at[t] = v || (variant == 3 && A.at[t]);
            }
            sr_matrix C = NULL;
            if (variant == 3)
                CHECK_OK(sr_matrix_dup(ctx, mats[0], &C));
            sr_descriptor d = {.accumulate = variant == 3, .mask_complement = variant == 2};
            sr_matrix mask = variant == 1 || variant == 2 ? mats[2] : NULL;
            CHECK_OK(op == 0 ? sr_ewise_add(ctx, &C, mask, SR_OR_AND, mats[0], mats[1], &d)
                             : sr_ewise_mult(ctx, &C, mask, SR_OR_AND, mats[0], mats[1], &d));
            char what[96];
            snprintf(what, sizeof what, "%s %lldx%lld variant %d", op == 0 ? "ewise_add" : "ewise_mult", (long long)m,
                     (long long)n, variant);
            check_pattern(C, &E, what);
            sr_matrix_free(C);
            free(E.at);
        }
    /* transpose and extraction */
    sr_matrix T = NULL;
    CHECK_OK(sr_matrix_transpose(ctx, mats[0], &T));
    dense_bool E = dense_new(n, m);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++)
            E.at[j * m + i] = A.at[i * n + j];
    check_pattern(T, &E, "transpose");
    free(E.at);
    sr_matrix_free(T);
    for (int trial = 0; trial < 4; trial++) {
        int64_t r0 = test_below(m + 1), c0 = test_below(n + 1), nr = test_below(m - r0 + 1), nc = test_below(n - c0 + 1);
        sr_matrix X = NULL;
        CHECK_OK(sr_extract(ctx, &X, mats[0], r0, c0, nr, nc));
        dense_bool F = dense_new(nr, nc);
        for (int64_t i = 0; i < nr; i++)
            for (int64_t j = 0; j < nc; j++)
                F.at[i * nc + j] = A.at[(r0 + i) * n + c0 + j];
        check_pattern(X, &F, "extract");
        free(F.at);
        sr_matrix_free(X);
    }
    /* reduce to a column: the rows with any entry */
    sr_matrix v = NULL;
    CHECK_OK(sr_reduce_rows(ctx, &v, SR_OR_AND, mats[0]));
    dense_bool R = dense_new(m, 1);
    for (int64_t i = 0; i < m; i++)
        R.at[i] = a.rowptr[i + 1] > a.rowptr[i];
    check_pattern(v, &R, "reduce_rows");
    free(R.at);
    sr_matrix_free(v);
    /* equality: a copy is equal, the union with a new entry is not */
    sr_matrix D = NULL;
    bool same = false;
    CHECK_OK(sr_matrix_dup(ctx, mats[0], &D));
    CHECK_OK(sr_matrix_equal(ctx, mats[0], D, &same));
    CHECK(same, "a copy compares unequal");
    sr_matrix_free(D);
    if (a.nnz != m * n && m * n > 0) {
        CHECK_OK(sr_ewise_add(ctx, &D, NULL, SR_OR_AND, mats[0], mats[2], NULL));
        CHECK_OK(sr_matrix_equal(ctx, mats[0], D, &same));
        sr_matrix_info info;
        sr_matrix_get_info(D, &info);
        CHECK(same == (info.nnz == a.nnz), "equality after a union");
        sr_matrix_free(D);
    }
    free_all(mats, 3);
    free(A.at), free(B.at), free(M.at);
    test_csr_free(&a), test_csr_free(&b), test_csr_free(&mk);
}

/* Numeric unions and intersections (plus_times on float64) with and without a mask, against a
 * dense reference: rows long enough to cross many of the device's merge tiles, and many short
 * and empty ones sharing a tile. */
static void check_ewise_numeric(int64_t m, int64_t n, double degree)
{
    test_csr x = test_random_csr(m, n, degree, SR_TYPE_FLOAT64), z = test_random_csr(m, n, degree, SR_TYPE_FLOAT64);
    test_csr mk = test_random_csr(m, n, degree, SR_TYPE_BOOL);
    dense_bool M = dense_of(&mk);
    double *dx = calloc((size_t)(m * n + 1), sizeof(double)), *dz = calloc((size_t)(m * n + 1), sizeof(double));
    double *got = calloc((size_t)(m * n + 1), sizeof(double));
    for (int64_t i = 0; i < m; i++) {
        for (int64_t k = x.rowptr[i]; k < x.rowptr[i + 1]; k++)
            dx[i * n + x.colind[k]] = ((double *)x.values)[k];
        for (int64_t k = z.rowptr[i]; k < z.rowptr[i + 1]; k++)
            dz[i * n + z.colind[k]] = ((double *)z.values)[k];
    }
    sr_matrix X = on_backend(&x), Z = on_backend(&z), K = on_backend(&mk);
    for (int op = 0; op < 2; op++)
        for (int variant = 0; variant < 3; variant++) { /* plain, mask, complemented mask */
            sr_descriptor d = {.mask_complement = variant == 2};
            sr_matrix C = NULL, H = NULL;
            CHECK_OK(op == 0 ? sr_ewise_add(ctx, &C, variant ? K : NULL, SR_PLUS_TIMES, X, Z, &d)
                             : sr_ewise_mult(ctx, &C, variant ? K : NULL, SR_PLUS_TIMES, X, Z, &d));
            CHECK_OK(sr_matrix_copy_to(ctx, C, SR_HOST, &H));
            sr_matrix_info info;
            sr_matrix_get_info(H, &info);
            sr_dense view = sr_dense_view(got, m, n, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
            CHECK_OK(sr_matrix_export_dense(ctx, H, &view));
            int64_t bad = 0, expected_nnz = 0;
            for (int64_t t = 0; t < m * n; t++) {
                const bool in_x = dx[t] != 0, in_z = dz[t] != 0, allowed = variant == 0 || (M.at[t] != (variant == 2));
                const bool present = allowed && (op == 0 ? in_x || in_z : in_x && in_z);
                const double want = !present ? 0 : op == 0 ? dx[t] + dz[t] : dx[t] * dz[t];
                expected_nnz += present;
                bad += fabs(got[t] - want) > 1e-12 * (1 + fabs(want));
            }
            CHECK(bad == 0 && info.nnz == expected_nnz, "%s %lldx%lld variant %d: %lld wrong values, %lld entries of %lld",
                  op == 0 ? "ewise_add" : "ewise_mult", (long long)m, (long long)n, variant, (long long)bad,
                  (long long)info.nnz, (long long)expected_nnz);
            sr_matrix_free(C), sr_matrix_free(H);
        }
    sr_matrix all[3] = {X, Z, K};
    free_all(all, 3);
    free(dx), free(dz), free(got), free(M.at);
    test_csr_free(&x), test_csr_free(&z), test_csr_free(&mk);
}

static void check_kronecker(void)
{
    test_csr a = test_random_csr(7, 5, 2, SR_TYPE_BOOL), b = test_random_csr(4, 6, 2, SR_TYPE_BOOL);
    test_csr mk = test_random_csr(28, 30, 8, SR_TYPE_BOOL);
    dense_bool A = dense_of(&a), B = dense_of(&b), M = dense_of(&mk);
    sr_matrix mats[3] = {on_backend(&a), on_backend(&b), on_backend(&mk)};
    for (int masked = 0; masked < 2; masked++) {
        dense_bool E = dense_new(28, 30);
        for (int64_t i = 0; i < 7; i++)
            for (int64_t j = 0; j < 5; j++)
                for (int64_t k = 0; k < 4; k++)
                    for (int64_t l = 0; l < 6; l++)
                        E.at[(i * 4 + k) * 30 + j * 6 + l] =
                            A.at[i * 5 + j] && B.at[k * 6 + l] && (!masked || M.at[(i * 4 + k) * 30 + j * 6 + l]);
        sr_matrix K = NULL;
        CHECK_OK(sr_kronecker(ctx, &K, masked ? mats[2] : NULL, SR_OR_AND, mats[0], mats[1], NULL));
        check_pattern(K, &E, masked ? "kronecker with mask" : "kronecker");
        sr_matrix_free(K);
        free(E.at);
    }
    /* numbers: the values are the products */
    test_csr x = test_random_csr(3, 4, 2, SR_TYPE_FLOAT64), y = test_random_csr(2, 3, 2, SR_TYPE_FLOAT64);
    sr_matrix X = on_backend(&x), Y = on_backend(&y), K = NULL, H = NULL;
    CHECK_OK(sr_kronecker(ctx, &K, NULL, SR_PLUS_TIMES, X, Y, NULL));
    CHECK_OK(sr_matrix_copy_to(ctx, K, SR_HOST, &H));
    double dense[6][12];
    sr_dense view = sr_dense_view(dense, 6, 12, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    CHECK_OK(sr_matrix_export_dense(ctx, H, &view));
    int bad = 0;
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 12; j++)
            bad += dense[i][j] != test_csr_at(&x, i / 2, j / 3) * test_csr_at(&y, i % 2, j % 3);
    CHECK(bad == 0, "kronecker float64: %d wrong values", bad);
    /* numeric element-wise: plus on the union, times on the intersection; reduce sums rows */
    test_csr z = test_random_csr(3, 4, 2, SR_TYPE_FLOAT64);
    sr_matrix Z = on_backend(&z), S = NULL, P = NULL, R = NULL, Hs = NULL;
    CHECK_OK(sr_ewise_add(ctx, &S, NULL, SR_PLUS_TIMES, X, Z, NULL));
    CHECK_OK(sr_ewise_mult(ctx, &P, NULL, SR_PLUS_TIMES, X, Z, NULL));
    CHECK_OK(sr_reduce_rows(ctx, &R, SR_PLUS_TIMES, X));
    double sd[3][4], pd[3][4], rd[3];
    sr_dense sv = sr_dense_view(sd, 3, 4, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    sr_dense pv = sr_dense_view(pd, 3, 4, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    sr_dense rv = sr_dense_view(rd, 3, 1, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    sr_matrix outs[3] = {S, P, R};
    sr_dense *views[3] = {&sv, &pv, &rv};
    for (int o = 0; o < 3; o++) {
        CHECK_OK(sr_matrix_copy_to(ctx, outs[o], SR_HOST, &Hs));
        CHECK_OK(sr_matrix_export_dense(ctx, Hs, views[o]));
        sr_matrix_free(Hs);
    }
    bad = 0;
    for (int i = 0; i < 3; i++) {
        double row = 0;
        for (int j = 0; j < 4; j++) {
            double u = test_csr_at(&x, i, j), v = test_csr_at(&z, i, j);
            bad += fabs(sd[i][j] - (u + v)) > 1e-12 || pd[i][j] != u * v;
            row += u;
        }
        bad += fabs(rd[i] - row) > 1e-12;
    }
    CHECK(bad == 0, "numeric element-wise / reduce: %d wrong values", bad);
    CHECK_FAILS(sr_ewise_add(ctx, &S, NULL, SR_PLUS_PAIR, mats[0], mats[0], NULL), SR_ERROR_INVALID_ARGUMENT,
                "keep the type");
    CHECK_FAILS(sr_ewise_add(ctx, &S, NULL, SR_OR_AND, mats[0], mats[1], NULL), SR_ERROR_INVALID_ARGUMENT, "but B is");
    sr_matrix more[8] = {X, Y, K, H, Z, S, P, R};
    free_all(more, 8);
    free_all(mats, 3);
    free(A.at), free(B.at), free(M.at);
    test_csr_free(&a), test_csr_free(&b), test_csr_free(&mk), test_csr_free(&x), test_csr_free(&y), test_csr_free(&z);
}

/* ---------------------------------------------------------------- bit-packed blocks */

static void check_bits(int64_t m, int64_t k, int64_t cols)
{
    test_csr a = test_random_csr(m, k, 3, SR_TYPE_BOOL), x = test_random_csr(k, cols, 0.2 * (double)cols + 1, SR_TYPE_BOOL);
    test_csr mk = test_random_csr(m, cols, 0.5 * (double)cols + 1, SR_TYPE_BOOL), y0 = test_random_csr(m, cols, 4, SR_TYPE_BOOL);
    dense_bool A = dense_of(&a), X = dense_of(&x), M = dense_of(&mk), Y0 = dense_of(&y0);
    sr_matrix mats[4] = {on_backend(&a), on_backend(&x), on_backend(&mk), on_backend(&y0)};
    sr_bits bx, bm, by;
    CHECK_OK(sr_bits_alloc(ctx, &bx, k, cols, where));
    CHECK_OK(sr_bits_alloc(ctx, &bm, m, cols, where));
    CHECK_OK(sr_bits_alloc(ctx, &by, m, cols, where));
    CHECK_OK(sr_bits_from_matrix(ctx, &bx, mats[1]));
    CHECK_OK(sr_bits_from_matrix(ctx, &bm, mats[2]));
    sr_matrix back = NULL;
    CHECK_OK(sr_matrix_from_bits(ctx, &back, &bx));
    check_pattern(back, &X, "bits round trip");
    sr_matrix_free(back);
    for (int variant = 0; variant < 5; variant++) { /* plain, mask, complement+replace, accumulate, mask+acc */
        const bool masked = variant == 1 || variant == 2 || variant == 4, complement = variant == 2;
        const bool replace = variant == 2, acc = variant >= 3;
        CHECK_OK(sr_bits_from_matrix(ctx, &by, mats[3]));
        dense_bool E = dense_new(m, cols);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < cols; j++) {
                bool p = false;
                for (int64_t q = 0; q < k; q++)
                    p = p || (A.at[i * k + q] && X.at[q * cols + j]);
                const bool old = Y0.at[i * cols + j], allowed = !masked || (M.at[i * cols + j] != complement);
                const bool computed = acc ? (old || p) : p;
                E.at[i * cols + j] = allowed ? computed : (replace ? false : old);
            }
        sr_descriptor d = {.accumulate = acc, .mask_complement = complement, .replace = replace};
        int64_t count = -1, expected = 0;
        CHECK_OK(sr_mxm_bits(ctx, &by, masked ? &bm : NULL, mats[0], &bx, &d, &count));
        for (int64_t t = 0; t < m * cols; t++)
            expected += E.at[t];
        CHECK(count == expected, "mxm_bits variant %d: count %lld, expected %lld", variant, (long long)count,
              (long long)expected);
        CHECK_OK(sr_matrix_from_bits(ctx, &back, &by));
        char what[96];
        snprintf(what, sizeof what, "mxm_bits %lldx%lldx%lld variant %d", (long long)m, (long long)k, (long long)cols,
                 variant);
        check_pattern(back, &E, what);
        sr_matrix_free(back);
        free(E.at);
    }
    int64_t before, after;
    CHECK_OK(sr_bits_count(ctx, &by, &before));
    CHECK_OK(sr_bits_or(ctx, &by, &bm, &after));
    CHECK(after >= before, "bits_or lost bits");
    if (m == k && m > 0 && cols > 0) /* square A: only the shared memory is wrong */
        CHECK_FAILS(sr_mxm_bits(ctx, &by, NULL, mats[0], &by, NULL, NULL), SR_ERROR_INVALID_ARGUMENT, "share memory");
    sr_descriptor rep = {.replace = true};
    sr_matrix C = NULL;
    CHECK_FAILS(sr_mxm(ctx, &C, NULL, SR_OR_AND, mats[0], mats[0], &rep), SR_ERROR_INVALID_ARGUMENT, "replace");
    sr_bits_free(ctx, &bx), sr_bits_free(ctx, &bm), sr_bits_free(ctx, &by);
    free_all(mats, 4);
    free(A.at), free(X.at), free(M.at), free(Y0.at);
    test_csr_free(&a), test_csr_free(&x), test_csr_free(&mk), test_csr_free(&y0);
}

static void check_coo_round_trip(void)
{
    int64_t rows[] = {3, 0, 3, 1, 0};
    int32_t cols[] = {2, 1, 2, 0, 1}; /* (3,2) and (0,1) twice */
    sr_matrix A = NULL;
    CHECK_FAILS(sr_matrix_from_coo(ctx, &A, 4, 3, SR_TYPE_BOOL, 5, rows, cols, NULL, SR_DUPLICATES_ERROR, SR_HOST),
                SR_ERROR_INVALID_MATRIX, "");
    CHECK_OK(sr_matrix_from_coo(ctx, &A, 4, 3, SR_TYPE_BOOL, 5, rows, cols, NULL, SR_DUPLICATES_SUM, SR_HOST));
    int64_t r[3];
    int32_t c[3];
    CHECK_OK(sr_matrix_export_coo(ctx, A, r, c, NULL, SR_HOST));
    CHECK(r[0] == 0 && c[0] == 1 && r[1] == 1 && c[1] == 0 && r[2] == 3 && c[2] == 2, "COO pairs out of order");
    sr_matrix_free(A);
}

static void run_all(void)
{
    check_mxm(0, 0, 0, 0, 0);
    check_mxm(1, 1, 1, 1, 1);
    check_mxm(40, 30, 50, 1.5, 2);   /* rows of one and two A entries: the copy and merge paths */
    check_mxm(120, 90, 200, 6, 30);  /* dense rows: the bitmap scan */
    check_mxm(300, 300, 300, 4, 4);
    check_mxm(64, 500, 3000, 3, 3);  /* sparse in a wide span: the sort */
    check_ewise(0, 0, 0);
    check_ewise(1, 1, 1);
    check_ewise(60, 45, 5);
    check_ewise(200, 300, 30);
    check_ewise_numeric(3, 40000, 15000); /* rows over many merge tiles */
    check_ewise_numeric(3000, 40, 3);     /* many short rows a tile */
    check_ewise_numeric(400, 3000, 300);
    check_kronecker();
    check_bits(0, 0, 0);
    check_bits(1, 1, 1);
    check_bits(50, 50, 64);
    check_bits(70, 60, 130);
    check_bits(30, 30, 3000); /* 47 words a row: the warp's lanes over words */
    check_coo_round_trip();
}

int main(void)
{
    test_seed("test_boolean");
    test_on_each_backend_and_opencl(&ctx, &where, run_all);
    return test_finish("test_boolean");
}
