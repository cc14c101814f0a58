/* CPU SpMV variants on one CSR matrix, float32, for bench/probes/spmv_cpu_probe.py (built by it as a
 * shared library and called through ctypes). Each variant computes y = A·x with the same static
 * shares of entries plus rows per thread as the library's SpMV (src/cpu/cpu_spmm.c):
 *   0 the library's loop: one row at a time, one running sum in column order;
 *   1 two rows at a time, each still summed in its own column order (the two chains overlap);
 *   2 eight entries at a time by AVX2 gathers, eight partial sums a row (another summation order);
 *   3 the library's loop with x[colind[k + 32]] prefetched (6: k + 16, 7: k + 64);
 *   4 stream only: an integer sum of the values' bits and the columns, no gather (the bytes' floor);
 *   5 gather only: an integer sum of x's bits at the columns, no values (the gathers' floor).
 * (The floors sum integers, which the compiler may reorder and vectorize: no add chain bounds them.) */
#include <immintrin.h>
#include <omp.h>
#include <stdint.h>

static int64_t first_row(const int64_t *rowptr, int64_t nrows, int t, int shares)
{
    const int64_t total = rowptr[nrows] + nrows, want = (int64_t)((double)total * t / shares);
    int64_t lo = 0, hi = nrows;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (rowptr[mid] + mid < want)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static float row_scalar(const int64_t *rowptr, const int32_t *col, const float *val, const float *x, int64_t i)
{
    float s = 0.0f;
    for (int64_t k = rowptr[i]; k < rowptr[i + 1]; k++)
        s += val[k] * x[col[k]];
    return s;
}

__attribute__((target("avx2,fma"))) static float row_gather(const int64_t *rowptr, const int32_t *col,
                                                            const float *val, const float *x, int64_t i)
{
    int64_t k = rowptr[i];
    const int64_t end = rowptr[i + 1];
    __m256 acc = _mm256_setzero_ps();
    for (; k + 8 <= end; k += 8) {
        const __m256i c = _mm256_loadu_si256((const __m256i *)(col + k));
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(val + k), _mm256_i32gather_ps(x, c, 4), acc);
    }
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_shuffle_ps(h, h, 1));
    float s = _mm_cvtss_f32(h);
    for (; k < end; k++)
        s += val[k] * x[col[k]];
    return s;
}

void probe_spmv(int variant, int threads, int64_t nrows, const int64_t *rowptr, const int32_t *col, const float *val,
                const float *x, float *y)
{
#pragma omp parallel num_threads(threads)
    {
        const int t = omp_get_thread_num(), shares = omp_get_num_threads();
        const int64_t r0 = first_row(rowptr, nrows, t, shares);
        const int64_t r1 = t + 1 == shares ? nrows : first_row(rowptr, nrows, t + 1, shares);
        if (variant == 0) {
            for (int64_t i = r0; i < r1; i++)
                y[i] = row_scalar(rowptr, col, val, x, i);
        } else if (variant == 1) {
            int64_t i = r0;
            for (; i + 1 < r1; i += 2) {
                int64_t a = rowptr[i], b = rowptr[i + 1];
                const int64_t ae = rowptr[i + 1], be = rowptr[i + 2];
                float sa = 0.0f, sb = 0.0f;
                for (; a < ae && b < be; a++, b++) {
                    sa += val[a] * x[col[a]];
                    sb += val[b] * x[col[b]];
                }
                for (; a < ae; a++)
                    sa += val[a] * x[col[a]];
                for (; b < be; b++)
                    sb += val[b] * x[col[b]];
                y[i] = sa;
                y[i + 1] = sb;
            }
            for (; i < r1; i++)
                y[i] = row_scalar(rowptr, col, val, x, i);
        } else if (variant == 2) {
            for (int64_t i = r0; i < r1; i++)
                y[i] = row_gather(rowptr, col, val, x, i);
        } else if (variant == 3 || variant == 6 || variant == 7) {
            const int ahead = variant == 3 ? 32 : variant == 6 ? 16 : 64;
            const int64_t kend = rowptr[r1];
            for (int64_t i = r0; i < r1; i++) {
                float s = 0.0f;
                for (int64_t k = rowptr[i]; k < rowptr[i + 1]; k++) {
                    if (k + ahead < kend)
                        __builtin_prefetch(x + col[k + ahead]);
                    s += val[k] * x[col[k]];
                }
                y[i] = s;
            }
        } else if (variant == 4) {
            const int32_t *bits = (const int32_t *)val;
            for (int64_t i = r0; i < r1; i++) {
                int32_t s = 0;
                for (int64_t k = rowptr[i]; k < rowptr[i + 1]; k++)
                    s += bits[k] ^ col[k];
                y[i] = (float)s;
            }
        } else if (variant == 5) {
            const int32_t *xbits = (const int32_t *)x;
            for (int64_t i = r0; i < r1; i++) {
                int32_t s = 0;
                for (int64_t k = rowptr[i]; k < rowptr[i + 1]; k++)
                    s += xbits[col[k]];
                y[i] = (float)s;
            }
        }
    }
}
