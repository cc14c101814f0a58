#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define SR_MESSAGE_CAPACITY 1024

static _Thread_local char sr_message[SR_MESSAGE_CAPACITY];

const char *sr_last_error(void) { return sr_message; }

static _Thread_local char sr_method[256];

const char *sr_last_method(void) { return sr_method; }

void sr_set_method(const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vsnprintf(sr_method, sizeof sr_method, fmt, args);
    va_end(args);
}

sr_status sr_error(sr_status status, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vsnprintf(sr_message, sizeof sr_message, fmt, args);
    va_end(args);
    return status;
}

sr_status sr_error_prefix(sr_status status, const char *fmt, ...)
{
    char prefix[SR_MESSAGE_CAPACITY];
    char previous[SR_MESSAGE_CAPACITY];
    va_list args;
    va_start(args, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, args);
    va_end(args);
    memcpy(previous, sr_message, sizeof previous);
    /* Truncation is acceptable: the message stays NUL-terminated. */
    size_t used = strlen(prefix);
    if (used > SR_MESSAGE_CAPACITY - 3)
        used = SR_MESSAGE_CAPACITY - 3;
    memcpy(sr_message, prefix, used);
    memcpy(sr_message + used, ": ", 2);
    size_t rest = strlen(previous);
    if (rest > SR_MESSAGE_CAPACITY - used - 3)
        rest = SR_MESSAGE_CAPACITY - used - 3;
    memcpy(sr_message + used + 2, previous, rest);
    sr_message[used + 2 + rest] = '\0';
    return status;
}

const char *sr_status_name(sr_status status)
{
    switch (status) {
    case SR_SUCCESS: return "SR_SUCCESS";
    case SR_ERROR_INVALID_ARGUMENT: return "SR_ERROR_INVALID_ARGUMENT";
    case SR_ERROR_INVALID_MATRIX: return "SR_ERROR_INVALID_MATRIX";
    case SR_ERROR_OVERFLOW: return "SR_ERROR_OVERFLOW";
    case SR_ERROR_OUT_OF_MEMORY: return "SR_ERROR_OUT_OF_MEMORY";
    case SR_ERROR_DEVICE_OUT_OF_MEMORY: return "SR_ERROR_DEVICE_OUT_OF_MEMORY";
    case SR_ERROR_NO_DEVICE: return "SR_ERROR_NO_DEVICE";
    case SR_ERROR_DEVICE: return "SR_ERROR_DEVICE";
    case SR_ERROR_IO: return "SR_ERROR_IO";
    case SR_ERROR_PARSE: return "SR_ERROR_PARSE";
    case SR_ERROR_UNSUPPORTED: return "SR_ERROR_UNSUPPORTED";
    case SR_ERROR_INTERNAL: return "SR_ERROR_INTERNAL";
    case SR_ERROR_CANCELLED: return "SR_ERROR_CANCELLED";
    }
    return "SR_ERROR_UNKNOWN";
}
