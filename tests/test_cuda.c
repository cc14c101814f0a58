/* The CUDA backend against the CPU backend: every conversion must give the identical matrix,
 * and device validation the same messages as the host. Skips (exit 77) with the reason when
 * sparsering has no CUDA backend or no GPU is usable. */
#include "test_util.h"

#ifndef SR_TEST_HAVE_CUDA
int main(void)
{
    printf("SKIP test_cuda: this build has no CUDA backend (nvcc was not found)\n");
    return SR_TEST_SKIP;
}
#else
#include <cuda_runtime.h>

static sr_context gpu, cpu;

/* A device copy of a host array (NULL for zero bytes). */
static void *upload(const void *host, size_t bytes)
{
    void *d = NULL;
    if (bytes == 0)
        return NULL;
    /* cudaMemcpy from pageable memory may return before its DMA lands, and sparsering reads on its
     * own stream: synchronize before handing the pointer over (README: device pointers) */
    cudaError_t e = cudaMalloc(&d, bytes);
    if (e == cudaSuccess)
        e = cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice);
    if (e == cudaSuccess)
        e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        fprintf(stderr, "upload of %zu bytes failed: %s\n", bytes, cudaGetErrorString(e));
        exit(2);
    }
    return d;
}

static void check_same(sr_matrix device_result, sr_matrix host_result, const char *what, const test_csr *m)
{
    bool same = false;
    if (device_result && host_result)
        CHECK_OK(sr_matrix_equal(gpu, device_result, host_result, &same));
    CHECK(same, "%s: device and host differ (%lld x %lld, %lld nnz, %s)", what, (long long)m->nrows,
          (long long)m->ncols, (long long)m->nnz, sr_type_name(m->type));
}

static void shuffle_triplets(int64_t *rows, int32_t *cols, char *vals, size_t es, int64_t nnz)
{
    for (int64_t k = nnz - 1; k > 0; k--) {
        int64_t j = test_below(k + 1);
        int64_t tr = rows[k]; rows[k] = rows[j]; rows[j] = tr;
        int32_t tc = cols[k]; cols[k] = cols[j]; cols[j] = tc;
        char tmp[8];
        memcpy(tmp, vals + k * es, es); memcpy(vals + k * es, vals + j * es, es); memcpy(vals + j * es, tmp, es);
    }
}

