/* The one definition of the distance metrics, shared by the CPU backend and the CUDA backend
 * (plain inline functions, usable from C and .cu; in CUDA the metric is a template constant, so
 * every switch below folds away).
 *
 * Every metric is computed from the columns where BOTH rows have a stored entry (the
 * intersection) plus per-row norms. Metrics whose ⊗ does not annihilate (sum |q-x| over the
 * union of the rows' columns) are split as
 *     sum over union f(q,x) = N(q) + N(x) + sum over intersection [f(q,x) - f(q,0) - f(0,x)]
 * with N(v) = sum over the row's entries of f(v,0). This is exact algebra, not an expansion
 * like |q|^2 + |x|^2 - 2 q.x: the correction terms are formed per column and summed in float64,
 * so two equal rows give exactly 0. Chebyshev (max, not a sum) has no such split and walks the
 * union directly.
 *
 * q is the query's value (first argument), x the index row's value. */
#ifndef SR_METRIC_H
#define SR_METRIC_H

#include <math.h>
#include <stdint.h>

#include "sparsering.h"

#ifdef __CUDACC__
#define SR_HD __host__ __device__ __forceinline__
#define SR_HD_CONST __host__ __device__ constexpr /* usable in if constexpr / template arguments */
#else
#define SR_HD static inline
#define SR_HD_CONST static inline
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* How the intersection is accumulated. */
typedef enum sr_metric_kind {
    SR_MK_PRODUCT = 0, /* acc += q x            (l2, sqeuclidean, cosine, correlation, inner product) */
    SR_MK_PAIR = 1,    /* acc += [q!=0][x!=0]   (jaccard, dice, russellrao) */
    SR_MK_SQRT = 2,    /* acc += sqrt(q x)      (hellinger) */
    SR_MK_KL = 3,      /* acc += q log(q/x)     (kl divergence, both > 0) */
    SR_MK_UNION = 4,   /* acc += f(q,x) - f(q,0) - f(0,x), float64 (the non-annihilating sums) */
    SR_MK_MAX = 5      /* chebyshev: walks the union */
} sr_metric_kind;

SR_HD_CONST sr_metric_kind sr_metric_kind_of(sr_metric m)
{
    switch (m) {
    case SR_METRIC_L2: case SR_METRIC_SQEUCLIDEAN: case SR_METRIC_COSINE: case SR_METRIC_CORRELATION:
    case SR_METRIC_INNER_PRODUCT:
        return SR_MK_PRODUCT;
    case SR_METRIC_JACCARD: case SR_METRIC_DICE: case SR_METRIC_RUSSELL_RAO:
        return SR_MK_PAIR;
    case SR_METRIC_HELLINGER:
        return SR_MK_SQRT;
    case SR_METRIC_KL_DIVERGENCE:
        return SR_MK_KL;
    case SR_METRIC_CHEBYSHEV:
        return SR_MK_MAX;
    default:
        return SR_MK_UNION;
    }
}

/* Bray-Curtis needs a second union sum (its denominator). */
SR_HD_CONST int sr_metric_accumulators(sr_metric m) { return m == SR_METRIC_BRAY_CURTIS ? 2 : 1; }

/* Metrics that take square roots or logarithms of the values. */
SR_HD int sr_metric_needs_nonnegative(sr_metric m)
{
    return m == SR_METRIC_HELLINGER || m == SR_METRIC_KL_DIVERGENCE || m == SR_METRIC_JENSEN_SHANNON;
}

/* k-NN keeps the largest values instead of the smallest. */
SR_HD int sr_metric_is_similarity(sr_metric m) { return m == SR_METRIC_INNER_PRODUCT; }

/* v^p for v >= 0, p > 0: by multiplications for whole p up to 64 (Minkowski's usual 3 or 4 costs a
 * few products, no logarithm), else exp2(p log2 v), which on the GPU costs a fraction of pow's
 * extended-precision path and stays within ~|p log2 v| ulps. */
SR_HD double sr_metric_pow(double v, double p)
{
    if (v == 0.0)
        return 0.0;
    if (p >= 1.0 && p <= 64.0 && p == (double)(int)p) { /* the range first: (int)p of a huge p is undefined */
        double r = 1.0, b = v;
        for (int n = (int)p; n > 0; n >>= 1) {
            if (n & 1)
                r *= b;
            b *= b;
        }
        return r;
    }
    return exp2(p * log2(v));
}

