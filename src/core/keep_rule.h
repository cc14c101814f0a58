/* Which elements of a dense block become CSR entries: the nonzeros (sr_matrix_from_dense), or
 * those within a radius (sr_radius_neighbors), optionally leaving out each row's own column. */
#ifndef SR_CORE_KEEP_RULE_H
#define SR_CORE_KEEP_RULE_H

#include <stdint.h>

typedef enum sr_keep_kind {
    SR_KEEP_NONZERO = 0,  /* v != 0 (NaN is kept) */
    SR_KEEP_AT_MOST = 1,  /* v <= bound (distances) */
    SR_KEEP_AT_LEAST = 2  /* v >= bound (similarities) */
} sr_keep_kind;

typedef struct sr_keep_rule {
    sr_keep_kind kind;
    double bound;
    int64_t self_offset; /* row i leaves out column i + self_offset; SR_KEEP_NO_SELF: none */
} sr_keep_rule;

#define SR_KEEP_NO_SELF INT64_MIN

static inline sr_keep_rule sr_keep_nonzeros(void)
{
    sr_keep_rule r = {SR_KEEP_NONZERO, 0.0, SR_KEEP_NO_SELF};
    return r;
}

#endif
