#include "memory.h"
#include "line_reader.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

#ifdef SR_HAVE_ZLIB
#include <zlib.h>
#endif

#define SR_CHUNK ((size_t)1 << 20)

struct sr_line_reader {
#ifdef SR_HAVE_ZLIB
    gzFile gz; /* reads plain files too */
#else
    FILE *file;
#endif
    const char *path;
    char *buffer;
    size_t capacity, start, end; /* unread bytes are buffer[start, end) */
    bool eof;
    int64_t line;
};

sr_status sr_line_reader_open(const char *path, sr_line_reader **out)
{
    sr_line_reader *r = sr_calloc(1, sizeof *r);
    if (r == NULL)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory opening %s", path);
    r->path = path;
    r->capacity = SR_CHUNK;
    r->buffer = sr_malloc(r->capacity + 1);
#ifdef SR_HAVE_ZLIB
    r->gz = gzopen(path, "rb");
    bool opened = r->gz != NULL;
    if (opened)
        gzbuffer(r->gz, 1 << 18);
#else
    r->file = fopen(path, "rb");
    bool opened = r->file != NULL;
#endif
    if (!opened || r->buffer == NULL) {
        int err = errno;
        sr_line_reader_close(r);
        if (!opened)
            return sr_error(SR_ERROR_IO, "cannot open %s: %s", path, strerror(err));
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory opening %s", path);
    }
#ifndef SR_HAVE_ZLIB
    unsigned char magic[2] = {0, 0};
    if (fread(magic, 1, 2, r->file) == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
        sr_line_reader_close(r);
        return sr_error(SR_ERROR_UNSUPPORTED, "%s is gzip-compressed, but sparsering was built without zlib", path);
    }
    rewind(r->file);
#endif
    *out = r;
    return SR_SUCCESS;
}

/* Moves unread bytes to the front, grows the buffer if it is full, and reads more. */
static sr_status refill(sr_line_reader *r)
{
    memmove(r->buffer, r->buffer + r->start, r->end - r->start);
    r->end -= r->start;
    r->start = 0;
    if (r->end == r->capacity) {
        char *bigger = sr_realloc(r->buffer, 2 * r->capacity + 1);
        if (bigger == NULL)
            return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for a line of %s", r->path);
        r->buffer = bigger;
        r->capacity *= 2;
    }
#ifdef SR_HAVE_ZLIB
    int n = gzread(r->gz, r->buffer + r->end, (unsigned)(r->capacity - r->end));
    if (n < 0) {
        int code;
        const char *msg = gzerror(r->gz, &code);
        return sr_error(SR_ERROR_IO, "cannot read %s: %s", r->path, msg);
    }
#else
    size_t n = fread(r->buffer + r->end, 1, r->capacity - r->end, r->file);
    if (n == 0 && ferror(r->file))
        return sr_error(SR_ERROR_IO, "cannot read %s: %s", r->path, strerror(errno));
#endif
    if (n == 0)
        r->eof = true;
    r->end += (size_t)n;
    return SR_SUCCESS;
}

char *sr_line_reader_next(sr_line_reader *r, sr_status *status)
{
    *status = SR_SUCCESS;
    size_t scanned = r->start;
    for (;;) {
        char *nl = memchr(r->buffer + scanned, '\n', r->end - scanned);
        if (nl != NULL || (r->eof && r->end > r->start)) {
            char *line = r->buffer + r->start;
            size_t len = nl ? (size_t)(nl - line) : r->end - r->start;
            r->start += nl ? len + 1 : len;
            if (len > 0 && line[len - 1] == '\r')
                len--;
            line[len] = '\0'; /* buffer has one spare byte past capacity for a last line with no newline */
            r->line++;
            return line;
        }
        if (r->eof)
            return NULL;
        size_t offset = r->end - r->start;
        if ((*status = refill(r)) != SR_SUCCESS)
            return NULL;
        scanned = offset; /* relative to the moved data */
    }
}

int64_t sr_line_reader_line(const sr_line_reader *r) { return r->line; }

void sr_line_reader_close(sr_line_reader *r)
{
    if (r == NULL)
        return;
#ifdef SR_HAVE_ZLIB
    if (r->gz)
        gzclose(r->gz);
#else
    if (r->file)
        fclose(r->file);
#endif
    free(r->buffer);
    free(r);
}
