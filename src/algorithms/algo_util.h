/* Helpers shared by the algorithms in src/algorithms. The algorithms call only the public API
 * (they run unchanged on every backend); they take core's error setter alone, to give their own
 * failures a message as precise as the library's. */
#ifndef SR_ALGO_UTIL_H
#define SR_ALGO_UTIL_H

#include "../core/error.h"
#include "sparsering.h"

/* Σ x[i]·y[i] over n doubles (the algorithms' host vector arithmetic). */
double sr_algo_dot(const double *x, const double *y, int64_t n);
/* sums[0..k) = the k sums that range(lo, hi, user, sums) adds for [lo, hi), over [0, n) in an
 * order that does not depend on the threads: SR_ALGO_SUM_CHUNKS contiguous ranges, each summed by
 * one thread in order, then the ranges' sums in order (an OpenMP reduction adds the threads' sums
 * in the order they finish, and the last bits of a solver's loss and gradient moved from run to
 * run). k <= SR_ALGO_SUM_MAX. */
#define SR_ALGO_SUM_CHUNKS 256
#define SR_ALGO_SUM_MAX 4
void sr_algo_sum_ranges(int64_t n, int k, void (*range)(int64_t lo, int64_t hi, void *user, double *sums), void *user,
                        double *sums);
/* Refuses a non-finite entry of X (float32 or float64; bool passes) with a message that names X,
 * the row and the column: "fn: X holds NaN at row 3, column 17; ...". Checked where X lives: its
 * row sums (NaN and infinity carry into them) by one sr_reduce_rows, whose m numbers come back,
 * then the row of each sum that is not finite (a finite row whose sum overflows is let through). */
sr_status sr_algo_refuse_nonfinite(const char *fn, const char *name, sr_context ctx, sr_matrix X);
/* The same for a host float64 vector: "fn: y holds NaN at 12". */
sr_status sr_algo_refuse_nonfinite_vector(const char *fn, const char *name, const double *x, int64_t n);
/* Seconds on a monotonic clock. */
double sr_algo_now(void);
/* The location a matrix lives in. */
sr_location sr_algo_where(sr_matrix A);
/* Entries of A. */
int64_t sr_algo_nnz(sr_matrix A);
/* A new nrows x ncols bool matrix in `where` holding the given (host) pairs; repeats allowed. */
sr_status sr_algo_pairs(sr_context ctx, int64_t nrows, int64_t ncols, int64_t n, const int64_t *rows,
                        const int32_t *cols, sr_location where, sr_matrix *M);
/* An nrows x S bool matrix in `where` with one entry in each column s: at row rows[s], or at
 * row0 + s when rows is NULL (rows NULL, row0 0 and S = nrows give the identity). */
sr_status sr_algo_one_per_column(sr_context ctx, int64_t nrows, int64_t S, const int64_t *rows, int64_t row0,
                                 sr_location where, sr_matrix *M);
/* A square graph's pattern as a bool matrix: A itself when bool (*owned = NULL), else a cast copy
 * (*owned = the copy, to free). fn names the caller in errors. */
sr_status sr_algo_pattern(const char *fn, sr_context ctx, sr_matrix A, sr_matrix *pattern, sr_matrix *owned);
/* *C = *C ∪ N (or), replacing *C. */
sr_status sr_algo_union_into(sr_context ctx, sr_matrix *C, sr_matrix N);
/* The end of a query: on failure frees result and returns st; on success sets stats (when not
 * NULL) with the time since t0 and hands result to *out. */
sr_status sr_algo_deliver(sr_status st, sr_matrix result, sr_matrix *out, sr_query_stats local, double t0,
                          sr_query_stats *stats);
/* Steps an iteration queues between the host's looks at its numbers kept where the vectors live
 * (sr_vector_dot_s and the rest; each step scaled by a go-on flag, so steps past the stop change
 * nothing): on the GPU a look waits for the device, so every 8 steps; on the host, where it costs
 * nothing, every step; with a callback to feed, every step. SPARSERING_LOOK_EVERY sets it on
 * either (the tests run the steps queued past the stop on the CPU with it). */
int sr_algo_look_every(sr_location where, bool every_step);
/* An iteration's numbers as float64 scalars where its vectors live (one vector of `count`, s[k]
 * a length-1 view of each), and the host's copy of them at its last look. */
#define SR_ALGO_MAX_SCALARS 32
typedef struct {
    sr_dense all;
    sr_dense s[SR_ALGO_MAX_SCALARS];
    double seen[SR_ALGO_MAX_SCALARS];
} sr_algo_scalars;
/* count scalars in `where`, set to seen[] as the caller filled it (c is not cleared). */
sr_status sr_algo_scalars_alloc(sr_context ctx, sr_location where, int count, sr_algo_scalars *c);
/* seen = the scalars (on the GPU: waits for the work queued before). */
sr_status sr_algo_scalars_look(sr_context ctx, sr_algo_scalars *c);
/* Calls the progress callback, if any: SR_ERROR_CANCELLED when it asks to stop. */
sr_status sr_algo_progress(const char *fn, const sr_query_options *options, int64_t round, int64_t entries);

#endif
