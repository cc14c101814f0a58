// c = c ⊕ v atomically, for any semiring's ⊕ and value type: native atomics where the hardware has
// them (+ on numbers, min/max on int32 and, through their bits, on floats), else a
// compare-and-swap loop.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

extern "C" {
#include "../semiring/semiring.h"
}

namespace sr_cuda {

template <typename T> struct cas_word;
template <> struct cas_word<float> { using type = unsigned int; };
template <> struct cas_word<int32_t> { using type = unsigned int; };
template <> struct cas_word<double> { using type = unsigned long long; };

template <class Ops, typename T> __device__ inline void atomic_combine(T *address, T value) {
    if constexpr (Ops::add_kind == SR_ADD_OP_PLUS && sizeof(T) != 1) {
        atomicAdd(address, value); // native for int32, float and double
    } else if constexpr (Ops::add_kind == SR_ADD_OP_MIN && std::is_same_v<T, int32_t>) {
        atomicMin(address, value);
    } else if constexpr (Ops::add_kind == SR_ADD_OP_MAX && std::is_same_v<T, int32_t>) {
        atomicMax(address, value);
    } else if constexpr ((Ops::add_kind == SR_ADD_OP_MIN || Ops::add_kind == SR_ADD_OP_MAX) &&
                         (std::is_same_v<T, float> || std::is_same_v<T, double>)) {
        // Integer atomics on the float's bits: non-negative floats order as signed integers,
        // negative ones in reverse as unsigned. min/max never replace a number with NaN, so a NaN
        // value is dropped. The accumulators start at the identity and so never hold a NaN.
        if (value != value)
            return;
        using S = std::conditional_t<sizeof(T) == 4, int, long long>;
        using U = std::conditional_t<sizeof(T) == 4, unsigned int, unsigned long long>;
        S bits;
        memcpy(&bits, &value, sizeof bits);
        const bool lower = Ops::add_kind == SR_ADD_OP_MIN;
        if (bits >= 0) {
            if (lower)
                atomicMin(reinterpret_cast<S *>(address), bits);
            else
                atomicMax(reinterpret_cast<S *>(address), bits);
        } else {
            if (lower)
                atomicMax(reinterpret_cast<U *>(address), (U)bits);
            else
                atomicMin(reinterpret_cast<U *>(address), (U)bits);
        }
    } else if constexpr (sizeof(T) == 1) {
        // bool results store no values: nothing to combine
        (void)address;
        (void)value;
    } else {
        using W = typename cas_word<T>::type;
        W *word = reinterpret_cast<W *>(address);
        W old = *word, assumed;
        do {
            assumed = old;
            T current;
            memcpy(&current, &assumed, sizeof current);
            const T next = Ops::add(current, value);
            W next_word;
            memcpy(&next_word, &next, sizeof next_word);
            if (next_word == assumed)
                return;
            old = atomicCAS(word, assumed, next_word);
        } while (old != assumed);
    }
}

} // namespace sr_cuda