static void test_matrix_on_device(const test_csr *m)
{
    if (!test_part_selected()) /* SR_TEST_PART: another part runs it */
        return;
    size_t es = sr_type_size(m->type), vbytes = m->type == SR_TYPE_BOOL ? 0 : (size_t)m->nnz * es;
    int64_t nnz = m->nnz;
    sr_matrix H = test_make_matrix(cpu, m), D = NULL;

    /* from device CSR arrays, validated on the device */
    int64_t *drp = upload(m->rowptr, (size_t)(m->nrows + 1) * sizeof(int64_t));
    int32_t *dci = upload(m->colind, (size_t)nnz * sizeof(int32_t));
    void *dv = upload(m->values, vbytes);
    CHECK_OK(sr_matrix_from_csr(gpu, &D, m->nrows, m->ncols, m->type, drp, dci, dv, SR_DEVICE));
    check_same(D, H, "from_csr(device)", m);
    if (!D)
        return;
    sr_matrix_info info;
    sr_matrix_get_info(D, &info);
    CHECK(info.location == SR_DEVICE && info.nnz == nnz && info.device == 0, "device matrix info");

    /* host <-> device copies */
    sr_matrix D2 = NULL, H2 = NULL;
    CHECK_OK(sr_matrix_copy_to(gpu, H, SR_DEVICE, &D2));
    CHECK_OK(sr_matrix_copy_to(gpu, D2, SR_HOST, &H2));
    check_same(D2, H, "copy_to(device)", m);
    check_same(H2, H, "copy_to(host)", m);
    sr_matrix_free(D2);
    sr_matrix_free(H2);

    /* transpose */
    sr_matrix DT = NULL, HT = NULL;
    CHECK_OK(sr_matrix_transpose(gpu, D, &DT));
    CHECK_OK(sr_matrix_transpose(cpu, H, &HT));
    check_same(DT, HT, "transpose", m);
    sr_matrix_free(DT);
    sr_matrix_free(HT);

    /* COO export into device memory, shuffled, rebuilt on the device; also with duplicates */
    int64_t *rows = malloc((size_t)(2 * nnz + 1) * sizeof *rows);
    int32_t *cols = malloc((size_t)(2 * nnz + 1) * sizeof *cols);
    char *vals = malloc((size_t)(2 * nnz + 1) * es);
    int64_t *drows = upload(rows, (size_t)nnz * sizeof(int64_t));
    int32_t *dcols = upload(cols, (size_t)nnz * sizeof(int32_t));
    void *dvals = upload(vals, vbytes);
    CHECK_OK(sr_matrix_export_coo(gpu, D, drows, dcols, dvals, SR_DEVICE));
    cudaMemcpy(rows, drows, (size_t)nnz * sizeof(int64_t), cudaMemcpyDeviceToHost);
    cudaMemcpy(cols, dcols, (size_t)nnz * sizeof(int32_t), cudaMemcpyDeviceToHost);
    if (vbytes)
        cudaMemcpy(vals, dvals, vbytes, cudaMemcpyDeviceToHost);
    bool ok = true;
    for (int64_t i = 0; i < m->nrows; i++)
        for (int64_t k = m->rowptr[i]; k < m->rowptr[i + 1]; k++)
            ok &= rows[k] == i && cols[k] == m->colind[k];
    CHECK(ok, "device COO export differs from the input");
    cudaFree(drows);
    cudaFree(dcols);
    cudaFree(dvals);
    for (int dup = 0; dup < 2; dup++) {
        if (dup) { /* every entry twice, shuffled */
            CHECK_OK(sr_matrix_export_coo(cpu, H, rows, cols, vals, SR_HOST));
            memcpy(rows + nnz, rows, (size_t)nnz * sizeof *rows);
            memcpy(cols + nnz, cols, (size_t)nnz * sizeof *cols);
            memcpy(vals + nnz * es, vals, (size_t)nnz * es);
            shuffle_triplets(rows, cols, vals, es, 2 * nnz);
        }
        int64_t count = dup ? 2 * nnz : nnz;
        if (!dup) { /* the first nnz shuffled triplets may hold repeats: take a fresh export, shuffled */
            CHECK_OK(sr_matrix_export_coo(cpu, H, rows, cols, vals, SR_HOST));
            shuffle_triplets(rows, cols, vals, es, nnz);
        }
        drows = upload(rows, (size_t)count * sizeof(int64_t));
        dcols = upload(cols, (size_t)count * sizeof(int32_t));
        dvals = upload(vals, m->type == SR_TYPE_BOOL ? 0 : (size_t)count * es);
        sr_matrix DC = NULL, HC = NULL;
        sr_duplicates policy = dup ? SR_DUPLICATES_SUM : SR_DUPLICATES_ERROR;
        CHECK_OK(sr_matrix_from_coo(gpu, &DC, m->nrows, m->ncols, m->type, count, drows, dcols, dvals, policy,
                                    SR_DEVICE));
        CHECK_OK(sr_matrix_from_coo(cpu, &HC, m->nrows, m->ncols, m->type, count, rows, cols, vals, policy, SR_HOST));
        check_same(DC, HC, dup ? "from_coo(device, summed duplicates)" : "from_coo(device)", m);
        if (dup && nnz > 0) {
            sr_matrix none = NULL;
            sr_status s = sr_matrix_from_coo(gpu, &none, m->nrows, m->ncols, m->type, count, drows, dcols, dvals,
                                             SR_DUPLICATES_ERROR, SR_DEVICE);
            CHECK(s == SR_ERROR_INVALID_MATRIX && strstr(sr_last_error(), "duplicate entry") && none == NULL,
                  "device duplicates not rejected: %s", sr_last_error());
        }
        sr_matrix_free(DC);
        sr_matrix_free(HC);
        cudaFree(drows);
        cudaFree(dcols);
        cudaFree(dvals);
    }
    free(rows);
    free(cols);
    free(vals);

    /* dense: into host and device views, both layouts, padded; device dense back to CSR */
    for (int layout = 0; layout < 2; layout++) {
        sr_dense hv = sr_dense_view(NULL, m->nrows, m->ncols, m->type, (sr_layout)layout, SR_HOST);
        hv.ld += 2;
        int64_t outer = layout == SR_ROW_MAJOR ? m->nrows : m->ncols;
        size_t bytes = (size_t)(outer * hv.ld) * es;
        hv.data = malloc(bytes + es);
        memset(hv.data, 0x5a, bytes + es);
        sr_dense dvw = hv;
        dvw.location = SR_DEVICE;
        dvw.data = upload(hv.data, bytes); /* poisoned too */
        CHECK_OK(sr_matrix_export_dense(gpu, D, &hv));
        CHECK_OK(sr_matrix_export_dense(gpu, D, &dvw));
        ok = true;
        for (int64_t i = 0; i < m->nrows; i++)
            for (int64_t j = 0; j < m->ncols; j++)
                ok &= test_dense_at(&hv, i, j) == test_csr_at(m, i, j);
        CHECK(ok, "device dense export into host memory differs (layout %d)", layout);
        void *back = malloc(bytes + es);
        if (bytes)
            cudaMemcpy(back, dvw.data, bytes, cudaMemcpyDeviceToHost);
        CHECK(bytes == 0 || memcmp(back, hv.data, bytes) == 0,
              "device dense export into device memory differs (layout %d)", layout);
        free(back);
        sr_matrix DD = NULL;
        CHECK_OK(sr_matrix_from_dense(gpu, &DD, &dvw));
        check_same(DD, H, "from_dense(device)", m);
        sr_matrix_free(DD);
        cudaFree(dvw.data);
        free(hv.data);
    }

    /* cast */
    for (int t = 0; t < 4; t++) {
        sr_matrix DC = NULL, HC = NULL;
        CHECK_OK(sr_matrix_cast(gpu, D, test_all_types[t], &DC));
        CHECK_OK(sr_matrix_cast(cpu, H, test_all_types[t], &HC));
        check_same(DC, HC, "cast", m);
        sr_matrix_free(DC);
        sr_matrix_free(HC);
    }
    cudaFree(drp);
    cudaFree(dci);
    cudaFree(dv);
    sr_matrix_free(D);
    sr_matrix_free(H);
}

