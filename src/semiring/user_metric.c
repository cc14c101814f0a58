/* The registry of user metrics (user.h, sr_metric_define): as user.c's semirings. */
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "metric.h"
#include "user.h"
#include "user_registry.h"

static sr_user_registry registry = SR_USER_REGISTRY_INIT("metric");

bool sr_metric_is_user(int m) { return sr_user_metric_of(m) != NULL; }

const sr_user_metric *sr_user_metric_of(int m)
{
    return m >= SR_USER_METRIC_FIRST ? sr_user_registry_at(&registry, m - SR_USER_METRIC_FIRST) : NULL;
}

bool sr_metric_keeps_largest(int m)
{
    const sr_user_metric *u = sr_user_metric_of(m);
    return u ? u->def.similarity : sr_metric_is_similarity((sr_metric)m);
}

/* metric.h's helpers as a user metric's source spells them (sr_pow, sr_snap, sr_clamp,
 * sr_norm_product), for either backend's compiler: the source defines SR_FN first. */
const char sr_user_metric_helpers[] =
    "SR_FN double sr_pow(double v, double p)\n"
    "{\n"
    "    if (v == 0.0)\n"
    "        return 0.0;\n"
    "    if (p >= 1.0 && p <= 64.0 && p == (double)(int)p) {\n"
    "        double r = 1.0, b = v;\n"
    "        for (int n = (int)p; n > 0; n >>= 1) {\n"
    "            if (n & 1)\n"
    "                r *= b;\n"
    "            b *= b;\n"
    "        }\n"
    "        return r;\n"
    "    }\n"
    "    return exp2(p * log2(v));\n"
    "}\n"
    "SR_FN double sr_snap(double v, double scale) { return v <= 64.0 * 2.220446049250313e-16 * scale ? 0.0 : v; }\n"
    "SR_FN double sr_clamp(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }\n"
    "SR_FN double sr_norm_product(double q0, double x0)\n"
    "{\n"
    "    const double both = q0 * x0;\n"
    "    return both > 2.2250738585072014e-308 && both <= 1.7976931348623157e308 ? sqrt(both) : sqrt(q0) * sqrt(x0);\n"
    "}\n";

sr_user_metric_terms sr_user_metric_terms_of(const sr_metric_def *d)
{
    sr_user_metric_terms t;
    t.maximum = d->reduce != NULL; /* "max" (the registry keeps "plus" as NULL) */
    t.two_sums = d->pair2 != NULL;
    t.walks_union = t.maximum && d->over_union;
    t.norm = d->norm ? d->norm : d->over_union ? "sr_pair(v, 0.0, p)" : "0.0";
    t.distance = d->distance ? d->distance : "acc";
    t.term = d->over_union && !t.maximum ? "sr_pair(q, x, p) - sr_pair(q, 0.0, p) - sr_pair(0.0, x, p)"
                                         : "sr_pair(q, x, p)";
    t.pair2 = d->pair2 ? d->pair2 : "0.0";
    t.norm2 = d->norm2 ? d->norm2 : d->over_union && d->pair2 ? "sr_pair2(v, 0.0, p)" : "0.0";
    t.term2 = d->over_union ? "sr_pair2(q, x, p) - sr_pair2(q, 0.0, p) - sr_pair2(0.0, x, p)" : "sr_pair2(q, x, p)";
    return t;
}

static const char *name_of(const void *entry) { return ((const sr_user_metric *)entry)->def.name; }

static bool same_definition(const void *entry, const void *def)
{
    const sr_metric_def *o = &((const sr_user_metric *)entry)->def, *d = def;
    return sr_user_same_text(o->pair, d->pair) && sr_user_same_text(o->norm, d->norm) &&
           sr_user_same_text(o->distance, d->distance) && sr_user_same_text(o->pair2, d->pair2) &&
           sr_user_same_text(o->norm2, d->norm2) && sr_user_same_text(o->reduce, d->reduce) &&
           o->over_union == d->over_union && o->similarity == d->similarity;
}

static sr_status clash(const char *fn, const void *entry)
{
    const sr_metric_def *o = &((const sr_user_metric *)entry)->def;
    return sr_error(SR_ERROR_INVALID_ARGUMENT, "%s: '%s' is defined already, as pair '%s'; give the new one another "
                    "name", fn, o->name, o->pair);
}

static void destroy(void *entry)
{
    sr_user_metric *u = entry;
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

static sr_status make(const void *definition, void **entry)
{
    const sr_metric_def *def = definition;
    sr_user_metric *u = calloc(1, sizeof *u);
    *entry = u;
    if (!u)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for a metric's definition");
    u->def = (sr_metric_def){sr_user_copy_text(def->name),  sr_user_copy_text(def->pair),
                             sr_user_copy_text(def->norm),  sr_user_copy_text(def->distance),
                             def->over_union,               def->similarity,
                             sr_user_copy_text(def->pair2), sr_user_copy_text(def->norm2),
                             sr_user_copy_text(def->reduce)};
    if (!u->def.name || !u->def.pair || (def->norm && !u->def.norm) || (def->distance && !u->def.distance) ||
        (def->pair2 && !u->def.pair2) || (def->norm2 && !u->def.norm2) || (def->reduce && !u->def.reduce))
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for a metric's definition");
    return sr_cpu_user_metric_compile(u);
}

static const sr_user_kind kMetricKind = {name_of, same_definition, clash, make, destroy};

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
    sr_metric_def canonical = *def;
    canonical.reduce = maximum ? "max" : NULL; /* "plus" is the default: kept as NULL */
    int index = 0;
    SR_TRY(sr_user_registry_add(&registry, &kMetricKind, "sr_metric_define", def->name, &canonical, &index));
    *metric = (sr_metric)(SR_USER_METRIC_FIRST + index);
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
