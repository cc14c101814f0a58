/* A process-wide list of user definitions (semirings, metrics), shared by user.c and
 * user_metric.c: entries are added under a lock and never removed, so a published entry is read
 * without the lock. */
#ifndef SR_USER_REGISTRY_H
#define SR_USER_REGISTRY_H

#include <pthread.h>
#include <stdbool.h>

#include "sparsering.h"

#define SR_USER_REGISTRY_MAX 1024

typedef struct sr_user_registry {
    pthread_mutex_t lock;
    void *entries[SR_USER_REGISTRY_MAX];
    int count; /* published entries (atomic) */
    const char *kind; /* "semiring" or "metric", for messages */
} sr_user_registry;

#define SR_USER_REGISTRY_INIT(kind) {PTHREAD_MUTEX_INITIALIZER, {0}, 0, kind}

/* What a registry asks of its kind of definition. */
typedef struct sr_user_kind {
    const char *(*name_of)(const void *entry);
    bool (*same)(const void *entry, const void *def);  /* the entry holds this definition */
    sr_status (*clash)(const char *fn, const void *entry); /* the error for another under its name */
    sr_status (*make)(const void *def, void **entry);  /* copies and compiles a new entry */
    void (*destroy)(void *entry);                      /* frees one make left half-made */
} sr_user_kind;

/* The entry at `index`, or NULL when none is published there. */
void *sr_user_registry_at(sr_user_registry *r, int index);
/* Registers `def` named `name` and sets *index: the entry already named so when it holds the same
 * definition; an error (kind->clash) when it holds another; else a new entry made by kind->make,
 * published only once it is whole. */
sr_status sr_user_registry_add(sr_user_registry *r, const sr_user_kind *kind, const char *fn, const char *name,
                               const void *def, int *index);

#endif
