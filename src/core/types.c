#include "types.h"

size_t sr_type_size(sr_type type)
{
    switch (type) {
    case SR_TYPE_BOOL: return 1;
    case SR_TYPE_INT32: return 4;
    case SR_TYPE_FLOAT32: return 4;
    case SR_TYPE_FLOAT64: return 8;
    }
    return 0;
}

const char *sr_type_name(sr_type type)
{
    switch (type) {
    case SR_TYPE_BOOL: return "bool";
    case SR_TYPE_INT32: return "int32";
    case SR_TYPE_FLOAT32: return "float32";
    case SR_TYPE_FLOAT64: return "float64";
    }
    return "unknown";
}

bool sr_type_valid(int type) { return type >= SR_TYPE_BOOL && type <= SR_TYPE_FLOAT64; }

size_t sr_value_size(sr_type type) { return type == SR_TYPE_BOOL ? 0 : sr_type_size(type); }

double sr_value_get(const void *values, sr_type type, int64_t k)
{
    switch (type) {
    case SR_TYPE_BOOL: return values ? (double)((const uint8_t *)values)[k] : 1.0;
    case SR_TYPE_INT32: return (double)((const int32_t *)values)[k];
    case SR_TYPE_FLOAT32: return (double)((const float *)values)[k];
    case SR_TYPE_FLOAT64: return ((const double *)values)[k];
    }
    return 0.0;
}

bool sr_checked_mul(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a)
        return false;
    *out = a * b;
    return true;
}
