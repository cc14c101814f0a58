/* The distance pipeline's shared steps (src/ops/distance.c), for the operations built on it:
 * pairwise distances, k-NN, radius neighbours. */
#ifndef SR_OPS_DISTANCE_PREP_H
#define SR_OPS_DISTANCE_PREP_H

#include "../core/distance.h"
#include "../core/matrix.h"

/* Inputs ready for a backend, and what to free afterwards. */
typedef struct sr_distance_prep {
    sr_distance_inputs in;
    struct sr_context_s *ctx;
    sr_location where;
    struct sr_matrix_s *q_cast, *x_cast, *xt;
    double *qnorm, *xnorm;
    void *q_mag, *x_mag; /* Chebyshev on the device: magnitude orders (mag_bytes each) */
    /* host k-NN by the overlap (sr_cpu_knn_overlap_rows): taken, its mode, the index rows' order */
    bool overlap;
    int overlap_mode;
    const int32_t *order;
    int32_t *own_order; /* the order of a cast index, for this call only */
    /* device k-NN and radius deciding as they score (sr_cuda_knn_tiles_rows, sr_cuda_radius_tiles_rows):
     * taken, so no block of n a query */
    bool tiles;
    /* device k-NN with the dense panel on tensor cores (sr_cuda_knn_panel_rows): its plan, or NULL */
    struct sr_cuda_panel *panel;
} sr_distance_prep;

/* Checks the pair and readies it for the backend where the index lives: values cast to the
 * compute type `ctype`, checked for the metric, the index's inverted form, row norms. On
 * failure nothing is left to release. */
sr_status sr_distance_prepare(const char *fn, struct sr_context_s *ctx, struct sr_matrix_s *queries,
                              struct sr_matrix_s *index, sr_metric metric, double metric_arg, sr_type ctype,
                              sr_distance_prep *p);
void sr_distance_release(sr_distance_prep *p);
/* M's row norms for a metric and p (2 a row, sr_metric_norm_add) where M lives, in memory counted
 * on `owner` (NULL for no rows). */
sr_status sr_distance_norms(struct sr_context_s *owner, int threads, const struct sr_matrix_s *M, sr_metric metric,
                            double p, double **norms);
/* What an index keeps from its first search (src/ops/distance_index.c): its transpose; whether
 * its values passed the finite (nonnegative false) or nonnegative check, and marking them so; its
 * row norms for a metric and p (2 doubles a row, where X lives). */
sr_status sr_distance_index_transpose(struct sr_matrix_s *X, const struct sr_matrix_s **xt);
bool sr_distance_index_checked(struct sr_matrix_s *X, bool nonnegative);
void sr_distance_index_mark_checked(struct sr_matrix_s *X, bool nonnegative);
sr_status sr_distance_index_norms(struct sr_context_s *ctx, struct sr_matrix_s *X, sr_metric metric, double p,
                                  const double **norms);
/* The host index's rows ordered by their kept norms for a metric and p (sr_cpu_disjoint_order),
 * kept with them; the norms must be kept first. NULL for no rows. */
sr_status sr_distance_index_order(struct sr_matrix_s *X, sr_metric metric, double p, const int32_t **order);
/* Host k-NN and radius take the overlap path (src/cpu/cpu_overlap.c; SPARSERING_KNN_OVERLAP=0
 * keeps the dense path, =1 takes it for every query, else each query's cost chooses): sets
 * p->overlap, p->overlap_mode and p->order (kept with an index's norms, built for this call for a
 * cast copy), and makes sure of the inverted form. */
sr_status sr_distance_overlap_setup(sr_distance_prep *p, struct sr_matrix_s *index);
/* Distances of query rows [q0, q1) to every index row, into `out` (where the work runs). */
sr_status sr_distance_rows(const sr_distance_prep *p, int64_t q0, int64_t q1, const sr_strided_out *out);
/* The strided view of rows [r0, ...) of a dense output. */
sr_strided_out sr_distance_strided_rows(const sr_dense *D, int64_t r0);
/* Copies `rows` rows of a staged block (packed in D's layout, `rows` x D->ncols) into D from row r0. */
sr_status sr_distance_copy_rows_out(struct sr_context_s *ctx, const sr_dense *D, int64_t r0, const void *staged,
                                    sr_location staged_at, int64_t rows);
/* Query rows per batch so that `per_row` bytes each stay under the workspace limit (and a
 * batch's block under 1 GiB); at least 1. */
int64_t sr_distance_batch_rows(const struct sr_context_s *ctx, sr_location where, int64_t nq, size_t per_row);

/* Queries a batch of the device tiles (k-NN, radius) takes at most: a progress report (and a chance
 * to cancel) at least this often, and a batch's grid of queries × tiles stays in bounds. */
#define SR_TILE_BATCH_CAP ((int64_t)16384)

#endif
