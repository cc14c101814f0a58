/* Edge-labelled graphs from text: one edge a line, "FROM TO LABEL", '#' comments. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/memory.h"
#include "algo_util.h"

typedef struct {
    char *name;
    int64_t n, cap;
    int64_t *rows;
    int32_t *cols;
} label_edges;

typedef struct {
    label_edges *items;
    int64_t n, cap;
} label_set;

static label_edges *label_of(label_set *set, const char *name)
{
    for (int64_t l = 0; l < set->n; l++)
        if (strcmp(set->items[l].name, name) == 0)
            return &set->items[l];
    if (set->n == set->cap) {
        int64_t cap = set->cap ? 2 * set->cap : 8;
        label_edges *grown = sr_realloc(set->items, (size_t)cap * sizeof *grown);
        if (!grown)
            return NULL;
        set->items = grown;
        set->cap = cap;
    }
    label_edges *e = &set->items[set->n];
    memset(e, 0, sizeof *e);
    if (!(e->name = sr_malloc(strlen(name) + 1)))
        return NULL;
    strcpy(e->name, name);
    set->n++;
    return e;
}

static bool push_edge(label_edges *e, int64_t from, int64_t to)
{
    if (e->n == e->cap) {
        int64_t cap = e->cap ? 2 * e->cap : 1024;
        int64_t *rows = sr_realloc(e->rows, (size_t)cap * sizeof *rows);
        if (!rows)
            return false;
        e->rows = rows;
        int32_t *cols = sr_realloc(e->cols, (size_t)cap * sizeof *cols);
        if (!cols)
            return false;
        e->cols = cols;
        e->cap = cap;
    }
    e->rows[e->n] = from;
    e->cols[e->n] = (int32_t)to;
    e->n++;
    return true;
}

static void free_set(label_set *set, bool names_too)
{
    for (int64_t l = 0; l < set->n; l++) {
        free(set->items[l].rows);
        free(set->items[l].cols);
        if (names_too)
            free(set->items[l].name);
    }
    free(set->items);
}

/* Reads the edges of `path` into set; *largest = the largest vertex number (-1 when none). */
static sr_status read_edges(const char *path, label_set *set, int64_t *largest)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return sr_error(SR_ERROR_IO, "%s: cannot open the graph (%s)", path, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    int64_t line_no = 0;
    sr_status st = SR_SUCCESS;
    *largest = -1;
    while (st == SR_SUCCESS && getline(&line, &cap, f) >= 0) {
        line_no++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        long long from, to;
        char label[256], extra[2];
        int got = sscanf(line, "%lld %lld %255s %1s", &from, &to, label, extra);
        if (got <= 0) {
            char blank[2];
            if (sscanf(line, "%1s", blank) != 1)
                continue; /* blank */
        }
        if (got != 3) {
            st = sr_error(SR_ERROR_PARSE, "%s:%lld: expected 'FROM TO LABEL' (two vertex numbers and a label)", path,
                          (long long)line_no);
            break;
        }
        if (from < 0 || to < 0 || from >= INT32_MAX || to >= INT32_MAX) {
            st = sr_error(SR_ERROR_PARSE, "%s:%lld: vertex numbers must be in [0, 2^31 - 1), not %lld and %lld", path,
                          (long long)line_no, from, to);
            break;
        }
        label_edges *e = label_of(set, label);
        if (!e || !push_edge(e, from, to))
            st = sr_error(SR_ERROR_OUT_OF_MEMORY, "%s:%lld: out of memory", path, (long long)line_no);
        *largest = from > *largest ? from : *largest;
        *largest = to > *largest ? to : *largest;
    }
    if (st == SR_SUCCESS && ferror(f))
        st = sr_error(SR_ERROR_IO, "%s: read error", path);
    free(line);
    fclose(f);
    return st;
}

sr_status sr_labeled_graph_read(sr_context ctx, const char *path, sr_location where, int64_t *nvertices,
                                int64_t *nlabels, char ***labels, sr_matrix **graphs)
{
    const char *fn = "sr_labeled_graph_read";
    SR_CHECK_ARG(ctx && path && nvertices && nlabels && labels && graphs, "%s: a NULL argument", fn);
    SR_CHECK_ARG(where == SR_HOST || where == SR_DEVICE, "%s: unknown location %d", fn, (int)where);
    SR_CHECK_ARG(*nvertices >= 0, "%s: negative vertex count %lld", fn, (long long)*nvertices);
    label_set set = {NULL, 0, 0};
    int64_t largest = -1;
    sr_status st = read_edges(path, &set, &largest);
    const int64_t n = largest + 1 > *nvertices ? largest + 1 : *nvertices;
    char **names = NULL;
    sr_matrix *mats = NULL;
    if (st == SR_SUCCESS) {
        names = sr_calloc((size_t)(set.n ? set.n : 1), sizeof *names);
        mats = sr_calloc((size_t)(set.n ? set.n : 1), sizeof *mats);
        if (!names || !mats)
            st = sr_error(SR_ERROR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    for (int64_t l = 0; st == SR_SUCCESS && l < set.n; l++) {
        names[l] = set.items[l].name;
        set.items[l].name = NULL;
        st = sr_algo_pairs(ctx, n, n, set.items[l].n, set.items[l].rows, set.items[l].cols, where, &mats[l]);
    }
    const int64_t count = set.n;
    free_set(&set, true);
    if (st != SR_SUCCESS) {
        sr_labels_free(count, names, mats);
        return st;
    }
    *nvertices = n;
    *nlabels = count;
    *labels = names;
    *graphs = mats;
    return SR_SUCCESS;
}

void sr_labels_free(int64_t nlabels, char **labels, sr_matrix *graphs)
{
    for (int64_t l = 0; l < nlabels; l++) {
        if (labels)
            free(labels[l]);
        if (graphs)
            sr_matrix_free(graphs[l]);
    }
    free(labels);
    free(graphs);
}
