/* Context-free path querying by Boolean matrix products (Azimov and Grigorev, 2018), semi-naive.
 *
 * T[A] holds the pairs (i, j) joined by a path whose word A derives. It starts from the terminal
 * rules (A -> t: the edges labelled t) and the empty rules (A -> eps: every (i, i)); then each round
 * adds, for every rule, what the last round's new pairs D make possible:
 *     A -> B C:  D[B]·T[C]  and  T[B]·D[C]       A -> B:  D[B]
 * each only where T[A] has no entry yet (a complemented mask), until no round adds anything. A
 * product of two old operands was formed in an earlier round, so none is formed twice. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/memory.h"
#include "algo_util.h"
#include "grammar.h"

typedef struct {
    sr_context ctx;
    const struct sr_grammar_s *g;
    int64_t n;
    sr_location where;
    sr_matrix *T, *D, *N; /* per nonterminal: all pairs, last round's, this round's */
    sr_query_stats *stats;
} cfpq_state;

/* *acc (or a new matrix when NULL) |= what the rule's product adds, where T[lhs] has no entry. */
static sr_status add_product(cfpq_state *s, int lhs, sr_matrix left, sr_matrix right)
{
    if (sr_algo_nnz(left) == 0 || sr_algo_nnz(right) == 0)
        return SR_SUCCESS;
    const sr_descriptor only_new = {.mask_complement = true, .accumulate = s->N[lhs] != NULL};
    s->stats->products++;
    return sr_mxm(s->ctx, &s->N[lhs], s->T[lhs], SR_OR_AND, left, right, &only_new);
}

static sr_status add_unit(cfpq_state *s, int lhs, sr_matrix from)
{
    if (sr_algo_nnz(from) == 0)
        return SR_SUCCESS;
    const sr_descriptor only_new = {.mask_complement = true, .accumulate = s->N[lhs] != NULL};
    return sr_ewise_add(s->ctx, &s->N[lhs], s->T[lhs], SR_OR_AND, from, from, &only_new);
}

/* The graph of terminal t, or NULL when no label matches. */
static sr_matrix label_graph(const struct sr_grammar_s *g, int t, int64_t nlabels, const char *const *labels,
                             const sr_matrix *graphs)
{
    for (int64_t l = 0; l < nlabels; l++)
        if (strcmp(labels[l], g->terminals[t]) == 0)
            return graphs[l];
    return NULL;
}

static sr_status initial_pairs(cfpq_state *s, int64_t nlabels, const char *const *labels, const sr_matrix *graphs)
{
    const struct sr_grammar_s *g = s->g;
    sr_matrix identity = NULL;
    sr_status st = SR_SUCCESS;
    for (int r = 0; st == SR_SUCCESS && r < g->nrules; r++) {
        const sr_rule *rule = &g->rules[r];
        sr_matrix add = NULL;
        if (rule->kind == SR_RULE_TERMINAL)
            add = label_graph(g, rule->a, nlabels, labels, graphs);
        else if (rule->kind == SR_RULE_EPSILON) {
            if (!identity)
                st = sr_algo_one_per_column(s->ctx, s->n, s->n, NULL, 0, s->where, &identity);
            add = identity;
        }
        if (st == SR_SUCCESS && add)
            st = sr_algo_union_into(s->ctx, &s->T[rule->lhs], add);
    }
    sr_matrix_free(identity);
    for (int a = 0; st == SR_SUCCESS && a < g->nnonterminals; a++)
        st = sr_matrix_dup(s->ctx, s->T[a], &s->D[a]);
    return st;
}

/* One round: N from D and T for every rule, then T |= N and D = N. *added = the pairs it added. */
static sr_status round_of(cfpq_state *s, int64_t *added)
{
    const struct sr_grammar_s *g = s->g;
    sr_status st = SR_SUCCESS;
    for (int r = 0; st == SR_SUCCESS && r < g->nrules; r++) {
        const sr_rule *rule = &g->rules[r];
        if (rule->kind == SR_RULE_BINARY) {
            st = add_product(s, rule->lhs, s->D[rule->a], s->T[rule->b]);
            if (st == SR_SUCCESS)
                st = add_product(s, rule->lhs, s->T[rule->a], s->D[rule->b]);
        } else if (rule->kind == SR_RULE_UNIT) {
            st = add_unit(s, rule->lhs, s->D[rule->a]);
        }
    }
    *added = 0;
    for (int a = 0; st == SR_SUCCESS && a < g->nnonterminals; a++) {
        sr_matrix_free(s->D[a]);
        s->D[a] = NULL;
        if (s->N[a] && sr_algo_nnz(s->N[a]) > 0) {
            *added += sr_algo_nnz(s->N[a]);
            st = sr_algo_union_into(s->ctx, &s->T[a], s->N[a]);
            s->D[a] = s->N[a];
        } else {
            sr_matrix_free(s->N[a]);
        }
        s->N[a] = NULL;
        if (st == SR_SUCCESS && !s->D[a])
            st = sr_algo_pairs(s->ctx, s->n, s->n, 0, NULL, NULL, s->where, &s->D[a]);
    }
    return st;
}

