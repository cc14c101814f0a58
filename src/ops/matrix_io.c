/* Public Matrix Market entry points: parse (core) -> CSR (CPU backend); write with an atomic rename. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/memory.h"
#include "../core/mm.h"
#include "../core/types.h"
#include "../cpu/cpu.h"
#include "ops_common.h"

#ifdef SR_HAVE_ZLIB
#include <zlib.h>
#endif

sr_status sr_matrix_read_mm(sr_context ctx, const char *path, int type, sr_matrix *out, sr_mm_header *header)
{
    SR_CHECK_ARG(ctx != NULL && path != NULL && out != NULL, "sr_matrix_read_mm: NULL argument");
    sr_mm_triplets t;
    SR_TRY(sr_mm_parse(path, type, &t));
    int64_t pair[2] = {0, 0};
    struct sr_matrix_s *A = NULL;
    sr_status s = sr_cpu_coo_to_csr(ctx, t.header.nrows, t.header.ncols, t.type, t.count, t.rows, t.cols, t.values,
                                    SR_DUPLICATES_ERROR, &A, pair);
    if (s == SR_ERROR_INVALID_MATRIX && pair[0] != pair[1])
        s = sr_error(SR_ERROR_PARSE, "%s: entry (%lld, %d) appears twice, at lines %lld and %lld%s", path,
                     (long long)t.rows[pair[1]] + 1, (int)t.cols[pair[1]] + 1, (long long)t.lines[pair[0]],
                     (long long)t.lines[pair[1]],
                     t.header.symmetry != SR_MM_GENERAL ? " (in a symmetric file each entry also stands for its mirror)"
                                                        : "");
    else if (s != SR_SUCCESS)
        sr_error_prefix(s, "%s", path);
    if (s == SR_SUCCESS && header)
        *header = t.header;
    sr_mm_triplets_free(&t);
    if (s == SR_SUCCESS)
        *out = A;
    return s;
}

/* ------------------------------------------------------------------ writing */

typedef struct {
    FILE *file;
#ifdef SR_HAVE_ZLIB
    gzFile gz;
#endif
    bool failed;
} mm_out;

static void out_printf(mm_out *o, const char *fmt, ...) SR_PRINTF(2, 3);
static void out_printf(mm_out *o, const char *fmt, ...)
{
    char line[256];
    va_list args;
    va_start(args, fmt);
    int n = vsnprintf(line, sizeof line, fmt, args);
    va_end(args);
#ifdef SR_HAVE_ZLIB
    if (o->gz) {
        if (gzwrite(o->gz, line, (unsigned)n) != n)
            o->failed = true;
        return;
    }
#endif
    if (fwrite(line, 1, (size_t)n, o->file) != (size_t)n)
        o->failed = true;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static const char *field_of(sr_type type, bool array)
{
    switch (type) {
    case SR_TYPE_BOOL: return array ? "integer" : "pattern";
    case SR_TYPE_INT32: return "integer";
    default: return "real";
    }
}

static const char *graphblas_name(sr_type type)
{
    switch (type) {
    case SR_TYPE_BOOL: return "bool";
    case SR_TYPE_INT32: return "int32_t";
    case SR_TYPE_FLOAT32: return "float";
    case SR_TYPE_FLOAT64: return "double";
    }
    return "double";
}

/* Shortest text that reads back to the same bits. */
static void out_value(mm_out *o, const void *values, sr_type type, int64_t k)
{
    switch (type) {
    case SR_TYPE_BOOL: out_printf(o, " %d", values ? ((const uint8_t *)values)[k] != 0 : 1); break;
    case SR_TYPE_INT32: out_printf(o, " %d", ((const int32_t *)values)[k]); break;
    case SR_TYPE_FLOAT32: out_printf(o, " %.9g", (double)((const float *)values)[k]); break;
    case SR_TYPE_FLOAT64: out_printf(o, " %.17g", ((const double *)values)[k]); break;
    }
}

static void write_comment(mm_out *o, const char *comment)
{
    while (comment && *comment) {
        const char *nl = strchr(comment, '\n');
        int len = nl ? (int)(nl - comment) : (int)strlen(comment);
        out_printf(o, "%% %.*s\n", len > 200 ? 200 : len, comment);
        comment = nl ? nl + 1 : NULL;
    }
}

static void write_coordinate(mm_out *o, const struct sr_matrix_s *A, bool symmetric)
{
    int64_t stored = 0;
    for (int64_t i = 0; i < A->nrows; i++)
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            stored += !symmetric || A->colind[k] <= i;
    out_printf(o, "%lld %lld %lld\n", (long long)A->nrows, (long long)A->ncols, (long long)stored);
    for (int64_t i = 0; i < A->nrows && !o->failed; i++)
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
            if (symmetric && A->colind[k] > i)
                continue;
            out_printf(o, "%lld %d", (long long)i + 1, A->colind[k] + 1);
            if (A->type != SR_TYPE_BOOL)
                out_value(o, A->values, A->type, k);
            out_printf(o, "\n");
        }
}

