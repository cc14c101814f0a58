/* Random power-law sparse matrices for the demo and the benchmarks. */
#include <math.h>
#include <stdlib.h>

#include "powerlaw.h"

static uint64_t powerlaw_state;
static uint64_t powerlaw_rand(void)
{
    uint64_t z = (powerlaw_state += 0x9e3779b97f4a7c15ull); /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double powerlaw_uniform(void) { return (double)(powerlaw_rand() >> 11) / 9007199254740992.0; }

static int compare_int32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Power-law row degrees (Pareto, clipped at ncols/2), columns with Zipf-like popularity. */
int powerlaw_csr(int64_t nrows, int64_t ncols, double degree, uint64_t seed, int64_t **rowptr_out,
                 int32_t **colind_out, float **values_out)
{
    powerlaw_state = seed;
    int64_t *rowptr = malloc((size_t)(nrows + 1) * sizeof *rowptr);
    if (!rowptr)
        return 0;
    rowptr[0] = 0;
    for (int64_t i = 0; i < nrows; i++) {
        int64_t d = (int64_t)(degree * 0.5 / pow(1.0 - 0.9999 * powerlaw_uniform(), 0.6));
        rowptr[i + 1] = rowptr[i] + (d < ncols / 2 ? d : ncols / 2);
    }
    int64_t nnz = rowptr[nrows];
    int32_t *colind = malloc((size_t)(nnz + 1) * sizeof *colind);
    float *values = malloc((size_t)(nnz + 1) * sizeof *values);
    unsigned char *used = calloc((size_t)ncols + 1, 1);
    if (!colind || !values || !used) {
        free(rowptr), free(colind), free(values), free(used);
        return 0;
    }
    for (int64_t i = 0; i < nrows; i++) {
        int64_t start = rowptr[i], end = rowptr[i + 1];
        for (int64_t k = start; k < end;) {
            double u = powerlaw_uniform();
            int32_t c = (int32_t)((double)ncols * u * u * u);
            if (!used[c]) {
                used[c] = 1;
                colind[k++] = c;
            }
        }
        for (int64_t k = start; k < end; k++) {
            used[colind[k]] = 0;
            values[k] = (float)(0.5 + powerlaw_uniform());
        }
        qsort(colind + start, (size_t)(end - start), sizeof *colind, compare_int32);
    }
    free(used);
    *rowptr_out = rowptr;
    *colind_out = colind;
    *values_out = values;
    return 1;
}

