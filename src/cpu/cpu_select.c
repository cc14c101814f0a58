/* k-selection on the CPU: a bounded max-heap per row over (key, column), where the key is the
 * value (negated for `largest`) and ties go to the smaller column. */
#include <stdlib.h>

#include "../core/error.h"
#include "cpu.h"

typedef struct entry {
    double key;
    int64_t col;
} entry;

/* a is worse than b: larger key, or equal key and larger column */
static inline bool worse(entry a, entry b) { return a.key > b.key || (a.key == b.key && a.col > b.col); }

static void sift_down(entry *h, int64_t size, int64_t at)
{
    for (;;) {
        int64_t l = 2 * at + 1, r = l + 1, top = at;
        if (l < size && worse(h[l], h[top]))
            top = l;
        if (r < size && worse(h[r], h[top]))
            top = r;
        if (top == at)
            return;
        entry t = h[at];
        h[at] = h[top];
        h[top] = t;
        at = top;
    }
}

static void select_row(const void *row, bool single, int64_t n, int64_t k, bool largest, entry *heap)
{
    int64_t size = 0;
    for (int64_t i = 0; i < n; i++) {
        double v = single ? (double)((const float *)row)[i] : ((const double *)row)[i];
        entry e = {largest ? -v : v, i};
        if (size < k) { /* fill, then heapify once full */
            heap[size++] = e;
            if (size == k)
                for (int64_t at = k / 2 - 1; at >= 0; at--)
                    sift_down(heap, k, at);
        } else if (worse(heap[0], e)) {
            heap[0] = e;
            sift_down(heap, k, 0);
        }
    }
    /* heap sort: repeatedly move the worst to the end, leaving best-first order */
    for (int64_t end = k - 1; end > 0; end--) {
        entry t = heap[0];
        heap[0] = heap[end];
        heap[end] = t;
        sift_down(heap, end, 0);
    }
}

sr_status sr_cpu_select_rows(const void *block, sr_type type, int64_t rows, int64_t n, int64_t ld, int64_t k,
                             bool largest, int64_t *idx, int64_t ld_idx, const sr_strided_out *dist, int threads)
{
    bool failed = false;
    const bool single = type == SR_TYPE_FLOAT32;
    const size_t es = single ? sizeof(float) : sizeof(double);
#pragma omp parallel num_threads(threads) reduction(|| : failed)
    {
        entry *heap = malloc((size_t)k * sizeof *heap);
#pragma omp for schedule(dynamic, 16)
        for (int64_t r = 0; r < rows; r++) {
            if (heap == NULL)
                continue;
            select_row((const char *)block + (size_t)r * (size_t)ld * es, single, n, k, largest, heap);
            for (int64_t t = 0; t < k; t++) {
                double v = largest ? -heap[t].key : heap[t].key;
                int64_t at = r * dist->row_stride + t * dist->col_stride;
                idx[r * ld_idx + t] = heap[t].col;
                if (single)
                    ((float *)dist->data)[at] = (float)v;
                else
                    ((double *)dist->data)[at] = v;
            }
        }
        failed = heap == NULL;
        free(heap);
    }
    return failed ? sr_error(SR_ERROR_OUT_OF_MEMORY, "k-NN: out of host memory for %lld-entry heaps", (long long)k)
                  : SR_SUCCESS;
}
