/* Grammar text -> weak Chomsky normal form: terminal rules A -> t, empty rules A -> eps, unit
 * rules A -> B and binary rules A -> B C. Longer alternatives are split with fresh nonterminals
 * ("A#1", ...), and a terminal inside one gets its own ("<t>"). */
#include "../core/memory.h"
#include "grammar.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo_util.h"

enum { kMaxSymbols = 256 }; /* symbols in one alternative */

static int find_name(char *const *names, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}

int sr_grammar_find(const struct sr_grammar_s *g, const char *name) { return find_name(g->nonterminals, g->nnonterminals, name); }

/* Appends a copy of name to *names (capacity doubled as needed); its index, or -1 out of memory. */
static int add_name(char ***names, int *n, const char *name)
{
    if ((*n & (*n - 1)) == 0) { /* 0, 1, 2, 4, ...: grow */
        char **grown = sr_realloc(*names, (size_t)(*n ? 2 * *n : 1) * sizeof **names);
        if (!grown)
            return -1;
        *names = grown;
    }
    char *copy = sr_malloc(strlen(name) + 1);
    if (!copy)
        return -1;
    strcpy(copy, name);
    (*names)[*n] = copy;
    return (*n)++;
}

static sr_status add_rule(struct sr_grammar_s *g, sr_rule r)
{
    if ((g->nrules & (g->nrules - 1)) == 0) {
        sr_rule *grown = sr_realloc(g->rules, (size_t)(g->nrules ? 2 * g->nrules : 1) * sizeof *grown);
        if (!grown)
            return sr_error(SR_ERROR_OUT_OF_MEMORY, "sr_grammar_parse: out of memory");
        g->rules = grown;
    }
    g->rules[g->nrules++] = r;
    return SR_SUCCESS;
}

static sr_status nonterminal(struct sr_grammar_s *g, const char *name, int *index)
{
    *index = sr_grammar_find(g, name);
    if (*index < 0 && (*index = add_name(&g->nonterminals, &g->nnonterminals, name)) < 0)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "sr_grammar_parse: out of memory");
    return SR_SUCCESS;
}

static sr_status terminal(struct sr_grammar_s *g, const char *name, int *index)
{
    *index = find_name(g->terminals, g->nterminals, name);
    if (*index < 0 && (*index = add_name(&g->terminals, &g->nterminals, name)) < 0)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "sr_grammar_parse: out of memory");
    return SR_SUCCESS;
}

/* Splits s in place into whitespace-separated words. */
static int split_words(char *s, char **words, int max)
{
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(s, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) {
        if (n == max)
            return -1;
        words[n++] = t;
    }
    return n;
}

static bool is_epsilon(const char *w) { return strcmp(w, "eps") == 0 || strcmp(w, "ε") == 0 || strcmp(w, "epsilon") == 0; }

/* The nonterminal standing for symbol w inside a long alternative. */
static sr_status operand(struct sr_grammar_s *g, const char *w, int nlhs, int *index)
{
    int nt = sr_grammar_find(g, w);
    if (nt >= 0 && nt < nlhs) {
        *index = nt;
        return SR_SUCCESS;
    }
    char name[512];
    snprintf(name, sizeof name, "<%s>", w);
    bool fresh = sr_grammar_find(g, name) < 0;
    SR_TRY(nonterminal(g, name, index));
    if (fresh) {
        int t;
        SR_TRY(terminal(g, w, &t));
        SR_TRY(add_rule(g, (sr_rule){SR_RULE_TERMINAL, *index, t, -1}));
    }
    return SR_SUCCESS;
}

/* One alternative of lhs, as rules in normal form. */
static sr_status add_alternative(struct sr_grammar_s *g, int lhs, char **w, int n, int nlhs)
{
    if (n == 0)
        return add_rule(g, (sr_rule){SR_RULE_EPSILON, lhs, -1, -1});
    if (n == 1) {
        int nt = sr_grammar_find(g, w[0]);
        if (nt >= 0 && nt < nlhs)
            return add_rule(g, (sr_rule){SR_RULE_UNIT, lhs, nt, -1});
        int t;
        SR_TRY(terminal(g, w[0], &t));
        return add_rule(g, (sr_rule){SR_RULE_TERMINAL, lhs, t, -1});
    }
    int left = lhs;
    for (int k = 0; k + 2 < n; k++) { /* left -> w[k] rest, rest a fresh nonterminal */
        char name[512];
        int x, rest, suffix = 1;
        do
            snprintf(name, sizeof name, "%s#%d", g->nonterminals[lhs], suffix++);
        while (sr_grammar_find(g, name) >= 0);
        SR_TRY(operand(g, w[k], nlhs, &x));
        SR_TRY(nonterminal(g, name, &rest));
        SR_TRY(add_rule(g, (sr_rule){SR_RULE_BINARY, left, x, rest}));
        left = rest;
    }
    int x, y;
    SR_TRY(operand(g, w[n - 2], nlhs, &x));
    SR_TRY(operand(g, w[n - 1], nlhs, &y));
    return add_rule(g, (sr_rule){SR_RULE_BINARY, left, x, y});
}

/* The lines of text, each with a NUL in place of its newline; comments removed. */
static char *copy_lines(const char *text)
{
    size_t n = strlen(text);
    char *s = sr_malloc(n + 1);
    if (!s)
        return NULL;
    memcpy(s, text, n + 1);
    for (char *c = s; *c; c++)
        if (*c == '#') /* a comment runs to the end of the line */
            while (*c && *c != '\n')
                *c++ = ' ';
    return s;
}

