/* What the sampled-product kernels of both backends receive: S where the work runs, A and B
 * packed row-major beside it (src/ops/sddmm.c stages them). */
#ifndef SR_CORE_SDDMM_H
#define SR_CORE_SDDMM_H

#include "matrix.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The GPU's plus_times kernels sum each entry's K products in their own order, so a GPU that runs
 * one row block of S (several GPUs) is told the family chosen on the whole S: its values are then
 * the one-GPU call's, bit for bit (src/cuda/cuda_sddmm.cu). */
typedef enum sr_sddmm_strategy {
    SR_SDDMM_AUTO = 0,
    SR_SDDMM_DENSE_TILES = 1,
    SR_SDDMM_PANELS = 2,
    SR_SDDMM_ROWS = 3,     /* S's entry order (with column tiles where they pay) */
    SR_SDDMM_GEMM_TILES = 4 /* whole 128 x 128 tile products (float32, well-filled S) */
} sr_sddmm_strategy;

typedef struct sr_sddmm_args {
    const struct sr_matrix_s *S;
    const void *A, *B;     /* m x K and n x K, row-major with leading dimension K */
    int64_t K;
    sr_type in_type;       /* A's and B's */
    sr_type out_type;      /* the semiring's on in_type */
    sr_semiring semiring;
    double alpha, beta;
    bool pattern;          /* S's values are ignored in the product (bool S, or sample_pattern) */
    sr_sddmm_strategy strategy; /* the GPU kernel family; AUTO lets S choose */
    sr_precision precision;     /* float32 whole tiles: tensor cores split (EXACT) or not (TF32), or FMA */
} sr_sddmm_args;

/* Output element (i, c) of the fused product: out[i*row_stride + c*col_stride]. */
typedef struct sr_sddmm_out {
    void *data;
    int64_t row_stride, col_stride;
} sr_sddmm_out;

#ifdef __cplusplus
}
#endif

#endif
