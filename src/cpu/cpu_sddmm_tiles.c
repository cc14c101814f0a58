/* Well-filled S on the host (bands, attention masks, S at half its cells and more): whole tile
 * products instead of a dot product an entry, the CPU's counterpart of the GPU's GEMM tiles
 * (src/cuda/cuda_sddmm_gemm.cuh). B's rows are packed k-major once, in tiles of 64 columns (or,
 * past PREPACK_BYTES, by each panel for the tiles it touches); a task takes a panel of 64 rows,
 * packs their rows of A k-major, walks the tiles the panel touches (from the one holding the least
 * column a row has left, so a band computes only its own), computes each whole 64 x 64 product by
 * a register-blocked kernel (4 rows x 64 bytes of columns: eight AVX2 accumulators, eight fused
 * multiply-adds for six loads, where a dot product an entry loads two vectors for each) and writes
 * the panel's entries in the tile from it. Each entry's K products are summed in order k = 0 ..
 * K-1. The fused SDDMM→SpMM goes by the same tiles (fused_panel): each tile's product becomes the
 * panel rows' weights in place (α·s·score at the entries, an online softmax, 0 elsewhere) and a
 * second register-blocked kernel adds the weights times V's rows of the tile to the panel's sums,
 * as the GPU's whole tiles do (src/cuda/cuda_sddmm_fused_gemm.cuh). */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "../core/memory.h"
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

/* The same for the fused product, whose row an entry also adds a row of V: a tenth of the cells
 * (uniform S at 12% puts 491 entries in a tile). On the 16-core H100 host (p = K = 32 and 128,
 * float32, plain and softmax; bench/probes/sddmm_cpu_tiles.py --fused, bench/results-sddmm-cpu.txt)
 * the tiles ran uniform 8K at 12% 1.4-2.0x faster than the rows, at 25% 2.6-3.1x, 4K at 50%
 * 3.0-4.7x, a band of 512 4.0-5.7x; on the 2-core development machine 8K at 12% 0.68-1.08x, 25%
 * 0.87-3.0x. */
#define FUSED_TILES_FILL 410.0

