/* User semirings on the host: their kernels' C source (the user's ⊕ and ⊗ in place of the
 * built-ins' macros, each loop summing in the order of the built-in kernel it stands for, so a
 * built-in written again as a user semiring gives its bits), compiled by cpu_jit.c; and the
 * dense-output product (SpMV, SpMM) that runs them on the pool. sr_mxm's fill pass calls the
 * row kernel from cpu_mxm.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "../core/memory.h"
#include "../core/types.h"
#include "../semiring/user.h"
#include "cpu.h"
#include "cpu_clones.h"
#include "cpu_jit.h"
#include "cpu_pool.h"

static const char kTemplate[] =
    "/* sparsering: kernels of the user semiring %s (generated; src/cpu/cpu_user.c) */\n"
    "#include <math.h>\n"
    "#include <stddef.h>\n"
    "#include <stdint.h>\n"
    "typedef %s T;\n"
    "static inline T sr_add(T a, T b) { return (T)(%s); }\n"
    "static inline T sr_mul(T x, T y) { return (T)(%s); }\n"
    "static inline T sr_identity(void) { return (T)(%s); }\n"
    "\n"
    "void sr_user_add(const void *a, const void *b, void *out)\n"
    "{\n"
    "    *(T *)out = sr_add(*(const T *)a, *(const T *)b);\n"
    "}\n"
    "\n"
    "void sr_user_mul(const void *a, const void *b, void *out)\n"
    "{\n"
    "    *(T *)out = sr_mul(*(const T *)a, *(const T *)b);\n"
    "}\n"
    "\n"
    "/* as cpu_spmm.c's kernels: each element from the identity, A's entries in order */\n"
    "void sr_user_dense_row(int64_t i, const int64_t *rowptr, const int32_t *colind, const void *av_, const void *b_,\n"
    "                       int64_t b_rs, int64_t b_cs, int64_t n, void *c_, int64_t c_rs, int64_t c_cs, void *acc_,\n"
    "                       const unsigned char *allow, int accumulate)\n"
    "{\n"
    "    const T *av = (const T *)av_, *b = (const T *)b_;\n"
    "    T *c = (T *)c_, *restrict acc = (T *)acc_;\n"
    "    for (int64_t j = 0; j < n; j++)\n"
    "        acc[j] = sr_identity();\n"
    "    for (int64_t k = rowptr[i]; k < rowptr[i + 1]; k++) {\n"
    "        const T a = av[k];\n"
    "        const T *restrict brow = b + (ptrdiff_t)colind[k] * b_rs;\n"
    "        if (b_cs == 1)\n"
    "            for (int64_t j = 0; j < n; j++)\n"
    "                acc[j] = sr_add(acc[j], sr_mul(a, brow[j]));\n"
    "        else\n"
    "            for (int64_t j = 0; j < n; j++)\n"
    "                acc[j] = sr_add(acc[j], sr_mul(a, brow[j * b_cs]));\n"
    "    }\n"
    "    for (int64_t j = 0; j < n; j++) {\n"
    "        if (allow && !allow[j])\n"
    "            continue;\n"
    "        T *out = c + i * c_rs + j * c_cs;\n"
    "        *out = accumulate ? sr_add(*out, acc[j]) : acc[j];\n"
    "    }\n"
    "}\n"
    "\n"
    "/* as cpu_spmm.c's SpMV: a row's sum from the identity in a register, x's next elements fetched ahead */\n"
    "void sr_user_spmv_rows(int64_t r0, int64_t r1, const int64_t *rowptr, const int32_t *colind, const void *av_,\n"
    "                       const void *x_, int64_t xs, void *y_, int64_t ys, const int64_t *mask_rowptr,\n"
    "                       int complement, int accumulate)\n"
    "{\n"
    "    const T *restrict av = (const T *)av_, *restrict x = (const T *)x_;\n"
    "    T *restrict y = (T *)y_;\n"
    "    const int64_t k_end = rowptr[r1] - 32;\n"
    "    for (int64_t i = r0; i < r1; i++) {\n"
    "        T sum = sr_identity();\n"
    "        if (xs == 1) {\n"
    "            for (int64_t k = rowptr[i]; k < rowptr[i + 1]; k++) {\n"
    "                if (k < k_end)\n"
    "                    __builtin_prefetch(&x[colind[k + 32]]);\n"
    "                sum = sr_add(sum, sr_mul(av[k], x[colind[k]]));\n"
    "            }\n"
    "        } else {\n"
    "            for (int64_t k = rowptr[i]; k < rowptr[i + 1]; k++)\n"
    "                sum = sr_add(sum, sr_mul(av[k], x[(ptrdiff_t)colind[k] * xs]));\n"
    "        }\n"
    "        if (mask_rowptr && (mask_rowptr[i + 1] > mask_rowptr[i]) == (complement != 0))\n"
    "            continue;\n"
    "        T *out = y + i * ys;\n"
    "        *out = accumulate ? sr_add(*out, sum) : sum;\n"
    "    }\n"
    "}\n"
    "\n"
    "/* as cpu_mxm.c's fill: a column's first product, then each next one added to it */\n"
    "int64_t sr_user_mxm_row(int64_t i, const int64_t *a_rowptr, const int32_t *a_colind, const void *av_,\n"
    "                        const int64_t *b_rowptr, const int32_t *b_colind, const void *bv_, int64_t *mark,\n"
    "                        const int64_t *mask_mark, int complement, void *acc_, int32_t *cols)\n"
    "{\n"
    "    const T *av = (const T *)av_, *bv = (const T *)bv_;\n"
    "    T *acc = (T *)acc_;\n"
    "    int64_t count = 0;\n"
    "    for (int64_t ka = a_rowptr[i]; ka < a_rowptr[i + 1]; ka++) {\n"
    "        const int64_t k = a_colind[ka];\n"
    "        const T a = av[ka];\n"
    "        for (int64_t kb = b_rowptr[k]; kb < b_rowptr[k + 1]; kb++) {\n"
    "            const int32_t j = b_colind[kb];\n"
    "            if (mask_mark && (mask_mark[j] == i) == (complement != 0))\n"
    "                continue;\n"
    "            const T p = sr_mul(a, bv[kb]);\n"
    "            if (mark[j] != i) {\n"
    "                mark[j] = i;\n"
    "                cols[count++] = j;\n"
    "                acc[j] = p;\n"
    "            } else {\n"
    "                acc[j] = sr_add(acc[j], p);\n"
    "            }\n"
    "        }\n"
    "    }\n"
    "    return count;\n"
    "}\n"
    "\n"
    "/* as cpu_sddmm.c's dot products: eight partial sums (dot8), or from K = 64 four sets of eight\n"
    " * and a tail (dot4), combined in the same tree; built like the built-in (x86-64-v3 clone or not) */\n"
    "#if %d && defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)\n"
    "#define SR_V3_CLONE __attribute__((target_clones(\"arch=x86-64-v3\", \"default\")))\n"
    "#else\n"
    "#define SR_V3_CLONE\n"
    "#endif\n"
    "enum { LANES = 8 };\n"
    "static inline T dot8(const T *restrict x, const T *restrict y, int64_t K)\n"
    "{\n"
    "    T part[LANES];\n"
    "    for (int q = 0; q < LANES; q++)\n"
    "        part[q] = sr_identity();\n"
    "    int64_t k = 0;\n"
    "    for (; k + LANES <= K; k += LANES)\n"
    "        for (int q = 0; q < LANES; q++)\n"
    "            part[q] = sr_add(part[q], sr_mul(x[k + q], y[k + q]));\n"
    "    for (int q = 0; k + q < K; q++)\n"
    "        part[q] = sr_add(part[q], sr_mul(x[k + q], y[k + q]));\n"
    "    T d = part[0];\n"
    "    for (int q = 1; q < LANES; q++)\n"
    "        d = sr_add(d, part[q]);\n"
    "    return d;\n"
    "}\n"
    "static inline T dot4(const T *restrict x, const T *restrict y, int64_t K)\n"
    "{\n"
    "    T p0[LANES], p1[LANES], p2[LANES], p3[LANES];\n"
    "    for (int q = 0; q < LANES; q++)\n"
    "        p0[q] = p1[q] = p2[q] = p3[q] = sr_identity();\n"
    "    int64_t k = 0;\n"
    "    for (; k + 4 * LANES <= K; k += 4 * LANES)\n"
    "        for (int q = 0; q < LANES; q++) {\n"
    "            p0[q] = sr_add(p0[q], sr_mul(x[k + q], y[k + q]));\n"
    "            p1[q] = sr_add(p1[q], sr_mul(x[k + q + LANES], y[k + q + LANES]));\n"
    "            p2[q] = sr_add(p2[q], sr_mul(x[k + q + 2 * LANES], y[k + q + 2 * LANES]));\n"
    "            p3[q] = sr_add(p3[q], sr_mul(x[k + q + 3 * LANES], y[k + q + 3 * LANES]));\n"
    "        }\n"
    "    for (; k + LANES <= K; k += LANES)\n"
    "        for (int q = 0; q < LANES; q++)\n"
    "            p0[q] = sr_add(p0[q], sr_mul(x[k + q], y[k + q]));\n"
    "    T tail = sr_identity();\n"
    "    for (; k < K; k++)\n"
    "        tail = sr_add(tail, sr_mul(x[k], y[k]));\n"
    "    for (int q = 0; q < LANES; q++)\n"
    "        p0[q] = sr_add(sr_add(p0[q], p1[q]), sr_add(p2[q], p3[q]));\n"
    "    for (int q = 0; q < LANES / 2; q++)\n"
    "        p0[q] = sr_add(p0[q], p0[q + LANES / 2]);\n"
    "    return sr_add(sr_add(sr_add(p0[0], p0[2]), sr_add(p0[1], p0[3])), tail);\n"
    "}\n"
    "\n"
    "/* S's entries [e0, e1) (entry e0 in row i): out[e] = the dot of A's row i and B's row colind[e],\n"
    " * ⊗ S's value after it when S has values (sv) */\n"
    "SR_V3_CLONE void sr_user_sddmm_range(const int64_t *rowptr, const int32_t *colind, const void *sv_,\n"
    "                                     const void *a_, const void *b_, int64_t K, int64_t i, int64_t e0,\n"
    "                                     int64_t e1, void *out_)\n"
    "{\n"
    "    const T *sv = (const T *)sv_, *A = (const T *)a_, *B = (const T *)b_;\n"
    "    T *out = (T *)out_;\n"
    "    for (int64_t e = e0; e < e1; e++) {\n"
    "        while (rowptr[i + 1] <= e)\n"
    "            i++;\n"
    "        const T *x = A + (size_t)i * (size_t)K, *y = B + (size_t)colind[e] * (size_t)K;\n"
    "        T d = K >= 64 ? dot4(x, y, K) : dot8(x, y, K);\n"
    "        out[e] = sv ? sr_mul(sv[e], d) : d;\n"
    "    }\n"
    "}\n";

