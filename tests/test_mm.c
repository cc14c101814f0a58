/* Matrix Market: round trips of random matrices, hand-written edge cases, malformed files, real data. */
#include <dirent.h>
#include <unistd.h>

#include "test_util.h"

static sr_context ctx;
static char tmp_dir[512];

static const char *tmp_path(const char *name)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s", tmp_dir, name);
    return path;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    fputs(text, f);
    fclose(f);
}

static void test_round_trips(void)
{
    const char *names[] = {"rt.mtx", "rt.mtx.gz"};
    for (int t = 0; t < 4; t++)
        for (int array = 0; array < 2; array++)
            for (int n = 0; n < 2; n++) {
                test_csr m = test_random_csr(60, 45, 5, test_all_types[t]);
                sr_matrix A = test_make_matrix(ctx, &m), B = NULL;
                sr_mm_write_options o = {array != 0, false, "written by test_mm\nsecond comment line"};
                CHECK_OK(sr_matrix_write_mm(ctx, A, tmp_path(names[n]), &o));
                sr_mm_header h;
                CHECK_OK(sr_matrix_read_mm(ctx, tmp_path(names[n]), -1, &B, &h));
                bool same = false;
                if (B)
                    CHECK_OK(sr_matrix_equal(ctx, A, B, &same));
                CHECK(same, "round trip of %s (%s, %s) changed the matrix", sr_type_name(m.type),
                      array ? "array" : "coordinate", names[n]);
                CHECK(h.nrows == 60 && h.ncols == 45 && h.coordinate == !array, "header after round trip");
                sr_matrix_free(A);
                sr_matrix_free(B);
                test_csr_free(&m);
            }

    /* symmetric: A + A^T written as a lower triangle, read back whole */
    test_csr m = test_random_csr(50, 50, 4, SR_TYPE_FLOAT64);
    sr_matrix A = test_make_matrix(ctx, &m), AT = NULL, S = NULL, B = NULL;
    CHECK_OK(sr_matrix_transpose(ctx, A, &AT));
    sr_mm_write_options sym = {false, true, NULL};
    CHECK_FAILS(sr_matrix_write_mm(ctx, A, tmp_path("sym.mtx"), &sym), SR_ERROR_INVALID_ARGUMENT, "not symmetric");
    CHECK(access(tmp_path("sym.mtx"), F_OK) != 0, "a failed write left a file behind");
    int64_t *rows = malloc((size_t)(2 * m.nnz + 1) * sizeof *rows);
    int32_t *cols = malloc((size_t)(2 * m.nnz + 1) * sizeof *cols);
    double *vals = malloc((size_t)(2 * m.nnz + 1) * sizeof *vals);
    CHECK_OK(sr_matrix_export_coo(ctx, A, rows, cols, vals, SR_HOST));
    CHECK_OK(sr_matrix_export_coo(ctx, AT, rows + m.nnz, cols + m.nnz, vals + m.nnz, SR_HOST));
    CHECK_OK(sr_matrix_from_coo(ctx, &S, 50, 50, SR_TYPE_FLOAT64, 2 * m.nnz, rows, cols, vals, SR_DUPLICATES_SUM,
                                SR_HOST));
    for (int array = 0; array < 2; array++) {
        sym.array = array != 0;
        CHECK_OK(sr_matrix_write_mm(ctx, S, tmp_path("sym.mtx"), &sym));
        sr_mm_header h;
        CHECK_OK(sr_matrix_read_mm(ctx, tmp_path("sym.mtx"), -1, &B, &h));
        bool same = false;
        if (B)
            CHECK_OK(sr_matrix_equal(ctx, S, B, &same));
        CHECK(same && h.symmetry == SR_MM_SYMMETRIC, "symmetric round trip (array %d)", array);
        sr_matrix_free(B);
        B = NULL;
    }
    free(rows);
    free(cols);
    free(vals);
    sr_matrix_free(A);
    sr_matrix_free(AT);
    sr_matrix_free(S);
    test_csr_free(&m);
}

