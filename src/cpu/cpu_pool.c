/* The helpers behind sr_cpu_run_chunks (cpu_pool.h): one process-wide set of threads, started on
 * first use, that spin a short while after each call (back-to-back calls find them awake) and then
 * sleep, so that they never hold cores for long beside other thread pools.
 *
 * A call is published as a generation number g; helpers claim chunks by a compare-and-swap on one
 * word holding (g, next chunk). The caller closes that word when every chunk has run and only then
 * writes the next call's fields, so a helper that read a stale call's fields cannot claim a chunk
 * with them: its swap expects g, and the word no longer holds it. */
#include "cpu_pool.h"

#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SR_PAUSE() _mm_pause()
#else
#define SR_PAUSE() ((void)0)
#endif

enum {
    MAX_HELPERS = 255,
    SPIN_NS = 200 * 1000, /* a helper's spin after its last chunk before it sleeps */
};
#define CLOSED UINT64_MAX /* the claim word between calls (no generation is 2^32 - 1) */

/* A helper asleep waits on its own condition, so that a call wakes only the helpers it uses. */
typedef struct {
    pthread_cond_t wake;
    bool asleep; /* under sleep_lock */
} helper_bed;

static struct {
    pthread_mutex_t busy; /* held by the caller of the call in flight */
    pthread_mutex_t sleep_lock;
    helper_bed bed[MAX_HELPERS + 1]; /* by slot */
    _Atomic uint32_t generation;
    _Atomic uint64_t claim; /* generation << 32 | the next chunk, or CLOSED */
    _Atomic int64_t done;   /* chunks run in this call */
    _Atomic int sleepers;
    _Atomic(sr_cpu_chunk_fn) fn;
    _Atomic(void *) arg;
    _Atomic int64_t chunks;
    _Atomic int width; /* slots taking part in this call: the caller and helpers 1 .. width - 1; helpers
                          past it neither spin nor wake for the call */
    int helpers;       /* started (under busy) */
} pool = {.busy = PTHREAD_MUTEX_INITIALIZER, .sleep_lock = PTHREAD_MUTEX_INITIALIZER, .claim = CLOSED};

static pthread_once_t fork_hook_once = PTHREAD_ONCE_INIT;

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Claims and runs the chunks of generation g until none is left. */
static void take_chunks(uint32_t g, int slot)
{
    const sr_cpu_chunk_fn fn = atomic_load_explicit(&pool.fn, memory_order_acquire);
    void *arg = atomic_load_explicit(&pool.arg, memory_order_acquire);
    const int64_t chunks = atomic_load_explicit(&pool.chunks, memory_order_acquire);
    uint64_t c = atomic_load_explicit(&pool.claim, memory_order_acquire);
    for (;;) {
        if ((uint32_t)(c >> 32) != g || (int64_t)(c & 0xffffffffu) >= chunks)
            return;
        if (!atomic_compare_exchange_weak_explicit(&pool.claim, &c, c + 1, memory_order_acq_rel,
                                                   memory_order_acquire))
            continue;
        fn(arg, (int64_t)(c & 0xffffffffu), slot);
        atomic_fetch_add_explicit(&pool.done, 1, memory_order_release);
        c = atomic_load_explicit(&pool.claim, memory_order_acquire);
    }
}

/* Whether a call newer than `seen` that uses this slot has been published (its generation then). */
static bool called(int slot, uint32_t seen, uint32_t *g)
{
    *g = atomic_load(&pool.generation);
    return *g != seen && slot < atomic_load(&pool.width);
}

static void *helper_main(void *p)
{
    const int slot = (int)(intptr_t)p;
    helper_bed *bed = &pool.bed[slot];
    uint32_t seen = atomic_load(&pool.generation), g;
    for (;;) { /* a spin first: back-to-back calls find the helper awake */
        bool go = called(slot, seen, &g);
        for (int64_t start = now_ns(), spins = 0; !go; go = called(slot, seen, &g)) {
            SR_PAUSE();
            if (++spins % 64 == 0) {
                if (now_ns() - start > SPIN_NS)
                    break;
                sched_yield(); /* a thread waiting for this core (the caller's, maybe) runs first */
            }
        }
        if (!go) { /* asleep until a call uses this slot (the sleepers count pairs with the caller's check) */
            pthread_mutex_lock(&pool.sleep_lock);
            bed->asleep = true;
            atomic_fetch_add(&pool.sleepers, 1);
            while (!called(slot, seen, &g))
                pthread_cond_wait(&bed->wake, &pool.sleep_lock);
            atomic_fetch_sub(&pool.sleepers, 1);
            bed->asleep = false;
            pthread_mutex_unlock(&pool.sleep_lock);
        }
        seen = g;
        take_chunks(g, slot);
    }
    return NULL;
}

