// Which pairs of the tensor-core selection (cuda_knn_panel.cu) surely cannot enter a full list, from
// float arithmetic alone: the metric's formula in float beside an error bound, so that the
// double-precision finalizer (sr_metric_finalize: a square root and a division in float64, about
// a third of the selection's time on MovieLens-like data) runs only for pairs that may enter.
// The answers stay the finalizer's: a pair is skipped only when even its value lowered by twice
// the bound is past the list's worst, which the double value then is too (the bounds are 4-16x
// the float error they cover: conversions of the norms, the roundings of the few operations, the
// 2-ulp rsqrtf), and no skipped pair could tie the worst (a tie can enter by the smaller row).
// Inner product (a similarity; its value is the dot product itself) has no finalizer to skip.
#pragma once

#include "../semiring/metric.h"

namespace {

constexpr float kUlp = 5.9604645e-8f; // 2^-24

template <sr_metric M> struct distance_floor {
    // Whether the pre-test pays by default: not for Russell-Rao, whose finalizer (1 - dot / d) is
    // one division, what the test itself costs (MovieLens-like, 20,000 queries, H200: 81.7 ms with
    // it, 74.3 without; cosine 82.2 against 91.4, correlation 86.9 against 93.2; Jaccard and Dice
    // within 2% either way).
    // The metrics on levels (no product form) have no test.
    static constexpr bool kPays = (sr_metric_kind_of(M) == SR_MK_PRODUCT || sr_metric_kind_of(M) == SR_MK_PAIR ||
                                   sr_metric_kind_of(M) == SR_MK_SQRT) &&
                                  M != SR_METRIC_RUSSELL_RAO;
    float q0 = 0.0f, q1 = 0.0f, rq = 0.0f, vq = 0.0f, d = 0.0f;
    bool usable = false; // false: every pair goes to the finalizer

    __device__ distance_floor(double qn0, double qn1, double dd) {
        q0 = (float)qn0;
        q1 = (float)qn1;
        d = (float)dd;
        const bool finite = q0 > 1e-30f && q0 < 1e30f; // squares and products stay normal floats
        if constexpr (M == SR_METRIC_COSINE) {
            rq = rsqrtf(q0);
            usable = finite;
        } else if constexpr (M == SR_METRIC_CORRELATION) {
            const double v = qn0 - qn1 * qn1 / dd;
            vq = (float)v;
            usable = finite && d > 0.0f && v > 0.0625 * qn0; // the query's spread well above its rounding
        } else {
            usable = M != SR_METRIC_INNER_PRODUCT && finite && (M != SR_METRIC_RUSSELL_RAO || d > 0.0f);
        }
    }

    // Whether the pair of dot product `sum` and index norms (x0, x1) surely lies past `worst`, the
    // distance of a full list (every metric here a distance).
    __device__ bool past(float sum, double xn0, double xn1, float worst) const {
        const float x0 = (float)xn0;
        if (!usable || !(x0 > 1e-30f && x0 < 1e30f) || !(worst < 1e30f))
            return false;
        if constexpr (M == SR_METRIC_L2 || M == SR_METRIC_SQEUCLIDEAN || M == SR_METRIC_HELLINGER) {
            // in the squared form t: sqrt is monotone; the margin also keeps t off the snap to 0
            const float h = M == SR_METRIC_HELLINGER ? 0.5f : 1.0f, g = M == SR_METRIC_HELLINGER ? 1.0f : 2.0f;
            const float t = h * (q0 + x0) - g * sum, err = 16.0f * kUlp * (h * (q0 + x0) + g * fabsf(sum));
            const float w = M == SR_METRIC_SQEUCLIDEAN ? worst : worst * worst;
            return t - 2.0f * err > w * (1.0f + 32.0f * kUlp);
        } else if constexpr (M == SR_METRIC_COSINE) {
            const float p = sum * rq * rsqrtf(x0), err = 32.0f * kUlp * (1.0f + fabsf(p));
            return worst < 2.0f && 1.0f - p - 2.0f * err > worst; // 2: the clamp's top, where ties sit
        } else if constexpr (M == SR_METRIC_CORRELATION) {
            const float x1 = (float)xn1, vx = x0 - x1 * x1 / d;
            if (!(vx > 0.0625f * x0)) // the row's spread well above its rounding
                return false;
            const float r = rsqrtf(vq * vx), c = q1 * x1 / d, p = (sum - c) * r;
            const float err = 128.0f * kUlp * ((fabsf(sum) + fabsf(c)) * r + fabsf(p)) + 16.0f * kUlp;
            return worst < 2.0f && 1.0f - p - 2.0f * err > worst;
        } else if constexpr (M == SR_METRIC_JACCARD) {
            const float s = q0 + x0 + fabsf(sum), uni = q0 + x0 - sum;
            if (!(uni > 0.125f * s))
                return false;
            const float p = sum / uni, err = 32.0f * kUlp * (1.0f + fabsf(p)) * (s / uni);
            return 1.0f - p - 2.0f * err > worst;
        } else if constexpr (M == SR_METRIC_DICE) {
            const float p = 2.0f * sum / (q0 + x0), err = 32.0f * kUlp * (1.0f + fabsf(p));
            return 1.0f - p - 2.0f * err > worst;
        } else if constexpr (M == SR_METRIC_RUSSELL_RAO) {
            const float v = (d - sum) / d, err = 32.0f * kUlp * (d + fabsf(sum)) / d;
            return v - 2.0f * err > worst;
        } else {
            (void)sum;
            (void)xn1;
            return false;
        }
    }
};

} // namespace
