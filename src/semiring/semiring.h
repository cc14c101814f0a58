/* The one definition of the built-in semirings, shared by the CPU backend (stamped with C
 * macros) and the CUDA backend (templates over the same expressions). Usable from C and .cu.
 *
 * A semiring is an additive monoid (⊕ with its identity) and a multiplicative operator ⊗.
 * Values are of one C type T per kernel: int32_t, float, double, or uint8_t for bool. */
#ifndef SR_SEMIRING_H
#define SR_SEMIRING_H

#include <math.h>
#include <stdint.h>

#include "sparsering.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ⊕ monoids. min/max omit NaN (like fmin/fmax): NaN results only when both sides are NaN. */
#define SR_ADD_PLUS(a, b) ((a) + (b))
#define SR_ADD_MIN(a, b) (((b) < (a) || (a) != (a)) ? (b) : (a))
#define SR_ADD_MAX(a, b) (((b) > (a) || (a) != (a)) ? (b) : (a))
#define SR_ADD_OR(a, b) ((a) || (b))

/* ⊕ identities by monoid and T (token-pasted: SR_ID_MIN_float). */
#define SR_ID_PLUS_int32_t 0
#define SR_ID_PLUS_float 0.0f
#define SR_ID_PLUS_double 0.0
#define SR_ID_MIN_int32_t INT32_MAX
#define SR_ID_MIN_float INFINITY
#define SR_ID_MIN_double ((double)INFINITY)
#define SR_ID_MAX_int32_t INT32_MIN
#define SR_ID_MAX_float (-INFINITY)
#define SR_ID_MAX_double ((double)-INFINITY)
#define SR_ID_OR_uint8_t 0

/* ⊗ operators. PAIR ignores its operands: no value needs reading. */
#define SR_MUL_TIMES(a, b) ((a) * (b))
#define SR_MUL_PLUS(a, b) ((a) + (b))
#define SR_MUL_MIN(a, b) SR_ADD_MIN(a, b)
#define SR_MUL_AND(a, b) ((a) && (b))
#define SR_MUL_PAIR(a, b) 1

/* Every (semiring, T) pair the backends instantiate: X(semiring, ADD, MUL, T, output sr_type).
 * T is the output type; for PAIR semirings the inputs' values are never read, so their input
 * type does not matter (bool input to plus_pair gives int32). */
#define SR_FOR_EACH_SEMIRING_KERNEL(X)                                                                   \
    X(SR_PLUS_TIMES, PLUS, TIMES, int32_t, SR_TYPE_INT32)                                              \
    X(SR_PLUS_TIMES, PLUS, TIMES, float, SR_TYPE_FLOAT32)                                              \
    X(SR_PLUS_TIMES, PLUS, TIMES, double, SR_TYPE_FLOAT64)                                             \
    X(SR_MIN_PLUS, MIN, PLUS, int32_t, SR_TYPE_INT32)                                                  \
    X(SR_MIN_PLUS, MIN, PLUS, float, SR_TYPE_FLOAT32)                                                  \
    X(SR_MIN_PLUS, MIN, PLUS, double, SR_TYPE_FLOAT64)                                                 \
    X(SR_MAX_PLUS, MAX, PLUS, int32_t, SR_TYPE_INT32)                                                  \
    X(SR_MAX_PLUS, MAX, PLUS, float, SR_TYPE_FLOAT32)                                                  \
    X(SR_MAX_PLUS, MAX, PLUS, double, SR_TYPE_FLOAT64)                                                 \
    X(SR_MAX_TIMES, MAX, TIMES, int32_t, SR_TYPE_INT32)                                                \
    X(SR_MAX_TIMES, MAX, TIMES, float, SR_TYPE_FLOAT32)                                                \
    X(SR_MAX_TIMES, MAX, TIMES, double, SR_TYPE_FLOAT64)                                               \
    X(SR_MIN_TIMES, MIN, TIMES, int32_t, SR_TYPE_INT32)                                                \
    X(SR_MIN_TIMES, MIN, TIMES, float, SR_TYPE_FLOAT32)                                                \
    X(SR_MIN_TIMES, MIN, TIMES, double, SR_TYPE_FLOAT64)                                               \
    X(SR_MAX_MIN, MAX, MIN, int32_t, SR_TYPE_INT32)                                                    \
    X(SR_MAX_MIN, MAX, MIN, float, SR_TYPE_FLOAT32)                                                    \
    X(SR_MAX_MIN, MAX, MIN, double, SR_TYPE_FLOAT64)                                                   \
    X(SR_OR_AND, OR, AND, uint8_t, SR_TYPE_BOOL)                                                       \
    X(SR_PLUS_PAIR, PLUS, PAIR, int32_t, SR_TYPE_INT32)                                                \
    X(SR_PLUS_PAIR, PLUS, PAIR, float, SR_TYPE_FLOAT32)                                                \
    X(SR_PLUS_PAIR, PLUS, PAIR, double, SR_TYPE_FLOAT64)                                               \
    X(SR_ANY_PAIR, OR, PAIR, uint8_t, SR_TYPE_BOOL)

/* The ⊕ monoid of a semiring, for element-wise combination (accumulate). */
typedef enum sr_add_op { SR_ADD_OP_PLUS, SR_ADD_OP_MIN, SR_ADD_OP_MAX, SR_ADD_OP_OR } sr_add_op;
sr_add_op sr_semiring_add_op(sr_semiring s);
/* The ⊗ operator of a semiring, for element-wise multiplication. */
typedef enum sr_mul_op { SR_MUL_OP_TIMES, SR_MUL_OP_PLUS, SR_MUL_OP_MIN, SR_MUL_OP_AND, SR_MUL_OP_PAIR } sr_mul_op;
sr_mul_op sr_semiring_mul_op(sr_semiring s);
/* How an element-wise operation merges two rows: the union of their entries, the intersection,
 * or the left operand's entries alone (to apply a mask). */
typedef enum sr_merge { SR_MERGE_UNION, SR_MERGE_INTERSECT, SR_MERGE_LEFT } sr_merge;
/* How a bit-packed product writes its output (sr_mxm_bits's descriptor). */
typedef struct sr_bits_update {
    bool complement, replace, accumulate;
} sr_bits_update;
bool sr_semiring_valid(int s);

#ifdef __cplusplus
}
#endif

#endif