/* f(q, x) of the union metrics; the second function is Bray-Curtis's denominator. */
SR_HD double sr_metric_union_f(sr_metric m, double q, double x, double p)
{
    double diff = fabs(q - x);
    switch (m) {
    case SR_METRIC_L2_UNEXPANDED: case SR_METRIC_SQEUCLIDEAN_UNEXPANDED:
        return diff * diff;
    case SR_METRIC_MINKOWSKI:
        return sr_metric_pow(diff, p);
    case SR_METRIC_CANBERRA: {
        double den = fabs(q) + fabs(x);
        return den > 0.0 ? diff / den : 0.0;
    }
    case SR_METRIC_HAMMING:
        return q != x ? 1.0 : 0.0;
    case SR_METRIC_JENSEN_SHANNON: {
        /* two chosen terms added, as a user metric's expression spells them: written as t += x·log,
         * the GPU's compiler fused the second product into the sum (one rounding) where the
         * expression's form rounds twice, and the two differed in the last bit */
        const double mid = 0.5 * (q + x);
        const double tq = q > 0.0 ? q * log(q / mid) : 0.0, tx = x > 0.0 ? x * log(x / mid) : 0.0;
        return tq + tx;
    }
    default: /* l1, bray-curtis numerator */
        return diff;
    }
}

SR_HD double sr_metric_union_g(double q, double x) { return fabs(q + x); }

/* What one stored entry v of a row adds to its norms n0, n1. */
SR_HD void sr_metric_norm_add(sr_metric m, double v, double p, double *n0, double *n1)
{
    switch (sr_metric_kind_of(m)) {
    case SR_MK_PRODUCT:
        *n0 += v * v;
        *n1 += v;
        break;
    case SR_MK_PAIR:
        *n0 += v != 0.0 ? 1.0 : 0.0;
        break;
    case SR_MK_SQRT:
        *n0 += v;
        break;
    case SR_MK_UNION:
        *n0 += sr_metric_union_f(m, v, 0.0, p);
        *n1 += sr_metric_union_g(v, 0.0);
        break;
    case SR_MK_MAX: /* the row's largest |v|, folded as the union walk folds |0 - x| */
        *n0 = fmax(*n0, fabs(0.0 - v));
        break;
    default:
        break;
    }
}

/* What a column where both rows have entries adds to the accumulators. */
SR_HD void sr_metric_intersect(sr_metric m, double q, double x, double p, double *a0, double *a1)
{
    switch (sr_metric_kind_of(m)) {
    case SR_MK_PRODUCT:
        *a0 += q * x;
        break;
    case SR_MK_PAIR:
        *a0 += (q != 0.0 && x != 0.0) ? 1.0 : 0.0;
        break;
    case SR_MK_SQRT:
        *a0 += sqrt(q * x);
        break;
    case SR_MK_KL:
        if (q > 0.0 && x > 0.0)
            *a0 += q * log(q / x);
        break;
    case SR_MK_UNION:
        *a0 += sr_metric_union_f(m, q, x, p) - sr_metric_union_f(m, q, 0.0, p) - sr_metric_union_f(m, 0.0, x, p);
        if (m == SR_METRIC_BRAY_CURTIS)
            *a1 += sr_metric_union_g(q, x) - sr_metric_union_g(q, 0.0) - sr_metric_union_g(0.0, x);
        break;
    default:
        break;
    }
}

