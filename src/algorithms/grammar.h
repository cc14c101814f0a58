/* A context-free grammar in weak Chomsky normal form, as the CFPQ fixpoint reads it. */
#ifndef SR_ALGO_GRAMMAR_H
#define SR_ALGO_GRAMMAR_H

#include <stdint.h>

#include "sparsering.h"

typedef enum { SR_RULE_TERMINAL, SR_RULE_EPSILON, SR_RULE_UNIT, SR_RULE_BINARY } sr_rule_kind;

typedef struct {
    sr_rule_kind kind;
    int lhs;
    int a, b; /* TERMINAL: a = terminal; UNIT: a = nonterminal; BINARY: a b = nonterminals */
} sr_rule;

struct sr_grammar_s {
    char **nonterminals; /* nonterminal names: those of the text, then the ones normalization made */
    int nnonterminals;
    char **terminals;
    int nterminals;
    sr_rule *rules;
    int nrules;
    int start;
};

/* The nonterminal called name, or -1. */
int sr_grammar_find(const struct sr_grammar_s *g, const char *name);

#endif
