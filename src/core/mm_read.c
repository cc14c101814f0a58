/* Matrix Market reader: banner, comments, size line and entries, checked strictly line by line. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "memory.h"
#include "error.h"
#include "line_reader.h"
#include "mm.h"
#include "types.h"

#define SR_MM_MAX_TOKENS 4

/* The range a "%%GraphBLAS type T" comment declares, and the sr_type it maps to exactly (or -1). */
typedef struct {
    const char *name;
    double lo, hi;
    bool integral;
    int exact_type;
} declared_type;

static const declared_type declared_types[] = {
    {"bool", 0, 1, true, SR_TYPE_BOOL},
    {"int8_t", -128, 127, true, -1},
    {"int16_t", -32768, 32767, true, -1},
    {"int32_t", -2147483648.0, 2147483647.0, true, SR_TYPE_INT32},
    {"int64_t", -9223372036854775808.0, 9223372036854775807.0, true, -1},
    {"uint8_t", 0, 255, true, -1},
    {"uint16_t", 0, 65535, true, -1},
    {"uint32_t", 0, 4294967295.0, true, -1},
    {"uint64_t", 0, 18446744073709551615.0, true, -1},
    {"float", -INFINITY, INFINITY, false, SR_TYPE_FLOAT32},
    {"double", -INFINITY, INFINITY, false, SR_TYPE_FLOAT64},
};

typedef struct {
    sr_line_reader *reader;
    const char *path;
    sr_mm_header header;
    bool pattern, integer;
    const declared_type *declared;
    int requested;      /* the caller's sr_type, or -1 */
    bool header_only;
    sr_type type;       /* of stored values, set once the size line is read */
    int64_t capacity;
    sr_mm_triplets *out;
} parser;

static sr_status parse_error(const parser *p, const char *fmt, const char *detail)
{
    char what[512];
    snprintf(what, sizeof what, fmt, detail);
    return sr_error(SR_ERROR_PARSE, "%s:%lld: %s", p->path, (long long)sr_line_reader_line(p->reader), what);
}

/* Splits a line on whitespace into at most max tokens; returns the count, or max+1 if more. */
static int split(char *line, char **tokens, int max)
{
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(line, " \t\v\f", &save); t != NULL; t = strtok_r(NULL, " \t\v\f", &save)) {
        if (n == max)
            return max + 1;
        tokens[n++] = t;
    }
    return n;
}

static bool blank(const char *line)
{
    for (; *line; line++)
        if (!isspace((unsigned char)*line))
            return false;
    return true;
}

static bool parse_int(const char *token, long long *value)
{
    char *end;
    errno = 0;
    *value = strtoll(token, &end, 10);
    return errno == 0 && end != token && *end == '\0';
}

static bool parse_real(const char *token, double *value)
{
    char *end;
    errno = 0;
    *value = strtod(token, &end);
    return end != token && *end == '\0' && !(errno == ERANGE && fabs(*value) > 1.0); /* underflow to 0 is fine */
}