static const char *c_type(sr_type t)
{
    return t == SR_TYPE_INT32 ? "int32_t" : t == SR_TYPE_FLOAT32 ? "float" : "double";
}

sr_status sr_cpu_user_compile(sr_user_semiring *u)
{
    const sr_semiring_def *d = &u->def;
    const char *add = sr_user_monoid_add(d->add) ? sr_user_monoid_add(d->add) : d->add;
    const char *identity = d->identity ? d->identity : sr_user_monoid_identity(d->add, d->type);
    char what[160];
    snprintf(what, sizeof what, "semiring '%s' (add '%s', identity '%s', multiply '%s')", d->name, d->add, identity,
             d->multiply);
    sr_jit_library *lib = NULL;
#ifdef SR_AVX2_CLONES
    const int clones = 1; /* as the library's SDDMM (cpu_clones.h) */
#else
    const int clones = 0;
#endif
    SR_TRY(sr_jit_load_formatted(what, &lib, kTemplate, d->name, c_type(d->type), add, d->multiply, identity,
                                 clones));
    u->library = lib;
    u->spmv_rows = (sr_user_spmv_rows_fn)sr_jit_symbol(lib, "sr_user_spmv_rows");
    u->dense_row = (sr_user_dense_row_fn)sr_jit_symbol(lib, "sr_user_dense_row");
    u->mxm_row = (sr_user_mxm_row_fn)sr_jit_symbol(lib, "sr_user_mxm_row");
    u->add = (sr_user_add_fn)sr_jit_symbol(lib, "sr_user_add");
    u->mul = (sr_user_add_fn)sr_jit_symbol(lib, "sr_user_mul");
    u->sddmm_range = (sr_user_sddmm_range_fn)sr_jit_symbol(lib, "sr_user_sddmm_range");
    if (!u->spmv_rows || !u->dense_row || !u->mxm_row || !u->add || !u->mul || !u->sddmm_range)
        return sr_error(SR_ERROR_INTERNAL, "%s: the compiled kernels lack a symbol", what);
    return SR_SUCCESS;
}

