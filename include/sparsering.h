/** @file
 * sparsering: sparse linear algebra over semirings, on the CPU and on CUDA GPUs.
 *
 * The one public header. C11; no C++ or CUDA headers are needed to include it.
 *
 * Conventions
 *  - Every call returns an sr_status. On failure, sr_last_error() gives a precise message
 *    (thread-local) and the call has changed nothing: output handles are written only on
 *    success, caller arrays only when the whole result is ready.
 *  - Handles are opaque. A matrix keeps a reference to the context it was made with, so a
 *    context may be destroyed before its matrices; it is freed with the last of them.
 *  - Row pointers and counts are 64-bit; column indices are 32-bit (ncols < 2^31).
 *  - Where a call runs: operations on matrices run where the matrices live (host data on the
 *    CPU backend, device data on the CUDA backend); a result lives where its input lives.
 */
#ifndef SPARSERING_H
#define SPARSERING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SR_VERSION_MAJOR 0
#define SR_VERSION_MINOR 1
#define SR_VERSION_PATCH 0

/* ------------------------------------------------------------------ status and errors */

typedef enum sr_status {
    SR_SUCCESS = 0,
    SR_ERROR_INVALID_ARGUMENT = 1,    /**< NULL handle or pointer, unknown enum, mismatched sizes */
    SR_ERROR_INVALID_MATRIX = 2,      /**< caller arrays that are not a valid matrix */
    SR_ERROR_OVERFLOW = 3,            /**< a size that does not fit the index or byte types */
    SR_ERROR_OUT_OF_MEMORY = 4,       /**< host allocation failed */
    SR_ERROR_DEVICE_OUT_OF_MEMORY = 5,/**< device allocation failed */
    SR_ERROR_NO_DEVICE = 6,           /**< CUDA asked for, but not built in or no usable GPU */
    SR_ERROR_DEVICE = 7,              /**< a CUDA call failed */
    SR_ERROR_IO = 8,                  /**< a file could not be opened, read or written */
    SR_ERROR_PARSE = 9,               /**< a file is not valid Matrix Market */
    SR_ERROR_UNSUPPORTED = 10,        /**< valid, but not handled (e.g. complex values) */
    SR_ERROR_INTERNAL = 11,           /**< a bug in sparsering: please report it */
    SR_ERROR_CANCELLED = 12           /**< a progress callback asked to stop */
} sr_status;

/** Message of the most recent failure on the calling thread ("" if none yet). */
const char *sr_last_error(void);
/** The path the calling thread's last k-NN search took, e.g. "knn: tensor-core panel of 1024 of
 * 102000 columns (97.9% of the pair work), FP16 (exact)" or "knn: sparse tiles" (for benchmarks,
 * tests and the curious; "" before the first search). */
const char *sr_last_method(void);
/** Short fixed name of a status, e.g. "SR_ERROR_PARSE". */
const char *sr_status_name(sr_status status);
/** "0.1.0 (cpu+cuda)" or "0.1.0 (cpu)". */
const char *sr_version_string(void);

/* ------------------------------------------------------------------ enums */

typedef enum sr_backend {
    SR_BACKEND_AUTO = 0, /**< CUDA when built in and a GPU is usable, else CPU; SPARSERING_BACKEND overrides */
    SR_BACKEND_CPU = 1,
    SR_BACKEND_CUDA = 2,
    SR_BACKEND_OPENCL = 3 /**< the Boolean operations on an OpenCL device (any vendor's GPU, or a CPU through
                             PoCL), everything else on the CPU backend; matrices stay in host memory and
                             each call moves its operands. Built when OpenCL headers and an ICD loader
                             are found; never chosen by AUTO */
} sr_backend;

typedef enum sr_type {
    SR_TYPE_BOOL = 0,    /**< pattern: every stored entry is true; matrices store no values.
                            In dense views one uint8_t per element (0 or 1). */
    SR_TYPE_INT32 = 1,
    SR_TYPE_FLOAT32 = 2,
    SR_TYPE_FLOAT64 = 3
} sr_type;

typedef enum sr_location {
    SR_HOST = 0,
    SR_DEVICE = 1 /**< memory of the context's CUDA device */
} sr_location;

typedef enum sr_layout {
    SR_ROW_MAJOR = 0,
    SR_COL_MAJOR = 1
} sr_layout;

/** What to do with repeated (row, col) pairs in COO input. */
typedef enum sr_duplicates {
    SR_DUPLICATES_ERROR = 0, /**< reject, naming the pair */
    SR_DUPLICATES_SUM = 1    /**< combine with +  (logical or for SR_TYPE_BOOL), as scipy does */
} sr_duplicates;

/** Bytes of one element in dense views and value arrays (bool: 1). */
size_t sr_type_size(sr_type type);
/** "bool", "int32", "float32", "float64". */
const char *sr_type_name(sr_type type);

/* ------------------------------------------------------------------ context */

typedef struct sr_context_s *sr_context;

/** How a context over several GPUs cuts a matrix into one row block a GPU. */
typedef enum sr_partition {
    SR_PARTITION_BALANCED = 0, /**< about equal work a block: equal nonzeros (k-NN, radius, SDDMM: the
                                  cuSDDMM paper's nnz-balanced 1-D partition), equal multiply-adds
                                  (SpGEMM: each row's A(i,k)·B(k,:) products) */
    SR_PARTITION_ROWS = 1      /**< equal rows a block (the paper's symmetric split, for comparison) */
} sr_partition;

#define SR_MAX_DEVICES 16

typedef struct sr_context_options {
    sr_backend backend;       /**< default SR_BACKEND_AUTO */
    int device;               /**< CUDA device ordinal; for OpenCL, the index in the list of every
                                 platform's devices, GPUs and accelerators first; default 0 */
    void *stream;             /**< cudaStream_t to run on; NULL: the context makes its own
                                 (blocking: it waits for the legacy default stream) */
    int threads;              /**< CPU threads; 0: OpenMP's default */
    size_t workspace_limit;   /**< bytes of temporary memory a call may use; 0: automatic
                                 (half the free device memory, 1 GiB on the host) */
    size_t host_memory_limit; /**< the most bytes one host allocation may take; 0: no fixed limit.
                                 Either way a matrix built from triplets (a file, sr_matrix_from_coo)
                                 may not need more than the larger of 1 GiB and 16 times what its
                                 entries take unless this limit allows it: a file that declares
                                 3,000,000,000 rows and one entry is refused, naming the memory
                                 it would need, instead of exhausting the host */
    int ndevices;             /**< CUDA only: more than 1 spans the GPUs devices[0..ndevices) of this
                                 host (docs/multi-gpu.md). Matrices live on devices[0] and every call
                                 works as on one GPU; sr_knn, sr_knn_graph, sr_radius_neighbors,
                                 sr_sddmm(_values) and sr_mxm (no mask) spread their work over the
                                 GPUs by row blocks, moved with NCCL, and give the one-GPU results.
                                 0 or 1: one GPU, `device` (SPARSERING_DEVICES="0,1" or "all"
                                 gives the list when ndevices is 0) */
    int devices[SR_MAX_DEVICES]; /**< CUDA ordinals, distinct; `device` is ignored when ndevices > 1 */
    sr_partition partition;   /**< row blocks across the GPUs; default SR_PARTITION_BALANCED
                                 (SPARSERING_PARTITION=rows overrides) */
    bool deterministic;       /**< CUDA: sum in a fixed order where the fast path adds floats
                                 atomically, so that a call gives the same bits on every run, context
                                 and thread (docs/c-library.md#reproducible-results says which calls
                                 and what it costs); SPARSERING_DETERMINISTIC=1 sets it. Default
                                 false. The CPU backend gives the same bits with the same threads
                                 either way */
    bool asynchronous;        /**< CUDA: sr_spmv, sr_spmm and sr_fused_pattern return once their work is
                                 queued on the context's stream when every operand is on the device,
                                 as the device-scalar vector calls do, instead of waiting for it; the
                                 next call on the context reads the result in stream order, and
                                 sr_context_synchronize (or reading a result to the host) waits
                                 (docs/c-library.md#asynchronous-contexts). A call with an operand on
                                 the host still waits. SPARSERING_ASYNCHRONOUS=1 sets it. Default
                                 false. No effect on the CPU backend */
} sr_context_options;

