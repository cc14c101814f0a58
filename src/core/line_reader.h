/* Reads a text file line by line, plain or gzip-compressed, in large chunks. */
#ifndef SR_CORE_LINE_READER_H
#define SR_CORE_LINE_READER_H

#include "sparsering.h"

typedef struct sr_line_reader sr_line_reader;

sr_status sr_line_reader_open(const char *path, sr_line_reader **reader);
/* The next line without its end-of-line characters, NUL-terminated, valid until the next call;
 * NULL at end of file (*status SR_SUCCESS) or on a read error (*status set). */
char *sr_line_reader_next(sr_line_reader *reader, sr_status *status);
/* 1-based number of the line last returned. */
int64_t sr_line_reader_line(const sr_line_reader *reader);
void sr_line_reader_close(sr_line_reader *reader);

#endif
