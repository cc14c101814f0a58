#!/usr/bin/env bash
# Runs the GPU test suites under NVIDIA compute-sanitizer: memcheck (with leak checking),
# racecheck, initcheck and synccheck, each suite's CUDA pass alone (SR_TEST_BACKENDS=cuda).
# Build with line numbers first: cmake -DCMAKE_CUDA_FLAGS=-lineinfo ...
#
# usage: tests/gpu_sanitize.sh BUILD_DIR [TOOLS] [TESTS] [KERNEL_REGEX]
#   TOOLS         comma-separated, default memcheck,initcheck,synccheck,racecheck
#   TESTS         comma-separated test programs, default every test_* program the build made;
#                 NAME:N runs NAME in N parts at once (SR_TEST_PART=i/N, tests/test_util.h), each
#                 part a run of its own with its own time limit
#   KERNEL_REGEX  compute-sanitizer's --kernel-name (e.g. kns=gemm_tiles) to check only those
#                 kernels: the whole suites under racecheck take hours
# Environment:
#   SANITIZE_JOBS     runs at once (default a quarter of the cores): the tools are slow on the
#                     host side, so several suites share the GPU well
#   SANITIZE_TIMEOUT  seconds a run (default 1800); a run cut off reports "timeout", not clean
#   SANITIZE_LAUNCHES check only the first N launches of the kernels chosen; the rest run unchecked
#                     (racecheck on the selection kernels of the k-NN suites, launched thousands of times)
#   SANITIZE_LOGS     folder for the logs (default BUILD_DIR/sanitize)
#   SANITIZE_ARGS     more compute-sanitizer options
#   SANITIZE_PARTS    parts of the suites named without :N (default: the suites that take longest
#                     under the tools, "test_fused=6,test_alloc_failures=8,test_knn_overlap=4,
#                     test_knn_panel=4,test_sddmm=4,test_cuda=4"; "" runs every suite whole)
# Prints one line a run (tool, test, exit, seconds, the tool's summary) and a count at the end;
# exits 1 when any run found an error or failed a check, 3 when runs were cut off but none failed.
set -u
BUILD="${1:?usage: tests/gpu_sanitize.sh BUILD_DIR [TOOLS] [TESTS] [KERNEL_REGEX]}"
TOOLS="${2:-memcheck,initcheck,synccheck,racecheck}"
TESTS="${3:-}"
REGEX="${4:-}"
LIMIT="${SANITIZE_TIMEOUT:-1800}"
LAUNCHES="${SANITIZE_LAUNCHES:-}"
LOGS="${SANITIZE_LOGS:-$BUILD/sanitize}"
JOBS="${SANITIZE_JOBS:-$(( $(nproc) / 4 > 0 ? $(nproc) / 4 : 1 ))}"
PARTS="${SANITIZE_PARTS-test_fused=6,test_alloc_failures=8,test_knn_overlap=4,test_knn_panel=4,test_sddmm=4,test_cuda=4}"
SAN="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
[ -x "$SAN" ] || { echo "compute-sanitizer not found"; exit 2; }
if [ -z "$TESTS" ]; then
    # test_multi_gpu needs two GPUs; test_opencl has no CUDA part
    for exe in "$BUILD"/tests/test_*; do
        name=${exe##*/}
        case "$name" in *.*|test_multi_gpu|test_opencl) continue ;; esac
        [ -x "$exe" ] && TESTS="$TESTS$name,"
    done
fi
mkdir -p "$LOGS"