/* Pass 1: the left-hand sides, so that a symbol is known as a nonterminal wherever it is used. */
static sr_status read_left_sides(char *lines, struct sr_grammar_s *g)
{
    int line_no = 0;
    for (char *line = lines, *next; line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        line_no++;
        char *arrow = strstr(line, "->"), *w[2];
        if (arrow)
            *arrow = '\0';
        int n = split_words(line, w, 2);
        if (n == 0 && !arrow)
            continue; /* a blank or comment line */
        if (!arrow)
            return sr_error(SR_ERROR_PARSE, "grammar line %d: expected 'LHS -> symbols | ...', got '%s'", line_no, w[0]);
        if (n != 1)
            return sr_error(SR_ERROR_PARSE, "grammar line %d: the left-hand side must be one symbol", line_no);
        if (is_epsilon(w[0]))
            return sr_error(SR_ERROR_PARSE, "grammar line %d: '%s' (the empty word) cannot be a left-hand side",
                            line_no, w[0]);
        int index;
        SR_TRY(nonterminal(g, w[0], &index));
    }
    if (g->nnonterminals == 0)
        return sr_error(SR_ERROR_PARSE, "grammar: no rules (expected lines 'LHS -> symbols | ...')");
    return SR_SUCCESS;
}

/* Pass 2: the alternatives, as rules in normal form. */
static sr_status read_alternatives(char *lines, struct sr_grammar_s *g)
{
    const int nlhs = g->nnonterminals;
    int line_no = 0;
    for (char *line = lines, *next; line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        line_no++;
        char *arrow = strstr(line, "->");
        if (!arrow)
            continue;
        *arrow = '\0';
        char *w[kMaxSymbols] = {NULL};
        if (split_words(line, w, 1) != 1)
            continue; /* pass 1 has checked every left-hand side */
        const int lhs = sr_grammar_find(g, w[0]);
        const char *again = strstr(arrow + 2, "->");
        if (again)
            return sr_error(SR_ERROR_PARSE,
                            "grammar line %d, column %d: a second '->' (a rule is one line 'LHS -> symbols | ...')",
                            line_no, (int)(again - line) + 1);
        for (char *alt = arrow + 2, *bar; alt; alt = bar) {
            bar = strchr(alt, '|');
            if (bar)
                *bar++ = '\0';
            int n = split_words(alt, w, kMaxSymbols);
            if (n < 0)
                return sr_error(SR_ERROR_PARSE, "grammar line %d: an alternative has more than %d symbols", line_no,
                                kMaxSymbols);
            int kept = 0; /* "eps" words are the empty word */
            for (int k = 0; k < n; k++)
                if (!is_epsilon(w[k]))
                    w[kept++] = w[k];
            SR_TRY(add_alternative(g, lhs, w, kept, nlhs));
        }
    }
    return SR_SUCCESS;
}

static sr_status parse(const char *text, struct sr_grammar_s *g)
{
    char *first = copy_lines(text), *second = copy_lines(text);
    sr_status st = first && second ? read_left_sides(first, g)
                                   : sr_error(SR_ERROR_OUT_OF_MEMORY, "sr_grammar_parse: out of memory");
    if (st == SR_SUCCESS)
        st = read_alternatives(second, g);
    free(first);
    free(second);
    return st;
}

sr_status sr_grammar_parse(const char *text, sr_grammar *out)
{
    SR_CHECK_ARG(text != NULL && out != NULL, "sr_grammar_parse: the text or output pointer is NULL");
    struct sr_grammar_s *g = sr_calloc(1, sizeof *g);
    if (!g)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "sr_grammar_parse: out of memory");
    sr_status st = parse(text, g);
    if (st != SR_SUCCESS) {
        sr_grammar_free(g);
        return st;
    }
    g->start = 0;
    *out = g;
    return SR_SUCCESS;
}

sr_status sr_grammar_read(const char *path, sr_grammar *out)
{
    SR_CHECK_ARG(path != NULL && out != NULL, "sr_grammar_read: the path or output pointer is NULL");
    FILE *f = fopen(path, "rb");
    if (!f)
        return sr_error(SR_ERROR_IO, "%s: cannot open the grammar", path);
    size_t cap = 4096, n = 0;
    char *text = sr_malloc(cap);
    for (size_t got; text && (got = fread(text + n, 1, cap - n - 1, f)) > 0;) {
        n += got;
        if (n + 1 == cap) {
            char *grown = sr_realloc(text, cap * 2);
            if (!grown)
                free(text);
            text = grown;
            cap *= 2;
        }
    }
    bool failed = ferror(f);
    fclose(f);
    if (!text)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "%s: out of memory reading the grammar", path);
    if (failed) {
        free(text);
        return sr_error(SR_ERROR_IO, "%s: read error", path);
    }
    text[n] = '\0';
    sr_status st = sr_grammar_parse(text, out);
    free(text);
    return st == SR_SUCCESS ? st : sr_error_prefix(st, "%s", path);
}

sr_status sr_grammar_free(sr_grammar g)
{
    if (!g)
        return SR_SUCCESS;
    for (int i = 0; i < g->nnonterminals; i++)
        free(g->nonterminals[i]);
    for (int i = 0; i < g->nterminals; i++)
        free(g->terminals[i]);
    free(g->nonterminals);
    free(g->terminals);
    free(g->rules);
    free(g);
    return SR_SUCCESS;
}

const char *sr_grammar_start(sr_grammar g) { return g && g->nnonterminals ? g->nonterminals[g->start] : ""; }