/** The defaults above. */
sr_context_options sr_context_options_default(void);

/** options may be NULL for the defaults. Fails with SR_ERROR_NO_DEVICE when CUDA is asked for
 * (by options or by SPARSERING_BACKEND=cuda) and cannot be used. */
sr_status sr_context_create(sr_context *ctx, const sr_context_options *options);
sr_status sr_context_destroy(sr_context ctx); /**< NULL is allowed */

/** The backend the context resolved to: SR_BACKEND_CPU, SR_BACKEND_CUDA or SR_BACKEND_OPENCL. */
sr_status sr_context_get_backend(sr_context ctx, sr_backend *backend);
sr_status sr_context_get_options(sr_context ctx, sr_context_options *options);
sr_status sr_context_set_threads(sr_context ctx, int threads);
sr_status sr_context_set_workspace_limit(sr_context ctx, size_t bytes);
sr_status sr_context_set_host_memory_limit(sr_context ctx, size_t bytes);
/** Turns sr_context_options.deterministic on or off for the calls made after it. */
sr_status sr_context_set_deterministic(sr_context ctx, bool deterministic);
/** Turns sr_context_options.asynchronous on or off for the calls made after it. */
sr_status sr_context_set_asynchronous(sr_context ctx, bool asynchronous);
/** Waits for the context's device work to finish (no-op on the CPU backend). */
sr_status sr_context_synchronize(sr_context ctx);

/** Device bytes held by matrices and workspaces of this context: now, and the peak since the
 * context was made or the peak was last reset (over several GPUs: the sums of each GPU's). */
sr_status sr_context_device_memory(sr_context ctx, size_t *current_bytes, size_t *peak_bytes);
sr_status sr_context_reset_peak_memory(sr_context ctx);
/** Times the library has waited on the host for a GPU stream in this process, all contexts
 * together (0 without CUDA): the cost an iterative loop pays a step when it reads a number back.
 * Take the difference over a stretch of calls: sr_vector_dot waits once, sr_vector_dot_s never. */
int64_t sr_device_waits(void);

/* ------------------------------------------------------------------ dense views */

/** A non-owning view of a caller's dense matrix. Element (i, j) is at
 * data[i*ld + j] (row-major) or data[j*ld + i] (column-major). */
typedef struct sr_dense {
    void *data;
    int64_t nrows, ncols;
    int64_t ld;           /**< leading dimension in elements, >= ncols (row-major) or nrows */
    sr_type type;
    sr_layout layout;
    sr_location location;
} sr_dense;

/** A packed view (ld = ncols for row-major, nrows for column-major). */
sr_dense sr_dense_view(void *data, int64_t nrows, int64_t ncols, sr_type type, sr_layout layout,
                       sr_location location);

/* ------------------------------------------------------------------ sparse matrices */

typedef struct sr_matrix_s *sr_matrix;

typedef struct sr_matrix_info {
    int64_t nrows, ncols, nnz;
    sr_type type;
    sr_location location;
    int device; /**< CUDA ordinal when location is SR_DEVICE, else -1 */
} sr_matrix_info;

/** From CSR arrays (copied). rowptr has nrows+1 entries starting at 0; the column indices of
 * each row are strictly increasing and in [0, ncols); values is NULL for SR_TYPE_BOOL. The
 * arrays live in `where`; the matrix is made there too. Everything is validated. */
sr_status sr_matrix_from_csr(sr_context ctx, sr_matrix *A, int64_t nrows, int64_t ncols, sr_type type,
                             const int64_t *rowptr, const int32_t *colind, const void *values,
                             sr_location where);

/** From COO triplets (copied) in any order; duplicates as `dup` says. */
sr_status sr_matrix_from_coo(sr_context ctx, sr_matrix *A, int64_t nrows, int64_t ncols, sr_type type,
                             int64_t nnz, const int64_t *rows, const int32_t *cols, const void *values,
                             sr_duplicates dup, sr_location where);

/** From a dense matrix: keeps the elements that are not 0 (NaN is kept). The matrix is made
 * where the view's data lives, with the view's type. */
sr_status sr_matrix_from_dense(sr_context ctx, sr_matrix *A, const sr_dense *dense);

sr_status sr_matrix_free(sr_matrix A); /**< NULL is allowed */
sr_status sr_matrix_get_info(sr_matrix A, sr_matrix_info *info);

/** Borrowed pointers to the matrix's own arrays (in its location); valid until it is freed.
 * values is NULL for SR_TYPE_BOOL. Any output pointer may be NULL. */
sr_status sr_matrix_csr_arrays(sr_matrix A, const int64_t **rowptr, const int32_t **colind,
                               const void **values);

/** Copies out into caller arrays in `where` (sizes from sr_matrix_get_info; values may be NULL
 * to skip them). */
sr_status sr_matrix_export_csr(sr_context ctx, sr_matrix A, int64_t *rowptr, int32_t *colind, void *values,
                               sr_location where);
/** Triplets in row-major order (rows ascending, columns ascending within a row). */
sr_status sr_matrix_export_coo(sr_context ctx, sr_matrix A, int64_t *rows, int32_t *cols, void *values,
                               sr_location where);
/** Writes every element of `dense` (shape and type must match A; absent entries become 0). */
sr_status sr_matrix_export_dense(sr_context ctx, sr_matrix A, const sr_dense *dense);

/** New matrices. */
sr_status sr_matrix_dup(sr_context ctx, sr_matrix A, sr_matrix *B);
sr_status sr_matrix_copy_to(sr_context ctx, sr_matrix A, sr_location where, sr_matrix *B);
sr_status sr_matrix_transpose(sr_context ctx, sr_matrix A, sr_matrix *AT);
/** Value conversion: to bool keeps the pattern; from bool gives 1 at each entry; float to int32
 * truncates toward zero and fails on NaN or out-of-range values. */
sr_status sr_matrix_cast(sr_context ctx, sr_matrix A, sr_type type, sr_matrix *B);
/** true when shape, type, pattern and values are identical (NaN equals NaN). */
sr_status sr_matrix_equal(sr_context ctx, sr_matrix A, sr_matrix B, bool *equal);

/* ------------------------------------------------------------------ semiring products */

/** C = A ⊕.⊗ B: C(i,j) = ⊕ over k of A(i,k) ⊗ B(k,j), over the k where both have entries. */
typedef enum sr_semiring {
    SR_PLUS_TIMES = 0, /**< (+, ×), identity 0: the ordinary product */
    SR_MIN_PLUS = 1,   /**< (min, +), identity +inf: shortest paths */
    SR_MAX_PLUS = 2,   /**< (max, +), identity -inf: longest / critical paths */
    SR_MAX_TIMES = 3,  /**< (max, ×), identity -inf: most reliable path */
    SR_MIN_TIMES = 4,  /**< (min, ×), identity +inf */
    SR_MAX_MIN = 5,    /**< (max, min), identity -inf: widest (bottleneck) paths */
    SR_OR_AND = 6,     /**< (or, and), identity false: Boolean; bool matrices only */
    SR_PLUS_PAIR = 7,  /**< (+, 1), identity 0: counts the k where both have entries (int32 for bool input) */
    SR_ANY_PAIR = 8    /**< (any, 1): structure only; the result is bool */
} sr_semiring;
#define SR_SEMIRING_COUNT 9

/** "plus_times", "min_plus", ... */
const char *sr_semiring_name(sr_semiring s);
/** The type of A ⊕.⊗ B for inputs of `input` type (fails where the pair is not meaningful,
 * e.g. min_plus on bool, or_and on float32). int infinities are INT32_MAX / INT32_MIN. */
sr_status sr_semiring_output_type(sr_semiring s, sr_type input, sr_type *output);

/** A semiring the caller defines (docs/user-semirings.md): ⊕ a built-in monoid or an expression,
 * ⊗ an expression, both C expressions over values of `type`. The expressions are code: they are
 * compiled (on the CPU by the system C compiler, SPARSERING_CC, default cc) and run with the
 * caller's rights. */
