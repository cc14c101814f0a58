// c = c ⊕ v atomically, for any semiring's ⊕ and value type, by a compare-and-swap loop.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

namespace sr_cuda {

template <typename T> struct cas_word;
template <> struct cas_word<float> { using type = unsigned int; };
template <> struct cas_word<int32_t> { using type = unsigned int; };
template <> struct cas_word<double> { using type = unsigned long long; };

template <class Ops, typename T> __device__ inline void atomic_combine(T *address, T value) {
    if constexpr (sizeof(T) == 1) {
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