/* A user metric's kernels: metric.h's helpers, the user's terms, and the loops of cpu_distance.c
 * (sr_cpu_distance_norms, query_by_intersection) in the same order, so a built-in written again
 * gives its bits. */
static const char kMetricTemplate[] =
    "/* sparsering: kernels of the user metric %s (generated; src/cpu/cpu_user.c) */\n"
    "#include <math.h>\n"
    "#include <stddef.h>\n"
    "#include <stdint.h>\n"
    "#include <stdlib.h>\n"
    "#define SR_FN static inline\n"
    "%s"
    "static inline double sr_pair(double q, double x, double p) { (void)q, (void)x, (void)p; return (double)(%s); }\n"
    "static inline double sr_norm(double v, double p) { (void)v, (void)p; return (double)(%s); }\n"
    "static inline double sr_pair2(double q, double x, double p) { (void)q, (void)x, (void)p; return (double)(%s); }\n"
    "static inline double sr_norm2(double v, double p) { (void)v, (void)p; return (double)(%s); }\n"
    "static inline double sr_distance(double acc, double nq, double nx, double acc2, double nq2, double nx2, double d,\n"
    "                                 double p)\n"
    "{\n"
    "    (void)acc, (void)nq, (void)nx, (void)acc2, (void)nq2, (void)nx2, (void)d, (void)p;\n"
    "    return (double)(%s);\n"
    "}\n"
    "static inline double sr_term(double q, double x, double p)\n"
    "{\n"
    "    return %s;\n"
    "}\n"
    "static inline double sr_term2(double q, double x, double p)\n"
    "{\n"
    "    return %s;\n"
    "}\n"
    "enum { SR_TWO_SUMS = %d, SR_MAXIMUM = %d };\n"
    "/* a sum's += (the built-ins' order), or a maximum's fmax (chebyshev's) */\n"
    "static inline double sr_fold(double a, double t) { return SR_MAXIMUM ? fmax(a, t) : a + t; }\n"
    "static inline double value_at(const void *v, int single, int64_t e)\n"
    "{\n"
    "    return single ? (double)((const float *)v)[e] : ((const double *)v)[e];\n"
    "}\n"
    "\n"
    "void sr_user_norms(int64_t r0, int64_t r1, const int64_t *rowptr, const void *values, int single, double p,\n"
    "                   double *norms)\n"
    "{\n"
    "    for (int64_t r = r0; r < r1; r++) {\n"
    "        double n0 = 0.0, n1 = 0.0;\n"
    "        for (int64_t e = rowptr[r]; e < rowptr[r + 1]; e++) {\n"
    "            const double v = value_at(values, single, e);\n"
    "            n0 = sr_fold(n0, sr_norm(v, p));\n"
    "            n1 = sr_fold(n1, sr_norm2(v, p));\n"
    "        }\n"
    "        norms[2 * r] = n0;\n"
    "        norms[2 * r + 1] = n1;\n"
    "    }\n"
    "}\n"
    "\n"
    "void sr_user_query(int64_t j, const int64_t *q_rowptr, const int32_t *q_colind, const void *qv,\n"
    "                   const int64_t *xt_rowptr, const int32_t *xt_colind, const void *xtv, int single, int64_t n,\n"
    "                   double *acc, const double *qnorm, const double *xnorm, double d, double p, void *out,\n"
    "                   int64_t col_stride, int out_single)\n"
    "{\n"
    "    double *acc2 = acc + n; /* (two sums: the caller's scratch holds 2 n) */\n"
    "    for (int64_t i = 0; i < n * (SR_TWO_SUMS ? 2 : 1); i++)\n"
    "        acc[i] = 0.0;\n"
    "    for (int64_t e = q_rowptr[j]; e < q_rowptr[j + 1]; e++) {\n"
    "        const int32_t c = q_colind[e];\n"
    "        const double q = value_at(qv, single, e);\n"
    "        for (int64_t t = xt_rowptr[c]; t < xt_rowptr[c + 1]; t++) {\n"
    "            const double x = value_at(xtv, single, t);\n"
    "            acc[xt_colind[t]] = sr_fold(acc[xt_colind[t]], sr_term(q, x, p));\n"
    "            if (SR_TWO_SUMS)\n"
    "                acc2[xt_colind[t]] += sr_term2(q, x, p);\n"
    "        }\n"
    "    }\n"
    "    const double nq = qnorm[2 * j], nq2 = qnorm[2 * j + 1];\n"
    "    for (int64_t i = 0; i < n; i++) {\n"
    "        const double v = sr_distance(acc[i], nq, xnorm[2 * i], SR_TWO_SUMS ? acc2[i] : 0.0, nq2, xnorm[2 * i + 1],\n"
    "                                     d, p);\n"
    "        if (out_single)\n"
    "            ((float *)out)[i * col_stride] = (float)v;\n"
    "        else\n"
    "            ((double *)out)[i * col_stride] = v;\n"
    "    }\n"
    "}\n"
    "\n"
    "static int sr_larger_first(const void *a, const void *b)\n"
    "{\n"
    "    const double x = *(const double *)a, y = *(const double *)b;\n"
    "    return x < y ? 1 : x > y ? -1 : 0;\n"
    "}\n"
    "\n"
    "/* A maximum over the union (cpu_chebyshev.h's walk, the user's pair in place of |q - x|): the\n"
    " * query scattered once; each index row's columns walked with the query looked up; the columns\n"
    " * only the query holds give the largest pair(q, 0) among them, the first in decreasing order\n"
    " * that the row lacks. qmark and seen start at -1 (the caller's); a row's stamp is j n + i. */\n"
    "void sr_user_query_union(int64_t j, const int64_t *q_rowptr, const int32_t *q_colind, const void *qv,\n"
    "                         const int64_t *x_rowptr, const int32_t *x_colind, const void *xv, int single,\n"
    "                         int64_t n, double *qdense, int64_t *qmark, int64_t *seen, double *alone,\n"
    "                         const double *qnorm, const double *xnorm, double d, double p, void *out,\n"
    "                         int64_t col_stride, int out_single)\n"
    "{\n"
    "    const int64_t q0 = q_rowptr[j], qn = q_rowptr[j + 1] - q0;\n"
    "    for (int64_t t = 0; t < qn; t++) {\n"
    "        const int32_t c = q_colind[q0 + t];\n"
    "        qdense[c] = value_at(qv, single, q0 + t);\n"
    "        qmark[c] = j;\n"
    "        alone[2 * t] = sr_pair(qdense[c], 0.0, p);\n"
    "        alone[2 * t + 1] = (double)c;\n"
    "    }\n"
    "    qsort(alone, (size_t)qn, 2 * sizeof *alone, sr_larger_first);\n"
    "    const double nq = qnorm[2 * j];\n"
    "    for (int64_t i = 0; i < n; i++) {\n"
    "        const int64_t stamp = j * n + i;\n"
    "        double m = 0.0;\n"
    "        for (int64_t e = x_rowptr[i]; e < x_rowptr[i + 1]; e++) {\n"
    "            const int32_t c = x_colind[e];\n"
    "            m = fmax(m, sr_pair(qmark[c] == j ? qdense[c] : 0.0, value_at(xv, single, e), p));\n"
    "            seen[c] = stamp;\n"
    "        }\n"
    "        for (int64_t t = 0; t < qn; t++)\n"
    "            if (seen[(int32_t)alone[2 * t + 1]] != stamp) {\n"
    "                m = fmax(m, alone[2 * t]);\n"
    "                break;\n"
    "            }\n"
    "        const double v = sr_distance(m, nq, xnorm[2 * i], 0.0, 0.0, 0.0, d, p);\n"
    "        if (out_single)\n"
    "            ((float *)out)[i * col_stride] = (float)v;\n"
    "        else\n"
    "            ((double *)out)[i * col_stride] = v;\n"
    "    }\n"
    "}\n";

