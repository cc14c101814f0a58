/* Allocation and copies in either location, with device memory accounted to the context. */
#ifndef SR_CORE_MEMORY_H
#define SR_CORE_MEMORY_H

#include <stdbool.h>
#include <stddef.h>

#include "context.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The library's malloc, calloc and realloc: the C library's, but for the failures a test asks for
 * (sr_debug_fail_allocations). Every host allocation goes through these or sr_mem_alloc. */
void *sr_malloc(size_t bytes);
void *sr_calloc(size_t n, size_t size);
void *sr_realloc(void *ptr, size_t bytes);

/* Tests only (GraphBLAS's malloc debugging): after `n` more allocations succeed, every host and
 * device allocation fails (sr_malloc and its kin return NULL, sr_mem_alloc SR_ERROR_OUT_OF_MEMORY)
 * until it is called again; n < 0 turns failures off. Returns whether an allocation failed since
 * the last call. Process-wide: not for tests that run threads of their own. */
bool sr_debug_fail_allocations(long long n);

/* bytes == 0 gives *ptr = NULL and succeeds. */
sr_status sr_mem_alloc(struct sr_context_s *ctx, sr_location where, size_t bytes, void **ptr);
/* A structure of `index_bytes` (row pointers and the like) for entries taking `entry_bytes`
 * (`what` says what, for the message) fits the context's rule: at most the host memory limit
 * when one is set, else at most the larger of 1 GiB and 16 times the entries. */
sr_status sr_mem_check_proportion(const struct sr_context_s *ctx, double index_bytes, double entry_bytes,
                                  const char *what);
/* Like sr_mem_alloc for n elements of `size` bytes, failing with SR_ERROR_OVERFLOW on overflow. */
sr_status sr_mem_alloc_array(struct sr_context_s *ctx, sr_location where, size_t n, size_t size, void **ptr);
void sr_mem_free(struct sr_context_s *ctx, sr_location where, void *ptr, size_t bytes);
/* Copies and waits; host-to-host is a memcpy (sr_host_copy over the context's threads). */
sr_status sr_mem_copy(struct sr_context_s *ctx, void *dst, sr_location dst_loc, const void *src,
                      sr_location src_loc, size_t bytes);
/* sr_mem_copy, except that a device-to-device copy is queued on the context's stream and not
 * waited for (sr_vector_copy between device vectors: the solvers' scalars). */
sr_status sr_mem_copy_queued(struct sr_context_s *ctx, void *dst, sr_location dst_loc, const void *src,
                             sr_location src_loc, size_t bytes);
/* memcpy split over at most `threads` threads: one a MiB at most, and at most
 * sr_host_copy_threads(); under 2 MiB a plain memcpy. */
void sr_host_copy(void *dst, const void *src, size_t bytes, int threads);
/* The threads sr_host_copy is worth giving: at most 8, at most the processors. */
int sr_host_copy_threads(void);
sr_status sr_mem_copy2d(struct sr_context_s *ctx, void *dst, size_t dst_pitch, sr_location dst_loc,
                        const void *src, size_t src_pitch, sr_location src_loc, size_t width, size_t rows);

#ifdef __cplusplus
}
#endif

#endif