# One run: prints its line; the exit status says clean (0), found something or failed (1), cut off (3).
run_one() {
    local tool=$1 t=$2 part=${3:-} extra="" exe="$BUILD/tests/$2"
    case "$tool" in
        # test_device_memory takes all device memory on purpose: each cudaMalloc refused then
        # is an API error to memcheck, and the library's fallbacks after it are what it tests
        memcheck)
            extra="--leak-check full"
            [ "$t" = test_device_memory ] && extra="$extra --report-api-errors no" ;;
        racecheck) extra="--racecheck-report all" ;;
    esac
    [ -x "$exe" ] || { echo "$tool $t: not built"; return 1; }
    local log="$LOGS/$tool-$t${part:+-part$(echo "$part" | tr / -)}${REGEX:+-$(echo "$REGEX" | tr -c 'A-Za-z0-9_\n' _)}.log"
    local start=$SECONDS
    # shellcheck disable=SC2086
    SR_TEST_PART=${part:-0/1} SR_TEST_BACKENDS=cuda SR_TEST_REQUIRE_CUDA=1 OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} timeout "$LIMIT" "$SAN" --tool "$tool" $extra \
        --error-exitcode 9 ${SANITIZE_ARGS:-} ${REGEX:+--kernel-name "$REGEX"} ${LAUNCHES:+--launch-count "$LAUNCHES"} "$exe" >"$log" 2>&1
    local rc=$?
    local summary
    summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY" "$log" | tr '\n' ' ')
    local verdict=clean
    [ "$rc" -eq 124 ] && verdict=timeout
    [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$rc" -ne 77 ] && verdict=FAILED
    [ "$rc" -eq 77 ] && verdict=skipped
    echo "$tool $t${part:+ part $part}${REGEX:+ ($REGEX)}: $verdict (exit $rc), $((SECONDS - start)) s; ${summary:-no summary (see $log)}"
    if [ "$verdict" = FAILED ]; then
        # the suite's own failed checks (a run can fail them with the tool finding nothing), and
        # the kinds of what the tool found, most frequent first
        grep -m 3 "^FAIL" "$log" | sed 's/^/    /'
        grep -E "^========= [A-Z]" "$log" | grep -v -e COMPUTE-SANITIZER -e "ERROR SUMMARY" -e "LEAK SUMMARY" |
            sed 's/ at 0x[0-9a-f]*.*//; s/ of size [0-9]* bytes//' | sort | uniq -c | sort -rn | head -n 4 | sed 's/^/    /'
    fi
    case "$verdict" in FAILED) return 1 ;; timeout) return 3 ;; esac
    return 0
}

# Prints the runs' lines and the count; the exit status as the header says.
report() {
    local failed=0 cut=0 done=0 line
    for line in "$LOGS"/.line-*; do
        [ -s "$line" ] || continue
        cat "$line"
        done=$((done + 1))
        case "$(head -n 1 "$line")" in *": FAILED"*|*"not built"*) failed=$((failed + 1)) ;; *": timeout"*) cut=$((cut + 1)) ;; esac
    done
    rm -f "$LOGS"/.line-*
    echo "gpu_sanitize: $done of $runs runs finished, $failed failed or found errors, $cut cut off after ${LIMIT} s; logs in $LOGS"
    [ "$failed" -gt 0 ] && return 1
    [ "$cut" -gt 0 ] || [ "$done" -lt "$runs" ] && return 3
    return 0
}
# stopped from outside (a time box): stop the runs under way and report the ones that finished
# (each run's `timeout` passes the signal on to the tool)
stop_runs() { local j; for j in $(jobs -p); do pkill -TERM -P "$j"; kill "$j"; done 2>/dev/null; }
trap 'stop_runs; report; exit $?' TERM INT

# A suite's parts: N from NAME:N, else from SANITIZE_PARTS, else 1 (whole).
parts_of() {
    case "$1" in *:*) echo "${1##*:}"; return ;; esac
    local n
    n=$(echo ",$PARTS," | sed -n "s/.*,$1=\([0-9]*\),.*/\1/p")
    echo "${n:-1}"
}
runs=0
for t in $(echo "$TESTS" | tr ',' ' '); do runs=$((runs + $(parts_of "$t"))); done
runs=$(( runs * $(echo "$TOOLS" | tr ',' '\n' | grep -c .) ))
rm -f "$LOGS"/.line-*
for tool in $(echo "$TOOLS" | tr ',' ' '); do
    for t in $(echo "$TESTS" | tr ',' ' '); do
        n=$(parts_of "$t")
        for i in $(seq 0 $((n - 1))); do
            while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
            if [ "$n" -gt 1 ]; then
                run_one "$tool" "${t%%:*}" "$i/$n" > "$LOGS/.line-$tool-${t%%:*}-$i" &
            else
                run_one "$tool" "${t%%:*}" > "$LOGS/.line-$tool-${t%%:*}" &
            fi
        done
    done
done
wait
report