static sr_status parse_banner(parser *p, char *line)
{
    char *t[SR_MM_MAX_TOKENS + 1];
    if (strncasecmp(line, "%%MatrixMarket", 14) != 0)
        return parse_error(p, "%s", "not a Matrix Market file: the first line must start with %%MatrixMarket");
    int n = split(line + 14, t, SR_MM_MAX_TOKENS);
    if (n != 4)
        return parse_error(p, "%s", "the banner needs 4 words after %%MatrixMarket: matrix, format, field, symmetry");
    if (strcasecmp(t[0], "matrix") != 0)
        return parse_error(p, "unknown object '%s' (expected 'matrix')", t[0]);
    if (strcasecmp(t[1], "coordinate") == 0)
        p->header.coordinate = true;
    else if (strcasecmp(t[1], "array") != 0)
        return parse_error(p, "unknown format '%s' (expected 'coordinate' or 'array')", t[1]);
    if (strcasecmp(t[2], "complex") == 0)
        return sr_error(SR_ERROR_UNSUPPORTED, "%s: complex matrices are not supported", p->path);
    if (strcasecmp(t[2], "pattern") == 0)
        p->pattern = true;
    else if (strcasecmp(t[2], "integer") == 0)
        p->integer = true;
    else if (strcasecmp(t[2], "real") != 0 && strcasecmp(t[2], "double") != 0)
        return parse_error(p, "unknown field '%s' (expected real, integer, pattern or complex)", t[2]);
    if (strcasecmp(t[3], "general") == 0)
        p->header.symmetry = SR_MM_GENERAL;
    else if (strcasecmp(t[3], "symmetric") == 0)
        p->header.symmetry = SR_MM_SYMMETRIC;
    else if (strcasecmp(t[3], "skew-symmetric") == 0)
        p->header.symmetry = SR_MM_SKEW_SYMMETRIC;
    else if (strcasecmp(t[3], "hermitian") == 0)
        return parse_error(p, "%s", "'hermitian' needs complex values, which this file's field is not");
    else
        return parse_error(p, "unknown symmetry '%s' (expected general, symmetric or skew-symmetric)", t[3]);
    if (p->pattern && !p->header.coordinate)
        return parse_error(p, "%s", "'array pattern' is not a valid combination (use 'coordinate pattern')");
    if (p->pattern && p->header.symmetry == SR_MM_SKEW_SYMMETRIC)
        return parse_error(p, "%s", "'pattern skew-symmetric' is not a valid combination");
    p->header.type = p->pattern ? SR_TYPE_BOOL : (p->integer ? SR_TYPE_INT32 : SR_TYPE_FLOAT64);
    return SR_SUCCESS;
}

/* "%%GraphBLAS type T": remembered, to check values against T's range. */
static sr_status parse_comment(parser *p, char *line)
{
    const char *key = "%%GraphBLAS type";
    if (strncasecmp(line, key, strlen(key)) != 0)
        return SR_SUCCESS;
    char *name = line + strlen(key);
    while (isspace((unsigned char)*name))
        name++;
    size_t len = strlen(name);
    while (len > 0 && isspace((unsigned char)name[len - 1]))
        name[--len] = '\0';
    if (strstr(name, "complex") != NULL)
        return sr_error(SR_ERROR_UNSUPPORTED, "%s: GraphBLAS type '%s' is complex, which is not supported", p->path,
                        name);
    for (size_t i = 0; i < sizeof declared_types / sizeof declared_types[0]; i++)
        if (strcmp(name, declared_types[i].name) == 0) {
            p->declared = &declared_types[i];
            if (p->declared->integral == false && p->integer)
                return parse_error(p, "GraphBLAS type '%s' contradicts the integer field", name);
            return SR_SUCCESS;
        }
    return parse_error(p, "unknown GraphBLAS type '%s'", name);
}

static sr_status parse_size(parser *p, char *line)
{
    char *t[4];
    int want = p->header.coordinate ? 3 : 2;
    int n = split(line, t, 3);
    long long v[3] = {0, 0, 0};
    if (n != want)
        return parse_error(p, p->header.coordinate ? "the size line must hold 3 integers (rows, columns, entries)%s"
                                                   : "the size line must hold 2 integers (rows, columns)%s",
                           "");
    for (int i = 0; i < n; i++)
        if (!parse_int(t[i], &v[i]) || v[i] < 0)
            return parse_error(p, "'%s' in the size line is not a non-negative integer", t[i]);
    p->header.nrows = v[0];
    p->header.ncols = v[1];
    if (v[1] > INT32_MAX)
        return sr_error(SR_ERROR_OVERFLOW, "%s: %lld columns exceed the 32-bit column index limit", p->path, v[1]);
    if (p->header.coordinate) {
        p->header.stored_entries = v[2];
    } else {
        int64_t cells;
        if (__builtin_mul_overflow((int64_t)v[0], (int64_t)v[1], &cells))
            return sr_error(SR_ERROR_OVERFLOW, "%s: a %lld x %lld array overflows", p->path, v[0], v[1]);
        if (p->header.symmetry == SR_MM_SYMMETRIC)
            cells = v[0] * (v[0] + 1) / 2;
        else if (p->header.symmetry == SR_MM_SKEW_SYMMETRIC)
            cells = v[0] * (v[0] - 1) / 2;
        p->header.stored_entries = cells;
    }
    if (p->header.symmetry != SR_MM_GENERAL && v[0] != v[1])
        return parse_error(p, "a symmetric matrix must be square, not %s", t[0]);
    return SR_SUCCESS;
}

