// User semirings on the GPU: the product kernels' templates (cuda_spmm_kernels.cuh) compiled by
// NVRTC with the user's ⊕, ⊗ and identity (cuda_nvrtc.cuh), on first use on a device's
// architecture. The host launches them through a stand-in Ops, user_ops<T>, whose product_args
// have the layout of the compiled program's (they depend on T alone); the kernels themselves
// exist only in the program, found by their name expressions.
#pragma once

#include "cuda_nvrtc.cuh"

#include <functional>
#include <initializer_list>

extern "C" {
#include "../semiring/user.h"
}

namespace sr_cuda {

template <typename T> struct user_ops {
    using value = T;
    static constexpr bool reads_values = true;
};
template <class Ops> constexpr bool is_user_ops = false;
template <typename T> constexpr bool is_user_ops<user_ops<T>> = true;

// "sr_cuda::KERNEL<sr_user_ops, a, b, ..>": a kernel of the program by its name expression.
std::string user_kernel_name(const char *kernel, std::initializer_list<int> template_args);

// The source of a user semiring's program: its operators as an Ops (sr_user_ops) beside the
// kernels' templates.
std::string user_source(const sr_semiring_def *d);

// The program of a user definition's (`owner`'s) kernels `names` for the current device: compiled
// from source() or loaded on first use, then kept for the process.
sr_status cached_user_program(const void *owner, const char *what, const std::function<std::string()> &source,
                              const std::vector<std::string> &names, jit_program **program);

// The program of u's kernels `names` for the current device, compiled or loaded on first use.
sr_status user_program(const sr_user_semiring *u, const std::vector<std::string> &names, jit_program **program);

// The program that launch_user() takes its kernels from on this thread (user_program_scope), and,
// under run_user, its one kernel.
extern thread_local const jit_program *current_user_program;
extern thread_local cudaKernel_t current_user_kernel;

struct user_program_scope {
    explicit user_program_scope(const jit_program *p, cudaKernel_t only = nullptr) {
        current_user_program = p;
        current_user_kernel = only;
    }
    ~user_program_scope() {
        current_user_program = nullptr;
        current_user_kernel = nullptr;
    }
};

// Launches the current program's kernel `name` with these arguments (copied, as <<<>>> does).
template <class... Args>
sr_status launch_user(const std::string &name, unsigned grid, unsigned block, cudaStream_t stream, Args... args) {
    if (current_user_program == nullptr)
        return sr_error(SR_ERROR_INTERNAL, "no user semiring's program for %s", name.c_str());
    cudaKernel_t kernel = nullptr;
    SR_TRY(jit_kernel(current_user_program, name.c_str(), &kernel));
    void *argv[] = {static_cast<void *>(&args)...};
    return jit_launch(kernel, grid, block, 0, stream, argv);
}

// A two-pass operation's fill kernel under run_user: its program's one kernel, found by run_user
// before the passes (build_rows's fill lambdas return nothing), so a launch that fails shows as the
// fill pass's cudaGetLastError. Unused by a built-in's launcher.
struct user_fill_kernel {
    cudaKernel_t kernel = current_user_kernel;
    template <class... Args> void launch(unsigned grid, unsigned block, cudaStream_t stream, Args... args) const {
        void *argv[] = {static_cast<void *>(&args)...};
        (void)jit_launch(kernel, grid, block, 0, stream, argv);
    }
};

// Launcher<user_ops<T>>::run(args...) for u's value type T, with u's program of the one kernel
// `kernel` (a name expression, user_kernel_name's) current: an operation whose only value-making
// kernel is that one.
template <template <class> class Launcher, class... Args>
sr_status run_user(const sr_user_semiring *u, const std::string &kernel, Args &&...args) {
    jit_program *program = nullptr;
    SR_TRY(user_program(u, {kernel}, &program));
    cudaKernel_t only = nullptr;
    SR_TRY(jit_kernel(program, kernel.c_str(), &only));
    user_program_scope scope(program, only);
    switch (u->def.type) {
    case SR_TYPE_INT32: return Launcher<user_ops<int32_t>>::run(args...);
    case SR_TYPE_FLOAT32: return Launcher<user_ops<float>>::run(args...);
    case SR_TYPE_FLOAT64: return Launcher<user_ops<double>>::run(args...);
    default: return sr_error(SR_ERROR_INTERNAL, "a user semiring on %s values", sr_type_name(u->def.type));
    }
}

} // namespace sr_cuda
