/* Well-filled S on the host (bands, attention masks, S at half its cells and more): whole tile
 * products instead of a dot product an entry, the CPU's counterpart of the GPU's GEMM tiles
 * (src/cuda/cuda_sddmm_gemm.cuh). B's rows are packed k-major once, in tiles of 64 columns (or,
 * past PREPACK_BYTES, by each panel for the tiles it touches); a task takes a panel of 64 rows,
 * packs their rows of A k-major, walks the tiles the panel touches (from the one holding the least
 * column a row has left, so a band computes only its own), computes each whole 64 x 64 product by
 * a register-blocked kernel (4 rows x 64 bytes of columns: eight AVX2 accumulators, eight fused
 * multiply-adds for six loads, where a dot product an entry loads two vectors for each) and writes
 * the panel's entries in the tile from it. Each entry's K products are summed in order k = 0 ..
 * K-1. */
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "../core/error.h"
#include "../core/settings.h"
#include "cpu.h"
#include "cpu_clones.h"
#include "cpu_sddmm.h"

#define TILE_ROWS 64
#define TILE_COLS 64
#define BLOCK_ROWS 4

/* SPARSERING_SDDMM_GEMM=0 turns the tiles off, =1 uses them wherever they can run (both
 * backends read it); =2 (the CPU's, for tests) too, packing B tile by tile as past PREPACK_BYTES. */
static int tiles_setting(void)
{
    return sr_setting("SPARSERING_SDDMM_GEMM", -1);
}

/* Entries a touched 64 x 64 tile must hold on average for the tiles to run: half of its cells.
 * Measured on 2 cores (bench/results-sddmm-cpu.txt): a band of 512 (~90% full) 1.2-2.1x the dot
 * products; uniform S at a quarter 0.9-2.05x (winning at K >= 128 in float32, at 512 in float64)
 * and at an eighth 0.5-1.2x, where most of a tile's products are thrown away. */
#define TILES_FILL 2048.0

/* The mean entries per touched tile over up to 8 panels spread over S. */
static double sampled_fill(const struct sr_matrix_s *S)
{
    const int64_t panels = (S->nrows + TILE_ROWS - 1) / TILE_ROWS;
    const int samples = panels < 8 ? (int)panels : 8;
    const int64_t tiles_across = (S->ncols + TILE_COLS - 1) / TILE_COLS;
    unsigned char *seen = calloc((size_t)(tiles_across > 0 ? tiles_across : 1), 1);
    if (!seen)
        return 0.0;
    int64_t entries = 0, touched = 0;
    for (int k = 0; k < samples; k++) {
        const int64_t r0 = panels * k / samples * TILE_ROWS;
        const int64_t r1 = r0 + TILE_ROWS < S->nrows ? r0 + TILE_ROWS : S->nrows;
        for (int64_t e = S->rowptr[r0]; e < S->rowptr[r1]; e++) {
            const int64_t t = S->colind[e] / TILE_COLS;
            touched += !seen[t];
            seen[t] = 1;
        }
        entries += S->rowptr[r1] - S->rowptr[r0];
        for (int64_t e = S->rowptr[r0]; e < S->rowptr[r1]; e++)
            seen[S->colind[e] / TILE_COLS] = 0;
    }
    free(seen);
    return touched ? (double)entries / (double)touched : 0.0;
}

bool sr_cpu_sddmm_tiles_pay(const sr_sddmm_args *a)
{
    const bool can = a->semiring == SR_PLUS_TIMES && a->in_type == a->out_type &&
                     (a->in_type == SR_TYPE_FLOAT32 || a->in_type == SR_TYPE_FLOAT64);
    const int setting = tiles_setting();
    if (!can || setting == 0 || a->S->nnz == 0)
        return false;
    if (setting >= 1)
        return true;
    const struct sr_matrix_s *S = a->S;
    if ((double)S->nnz / (double)S->nrows * TILE_ROWS < TILES_FILL) /* too sparse to fill one tile */
        return false;
    return sampled_fill(S) >= TILES_FILL;
}

/* 32-byte vectors (GCC/Clang vector extensions: one AVX2 register, two SSE2 ones in the baseline
 * clone) of floats and doubles; a scalar times a vector broadcasts the scalar. */
typedef float vec_float __attribute__((vector_size(32)));
typedef double vec_double __attribute__((vector_size(32)));

