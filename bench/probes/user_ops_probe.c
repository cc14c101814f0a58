/* What a user semiring's operators cost, three ways, on one core: compiled in place (what the
 * library's CPU JIT does: the expression inlined into the kernel), a C callback (a function
 * pointer a call per ⊕ and per ⊗), and a small expression evaluator (bytecode interpreted for
 * each ⊗, the monoid through a switch). Issue 71 asked for the evaluator and the JIT to be
 * measured against each other; this is that measurement, outside the library, on the CPU
 * backend's loops (cpu_user.c's SpMV row sum and dense-row SpMM).
 *
 *   cc -O3 -o /tmp/user_ops_probe bench/probes/user_ops_probe.c -lm && /tmp/user_ops_probe [ROWS] [DEGREE]
 *
 * The semiring is (min, +) on float64, and the matrix uniform random: ROWS x ROWS (default 2^18),
 * DEGREE entries a row (default 16). Every variant's answer is checked against the compiled one's. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef double T;

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static uint64_t state = 88172645463325252ull;
static uint64_t next(void)
{
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return state;
}

/* ---- compiled: the user's expressions inlined, as the JIT's generated kernels have them */
static inline T add_compiled(T a, T b) { return (b < a || a != a) ? b : a; }
static inline T mul_compiled(T x, T y) { return x + y; }

/* ---- callback: what a C user would pass (kept out of line, as a library call through a pointer is) */
static __attribute__((noinline)) T add_callback(T a, T b) { return (b < a || a != a) ? b : a; }
static __attribute__((noinline)) T mul_callback(T x, T y) { return x + y; }
static T (*volatile add_ptr)(T, T) = add_callback;
static T (*volatile mul_ptr)(T, T) = mul_callback;

/* ---- evaluator: "x + y" as bytecode on a small stack; the monoid by name through a switch */
enum op { OP_X, OP_Y, OP_ADD, OP_SUB, OP_MUL, OP_MIN, OP_MAX, OP_END };
static const unsigned char kMultiply[] = {OP_X, OP_Y, OP_ADD, OP_END};
enum monoid { MONOID_PLUS, MONOID_MIN, MONOID_MAX };

static inline T evaluate(const unsigned char *code, T x, T y)
{
    T stack[8];
    int top = 0;
    for (;; code++) {
        switch (*code) {
        case OP_X: stack[top++] = x; break;
        case OP_Y: stack[top++] = y; break;
        case OP_ADD: top--, stack[top - 1] += stack[top]; break;
        case OP_SUB: top--, stack[top - 1] -= stack[top]; break;
        case OP_MUL: top--, stack[top - 1] *= stack[top]; break;
        case OP_MIN: top--, stack[top - 1] = fmin(stack[top - 1], stack[top]); break;
        case OP_MAX: top--, stack[top - 1] = fmax(stack[top - 1], stack[top]); break;
        default: return stack[0];
        }
    }
}

static inline T add_evaluated(enum monoid m, T a, T b)
{
    switch (m) {
    case MONOID_PLUS: return a + b;
    case MONOID_MIN: return (b < a || a != a) ? b : a;
    default: return (b > a || a != a) ? b : a;
    }
}

/* ---- the kernels: cpu_user.c's SpMV row sums and SpMM dense rows, one per variant */
#define SPMV(NAME, ADD, MUL)                                                                              \
    static void NAME(int64_t n, const int64_t *rowptr, const int32_t *colind, const T *av, const T *x, T *y) \
    {                                                                                                     \
        const enum monoid m_ = monoid_setting; /* read once: unknown to the compiler */                   \
        const unsigned char *code_ = multiply_code;                                                       \
        (void)m_, (void)code_;                                                                            \
        for (int64_t i = 0; i < n; i++) {                                                                 \
            T sum = INFINITY;                                                                             \
            for (int64_t k = rowptr[i]; k < rowptr[i + 1]; k++)                                           \
                sum = ADD(sum, MUL(av[k], x[colind[k]]));                                                 \
            y[i] = sum;                                                                                   \
        }                                                                                                 \
    }
#define SPMM(NAME, ADD, MUL)                                                                              \
    static void NAME(int64_t n, const int64_t *rowptr, const int32_t *colind, const T *av, const T *b,     \
                     int64_t cols, T *c)                                                                  \
    {                                                                                                     \
        const enum monoid m_ = monoid_setting;                                                            \
        const unsigned char *code_ = multiply_code;                                                       \
        (void)m_, (void)code_;                                                                            \
        for (int64_t i = 0; i < n; i++) {                                                                 \
            T *acc = c + i * cols;                                                                        \
            for (int64_t j = 0; j < cols; j++)                                                            \
                acc[j] = INFINITY;                                                                        \
            for (int64_t k = rowptr[i]; k < rowptr[i + 1]; k++) {                                         \
                const T a = av[k], *brow = b + (int64_t)colind[k] * cols;                                 \
                for (int64_t j = 0; j < cols; j++)                                                        \
                    acc[j] = ADD(acc[j], MUL(a, brow[j]));                                                \
            }                                                                                             \
        }                                                                                                 \
    }
