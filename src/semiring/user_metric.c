/* The registry of user metrics (user.h, sr_metric_define): as user.c's semirings. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "metric.h"
#include "user.h"

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static sr_user_metric *registry[SR_USER_SEMIRING_MAX];
static int registered;

bool sr_metric_is_user(int m)
{
    const int n = __atomic_load_n(&registered, __ATOMIC_ACQUIRE);
    return m >= SR_USER_METRIC_FIRST && m < SR_USER_METRIC_FIRST + n;
}

const sr_user_metric *sr_user_metric_of(int m) { return sr_metric_is_user(m) ? registry[m - SR_USER_METRIC_FIRST] : NULL; }

bool sr_metric_keeps_largest(int m)
{
    const sr_user_metric *u = sr_user_metric_of(m);
    return u ? u->def.similarity : sr_metric_is_similarity((sr_metric)m);
}

sr_status sr_metric_require_host(const char *fn, int m, sr_location where)
{
    const sr_user_metric *u = sr_user_metric_of(m);
    if (u && where == SR_DEVICE)
        return sr_error(SR_ERROR_UNSUPPORTED, "%s: the user metric '%s' runs on the CPU backend for now, and the data "
                        "lives on the GPU (copy it to the host, or use a CPU context; docs/user-semirings.md)", fn,
                        u->def.name);
    return SR_SUCCESS;
}

static void free_entry(sr_user_metric *u)
{
    if (!u)
        return;
    free((char *)u->def.name);
    free((char *)u->def.pair);
    free((char *)u->def.norm);
    free((char *)u->def.distance);
    free((char *)u->def.pair2);
    free((char *)u->def.norm2);
    free((char *)u->def.reduce);
    free(u);
}

sr_status sr_metric_define(const sr_metric_def *def, sr_metric *metric)
{
    SR_CHECK_ARG(def != NULL && metric != NULL, "sr_metric_define: the definition or the output pointer is NULL");
    SR_TRY(sr_user_check_name("sr_metric_define", def->name));
    for (int m = 0; m < SR_METRIC_COUNT; m++)
        SR_CHECK_ARG(strcmp(def->name, sr_metric_name((sr_metric)m)) != 0,
                     "sr_metric_define: '%s' is a built-in metric's name; give yours another", def->name);
    SR_CHECK_ARG(def->pair && *def->pair, "sr_metric_define: '%s' has no pair term (an expression over q and x)",
                 def->name);
    const bool maximum = def->reduce && strcmp(def->reduce, "max") == 0;
    SR_CHECK_ARG(!def->reduce || maximum || strcmp(def->reduce, "plus") == 0,
                 "sr_metric_define: '%s' reduces by '%s'; expected plus or max", def->name, def->reduce);
    SR_CHECK_ARG(!maximum || (!def->pair2 && !def->norm2),
                 "sr_metric_define: '%s' reduces by max, which takes one term: pair2 and norm2 are second sums",
                 def->name);
    const char *reduce = maximum ? "max" : NULL; /* "plus" is the default: kept as NULL */
    pthread_mutex_lock(&registry_lock);
    sr_status st = SR_SUCCESS;
    for (int r = 0; r < registered; r++) {
        const sr_metric_def *o = &registry[r]->def;
        if (strcmp(o->name, def->name) != 0)
            continue;
        if (sr_user_same_text(o->pair, def->pair) && sr_user_same_text(o->norm, def->norm) &&
            sr_user_same_text(o->distance, def->distance) && sr_user_same_text(o->pair2, def->pair2) &&
            sr_user_same_text(o->norm2, def->norm2) && sr_user_same_text(o->reduce, reduce) &&
            o->over_union == def->over_union &&
            o->similarity == def->similarity)
            *metric = (sr_metric)(SR_USER_METRIC_FIRST + r);
        else
            st = sr_error(SR_ERROR_INVALID_ARGUMENT, "sr_metric_define: '%s' is defined already, as pair '%s'; give the "
                          "new one another name", def->name, o->pair);
        pthread_mutex_unlock(&registry_lock);
        return st;
    }
    if (registered == SR_USER_SEMIRING_MAX) {
        pthread_mutex_unlock(&registry_lock);
        return sr_error(SR_ERROR_UNSUPPORTED, "sr_metric_define: a process holds at most %d user metrics",
                        SR_USER_SEMIRING_MAX);
    }
    sr_user_metric *u = calloc(1, sizeof *u);
    if (u) {
        u->def = (sr_metric_def){sr_user_copy_text(def->name),  sr_user_copy_text(def->pair),
                                 sr_user_copy_text(def->norm),  sr_user_copy_text(def->distance),
                                 def->over_union,               def->similarity,
                                 sr_user_copy_text(def->pair2), sr_user_copy_text(def->norm2),
                                 sr_user_copy_text(reduce)};
        if (!u->def.name || !u->def.pair || (def->norm && !u->def.norm) || (def->distance && !u->def.distance) ||
            (def->pair2 && !u->def.pair2) || (def->norm2 && !u->def.norm2) || (reduce && !u->def.reduce))
            st = sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for a metric's definition");
    } else {
        st = sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for a metric's definition");
    }
    if (st == SR_SUCCESS)
        st = sr_cpu_user_metric_compile(u);
    if (st != SR_SUCCESS) {
        free_entry(u);
        pthread_mutex_unlock(&registry_lock);
        return st;
    }
    registry[registered] = u;
    *metric = (sr_metric)(SR_USER_METRIC_FIRST + registered);
    __atomic_store_n(&registered, registered + 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&registry_lock);
    return SR_SUCCESS;
}

sr_status sr_metric_definition(sr_metric metric, sr_metric_def *def)
{
    SR_CHECK_ARG(def != NULL, "sr_metric_definition: the output pointer is NULL");
    const sr_user_metric *u = sr_user_metric_of((int)metric);
    SR_CHECK_ARG(u != NULL, "sr_metric_definition: %d is not a user metric", (int)metric);
    *def = u->def;
    return SR_SUCCESS;
}
