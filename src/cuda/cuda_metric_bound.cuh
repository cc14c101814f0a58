// A float test that a pair cannot enter a k-best list, run before the double-precision finalizer
// (sr_metric_finalize: a division and a square root in FP64, most of a selection pass's
// instructions on a dense block of dot products). The finalizer then runs only for the pairs
// that might enter, and every answer stays the one it computes.
#pragma once

#include <cmath>

extern "C" {
#include "../semiring/metric.h"
}

namespace {

// Float estimates err by a few units of 2^-24 of their terms' magnitudes; a margin of 2^-20 of
// them (16 units and more) stays on the safe side.
constexpr float kBoundSlack = 1.0f / 1048576.0f;

// Whether sr_metric_finalize(M, a, ., q0, ., x0, ., d, .) rounded to float is surely above `worst`
// (a distance; not even a tie could enter): its float estimate, less the margin, past worst·(1 +
// 2^-20), which is past worst by more than an ulp of it. false where there is no estimate
// (correlation's variances cancel in float; the inner product's finalizer is the sum itself) and
// wherever the estimate leaves float's range (NaN compares false).
template <sr_metric M>
__device__ inline bool surely_worse(float a, double q0d, double x0d, double d, float worst) {
    const float q0 = (float)q0d, x0 = (float)x0d;
    const float bar = worst + fabsf(worst) * kBoundSlack;
    if constexpr (M == SR_METRIC_SQEUCLIDEAN || M == SR_METRIC_L2 || M == SR_METRIC_HELLINGER) {
        // the distance is s or √s with s = q0 + x0 - 2a (Hellinger: (q0 + x0)/2 - a)
        const float s = M == SR_METRIC_HELLINGER ? 0.5f * (q0 + x0) - a : q0 + x0 - 2.0f * a;
        const float scale = M == SR_METRIC_HELLINGER ? 0.5f * (q0 + x0) + fabsf(a) : q0 + x0 + 2.0f * fabsf(a);
        const float low = s - scale * kBoundSlack; // s is above this
        const float need = M == SR_METRIC_SQEUCLIDEAN ? bar : bar * bar * (1.0f + kBoundSlack);
        return low > need && low > 1e-30f; // (the finalizer's snap to 0 is far below the margin)
    } else if constexpr (M == SR_METRIC_COSINE || M == SR_METRIC_DICE || M == SR_METRIC_JACCARD ||
                         M == SR_METRIC_RUSSELL_RAO) {
        // the distance is 1 - a/den (cosine clamps it to [0, 2])
        float den;
        if constexpr (M == SR_METRIC_COSINE)
            den = sqrtf(q0) * sqrtf(x0);
        else if constexpr (M == SR_METRIC_DICE)
            den = 0.5f * (q0 + x0);
        else if constexpr (M == SR_METRIC_JACCARD)
            den = q0 + x0 - a >= 0.25f * (q0 + x0) ? q0 + x0 - a : 0.0f; // the union: no cancellation
        else
            den = (float)d;
        if (!(den > 0.0f && den < INFINITY))
            return false;
        const float r = a / den;
        if (M == SR_METRIC_COSINE && !(worst < 2.0f)) // a clamped 2 would tie
            return false;
        return 1.0f - r - 4.0f * kBoundSlack * (1.0f + fabsf(r)) > bar;
    } else {
        return false;
    }
}

// Whether surely_worse has an estimate for M (else the caller skips the test's loads).
template <sr_metric M> __host__ __device__ constexpr bool has_bound() {
    return M == SR_METRIC_SQEUCLIDEAN || M == SR_METRIC_L2 || M == SR_METRIC_HELLINGER || M == SR_METRIC_COSINE ||
           M == SR_METRIC_DICE || M == SR_METRIC_JACCARD || M == SR_METRIC_RUSSELL_RAO;
}

} // namespace
