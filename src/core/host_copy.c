/* Large host copies over a few threads (src/core/memory.h). */
#include <omp.h>
#include <string.h>

#include "memory.h"

/* One core moves about 8-12 GB/s; the staging of host arrays for a GPU
 * (src/cuda/device_memory.cu) needs the link's 25-50. Beyond 8 threads the memory bus, not the
 * cores, is the limit. */
enum { kCopyThreadsMax = 8 };
static const size_t kPerThreadMin = (size_t)1 << 20;

int sr_host_copy_threads(void)
{
    const int procs = omp_get_num_procs();
    return procs < kCopyThreadsMax ? procs : kCopyThreadsMax;
}

void sr_host_copy(void *dst, const void *src, size_t bytes, int threads)
{
    if (threads > (int)(bytes / kPerThreadMin))
        threads = (int)(bytes / kPerThreadMin);
    if (threads <= 1) { /* small copies (most of sr_mem_copy's) stop here, before asking for the cores */
        memcpy(dst, src, bytes);
        return;
    }
    const int most = sr_host_copy_threads(); /* a system call (the affinity mask): only for large copies */
    threads = threads < most ? threads : most;
    const size_t piece = (bytes / (size_t)threads + 4095) & ~(size_t)4095; /* whole pages a thread */
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int t = 0; t < threads; t++) {
        const size_t from = (size_t)t * piece;
        if (from < bytes)
            memcpy((char *)dst + from, (const char *)src + from, bytes - from < piece ? bytes - from : piece);
    }
}
