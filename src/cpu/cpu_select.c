/* k-selection on the CPU: a bounded max-heap per row over (key, column), where the key is the
 * value (negated for `largest`) and ties go to the smaller column. */
#include <stdlib.h>

#include "../core/memory.h"
#include "../core/error.h"
#include "cpu.h"

/* a is worse than b: larger key, or equal key and larger column */
static inline bool worse(sr_select_entry a, sr_select_entry b)
{
    return a.key > b.key || (a.key == b.key && a.col > b.col);
}

static void sift_down(sr_select_entry *h, int64_t size, int64_t at)
{
    for (;;) {
        int64_t l = 2 * at + 1, r = l + 1, top = at;
        if (l < size && worse(h[l], h[top]))
            top = l;
        if (r < size && worse(h[r], h[top]))
            top = r;
        if (top == at)
            return;
        sr_select_entry t = h[at];
        h[at] = h[top];
        h[top] = t;
        at = top;
    }
}

void sr_select_push(sr_select_heap *h, double key, int64_t col)
{
    sr_select_entry e = {key, col};
    if (h->size < h->k) { /* fill, then heapify once full */
        h->e[h->size++] = e;
        if (h->size == h->k)
            for (int64_t at = h->k / 2 - 1; at >= 0; at--)
                sift_down(h->e, h->k, at);
    } else if (worse(h->e[0], e)) {
        h->e[0] = e;
        sift_down(h->e, h->k, 0);
    }
}

void sr_select_store(sr_select_heap *h, bool largest, bool single, int64_t *idx, const sr_strided_out *dist, int64_t r)
{
    if (h->size < h->k) /* never full: heapify what there is */
        for (int64_t at = h->size / 2 - 1; at >= 0; at--)
            sift_down(h->e, h->size, at);
    /* heap sort: repeatedly move the worst to the end, leaving best-first order */
    for (int64_t end = h->size - 1; end > 0; end--) {
        sr_select_entry t = h->e[0];
        h->e[0] = h->e[end];
        h->e[end] = t;
        sift_down(h->e, end, 0);
    }
    for (int64_t t = 0; t < h->size; t++) {
        double v = largest ? -h->e[t].key : h->e[t].key;
        int64_t at = r * dist->row_stride + t * dist->col_stride;
        idx[t] = h->e[t].col;
        if (single)
            ((float *)dist->data)[at] = (float)v;
        else
            ((double *)dist->data)[at] = v;
    }
    h->size = 0;
}

sr_status sr_cpu_select_rows(const void *block, sr_type type, int64_t rows, int64_t n, int64_t ld, int64_t k,
                             bool largest, int64_t *idx, int64_t ld_idx, const sr_strided_out *dist, int threads)
{
    bool failed = false;
    const bool single = type == SR_TYPE_FLOAT32;
    const size_t es = single ? sizeof(float) : sizeof(double);
#pragma omp parallel num_threads(threads) reduction(|| : failed)
    {
        sr_select_heap heap = {sr_malloc((size_t)k * sizeof(sr_select_entry)), 0, k};
#pragma omp for schedule(dynamic, 16)
        for (int64_t r = 0; r < rows; r++) {
            if (heap.e == NULL)
                continue;
            const char *row = (const char *)block + (size_t)r * (size_t)ld * es;
            for (int64_t i = 0; i < n; i++) {
                double v = single ? (double)((const float *)row)[i] : ((const double *)row)[i];
                sr_select_offer(&heap, largest ? -v : v, i);
            }
            sr_select_store(&heap, largest, single, idx + r * ld_idx, dist, r);
        }
        failed = heap.e == NULL;
        free(heap.e);
    }
    return failed ? sr_error(SR_ERROR_OUT_OF_MEMORY, "k-NN: out of host memory for %lld-entry heaps", (long long)k)
                  : SR_SUCCESS;
}
