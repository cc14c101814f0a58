/* The state of a logistic regression fit (logistic.c's trust region) that its truncated CG
 * (logistic_cg.c) reads and works on. */
#ifndef SR_LOGISTIC_H
#define SR_LOGISTIC_H

#include "solver.h"

/* A vector of the trust region's N variables: the n coefficients where X lives (sr_vector_*, so
 * the truncated CG moves no vector over the bus) and the intercept's entry as a scalar beside
 * them (read only with an intercept). */
typedef struct {
    sr_dense v, b;
} sr_tr_vector;

/* The truncated CG's vectors: its result s, the residual r = −g − H·s, the direction, H·direction,
 * g itself, and with the preconditioner z = M⁻¹·r and a scratch for M·x. */
enum { T_S, T_R, T_DIR, T_HD, T_G, T_Z, T_MX, T_VECTORS };

typedef struct {
    sr_solver_problem pr;
    double C;
    bool intercept;      /* the variables are (w, b): N = n + 1 */
    int64_t N;
    const double *label; /* ±1 */
    double *z, *d, *t;   /* X·w + b, the Hessian's weights C·σ(1 − σ), scratch (m each) */
    sr_dense dw;         /* d where X lives, for the Hessian products */
    sr_dense qw;         /* with an intercept: Xᵀ·d (n) where X lives; with sum_d = Σ d, the */
    double sum_d;        /* intercept's rows of the Hessian */
    /* The truncated CG's preconditioner (Hsia, Chiang and Lin 2018, as LIBLINEAR): M = (1 − a)·I +
     * a·diag(H), a = 0.01, renewed with the Hessian at every accepted step; the trust region is then
     * measured in M's norm. */
    bool pcg;
    sr_matrix squares;           /* X∘X for diag(H) (NULL for bool X: X itself) */
    double *m_host;              /* M's N entries (the intercept's last) */
    sr_matrix m_diag, m_inverse; /* diag(M) and diag(M)⁻¹ of the n coefficients, where X lives */
    sr_tr_vector tv[T_VECTORS];  /* the truncated CG's vectors and numbers (logistic_cg.c) */
    sr_algo_scalars c;
} sr_logistic_state;

/* The truncated CG's vectors and scalars where X lives; freed by sr_logistic_cg_free (also after
 * a failed alloc). */
sr_status sr_logistic_cg_alloc(sr_logistic_state *lg);
void sr_logistic_cg_free(sr_logistic_state *lg);
/* Steihaug's truncated CG for H·s = −g inside ‖s‖ <= delta (M's norm with the preconditioner),
 * preconditioned by M when lg->pcg: g (N, host) in; s and the residual r = −g − H·s (N, host)
 * out; *steps grows by the Hessian products taken. */
sr_status sr_logistic_cg(sr_logistic_state *lg, double delta, const double *g, double *s, double *r, int *steps);

#endif