SR_HD double sr_metric_clamp(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

/* The expanded forms (|q|^2 + |x|^2 - 2 q.x, 1 - q.x / |q||x|) cancel: summed in another order
 * than the norms, q.x of a row with itself leaves a few ulps of the scale instead of 0. Such
 * residues below 64 float64 ulps of the scale are noise, so they are 0 (scikit-learn gets its
 * exact 0 for a row against itself by zeroing the diagonal when X is Y). */
SR_HD double sr_metric_snap(double v, double scale) { return v <= 64.0 * 2.220446049250313e-16 * scale ? 0.0 : v; }

/* |q||x| from the squared norms by one square root of their product where it neither overflows
 * nor underflows: the ties of count data (q.x = |q||x|/2 when 4(q.x)^2 = |q|^2 |x|^2) then come
 * out exact, since the square root of a perfect square is. sqrt(q0)·sqrt(x0) rounds twice, and
 * put 44,096 of the 80,398 cosine-0.5 pairs of 20K PyPI summaries (word counts) above 0.5. */
SR_HD double sr_metric_norm_product(double q0, double x0)
{
    const double both = q0 * x0;
    return both > 2.2250738585072014e-308 && both <= 1.7976931348623157e308 ? sqrt(both) : sqrt(q0) * sqrt(x0);
}

/* The distance from the accumulators, the two rows' norms and the column count d. */
SR_HD double sr_metric_finalize(sr_metric m, double a0, double a1, double q0, double q1, double x0, double x1,
                                double d, double p)
{
    switch (m) {
    case SR_METRIC_L2:
        return sqrt(sr_metric_snap(q0 + x0 - 2.0 * a0, q0 + x0));
    case SR_METRIC_SQEUCLIDEAN:
        return sr_metric_snap(q0 + x0 - 2.0 * a0, q0 + x0);
    case SR_METRIC_L2_UNEXPANDED:
        return sqrt(fmax(0.0, q0 + x0 + a0));
    case SR_METRIC_MINKOWSKI:
        return pow(fmax(0.0, q0 + x0 + a0), 1.0 / p);
    case SR_METRIC_HAMMING:
        return fmax(0.0, q0 + x0 + a0) / d;
    case SR_METRIC_JENSEN_SHANNON:
        return sqrt(0.5 * fmax(0.0, q0 + x0 + a0));
    case SR_METRIC_SQEUCLIDEAN_UNEXPANDED: case SR_METRIC_L1: case SR_METRIC_CANBERRA:
        return fmax(0.0, q0 + x0 + a0);
    case SR_METRIC_BRAY_CURTIS: {
        double den = q1 + x1 + a1;
        return den > 0.0 ? fmax(0.0, q0 + x0 + a0) / den : 0.0;
    }
    case SR_METRIC_JACCARD: {
        double uni = q0 + x0 - a0;
        return uni > 0.0 ? 1.0 - a0 / uni : 0.0;
    }
    case SR_METRIC_DICE:
        return q0 + x0 > 0.0 ? 1.0 - 2.0 * a0 / (q0 + x0) : 0.0;
    case SR_METRIC_RUSSELL_RAO:
        return (d - a0) / d;
    case SR_METRIC_COSINE: {
        double den = sr_metric_norm_product(q0, x0);
        return den > 0.0 ? sr_metric_snap(sr_metric_clamp(1.0 - a0 / den, 0.0, 2.0), 1.0) : 1.0;
    }
    case SR_METRIC_CORRELATION: {
        double vq = q0 - q1 * q1 / d, vx = x0 - x1 * x1 / d;
        if (!(vq > 0.0 && vx > 0.0))
            return 1.0;
        return sr_metric_snap(sr_metric_clamp(1.0 - (a0 - q1 * x1 / d) / sqrt(vq * vx), 0.0, 2.0), 1.0);
    }
    case SR_METRIC_HELLINGER:
        return sqrt(fmax(0.0, 0.5 * (q0 + x0) - a0));
    default: /* kl divergence, inner product, chebyshev: the accumulator itself */
        (void)a1;
        return a0;
    }
}

/* For a pair that shares no column the accumulators stay 0, so the distance is
 * sr_metric_finalize(m, 0, 0, query norms, x0, x1): a function of the index row's norms alone.
 * The overlap path (src/cpu/cpu_overlap.c) needs the index rows in an order along which this
 * no-overlap distance never improves: by a key ascending (sr_metric_disjoint_key), or by index
 * where it is one constant (cosine and Russell-Rao 1, KL divergence and the inner product 0).
 * The key is x0 where the distance is a non-decreasing function of it (every step of its formula
 * is monotone, so its rounding is too; Bray-Curtis's x0 and x1 are the same sum, so its
 * (q0 + x0) / (q1 + x1) is 0 or 1; Chebyshev's is max(‖q‖∞, ‖x‖∞), its norms being the rows'
 * largest |v|). Correlation's is 1 + q1·t / (d·√vq) with t = x1 / √vx, the row's sum over its
 * spread (t = 0 where vx is not positive, where the distance is 1, as at t = 0): monotone in t
 * in exact arithmetic, rising for q1 > 0 and falling for q1 < 0, so the walk runs along the
 * order or against it and allows for rounding (cpu_overlap.c). */
typedef enum sr_disjoint_order {
    SR_DISJOINT_BY_KEY = 1, /* rows by (sr_metric_disjoint_key, index) ascending */
    SR_DISJOINT_BY_INDEX = 2
} sr_disjoint_order;

SR_HD sr_disjoint_order sr_metric_disjoint_order(sr_metric m)
{
    switch (m) {
    case SR_METRIC_COSINE: case SR_METRIC_RUSSELL_RAO: case SR_METRIC_KL_DIVERGENCE: case SR_METRIC_INNER_PRODUCT:
        return SR_DISJOINT_BY_INDEX;
    default:
        return SR_DISJOINT_BY_KEY;
    }
}

/* An index row's key for the no-overlap order, from its norms and the column count d. */
SR_HD double sr_metric_disjoint_key(sr_metric m, double x0, double x1, double d)
{
    if (m != SR_METRIC_CORRELATION)
        return x0;
    const double vx = x0 - x1 * x1 / d;
    return vx > 0.0 ? x1 / sqrt(vx) : 0.0;
}

/* The distance of a pair that shares no column, from the rows' norms: what the dense path
 * computes for it (Chebyshev's union walk folds the row's |x| and then the query's largest |q|). */
SR_HD double sr_metric_disjoint_value(sr_metric m, double q0, double q1, double x0, double x1, double d, double p)
{
    if (m == SR_METRIC_CHEBYSHEV)
        return fmax(x0, q0);
    return sr_metric_finalize(m, 0.0, 0.0, q0, q1, x0, x1, d, p);
}

/* Host-side helpers (src/semiring/metric.c). */
/* SR_SUCCESS when metric is known and metric_arg fits it; else an error naming fn. */
sr_status sr_metric_check(const char *fn, sr_metric metric, double metric_arg);

#ifdef __cplusplus
}
#endif

#endif