static sr_status grow(parser *p, int64_t need)
{
    if (need <= p->capacity)
        return SR_SUCCESS;
    int64_t cap = p->capacity ? p->capacity : 1024;
    while (cap < need)
        cap *= 2;
    sr_mm_triplets *o = p->out;
    size_t vsize = sr_value_size(p->type);
    void *rows = sr_realloc(o->rows, (size_t)cap * sizeof *o->rows);
    if (rows) o->rows = rows;
    void *cols = sr_realloc(o->cols, (size_t)cap * sizeof *o->cols);
    if (cols) o->cols = cols;
    void *lines = sr_realloc(o->lines, (size_t)cap * sizeof *o->lines);
    if (lines) o->lines = lines;
    void *vals = vsize ? sr_realloc(o->values, (size_t)cap * vsize) : NULL;
    if (vals) o->values = vals;
    if (!rows || !cols || !lines || (vsize && !vals))
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "%s: out of host memory for %lld entries", p->path, (long long)cap);
    p->capacity = cap;
    return SR_SUCCESS;
}

/* Converts one value token to the target type, honouring the declared range. */
static sr_status store_value(parser *p, const char *token, int64_t at)
{
    double v;
    long long iv = 0;
    if (p->integer) {
        if (!parse_int(token, &iv))
            return parse_error(p, "'%s' is not an integer", token);
        v = (double)iv;
    } else if (!parse_real(token, &v)) {
        return parse_error(p, "'%s' is not a number", token);
    }
    if (p->declared) {
        if (!(v >= p->declared->lo && v <= p->declared->hi) && !isnan(v))
            return parse_error(p, "value %s is outside the range of the declared GraphBLAS type", token);
        if (p->declared->integral && v != floor(v))
            return parse_error(p, "value %s is not an integer, as the declared GraphBLAS type requires", token);
    }
    switch (p->type) {
    case SR_TYPE_BOOL: break; /* the pattern is kept, values dropped */
    case SR_TYPE_INT32:
        if (p->integer ? (iv < INT32_MIN || iv > INT32_MAX) : !(v == floor(v) && fabs(v) <= 2147483647.0))
            return parse_error(p, "value %s does not fit int32 (read the file as float64)", token);
        ((int32_t *)p->out->values)[at] = p->integer ? (int32_t)iv : (int32_t)v;
        break;
    case SR_TYPE_FLOAT32: ((float *)p->out->values)[at] = (float)v; break;
    case SR_TYPE_FLOAT64: ((double *)p->out->values)[at] = p->integer ? (double)iv : v; break;
    }
    return SR_SUCCESS;
}