/* The mean entries per touched tile over up to 8 panels spread over S (-1: no memory to count). */
static double sampled_fill(const struct sr_matrix_s *S)
{
    const int64_t panels = (S->nrows + TILE_ROWS - 1) / TILE_ROWS;
    const int samples = panels < 8 ? (int)panels : 8;
    const int64_t tiles_across = (S->ncols + TILE_COLS - 1) / TILE_COLS;
    unsigned char *seen = sr_calloc((size_t)(tiles_across > 0 ? tiles_across : 1), 1);
    if (!seen)
        return -1.0;
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

/* sampled_fill, kept with S after the first call: sampling took 1-9 ms a call on S of 2-8M
 * entries on the 16-core host, as much as the tiles' own product on the smaller of them. */
static double kept_fill(const struct sr_matrix_s *S)
{
    int64_t *slot = (int64_t *)&S->cpu_tile_fill; /* a cache: S stays const to its callers */
    int64_t kept = __atomic_load_n(slot, __ATOMIC_RELAXED);
    if (kept == 0) {
        const double fill = sampled_fill(S);
        if (fill < 0)
            return 0.0;
        kept = (int64_t)(fill * 1024.0) + 1;
        __atomic_store_n(slot, kept, __ATOMIC_RELAXED);
    }
    return (double)(kept - 1) / 1024.0;
}

static bool tiles_pay(const sr_sddmm_args *a, double fill)
{
    const bool can = a->semiring == SR_PLUS_TIMES && a->in_type == a->out_type &&
                     (a->in_type == SR_TYPE_FLOAT32 || a->in_type == SR_TYPE_FLOAT64);
    const int setting = tiles_setting();
    if (!can || setting == 0 || a->S->nnz == 0)
        return false;
    if (setting >= 1)
        return true;
    const struct sr_matrix_s *S = a->S;
    if ((double)S->nnz / (double)S->nrows * TILE_ROWS < fill) /* too sparse to fill one tile */
        return false;
    return kept_fill(S) >= fill;
}

bool sr_cpu_sddmm_tiles_pay(const sr_sddmm_args *a)
{
    return tiles_pay(a, TILES_FILL);
}

bool sr_cpu_sddmm_spmm_tiles_pay(const sr_sddmm_args *a)
{
    return tiles_pay(a, FUSED_TILES_FILL);
}

/* The first column of the tile holding the least column any of the panel's rows has left, or
 * S->ncols when none has any (a band computes only its own tiles). */
static int64_t next_tile(const struct sr_matrix_s *S, int64_t rows, const int64_t *cursor, const int64_t *end)
{
    int64_t c = S->ncols;
    for (int i = 0; i < rows; i++)
        if (cursor[i] < end[i] && S->colind[cursor[i]] < c)
            c = S->colind[cursor[i]];
    return c == S->ncols ? c : c - c % TILE_COLS;
}

/* The fused product's operands (sr_cpu_sddmm_spmm_tiles): V's p columns, padded to pp in the
 * packs. */
typedef struct {
    const void *V;
    int64_t p, pp;
    const sr_sddmm_out *O;
    bool softmax, accumulate;
} fused_operands;

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
    /* The panel's product (its rows of A packed in ap) with the tile at column c into P: B's rows   \
     * from `packed` (all of B) or, when it is NULL, packed into bp here. Returns the tile's width.   \
     */                                                                                                  \
    static int64_t tile_scores_##T(const sr_sddmm_args *a, const T *packed, const T *ap, T *bp, int64_t c, T *P) \
    {                                                                                                    \
        const int64_t K = a->K, width = a->S->ncols - c < TILE_COLS ? a->S->ncols - c : TILE_COLS;       \
        const T *tile = packed ? packed + (size_t)(c / TILE_COLS) * TILE_COLS * (size_t)K : bp;          \
        if (!packed)                                                                                     \
            pack_##T((const T *)a->B, c, width, K, TILE_COLS, bp);                                       \
        tile_product_##T(ap, tile, K, P);                                                                \
        return width;                                                                                    \
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
        for (int64_t c; (c = next_tile(S, rows, cursor, end)) < S->ncols;) {                            \
            const int64_t width = tile_scores_##T(a, packed, ap, bp, c, P);                              \
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
    /* sums (64 x pp) += W (64 x 64, row-major) times vp (64 x pp, rows 32-byte aligned): blocks of 4  \
     * rows x 2 vectors, as tile_product. */                                                            \
    SR_V3_CLONE static void weights_times_##T(const T *restrict W, const T *restrict vp, int64_t pp,     \
                                               T *restrict sums)                                         \
    {                                                                                                    \
        for (int i0 = 0; i0 < TILE_ROWS; i0 += BLOCK_ROWS)                                               \
            for (int64_t q0 = 0; q0 < pp; q0 += 2 * LANES_##T) {                                        \
                vec_##T c[BLOCK_ROWS][2];                                                                \
                for (int r = 0; r < BLOCK_ROWS; r++)                                                     \
                    memcpy(c[r], sums + (i0 + r) * pp + q0, sizeof c[r]);                                \
                for (int j = 0; j < TILE_COLS; j++) {                                                    \
                    const vec_##T *v = (const vec_##T *)(vp + j * pp + q0);                              \
                    const vec_##T v0 = v[0], v1 = v[1];                                                  \
                    const T *w = W + i0 * TILE_COLS + j;                                                 \
                    c[0][0] += w[0] * v0, c[0][1] += w[0] * v1;                                          \
                    c[1][0] += w[TILE_COLS] * v0, c[1][1] += w[TILE_COLS] * v1;                          \
                    c[2][0] += w[2 * TILE_COLS] * v0, c[2][1] += w[2 * TILE_COLS] * v1;                  \
                    c[3][0] += w[3 * TILE_COLS] * v0, c[3][1] += w[3 * TILE_COLS] * v1;                  \
                }                                                                                        \
                for (int r = 0; r < BLOCK_ROWS; r++)                                                     \
                    memcpy(sums + (i0 + r) * pp + q0, c[r], sizeof c[r]);                                \
            }                                                                                            \
    }                                                                                                    \
    /* The fused product's panel, rows [r0, r0 + 64): for each tile the panel touches, the scores P,   \
     * then each row's weights in P (α·s·score at its entries, exp(w - top) for the softmax with the   \
     * row's sums rescaled to the new maximum, 0 at the other cells), then sums += P times V's rows   \
     * of the tile (packed into vp); at the end the rows of O. */                                     \
    static void fused_panel_##T(const sr_sddmm_args *a, const fused_operands *f, int64_t r0, const T *packed, \
                                T *ap, T *bp, T *P, T *vp, T *sums)                                      \
    {                                                                                                    \
        const struct sr_matrix_s *S = a->S;                                                              \
        const T *sv = a->pattern ? NULL : (const T *)S->values, *V = f->V;                               \
        const int64_t K = a->K, p = f->p, pp = f->pp;                                                    \
        const int64_t rows = S->nrows - r0 < TILE_ROWS ? S->nrows - r0 : TILE_ROWS;                      \
        int64_t cursor[TILE_ROWS], end[TILE_ROWS];                                                       \
        T top[TILE_ROWS], total[TILE_ROWS];                                                              \
        for (int i = 0; i < rows; i++)                                                                   \
            cursor[i] = S->rowptr[r0 + i], end[i] = S->rowptr[r0 + i + 1], top[i] = -INFINITY, total[i] = 0; \
        memset(sums, 0, (size_t)TILE_ROWS * (size_t)pp * sizeof(T));                                     \
        pack_##T((const T *)a->A, r0, rows, K, TILE_ROWS, ap);                                           \
        for (int64_t c; (c = next_tile(S, rows, cursor, end)) < S->ncols;) {                            \
            const int64_t width = tile_scores_##T(a, packed, ap, bp, c, P);                              \
            for (int i = 0; i < TILE_ROWS; i++) {                                                        \
                T *w = P + i * TILE_COLS, val[TILE_COLS], high = -INFINITY;                              \
                int at[TILE_COLS], n = 0;                                                                \
                for (; i < rows && cursor[i] < end[i] && S->colind[cursor[i]] < c + width; cursor[i]++) { \
                    const int64_t e = cursor[i];                                                         \
                    const int x = (int)(S->colind[e] - c);                                               \
                    val[n] = (T)a->alpha * (sv ? sv[e] * w[x] : w[x]);                                   \
                    high = val[n] > high ? val[n] : high;                                                \
                    at[n++] = x;                                                                         \
                }                                                                                        \
                memset(w, 0, TILE_COLS * sizeof(T));                                                     \
                if (n > 0 && f->softmax) {                                                               \
                    const T now = high > top[i] ? high : top[i];                                         \
                    const T scale = now == top[i] ? (T)1 : EXP_##T(top[i] - now); /* 0 at the first */   \
                    if (scale != (T)1)                                                                   \
                        for (int64_t q = 0; q < pp; q++)                                                 \
                            sums[i * pp + q] *= scale;                                                   \
                    total[i] *= scale;                                                                   \
                    top[i] = now;                                                                        \
                    for (int k = 0; k < n; k++)                                                          \
                        total[i] += val[k] = EXP_##T(val[k] - now);                                      \
                }                                                                                        \
                for (int k = 0; k < n; k++)                                                              \
                    w[at[k]] = val[k];                                                                   \
            }                                                                                            \
            for (int j = 0; j < TILE_COLS; j++) { /* V's rows of the tile, zeros past them and p */     \
                T *row = vp + j * pp;                                                                    \
                const int64_t have = j < width ? p : 0;                                                  \
                if (have)                                                                                \
                    memcpy(row, V + (size_t)(c + j) * (size_t)p, (size_t)p * sizeof(T));                 \
                memset(row + have, 0, (size_t)(pp - have) * sizeof(T));                                  \
            }                                                                                            \
            weights_times_##T(P, vp, pp, sums);                                                          \
        }                                                                                                \
        const sr_sddmm_out *O = f->O;                                                                    \
        for (int i = 0; i < rows; i++) {                                                                 \
            T *o = (T *)O->data + (size_t)(r0 + i) * (size_t)O->row_stride;                              \
            const T divide = f->softmax && total[i] > 0 ? total[i] : (T)1;                               \
            for (int64_t q = 0; q < p; q++) {                                                            \
                T *cell = o + (size_t)q * (size_t)O->col_stride;                                         \
                const T x = sums[i * pp + q] / divide;                                                   \
                *cell = f->accumulate ? *cell + x : x;                                                   \
            }                                                                                            \
        }                                                                                                \
    }                                                                                                    \
    /* The SDDMM's tiles (f NULL: into out) or the fused product's (into f->O), a panel a task. */     \
    static sr_status tiles_##T(const sr_sddmm_args *a, T *out, const fused_operands *f, int threads)      \
    {                                                                                                    \
        const int64_t panels = (a->S->nrows + TILE_ROWS - 1) / TILE_ROWS;                                \
        const size_t room = (size_t)(TILE_ROWS + TILE_COLS) * (size_t)a->K + TILE_ROWS * TILE_COLS +     \
                            (f ? 2 * (size_t)TILE_ROWS * (size_t)f->pp : 0);                             \
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
                T *vp = P + TILE_ROWS * TILE_COLS, *sums = f ? vp + (size_t)TILE_ROWS * (size_t)f->pp : NULL; \
                _Pragma("omp for schedule(dynamic, 1)")                                                  \
                for (int64_t t = 0; t < panels; t++) {                                                   \
                    if (f)                                                                               \
                        fused_panel_##T(a, f, t * TILE_ROWS, packed, ap, bp, P, vp, sums);               \
                    else                                                                                 \
                        tiles_panel_##T(a, out, t * TILE_ROWS, packed, ap, bp, P);                       \
                }                                                                                        \
            }                                                                                            \
            free(ap);                                                                                    \
        }                                                                                                \
        free(packed);                                                                                    \
        return failed ? sr_error(SR_ERROR_OUT_OF_MEMORY,                                                 \
                                 "%s: out of host memory for a thread's tiles (%zu bytes)",              \
                                 f ? "sr_sddmm_spmm" : "sr_sddmm", room * sizeof(T))                     \
                      : SR_SUCCESS;                                                                      \
    }
#define EXP_float expf
#define EXP_double exp
SR_DEFINE_SDDMM_TILES(float)
SR_DEFINE_SDDMM_TILES(double)
#undef SR_DEFINE_SDDMM_TILES
#undef EXP_float
#undef EXP_double

sr_status sr_cpu_sddmm_tiles(const sr_sddmm_args *a, void *out, int threads)
{
    return a->in_type == SR_TYPE_FLOAT32 ? tiles_float(a, (float *)out, NULL, threads)
                                         : tiles_double(a, (double *)out, NULL, threads);
}

sr_status sr_cpu_sddmm_spmm_tiles(const sr_sddmm_args *a, const void *V, int64_t p, const sr_sddmm_out *O,
                                  bool softmax, bool accumulate, int threads)
{
    const int64_t lanes = 2 * 32 / (int64_t)sr_type_size(a->in_type); /* two vectors: a block's columns */
    const fused_operands f = {V, p, (p + lanes - 1) / lanes * lanes, O, softmax, accumulate};
    return a->in_type == SR_TYPE_FLOAT32 ? tiles_float(a, NULL, &f, threads) : tiles_double(a, NULL, &f, threads);
}