/* B is packed whole once (k-major, tile after tile) when that copy takes at most this much, so a
 * tile's columns are packed once, not once for every panel that touches them; past it, tile by
 * tile. */
#define PREPACK_BYTES ((size_t)256 << 20)

#define SR_DEFINE_SDDMM_TILES(T)                                                                         \
    enum { LANES_##T = 32 / (int)sizeof(T) };                                                            \
    /* P (64 x 64) = the packed panel ap (K x 64) times the packed tile bp (K x 64, rows 32-byte        \
     * aligned): blocks of 4 rows x 2 vectors, eight accumulators in registers over all of K. */        \
    SR_V3_CLONE static void tile_product_##T(const T *restrict ap, const T *restrict bp, int64_t K,      \
                                              T *restrict P)                                             \
    {                                                                                                    \
        for (int i0 = 0; i0 < TILE_ROWS; i0 += BLOCK_ROWS)                                               \
            for (int j0 = 0; j0 < TILE_COLS; j0 += 2 * LANES_##T) {                                     \
                vec_##T c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0}, c30 = {0},     \
                        c31 = {0};                                                                       \
                for (int64_t k = 0; k < K; k++) {                                                        \
                    const vec_##T *b = (const vec_##T *)(bp + k * TILE_COLS + j0);                       \
                    const vec_##T b0 = b[0], b1 = b[1];                                                  \
                    const T *a = ap + k * TILE_ROWS + i0;                                                \
                    c00 += a[0] * b0, c01 += a[0] * b1;                                                  \
                    c10 += a[1] * b0, c11 += a[1] * b1;                                                  \
                    c20 += a[2] * b0, c21 += a[2] * b1;                                                  \
                    c30 += a[3] * b0, c31 += a[3] * b1;                                                  \
                }                                                                                        \
                T *row = P + i0 * TILE_COLS + j0;                                                        \
                memcpy(row, &c00, sizeof c00), memcpy(row + LANES_##T, &c01, sizeof c01);                \
                row += TILE_COLS;                                                                        \
                memcpy(row, &c10, sizeof c10), memcpy(row + LANES_##T, &c11, sizeof c11);                \
                row += TILE_COLS;                                                                        \
                memcpy(row, &c20, sizeof c20), memcpy(row + LANES_##T, &c21, sizeof c21);                \
                row += TILE_COLS;                                                                        \
                memcpy(row, &c30, sizeof c30), memcpy(row + LANES_##T, &c31, sizeof c31);                \
            }                                                                                            \
    }                                                                                                    \
    /* Rows src[first .. first + count) of K elements into dst k-major (K x width), zeros past count. */ \
    static void pack_##T(const T *src, int64_t first, int64_t count, int64_t K, int width, T *dst)       \
    {                                                                                                    \
        for (int r = 0; r < width; r++) { /* each row read in order; the writes stay in cache */       \
            const T *row = r < count ? src + (size_t)(first + r) * (size_t)K : NULL;                     \
            for (int64_t k = 0; k < K; k++)                                                              \
                dst[k * width + r] = row ? row[k] : (T)0;                                                \
        }                                                                                                \
    }                                                                                                    \
    /* One panel's entries: rows [r0, r0 + 64). Tiles are columns [64t, 64t + 64), B's rows packed     \
     * in `packed` (all of B, tile after tile) or, when it is NULL, into bp tile by tile. */            \
    static void tiles_panel_##T(const sr_sddmm_args *a, T *out, int64_t r0, const T *packed, T *ap, T *bp, \
                                T *P)                                                                    \
    {                                                                                                    \
        const struct sr_matrix_s *S = a->S;                                                              \
        const T *sv = a->pattern ? NULL : (const T *)S->values;                                          \
        const int64_t K = a->K, rows = S->nrows - r0 < TILE_ROWS ? S->nrows - r0 : TILE_ROWS;            \
        int64_t cursor[TILE_ROWS], end[TILE_ROWS];                                                       \
        for (int i = 0; i < rows; i++)                                                                   \
            cursor[i] = S->rowptr[r0 + i], end[i] = S->rowptr[r0 + i + 1];                               \
        pack_##T((const T *)a->A, r0, rows, K, TILE_ROWS, ap);                                           \
        for (;;) {                                                                                       \
            int64_t c = S->ncols;                                                                        \
            for (int i = 0; i < rows; i++)                                                               \
                if (cursor[i] < end[i] && S->colind[cursor[i]] < c)                                      \
                    c = S->colind[cursor[i]];                                                            \
            if (c == S->ncols)                                                                           \
                break;                                                                                   \
            c -= c % TILE_COLS;                                                                          \
            const int64_t width = S->ncols - c < TILE_COLS ? S->ncols - c : TILE_COLS;                   \
            const T *tile = packed ? packed + (size_t)(c / TILE_COLS) * TILE_COLS * (size_t)K : bp;      \
            if (!packed)                                                                                 \
                pack_##T((const T *)a->B, c, width, K, TILE_COLS, bp);                                   \
            tile_product_##T(ap, tile, K, P);                                                            \
            for (int i = 0; i < rows; i++)                                                               \
                for (; cursor[i] < end[i] && S->colind[cursor[i]] < c + width; cursor[i]++) {            \
                    const int64_t e = cursor[i];                                                         \
                    T d = P[i * TILE_COLS + (S->colind[e] - c)];                                         \
                    if (sv)                                                                              \
                        d = sv[e] * d;                                                                   \
                    out[e] = (T)sr_cpu_sddmm_output(a, (double)d, e);                                    \
                }                                                                                        \
        }                                                                                                \
    }                                                                                                    \
    static sr_status tiles_##T(const sr_sddmm_args *a, T *out, int threads)                              \
    {                                                                                                    \
        const int64_t panels = (a->S->nrows + TILE_ROWS - 1) / TILE_ROWS;                                \
        const size_t room = (size_t)(TILE_ROWS + TILE_COLS) * (size_t)a->K + TILE_ROWS * TILE_COLS;      \
        int failed = 0;                                                                                  \
        const int64_t tiles_across = (a->S->ncols + TILE_COLS - 1) / TILE_COLS;                          \
        const size_t packed_bytes = (size_t)tiles_across * TILE_COLS * (size_t)a->K * sizeof(T);         \
        const bool whole = packed_bytes <= PREPACK_BYTES && tiles_setting() != 2;                        \
        T *packed = whole ? aligned_alloc(64, (packed_bytes + 63) / 64 * 64) : NULL;                     \
        _Pragma("omp parallel num_threads(threads)")                                                     \
        {                                                                                                \
            if (packed) {                                                                                \
                _Pragma("omp for schedule(static)")                                                      \
                for (int64_t t = 0; t < tiles_across; t++) {                                             \
                    const int64_t c = t * TILE_COLS;                                                     \
                    pack_##T((const T *)a->B, c, a->S->ncols - c < TILE_COLS ? a->S->ncols - c : TILE_COLS, \
                             a->K, TILE_COLS, packed + (size_t)t * TILE_COLS * (size_t)a->K);            \
                }                                                                                        \
            }                                                                                            \
            T *ap = aligned_alloc(64, (room * sizeof(T) + 63) / 64 * 64);                              \
            if (!ap) {                                                                                   \
                _Pragma("omp atomic write") failed = 1;                                                  \
            }                                                                                            \
            _Pragma("omp barrier")                                                                       \
            int any_failed;                                                                              \
            _Pragma("omp atomic read") any_failed = failed;                                              \
            if (!any_failed) {                                                                           \
                T *bp = ap + (size_t)TILE_ROWS * (size_t)a->K, *P = bp + (size_t)TILE_COLS * (size_t)a->K; \
                _Pragma("omp for schedule(dynamic, 1)")                                                  \
                for (int64_t t = 0; t < panels; t++)                                                     \
                    tiles_panel_##T(a, out, t * TILE_ROWS, packed, ap, bp, P);                           \
            }                                                                                            \
            free(ap);                                                                                    \
        }                                                                                                \
        free(packed);                                                                                    \
        return failed ? sr_error(SR_ERROR_OUT_OF_MEMORY,                                                 \
                                 "sr_sddmm: out of host memory for a thread's tiles (%zu bytes)",        \
                                 room * sizeof(T))                                                       \
                      : SR_SUCCESS;                                                                      \
    }
SR_DEFINE_SDDMM_TILES(float)
SR_DEFINE_SDDMM_TILES(double)
#undef SR_DEFINE_SDDMM_TILES

sr_status sr_cpu_sddmm_tiles(const sr_sddmm_args *a, void *out, int threads)
{
    return a->in_type == SR_TYPE_FLOAT32 ? tiles_float(a, (float *)out, threads)
                                         : tiles_double(a, (double *)out, threads);
}
