/* The registry shared by user semirings and user metrics (user_registry.h). */
#include "user_registry.h"

#include <string.h>

#include "../core/error.h"

void *sr_user_registry_at(sr_user_registry *r, int index)
{
    const int n = __atomic_load_n(&r->count, __ATOMIC_ACQUIRE);
    return index >= 0 && index < n ? r->entries[index] : NULL;
}

sr_status sr_user_registry_add(sr_user_registry *r, const sr_user_kind *kind, const char *fn, const char *name,
                               const void *def, int *index)
{
    pthread_mutex_lock(&r->lock);
    sr_status st = SR_SUCCESS;
    for (int e = 0; e < r->count; e++) {
        if (strcmp(kind->name_of(r->entries[e]), name) != 0)
            continue;
        if (kind->same(r->entries[e], def))
            *index = e;
        else
            st = kind->clash(fn, r->entries[e]);
        pthread_mutex_unlock(&r->lock);
        return st;
    }
    void *entry = NULL;
    if (r->count == SR_USER_REGISTRY_MAX)
        st = sr_error(SR_ERROR_UNSUPPORTED, "%s: a process holds at most %d user %ss", fn, SR_USER_REGISTRY_MAX,
                      r->kind);
    else
        st = kind->make(def, &entry); /* an expression that does not compile is refused here */
    if (st != SR_SUCCESS) {
        kind->destroy(entry);
        pthread_mutex_unlock(&r->lock);
        return st;
    }
    r->entries[r->count] = entry;
    *index = r->count;
    __atomic_store_n(&r->count, r->count + 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&r->lock);
    return SR_SUCCESS;
}