/* Device validation names the same row and entry as the host check. */
static void test_device_validation(void)
{
    if (!test_part_selected()) /* SR_TEST_PART: another part runs it */
        return;
    int64_t rp[] = {0, 2, 3, 5};
    int32_t unsorted[] = {0, 2, 1, 3, 0};
    int64_t decreasing[] = {0, 3, 2, 5};
    int32_t ci[] = {0, 2, 1, 0, 3};
    int32_t out_of_range[] = {0, 2, 9, 0, 3};
    struct {
        const int64_t *rp;
        const int32_t *ci;
        const char *message;
    } cases[] = {
        {rp, unsorted, "column indices of row 2 are not sorted: 0 follows 3 (entry 4)"},
        {decreasing, ci, "row pointers decrease at row 1: rowptr[1] = 3 > rowptr[2] = 2"},
        {rp, out_of_range, "column index 9 of row 1 (entry 2) is out of range [0, 4)"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int64_t *drp = upload(cases[c].rp, sizeof rp);
        int32_t *dci = upload(cases[c].ci, sizeof ci);
        sr_matrix A = NULL;
        CHECK_FAILS(sr_matrix_from_csr(gpu, &A, 3, 4, SR_TYPE_BOOL, drp, dci, NULL, SR_DEVICE), SR_ERROR_INVALID_MATRIX,
                    cases[c].message);
        CHECK(A == NULL, "failed device construction made a matrix");
        cudaFree(drp);
        cudaFree(dci);
    }
}

/* A large power-law matrix: multi-block kernels, long rows, and memory accounting. */
static void test_large(void)
{
    if (!test_part_selected()) /* SR_TEST_PART: another part runs it */
        return;
    test_csr m = test_random_csr(200000, 50000, 24, SR_TYPE_FLOAT32);
    size_t before = 0, peak = 0, after = 0;
    sr_context_device_memory(gpu, &before, NULL);
    sr_context_reset_peak_memory(gpu);
    sr_matrix H = test_make_matrix(cpu, &m), D = NULL, DT = NULL, HT = NULL;
    CHECK_OK(sr_matrix_copy_to(gpu, H, SR_DEVICE, &D));
    if (D) {
        CHECK_OK(sr_matrix_transpose(gpu, D, &DT));
        CHECK_OK(sr_matrix_transpose(cpu, H, &HT));
        check_same(DT, HT, "large transpose", &m);
    }
    sr_context_device_memory(gpu, NULL, &peak);
    size_t matrix_bytes = (size_t)(m.nrows + 1) * 8 + (size_t)m.nnz * 8;
    CHECK(peak >= 2 * matrix_bytes, "peak device memory %zu is below two matrices (%zu)", peak, 2 * matrix_bytes);
    sr_matrix_free(D);
    sr_matrix_free(DT);
    sr_context_device_memory(gpu, &after, NULL);
    CHECK(after == before, "device memory not returned: %zu before, %zu after", before, after);
    printf("large: %lld x %lld, %lld nnz, peak device memory %.1f MB\n", (long long)m.nrows, (long long)m.ncols,
           (long long)m.nnz, peak / 1e6);
    sr_matrix_free(H);
    sr_matrix_free(HT);
    test_csr_free(&m);
}

/* Large copies between pageable host memory and the device go through pinned staging chunks of
 * 8 MiB (src/cuda/device_memory.cu): one row of nnz entries copied up and back down is the same,
 * for sizes under, at and across the chunk boundaries (colind: 4 bytes an entry, float64 values:
 * 8; the 16 bytes of row pointers go directly). */
static void test_staged_copies(void)
{
    if (!test_part_selected()) /* SR_TEST_PART: another part runs it */
        return;
    const int64_t sizes[] = {1 << 20, (1 << 20) + 1, 2 << 20, (2 << 20) + 3, 5 * (1 << 20) + 7};
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        const int64_t nnz = sizes[z];
        int64_t rowptr[2] = {0, nnz};
        int32_t *colind = malloc((size_t)nnz * 4);
        double *values = malloc((size_t)nnz * 8);
        for (int64_t k = 0; k < nnz; k++) {
            colind[k] = (int32_t)k;
            values[k] = test_uniform() - 0.5;
        }
        sr_matrix H = NULL, D = NULL, back = NULL;
        CHECK_OK(sr_matrix_from_csr(cpu, &H, 1, nnz, SR_TYPE_FLOAT64, rowptr, colind, values, SR_HOST));
        CHECK_OK(sr_matrix_copy_to(gpu, H, SR_DEVICE, &D));
        if (D)
            CHECK_OK(sr_matrix_copy_to(gpu, D, SR_HOST, &back));
        if (back) {
            const int64_t *brp;
            const int32_t *bci;
            const void *bv;
            sr_matrix_csr_arrays(back, &brp, &bci, &bv);
            CHECK(brp[1] == nnz && memcmp(bci, colind, (size_t)nnz * 4) == 0 &&
                      memcmp(bv, values, (size_t)nnz * 8) == 0,
                  "%lld entries: the copy up and down differs", (long long)nnz);
        }
        sr_matrix_free(back);
        sr_matrix_free(D);
        sr_matrix_free(H);
        free(colind);
        free(values);
    }
}

