/* Random power-law sparse matrices: Pareto row degrees clipped at ncols/2, Zipf-like column
 * popularity (u^3), sorted rows, float values in [0.5, 1.5). Deterministic for a seed. */
#ifndef SR_TOOLS_POWERLAW_H
#define SR_TOOLS_POWERLAW_H

#include <stdint.h>

/* Returns 1 and malloc'ed arrays, or 0 when out of memory. */
int powerlaw_csr(int64_t nrows, int64_t ncols, double degree, uint64_t seed, int64_t **rowptr, int32_t **colind,
                 float **values);

#endif