typedef struct sr_semiring_def {
    const char *name;     /**< [a-z][a-z0-9_]* (at most 63), not a built-in semiring's name */
    sr_type type;         /**< the values' type in and out: SR_TYPE_INT32, FLOAT32 or FLOAT64 */
    const char *add;      /**< "plus", "min", "max", "times", "or", "and" (a built-in monoid; min and
                             max omit NaN as the built-ins do), or an expression over a and b */
    const char *identity; /**< ⊕'s identity as an expression (NULL: the built-in monoid's own;
                             required when add is an expression) */
    const char *multiply; /**< ⊗: an expression over x (A's value) and y (B's), e.g. "x + y" */
} sr_semiring_def;

/** Registers a user semiring for this process and returns its value, which sr_spmv, sr_spmm,
 * sr_mxm (masks and accumulate included), sr_ewise_add, sr_ewise_mult, sr_kronecker,
 * sr_reduce_rows, sr_mxm_row_blocks and sr_sddmm take as they take a built-in one on the CPU
 * backend; on CUDA all of them but sr_mxm and sr_mxm_row_blocks (their kernels compiled by NVRTC
 * on first use), which refuse it there with a message that says so. Defining
 * the same definition again returns the same value; a name defined with other expressions, an
 * expression that does not compile (the compiler's message is in sr_last_error()), a missing
 * identity or an unknown type is refused, and nothing stays registered. */
sr_status sr_semiring_define(const sr_semiring_def *def, sr_semiring *s);
/** The definition of a user semiring (its strings are the library's, valid for the process). */
sr_status sr_semiring_definition(sr_semiring s, sr_semiring_def *def);

/** How k-NN of the dot-product metrics (cosine, euclidean and sqeuclidean, inner_product,
 * correlation, jaccard, dice, russellrao, hellinger) and the SDDMM calls may use the GPU's tensor
 * cores (docs/tensor-cores.md): k-NN for the columns that hold most of the pair work, the SDDMM
 * for whole tiles of well-filled S. float32 on CUDA only; float64 and the CPU backend always
 * compute in their own precision. On counts and other values of a few steps (half stars), the
 * other sum metrics take the tensor cores too: manhattan, braycurtis and hamming as count levels
 * (exact), canberra, minkowski, jensenshannon, kl_divergence and the unexpanded euclidean forms
 * as value classes (a table of the metric's terms; exact where its terms are whole numbers). */
typedef enum sr_precision {
    /** default: FP16 products where every value (after the metric's transform: 1 for the set
     * metrics, the square root for hellinger) lies on a grid 2^-e (counts e = 0, half stars e = 1)
     * with at most 2048 steps in magnitude and every dot product's terms sum below 2^24 steps of
     * their grid (checked on each call: the answer is the float32 path's, bit for bit); otherwise a product of TF32 operands split in two (3 products) that keeps
     * float32 accuracy (about 1e-6 relative to |q||x|). Value classes: where the table is whole
     * (minkowski of whole p, the unexpanded euclidean forms), bit for bit; canberra and
     * kl_divergence with float32 accuracy; jensenshannon and minkowski of other p (a root of the
     * sum, which near 0 magnifies float32 rounding) stay on the CUDA cores */
    SR_PRECISION_EXACT = 0,
    /** one TF32 product: fastest; dot products to about 1e-3 of |q||x|; value classes with float32
     * accuracy for every metric they take */
    SR_PRECISION_TF32 = 1,
    SR_PRECISION_FLOAT32 = 2  /**< no tensor cores: the CUDA cores' float32 sums */
} sr_precision;

/** Options of a product. NULL means all false (and the default precision). */
typedef struct sr_descriptor {
    bool accumulate;      /**< C = C ⊕ (A ⊕.⊗ B): combine with what C holds, by the semiring's ⊕ */
    bool mask_complement; /**< compute where the mask has NO entry */
    bool transpose_b;     /**< sr_mxm only: use B^T (B is n x k) */
    bool replace;         /**< sr_mxm_bits only (others reject it): bits the mask excludes are
                             cleared instead of keeping their old values */
    bool sample_pattern;  /**< the SDDMM calls only (others reject it): sample A·Bᵀ at S's pattern,
                             ignoring S's values in the product (cuSPARSE's form) */
    sr_precision precision; /**< the SDDMM calls only (others reject any but the default): float32
                               products of well-filled S by whole tiles. EXACT (default): from K = 64
                               each operand split in two TF32 halves on the tensor cores (3 products;
                               within about 5e-6 of the largest value), below it the CUDA cores' FMAs;
                               TF32: one tensor-core product (about 1e-3 of |a||b|); FLOAT32: the FMAs */
} sr_descriptor;

/** Masks are structural: only their pattern counts (their values are ignored), they have the
 * output's shape and live with A. Where the mask excludes an entry, a dense output keeps its
 * old value and a sparse output has no entry. With no mask (NULL) everything is computed. */

/** y = A ⊕.⊗ x (y ⊕= with accumulate). x and y are n x 1 dense views (sr_vector_view);
 * x has A's type, y the output type. A row of A with no entries gives the ⊕ identity. */
sr_status sr_spmv(sr_context ctx, const sr_dense *y, sr_matrix mask, sr_semiring s, sr_matrix A, const sr_dense *x,
                  const sr_descriptor *desc);
/** C = A ⊕.⊗ B for dense B (k x n, row- or column-major) and dense C (m x n, either layout). */
sr_status sr_spmm(sr_context ctx, const sr_dense *C, sr_matrix mask, sr_semiring s, sr_matrix A, const sr_dense *B,
                  const sr_descriptor *desc);
/** C = A ⊕.⊗ B for sparse A and B; *C receives a new matrix. With accumulate, *C must hold a
 * matrix of the output's shape and type: on success it is replaced (and freed), on failure
 * left as it was. Entries exist where some k joins A(i,k) and B(k,j) (no value is dropped). */
sr_status sr_mxm(sr_context ctx, sr_matrix *C, sr_matrix mask, sr_semiring s, sr_matrix A, sr_matrix B,
                 const sr_descriptor *desc);

/** Products left in row blocks. On a context spanning several GPUs, sr_mxm puts the GPUs' row
 * blocks of C together on the first GPU (on R-MAT 20's A·A half of C, 14 GB, crosses NVLink: a fifth
 * of the call). sr_mxm_row_blocks leaves them where they were made: block g holds rows
 * [first_row, first_row + its rows) of C = A ⊕.⊗ B as a CSR matrix on GPU devices[g], cut as
 * sr_mxm cuts A (the context's partition). Calls on a block go through that GPU's own context,
 * sr_row_blocks_context(C, g) (owned by ctx; it lives as long as ctx). On any other context (one
 * GPU, the host) there is one block, the whole product where sr_mxm would put it, and its context
 * is ctx. No mask, accumulate or transpose: sr_mxm has them. */
typedef struct sr_row_blocks_s *sr_row_blocks;
sr_status sr_mxm_row_blocks(sr_context ctx, sr_row_blocks *C, sr_semiring s, sr_matrix A, sr_matrix B);
int sr_row_blocks_count(sr_row_blocks C); /**< 0 for NULL */
/** Block g, borrowed (C owns it until sr_row_blocks_free: do not free it), and the first row of C it holds. */
sr_status sr_row_blocks_get(sr_row_blocks C, int g, sr_matrix *block, int64_t *first_row);
/** The context whose device holds block g (NULL when g is out of range). */
sr_context sr_row_blocks_context(sr_row_blocks C, int g);
/** The blocks one under the other as one new matrix where sr_mxm would have put C (C is unchanged). */
sr_status sr_row_blocks_gather(sr_row_blocks C, sr_matrix *out);
sr_status sr_row_blocks_free(sr_row_blocks C); /**< NULL is allowed */

/** SpMV plans. PageRank, CG and GNN layers call SpMV hundreds of times on one matrix;
 * sr_spmv_plan analyses A once for them. It ranks A's columns by how many entries they hold and
 * gives the x values of the first ones a place in fast memory: on the GPU, each block's shared
 * memory (about 49K float or 20K double columns on an H100), where the plain call gathers every x
 * value from L2; on the CPU, the front of a copy of x renumbered by that rank, where they share
 * cache lines. It times one SpMV each way on A itself and keeps the plan only where it is faster
 * (not for Boolean matrices, which read no x, nor where the columns are about equally popular,
 * as in uniformly random matrices). Every later sr_spmv on A uses the plan: the results are
 * identical, bit for bit, to the unplanned call's (each row's products are the same values, summed
 * in the same order) and in the caller's order; masks, accumulate and every semiring work as
 * without it. sr_spmm (more than one column) is unchanged. The plan stays with A, in A's memory,
 * until A is freed, sr_spmv_plan_free, or a new sr_spmv_plan; make or free it while no other
 * thread uses A. */