/* Appends (i, j) = value; for symmetric files also (j, i), negated when skew. */
static sr_status append(parser *p, int64_t i, int64_t j, const char *value)
{
    sr_mm_triplets *o = p->out;
    bool mirror = p->header.symmetry != SR_MM_GENERAL && i != j;
    if (p->header.symmetry == SR_MM_SKEW_SYMMETRIC && i == j)
        return parse_error(p, "%s", "a skew-symmetric matrix stores no diagonal entries");
    SR_TRY(grow(p, o->count + 1 + mirror));
    int64_t at = o->count;
    o->rows[at] = i;
    o->cols[at] = (int32_t)j;
    o->lines[at] = sr_line_reader_line(p->reader);
    if (value)
        SR_TRY(store_value(p, value, at));
    else if (p->type != SR_TYPE_BOOL)
        SR_TRY(store_value(p, p->integer ? "1" : "1.0", at)); /* a pattern entry read as numbers is a 1 */
    o->count++;
    if (mirror) {
        o->rows[at + 1] = j;
        o->cols[at + 1] = (int32_t)i;
        o->lines[at + 1] = o->lines[at];
        size_t vsize = sr_value_size(p->type);
        if (vsize)
            memcpy((char *)o->values + (at + 1) * vsize, (char *)o->values + at * vsize, vsize);
        if (p->header.symmetry == SR_MM_SKEW_SYMMETRIC) {
            switch (p->type) {
            case SR_TYPE_INT32: ((int32_t *)o->values)[at + 1] *= -1; break;
            case SR_TYPE_FLOAT32: ((float *)o->values)[at + 1] *= -1; break;
            case SR_TYPE_FLOAT64: ((double *)o->values)[at + 1] *= -1; break;
            case SR_TYPE_BOOL: break;
            }
        }
        o->count++;
    }
    return SR_SUCCESS;
}

static sr_status parse_coordinate_entry(parser *p, char *line)
{
    char *t[4];
    int want = p->pattern ? 2 : 3;
    int n = split(line, t, 3);
    if (n != want) {
        char detail[96];
        snprintf(detail, sizeof detail, "expected %d numbers (row, column%s), found %s%d", want,
                 p->pattern ? "" : ", value", n > 3 ? "more than " : "", n > 3 ? 3 : n);
        return parse_error(p, "%s", detail);
    }
    long long i, j;
    if (!parse_int(t[0], &i))
        return parse_error(p, "row index '%s' is not an integer", t[0]);
    if (!parse_int(t[1], &j))
        return parse_error(p, "column index '%s' is not an integer", t[1]);
    if (i < 1 || i > p->header.nrows || j < 1 || j > p->header.ncols) {
        char detail[160];
        snprintf(detail, sizeof detail, "entry (%lld, %lld) is outside the %lld x %lld matrix (indices are 1-based)",
                 i, j, (long long)p->header.nrows, (long long)p->header.ncols);
        return parse_error(p, "%s", detail);
    }
    return append(p, i - 1, j - 1, p->pattern ? NULL : t[2]);
}

/* Array files list values column by column (lower triangle only when symmetric). */
static sr_status parse_array_entry(parser *p, char *line, int64_t index)
{
    char *t[2];
    int n = split(line, t, 1);
    if (n != 1)
        return parse_error(p, "%s", "expected one value per line in an array file");
    int64_t i, j;
    if (p->header.symmetry == SR_MM_GENERAL) {
        i = index % p->header.nrows;
        j = index / p->header.nrows;
    } else {
        /* column j holds rows j..n-1 (j+1..n-1 when skew) */
        int64_t skip = p->header.symmetry == SR_MM_SKEW_SYMMETRIC, rest = index, len;
        for (j = 0; rest >= (len = p->header.nrows - j - skip); j++)
            rest -= len;
        i = j + skip + rest;
    }
    double v;
    long long iv;
    bool zero = p->integer ? (parse_int(t[0], &iv) && iv == 0) : (parse_real(t[0], &v) && v == 0.0);
    if (zero)
        return SR_SUCCESS; /* a sparse matrix keeps the nonzeros */
    return append(p, i, j, t[0]);
}