/* A hand-written file and the dense matrix it must give (row-major, nrows x ncols). */
static void expect_file(const char *text, int type, int64_t nrows, int64_t ncols, const double *want, const char *what)
{
    write_text(tmp_path("hand.mtx"), text);
    sr_matrix A = NULL;
    CHECK_OK(sr_matrix_read_mm(ctx, tmp_path("hand.mtx"), type, &A, NULL));
    if (!A)
        return;
    sr_matrix F = NULL;
    CHECK_OK(sr_matrix_cast(ctx, A, SR_TYPE_FLOAT64, &F));
    double got[64];
    sr_dense d = sr_dense_view(got, nrows, ncols, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    CHECK_OK(sr_matrix_export_dense(ctx, F, &d));
    CHECK(memcmp(got, want, (size_t)(nrows * ncols) * sizeof(double)) == 0, "%s: values differ", what);
    sr_matrix_free(A);
    sr_matrix_free(F);
}

static void test_tolerated_input(void)
{
    const double a[] = {1.5, 0, 0, -2, 0, 3};
    expect_file("%%MatrixMarket matrix coordinate real general\n% comment\n\n  \n2 3 3\n1 1 1.5\n\n2 1 -2\r\n"
                "% a comment between entries\n  2   3   3e0  \n\n",
                -1, 2, 3, a, "comments, blank lines, CRLF, extra spaces");
    expect_file("%%matrixmarket MATRIX Coordinate REAL General\n2 3 3\n2 3 3\n1 1 1.5\n2 1 -2", -1, 2, 3, a,
                "case-insensitive banner, no final newline");
    const double s[] = {1, 2, 0, 2, 0, 5, 0, 5, 7};
    expect_file("%%MatrixMarket matrix coordinate integer symmetric\n3 3 4\n1 1 1\n2 1 2\n3 2 5\n3 3 7\n", -1, 3, 3, s,
                "symmetric integer");
    const double k[] = {0, -4, 4, 0};
    expect_file("%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n2 1 4\n", -1, 2, 2, k, "skew-symmetric");
    const double arr[] = {1, 0, 3, 2, 0, 4};
    expect_file("%%MatrixMarket matrix array real general\n2 3\n1\n2\n0\n0\n3\n4\n", -1, 2, 3, arr,
                "array, column-major, zeros dropped");
    const double pat[] = {0, 1, 1, 0};
    expect_file("%%MatrixMarket matrix coordinate pattern general\n2 2 2\n1 2\n2 1\n", SR_TYPE_FLOAT32, 2, 2, pat,
                "pattern read as float32");
}

static void expect_error(const char *text, sr_status status, const char *needle)
{
    write_text(tmp_path("bad.mtx"), text);
    sr_matrix A = NULL;
    CHECK_FAILS(sr_matrix_read_mm(ctx, tmp_path("bad.mtx"), -1, &A, NULL), status, needle);
    CHECK(A == NULL, "a failed read made a matrix");
}

static void test_malformed_text(void)
{
    expect_error("", SR_ERROR_PARSE, "the file is empty");
    expect_error("hello\n", SR_ERROR_PARSE, "bad.mtx:1: not a Matrix Market file");
    expect_error("%%MatrixMarket matrix coordinate real\n", SR_ERROR_PARSE, "needs 4 words");
    expect_error("%%MatrixMarket tensor coordinate real general\n", SR_ERROR_PARSE, "unknown object 'tensor'");
    expect_error("%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 2\n", SR_ERROR_UNSUPPORTED, "complex");
    expect_error("%%MatrixMarket matrix array pattern general\n2 2\n", SR_ERROR_PARSE, "'array pattern'");
    expect_error("%%MatrixMarket matrix coordinate real general\n% only comments\n", SR_ERROR_PARSE,
                 "ends before the size line");
    expect_error("%%MatrixMarket matrix coordinate real general\n3 3\n", SR_ERROR_PARSE, "bad.mtx:2: the size line");
    expect_error("%%MatrixMarket matrix coordinate real general\n3 -3 1\n", SR_ERROR_PARSE, "not a non-negative");
    expect_error("%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1.0\n", SR_ERROR_PARSE,
                 "ends after 1 of the 2 entries");
    expect_error("%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 1.0\n2 2 2.0\n", SR_ERROR_PARSE,
                 "bad.mtx:4: more entries than the 1");
    expect_error("%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1\n", SR_ERROR_PARSE,
                 "bad.mtx:3: expected 3 numbers (row, column, value), found 2");
    expect_error("%%MatrixMarket matrix coordinate real general\n3 3 1\n4 1 1.0\n", SR_ERROR_PARSE,
                 "entry (4, 1) is outside the 3 x 3 matrix");
    expect_error("%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 abc\n", SR_ERROR_PARSE,
                 "'abc' is not a number");
    expect_error("%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 1 1.5\n", SR_ERROR_PARSE,
                 "'1.5' is not an integer");
    expect_error("%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 1 3000000000\n", SR_ERROR_PARSE,
                 "does not fit int32");
    expect_error("%%MatrixMarket matrix coordinate real general\n3 3 2\n2 2 1\n2 2 5\n", SR_ERROR_PARSE,
                 "entry (2, 2) appears twice, at lines 3 and 4");
    expect_error("%%MatrixMarket matrix coordinate real symmetric\n3 3 2\n2 1 1\n1 2 5\n", SR_ERROR_PARSE,
                 "appears twice");
    expect_error("%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 1\n2 2 1\n", SR_ERROR_PARSE,
                 "stores no diagonal");
    expect_error("%%MatrixMarket matrix coordinate real symmetric\n3 4 1\n2 1 1\n", SR_ERROR_PARSE, "must be square");
    expect_error("%%MatrixMarket matrix coordinate integer general\n%%GraphBLAS type uint8_t\n2 2 1\n1 1 256\n",
                 SR_ERROR_PARSE, "outside the range of the declared GraphBLAS type");
    expect_error("%%MatrixMarket matrix coordinate real general\n%%GraphBLAS type gunk\n2 2 1\n1 1 2\n", SR_ERROR_PARSE,
                 "unknown GraphBLAS type 'gunk'");
    sr_matrix A = NULL;
    CHECK_FAILS(sr_matrix_read_mm(ctx, tmp_path("does-not-exist.mtx"), -1, &A, NULL), SR_ERROR_IO, "cannot open");
}

/* Every file in shared/data/malformed-mtx must fail cleanly with a message naming the file. */
static void test_malformed_directory(const char *data)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/malformed-mtx", data);
    DIR *d = opendir(dir);
    if (!d) {
        printf("skip: %s not present\n", dir);
        return;
    }
    int files = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (!strstr(e->d_name, ".mtx"))
            continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        sr_matrix A = NULL;
        sr_status s = sr_matrix_read_mm(ctx, path, -1, &A, NULL);
        CHECK((s == SR_ERROR_PARSE || s == SR_ERROR_UNSUPPORTED) && A == NULL, "%s was accepted (%s)", e->d_name,
              sr_status_name(s));
        CHECK(strstr(sr_last_error(), e->d_name) != NULL, "message for %s does not name it: %s", e->d_name,
              sr_last_error());
        printf("  %-22s -> %s\n", e->d_name, sr_last_error() + strlen(dir) + 1);
        files++;
    }
    closedir(d);
    CHECK(files >= 20, "only %d malformed files found", files);
}