sr_status sr_cpu_user_metric_compile(sr_user_metric *u)
{
    const sr_metric_def *d = &u->def;
    const sr_user_metric_terms t = sr_user_metric_terms_of(d);
    char what[200];
    snprintf(what, sizeof what, "metric '%s' (pair '%s', norm '%s', distance '%s'%s%s)", d->name, d->pair, t.norm,
             t.distance, d->over_union ? ", over the union" : "", t.maximum ? ", reduced by max" : "");
    sr_jit_library *lib = NULL;
    SR_TRY(sr_jit_load_formatted(what, &lib, kMetricTemplate, d->name, sr_user_metric_helpers, d->pair, t.norm,
                                 t.pair2, t.norm2, t.distance, t.term, t.term2, t.two_sums, t.maximum));
    u->library = lib;
    u->norms = (sr_user_norms_fn)sr_jit_symbol(lib, "sr_user_norms");
    u->query = (sr_user_query_fn)sr_jit_symbol(lib, "sr_user_query");
    u->query_union = (sr_user_query_union_fn)sr_jit_symbol(lib, "sr_user_query_union");
    u->walks_union = t.walks_union;
    if (!u->norms || !u->query || !u->query_union)
        return sr_error(SR_ERROR_INTERNAL, "%s: the compiled kernels lack a symbol", what);
    return SR_SUCCESS;
}