/* The device result D (copied down) against the host result H: identical pattern, values within
 * `tolerance` relative (float32 or float64). Returns the number of values off; -1 if the patterns
 * differ. */
static int64_t compare_with_host(sr_matrix D, sr_matrix H, double tolerance)
{
    sr_matrix back = NULL;
    CHECK_OK(sr_matrix_copy_to(gpu, D, SR_HOST, &back));
    if (!back)
        return -1;
    sr_matrix_info di, hi;
    sr_matrix_get_info(back, &di);
    sr_matrix_get_info(H, &hi);
    const int64_t *drp, *hrp;
    const int32_t *dci, *hci;
    const void *dv, *hv;
    sr_matrix_csr_arrays(back, &drp, &dci, &dv);
    sr_matrix_csr_arrays(H, &hrp, &hci, &hv);
    int64_t off = -1;
    if (di.nnz == hi.nnz && di.type == hi.type && memcmp(drp, hrp, (size_t)(di.nrows + 1) * 8) == 0 &&
        memcmp(dci, hci, (size_t)di.nnz * 4) == 0) {
        off = 0;
        for (int64_t k = 0; k < di.nnz && di.type != SR_TYPE_BOOL; k++) {
            double x = di.type == SR_TYPE_FLOAT64 ? ((const double *)dv)[k] : ((const float *)dv)[k];
            double y = di.type == SR_TYPE_FLOAT64 ? ((const double *)hv)[k] : ((const float *)hv)[k];
            off += fabs(x - y) > tolerance * (1.0 + fabs(y));
        }
    }
    sr_matrix_free(back);
    return off;
}

/* Rows of A·B per range of their product bound (the sum of the B-row lengths a row selects):
 * the device bins' ranges, so the test can say that it reached every bin. */
