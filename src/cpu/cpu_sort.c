/* Sorting a row's column indices, for the sparse products. */
#include <string.h>

#include "cpu.h"

/* Sorts a row's column indices ascending, inline (qsort's comparator call per comparison
 * dominated the fill pass): insertion sort for short rows, median-of-3 quicksort above, always
 * recursing into the smaller part. */
static void quicksort_columns(int32_t *a, int64_t n)
{
    while (n > 24) {
        int32_t x = a[0], y = a[n / 2], z = a[n - 1];
        int32_t pivot = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
        int64_t i = 0, j = n - 1;
        while (i <= j) {
            while (a[i] < pivot)
                i++;
            while (a[j] > pivot)
                j--;
            if (i <= j) {
                int32_t t = a[i];
                a[i++] = a[j];
                a[j--] = t;
            }
        }
        if (j + 1 < n - i) { /* [0, j] is the smaller part */
            quicksort_columns(a, j + 1);
            a += i;
            n -= i;
        } else {
            quicksort_columns(a + i, n - i);
            n = j + 1;
        }
    }
    for (int64_t k = 1; k < n; k++) {
        int32_t v = a[k];
        int64_t m = k - 1;
        for (; m >= 0 && a[m] > v; m--)
            a[m + 1] = a[m];
        a[m + 1] = v;
    }
}

/* Least-significant-digit radix sort of n column indices below 2^key_bits, 8 bits a pass, through
 * tmp (n entries); the result ends in a. No comparisons to mispredict: on rows of hundreds of
 * random columns it beat the quicksort, whose compares a branch predictor cannot learn. */
static void radix_sort_columns(int32_t *a, int32_t *tmp, int64_t n, int key_bits)
{
    int32_t *from = a, *to = tmp;
    for (int shift = 0; shift < key_bits; shift += 8) {
        int64_t start[257] = {0};
        for (int64_t k = 0; k < n; k++)
            start[(((uint32_t)from[k] >> shift) & 255u) + 1]++;
        for (int d = 0; d < 256; d++)
            start[d + 1] += start[d];
        for (int64_t k = 0; k < n; k++)
            to[start[((uint32_t)from[k] >> shift) & 255u]++] = from[k];
        int32_t *t = from;
        from = to;
        to = t;
    }
    if (from != a)
        memcpy(a, from, (size_t)n * sizeof *a);
}

/* A row's columns ascending: the radix sort for long rows, the quicksort (with its insertion sort)
 * for short ones, where the radix sort's 256-bucket passes cost more than the compares. */
void sr_cpu_sort_columns(int32_t *a, int32_t *tmp, int64_t n, int key_bits)
{
    if (n >= 128 && tmp)
        radix_sort_columns(a, tmp, n, key_bits);
    else
        quicksort_columns(a, n);
}