/* Real SuiteSparse/LAGraph files: shapes and counts from their headers; symmetric ones equal their transpose. */
static void test_real_files(const char *data)
{
    struct {
        const char *file;
        int64_t nrows, ncols, nnz;
    } files[] = {
        {"graphs/karate.mtx.gz", 34, 34, 156},
        {"graphs/west0067.mtx.gz", 67, 67, 294},
        {"graphs/lp_afiro.mtx.gz", 27, 51, 102},
        {"graphs/bcsstk13.mtx.gz", 2003, 2003, 83883},
        {"graphs/pushpull.mtx.gz", 4000, 4000, -1},
        {"sparse-dnn/n1024-l1.mtx.gz", 1024, 1024, -1},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", data, files[i].file);
        if (access(path, R_OK) != 0) {
            printf("skip: %s not present\n", path);
            continue;
        }
        sr_matrix A = NULL, AT = NULL, B = NULL;
        sr_mm_header h;
        CHECK_OK(sr_matrix_read_mm(ctx, path, -1, &A, &h));
        if (!A)
            continue;
        sr_matrix_info info;
        sr_matrix_get_info(A, &info);
        CHECK(info.nrows == files[i].nrows && info.ncols == files[i].ncols, "%s: shape", files[i].file);
        CHECK(files[i].nnz < 0 || info.nnz == files[i].nnz, "%s: %lld entries, expected %lld", files[i].file,
              (long long)info.nnz, (long long)files[i].nnz);
        /* stored entries vs expansion: general files keep them all; symmetric ones double the off-diagonal */
        CHECK(h.symmetry != SR_MM_GENERAL || info.nnz == h.stored_entries, "%s: entries dropped", files[i].file);
        CHECK(h.symmetry == SR_MM_GENERAL || (info.nnz > h.stored_entries && info.nnz <= 2 * h.stored_entries),
              "%s: symmetric expansion gave %lld from %lld", files[i].file, (long long)info.nnz,
              (long long)h.stored_entries);
        if (h.symmetry == SR_MM_SYMMETRIC) {
            bool same = false;
            CHECK_OK(sr_matrix_transpose(ctx, A, &AT));
            if (AT)
                CHECK_OK(sr_matrix_equal(ctx, A, AT, &same));
            CHECK(same, "%s: symmetric file not equal to its transpose", files[i].file);
        }
        CHECK_OK(sr_matrix_write_mm(ctx, A, tmp_path("real.mtx.gz"), NULL));
        CHECK_OK(sr_matrix_read_mm(ctx, tmp_path("real.mtx.gz"), -1, &B, NULL));
        bool same = false;
        if (B)
            CHECK_OK(sr_matrix_equal(ctx, A, B, &same));
        CHECK(same, "%s: write/read round trip changed it", files[i].file);
        printf("  %-28s %lld x %lld, %lld nonzeros, %s\n", files[i].file, (long long)info.nrows,
               (long long)info.ncols, (long long)info.nnz, sr_type_name(info.type));
        sr_matrix_free(A);
        sr_matrix_free(AT);
        sr_matrix_free(B);
    }
}

