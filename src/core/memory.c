#include "memory.h"

#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

#include "device_api.h"
#include "error.h"
#include "types.h"

static void account_device_bytes(struct sr_context_s *ctx, size_t bytes)
{
    size_t now = __atomic_add_fetch(&ctx->device_bytes, bytes, __ATOMIC_RELAXED);
    size_t peak = __atomic_load_n(&ctx->device_peak, __ATOMIC_RELAXED);
    while (now > peak &&
           !__atomic_compare_exchange_n(&ctx->device_peak, &peak, now, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

/* sr_debug_fail_allocations: allocations left before they fail (-1: never), and whether one failed. */
static long long allocations_left = -1;
static int allocation_failed;

bool sr_debug_fail_allocations(long long n)
{
    const bool failed = __atomic_exchange_n(&allocation_failed, 0, __ATOMIC_RELAXED) != 0;
    __atomic_store_n(&allocations_left, n < 0 ? -1 : n, __ATOMIC_RELAXED);
    return failed;
}

/* Whether this allocation is one a test made fail. */
static bool injected_failure(void)
{
    long long left = __atomic_load_n(&allocations_left, __ATOMIC_RELAXED);
    while (left > 0 &&
           !__atomic_compare_exchange_n(&allocations_left, &left, left - 1, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    if (left != 0)
        return false;
    __atomic_store_n(&allocation_failed, 1, __ATOMIC_RELAXED);
    return true;
}

void *sr_malloc(size_t bytes)
{
    return injected_failure() ? NULL : malloc(bytes);
}

void *sr_calloc(size_t n, size_t size)
{
    return injected_failure() ? NULL : calloc(n, size);
}

void *sr_realloc(void *ptr, size_t bytes)
{
    return injected_failure() ? NULL : realloc(ptr, bytes);
}

/* Large host blocks start on a 2 MiB boundary and ask for transparent huge pages: the first touch
 * of fresh memory then faults once per 2 MiB instead of once per 4 KiB (a 33 MB temporary cost
 * 8,000 faults, several milliseconds, on every call that made it). free() releases either kind. */
#define HUGE_PAGE ((size_t)2 << 20)
static void *host_alloc(size_t bytes)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (bytes >= 4 * HUGE_PAGE) {
        void *p = NULL;
        if (posix_memalign(&p, HUGE_PAGE, bytes) != 0)
            return NULL;
        madvise(p, bytes, MADV_HUGEPAGE); /* advice only: without huge pages the block still works */
        return p;
    }
#endif
    return malloc(bytes);
}

sr_status sr_mem_alloc(struct sr_context_s *ctx, sr_location where, size_t bytes, void **ptr)
{
    *ptr = NULL;
    if (bytes == 0)
        return SR_SUCCESS;
    if (where == SR_HOST) {
        if (ctx && ctx->host_limit && bytes > ctx->host_limit)
            return sr_error(SR_ERROR_OUT_OF_MEMORY,
                            "allocating %zu bytes (%.2f GiB) would pass the context's host memory limit of %zu bytes",
                            bytes, (double)bytes / 1073741824.0, ctx->host_limit);
        *ptr = injected_failure() ? NULL : host_alloc(bytes);
        if (*ptr == NULL)
            return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory allocating %zu bytes", bytes);
        return SR_SUCCESS;
    }
    SR_TRY(sr_context_require_device(ctx));
    if (injected_failure())
        return sr_error(SR_ERROR_DEVICE_OUT_OF_MEMORY, "out of device memory allocating %zu bytes (injected)", bytes);
    SR_TRY(sr_device_malloc(ctx->device, ctx->stream, bytes, ptr));
    account_device_bytes(ctx, bytes);
    return SR_SUCCESS;
}

sr_status sr_mem_check_proportion(const struct sr_context_s *ctx, double index_bytes, double entry_bytes,
                                  const char *what)
{
    const double floor = 1073741824.0, allowed = ctx && ctx->host_limit ? (double)ctx->host_limit
                                                  : (16 * entry_bytes > floor ? 16 * entry_bytes : floor);
    if (index_bytes + entry_bytes <= allowed)
        return SR_SUCCESS;
    return sr_error(SR_ERROR_OUT_OF_MEMORY,
                    "%s would need %.0f bytes (%.2f GiB) for %.0f bytes of entries: more than %s; a host memory "
                    "limit of at least %.0f bytes (sr_context_options.host_memory_limit, the CLI's --host-memory) "
                    "allows it",
                    what, index_bytes + entry_bytes, (index_bytes + entry_bytes) / 1073741824.0, entry_bytes,
                    ctx && ctx->host_limit ? "the context's host memory limit" : "1 GiB and 16 times the entries",
                    index_bytes + entry_bytes);
}

sr_status sr_mem_alloc_array(struct sr_context_s *ctx, sr_location where, size_t n, size_t size, void **ptr)
{
    size_t bytes;
    if (!sr_checked_mul(n, size, &bytes)) {
        *ptr = NULL;
        return sr_error(SR_ERROR_OVERFLOW, "an array of %zu elements of %zu bytes overflows size_t", n, size);
    }
    return sr_mem_alloc(ctx, where, bytes, ptr);
}

void sr_mem_free(struct sr_context_s *ctx, sr_location where, void *ptr, size_t bytes)
{
    if (ptr == NULL)
        return;
    if (where == SR_HOST) {
        free(ptr);
        return;
    }
    sr_device_free(ctx->device, ctx->stream, ptr);
    __atomic_sub_fetch(&ctx->device_bytes, bytes, __ATOMIC_RELAXED);
}

sr_status sr_mem_copy(struct sr_context_s *ctx, void *dst, sr_location dst_loc, const void *src,
                      sr_location src_loc, size_t bytes)
{
    if (bytes == 0)
        return SR_SUCCESS;
    if (dst_loc == SR_HOST && src_loc == SR_HOST) { /* large copies (a matrix's arrays) over the context's threads */
        sr_host_copy(dst, src, bytes, ctx ? sr_context_threads(ctx) : 1);
        return SR_SUCCESS;
    }
    SR_TRY(sr_context_require_device(ctx));
    return sr_device_memcpy(ctx->device, ctx->stream, dst, dst_loc, src, src_loc, bytes);
}

sr_status sr_mem_copy_queued(struct sr_context_s *ctx, void *dst, sr_location dst_loc, const void *src,
                             sr_location src_loc, size_t bytes)
{
    if (bytes == 0 || dst_loc != SR_DEVICE || src_loc != SR_DEVICE)
        return sr_mem_copy(ctx, dst, dst_loc, src, src_loc, bytes);
    SR_TRY(sr_context_require_device(ctx));
    return sr_device_memcpy_queued(ctx->device, ctx->stream, dst, src, bytes);
}

sr_status sr_mem_copy2d(struct sr_context_s *ctx, void *dst, size_t dst_pitch, sr_location dst_loc,
                        const void *src, size_t src_pitch, sr_location src_loc, size_t width, size_t rows)
{
    if (width == 0 || rows == 0)
        return SR_SUCCESS;
    if (dst_loc == SR_HOST && src_loc == SR_HOST) {
        for (size_t r = 0; r < rows; r++)
            memcpy((char *)dst + r * dst_pitch, (const char *)src + r * src_pitch, width);
        return SR_SUCCESS;
    }
    SR_TRY(sr_context_require_device(ctx));
    return sr_device_memcpy2d(ctx->device, ctx->stream, dst, dst_pitch, dst_loc, src, src_pitch, src_loc, width,
                              rows);
}
