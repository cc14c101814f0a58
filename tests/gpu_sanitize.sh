#!/bin/sh
# Runs the GPU test suites under NVIDIA compute-sanitizer: memcheck (with leak checking),
# racecheck, initcheck and synccheck, each suite's CUDA pass alone (SR_TEST_BACKENDS=cuda).
# Build with line numbers first: cmake -DCMAKE_CUDA_FLAGS=-lineinfo ...
#
# usage: tests/gpu_sanitize.sh BUILD_DIR [TOOLS] [TESTS] [KERNEL_REGEX]
#   TOOLS         comma-separated, default memcheck,racecheck,initcheck,synccheck
#   TESTS         comma-separated test programs, default every suite with a CUDA pass
#   KERNEL_REGEX  compute-sanitizer's --kernel-name (e.g. kns=gemm_tiles) to check only those
#                 kernels: the whole suites under racecheck take hours
#   SANITIZE_TIMEOUT (seconds a run, default 1800)
#   SANITIZE_LAUNCHES (check only the first N launches of the kernels chosen; the rest run unchecked:
#                      racecheck on the selection kernels of the k-NN suites, launched thousands of times)
# Prints one line a run (tool, test, errors, seconds) and exits 1 when any run found an error.
set -u
BUILD="${1:?usage: tests/gpu_sanitize.sh BUILD_DIR [TOOLS] [TESTS] [KERNEL_REGEX]}"
TOOLS="${2:-memcheck,racecheck,initcheck,synccheck}"
TESTS="${3:-test_cuda,test_device_memory,test_products,test_distance,test_knn_panel,test_knn_overlap,test_graph,test_radius,test_sddmm,test_fused,test_boolean,test_graph_queries,test_small_calls,test_cancel,test_context,test_threads,test_matrix}"
REGEX="${4:-}"
LIMIT="${SANITIZE_TIMEOUT:-1800}"
LAUNCHES="${SANITIZE_LAUNCHES:-}"
SAN="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
[ -x "$SAN" ] || { echo "compute-sanitizer not found"; exit 2; }
failed=0
for tool in $(echo "$TOOLS" | tr ',' ' '); do
    extra=""
    case "$tool" in
        memcheck) extra="--leak-check full" ;;
        racecheck) extra="--racecheck-report all" ;;
    esac
    for t in $(echo "$TESTS" | tr ',' ' '); do
        exe="$BUILD/tests/$t"
        [ -x "$exe" ] || { echo "$tool $t: not built"; continue; }
        log="$BUILD/sanitize-$tool-$t${REGEX:+-$(echo "$REGEX" | tr -c 'A-Za-z0-9_\n' _)}.log"
        start=$(date +%s)
        # shellcheck disable=SC2086
        SR_TEST_BACKENDS=cuda timeout "$LIMIT" "$SAN" --tool "$tool" $extra --error-exitcode 9 \
            ${REGEX:+--kernel-name "$REGEX"} ${LAUNCHES:+--launch-count "$LAUNCHES"} "$exe" > "$log" 2>&1
        rc=$?
        summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY" "$log" | tr '\n' ' ')
        echo "$tool $t${REGEX:+ ($REGEX)}: exit $rc, $(( $(date +%s) - start )) s; ${summary:-no summary (see $log)}"
        # the suite's own failed checks (a run can fail them with the tool finding nothing)
        [ "$rc" -eq 0 ] || { grep -m 3 "^FAIL" "$log" | sed 's/^/    /'; failed=1; }
    done
done
exit $failed