/* In a child of fork() the helpers do not exist: start afresh. */
static void reset_after_fork(void)
{
    pthread_mutex_init(&pool.busy, NULL);
    pthread_mutex_init(&pool.sleep_lock, NULL);
    for (int slot = 0; slot <= MAX_HELPERS; slot++) {
        pthread_cond_init(&pool.bed[slot].wake, NULL);
        pool.bed[slot].asleep = false;
    }
    atomic_store(&pool.claim, CLOSED);
    atomic_store(&pool.sleepers, 0);
    pool.helpers = 0;
}

static void install_fork_hook(void)
{
    pthread_atfork(NULL, NULL, reset_after_fork);
}

/* Starts helpers up to `want` (under busy); returns how many there are. */
static int start_helpers(int want)
{
    pthread_once(&fork_hook_once, install_fork_hook);
    while (pool.helpers < want && pool.helpers < MAX_HELPERS) {
        pthread_cond_init(&pool.bed[pool.helpers + 1].wake, NULL);
        pthread_attr_t attr;
        pthread_t t;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        const int rc = pthread_create(&t, &attr, helper_main, (void *)(intptr_t)(pool.helpers + 1));
        pthread_attr_destroy(&attr);
        if (rc != 0)
            break;
        pool.helpers++;
    }
    return pool.helpers;
}

static void run_with_openmp(int threads, int64_t chunks, sr_cpu_chunk_fn fn, void *arg)
{
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (int64_t c = 0; c < chunks; c++)
        fn(arg, c, omp_get_thread_num());
}

/* SPARSERING_POOL=0 runs every call as an OpenMP loop instead (to compare the two). */
static bool pool_enabled(void)
{
    static atomic_int enabled = -1;
    int e = atomic_load_explicit(&enabled, memory_order_relaxed);
    if (e < 0) {
        const char *env = getenv("SPARSERING_POOL");
        e = !(env && strcmp(env, "0") == 0);
        atomic_store_explicit(&enabled, e, memory_order_relaxed);
    }
    return e;
}

void sr_cpu_run_chunks(int threads, int64_t chunks, sr_cpu_chunk_fn fn, void *arg)
{
    if (chunks <= 0)
        return;
    if (threads <= 1 || chunks == 1) {
        for (int64_t c = 0; c < chunks; c++)
            fn(arg, c, 0);
        return;
    }
    if (!pool_enabled() || chunks >= (int64_t)0xffffffffu || pthread_mutex_trylock(&pool.busy) != 0) {
        run_with_openmp(threads, chunks, fn, arg); /* another thread of the program is calling */
        return;
    }
    const int helpers = start_helpers(threads - 1), width = helpers + 1 < threads ? helpers + 1 : threads;
    uint32_t g = atomic_load_explicit(&pool.generation, memory_order_relaxed) + 1;
    if (g == 0xffffffffu)
        g = 0;
    atomic_store_explicit(&pool.done, 0, memory_order_relaxed);
    atomic_store_explicit(&pool.fn, fn, memory_order_release);
    atomic_store_explicit(&pool.arg, arg, memory_order_release);
    atomic_store_explicit(&pool.chunks, chunks, memory_order_release);
    atomic_store(&pool.width, width);
    atomic_store_explicit(&pool.claim, (uint64_t)g << 32, memory_order_release);
    atomic_store(&pool.generation, g); /* sequentially consistent with the sleepers check below */
    if (atomic_load(&pool.sleepers) > 0) {
        pthread_mutex_lock(&pool.sleep_lock);
        for (int slot = 1; slot < width; slot++)
            if (pool.bed[slot].asleep)
                pthread_cond_signal(&pool.bed[slot].wake);
        pthread_mutex_unlock(&pool.sleep_lock);
    }
    take_chunks(g, 0);
    /* chunks a helper claimed are still running: wait for them (yielding: a helper that was
     * preempted on this core then finishes) */
    for (int64_t spins = 1; atomic_load_explicit(&pool.done, memory_order_acquire) < chunks; spins++) {
        SR_PAUSE();
        if (spins % 64 == 0)
            sched_yield();
    }
    atomic_store_explicit(&pool.claim, CLOSED, memory_order_release);
    pthread_mutex_unlock(&pool.busy);
}
