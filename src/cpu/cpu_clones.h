/* Function clones for wider vector units, one picked at load time where the CPU has it. x86-64's
 * baseline (SSE2) leaves loops 4 floats wide with no fused multiply-add; GCC's target_clones
 * compiles a function again for AVX2 (SR_AVX2_CLONE) or for x86-64-v3 (AVX2 with FMA:
 * SR_V3_CLONE) and picks one through an ifunc (glibc). Not under the sanitizers: the clones'
 * resolver runs at load time, before ThreadSanitizer's runtime is up, and crashed test_threads'
 * TSan build. Elsewhere the macros are empty and the baseline code runs. */
#ifndef SR_CPU_CLONES_H
#define SR_CPU_CLONES_H

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__GLIBC__) && \
    !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
#define SR_AVX2_CLONE __attribute__((target_clones("avx2", "default")))
#define SR_V3_CLONE __attribute__((target_clones("arch=x86-64-v3", "default")))
#define SR_AVX2_CLONES 1
#else
#define SR_AVX2_CLONE
#define SR_V3_CLONE
#endif

#endif
