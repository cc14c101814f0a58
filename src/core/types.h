/* Small helpers on sr_type and sizes shared by core and the CPU backend. */
#ifndef SR_CORE_TYPES_H
#define SR_CORE_TYPES_H

#include "sparsering.h"

#ifdef __cplusplus
extern "C" {
#endif

bool sr_type_valid(int type);
/* Bytes per stored value in a matrix: 0 for bool, which stores none. */
size_t sr_value_size(sr_type type);
/* Element k of a value array (bool arrays are uint8_t; NULL bool values read as 1). */
double sr_value_get(const void *values, sr_type type, int64_t k);
/* a*b without overflow; false when it would overflow. */
bool sr_checked_mul(size_t a, size_t b, size_t *out);

#ifdef __cplusplus
}
#endif

#endif
