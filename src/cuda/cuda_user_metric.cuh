// User metrics on the GPU: the dense path's kernels (cuda_metric_kernels.cuh) compiled by NVRTC
// with the user's terms as a metric type (sr_user_metric), on first use on a device's
// architecture, and kept for the process (cuda_user.cuh's cache; CUBIN on disk).
#pragma once

#include "cuda_user.cuh"

namespace sr_cuda {

// "sr_cuda::KERNEL<float|double, sr_user_metric>": a kernel of a user metric's program.
std::string user_metric_kernel(const char *kernel, bool float64);

// The source of a user metric's program: its terms as a metric type beside the kernels' templates.
std::string user_metric_source(const sr_metric_def *d);

// The kernel that scores a user metric's tiles: intersect_kernel (sums, and maxima over the shared
// columns), or union_max_kernel (a maximum over the union).
const char *user_metric_tile_kernel(const sr_metric_def *d);

// The program of u's kernels (its tile kernel and the norms, float32 and float64) on this device.
sr_status user_metric_program(const sr_user_metric *u, jit_program **program);

// Bytes a row's accumulators take in a tile: the built-ins' rule (float64 for float64 values and
// for sums over the union; two for a second sum).
int user_metric_accumulator_bytes(const sr_metric_def *d, sr_type type);

} // namespace sr_cuda