typedef struct sr_spmv_plan_info {
    bool in_use;            /**< false: the analysis kept the plain call (nothing faster found) */
    int64_t hot_columns;    /**< columns whose x values a call keeps in fast memory */
    double hot_share;       /**< the share of A's entries in those columns */
    double seconds;         /**< the analysis's own time, its trial runs included */
    double plain_seconds;   /**< one SpMV without the plan, as the analysis timed it */
    double planned_seconds; /**< one SpMV with the best plan tried */
    size_t bytes;           /**< memory the plan keeps with A (device memory for a device matrix) */
} sr_spmv_plan_info;
/** Analyses A and keeps the plan with it when faster; info (may be NULL) says what it found. A
 * plan A had before is dropped first (on failure A is left with none: only speed changes). */
sr_status sr_spmv_plan(sr_context ctx, sr_matrix A, sr_spmv_plan_info *info);
/** Drops A's plan, if it has one: later calls run as before the plan. */
sr_status sr_spmv_plan_free(sr_context ctx, sr_matrix A);

/** A column vector view: n x 1, ld n. */
sr_dense sr_vector_view(void *data, int64_t n, sr_type type, sr_location location);

/** Vectors kept where the work runs, for iterative methods that call the products many times
 * (the ridge solver keeps its CG vectors on the device this way): float32 or float64 n x 1
 * vectors (sr_vector_view's shape); the arithmetic runs on the vectors' side, CUDA for device
 * vectors and the context's threads for host ones. */
/** *v = a new zeroed vector of n in `where` (free it with sr_vector_free). */
sr_status sr_vector_alloc(sr_context ctx, int64_t n, sr_type type, sr_location where, sr_dense *v);
sr_status sr_vector_free(sr_context ctx, sr_dense *v); /**< clears *v; a zeroed view is allowed */
/** dst = src: same length and type, any two locations. Device to device it is queued on the
 * context's stream and not waited for (as the scalar calls below); to or from the host it waits. */
sr_status sr_vector_copy(sr_context ctx, const sr_dense *dst, const sr_dense *src);
/** *result = Σ x_i·y_i, summed in float64; x and y in one location (a device sum waits for it). */
sr_status sr_vector_dot(sr_context ctx, const sr_dense *x, const sr_dense *y, double *result);
/** *result = Σ |x_i| (BLAS asum: the 1-norm), summed in float64. */
sr_status sr_vector_asum(sr_context ctx, const sr_dense *x, double *result);
/** y = α·x + β·y, x not read when α = 0 nor y when β = 0 (so axpby(0, x, 0, y) zeroes y whatever
 * it held, NaN included); x and y in one location, x may be y. */
sr_status sr_vector_axpby(sr_context ctx, double alpha, const sr_dense *x, double beta, const sr_dense *y);

/** Scalars that stay where the vectors live (GraphBLAS's GrB_Scalar, for the same reason): a
 * float64 vector of length 1 (sr_vector_alloc(ctx, 1, SR_TYPE_FLOAT64, where, &s)). The calls
 * below write and read them in order with the other work on the context's stream, so a loop of
 * them never waits for the device; the host reads one only when it asks (sr_vector_copy to a
 * host view, which waits). On the host they are plain numbers in memory. A scalar lives where
 * the vectors it goes with live. */
/** *s = Σ x_i·y_i, summed in float64 in sr_vector_dot's fixed order (the same bits). */
sr_status sr_vector_dot_s(sr_context ctx, const sr_dense *x, const sr_dense *y, const sr_dense *s);
/** *s = Σ |x_i| (sr_vector_asum's sum, the same bits). */
sr_status sr_vector_asum_s(sr_context ctx, const sr_dense *x, const sr_dense *s);
/** y = (α·a)·x + (β·b)·y, a and b scalars (NULL: 1), read where x lives; x is not read when
 * α·a = 0 nor y when β·b = 0, as sr_vector_axpby. */
sr_status sr_vector_axpby_s(sr_context ctx, double alpha, const sr_dense *a, const sr_dense *x, double beta,
                            const sr_dense *b, const sr_dense *y);
/** z = x / y element by element (IEEE: x/0 is ±inf or NaN), vectors of one length, type and
 * location; z may be x or y. On scalars, the ratio of two (CG's step r·z / p·q). */
sr_status sr_vector_divide(sr_context ctx, const sr_dense *z, const sr_dense *x, const sr_dense *y);
/** flag = 1 where flag ≠ 0 and x > threshold, else 0 (NaN in x gives 0), element by element:
 * an iteration's go-on flag kept where the vectors live. Once 0 it stays 0; scale a step by it
 * (sr_vector_axpby_s's a or b) and the steps after the stop change nothing, so a loop can test
 * it on the host only every few steps. flag and x: vectors of one length, type and location. */
sr_status sr_vector_and_greater(sr_context ctx, const sr_dense *flag, const sr_dense *x, double threshold);

/* ------------------------------------------------------------------ element-wise and structure */

/** The GraphBLAS shape again: output first, an optional structural mask of the output's shape
 * (where it excludes an entry the result has none), the semiring whose ⊕ or ⊗ combines, the
 * inputs, a descriptor (accumulate: C = C ⊕ result, *C replaced as in sr_mxm; mask_complement).
 * A and B have one type and live in one place; the semiring's output type must be that type
 * (or_and and any_pair for bool, plus_times, min_plus, ... for numbers). */

/** C = A ⊕ B over the union of the patterns: ⊕ (or for bool) where both have an entry, the one
 * value where only one has. */
sr_status sr_ewise_add(sr_context ctx, sr_matrix *C, sr_matrix mask, sr_semiring s, sr_matrix A, sr_matrix B,
                       const sr_descriptor *desc);
/** C = A ⊗ B over the intersection of the patterns (and for bool). */
sr_status sr_ewise_mult(sr_context ctx, sr_matrix *C, sr_matrix mask, sr_semiring s, sr_matrix A, sr_matrix B,
                        const sr_descriptor *desc);
/** The Kronecker product: for A m x n and B p x q, C is mp x nq with
 * C(i*p + k, j*q + l) = A(i, j) ⊗ B(k, l). C's columns must stay below 2^31. */
sr_status sr_kronecker(sr_context ctx, sr_matrix *C, sr_matrix mask, sr_semiring s, sr_matrix A, sr_matrix B,
                       const sr_descriptor *desc);
/** The submatrix C = A[row0 : row0 + nrows, col0 : col0 + ncols] (a new matrix; empty ranges allowed). */
sr_status sr_extract(sr_context ctx, sr_matrix *C, sr_matrix A, int64_t row0, int64_t col0, int64_t nrows,
                     int64_t ncols);
/** v = ⊕ of each row of A, as an A.nrows x 1 sparse matrix with an entry for every row that has
 * one (for bool: the rows with any entry, SPbLA's reduceToColumn). */
sr_status sr_reduce_rows(sr_context ctx, sr_matrix *v, sr_semiring s, sr_matrix A);

/* ------------------------------------------------------------------ bit-packed Boolean blocks */

/** A dense Boolean matrix, 64 columns a word: element (i, j) is bit (j % 64) of
 * words[i*ld + j/64]. Bits past ncols in a row's last word are kept 0 by every call. It is a
 * non-owning view, like sr_dense; sr_bits_alloc makes one that the library owns. */
typedef struct sr_bits {
    uint64_t *words;
    int64_t nrows, ncols;
    int64_t ld;           /**< words per row, >= (ncols + 63) / 64 */
    sr_location location;
} sr_bits;

/** A packed view (ld = (ncols + 63) / 64). */
sr_bits sr_bits_view(uint64_t *words, int64_t nrows, int64_t ncols, sr_location location);
/** A zeroed block of nrows x ncols bits in `where`, counted in the context's memory; free it
 * with sr_bits_free (which resets the view). */
