// Tensor-core multiply-adds on float32 operands (sm_80 and later): mma.sync m16n8k8 with TF32
// inputs and float32 accumulation, and the split that keeps float32's accuracy (each operand
// v = hi + lo, both TF32; a·b ≈ lo·hi + hi·lo + hi·hi, the small terms first; Ootomo & Yokota 2022,
// as CUTLASS's 3xTF32). Fragment layouts are PTX's for m16n8k8 .tf32 (g = lane / 4, t = lane % 4):
// A 16 x 8 row-major a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4); B 8 x 8 column-major
// b0 (k = t, n = g), b1 (k = t + 4, n = g); C 16 x 8 c0 (g, 2t), c1 (g, 2t + 1), c2 (g + 8, 2t), c3 (g + 8, 2t + 1).
#pragma once

#include <cstdint>

namespace sr_cuda {

// How a float32 tile product is computed: the CUDA cores' FMAs, one TF32 product, or the split.
enum tile_math { kMathFma = 0, kMathTf32 = 1, kMathTf32x3 = 3 };

// v rounded to TF32 (to nearest, ties away), as the bits mma.sync reads.
__device__ __forceinline__ uint32_t to_tf32(float v) {
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
    return r;
}

// v = hi + lo in TF32; lo is zero for the one-product form.
template <int Math> __device__ __forceinline__ void tf32_split(float v, uint32_t &hi, uint32_t &lo) {
    hi = to_tf32(v);
    lo = Math == kMathTf32x3 ? to_tf32(v - __uint_as_float(hi)) : 0u;
}

__device__ __forceinline__ void mma_tf32(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// c += a·b at the precision Math asks (a, b: the split operands' halves).
template <int Math>
__device__ __forceinline__ void mma_split(float (&c)[4], const uint32_t (&a_hi)[4], const uint32_t (&a_lo)[4],
                                          const uint32_t (&b_hi)[2], const uint32_t (&b_lo)[2]) {
    if constexpr (Math == kMathTf32x3) {
        mma_tf32(c, a_lo, b_hi);
        mma_tf32(c, a_hi, b_lo);
    }
    mma_tf32(c, a_hi, b_hi);
}

} // namespace sr_cuda
