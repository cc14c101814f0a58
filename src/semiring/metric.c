/* Metric names (scikit-learn spellings) and argument checks. */
#include <math.h>
#include <string.h>

#include "../core/error.h"
#include "metric.h"
#include "user.h"

static const struct {
    const char *name;
    sr_metric metric;
} metric_names[] = {
    /* the first name of each metric is its canonical one */
    {"euclidean", SR_METRIC_L2},
    {"l2", SR_METRIC_L2},
    {"sqeuclidean", SR_METRIC_SQEUCLIDEAN},
    {"euclidean_unexpanded", SR_METRIC_L2_UNEXPANDED},
    {"sqeuclidean_unexpanded", SR_METRIC_SQEUCLIDEAN_UNEXPANDED},
    {"manhattan", SR_METRIC_L1},
    {"cityblock", SR_METRIC_L1},
    {"l1", SR_METRIC_L1},
    {"chebyshev", SR_METRIC_CHEBYSHEV},
    {"minkowski", SR_METRIC_MINKOWSKI},
    {"canberra", SR_METRIC_CANBERRA},
    {"hamming", SR_METRIC_HAMMING},
    {"jaccard", SR_METRIC_JACCARD},
    {"dice", SR_METRIC_DICE},
    {"russellrao", SR_METRIC_RUSSELL_RAO},
    {"cosine", SR_METRIC_COSINE},
    {"correlation", SR_METRIC_CORRELATION},
    {"hellinger", SR_METRIC_HELLINGER},
    {"kl_divergence", SR_METRIC_KL_DIVERGENCE},
    {"kldivergence", SR_METRIC_KL_DIVERGENCE},
    {"jensenshannon", SR_METRIC_JENSEN_SHANNON},
    {"braycurtis", SR_METRIC_BRAY_CURTIS},
    {"inner_product", SR_METRIC_INNER_PRODUCT},
};
#define METRIC_NAME_COUNT (sizeof metric_names / sizeof metric_names[0])

const char *sr_metric_name(sr_metric metric)
{
    for (size_t i = 0; i < METRIC_NAME_COUNT; i++)
        if (metric_names[i].metric == metric)
            return metric_names[i].name;
    const sr_user_metric *u = sr_user_metric_of((int)metric);
    return u ? u->def.name : "unknown";
}

sr_status sr_metric_from_name(const char *name, sr_metric *metric)
{
    SR_CHECK_ARG(name != NULL && metric != NULL, "sr_metric_from_name: NULL argument");
    for (size_t i = 0; i < METRIC_NAME_COUNT; i++)
        if (strcmp(metric_names[i].name, name) == 0) {
            *metric = metric_names[i].metric;
            return SR_SUCCESS;
        }
    char known[512] = "";
    for (int m = 0; m < SR_METRIC_COUNT; m++) {
        strncat(known, m ? ", " : "", sizeof known - strlen(known) - 1);
        strncat(known, sr_metric_name((sr_metric)m), sizeof known - strlen(known) - 1);
    }
    return sr_error(SR_ERROR_INVALID_ARGUMENT, "unknown metric \"%s\" (known: %s)", name, known);
}

sr_status sr_metric_check(const char *fn, sr_metric metric, double metric_arg)
{
    SR_CHECK_ARG(((int)metric >= 0 && (int)metric < SR_METRIC_COUNT) || sr_metric_is_user((int)metric),
                 "%s: unknown metric %d", fn, (int)metric);
    if (metric == SR_METRIC_MINKOWSKI)
        SR_CHECK_ARG(metric_arg > 0.0 && isfinite(metric_arg),
                     "%s: minkowski needs a finite p > 0 in metric_arg (got %g; use chebyshev for p = inf)", fn,
                     metric_arg);
    return SR_SUCCESS;
}