/* A dense-output product for the pool: a chunk is `rows` rows; each slot its accumulator row and
 * mask flags. */
typedef struct {
    const struct sr_matrix_s *A, *mask;
    const sr_dense *B, *C;
    bool complement, accumulate;
    sr_user_dense_row_fn row;
    char *acc;            /* slots x n values */
    unsigned char *allow; /* slots x n flags, or NULL without a mask */
    int64_t rows, n;
    size_t value_size;
} dense_job;

static void dense_chunk(void *arg, int64_t chunk, int slot)
{
    const dense_job *job = arg;
    const struct sr_matrix_s *A = job->A, *mask = job->mask;
    const sr_dense *B = job->B, *C = job->C;
    const int64_t n = job->n, i0 = chunk * job->rows, i1 = i0 + job->rows < A->nrows ? i0 + job->rows : A->nrows;
    /* element strides: a row-major view's rows are ld apart, a column-major one's columns */
    const int64_t b_rs = B->layout == SR_ROW_MAJOR ? B->ld : 1, b_cs = B->layout == SR_ROW_MAJOR ? 1 : B->ld;
    const int64_t c_rs = C->layout == SR_ROW_MAJOR ? C->ld : 1, c_cs = C->layout == SR_ROW_MAJOR ? 1 : C->ld;
    void *acc = job->acc + (size_t)slot * (size_t)n * job->value_size;
    unsigned char *allow = job->allow ? job->allow + (size_t)slot * (size_t)n : NULL;
    for (int64_t i = i0; i < i1; i++) {
        if (allow) { /* the row's flags: the mask's columns allowed (or, complemented, the others) */
            memset(allow, job->complement, (size_t)n);
            for (int64_t k = mask->rowptr[i]; k < mask->rowptr[i + 1]; k++)
                allow[mask->colind[k]] = !job->complement;
        }
        job->row(i, A->rowptr, A->colind, A->values, B->data, b_rs, b_cs, n, C->data, c_rs, c_cs, acc, allow,
                 job->accumulate);
    }
}