sr_status sr_bits_alloc(sr_context ctx, sr_bits *X, int64_t nrows, int64_t ncols, sr_location where);
sr_status sr_bits_free(sr_context ctx, sr_bits *X);
/** X = the pattern of A (same shape; bits of X outside A's entries are cleared). */
sr_status sr_bits_from_matrix(sr_context ctx, const sr_bits *X, sr_matrix A);
/** A new bool matrix of X's set bits, in X's location. */
sr_status sr_matrix_from_bits(sr_context ctx, sr_matrix *A, const sr_bits *X);
/** Y = Y | X (same shape, same location); *count (may be NULL) receives the bits set in Y after. */
sr_status sr_bits_or(sr_context ctx, const sr_bits *Y, const sr_bits *X, int64_t *count);
/** *count = the set bits of X. */
sr_status sr_bits_count(sr_context ctx, const sr_bits *X, int64_t *count);
/** Y = A or.and X for a bool sparse A (m x n), X n x k and Y m x k bit-packed: row i of Y is the
 * OR of the rows of X that row i of A names, a word (64 columns) at a time: many-source BFS
 * moves 64 sources per word. mask (bits of Y's shape, may be NULL) and the descriptor as in
 * sr_spmm: excluded elements keep their old bits, or are cleared with `replace`; accumulate
 * ORs into Y. *count (may be NULL) receives the bits set in Y after the call. Y must not share
 * memory with X or the mask. */
sr_status sr_mxm_bits(sr_context ctx, const sr_bits *Y, const sr_bits *mask, sr_matrix A, const sr_bits *X,
                      const sr_descriptor *desc, int64_t *count);

/* ------------------------------------------------------------------ sampled products (SDDMM) */

/** The sampled dense-dense product (the cuSDDMM paper): A·Bᵀ computed only at the entries of a
 * sparse S. A is m x K, B is n x K (dense, either layout, anywhere), S is m x n and the work runs
 * where S lives. With the semiring's (⊕, ⊗), at every entry (i, j) of S, explicit zeros included:
 *     C(i, j) = α·(S(i, j) ⊗ D(i, j)) + β·S(i, j),   D(i, j) = ⊕ over k of A(i, k) ⊗ B(j, k)
 * and nowhere else: C has S's pattern, always. α and β are ordinary arithmetic in the output
 * type; β = 0 drops the β term (no 0·inf). A bool S, or the descriptor's sample_pattern, samples
 * at the pattern: S(i, j) ⊗ D becomes D (and a bool S counts 1 in the β term). A and B have one
 * type (int32, float32, float64); the output type is the semiring's on it (sr_semiring_output_type);
 * S is bool or of the output type. K may be 0 (D is the ⊕ identity). Only sample_pattern of the
 * descriptor applies. */
sr_status sr_sddmm(sr_context ctx, sr_matrix *C, sr_semiring s, double alpha, sr_matrix S, const sr_dense *A,
                   const sr_dense *B, double beta, const sr_descriptor *desc);
/** The same into `values`, an nnz x 1 view of the output type in S's entry order (CSR order), in
 * any location: no new matrix, for iterative use. */
sr_status sr_sddmm_values(sr_context ctx, const sr_dense *values, sr_semiring s, double alpha, sr_matrix S,
                          const sr_dense *A, const sr_dense *B, double beta, const sr_descriptor *desc);

typedef enum sr_row_normalize {
    SR_NORMALIZE_NONE = 0,   /**< the sampled scores as they are */
    SR_NORMALIZE_SOFTMAX = 1 /**< each row's sampled scores x become exp(x - max) / sum: attention */
} sr_row_normalize;

/** The fused SDDMM→SpMM: O = N(α·(S ⊙ A·Bᵀ))·V, plus_times, float32 or float64, where N is the
 * row normalization; V is n x p and O m x p (dense, either layout, anywhere). The sampled matrix is
 * never stored: each row's scores are used as they are computed (the softmax online, with a
 * running maximum). A row of S with no entries gives a zero row of O. Descriptor: accumulate
 * (O += ...) and sample_pattern. */
sr_status sr_sddmm_spmm(sr_context ctx, const sr_dense *O, double alpha, sr_matrix S, const sr_dense *A,
                        const sr_dense *B, const sr_dense *V, sr_row_normalize normalize, const sr_descriptor *desc);

/* ------------------------------------------------------------------ the fused Xᵀ(v ⊙ X·y) pattern */

/** The generic pattern of the kernel-fusion paper and its instantiations, X read once:
 *   SR_FORM_XTVXY: w = α·Xᵀ·(v ⊙ (X·y)) + β·z   y, w, z: n x 1; v: m x 1
 *   SR_FORM_XTY:   w = α·Xᵀ·(v ⊙ y) + β·z       y, v: m x 1; w, z: n x 1
 *   SR_FORM_XY:    w = α·v ⊙ (X·y) + β·z        y: n x 1; v, w, z: m x 1
 * for X m x n. v NULL means all ones (Xᵀ·(X·y), Xᵀ·y, X·y); z NULL drops the β term (so does
 * β = 0). The vectors are dense views (sr_vector_view) of one type, float32 or float64, which is
 * the computation's; they may live anywhere (the work runs where X lives); w may be z but shares
 * no memory with y or v. Sums over rows run in parallel, so results may differ from a serial loop
 * in the last bits. Normal equations (Xᵀ·X + λ·I)·p are XTVXY with z = p, β = λ. */
typedef enum sr_pattern_form {
    SR_FORM_XTVXY = 0,
    SR_FORM_XTY = 1,
    SR_FORM_XY = 2
} sr_pattern_form;

/** X sparse: float32, float64 (the vectors' type) or bool (entries count 1). */
sr_status sr_fused_pattern(sr_context ctx, sr_pattern_form form, const sr_dense *w, double alpha, sr_matrix X,
                           const sr_dense *v, const sr_dense *y, double beta, const sr_dense *z);
/** X dense (either layout, anywhere), of the vectors' type. The work runs on the context's
 * backend; X is read in place when it is row-major and there already, else copied there for the
 * call (keep it there, row-major, when calling repeatedly). */
sr_status sr_fused_pattern_dense(sr_context ctx, sr_pattern_form form, const sr_dense *w, double alpha,
                                 const sr_dense *X, const sr_dense *v, const sr_dense *y, double beta,
                                 const sr_dense *z);

/* ------------------------------------------------------------------ distances and k-NN */

/** Distances between sparse rows. q is a row of the first argument (the query), x a row of the
 * second (the index); sums run over all columns, d = number of columns. Conventions follow
 * scipy.spatial.distance / scikit-learn; where they differ or are undefined, the comment says. */
typedef enum sr_metric {
    SR_METRIC_L2 = 0,                /**< "euclidean", "l2": sqrt(|q|^2 + |x|^2 - 2 q.x) (expanded) */
    SR_METRIC_SQEUCLIDEAN = 1,       /**< "sqeuclidean": |q|^2 + |x|^2 - 2 q.x, clamped at 0 */
    SR_METRIC_L2_UNEXPANDED = 2,     /**< "euclidean_unexpanded": sqrt(sum (q-x)^2), no cancellation */
    SR_METRIC_SQEUCLIDEAN_UNEXPANDED = 3, /**< "sqeuclidean_unexpanded" */
    SR_METRIC_L1 = 4,                /**< "manhattan", "cityblock", "l1": sum |q-x| */
    SR_METRIC_CHEBYSHEV = 5,         /**< "chebyshev": max |q-x| */
    SR_METRIC_MINKOWSKI = 6,         /**< "minkowski": (sum |q-x|^p)^(1/p), p = metric_arg > 0 */
    SR_METRIC_CANBERRA = 7,          /**< "canberra": sum |q-x| / (|q|+|x|), 0/0 terms count 0 */
    SR_METRIC_HAMMING = 8,           /**< "hamming": (number of columns where q != x) / d */
    SR_METRIC_JACCARD = 9,           /**< "jaccard", on nonzero-ness (as scikit-learn's boolean metrics):
                                        1 - |q&x| / |q|x|; 0 for two empty rows */
    SR_METRIC_DICE = 10,             /**< "dice": 1 - 2|q&x| / (|q|+|x|) on nonzero-ness; 0 for two empty rows */
    SR_METRIC_RUSSELL_RAO = 11,      /**< "russellrao": (d - |q&x|) / d on nonzero-ness */
    SR_METRIC_COSINE = 12,           /**< "cosine": 1 - q.x / (|q||x|); 1 when a row is all zero
                                        (scikit-learn's convention; scipy gives NaN) */
    SR_METRIC_CORRELATION = 13,      /**< "correlation": 1 - centred cosine over d columns; 1 when a row
                                        is constant (scipy gives NaN) */
    SR_METRIC_HELLINGER = 14,        /**< "hellinger": sqrt(sum (sqrt q - sqrt x)^2 / 2); values >= 0 */
    SR_METRIC_KL_DIVERGENCE = 15,    /**< "kl_divergence": sum q log(q/x) over columns where both are
                                        nonzero (RAFT's convention); values >= 0 */
    SR_METRIC_JENSEN_SHANNON = 16,   /**< "jensenshannon": sqrt(sum q log(q/m) + x log(x/m)) / 2), m = (q+x)/2,
                                        natural log; scipy's when rows sum to 1; values >= 0 */
    SR_METRIC_BRAY_CURTIS = 17,      /**< "braycurtis": sum |q-x| / sum |q+x|; 0 for two empty rows */
    SR_METRIC_INNER_PRODUCT = 18     /**< "inner_product": q.x, a similarity: k-NN keeps the largest */
} sr_metric;
#define SR_METRIC_COUNT 19

