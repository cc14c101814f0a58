/* Chunked parallel loops that never wait for a thread that has not started.
 *
 * An OpenMP region ends at a barrier that every thread of its team must reach. When another
 * runtime's threads are spinning on every core (SuiteSparse:GraphBLAS's and scikit-learn's wheels
 * bring their own libgomp, whose idle threads spin for milliseconds after each call), a woken team
 * thread waits for a scheduler tick before it runs, and a 30 us SpMV took 8 ms
 * (bench/probes/small_calls_beside_graphblas.py). Here the caller takes chunks itself and returns
 * when every chunk has run: helpers that have not started by then are not waited for, so a call
 * costs at most what it costs on the calling thread alone. Chunks are claimed in any order by any
 * thread, so a chunk's result must not depend on which thread ran it. */
#ifndef SR_CPU_POOL_H
#define SR_CPU_POOL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* fn(arg, chunk, slot): slot is the running thread's place in [0, threads) (0 the caller); no two
 * threads run with the same slot at once, so per-slot scratch needs no locks. */
typedef void (*sr_cpu_chunk_fn)(void *arg, int64_t chunk, int slot);

/* Runs fn for every chunk in [0, chunks) on up to `threads` threads (the caller among them) and
 * returns when all have run. With one thread, one chunk, or the pool busy with another caller's
 * call (two threads of the program calling at once), the caller runs them all itself. */
void sr_cpu_run_chunks(int threads, int64_t chunks, sr_cpu_chunk_fn fn, void *arg);

#ifdef __cplusplus
}
#endif

#endif