static void count_rows_per_bound(const test_csr *a, const test_csr *b, int64_t counts[10])
{
    static const int64_t upper[] = {64, 128, 256, 512, 2048, 8192};
    const int64_t tiles = (b->ncols + 16383) / 16384; /* the device's column tiles for 8-byte values */
    for (int64_t i = 0; i < a->nrows; i++) {
        int64_t ub = 0;
        for (int64_t k = a->rowptr[i]; k < a->rowptr[i + 1]; k++)
            ub += b->rowptr[a->colind[k] + 1] - b->rowptr[a->colind[k]];
        if (ub == 0)
            continue;
        int bin = 0;
        while (bin < 6 && ub > upper[bin])
            bin++;
        /* dense rows: few A entries against their products take the tiled kernel (bin 7) */
        if (bin == 6 && tiles * (a->rowptr[i + 1] - a->rowptr[i]) * 8 <= ub)
            bin = 7;
        counts[bin]++;
        /* rows the ESC kernels take (when on): at most 32 A entries, and 64 products (index 8) or 128 (9) */
        if (ub <= 128 && a->rowptr[i + 1] - a->rowptr[i] <= 32)
            counts[ub <= 64 ? 8 : 9]++;
    }
}

/* Device mxm against host mxm for A·B, for several semirings and the Boolean ones; patterns
 * exactly, values closely. With mk, the first semiring of each type also under mk as a mask and
 * as a complemented one (dense rows apply a complement after their products, others per
 * product). */
static void check_mxm_against_host(const test_csr *a, const test_csr *b, const test_csr *mk)
{
    if (!test_part_selected()) /* SR_TEST_PART: another part runs it */
        return;
    const sr_semiring semirings[] = {SR_PLUS_TIMES, SR_MIN_PLUS, SR_MAX_MIN, SR_PLUS_PAIR};
    const sr_semiring boolean[] = {SR_OR_AND, SR_ANY_PAIR};
    for (int t = 0; t < 3; t++) {
        sr_type type = t == 0 ? SR_TYPE_FLOAT64 : t == 1 ? SR_TYPE_FLOAT32 : SR_TYPE_BOOL;
        sr_matrix HA = test_make_matrix(cpu, a), HB = test_make_matrix(cpu, b), A = NULL, B = NULL;
        if (type != SR_TYPE_FLOAT64) {
            sr_matrix ca = NULL, cb = NULL;
            CHECK_OK(sr_matrix_cast(cpu, HA, type, &ca));
            CHECK_OK(sr_matrix_cast(cpu, HB, type, &cb));
            sr_matrix_free(HA);
            sr_matrix_free(HB);
            HA = ca;
            HB = cb;
        }
        CHECK_OK(sr_matrix_copy_to(gpu, HA, SR_DEVICE, &A));
        CHECK_OK(sr_matrix_copy_to(gpu, HB, SR_DEVICE, &B));
        const sr_semiring *list = type == SR_TYPE_BOOL ? boolean : semirings;
        const size_t n = type == SR_TYPE_BOOL ? sizeof boolean / sizeof boolean[0] : sizeof semirings / sizeof semirings[0];
        sr_matrix HM = mk ? test_make_matrix(cpu, mk) : NULL, M = NULL;
        if (HM)
            CHECK_OK(sr_matrix_copy_to(gpu, HM, SR_DEVICE, &M));
        for (size_t s = 0; s < n + (mk ? 2 : 0); s++) {
            const int masked = s < n ? 0 : (int)(s - n) + 1; /* 1: the mask, 2: its complement */
            const sr_semiring semiring = list[masked ? 0 : s];
            const sr_descriptor d = {.mask_complement = masked == 2};
            sr_matrix DC = NULL, HC = NULL;
            CHECK_OK(sr_mxm(gpu, &DC, masked ? M : NULL, semiring, A, B, &d));
            CHECK_OK(sr_mxm(cpu, &HC, masked ? HM : NULL, semiring, HA, HB, &d));
            if (!DC || !HC)
                continue;
            int64_t off = compare_with_host(DC, HC, type == SR_TYPE_FLOAT64 ? 1e-12 : 1e-4);
            CHECK(off == 0, "heavy mxm %s %s%s: %s", sr_semiring_name(semiring), sr_type_name(type),
                  masked == 1 ? " masked" : masked == 2 ? " complemented mask" : "",
                  off < 0 ? "device pattern differs" : "device values differ");
            sr_matrix_free(DC);
            sr_matrix_free(HC);
        }
        sr_matrix_free(M);
        sr_matrix_free(HM);
        sr_matrix_free(A);
        sr_matrix_free(B);
        sr_matrix_free(HA);
        sr_matrix_free(HB);
    }
}

