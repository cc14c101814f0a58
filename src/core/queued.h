/* Internal forms of public calls that, with every operand on the device, return once their work is
 * queued on the context's stream instead of waiting for it (as the device-scalar vector calls do):
 * for the library's iterative solvers, whose steps then run with no host wait between them
 * (src/algorithms/ridge.c, logistic.c, pagerank.c). With an operand on the host they wait, as the public
 * calls. The next call on the context reads their results in stream order. */
#ifndef SR_CORE_QUEUED_H
#define SR_CORE_QUEUED_H

#include "sparsering.h"

sr_status sr_fused_pattern_queued(sr_context ctx, sr_pattern_form form, const sr_dense *w, double alpha, sr_matrix X,
                                  const sr_dense *v, const sr_dense *y, double beta, const sr_dense *z);
/* y = A·x over plus-times, no mask or accumulate (PageRank's product). */
sr_status sr_spmv_queued(sr_context ctx, const sr_dense *y, sr_matrix A, const sr_dense *x);

#endif