#define ADD_CB(a, b) add_ptr(a, b)
#define MUL_CB(x, y) mul_ptr(x, y)
#define ADD_EV(a, b) add_evaluated(m_, a, b)
#define MUL_EV(x, y) evaluate(code_, x, y)
/* the evaluator's program and monoid, as a parser would hand them over: not constants to the compiler */
static volatile enum monoid monoid_setting = MONOID_MIN;
static const unsigned char *volatile multiply_code = kMultiply;
SPMV(spmv_compiled, add_compiled, mul_compiled)
SPMV(spmv_callback, ADD_CB, MUL_CB)
SPMV(spmv_evaluated, ADD_EV, MUL_EV)
SPMM(spmm_compiled, add_compiled, mul_compiled)
SPMM(spmm_callback, ADD_CB, MUL_CB)
SPMM(spmm_evaluated, ADD_EV, MUL_EV)

static double best_of(int reps, void (*run)(void *), void *arg)
{
    double best = INFINITY;
    for (int r = 0; r < reps; r++) {
        const double t0 = seconds();
        run(arg);
        const double t = seconds() - t0;
        best = t < best ? t : best;
    }
    return best;
}

typedef struct {
    int64_t n, cols;
    const int64_t *rowptr;
    const int32_t *colind;
    const T *av, *x;
    T *y;
    int variant;
} job;

static void run_spmv(void *p)
{
    job *j = p;
    if (j->variant == 0)
        spmv_compiled(j->n, j->rowptr, j->colind, j->av, j->x, j->y);
    else if (j->variant == 1)
        spmv_callback(j->n, j->rowptr, j->colind, j->av, j->x, j->y);
    else
        spmv_evaluated(j->n, j->rowptr, j->colind, j->av, j->x, j->y);
}

static void run_spmm(void *p)
{
    job *j = p;
    if (j->variant == 0)
        spmm_compiled(j->n, j->rowptr, j->colind, j->av, j->x, j->cols, j->y);
    else if (j->variant == 1)
        spmm_callback(j->n, j->rowptr, j->colind, j->av, j->x, j->cols, j->y);
    else
        spmm_evaluated(j->n, j->rowptr, j->colind, j->av, j->x, j->cols, j->y);
}

int main(int argc, char **argv)
{
    const int64_t n = argc > 1 ? atoll(argv[1]) : (1 << 18), degree = argc > 2 ? atoll(argv[2]) : 16;
    const int64_t nnz = n * degree, cols = 32, spmm_rows = n / 8;
    int64_t *rowptr = malloc((size_t)(n + 1) * sizeof *rowptr);
    int32_t *colind = malloc((size_t)nnz * sizeof *colind);
    T *av = malloc((size_t)nnz * sizeof *av), *x = malloc((size_t)n * (size_t)cols * sizeof *x);
    T *y[3], *c[3];
    for (int v = 0; v < 3; v++) {
        y[v] = malloc((size_t)n * sizeof(T));
        c[v] = malloc((size_t)spmm_rows * (size_t)cols * sizeof(T));
    }
    for (int64_t i = 0; i <= n; i++)
        rowptr[i] = i * degree;
    for (int64_t k = 0; k < nnz; k++) {
        colind[k] = (int32_t)(next() % (uint64_t)n);
        av[k] = (double)(next() >> 11) / 9007199254740992.0;
    }
    for (int64_t k = 0; k < n * cols; k++)
        x[k] = (double)(next() >> 11) / 9007199254740992.0;
    printf("(min, +) on float64, one core: %lld x %lld, %lld entries; SpMM on the first %lld rows, %lld columns\n",
           (long long)n, (long long)n, (long long)nnz, (long long)spmm_rows, (long long)cols);
    const char *names[3] = {"compiled in place (the JIT)", "C callback (function pointers)", "expression evaluator"};
    double t_spmv[3], t_spmm[3];
    for (int v = 0; v < 3; v++) {
        job s = {n, 1, rowptr, colind, av, x, y[v], v}, m = {spmm_rows, cols, rowptr, colind, av, x, c[v], v};
        t_spmv[v] = best_of(5, run_spmv, &s);
        t_spmm[v] = best_of(3, run_spmm, &m);
    }
    for (int v = 0; v < 3; v++) {
        const int same = memcmp(y[v], y[0], (size_t)n * sizeof(T)) == 0 &&
                         memcmp(c[v], c[0], (size_t)spmm_rows * (size_t)cols * sizeof(T)) == 0;
        printf("%-32s SpMV %7.2f ms (%.2fx)   SpMM %8.2f ms (%.2fx)   same answers: %s\n", names[v],
               1e3 * t_spmv[v], t_spmv[v] / t_spmv[0], 1e3 * t_spmm[v], t_spmm[v] / t_spmm[0], same ? "yes" : "NO");
    }
    return 0;
}