/* A file whose size line dwarfs its entries is refused before anything large is allocated, with
 * the memory it would need; a host memory limit that allows it is honoured either way. */
static void test_declared_sizes(void)
{
    write_text(tmp_path("bad.mtx"), "%%MatrixMarket matrix coordinate real general\n3000000000 5 1\n1 1 1.5\n");
    sr_matrix A = NULL;
    CHECK_FAILS(sr_matrix_read_mm(ctx, tmp_path("bad.mtx"), -1, &A, NULL), SR_ERROR_OUT_OF_MEMORY, "3000000000 rows");
    CHECK(A == NULL, "a refused read wrote its output");
    CHECK(strstr(sr_last_error(), "host memory limit of at least") != NULL, "the message lacks the way out: %s",
          sr_last_error());
    int64_t r = 2999999999;
    int32_t c = 0;
    double v = 1;
    CHECK_FAILS(sr_matrix_from_coo(ctx, &A, 3000000000LL, 5, SR_TYPE_FLOAT64, 1, &r, &c, &v, SR_DUPLICATES_ERROR,
                                   SR_HOST),
                SR_ERROR_OUT_OF_MEMORY, "3000000000 rows");
    /* a million empty rows is within 1 GiB: read */
    write_text(tmp_path("bad.mtx"), "%%MatrixMarket matrix coordinate real general\n1000000 5 1\n1000000 5 2.5\n");
    CHECK_OK(sr_matrix_read_mm(ctx, tmp_path("bad.mtx"), -1, &A, NULL));
    sr_matrix_free(A);
    A = NULL;
    /* a limit below that refuses it, and caps single allocations */
    CHECK_OK(sr_context_set_host_memory_limit(ctx, 1 << 20));
    CHECK_FAILS(sr_matrix_read_mm(ctx, tmp_path("bad.mtx"), -1, &A, NULL), SR_ERROR_OUT_OF_MEMORY,
                "the context's host memory limit");
    sr_context_options o;
    CHECK_OK(sr_context_get_options(ctx, &o));
    CHECK(o.host_memory_limit == 1 << 20, "the limit reads back as %zu", o.host_memory_limit);
    CHECK_OK(sr_context_set_host_memory_limit(ctx, 0));
}

int main(void)
{
    test_seed("test_mm");
    const char *base = getenv("SPARSERING_TEST_TMP");
    snprintf(tmp_dir, sizeof tmp_dir, "%s/test_mm_XXXXXX", base ? base : "/tmp");
    if (!mkdtemp(tmp_dir)) {
        perror("mkdtemp");
        return 1;
    }
    sr_context_options o = sr_context_options_default();
    o.backend = SR_BACKEND_CPU;
    if (sr_context_create(&ctx, &o) != SR_SUCCESS)
        return 1;
    test_round_trips();
    test_tolerated_input();
    test_malformed_text();
    test_declared_sizes();
    const char *data = getenv("SPARSERING_TEST_DATA");
    if (data && access(data, R_OK) == 0) {
        test_malformed_directory(data);
        test_real_files(data);
    } else {
        printf("skip: real data (SPARSERING_TEST_DATA not set or absent)\n");
    }
    sr_context_destroy(ctx);
    const char *names[] = {"rt.mtx", "rt.mtx.gz", "sym.mtx", "hand.mtx", "bad.mtx", "real.mtx.gz"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        unlink(tmp_path(names[i]));
    rmdir(tmp_dir);
    return test_finish("test_mm");
}