/* Device mxm on rows that reach every device bin (products per row from a few up to tens of
 * thousands): heavy, light and wide pairs, and the test says that together they reached every
 * bin's range. */
static void test_heavy_mxm(void)
{
    /* heavy: A 400 x 3000, row lengths up to 3000; B 3000 x 70000, ~25 per row (dense rows of
     * many A entries, over columns wide enough that the device keeps them in global memory).
     * light: A 2000 x 3000, ~3 per row; B 3000 x 20000, ~12 per row.
     * wide: A 300 x 500, ~4 per row; B 500 x 70000, ~2500 per row (dense rows of few A entries
     * and long B rows, over several column tiles). */
    test_csr pairs[3][2] = {
        {test_random_csr(400, 3000, 40, SR_TYPE_FLOAT64), test_random_csr(3000, 70000, 25, SR_TYPE_FLOAT64)},
        {test_random_csr(2000, 3000, 3, SR_TYPE_FLOAT64), test_random_csr(3000, 20000, 12, SR_TYPE_FLOAT64)},
        {test_random_csr(300, 500, 4, SR_TYPE_FLOAT64), test_random_csr(500, 70000, 2500, SR_TYPE_FLOAT64)}};
    int64_t per_bin[10] = {0};
    for (int c = 0; c < 3; c++) {
        /* a mask of about a tenth of each output row, and empty rows (test_random_csr's) */
        test_csr mk = test_random_csr(pairs[c][0].nrows, pairs[c][1].ncols, 0.1 * (double)pairs[c][1].ncols,
                                      SR_TYPE_FLOAT64);
        count_rows_per_bound(&pairs[c][0], &pairs[c][1], per_bin);
        check_mxm_against_host(&pairs[c][0], &pairs[c][1], &mk);
        /* a deterministic context's values, added in A-entry order by a pass of their own */
        CHECK_OK(sr_context_set_deterministic(gpu, true));
        check_mxm_against_host(&pairs[c][0], &pairs[c][1], &mk);
        CHECK_OK(sr_context_set_deterministic(gpu, false));
        /* and with the smallest rows in the hash bins, whose 128-slot table they then fill */
        setenv("SPARSERING_MXM_ESC", "0", 1);
        check_mxm_against_host(&pairs[c][0], &pairs[c][1], NULL);
        unsetenv("SPARSERING_MXM_ESC");
        if (c == 0) {
            /* a workspace that holds one to three dense accumulator rows (float64 / float32): the
             * global dense rows then go in several waves, each reusing the accumulators */
            CHECK_OK(sr_context_set_workspace_limit(gpu, (size_t)4 << 20));
            check_mxm_against_host(&pairs[c][0], &pairs[c][1], &mk);
            CHECK_OK(sr_context_set_workspace_limit(gpu, 0));
        }
        test_csr_free(&mk);
        test_csr_free(&pairs[c][0]);
        test_csr_free(&pairs[c][1]);
    }
    printf("heavy mxm rows per product bound (<=64/128/256/512/2048/8192/more: global/tiled; esc 64/128): "
           "%lld/%lld/%lld/%lld/%lld/%lld/%lld/%lld; %lld/%lld\n",
           (long long)per_bin[0], (long long)per_bin[1], (long long)per_bin[2], (long long)per_bin[3],
           (long long)per_bin[4], (long long)per_bin[5], (long long)per_bin[6], (long long)per_bin[7],
           (long long)per_bin[8], (long long)per_bin[9]);
    for (int bin = 0; bin < 10; bin++)
        CHECK(per_bin[bin] > 0, "heavy mxm: no row with a product bound in range %d", bin);
}

/* A power-law A*A big enough to fill every device bin with many rows, device against host,
 * three times over (an intermittent race would show as a difference in one of them). */
