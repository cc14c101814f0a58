#include "semiring.h"

#include "../core/error.h"
#include "../core/types.h"
#include "user.h"

bool sr_semiring_valid(int s) { return s >= SR_PLUS_TIMES && s <= SR_ANY_PAIR; }

const char *sr_semiring_name(sr_semiring s)
{
    static const char *names[] = {"plus_times", "min_plus", "max_plus", "max_times", "min_times",
                                  "max_min",    "or_and",   "plus_pair", "any_pair"};
    const sr_user_semiring *u = sr_user_semiring_of((int)s);
    return sr_semiring_valid(s) ? names[s] : u ? u->def.name : "unknown";
}

sr_add_op sr_semiring_add_op(sr_semiring s)
{
    switch (s) {
    case SR_MIN_PLUS:
    case SR_MIN_TIMES: return SR_ADD_OP_MIN;
    case SR_MAX_PLUS:
    case SR_MAX_TIMES:
    case SR_MAX_MIN: return SR_ADD_OP_MAX;
    case SR_OR_AND:
    case SR_ANY_PAIR: return SR_ADD_OP_OR;
    default: return SR_ADD_OP_PLUS;
    }
}

sr_mul_op sr_semiring_mul_op(sr_semiring s)
{
    switch (s) {
    case SR_MIN_PLUS:
    case SR_MAX_PLUS: return SR_MUL_OP_PLUS;
    case SR_MAX_MIN: return SR_MUL_OP_MIN;
    case SR_OR_AND: return SR_MUL_OP_AND;
    case SR_PLUS_PAIR:
    case SR_ANY_PAIR: return SR_MUL_OP_PAIR;
    default: return SR_MUL_OP_TIMES;
    }
}

sr_status sr_semiring_output_type(sr_semiring s, sr_type input, sr_type *output)
{
    const sr_user_semiring *u = sr_user_semiring_of((int)s);
    SR_CHECK_ARG(sr_semiring_valid(s) || u, "unknown semiring %d", (int)s);
    SR_CHECK_ARG(input >= SR_TYPE_BOOL && input <= SR_TYPE_FLOAT64, "unknown type %d", (int)input);
    SR_CHECK_ARG(output != NULL, "sr_semiring_output_type: the output pointer is NULL");
    if (u) { /* one type in and out */
        SR_CHECK_ARG(input == u->def.type, "the semiring '%s' is defined on %s values, not %s (sr_matrix_cast "
                     "converts)", u->def.name, sr_type_name(u->def.type), sr_type_name(input));
        *output = input;
        return SR_SUCCESS;
    }
    switch (s) {
    case SR_OR_AND:
        if (input != SR_TYPE_BOOL)
            return sr_error(SR_ERROR_INVALID_ARGUMENT, "or_and needs bool matrices, not %s (use plus_times or "
                                                       "cast to bool)", sr_type_name(input));
        *output = SR_TYPE_BOOL;
        return SR_SUCCESS;
    case SR_ANY_PAIR: *output = SR_TYPE_BOOL; return SR_SUCCESS;
    case SR_PLUS_PAIR: *output = input == SR_TYPE_BOOL ? SR_TYPE_INT32 : input; return SR_SUCCESS;
    default:
        if (input == SR_TYPE_BOOL)
            return sr_error(SR_ERROR_INVALID_ARGUMENT, "%s is not defined for bool; use or_and (or cast to a "
                                                       "numeric type)", sr_semiring_name(s));
        *output = input;
        return SR_SUCCESS;
    }
}
