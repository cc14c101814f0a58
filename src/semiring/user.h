/* Semirings the caller defines (sr_semiring_define): a registry of their definitions for the
 * process, each with its host kernels compiled at definition (src/cpu/cpu_user.c). Their
 * sr_semiring values start at SR_USER_SEMIRING_FIRST. */
#ifndef SR_USER_SEMIRING_H
#define SR_USER_SEMIRING_H

#include <stdbool.h>
#include <stdint.h>

#include "sparsering.h"

#define SR_USER_SEMIRING_FIRST 64

/* Row i of A ⊕.⊗ B into acc[0, n) (⊕ from the identity, A's entries in order), then into row i of
 * C at the columns allow permits (all when allow is NULL), ⊕ C's value first when accumulating.
 * B's element (k, j) is at b[k * b_rs + j * b_cs], C's (i, j) at c[i * c_rs + j * c_cs]. */
typedef void (*sr_user_dense_row_fn)(int64_t i, const int64_t *rowptr, const int32_t *colind, const void *av,
                                     const void *b, int64_t b_rs, int64_t b_cs, int64_t n, void *c, int64_t c_rs,
                                     int64_t c_cs, void *acc, const unsigned char *allow, int accumulate);
/* Rows [r0, r1) of y = A ⊕.⊗ x, each sum from the identity in a register, A's entries in order (x's
 * elements xs apart, y's ys apart); a row whose mask row is empty (or, complemented, not empty)
 * keeps y's value; ⊕ y's value first when accumulating. No mask when mask_rowptr is NULL. */
typedef void (*sr_user_spmv_rows_fn)(int64_t r0, int64_t r1, const int64_t *rowptr, const int32_t *colind,
                                     const void *av, const void *x, int64_t xs, void *y, int64_t ys,
                                     const int64_t *mask_rowptr, int complement, int accumulate);
/* Row i of A ⊕.⊗ B (sparse B) into acc[j] at the columns it writes to cols (unsorted, first product
 * then ⊕, A's entries in order; mark[j] == i marks one seen, mask_mark[j] == i one the mask holds,
 * which complement inverts; no mask when mask_mark is NULL): returns how many. */
typedef int64_t (*sr_user_mxm_row_fn)(int64_t i, const int64_t *a_rowptr, const int32_t *a_colind, const void *av,
                                      const int64_t *b_rowptr, const int32_t *b_colind, const void *bv, int64_t *mark,
                                      const int64_t *mask_mark, int complement, void *acc, int32_t *cols);
/* *out = *a ⊕ *b (and ⊗ for the mul kernel). */
typedef void (*sr_user_add_fn)(const void *a, const void *b, void *out);

/* S's entries [e0, e1), entry e0 in row i: out[e] = ⊕_k A(i, k) ⊗ B(colind[e], k) (cpu_sddmm.c's
 * order), then S's value ⊗ that when sv is not NULL; A and B row-major with K columns. */
typedef void (*sr_user_sddmm_range_fn)(const int64_t *rowptr, const int32_t *colind, const void *sv, const void *a,
                                       const void *b, int64_t K, int64_t i, int64_t e0, int64_t e1, void *out);

typedef struct sr_user_semiring {
    sr_semiring_def def;           /* the definition (the strings are the registry's) */
    struct sr_jit_library *library; /* its compiled kernels, loaded for the process */
    sr_user_spmv_rows_fn spmv_rows;
    sr_user_dense_row_fn dense_row;
    sr_user_mxm_row_fn mxm_row;
    sr_user_add_fn add, mul; /* element by element: ewise, Kronecker, reduce, accumulate */
    sr_user_sddmm_range_fn sddmm_range;
} sr_user_semiring;

/* A user metric's kernels (cpu_user.c): the two norms of rows [r0, r1) (the user's norm sum and
 * 0) into norms[2 r], values float32 when single; and query row j's distances to every index
 * row through the inverted index XT, as cpu_distance.c's query_by_intersection, into
 * out[i * col_stride] (float32 when out_single). */
typedef void (*sr_user_norms_fn)(int64_t r0, int64_t r1, const int64_t *rowptr, const void *values, int single,
                                 double p, double *norms);
typedef void (*sr_user_query_fn)(int64_t j, const int64_t *q_rowptr, const int32_t *q_colind, const void *qv,
                                 const int64_t *xt_rowptr, const int32_t *xt_colind, const void *xtv, int single,
                                 int64_t n, double *acc, const double *qnorm, const double *xnorm, double d, double p,
                                 void *out, int64_t col_stride, int out_single);

/* A maximum over the union of query row j and each index row of X (cpu_chebyshev.h's walk): qdense,
 * qmark and seen hold X's column count (qmark and seen -1 at first), alone two doubles per entry
 * of the widest query row. */
typedef void (*sr_user_query_union_fn)(int64_t j, const int64_t *q_rowptr, const int32_t *q_colind, const void *qv,
                                       const int64_t *x_rowptr, const int32_t *x_colind, const void *xv, int single,
                                       int64_t n, double *qdense, int64_t *qmark, int64_t *seen, double *alone,
                                       const double *qnorm, const double *xnorm, double d, double p, void *out,
                                       int64_t col_stride, int out_single);

typedef struct sr_user_metric {
    sr_metric_def def;
    struct sr_jit_library *library;
    sr_user_norms_fn norms;
    sr_user_query_fn query;             /* sums, and maxima over the shared columns */
    sr_user_query_union_fn query_union; /* maxima over the union */
    bool walks_union;                   /* reduced by max over the union: query_union runs */
} sr_user_metric;

#define SR_USER_METRIC_FIRST 64

bool sr_metric_is_user(int m);
const sr_user_metric *sr_user_metric_of(int m);
/* k-NN keeps the largest values: the inner product, and user metrics defined as similarities. */
bool sr_metric_keeps_largest(int m);
/* A user metric's expressions as the kernels of either backend spell them: the term a shared
 * column adds (over the union, split as metric.h splits the built-ins'), the norms' terms, the
 * second sum's, the distance; sr_user_metric_helpers defines sr_pow, sr_snap, sr_clamp and
 * sr_norm_product (metric.h's), each declared SR_FN, which the source defines first. */
typedef struct sr_user_metric_terms {
    const char *norm, *norm2, *pair2, *distance, *term, *term2;
    bool two_sums, maximum;
    bool walks_union; /* reduced by max over the union: the kernels walk both rows, not only the shared columns */
} sr_user_metric_terms;
sr_user_metric_terms sr_user_metric_terms_of(const sr_metric_def *d);
extern const char sr_user_metric_helpers[];
sr_status sr_cpu_user_metric_compile(sr_user_metric *u);

/* A definition's string copied (NULL stays NULL), and two of them compared (NULL equals NULL). */
char *sr_user_copy_text(const char *s);
bool sr_user_same_text(const char *a, const char *b);
/* A user definition's name: [a-z][a-z0-9_]*, at most 63 (the error names fn). */
sr_status sr_user_check_name(const char *fn, const char *name);

bool sr_semiring_is_user(int s);
/* The definition and kernels of a user semiring, or NULL for any other value. */
const sr_user_semiring *sr_user_semiring_of(int s);

/* ⊕ of a built-in monoid's name as a C expression over a and b (NULL for any other name), and its
 * identity for a value type: what the kernels' sources spell, and what sr_semiring_define accepts
 * without an identity. */
const char *sr_user_monoid_add(const char *name);
const char *sr_user_monoid_identity(const char *name, sr_type type);

/* Compiles a definition's host kernels (cpu_user.c); u->def is filled in. */
sr_status sr_cpu_user_compile(sr_user_semiring *u);

#endif
