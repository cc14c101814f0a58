/* Wall-clock seconds and medians for the C benchmark programs. */
#ifndef SR_BENCH_TIME_H
#define SR_BENCH_TIME_H

#include <stdlib.h>
#include <time.h>

static inline double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static inline int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of t[0, n) (sorts t). */
static inline double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, compare_double);
    return t[n / 2];
}

#endif
