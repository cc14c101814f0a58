#!/bin/sh
# SR_TEST_PART splits a suite into parts (tests/gpu_sanitize.sh runs the long suites so): each part
# passes, every part is asked about the same checks, and together they run each check once.
# usage: tests/test_parts.sh SUITE_EXE PARTS   (runs the suite's CPU part: SR_TEST_BACKENDS=cpu)
exe=$1
n=$2
total=0 asked=""
i=0
while [ "$i" -lt "$n" ]; do
    out=$(SR_TEST_BACKENDS=cpu SR_TEST_PART=$i/$n "$exe" 2>&1) || { echo "$out"; echo "FAIL: part $i/$n failed"; exit 1; }
    line=$(echo "$out" | grep " part $i/$n ran ")
    [ -n "$line" ] || { echo "$out" | tail -n 5; echo "FAIL: part $i/$n printed no count"; exit 1; }
    echo "$line"
    ran=$(echo "$line" | sed 's/.* ran \([0-9]*\) of \([0-9]*\) checks/\1/')
    of=$(echo "$line" | sed 's/.* ran \([0-9]*\) of \([0-9]*\) checks/\2/')
    [ "$ran" -gt 0 ] || { echo "FAIL: part $i/$n ran no check"; exit 1; }
    [ -z "$asked" ] || [ "$asked" = "$of" ] || { echo "FAIL: part $i/$n was asked about $of checks, part 0 about $asked"; exit 1; }
    asked=$of
    total=$((total + ran))
    i=$((i + 1))
done
[ "$total" = "$asked" ] || { echo "FAIL: the $n parts ran $total checks of $asked"; exit 1; }
echo "$n parts ran each of the $asked checks once"