static sr_status write_array(struct sr_context_s *ctx, mm_out *o, const struct sr_matrix_s *A, bool symmetric)
{
    sr_dense d = sr_dense_view(NULL, A->nrows, A->ncols, A->type, SR_COL_MAJOR, SR_HOST);
    size_t bytes = (size_t)A->nrows * (size_t)A->ncols * sr_type_size(A->type);
    SR_TRY(sr_mem_alloc(ctx, SR_HOST, bytes, &d.data));
    sr_cpu_csr_to_dense(A, &d, sr_context_threads(ctx));
    out_printf(o, "%lld %lld\n", (long long)A->nrows, (long long)A->ncols);
    for (int64_t j = 0; j < A->ncols && !o->failed; j++)
        for (int64_t i = symmetric ? j : 0; i < A->nrows; i++) {
            int64_t at = j * A->nrows + i;
            if (A->type == SR_TYPE_BOOL)
                out_printf(o, "%d\n", ((const uint8_t *)d.data)[at]);
            else {
                out_value(o, d.data, A->type, at);
                out_printf(o, "\n");
            }
        }
    sr_mem_free(ctx, SR_HOST, d.data, bytes);
    return SR_SUCCESS;
}

static sr_status check_symmetric(sr_context ctx, sr_matrix A)
{
    SR_CHECK_ARG(A->nrows == A->ncols, "sr_matrix_write_mm: a symmetric file needs a square matrix, not %lld x %lld",
                 (long long)A->nrows, (long long)A->ncols);
    sr_matrix AT;
    SR_TRY(sr_matrix_transpose(ctx, A, &AT));
    bool same = false;
    sr_status s = sr_matrix_equal(ctx, A, AT, &same);
    sr_matrix_free(AT);
    SR_TRY(s);
    SR_CHECK_ARG(same, "sr_matrix_write_mm: symmetric output was asked for, but the matrix is not symmetric");
    return SR_SUCCESS;
}

static sr_status write_file(sr_context ctx, const struct sr_matrix_s *A, int fd, const char *path,
                            const sr_mm_write_options *opt)
{
    mm_out o;
    memset(&o, 0, sizeof o);
#ifdef SR_HAVE_ZLIB
    if (ends_with(path, ".gz")) {
        o.gz = gzdopen(fd, "wb6");
        if (o.gz == NULL)
            return sr_error(SR_ERROR_IO, "cannot start gzip output for %s", path);
    }
    if (o.gz == NULL)
#else
    if (ends_with(path, ".gz"))
        return sr_error(SR_ERROR_UNSUPPORTED, "%s: gzip output needs zlib, which this build lacks", path);
#endif
    {
        o.file = fdopen(fd, "wb");
        if (o.file == NULL) {
            close(fd);
            return sr_error(SR_ERROR_IO, "cannot write %s: %s", path, strerror(errno));
        }
    }
    out_printf(&o, "%%%%MatrixMarket matrix %s %s %s\n", opt->array ? "array" : "coordinate",
               field_of(A->type, opt->array), opt->symmetric ? "symmetric" : "general");
    out_printf(&o, "%%%%GraphBLAS type %s\n", graphblas_name(A->type));
    write_comment(&o, opt->comment);
    sr_status s = SR_SUCCESS;
    if (opt->array)
        s = write_array(ctx, &o, A, opt->symmetric);
    else
        write_coordinate(&o, A, opt->symmetric);
    int closed;
#ifdef SR_HAVE_ZLIB
    if (o.gz)
        closed = gzclose(o.gz) == Z_OK ? 0 : -1;
    else
#endif
        closed = fclose(o.file);
    if (s == SR_SUCCESS && (o.failed || closed != 0))
        s = sr_error(SR_ERROR_IO, "writing %s failed: %s", path, strerror(errno));
    return s;
}

sr_status sr_matrix_write_mm(sr_context ctx, sr_matrix A, const char *path, const sr_mm_write_options *options)
{
    const char *fn = "sr_matrix_write_mm";
    SR_TRY(sr_ops_check_matrix(fn, ctx, A));
    SR_CHECK_ARG(path != NULL, "%s: the path is NULL", fn);
    sr_mm_write_options opt = {false, false, NULL};
    if (options)
        opt = *options;
    if (opt.array) {
        size_t cells;
        SR_CHECK_ARG(sr_checked_mul((size_t)A->nrows, (size_t)A->ncols, &cells) && cells < ((size_t)1 << 34),
                     "%s: a %lld x %lld matrix is too large for the array format", fn, (long long)A->nrows,
                     (long long)A->ncols);
    }
    if (opt.symmetric)
        SR_TRY(check_symmetric(ctx, A));

    sr_matrix host = A, copy = NULL;
    if (A->location == SR_DEVICE) {
        SR_TRY(sr_matrix_copy_to(ctx, A, SR_HOST, &copy));
        host = copy;
    }
    size_t len = strlen(path);
    char *temp = sr_malloc(len + 16);
    if (temp == NULL) {
        sr_matrix_free(copy);
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory");
    }
    snprintf(temp, len + 16, "%s.tmp-XXXXXX", path);
    int fd = mkstemp(temp);
    sr_status s;
    if (fd < 0) {
        s = sr_error(SR_ERROR_IO, "cannot create %s: %s", temp, strerror(errno));
    } else {
        mode_t mask = umask(0); /* mkstemp makes the file 0600; give it the usual permissions */
        umask(mask);
        fchmod(fd, 0666 & ~mask);
        s = write_file(ctx, host, fd, path, &opt);
        if (s == SR_SUCCESS && rename(temp, path) != 0)
            s = sr_error(SR_ERROR_IO, "cannot rename %s to %s: %s", temp, path, strerror(errno));
        if (s != SR_SUCCESS)
            unlink(temp);
    }
    free(temp);
    sr_matrix_free(copy);
    return s;
}
