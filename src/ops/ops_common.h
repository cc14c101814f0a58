/* Checks shared by the public entry points in src/ops. */
#ifndef SR_OPS_COMMON_H
#define SR_OPS_COMMON_H

#include "../core/error.h"
#include "../core/keep_rule.h"
#include "../core/matrix.h"
#include "../core/validate.h"

/* ctx and A are usable together: both non-NULL, and a device matrix is on ctx's device. */
sr_status sr_ops_check_matrix(const char *fn, const struct sr_context_s *ctx, const struct sr_matrix_s *A);

/* A graph's mode is known and its distance type is float32 or float64 (k-NN and radius graphs). */
sr_status sr_ops_check_graph_output(const char *fn, sr_graph_mode mode, sr_type type);

/* A new CSR matrix, where the dense view lives, of the view's elements that the rule keeps. */
sr_status sr_ops_dense_to_csr(struct sr_context_s *ctx, const sr_dense *dense, const sr_keep_rule *rule,
                              struct sr_matrix_s **out);

#endif
