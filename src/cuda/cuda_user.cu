// User semirings' GPU programs (cuda_user.cuh): their source, and one program per semiring and
// architecture for the process.
#include "cuda_user.cuh"

#include <map>
#include <mutex>
#include <utility>

namespace sr_cuda {

thread_local const jit_program *current_user_program = nullptr;
thread_local cudaKernel_t current_user_kernel = nullptr;

std::string user_kernel_name(const char *kernel, std::initializer_list<int> template_args) {
    std::string name = std::string("sr_cuda::") + kernel + "<sr_user_ops";
    for (int a : template_args)
        name += ", " + std::to_string(a);
    return name + ">";
}

static const char *c_type(sr_type t) { return t == SR_TYPE_INT32 ? "int" : t == SR_TYPE_FLOAT32 ? "float" : "double"; }

// The user's operators as an Ops of the kernels' templates, spelled as the CPU's kernels spell
// them (cpu_user.c): so a built-in written again gives the built-in's expressions.
std::string user_source(const sr_semiring_def *d) {
    const char *add = sr_user_monoid_add(d->add) ? sr_user_monoid_add(d->add) : d->add;
    const char *identity = d->identity ? d->identity : sr_user_monoid_identity(d->add, d->type);
    return std::string("// sparsering: the product kernels of the user semiring ") + d->name +
           " (generated; src/cuda/cuda_user.cu)\n"
           "#include \"cuda_spmv_split_kernels.cuh\"\n"
           "#include \"cuda_ewise_kernels.cuh\"\n"
           "#include \"cuda_structure_kernels.cuh\"\n"
           "#include \"cuda_sddmm_kernels.cuh\"\n"
           "#include \"cuda_mxm_ordered.cuh\"\n"
           "typedef " + c_type(d->type) + " sr_value;\n"
           "struct sr_user_ops {\n"
           "    using value = sr_value;\n"
           "    static constexpr bool reads_values = true;\n"
           "    __device__ static sr_value identity() { return (sr_value)(" + identity + "); }\n"
           "    __device__ static sr_value add(sr_value a, sr_value b) { return (sr_value)(" + add + "); }\n"
           "    __device__ static sr_value mul(sr_value x, sr_value y) {\n"
           "        (void)x, (void)y;\n"
           "        return (sr_value)(" + d->multiply + ");\n"
           "    }\n"
           "};\n";
}

namespace {

std::mutex programs_lock;
std::map<std::pair<const void *, std::string>, jit_program *> programs; // by definition, device, kernels

} // namespace

sr_status cached_user_program(const void *owner, const char *what, const std::function<std::string()> &source,
                              const std::vector<std::string> &names, jit_program **program) {
    int device = 0;
    SR_CUDA_TRY(cudaGetDevice(&device));
    std::string which = std::to_string(device);
    for (const std::string &n : names)
        which += ";" + n;
    std::lock_guard<std::mutex> hold(programs_lock);
    const auto found = programs.find({owner, which});
    if (found != programs.end()) {
        *program = found->second;
        return SR_SUCCESS;
    }
    SR_TRY(jit_program_for(what, source(), names, 0, program));
    programs[{owner, which}] = *program;
    return SR_SUCCESS;
}

sr_status user_program(const sr_user_semiring *u, const std::vector<std::string> &names, jit_program **program) {
    char what[200];
    snprintf(what, sizeof what, "semiring '%s' (add '%s', multiply '%s')", u->def.name, u->def.add, u->def.multiply);
    return cached_user_program(u, what, [u] { return user_source(&u->def); }, names, program);
}

} // namespace sr_cuda
