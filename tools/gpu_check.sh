#!/usr/bin/env bash
# The GPU gate: CI has no GPU, so this is the check every CUDA change passes before it lands.
# From a bare GPU machine: configure and build for sm_90 with warnings as errors, run every test
# suite (each has a CUDA part, and here a skipped CUDA part is a failure), and print a table of
# suite, result and seconds with the build's time. docs/install.md#the-gpu-gate says what it
# covers; it is meant to finish in 8 minutes on one H100, build included.
#
# usage: tools/gpu_check.sh [BUILD_DIR] [--long]
#   BUILD_DIR  default build-gpu (reused: a second run rebuilds only what changed)
#   --long     instead of the suites, the runs labelled `long`: compute-sanitizer's memcheck,
#              initcheck, synccheck and racecheck over the suites with a CUDA part
#              (tests/gpu_sanitize.sh; hours for racecheck on every suite)
# Environment: SR_GATE_JOBS (ctest -j, default the cores: ctest counts each suite's threads),
# CUDA_ARCH (default 90), SR_TEST_DATA (the real data sets, default ../shared/data), any SR_TEST_*
# or SPARSERING_* setting the suites read.
set -uo pipefail
cd "$(dirname "$0")/.."

build=build-gpu
long=0
for arg in "$@"; do
    case "$arg" in
        --long) long=1 ;;
        -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
        *) build=$arg ;;
    esac
done

if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "gpu_check: no usable NVIDIA GPU here (nvidia-smi -L failed): the gate needs one" >&2
    exit 2
fi
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
cores=$(nproc)
echo "== GPU gate on $gpu, $cores cores, $(date -u +%Y-%m-%dT%H:%M:%SZ), tree $(git describe --always --dirty 2>/dev/null || echo '?')"

start=$SECONDS
generator=()
command -v ninja >/dev/null && [ ! -f "$build/Makefile" ] && generator=(-G Ninja)
cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" \
    -DSPARSERING_WERROR=ON ${SR_TEST_DATA:+-DSR_TEST_DATA="$SR_TEST_DATA"} -DSPARSERING_LONG_TESTS=$([ "$long" = 1 ] && echo ON || echo OFF) >"$build.configure.log" 2>&1 ||
    { cat "$build.configure.log"; echo "gpu_check: configure failed"; exit 1; }
if ! cmake --build "$build" -j"$cores" >"$build.build.log" 2>&1; then
    grep -B2 -A12 -m 5 "error" "$build.build.log"
    echo "gpu_check: the build failed (warnings are errors); log: $build.build.log"
    exit 1
fi
build_s=$((SECONDS - start))
version=$("$build/sparsering" --version 2>&1)
case "$version" in
    *cuda*) ;;
    *) echo "gpu_check: the build has no CUDA backend ($version); is nvcc on PATH?"; exit 1 ;;
esac

export SR_TEST_REQUIRE_CUDA=1 # a suite whose CUDA part cannot start fails instead of skipping
threads=$(sed -n 's/^SR_TEST_THREADS:STRING=//p' "$build/CMakeCache.txt")
jobs=${SR_GATE_JOBS:-$cores}
label=(-LE long)
[ "$long" = 1 ] && label=(-L long)
log="$build/gpu_check.log"
test_start=$SECONDS
# -j counts processors: each suite declares its SR_TEST_THREADS (PROCESSORS), so -j$cores runs
# about cores / threads suites at once; the resource spec lets at most SR_TEST_GPU_SLOTS share the GPU.
ctest --test-dir "$build" -j"$jobs" "${label[@]}" --resource-spec-file "$(cd "$build" && pwd)/tests/gpu_resources.json" \
    --output-on-failure --timeout 900 >"$log" 2>&1
rc=$?
tests_s=$((SECONDS - test_start))

echo
printf '%-28s %-10s %8s\n' suite result seconds
printf '%-28s %-10s %8s\n' ---------------------------- ---------- --------
printf '%-28s %-10s %8s\n' "(configure + build)" built "$build_s"
# ctest's lines: "12/31 Test #7: test_fused ......   Passed    6.10 sec" (or ***Failed, ***Skipped, ***Timeout)
awk '/ Test +#[0-9]+: / && $NF == "sec" {
        for (i = 1; i <= NF; i++) if ($i ~ /^#[0-9]+:$/) name = $(i + 1)
        status = $(NF - 2); sub(/^[.*]+/, "", status)
        printf "%-28s %-10s %8.1f\n", name, status, $(NF - 1) }' "$log" | sort
echo
grep -E "tests passed|tests failed" "$log" | tail -n 1
echo "build ${build_s} s, tests ${tests_s} s (ctest -j$jobs, $threads threads a suite), total $((SECONDS - start)) s; log: $log"
if [ "$rc" -ne 0 ]; then
    echo
    echo "== failures (from $log)"
    grep -E "^FAIL|FAILED|Error|error:" "$log" | head -n 40
    echo "gpu_check: FAILED"
    exit 1
fi
if grep -q "\*\*\*Skipped" "$log"; then
    echo "(skipped suites above: each printed its reason in $log)"
fi
echo "gpu_check: passed"