static void test_large_mxm_repeated(void)
{
    if (!test_part_selected()) /* SR_TEST_PART: another part runs it */
        return;
    test_csr a = test_random_csr(200000, 200000, 20, SR_TYPE_FLOAT32); /* longest rows ~1250: ub > 8192 */
    sr_matrix H = test_make_matrix(cpu, &a), D = NULL, HC = NULL;
    CHECK_OK(sr_matrix_copy_to(gpu, H, SR_DEVICE, &D));
    CHECK_OK(sr_mxm(cpu, &HC, NULL, SR_PLUS_TIMES, H, H, NULL));
    for (int round = 0; D && HC && round < 3; round++) {
        sr_matrix DC = NULL;
        CHECK_OK(sr_mxm(gpu, &DC, NULL, SR_PLUS_TIMES, D, D, NULL));
        if (!DC)
            break;
        int64_t off = compare_with_host(DC, HC, 1e-4);
        CHECK(off == 0, "large mxm round %d: %s (%lld values off)", round,
              off < 0 ? "pattern differs" : "values differ", (long long)off);
        if (round == 0) {
            sr_matrix_info info;
            sr_matrix_get_info(DC, &info);
            printf("large mxm: %lld x %lld, %lld nnz -> %lld nnz\n", (long long)a.nrows, (long long)a.ncols,
                   (long long)a.nnz, (long long)info.nnz);
        }
        sr_matrix_free(DC);
    }
    sr_matrix_free(H);
    sr_matrix_free(D);
    sr_matrix_free(HC);
    test_csr_free(&a);
}

/* k-NN and pairwise distances with outputs in device memory (the unstaged path), on a data set
 * spanning several index tiles with heavy columns, against the CPU backend. */
