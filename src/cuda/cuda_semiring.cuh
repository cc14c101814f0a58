// The built-in semirings as device functors, generated from the shared definitions in
// src/semiring/semiring.h, and a dispatcher from (semiring, output type) to a template.
#pragma once

#include "cuda_common.cuh"

extern "C" {
#include "../semiring/semiring.h"
}

namespace sr_cuda {

#define SR_READS_VALUES_TIMES true
#define SR_READS_VALUES_PLUS true
#define SR_READS_VALUES_MIN true
#define SR_READS_VALUES_AND true
#define SR_READS_VALUES_PAIR false

#define SR_ADD_KIND_PLUS SR_ADD_OP_PLUS
#define SR_ADD_KIND_MIN SR_ADD_OP_MIN
#define SR_ADD_KIND_MAX SR_ADD_OP_MAX
#define SR_ADD_KIND_OR SR_ADD_OP_OR

#define SR_CUDA_DEFINE_OPS(SEMI, ADD, MUL, T, OUT)                                               \
    struct ops_##ADD##_##MUL##_##T {                                                             \
        using value = T;                                                                         \
        static constexpr int add_kind = SR_ADD_KIND_##ADD; /* picks native atomics */            \
        static constexpr sr_type type = OUT;                                                     \
        static constexpr bool reads_values = SR_READS_VALUES_##MUL; /* PAIR reads patterns only */ \
        __host__ __device__ static T identity() { return (T)SR_ID_##ADD##_##T; }                 \
        __device__ static T add(T a, T b) { return (T)SR_ADD_##ADD(a, b); }                      \
        __device__ static T mul(T a, T b) {                                                      \
            (void)a;                                                                             \
            (void)b;                                                                             \
            return (T)SR_MUL_##MUL(a, b);                                                        \
        }                                                                                        \
    };
SR_FOR_EACH_SEMIRING_KERNEL(SR_CUDA_DEFINE_OPS)
#undef SR_CUDA_DEFINE_OPS

// Calls Launcher<Ops>::run(args...) for the (semiring, output type) pair.
template <template <class> class Launcher, typename... Args>
sr_status dispatch_semiring(sr_semiring s, sr_type out, Args &&...args) {
#define SR_CUDA_DISPATCH(SEMI, ADD, MUL, T, OUT)                                                 \
    if (s == SEMI && out == OUT)                                                                 \
        return Launcher<ops_##ADD##_##MUL##_##T>::run(args...);
    SR_FOR_EACH_SEMIRING_KERNEL(SR_CUDA_DISPATCH)
#undef SR_CUDA_DISPATCH
    return sr_error(SR_ERROR_INTERNAL, "no CUDA kernel for %s with %s output", sr_semiring_name(s), sr_type_name(out));
}

} // namespace sr_cuda
