/* What an index keeps from its first search until it is freed: its transpose (the inverted form
 * the search walks), the value checks it passed, and its row norms per metric. Searching one
 * index again and again (a service answering queries, NearestNeighbors.kneighbors in a loop)
 * then costs only the queries' own work. Matrices do not change once built, so what is kept
 * stays right while the matrix lives; it is counted on the matrix's context (the transpose takes
 * as much memory again as the matrix, norms 16 bytes a row) and goes with sr_matrix_free. */
#include <pthread.h>
#include <stdlib.h>

#include "sparsering.h"

#include "../core/error.h"
#include "../core/matrix.h"
#include "../core/memory.h"
#include "../cpu/cpu.h"
#include "distance_prep.h"

typedef struct kept_norms {
    sr_metric metric;
    double p;
    double *norms;          /* 2 a row, where the matrix lives */
    int32_t *disjoint_order; /* the host overlap path's order of the rows (sr_cpu_disjoint_order), once built */
    struct kept_norms *next;
} kept_norms;

typedef struct distance_cache {
    struct sr_matrix_s *transpose;
    bool finite, nonnegative; /* checks passed */
    kept_norms *norms;
} distance_cache;

/* Guards the caches (lookups and installs; what is kept is built outside it, and a copy built by
 * a second thread at the same time is dropped). */
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

static void free_cache(struct sr_matrix_s *A)
{
    distance_cache *c = A->distance_cache;
    if (!c)
        return;
    sr_matrix_destroy(c->transpose);
    for (kept_norms *n = c->norms, *next; n; n = next) {
        next = n->next;
        sr_mem_free(A->ctx, A->location, n->norms, 2 * sizeof(double) * (size_t)A->nrows);
        sr_mem_free(A->ctx, SR_HOST, n->disjoint_order, sizeof(int32_t) * (size_t)A->nrows);
        free(n);
    }
    free(c);
    A->distance_cache = NULL;
}

/* X's cache, made when absent; the lock is held by the caller. */
static distance_cache *cache_of(struct sr_matrix_s *X)
{
    if (!X->distance_cache) {
        X->distance_cache = sr_calloc(1, sizeof(distance_cache));
        if (X->distance_cache)
            X->free_distance_cache = free_cache;
    }
    return X->distance_cache;
}

sr_status sr_distance_index_transpose(struct sr_matrix_s *X, const struct sr_matrix_s **xt)
{
    pthread_mutex_lock(&cache_lock);
    distance_cache *c = cache_of(X);
    const struct sr_matrix_s *kept = c ? c->transpose : NULL;
    pthread_mutex_unlock(&cache_lock);
    if (!c)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for an index's cache");
    if (kept) {
        *xt = kept;
        return SR_SUCCESS;
    }
    struct sr_matrix_s *built = NULL;
    SR_TRY(sr_matrix_transpose(X->ctx, X, &built)); /* on the matrix's context: it lives as long */
    pthread_mutex_lock(&cache_lock);
    if (!c->transpose) {
        c->transpose = built;
        built = NULL;
    }
    kept = c->transpose;
    pthread_mutex_unlock(&cache_lock);
    sr_matrix_destroy(built);
    *xt = kept;
    return SR_SUCCESS;
}

bool sr_distance_index_checked(struct sr_matrix_s *X, bool nonnegative)
{
    pthread_mutex_lock(&cache_lock);
    const distance_cache *c = X->distance_cache;
    const bool passed = c && (nonnegative ? c->nonnegative : c->finite);
    pthread_mutex_unlock(&cache_lock);
    return passed;
}

void sr_distance_index_mark_checked(struct sr_matrix_s *X, bool nonnegative)
{
    pthread_mutex_lock(&cache_lock);
    distance_cache *c = cache_of(X);
    if (c && nonnegative)
        c->nonnegative = true;
    else if (c)
        c->finite = true;
    pthread_mutex_unlock(&cache_lock);
}

