// Kernels compiled at run time by NVRTC: a user semiring's products are the built-ins' kernel
// templates (cuda_spmm_kernels.cuh) instantiated with its operators. A program is compiled for
// the device's architecture on first use, kept for the process, and its CUBIN cached on disk
// (SPARSERING_JIT_CACHE/cuda, the CPU JIT's folder) by a hash of the source, the headers it
// includes, the architecture, NVRTC's version and the library's, so a new process loads it
// without compiling.
#pragma once

#include "cuda_common.cuh"

#include <string>
#include <vector>

namespace sr_cuda {

struct jit_program; // the loaded kernels of one source on one device, kept for the process

// The program of `source` (which may include the device headers by name, e.g.
// "cuda_spmm_kernels.cuh") for the current device, compiled or from a cache, with the kernels
// named by `kernels` (C++ name expressions such as "sr_cuda::spmv_rows<sr_user_ops, 8>").
// `what` names the source in errors; a source that does not compile is refused with NVRTC's log.
// `arch` is the compute capability times 10 (e.g. 90); 0 asks the current device.
sr_status jit_program_for(const char *what, const std::string &source, const std::vector<std::string> &kernels,
                          int arch, jit_program **program);

// The kernel of a program by its name expression, or an internal error when it was not asked for.
sr_status jit_kernel(const jit_program *program, const char *name_expression, cudaKernel_t *kernel);

// Compiles `source` to CUBIN for sm_<arch> without a device (NVRTC needs none) and returns its
// size and the lowered names: the checks of the shared kernels' NVRTC build run on any machine.
sr_status jit_compile_only(const char *what, const std::string &source, const std::vector<std::string> &kernels,
                           int arch, size_t *cubin_bytes, std::vector<std::string> *lowered);

// Launches a loaded kernel with its parameters (pointers to each argument, as cudaLaunchKernel).
inline sr_status jit_launch(cudaKernel_t kernel, dim3 grid, dim3 block, size_t shared, cudaStream_t stream,
                            void **args) {
    SR_CUDA_TRY(cudaLaunchKernel(reinterpret_cast<const void *>(kernel), grid, block, args, shared, stream));
    return SR_SUCCESS;
}

} // namespace sr_cuda
