/* Thread-local error messages: every failing path sets one before returning its status. */
#ifndef SR_CORE_ERROR_H
#define SR_CORE_ERROR_H

#include "sparsering.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define SR_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define SR_PRINTF(a, b)
#endif

/* Sets the calling thread's message and returns status, so callers write
 * `return sr_error(SR_ERROR_..., "row %lld ...", ...);`. */
sr_status sr_error(sr_status status, const char *fmt, ...) SR_PRINTF(2, 3);

/* Sets the calling thread's description of the path its last k-NN took (sr_last_method). */
void sr_set_method(const char *fmt, ...) SR_PRINTF(1, 2);

/* Prefixes the current message with "context: " (e.g. the file and line being parsed). */
sr_status sr_error_prefix(sr_status status, const char *fmt, ...) SR_PRINTF(2, 3);

#define SR_TRY(expr)                       \
    do {                                   \
        sr_status sr_try_status_ = (expr); \
        if (sr_try_status_ != SR_SUCCESS)  \
            return sr_try_status_;         \
    } while (0)

#define SR_CHECK_ARG(cond, ...)                                            \
    do {                                                                   \
        if (!(cond))                                                       \
            return sr_error(SR_ERROR_INVALID_ARGUMENT, __VA_ARGS__);      \
    } while (0)

#ifdef __cplusplus
}
#endif

#endif