static sr_status parse_body(parser *p)
{
    sr_status s;
    char *line;
    while ((line = sr_line_reader_next(p->reader, &s)) != NULL) {
        if (sr_line_reader_line(p->reader) == 1) {
            SR_TRY(parse_banner(p, line));
            continue;
        }
        if (line[0] == '%') {
            SR_TRY(parse_comment(p, line));
            continue;
        }
        if (!blank(line))
            break;
    }
    SR_TRY(s);
    if (sr_line_reader_line(p->reader) == 0)
        return sr_error(SR_ERROR_PARSE, "%s: the file is empty", p->path);
    if (line == NULL)
        return sr_error(SR_ERROR_PARSE, "%s: the file ends before the size line", p->path);
    SR_TRY(parse_size(p, line));
    /* The target type: the caller's, else the declared GraphBLAS type where it maps exactly, else the field's. */
    if (p->header_only)
        return SR_SUCCESS;
    if (p->requested >= 0)
        p->type = (sr_type)p->requested;
    else
        p->type = p->declared && p->declared->exact_type >= 0 ? (sr_type)p->declared->exact_type : p->header.type;
    p->out->type = p->type;
    if (p->header.symmetry == SR_MM_SKEW_SYMMETRIC && p->type == SR_TYPE_BOOL)
        return sr_error(SR_ERROR_INVALID_ARGUMENT, "%s: a skew-symmetric matrix cannot be read as bool", p->path);
    if (p->declared && p->declared->lo >= 0 && p->header.symmetry == SR_MM_SKEW_SYMMETRIC)
        return parse_error(p, "%s", "a skew-symmetric matrix cannot have an unsigned GraphBLAS type");

    int64_t expected = p->header.stored_entries, seen = 0;
    if (p->header.coordinate)
        SR_TRY(grow(p, expected < ((int64_t)1 << 26) ? expected : ((int64_t)1 << 26)));
    while ((line = sr_line_reader_next(p->reader, &s)) != NULL) {
        if (blank(line) || line[0] == '%')
            continue;
        if (seen == expected)
            return sr_error(SR_ERROR_PARSE, "%s:%lld: more entries than the %lld the size line declares", p->path,
                            (long long)sr_line_reader_line(p->reader), (long long)expected);
        SR_TRY(p->header.coordinate ? parse_coordinate_entry(p, line) : parse_array_entry(p, line, seen));
        seen++;
    }
    SR_TRY(s);
    if (seen < expected)
        return sr_error(SR_ERROR_PARSE, "%s: the file ends after %lld of the %lld entries its size line declares",
                        p->path, (long long)seen, (long long)expected);
    return SR_SUCCESS;
}

sr_status sr_mm_parse(const char *path, int type, sr_mm_triplets *out)
{
    if (type != -1 && !sr_type_valid(type))
        return sr_error(SR_ERROR_INVALID_ARGUMENT, "sr_matrix_read_mm: unknown type %d (use -1 for the file's)", type);
    memset(out, 0, sizeof *out);
    parser p;
    memset(&p, 0, sizeof p);
    p.path = path;
    p.out = out;
    p.requested = type;
    SR_TRY(sr_line_reader_open(path, &p.reader));
    sr_status s = parse_body(&p);
    sr_line_reader_close(p.reader);
    out->header = p.header;
    if (s != SR_SUCCESS)
        sr_mm_triplets_free(out);
    return s;
}

void sr_mm_triplets_free(sr_mm_triplets *t)
{
    free(t->rows);
    free(t->cols);
    free(t->values);
    free(t->lines);
    t->rows = NULL;
    t->cols = NULL;
    t->values = NULL;
    t->lines = NULL;
    t->count = 0;
}

sr_status sr_mm_read_header(const char *path, sr_mm_header *header)
{
    SR_CHECK_ARG(path != NULL && header != NULL, "sr_mm_read_header: NULL argument");
    sr_mm_triplets unused;
    memset(&unused, 0, sizeof unused);
    parser p;
    memset(&p, 0, sizeof p);
    p.path = path;
    p.out = &unused;
    p.requested = -1;
    p.header_only = true;
    SR_TRY(sr_line_reader_open(path, &p.reader));
    sr_status s = parse_body(&p);
    sr_line_reader_close(p.reader);
    if (s == SR_SUCCESS)
        *header = p.header;
    return s;
}
