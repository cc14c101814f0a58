/* Matrix Market parsing into triplets (the ops layer turns them into a matrix). */
#ifndef SR_CORE_MM_H
#define SR_CORE_MM_H

#include "sparsering.h"

typedef struct sr_mm_triplets {
    sr_mm_header header;
    sr_type type;     /* of values: the requested type, else the file's */
    int64_t count;    /* triplets after symmetric expansion (array files: the nonzeros) */
    int64_t *rows;    /* 0-based */
    int32_t *cols;
    void *values;     /* NULL for bool */
    int64_t *lines;   /* the file line of each triplet, for messages about duplicates */
} sr_mm_triplets;

/* type: an sr_type, or -1 for the file's own. On failure nothing is left allocated. */
sr_status sr_mm_parse(const char *path, int type, sr_mm_triplets *out);
void sr_mm_triplets_free(sr_mm_triplets *t);

#endif
