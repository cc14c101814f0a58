/* sparsering factorize: ratings ≈ mean + W·Hᵀ by ALS (sr_factorize), with held-out ratings
 * scored after every sweep. Reads MovieLens-style CSV ("user,item,rating,...", a header line
 * allowed; gzip when built with zlib) or a Matrix Market file (users x items). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef SR_HAVE_ZLIB
#include <zlib.h>
#endif

#include "cli.h"

static const char *const usage_text =
    "usage: sparsering factorize RATINGS.csv[.gz]|RATINGS.mtx [--rank K] [--lambda L] [--iterations N]\n"
    "                            [--cg-steps S] [--test-fraction F] [--seed S] [--float64] [--factors PREFIX]\n"
    "  ALS matrix factorization; prints train and held-out RMSE after each sweep; --factors writes\n"
    "  PREFIX.users.mtx and PREFIX.items.mtx (dense)\n";

typedef struct {
    int64_t n, cap;
    int64_t *user, *item;
    double *rating;
} triplets;

static int push(triplets *t, int64_t u, int64_t i, double r)
{
    if (t->n == t->cap) {
        int64_t cap = t->cap ? 2 * t->cap : 1 << 16;
        int64_t *nu = realloc(t->user, (size_t)cap * sizeof *nu);
        if (nu)
            t->user = nu;
        int64_t *ni = realloc(t->item, (size_t)cap * sizeof *ni);
        if (ni)
            t->item = ni;
        double *nr = realloc(t->rating, (size_t)cap * sizeof *nr);
        if (nr)
            t->rating = nr;
        if (!nu || !ni || !nr)
            return 0;
        t->cap = cap;
    }
    t->user[t->n] = u, t->item[t->n] = i, t->rating[t->n++] = r;
    return 1;
}

/* Reads "user,item,rating" lines; a line that does not start with a digit (a header) is skipped.
 * Returns 0 and prints the file and line on error. */
static int read_csv(const char *path, triplets *t)
{
#ifdef SR_HAVE_ZLIB
    gzFile f = gzopen(path, "rb");
#define SR_GETS(buf, n, f) gzgets(f, buf, n)
#define SR_CLOSE(f) gzclose(f)
#else
    FILE *f = fopen(path, "r");
#define SR_GETS(buf, n, f) fgets(buf, n, f)
#define SR_CLOSE(f) fclose(f)
#endif
    if (!f) {
        fprintf(stderr, "sparsering: %s: cannot open\n", path);
        return 0;
    }
    char line[4096];
    long long lineno = 0;
    int ok = 1;
    while (ok && SR_GETS(line, (int)sizeof line, f)) {
        lineno++;
        if (line[0] < '0' || line[0] > '9')
            continue;
        char *end;
        long long u = strtoll(line, &end, 10);
        long long i = *end == ',' ? strtoll(end + 1, &end, 10) : -1;
        double r = *end == ',' ? strtod(end + 1, &end) : 0;
        if (i < 0 || (*end != ',' && *end != '\n' && *end != '\r' && *end != '\0')) {
            fprintf(stderr, "sparsering: %s:%lld: expected \"user,item,rating\"\n", path, lineno);
            ok = 0;
        } else if (!push(t, u, i, r)) {
            fprintf(stderr, "sparsering: %s: out of memory at line %lld\n", path, lineno);
            ok = 0;
        }
    }
    SR_CLOSE(f);
    if (ok && t->n == 0) { /* a directory, an empty file, a header alone: nothing to factorize */
        fprintf(stderr, "sparsering: %s: no \"user,item,rating\" lines\n", path);
        ok = 0;
    }
    return ok;
}