/* SpMV for the pool: chunks of equal work (entries plus rows), as cpu_spmm.c's. */
typedef struct {
    const struct sr_matrix_s *A, *mask;
    const sr_dense *x, *y;
    bool complement, accumulate;
    sr_user_spmv_rows_fn rows;
    int64_t chunks;
} spmv_job;

static void spmv_chunk(void *arg, int64_t chunk, int slot)
{
    const spmv_job *job = arg;
    const struct sr_matrix_s *A = job->A;
    (void)slot;
    const int64_t r0 = sr_cpu_first_row_of_share(A->rowptr, A->nrows, chunk, job->chunks);
    const int64_t r1 = chunk + 1 == job->chunks ? A->nrows : sr_cpu_first_row_of_share(A->rowptr, A->nrows, chunk + 1, job->chunks);
    job->rows(r0, r1, A->rowptr, A->colind, A->values, job->x->data, job->x->layout == SR_ROW_MAJOR ? job->x->ld : 1,
              job->y->data, job->y->layout == SR_ROW_MAJOR ? job->y->ld : 1, job->mask ? job->mask->rowptr : NULL,
              job->complement, job->accumulate);
}

sr_status sr_cpu_user_spmm(const struct sr_matrix_s *A, const sr_dense *B, const sr_dense *C,
                           const struct sr_matrix_s *mask, sr_semiring s, bool complement, bool accumulate)
{
    const sr_user_semiring *u = sr_user_semiring_of((int)s);
    if (!u)
        return sr_error(SR_ERROR_INTERNAL, "sr_cpu_user_spmm: %d is not a user semiring", (int)s);
    const int64_t n = C->ncols;
    if (n == 1) { /* four chunks a thread, as the built-in SpMV */
        const int threads = sr_context_threads_for(A->ctx, A->rowptr[A->nrows] + A->nrows);
        spmv_job job = {A, mask, B, C, complement, accumulate, u->spmv_rows, (int64_t)threads * 4};
        if (job.chunks > A->nrows)
            job.chunks = A->nrows > 0 ? A->nrows : 1;
        sr_cpu_run_chunks(threads, job.chunks, spmv_chunk, &job);
        return SR_SUCCESS;
    }
    const int64_t work = (A->rowptr[A->nrows] + (mask ? mask->rowptr[mask->nrows] : 0)) * (n + 1) + A->nrows;
    const int threads = sr_context_threads_for(A->ctx, work);
    dense_job job = {A, mask, B, C, complement, accumulate, u->dense_row, NULL, NULL, 64, n, sr_type_size(C->type)};
    job.acc = malloc((size_t)threads * (size_t)(n > 0 ? n : 1) * job.value_size);
    job.allow = mask ? malloc((size_t)threads * (size_t)(n > 0 ? n : 1)) : NULL;
    if (!job.acc || (mask && !job.allow)) {
        free(job.acc);
        free(job.allow);
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for %d rows of %lld accumulators", threads,
                        (long long)n);
    }
    sr_cpu_run_chunks(threads, (A->nrows + job.rows - 1) / job.rows, dense_chunk, &job);
    free(job.acc);
    free(job.allow);
    return SR_SUCCESS;
}