static kept_norms *find_entry(const distance_cache *c, sr_metric metric, double p)
{
    for (kept_norms *n = c ? c->norms : NULL; n; n = n->next)
        if (n->metric == metric && n->p == p)
            return n;
    return NULL;
}

static const double *find_norms(const distance_cache *c, sr_metric metric, double p)
{
    const kept_norms *n = find_entry(c, metric, p);
    return n ? n->norms : NULL;
}

sr_status sr_distance_index_norms(struct sr_context_s *ctx, struct sr_matrix_s *X, sr_metric metric, double p,
                                  const double **norms)
{
    if (X->nrows == 0) { /* nothing to keep, and nothing reads them */
        *norms = NULL;
        return SR_SUCCESS;
    }
    pthread_mutex_lock(&cache_lock);
    const double *kept = find_norms(X->distance_cache, metric, p);
    pthread_mutex_unlock(&cache_lock);
    if (kept) {
        *norms = kept;
        return SR_SUCCESS;
    }
    const size_t bytes = 2 * sizeof(double) * (size_t)X->nrows;
    kept_norms *entry = sr_malloc(sizeof *entry);
    if (!entry)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for an index's cache");
    double *built = NULL;
    sr_status s = sr_distance_norms(X->ctx, sr_context_threads(ctx), X, metric, p, &built);
    /* a device kernel runs on X's stream; searches on other contexts' streams read the norms later */
    if (s == SR_SUCCESS && X->location == SR_DEVICE)
        s = sr_context_synchronize(X->ctx);
    if (s != SR_SUCCESS) {
        sr_mem_free(X->ctx, X->location, built, bytes);
        free(entry);
        return s;
    }
    pthread_mutex_lock(&cache_lock);
    distance_cache *c = cache_of(X);
    kept = find_norms(c, metric, p);
    if (!kept && c) {
        *entry = (kept_norms){metric, p, built, NULL, c->norms};
        c->norms = entry;
        kept = built;
        built = NULL;
        entry = NULL;
    }
    pthread_mutex_unlock(&cache_lock);
    if (built) /* another call got there first, or no cache could be made: this call's copy goes */
        sr_mem_free(X->ctx, X->location, built, bytes);
    free(entry);
    if (!kept)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for an index's cache");
    *norms = kept;
    return SR_SUCCESS;
}

sr_status sr_distance_index_order(struct sr_matrix_s *X, sr_metric metric, double p, const int32_t **order)
{
    pthread_mutex_lock(&cache_lock);
    const kept_norms *entry = find_entry(X->distance_cache, metric, p);
    const int32_t *kept = entry ? entry->disjoint_order : NULL;
    const double *norms = entry ? entry->norms : NULL;
    pthread_mutex_unlock(&cache_lock);
    if (kept || X->nrows == 0) {
        *order = kept;
        return SR_SUCCESS;
    }
    if (!norms || X->location != SR_HOST)
        return sr_error(SR_ERROR_INTERNAL, "an index's row order needs its host norms kept first");
    const size_t bytes = sizeof(int32_t) * (size_t)X->nrows;
    int32_t *built = NULL;
    SR_TRY(sr_mem_alloc(X->ctx, SR_HOST, bytes, (void **)&built));
    sr_status s = sr_cpu_disjoint_order(norms, X->nrows, metric, (double)X->ncols, built);
    if (s != SR_SUCCESS) {
        sr_mem_free(X->ctx, SR_HOST, built, bytes);
        return s;
    }
    pthread_mutex_lock(&cache_lock);
    kept_norms *e = find_entry(X->distance_cache, metric, p);
    if (!e->disjoint_order) {
        e->disjoint_order = built;
        built = NULL;
    }
    kept = e->disjoint_order;
    pthread_mutex_unlock(&cache_lock);
    sr_mem_free(X->ctx, SR_HOST, built, bytes); /* another call got there first */
    *order = kept;
    return SR_SUCCESS;
}