static int compare_ids(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* ids[k] becomes its rank among the distinct ids; returns their count. */
static int64_t renumber(int64_t *ids, int64_t n)
{
    int64_t *sorted = malloc((size_t)(n ? n : 1) * sizeof *sorted), distinct = 0;
    if (!sorted)
        return -1;
    if (n > 0) /* no ratings: ids may be NULL */
        memcpy(sorted, ids, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, compare_ids);
    for (int64_t k = 0; k < n; k++)
        if (k == 0 || sorted[k] != sorted[k - 1])
            sorted[distinct++] = sorted[k];
    for (int64_t k = 0; k < n; k++)
        ids[k] = (int64_t *)bsearch(&ids[k], sorted, (size_t)distinct, sizeof *sorted, compare_ids) - sorted;
    free(sorted);
    return distinct;
}

/* Train and test matrices from the triplets: each rating is held out with probability `fraction`. */
static sr_status split(sr_context ctx, const triplets *t, int64_t users, int64_t items, double fraction,
                       uint64_t seed, sr_type type, sr_matrix *train, sr_matrix *test)
{
    int64_t *rows[2], n[2] = {0, 0};
    int32_t *cols[2];
    void *vals[2];
    for (int s = 0; s < 2; s++) {
        rows[s] = malloc((size_t)(t->n + 1) * sizeof(int64_t));
        cols[s] = malloc((size_t)(t->n + 1) * sizeof(int32_t));
        vals[s] = malloc((size_t)(t->n + 1) * sizeof(double));
    }
    sr_status st = rows[0] && rows[1] && cols[0] && cols[1] && vals[0] && vals[1] ? SR_SUCCESS : SR_ERROR_OUT_OF_MEMORY;
    uint64_t state = seed;
    for (int64_t k = 0; k < t->n && st == SR_SUCCESS; k++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        const int s = (double)(state >> 11) / 9007199254740992.0 < fraction;
        rows[s][n[s]] = t->user[k];
        cols[s][n[s]] = (int32_t)t->item[k];
        if (type == SR_TYPE_FLOAT32)
            ((float *)vals[s])[n[s]++] = (float)t->rating[k];
        else
            ((double *)vals[s])[n[s]++] = t->rating[k];
    }
    if (st == SR_SUCCESS)
        st = sr_matrix_from_coo(ctx, train, users, items, type, n[0], rows[0], cols[0], vals[0], SR_DUPLICATES_ERROR,
                                SR_HOST);
    if (st == SR_SUCCESS && fraction > 0)
        st = sr_matrix_from_coo(ctx, test, users, items, type, n[1], rows[1], cols[1], vals[1], SR_DUPLICATES_ERROR,
                                SR_HOST);
    for (int s = 0; s < 2; s++)
        free(rows[s]), free(cols[s]), free(vals[s]);
    return st;
}

static int print_step(const sr_factorize_step *step, void *user)
{
    (void)user;
    printf("%9d %12.5f %12.5f %10.3f\n", step->iteration, step->train_rmse, step->test_rmse, step->seconds);
    fflush(stdout);
    return cli_interrupted; /* Ctrl-C: stop after this sweep */
}

static sr_status write_factor(sr_context ctx, const sr_dense *F, const char *prefix, const char *side)
{
    char path[4096];
    snprintf(path, sizeof path, "%s.%s.mtx", prefix, side);
    sr_matrix M = NULL;
    sr_mm_write_options wo = {0};
    wo.array = true;
    sr_status s = sr_matrix_from_dense(ctx, &M, F);
    if (s == SR_SUCCESS)
        s = sr_matrix_write_mm(ctx, M, path, &wo);
    sr_matrix_free(M);
    return s;
}

int cmd_factorize(const cli_globals *g, int argc, char **argv)
{
    const char *path = NULL, *prefix = NULL;
    sr_factorize_options o = sr_factorize_options_default();
    double fraction = 0.1;
    bool f64 = false;
    int bad = 0;
    for (int i = 1; i < argc && !bad; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--rank") == 0)
            o.rank = atoll(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--lambda") == 0)
            o.lambda = atof(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--iterations") == 0)
            o.iterations = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--cg-steps") == 0)
            o.cg_steps = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--test-fraction") == 0)
            fraction = atof(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--seed") == 0)
            o.seed = strtoull(argv[++i], NULL, 10);
        else if (i + 1 < argc && strcmp(argv[i], "--factors") == 0)
            prefix = argv[++i];
        else if (strcmp(argv[i], "--float64") == 0)
            f64 = true;
        else if (argv[i][0] != '-' && !path)
            path = argv[i];
        else
            bad = 1;
    }
    const bool rank_ok = o.rank >= 1 && o.rank <= 65536; /* the factor arrays are rows x rank */
    if (bad || !path || !(fraction >= 0 && fraction < 1) || !rank_ok) {
        if (!(fraction >= 0 && fraction < 1))
            fprintf(stderr, "sparsering factorize: --test-fraction must be in [0, 1)\n");
        if (!rank_ok)
            fprintf(stderr, "sparsering factorize: --rank must be 1 to 65536, not %lld\n", (long long)o.rank);
        fputs(usage_text, stderr);
        return CLI_USAGE;
    }
    sr_context ctx;
    int rc = cli_context(g, &ctx);
    if (rc != CLI_OK)
        return rc;
    const sr_type type = f64 ? SR_TYPE_FLOAT64 : SR_TYPE_FLOAT32;
    sr_matrix R = NULL, T = NULL;
    const double t0 = cli_seconds();
    sr_status s = SR_SUCCESS;
    const char *what = path;
    triplets t = {0};
    if (strstr(path, ".mtx")) {
        sr_matrix M = NULL;
        s = sr_matrix_read_mm(ctx, path, (int)type, &M, NULL);
        int64_t nnz = 0;
        sr_matrix_info info;
        if (s == SR_SUCCESS && (s = sr_matrix_get_info(M, &info)) == SR_SUCCESS) {
            nnz = info.nnz;
            int64_t *rows = malloc((size_t)(nnz + 1) * sizeof(int64_t));
            int32_t *cols = malloc((size_t)(nnz + 1) * sizeof(int32_t));
            double *vals = malloc((size_t)(nnz + 1) * sizeof(double));
            sr_matrix D = NULL;
            s = rows && cols && vals ? sr_matrix_cast(ctx, M, SR_TYPE_FLOAT64, &D) : SR_ERROR_OUT_OF_MEMORY;
            if (s == SR_SUCCESS)
                s = sr_matrix_export_coo(ctx, D, rows, cols, vals, SR_HOST);
            for (int64_t k = 0; k < nnz && s == SR_SUCCESS; k++)
                push(&t, rows[k], cols[k], vals[k]);
            sr_matrix_free(D);
            free(rows), free(cols), free(vals);
        }
        if (s == SR_SUCCESS)
            s = split(ctx, &t, info.nrows, info.ncols, fraction, o.seed, type, &R, &T);
        sr_matrix_free(M);
    } else if (!read_csv(path, &t)) {
        rc = CLI_BAD_INPUT;
    } else {
        const int64_t users = renumber(t.user, t.n), items = renumber(t.item, t.n);
        s = users < 0 || items < 0 ? SR_ERROR_OUT_OF_MEMORY
                                   : split(ctx, &t, users, items, fraction, o.seed, type, &R, &T);
    }
    if (rc == CLI_OK && s == SR_SUCCESS && (what = "moving the ratings to the device"))
        s = cli_to_backend(ctx, &R);
    if (rc == CLI_OK && s == SR_SUCCESS && T)
        s = cli_to_backend(ctx, &T);
    sr_dense W = {0}, H = {0};
    if (rc == CLI_OK && s == SR_SUCCESS) {
        sr_matrix_info info;
        sr_matrix_get_info(R, &info);
        const size_t es = sr_type_size(type);
        W = sr_dense_view(calloc((size_t)(info.nrows * o.rank + 1), es), info.nrows, o.rank, type, SR_ROW_MAJOR, SR_HOST);
        H = sr_dense_view(calloc((size_t)(info.ncols * o.rank + 1), es), info.ncols, o.rank, type, SR_ROW_MAJOR, SR_HOST);
        int64_t test_n = 0;
        if (T) {
            sr_matrix_info ti;
            sr_matrix_get_info(T, &ti);
            test_n = ti.nnz;
        }
        printf("factorize: %lld users x %lld items, %lld training and %lld held-out ratings; rank %lld, lambda %g, "
               "%d CG steps; %s backend, read %.3f s\n",
               (long long)info.nrows, (long long)info.ncols, (long long)info.nnz, (long long)test_n, (long long)o.rank,
               o.lambda, o.cg_steps, cli_backend_name(ctx), cli_seconds() - t0);
        printf("%9s %12s %12s %10s\n", "iteration", "train RMSE", "test RMSE", "seconds");
        o.report = print_step;
        double mean = 0;
        what = "factorization";
        s = sr_factorize(ctx, R, T, &o, &W, &H, &mean, NULL);
        if (s == SR_SUCCESS && prefix && (what = prefix))
            s = write_factor(ctx, &W, prefix, "users");
        if (s == SR_SUCCESS && prefix)
            s = write_factor(ctx, &H, prefix, "items");
        if (s == SR_SUCCESS)
            printf("mean rating %.4f%s%s\n", mean, prefix ? "; factors written to " : "", prefix ? prefix : "");
    }
    if (rc == CLI_OK && s != SR_SUCCESS)
        rc = cli_fail(s, what);
    free(W.data), free(H.data);
    free(t.user), free(t.item), free(t.rating);
    sr_matrix_free(R);
    sr_matrix_free(T);
    sr_context_destroy(ctx);
    return rc;
}