static void test_distances_device_outputs(void)
{
    if (!test_part_selected()) /* SR_TEST_PART: another part runs it */
        return;
    const sr_metric metrics[] = {SR_METRIC_COSINE, SR_METRIC_L1, SR_METRIC_CHEBYSHEV, SR_METRIC_BRAY_CURTIS,
                                 SR_METRIC_INNER_PRODUCT};
    test_csr tx = test_random_csr(30000, 5000, 12, SR_TYPE_FLOAT64), tq = test_random_csr(300, 5000, 12, SR_TYPE_FLOAT64);
    sr_matrix Xh = test_make_matrix(cpu, &tx), Qh = test_make_matrix(cpu, &tq), Xd = NULL, Qd = NULL;
    CHECK_OK(sr_matrix_copy_to(gpu, Xh, SR_DEVICE, &Xd));
    CHECK_OK(sr_matrix_copy_to(gpu, Qh, SR_DEVICE, &Qd));
    test_csr ts = test_random_csr(500, 5000, 12, SR_TYPE_FLOAT64);
    sr_matrix Sh = test_make_matrix(cpu, &ts), Sd = NULL;
    CHECK_OK(sr_matrix_copy_to(gpu, Sh, SR_DEVICE, &Sd));
    const int64_t k = 37, nq = tq.nrows;
    double *full_h = malloc((size_t)(nq * 500) * sizeof(double)), *full_g = malloc((size_t)(nq * 500) * sizeof(double));
    int64_t *hi = malloc((size_t)(nq * k) * sizeof(int64_t)), *gi = malloc((size_t)(nq * k) * sizeof(int64_t));
    double *hd = malloc((size_t)(nq * k) * sizeof(double)), *gd = malloc((size_t)(nq * k) * sizeof(double));
    int64_t *dev_i = NULL;
    double *dev_d = NULL, *dev_full = NULL;
    CHECK(cudaMalloc((void **)&dev_i, (size_t)(nq * k) * sizeof(int64_t)) == cudaSuccess, "cudaMalloc");
    CHECK(cudaMalloc((void **)&dev_d, (size_t)(nq * k) * sizeof(double)) == cudaSuccess, "cudaMalloc");
    CHECK(cudaMalloc((void **)&dev_full, (size_t)(nq * 500) * sizeof(double)) == cudaSuccess, "cudaMalloc");
    for (size_t mi = 0; mi < sizeof metrics / sizeof metrics[0]; mi++) {
        sr_metric m = metrics[mi];
        sr_dense H = sr_dense_view(hd, nq, k, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
        sr_dense G = sr_dense_view(dev_d, nq, k, SR_TYPE_FLOAT64, SR_COL_MAJOR, SR_DEVICE);
        CHECK_OK(sr_knn(cpu, Xh, Qh, k, m, 0, hi, &H, NULL));
        CHECK_OK(sr_knn(gpu, Xd, Qd, k, m, 0, dev_i, &G, NULL));
        cudaMemcpy(gi, dev_i, (size_t)(nq * k) * sizeof(int64_t), cudaMemcpyDeviceToHost);
        cudaMemcpy(gd, dev_d, (size_t)(nq * k) * sizeof(double), cudaMemcpyDeviceToHost);
        int bad = 0;
        for (int64_t q = 0; q < nq && bad < 5; q++)
            for (int64_t t = 0; t < k && bad < 5; t++) {
                double h = hd[q * k + t], g = gd[t * nq + q], tol = 1e-9 * (1 + fabs(h));
                /* indices must agree unless a neighbour at this rank is (nearly) tied */
                bool tied = (t > 0 && fabs(hd[q * k + t - 1] - h) <= tol) || (t + 1 < k && fabs(hd[q * k + t + 1] - h) <= tol);
                if (fabs(h - g) > tol || (!tied && hi[q * k + t] != gi[q * k + t])) {
                    bad++;
                    CHECK(0, "knn %s query %lld rank %lld: cuda %lld at %.12g, cpu %lld at %.12g", sr_metric_name(m),
                          (long long)q, (long long)t, (long long)gi[q * k + t], g, (long long)hi[q * k + t], h);
                }
            }
        /* pairwise into a device matrix (col-major) against 500 other rows */
        sr_dense PD = sr_dense_view(dev_full, nq, 500, SR_TYPE_FLOAT64, SR_COL_MAJOR, SR_DEVICE);
        sr_dense PH = sr_dense_view(full_h, nq, 500, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
        CHECK_OK(sr_pairwise_distance(gpu, Qd, Sd, m, 0, &PD));
        CHECK_OK(sr_pairwise_distance(cpu, Qh, Sh, m, 0, &PH));
        cudaMemcpy(full_g, dev_full, (size_t)(nq * 500) * sizeof(double), cudaMemcpyDeviceToHost);
        bad = 0;
        for (int64_t q = 0; q < nq && bad < 5; q++)
            for (int64_t j = 0; j < 500 && bad < 5; j++) {
                double h = full_h[q * 500 + j], g = full_g[j * nq + q];
                if (fabs(h - g) > 1e-9 * (1 + fabs(h))) {
                    bad++;
                    CHECK(0, "pairwise %s (%lld, %lld): cuda %.12g, cpu %.12g", sr_metric_name(m), (long long)q,
                          (long long)j, g, h);
                }
            }
    }
    free(full_h);
    free(full_g);
    sr_matrix_free(Sh);
    sr_matrix_free(Sd);
    test_csr_free(&ts);
    cudaFree(dev_i);
    cudaFree(dev_d);
    cudaFree(dev_full);
    free(hi);
    free(gi);
    free(hd);
    free(gd);
    sr_matrix_free(Xh);
    sr_matrix_free(Qh);
    sr_matrix_free(Xd);
    sr_matrix_free(Qd);
    test_csr_free(&tx);
    test_csr_free(&tq);
}

int main(void)
{
    test_seed("test_cuda");
    sr_context_options o = sr_context_options_default();
    o.backend = SR_BACKEND_CUDA;
    if (sr_context_create(&gpu, &o) != SR_SUCCESS) {
        printf("SKIP test_cuda: %s\n", sr_last_error());
        return SR_TEST_SKIP;
    }
    o.backend = SR_BACKEND_CPU;
    CHECK_OK(sr_context_create(&cpu, &o));
    test_device_validation();
    for (size_t s = 0; s < sizeof test_shapes / sizeof test_shapes[0]; s++)
        for (int t = 0; t < 4; t++) {
            test_csr m = test_random_csr(test_shapes[s].nrows, test_shapes[s].ncols, test_shapes[s].degree,
                                         test_all_types[t]);
            test_matrix_on_device(&m);
            test_csr_free(&m);
        }
    /* rows wider than the device's row-major dense compaction segments (several, the last partial) */
    for (int t = 0; t < 4; t++) {
        test_csr m = test_random_csr(6, 9000, 3000, test_all_types[t]);
        test_matrix_on_device(&m);
        test_csr_free(&m);
    }
    test_large();
    test_staged_copies();
    test_heavy_mxm();
    test_large_mxm_repeated();
    test_distances_device_outputs();
    sr_context_destroy(gpu);
    sr_context_destroy(cpu);
    return test_finish("test_cuda");
}
#endif
