/* A user's CG on the public API, on (XᵀX + λI)·w = b from w = 0, written two ways: with host
 * numbers (sr_vector_dot returns each sum to the host: on a GPU every call waits for it) or with
 * scalars where the vectors live (sr_vector_dot_s, _axpby_s, _divide: nothing waits until the host
 * reads r·r). The two give the same bits (the same sums and products, α and β formed in float64
 * either way). Shared by tests/test_fused.c (which checks that) and bench/bench_cg_scalars.c
 * (which times them). */
#ifndef SPARSERING_USER_CG_H
#define SPARSERING_USER_CG_H

#include <stdbool.h>

#include "sparsering.h"

#define USER_CG_TRY(call)                                                                          \
    do {                                                                                           \
        if ((st = (call)) != SR_SUCCESS)                                                           \
            goto done;                                                                             \
    } while (0)

/* `steps` CG steps in `where` (X's location; b there too); with scalars the host reads r·r every
 * `look_every` steps (0: only at the end), where a solver would test its tolerance. w (n doubles
 * on the host) gets the iterate unless NULL, *rr_out the last r·r. The first failing call's
 * status is returned (its message in sr_last_error()). */
static inline sr_status user_cg(sr_context ctx, sr_location where, sr_matrix X, const sr_dense *b, double lambda,
                                int steps, bool scalars, int look_every, double *w_out, double *rr_out)
{
    const int64_t n = b->nrows;
    sr_dense w = {0}, r = {0}, p = {0}, q = {0}, s[4] = {{0}}; /* r·r, p·q then β, α, next r·r */
    double rr = 0, pq, next, seen = 0;
    sr_dense seen_view = sr_vector_view(&seen, 1, SR_TYPE_FLOAT64, SR_HOST);
    sr_status st = SR_SUCCESS;
    USER_CG_TRY(sr_vector_alloc(ctx, n, SR_TYPE_FLOAT64, where, &w));
    USER_CG_TRY(sr_vector_alloc(ctx, n, SR_TYPE_FLOAT64, where, &r));
    USER_CG_TRY(sr_vector_alloc(ctx, n, SR_TYPE_FLOAT64, where, &p));
    USER_CG_TRY(sr_vector_alloc(ctx, n, SR_TYPE_FLOAT64, where, &q));
    for (int i = 0; i < 4; i++)
        USER_CG_TRY(sr_vector_alloc(ctx, 1, SR_TYPE_FLOAT64, where, &s[i]));
    USER_CG_TRY(sr_vector_copy(ctx, &r, b));
    USER_CG_TRY(sr_vector_copy(ctx, &p, b));
    if (scalars)
        USER_CG_TRY(sr_vector_dot_s(ctx, &r, &r, &s[0]));
    else
        USER_CG_TRY(sr_vector_dot(ctx, &r, &r, &rr));
    for (int it = 0; it < steps; it++) {
        USER_CG_TRY(sr_fused_pattern(ctx, SR_FORM_XTVXY, &q, 1.0, X, NULL, &p, lambda, &p));
        if (scalars) {
            USER_CG_TRY(sr_vector_dot_s(ctx, &p, &q, &s[1]));
            USER_CG_TRY(sr_vector_divide(ctx, &s[2], &s[0], &s[1]));           /* α = r·r / p·q */
            USER_CG_TRY(sr_vector_axpby_s(ctx, 1.0, &s[2], &p, 1.0, NULL, &w)); /* w += α·p */
            USER_CG_TRY(sr_vector_axpby_s(ctx, -1.0, &s[2], &q, 1.0, NULL, &r)); /* r −= α·q */
            USER_CG_TRY(sr_vector_dot_s(ctx, &r, &r, &s[3]));
            USER_CG_TRY(sr_vector_divide(ctx, &s[1], &s[3], &s[0]));          /* β, in p·q's place */
            USER_CG_TRY(sr_vector_axpby_s(ctx, 1.0, NULL, &r, 1.0, &s[1], &p)); /* p = r + β·p */
            USER_CG_TRY(sr_vector_copy(ctx, &s[0], &s[3]));
            if (look_every > 0 && it % look_every == look_every - 1) /* the one wait */
                USER_CG_TRY(sr_vector_copy(ctx, &seen_view, &s[0]));
        } else {
            USER_CG_TRY(sr_vector_dot(ctx, &p, &q, &pq));
            const double a = rr / pq;
            USER_CG_TRY(sr_vector_axpby(ctx, a, &p, 1.0, &w));
            USER_CG_TRY(sr_vector_axpby(ctx, -a, &q, 1.0, &r));
            USER_CG_TRY(sr_vector_dot(ctx, &r, &r, &next));
            USER_CG_TRY(sr_vector_axpby(ctx, 1.0, &r, next / rr, &p));
            rr = next;
        }
    }
    if (scalars) {
        USER_CG_TRY(sr_vector_copy(ctx, &seen_view, &s[0]));
        rr = seen;
    }
    *rr_out = rr;
    if (w_out) {
        sr_dense wh = sr_vector_view(w_out, n, SR_TYPE_FLOAT64, SR_HOST);
        USER_CG_TRY(sr_vector_copy(ctx, &wh, &w));
    }
done:
    sr_vector_free(ctx, &w), sr_vector_free(ctx, &r), sr_vector_free(ctx, &p), sr_vector_free(ctx, &q);
    for (int i = 0; i < 4; i++)
        sr_vector_free(ctx, &s[i]);
    return st;
}

#undef USER_CG_TRY

#endif