/** The first name above, e.g. "euclidean". */
const char *sr_metric_name(sr_metric metric);

/** A distance the caller defines (docs/user-semirings.md, "Metrics you define"), from sums over
 * the columns two rows share, as the built-ins are: acc sums `pair` (an expression over q and x,
 * the two rows' values as double; p is metric_arg) over the shared columns; nq and nx sum `norm`
 * (an expression over v) over each row's entries; `distance` (an expression over acc, nq, nx, d
 * the column count and p; and acc2, nq2, nx2 from pair2 and norm2) gives the distance. over_union: `pair` is a term over every column
 * either row holds, with pair(0, 0) = 0 and pair(v, 0) = pair(0, v); it is then summed as
 * nq + nx + acc with acc the shared columns' pair(q, x) - pair(q, 0) - pair(0, x) and `norm`
 * pair(v, 0) unless given (the built-ins' split, metric.h). Helpers the expressions may use:
 * sr_pow(v, p), sr_snap(v, scale), sr_clamp(v, lo, hi), sr_norm_product(nq, nx) (metric.h's). */
typedef struct sr_metric_def {
    const char *name;     /**< as a semiring's: lower-case, not a built-in metric's name */
    const char *pair;     /**< the shared columns' term, over q and x */
    const char *norm;     /**< a row's entries' term, over v (NULL: 0, or pair(v, 0) over the union) */
    const char *distance; /**< over acc, nq, nx, d and p (NULL: "acc") */
    bool over_union;      /**< pair is a term over the union of the rows' columns (see above) */
    bool similarity;      /**< larger is nearer (k-NN keeps the largest; radius keeps those at least r) */
    const char *pair2;    /**< a second sum's term (acc2), split as pair over the union (NULL: none) */
    const char *norm2;    /**< a second norm's term (nq2, nx2; NULL: 0, or pair2(v, 0) over the union) */
    const char *reduce;   /**< how terms combine: NULL or "plus" (sums), or "max" (the largest term, from 0:
                               acc, nq and nx are maxima; over the union the columns only one row holds
                               give pair(q, 0) or pair(0, x), as chebyshev's |q - x|; no pair2 or norm2) */
} sr_metric_def;

/** Registers a user metric for this process and returns its value, which sr_pairwise_distance,
 * sr_knn, sr_knn_graph and sr_radius_neighbors take on the CPU backend and on CUDA (its kernels
 * compiled by NVRTC on first use).
 * The rules and refusals are sr_semiring_define's. */
sr_status sr_metric_define(const sr_metric_def *def, sr_metric *metric);
/** The definition of a user metric (its strings are the library's, valid for the process). */
sr_status sr_metric_definition(sr_metric metric, sr_metric_def *def);
/** Any of the names above (scikit-learn spellings), case-sensitive. */
sr_status sr_metric_from_name(const char *name, sr_metric *metric);

/** D(i, j) = distance(A row i, B row j) for every pair. A and B have the same number of columns
 * and live in one place (the work runs there); D is A->nrows x B->nrows, float32 or float64
 * (the precision of the computation), in either layout and location. Values of any type are
 * read as numbers (bool: 1). metric_arg is Minkowski's p (ignored otherwise). Inputs holding
 * NaN or infinity are rejected, as are negative values for hellinger, kl_divergence and
 * jensenshannon. Batched under the workspace limit when D is not where the work runs. */
sr_status sr_pairwise_distance(sr_context ctx, sr_matrix A, sr_matrix B, sr_metric metric, double metric_arg,
                               const sr_dense *D);

/** Progress of a long call: `done` of `total` query rows finished. Return nonzero to stop: the
 * call then fails with SR_ERROR_CANCELLED. Called on the calling thread, between batches. */
typedef int (*sr_progress_fn)(int64_t done, int64_t total, void *user);

typedef struct sr_knn_options {
    sr_progress_fn progress; /**< NULL: no reports */
    void *progress_user;
    sr_precision precision;  /**< default (0) SR_PRECISION_EXACT */
} sr_knn_options;

/** The k nearest rows of `index` to each row of `queries` (k largest for inner_product), closest
 * first; ties go to the smaller index row. indices is a queries->nrows x k row-major int64
 * array in distances->location; distances is queries->nrows x k, float32 or float64 (the
 * precision of the computation). Works batch by batch: the distances of one batch of queries
 * take at most 1 GiB and at most the context's workspace limit; the full distance matrix is
 * never held. A batch the device has no memory for is retried in halves, down to one query
 * (SR_ERROR_DEVICE_OUT_OF_MEMORY only when that fails too). The index keeps its transpose from
 * its first search until it is freed (memory as much again as the index, on the index's context),
 * so later searches skip building it. k <= index rows; on
 * CUDA k <= 1024. options may be NULL. */
sr_status sr_knn(sr_context ctx, sr_matrix index, sr_matrix queries, int64_t k, sr_metric metric,
                 double metric_arg, int64_t *indices, const sr_dense *distances, const sr_knn_options *options);

/** The k-nearest-neighbour graph of the rows of X: row i holds X's k nearest rows to row i.
 * Connectivity graphs are bool; distance graphs hold the distances (explicit zeros for
 * duplicate rows are kept) in `type` (float32 or float64, the precision). Without include_self
 * each row leaves itself out, as scikit-learn's kneighbors_graph does (k + 1 are searched; when
 * ties with equal rows of smaller index push row i out, the nearest is dropped instead).
 * Symmetrized graphs are G ∪ Gᵀ, with the larger value (or) where both hold an entry, as UMAP
 * and spectral clustering want. Built batch by batch (sr_knn's memory bounds); G lives where X
 * lives; column indices are sorted within each row. */
typedef enum sr_graph_mode {
    SR_GRAPH_CONNECTIVITY = 0,
    SR_GRAPH_DISTANCE = 1
} sr_graph_mode;
typedef struct sr_knn_graph_options {
    sr_graph_mode mode;        /**< default SR_GRAPH_CONNECTIVITY */
    bool include_self;         /**< default false */
    bool symmetrize;           /**< default false */
    sr_type type;              /**< distance graphs: SR_TYPE_FLOAT32 (default) or SR_TYPE_FLOAT64 */
    sr_progress_fn progress;   /**< as sr_knn_options */
    void *progress_user;
    sr_precision precision;    /**< as sr_knn_options */
} sr_knn_graph_options;
sr_knn_graph_options sr_knn_graph_options_default(void);
/** k >= 1 and k <= rows (rows - 1 without include_self). options may be NULL for the defaults. */
sr_status sr_knn_graph(sr_context ctx, sr_matrix X, int64_t k, sr_metric metric, double metric_arg,
                       const sr_knn_graph_options *options, sr_matrix *G);

