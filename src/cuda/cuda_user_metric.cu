// User metrics' GPU programs (cuda_user_metric.cuh): the source, spelled as the CPU's kernels spell
// the same terms (cpu_user.c, sr_user_metric_terms_of), so a built-in written again gives the
// built-in's expressions in the built-in's kernels.
#include "cuda_user_metric.cuh"

extern "C" {
#include "cuda.h"
}

namespace sr_cuda {

std::string user_metric_kernel(const char *kernel, bool float64) {
    return std::string("sr_cuda::") + kernel + (float64 ? "<double" : "<float") + ", sr_user_metric>";
}

const char *user_metric_tile_kernel(const sr_metric_def *d) {
    return sr_user_metric_terms_of(d).walks_union ? "union_max_kernel" : "intersect_kernel";
}

static std::vector<std::string> user_metric_kernels(const sr_metric_def *d) {
    const char *tiles = user_metric_tile_kernel(d);
    std::vector<std::string> names = {user_metric_kernel(tiles, false), user_metric_kernel(tiles, true),
                                      user_metric_kernel("norms_kernel", false), user_metric_kernel("norms_kernel", true)};
    if (sr_user_metric_terms_of(d).walks_union) // and the keys of its rows' orders
        for (bool float64 : {false, true})
            names.push_back(user_metric_kernel("union_keys_kernel", float64));
    return names;
}

std::string user_metric_source(const sr_metric_def *d) {
    const sr_user_metric_terms t = sr_user_metric_terms_of(d);
    return std::string("// sparsering: the distance kernels of the user metric ") + d->name +
           " (generated; src/cuda/cuda_user_metric.cu)\n"
           "#include \"cuda_metric_kernels.cuh\"\n"
           "#define SR_FN __device__ inline\n" +
           sr_user_metric_helpers +
           "SR_FN double sr_pair(double q, double x, double p) { (void)q, (void)x, (void)p; return (double)(" + d->pair +
           "); }\n"
           "SR_FN double sr_norm(double v, double p) { (void)v, (void)p; return (double)(" + t.norm + "); }\n"
           "SR_FN double sr_pair2(double q, double x, double p) { (void)q, (void)x, (void)p; return (double)(" +
           t.pair2 + "); }\n"
           "SR_FN double sr_norm2(double v, double p) { (void)v, (void)p; return (double)(" + t.norm2 + "); }\n"
           "struct sr_user_metric {\n"
           "    static constexpr int accumulators = " + (t.two_sums ? "2" : "1") + ";\n"
           "    static constexpr bool wide = " + (d->over_union ? "true" : "false") + ";\n"
           "    static constexpr bool maximum = " + (t.maximum ? "true" : "false") + ";\n"
           "    __device__ static double pair(double q, double x, double p) { return sr_pair(q, x, p); }\n"
           "    __device__ static void intersect(double q, double x, double p, double *a0, double *a1) {\n"
           "        *a0 += " + t.term + ";\n"
           "        if (accumulators > 1)\n"
           "            *a1 += " + t.term2 + ";\n"
           "    }\n"
           "    __device__ static void norm_add(double v, double p, double *n0, double *n1) {\n"
           "        *n0 = maximum ? fmax(*n0, sr_norm(v, p)) : *n0 + sr_norm(v, p);\n"
           "        *n1 = maximum ? fmax(*n1, sr_norm2(v, p)) : *n1 + sr_norm2(v, p);\n"
           "    }\n"
           "    __device__ static double finalize(double acc, double acc2, double nq, double nq2, double nx, double nx2,\n"
           "                                      double d, double p) {\n"
           "        (void)acc, (void)acc2, (void)nq, (void)nq2, (void)nx, (void)nx2, (void)d, (void)p;\n"
           "        return (double)(" + t.distance + ");\n"
           "    }\n"
           "};\n";
}

sr_status user_metric_program(const sr_user_metric *u, jit_program **program) {
    char what[200];
    snprintf(what, sizeof what, "metric '%s' (pair '%s')", u->def.name, u->def.pair);
    return cached_user_program(u, what, [u] { return user_metric_source(&u->def); }, user_metric_kernels(&u->def),
                               program);
}

int user_metric_accumulator_bytes(const sr_metric_def *d, sr_type type) {
    const int one = type == SR_TYPE_FLOAT64 || d->over_union ? 8 : 4;
    return one * (d->pair2 ? 2 : 1);
}

} // namespace sr_cuda

using namespace sr_cuda;

extern "C" sr_status sr_cuda_user_metric_compile_check(sr_metric m, int arch, size_t *cubin_bytes) {
    const sr_user_metric *u = sr_user_metric_of((int)m);
    if (!u)
        return sr_error(SR_ERROR_INVALID_ARGUMENT, "sr_cuda_user_metric_compile_check: %d is not a user metric", (int)m);
    std::vector<std::string> lowered;
    return jit_compile_only(u->def.name, user_metric_source(&u->def), user_metric_kernels(&u->def), arch, cubin_bytes,
                            &lowered);
}