static sr_status check_labels(const char *fn, int64_t nlabels, const char *const *labels,
                              const sr_matrix *graphs, int64_t *n, sr_location *where)
{
    SR_CHECK_ARG(nlabels >= 1, "%s: no labelled graphs given", fn);
    SR_CHECK_ARG(labels != NULL && graphs != NULL, "%s: labels or graphs is NULL", fn);
    for (int64_t l = 0; l < nlabels; l++) {
        SR_CHECK_ARG(labels[l] != NULL && graphs[l] != NULL, "%s: label %lld or its graph is NULL", fn, (long long)l);
        sr_matrix_info info;
        SR_TRY(sr_matrix_get_info(graphs[l], &info));
        if (l == 0) {
            *n = info.nrows;
            *where = info.location;
        }
        SR_CHECK_ARG(info.type == SR_TYPE_BOOL, "%s: the graph of label '%s' is %s, not bool (sr_matrix_cast)", fn,
                     labels[l], sr_type_name(info.type));
        SR_CHECK_ARG(info.nrows == *n && info.ncols == *n, "%s: the graph of label '%s' is %lld x %lld, not %lld x %lld",
                     fn, labels[l], (long long)info.nrows, (long long)info.ncols, (long long)*n, (long long)*n);
        SR_CHECK_ARG(info.location == *where, "%s: the labels' graphs live in different places", fn);
    }
    return SR_SUCCESS;
}

/* Every terminal of the grammar names a label given: one that does not is most often a typo. */
static sr_status check_terminals(const char *fn, const struct sr_grammar_s *g, int64_t nlabels,
                                 const char *const *labels, const sr_matrix *graphs)
{
    for (int t = 0; t < g->nterminals; t++) {
        if (label_graph(g, t, nlabels, labels, graphs)) /* check_labels: no graph is NULL */
            continue;
        char given[256] = "";
        size_t used = 0;
        for (int64_t k = 0; k < nlabels && used + 4 < sizeof given; k++)
            used += (size_t)snprintf(given + used, sizeof given - used, "%s'%s'", k ? ", " : "", labels[k]);
        return sr_error(SR_ERROR_INVALID_ARGUMENT,
                        "%s: the grammar's terminal '%s' names no graph (labels given: %s); set "
                        "allow_missing_labels to take it as a label without edges",
                        fn, g->terminals[t], given);
    }
    return SR_SUCCESS;
}

sr_status sr_cfpq(sr_context ctx, sr_grammar g, int64_t nlabels, const char *const *labels, const sr_matrix *graphs,
                  const char *symbol, sr_matrix *R, const sr_query_options *options, sr_query_stats *stats)
{
    const char *fn = "sr_cfpq";
    SR_CHECK_ARG(ctx != NULL && g != NULL && R != NULL, "%s: the context, grammar or output pointer is NULL", fn);
    cfpq_state s = {ctx, g, 0, SR_HOST, NULL, NULL, NULL, NULL};
    SR_TRY(check_labels(fn, nlabels, labels, graphs, &s.n, &s.where));
    if (!(options && options->allow_missing_labels))
        SR_TRY(check_terminals(fn, g, nlabels, labels, graphs));
    const int target = symbol ? sr_grammar_find(g, symbol) : g->start;
    SR_CHECK_ARG(target >= 0, "%s: '%s' is not a nonterminal of the grammar", fn, symbol ? symbol : "");
    sr_query_stats local = {0, 0, 0.0};
    s.stats = &local;
    const double t0 = sr_algo_now();
    const int m = g->nnonterminals;
    s.T = sr_calloc((size_t)m, sizeof *s.T);
    s.D = sr_calloc((size_t)m, sizeof *s.D);
    s.N = sr_calloc((size_t)m, sizeof *s.N);
    sr_status st = s.T && s.D && s.N ? SR_SUCCESS : sr_error(SR_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    for (int a = 0; st == SR_SUCCESS && a < m; a++)
        st = sr_algo_pairs(ctx, s.n, s.n, 0, NULL, NULL, s.where, &s.T[a]);
    if (st == SR_SUCCESS)
        st = initial_pairs(&s, nlabels, labels, graphs);
    for (int64_t added = 1; st == SR_SUCCESS && added > 0;) {
        st = round_of(&s, &added);
        if (st == SR_SUCCESS && added > 0) {
            local.rounds++;
            st = sr_algo_progress(fn, options, local.rounds, sr_algo_nnz(s.T[target]));
        }
    }
    sr_matrix result = NULL;
    for (int a = 0; a < m && s.T; a++) {
        if (a == target)
            result = s.T[a];
        else
            sr_matrix_free(s.T[a]);
        if (s.D)
            sr_matrix_free(s.D[a]);
        if (s.N)
            sr_matrix_free(s.N[a]);
    }
    free(s.T);
    free(s.D);
    free(s.N);
    return sr_algo_deliver(st, result, R, local, t0, stats);
}