/** Radius neighbours: R (queries x index rows, CSR) holds every pair within `radius`: distance
 * <= radius (for inner_product, a similarity: value >= radius), as scikit-learn's
 * radius_neighbors_graph. queries NULL compares the index with itself; then row i leaves out
 * column i unless include_self (only that entry: equal rows stay). Distance graphs hold the
 * distances (explicit zeros kept) in `type`; connectivity graphs are bool. Built batch by batch
 * under sr_knn's memory bounds; R lives where the index lives, columns sorted in each row. The
 * result's size is not known in advance: on the host, when one batch's pairs (4 + value bytes
 * each) pass the context's workspace limit, the call stops with SR_ERROR_OUT_OF_MEMORY and says
 * how many that batch kept; on the device (which keeps pairs as it scores, 48 bytes each while a
 * batch is sorted) a batch that does not fit is retried in fewer queries, and only a single query
 * whose pairs pass the limit stops the call so. Lower the radius or raise the limit. */
typedef struct sr_radius_options {
    sr_graph_mode mode;        /**< default SR_GRAPH_DISTANCE */
    bool include_self;         /**< queries NULL only; default false */
    sr_type type;              /**< SR_TYPE_FLOAT32 (default) or SR_TYPE_FLOAT64: the precision */
    sr_progress_fn progress;   /**< as sr_knn_options */
    void *progress_user;
} sr_radius_options;
sr_radius_options sr_radius_options_default(void);
/** radius must not be NaN. options may be NULL for the defaults. */
sr_status sr_radius_neighbors(sr_context ctx, sr_matrix index, sr_matrix queries, double radius, sr_metric metric,
                              double metric_arg, const sr_radius_options *options, sr_matrix *R);

/* ------------------------------------------------------------------ graph queries on Boolean matrices */

/** Built from the calls above only (src/algorithms), so they run on every backend: host matrices
 * on the CPU, device matrices on the GPU. Graphs are square bool matrices, edge i -> j at (i, j). */

typedef enum sr_closure_method {
    SR_CLOSURE_AUTO = 0,       /**< semi-naive */
    SR_CLOSURE_SEMINAIVE = 1,  /**< Δ = A, C = A; repeat N = Δ·A where C has no entry, C |= N, Δ = N:
                                  each round multiplies only the pairs found in the last one */
    SR_CLOSURE_SQUARING = 2    /**< C = A; repeat C |= C·C until it stops growing: log2(longest
                                  path) rounds, each a full product */
} sr_closure_method;

/** Progress of an iterative query (may be NULL): called after every round with (round, entries
 * of the result so far) in sr_progress_fn's (done, total); nonzero stops the call with
 * SR_ERROR_CANCELLED. Stats (may be NULL) tell what the call did. */
typedef struct sr_query_options {
    sr_progress_fn progress;
    void *progress_user;
    /** sr_cfpq: a terminal of the grammar that no label names is refused (a typo would give an
     * empty answer, which looks like "no paths"); true takes such terminals as labels with no
     * edges (queries that span several graphs) */
    bool allow_missing_labels;
} sr_query_options;
typedef struct sr_query_stats {
    int64_t rounds;        /**< fixpoint rounds */
    int64_t products;      /**< sr_mxm / sr_mxm_bits calls */
    double seconds;        /**< wall time of the call */
} sr_query_stats;

/** C = A⁺: C(i, j) when a path of one or more edges leads from i to j. options and stats may be NULL. */
sr_status sr_transitive_closure(sr_context ctx, sr_matrix A, sr_closure_method method, sr_matrix *C,
                                const sr_query_options *options, sr_query_stats *stats);

/** Multi-source reachability: R (nsources x n, bool) with R(s, v) when v can be reached from
 * sources[s] by zero or more edges (a source reaches itself). BFS on bit-packed frontiers
 * (sr_mxm_bits): 64 sources per word, up to 64 * words_per_batch sources a batch, the batch sized
 * by the workspace limit. sources is a host array of vertex numbers in [0, n); repeats allowed. */
sr_status sr_reachability(sr_context ctx, sr_matrix A, int64_t nsources, const int64_t *sources, sr_matrix *R,
                          const sr_query_options *options, sr_query_stats *stats);

/** Context-free path querying (Azimov and Grigorev's matrix algorithm). A grammar is text, one
 * rule per line, alternatives split by '|':
 *       # same generation
 *       S -> d_r S d | d_r d
 * Symbols are separated by spaces; a symbol that appears on some left-hand side is a
 * nonterminal, any other is a terminal (an edge label); "eps" (or an empty alternative) is the
 * empty word; the first rule's left-hand side is the start symbol. Any context-free grammar is
 * accepted: long rules are split, terminals inside them get their own nonterminals, and unit
 * rules (A -> B) are kept as unions, giving the weak Chomsky normal form the algorithm needs. */
typedef struct sr_grammar_s *sr_grammar;
sr_status sr_grammar_parse(const char *text, sr_grammar *g);
sr_status sr_grammar_read(const char *path, sr_grammar *g);
sr_status sr_grammar_free(sr_grammar g); /**< NULL is allowed */
/** The start symbol's name (owned by g). */
const char *sr_grammar_start(sr_grammar g);

/** R (n x n, bool): R(i, j) when some path from i to j spells a word that `symbol` (NULL: the
 * start symbol) derives. graphs[l] is the n x n bool adjacency of edges labelled labels[l]; a
 * terminal that no label names is an error unless options->allow_missing_labels (then it has no
 * edges). Semi-naive fixpoint: each round multiplies a rule's
 * operands only against what the last round added. options and stats may be NULL. */
sr_status sr_cfpq(sr_context ctx, sr_grammar g, int64_t nlabels, const char *const *labels, const sr_matrix *graphs,
                  const char *symbol, sr_matrix *R, const sr_query_options *options, sr_query_stats *stats);

/** Reads an edge-labelled graph: one edge a line, "FROM TO LABEL" (vertex numbers from 0, a label
 * without spaces; '#' starts a comment). n = 1 + the largest vertex number, or *nvertices when it
 * is larger on entry (pass 0 to take it from the file). Gives one bool matrix per label, in the
 * order labels first appear, in `where`; free them with sr_labels_free. */
sr_status sr_labeled_graph_read(sr_context ctx, const char *path, sr_location where, int64_t *nvertices,
                                int64_t *nlabels, char ***labels, sr_matrix **graphs);
void sr_labels_free(int64_t nlabels, char **labels, sr_matrix *graphs);

/* ------------------------------------------------------------------ matrix factorization */

/** Ratings R (users x items, float32 or float64, one entry per known rating) ≈ μ + W·Hᵀ by
 * alternating least squares with weighted-λ regularization (ALS-WR): a half sweep solves, for all
 * users at once, (Σ_{j rated by i} h_j h_jᵀ + λ·n_i·I) w_i = Σ_j (r_ij − μ) h_j by conjugate
 * gradient started from the last w_i, each CG product being one fused SDDMM→SpMM on R's pattern
 * (sr_sddmm_spmm), then does the same for the items. μ is the mean training rating (0 without
 * `center`). Built on the public calls only (src/algorithms): R on the device runs on the GPU. */
typedef struct sr_factorize_step {
    int iteration;                /**< 1, 2, ... */
    double train_rmse, test_rmse; /**< test_rmse is NaN without held-out ratings */
    double seconds;               /**< since the call began */
} sr_factorize_step;
/** Called after each sweep; nonzero stops the call with SR_ERROR_CANCELLED (W, H keep that sweep). */
typedef int (*sr_factorize_fn)(const sr_factorize_step *step, void *user);

typedef struct sr_factorize_options {
    int64_t rank;        /**< K, default 32 */
    double lambda;       /**< default 0.1 */
    int iterations;      /**< sweeps, default 10 */
    int cg_steps;        /**< CG steps a half sweep, default 3 (rank steps solve each system exactly) */
    uint64_t seed;       /**< the starting item factors, uniform in ±0.5/sqrt(rank); default 42 */
    bool center;         /**< subtract the mean rating; default true */
    bool use_initial;    /**< start from the caller's H instead of the seed's draw */
    sr_factorize_fn report;
    void *report_user;
} sr_factorize_options;
sr_factorize_options sr_factorize_options_default(void);

/** W (users x rank) and H (items x rank) are host views of R's type, row-major and packed; they
 * receive the factors (H is read first with use_initial). R_test (may be NULL) holds held-out
 * ratings of R's shape, type and location. *mean (may be NULL) receives μ, *last (may be NULL)
 * the last sweep's figures. options may be NULL for the defaults. */
sr_status sr_factorize(sr_context ctx, sr_matrix R, sr_matrix R_test, const sr_factorize_options *options,
                       const sr_dense *W, const sr_dense *H, double *mean, sr_factorize_step *last);

/* ------------------------------------------------------------------ PageRank */

/** PageRank of the directed graph A (n x n; A(i,j) an edge i -> j weighing its value, every edge 1
 * in a Boolean A; weights must be >= 0): the fixpoint of r = d·Pᵀr + ((1 − d) + d·(the rank on
 * vertices without out-edges))/n, P = A with its rows scaled to sum 1, by power iteration from
 * r = 1/n, as networkx.pagerank without personalization. M = Pᵀ is built once (where A lives)
 * and, with options.plan, analysed by sr_spmv_plan; each iteration is one SpMV on it and three
 * vector operations, on the GPU for a device A. Stops when Σ|r_new − r| <= n·tolerance (networkx's
 * rule) or after max_iterations. */
typedef struct sr_pagerank_options {
    double damping;     /**< d, in [0, 1); default 0.85 */
    double tolerance;   /**< default 1e-6 */
    int max_iterations; /**< default 100 */
    bool plan;          /**< analyse M with sr_spmv_plan before iterating; default true. On the CPU
                         * only from 500 iterations: the analysis costs 20-50 of them there */
} sr_pagerank_options;
sr_pagerank_options sr_pagerank_options_default(void);

typedef struct sr_pagerank_result {
    int iterations;
    double change;          /**< Σ|r_new − r| of the last iteration */
    double setup_seconds;   /**< building M */
    double plan_seconds;    /**< sr_spmv_plan on M (0 without) */
    double iterate_seconds; /**< the iterations */
    sr_spmv_plan_info plan; /**< what the plan found (zeros without) */
} sr_pagerank_result;

/** rank: an n x 1 float32 or float64 vector anywhere (its type is the iterations' precision); it
 * receives the ranks, which sum to 1. options and result may be NULL. */
sr_status sr_pagerank(sr_context ctx, sr_matrix A, const sr_pagerank_options *options, const sr_dense *rank,
                      sr_pagerank_result *result);

/* ------------------------------------------------------------------ regression solvers */

/** Built on the fused pattern (every Gram- or Hessian-vector product is one sr_fused_pattern
 * call, X read once) and the public calls only (src/algorithms), so they run where X lives.
 * X is m x n (samples x features), float64, float32 (cast once to float64) or bool; y and the
 * coefficients w are host float64 vectors (sr_vector_view). With fit_intercept an unpenalized
 * intercept b is fitted too (scikit-learn's default): ridge centers X and y implicitly (X is
 * never densified: the centered Gram product is the fused pass minus a rank-one term), logistic
 * regression adds b to every margin. */
typedef struct sr_solver_step {
    int iteration;          /**< outer iterations: CG steps for ridge, Newton steps for logistic */
    int inner;              /**< CG steps in all (logistic) */
    double loss;            /**< the objective */
    double gradient_norm;   /**< ‖∇‖ */
    double seconds;         /**< since the call began */
    double intercept;       /**< b (0 without fit_intercept) */
} sr_solver_step;
/** Called after each iteration; nonzero stops the call with SR_ERROR_CANCELLED (w keeps it). */
typedef int (*sr_solver_fn)(const sr_solver_step *step, void *user);

/** The solvers' CG, preconditioned by a diagonal (the default, on every backend) or plain.
 * Ridge: diag(XᵀX + λI) (Jacobi; on the PyPI bag of words 156 steps instead of 1,382 to the same
 * tolerance); plain is scikit-learn's sparse_cg step for step. Logistic: 0.99·I + 0.01·diag(H),
 * the trust region in its norm (Hsia, Chiang and Lin 2018, as LIBLINEAR; 12 Newton and 158 CG
 * steps instead of 37 and 807 there). */
typedef enum sr_preconditioner {
    SR_PRECONDITIONER_JACOBI = 0,
    SR_PRECONDITIONER_NONE = 1
} sr_preconditioner;

typedef struct sr_solver_options {
    double tolerance;       /**< stop when ‖∇‖ <= tolerance·‖∇ at w = 0‖; default 1e-10 */
    int max_iterations;     /**< default 10·n (ridge, as scipy's cg), 100 (logistic) */
    bool fit_intercept;     /**< default false; the intercept comes back in sr_solver_step.intercept */
    sr_solver_fn report;
    void *report_user;
    sr_preconditioner preconditioner; /**< default SR_PRECONDITIONER_JACOBI (a diagonal) */
} sr_solver_options;
sr_solver_options sr_solver_options_default(void);

/** Ridge regression: w = argmin ‖X·w + b − y‖² + λ·‖w‖² (scikit-learn's Ridge(alpha=λ); b = 0
 * without fit_intercept) by conjugate gradient on the normal equations from w = 0. y: m x 1, w: n x 1. */
sr_status sr_ridge(sr_context ctx, sr_matrix X, const sr_dense *y, double lambda, const sr_solver_options *options,
                   const sr_dense *w, sr_solver_step *last);
/** L2-regularized logistic regression: w = argmin ½‖w‖² + C·Σ log(1 + exp(−y_i·(x_i·w + b)))
 * (scikit-learn's LogisticRegression(C=C); b = 0 without fit_intercept) by a trust-region
 * Newton method with conjugate-gradient inner steps (Lin, Weng and Keerthi 2008, as LIBLINEAR's
 * TRON). Labels y: m x 1 of ±1 (or 0/1, 0 read as −1). */
sr_status sr_logistic(sr_context ctx, sr_matrix X, const sr_dense *y, double C, const sr_solver_options *options,
                      const sr_dense *w, sr_solver_step *last);

/* ------------------------------------------------------------------ Matrix Market */

typedef enum sr_mm_symmetry {
    SR_MM_GENERAL = 0,
    SR_MM_SYMMETRIC = 1,
    SR_MM_SKEW_SYMMETRIC = 2
} sr_mm_symmetry;

typedef struct sr_mm_header {
    int64_t nrows, ncols;
    int64_t stored_entries;   /**< as the size line says */
    bool coordinate;          /**< false: array (dense) format */
    sr_type type;             /**< the type the file's field maps to: pattern->bool, integer->int32, real->float64 */
    sr_mm_symmetry symmetry;
} sr_mm_header;

/** Reads a Matrix Market file (coordinate or array; real, integer or pattern; general,
 * symmetric or skew-symmetric), plain or gzip-compressed, into a host matrix. Symmetric files
 * are expanded to both triangles. Comments, blank lines and surrounding whitespace are
 * tolerated; anything else malformed is an SR_ERROR_PARSE that names the line. Duplicate
 * entries are an error. `type` converts the values (e.g. SR_TYPE_FLOAT32); pass -1 to keep
 * the file's own. A "%%GraphBLAS type T" comment line, when present, is checked: values
 * outside T's range are an error. header may be NULL. */
sr_status sr_matrix_read_mm(sr_context ctx, const char *path, int type, sr_matrix *A, sr_mm_header *header);
/** Reads only the banner and size line. */
sr_status sr_mm_read_header(const char *path, sr_mm_header *header);

typedef struct sr_mm_write_options {
    bool array;              /**< write the dense array format instead of coordinate */
    bool symmetric;          /**< write the lower triangle with "symmetric"; fails if A is not symmetric */
    const char *comment;     /**< optional text written as % lines after the banner */
} sr_mm_write_options;

/** Writes A (host or device) to a file; options may be NULL (coordinate, general). Values are
 * written so that reading them back gives the same bits. The file is written to a temporary
 * name and renamed, so a failure never leaves a half-written file at `path`. */
sr_status sr_matrix_write_mm(sr_context ctx, sr_matrix A, const char *path, const sr_mm_write_options *options);

#ifdef __cplusplus
}
#endif

#endif /* SPARSERING_H */
