#!/bin/sh
# The command-line program: exit codes, info, convert round trips, demo.
# usage: test_cli.sh PATH/TO/sparsering TMPDIR [DATA_DIR]
cli="$1"; tmp="$2/cli_$$"; data="$3"
mkdir -p "$tmp"
failures=0
expect() { # expect CODE command...
    want="$1"; shift
    "$@" >"$tmp/out" 2>"$tmp/err"; got=$?
    if [ "$got" -ne "$want" ]; then
        echo "FAIL: '$*' exited $got, expected $want"; cat "$tmp/err"; failures=$((failures + 1))
    fi
}
expect 0 "$cli" --help
# every command's --help (and -h, and help COMMAND) prints its own usage and exits 0
for c in info convert knn knn-graph radius bool pagerank closure reach cfpq sddmm mxm factorize fused ridge logistic demo; do
    expect 0 "$cli" "$c" --help
    grep -q "^  $c " "$tmp/out" || { echo "FAIL: $c --help: $(cat "$tmp/out")"; failures=$((failures + 1)); }
    expect 0 "$cli" "$c" -h
    expect 0 "$cli" help "$c"
done
expect 0 "$cli" --version
grep -q "^sparsering [0-9]" "$tmp/out" || { echo "FAIL: --version: $(cat "$tmp/out")"; failures=$((failures + 1)); }
expect 2 "$cli" help nosuch
grep -q "exit codes" "$tmp/out" || { echo "FAIL: --help lacks exit codes"; failures=$((failures + 1)); }
expect 2 "$cli"
expect 2 "$cli" frobnicate
expect 2 "$cli" --backend tpu info x.mtx
expect 2 "$cli" convert only-one.mtx
expect 3 "$cli" info "$tmp/missing.mtx"
printf '%%%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1.0\n' > "$tmp/short.mtx"
expect 3 "$cli" info "$tmp/short.mtx"
grep -q "short.mtx: the file ends after 1 of the 2 entries" "$tmp/err" || { echo "FAIL: message: $(cat "$tmp/err")"; failures=$((failures + 1)); }

printf '%%%%MatrixMarket matrix coordinate real general\n%% a comment\n3 4 4\n1 2 1.5\n3 1 -2\n3 4 7\n2 2 0.25\n' > "$tmp/a.mtx"
expect 0 "$cli" --backend cpu info "$tmp/a.mtx"
grep -q "shape:         3 x 4" "$tmp/out" || { echo "FAIL: info shape"; cat "$tmp/out"; failures=$((failures + 1)); }
expect 0 "$cli" convert "$tmp/a.mtx" "$tmp/at.mtx.gz" --transpose --type float32
expect 0 "$cli" convert "$tmp/at.mtx.gz" "$tmp/att.mtx" --transpose --type float64
expect 0 "$cli" info "$tmp/att.mtx"
grep -q "shape:         3 x 4" "$tmp/out" || { echo "FAIL: transposed twice"; failures=$((failures + 1)); }
grep -v '^%' "$tmp/att.mtx" | sort > "$tmp/got"; grep -v '^%' "$tmp/a.mtx" | sort > "$tmp/want"
# values print in shortest form: 1.5, -2, 7, 0.25 survive float32 exactly
cmp -s "$tmp/got" "$tmp/want" || { echo "FAIL: round trip differs"; diff "$tmp/got" "$tmp/want"; failures=$((failures + 1)); }
expect 2 "$cli" convert "$tmp/a.mtx" "$tmp/b.mtx" --symmetric   # not square: a usage error with a message
[ ! -e "$tmp/b.mtx" ] || { echo "FAIL: failed convert left a file"; failures=$((failures + 1)); }
expect 1 "$cli" convert "$tmp/a.mtx" "/nonexistent-dir/b.mtx"

"$cli" --backend cuda version >/dev/null 2>&1
expect 0 "$cli" demo --rows 3000 --cols 2000 --degree 8
grep -q "document 0:  0 (0.0000)" "$tmp/out" || { echo "FAIL: demo: a document is not its own nearest"; cat "$tmp/out"; failures=$((failures + 1)); }
# knn on a small known case: rows 0 and 2 of q.mtx are identical
printf '%%%%MatrixMarket matrix coordinate real general\n3 3 5\n1 1 1\n1 2 2\n2 3 4\n3 1 1\n3 2 2\n' > "$tmp/q.mtx"
expect 0 "$cli" --backend cpu knn "$tmp/q.mtx" --metric manhattan -k 2 --out "$tmp/knn.tsv"
[ "$(grep -vc '^#' "$tmp/knn.tsv")" -eq 6 ] || { echo "FAIL: knn wrote $(grep -vc '^#' "$tmp/knn.tsv") rows"; failures=$((failures + 1)); }
grep -q "^0	2	2	0$" "$tmp/knn.tsv" || { echo "FAIL: knn: row 2 is row 0's twin"; cat "$tmp/knn.tsv"; failures=$((failures + 1)); }
grep -q "^1	2	0	7$" "$tmp/knn.tsv" || { echo "FAIL: knn: manhattan(row 1, row 0) = 7"; cat "$tmp/knn.tsv"; failures=$((failures + 1)); }
# --precision: float32 distances (exact and tf32 may use tensor cores on a GPU), float64 the default
expect 0 "$cli" --backend cpu knn "$tmp/q.mtx" --metric manhattan -k 2 --precision exact --out "$tmp/knn32.tsv"
cmp -s "$tmp/knn.tsv" "$tmp/knn32.tsv" || { echo "FAIL: knn --precision exact differs on small integers"; diff "$tmp/knn.tsv" "$tmp/knn32.tsv"; failures=$((failures + 1)); }
expect 2 "$cli" knn "$tmp/q.mtx" --precision fp8
expect 2 "$cli" knn-graph "$tmp/q.mtx" --precision fp8
expect 2 "$cli" knn "$tmp/q.mtx" --metric nope
expect 2 "$cli" knn "$tmp/q.mtx" -k 4
# found by fuzz/fuzz_cli.c: a k past int64 overflowed the result size; knn-graph's k + 1 overflowed
expect 2 "$cli" knn "$tmp/q.mtx" -k 99999999999999999999999
expect 2 "$cli" knn-graph "$tmp/q.mtx" -k 99999999999999999999999
# found by fuzz_cli: Minkowski p = 3.4e28 converted to int (undefined); logistic C = 4.2e102 never
# left Steihaug's CG loop
expect 0 "$cli" knn "$tmp/q.mtx" --metric minkowski --p 3.4e28 -k 1
expect 3 "$cli" knn "$tmp/missing.mtx"
# knn-graph: each row's nearest other row; rows 0 and 2 are twins (distance 0 kept as an entry)
expect 0 "$cli" --backend cpu knn-graph "$tmp/q.mtx" --metric manhattan -k 1 --mode distance --out "$tmp/g.mtx"
grep -q "^3 3 3$" "$tmp/g.mtx" || { echo "FAIL: knn-graph: 3 edges expected"; cat "$tmp/g.mtx"; failures=$((failures + 1)); }
grep -q "^1 3 0$" "$tmp/g.mtx" && grep -q "^3 1 0$" "$tmp/g.mtx" ||
    { echo "FAIL: knn-graph: rows 0 and 2 are each other's nearest at 0"; cat "$tmp/g.mtx"; failures=$((failures + 1)); }
expect 2 "$cli" knn-graph "$tmp/q.mtx" -k 3
expect 2 "$cli" knn-graph "$tmp/q.mtx" --mode weights
# radius: manhattan distances are 0 (rows 0, 2), 7 (rows 0, 1 and 1, 2); within 3 only the twins
expect 0 "$cli" --backend cpu radius "$tmp/q.mtx" --metric manhattan --radius 3 --out "$tmp/r.mtx"
grep -q "^3 3 2$" "$tmp/r.mtx" && grep -q "^1 3 0$" "$tmp/r.mtx" && grep -q "^3 1 0$" "$tmp/r.mtx" ||
    { echo "FAIL: radius 3: the twins' pair (both ways) expected"; cat "$tmp/r.mtx"; failures=$((failures + 1)); }
expect 0 "$cli" --backend cpu radius "$tmp/q.mtx" --metric manhattan --radius 7 --mode connectivity --include-self --out "$tmp/r.mtx"
grep -q "^3 3 9$" "$tmp/r.mtx" || { echo "FAIL: radius 7 with self: all 9 pairs expected"; cat "$tmp/r.mtx"; failures=$((failures + 1)); }
expect 2 "$cli" radius "$tmp/q.mtx"
expect 2 "$cli" radius "$tmp/q.mtx" --radius nan
expect 2 "$cli" radius "$tmp/q.mtx" --radius 1 --queries "$tmp/q.mtx" --include-self
"$cli" --backend cuda demo --rows 10 --cols 10 --degree 2 >"$tmp/out" 2>&1; code=$?
[ "$code" -eq 0 ] || [ "$code" -eq 4 ] || { echo "FAIL: --backend cuda demo exited $code"; failures=$((failures + 1)); }
if [ -n "$data" ] && [ -f "$data/malformed-mtx/mangled14.mtx" ]; then
    expect 3 "$cli" info "$data/malformed-mtx/mangled14.mtx"
    expect 0 "$cli" info "$data/graphs/karate.mtx.gz"
fi

# Boolean operations and graph queries on a small graph written here: 0->1->2->3, 3->1
printf '%%%%MatrixMarket matrix coordinate pattern general\n4 4 4\n1 2\n2 3\n3 4\n4 2\n' > "$tmp/g.mtx"
expect 2 "$cli" bool frobnicate "$tmp/g.mtx"
expect 2 "$cli" bool mxm "$tmp/g.mtx"
expect 0 "$cli" bool mxm "$tmp/g.mtx" "$tmp/g.mtx" --out "$tmp/g2.mtx"
grep -q "4 x 4, 4 entries" "$tmp/out" || { echo "FAIL: bool mxm: $(cat "$tmp/out")"; failures=$((failures + 1)); }
expect 0 "$cli" bool add "$tmp/g.mtx" "$tmp/g2.mtx" --mask "$tmp/g.mtx" --complement
grep -q "4 x 4, 4 entries" "$tmp/out" || { echo "FAIL: bool add: $(cat "$tmp/out")"; failures=$((failures + 1)); }
expect 0 "$cli" bool kron "$tmp/g.mtx" "$tmp/g.mtx"
grep -q "16 x 16, 16 entries" "$tmp/out" || { echo "FAIL: bool kron: $(cat "$tmp/out")"; failures=$((failures + 1)); }
expect 0 "$cli" bool extract "$tmp/g.mtx" --rows 1:3 --cols 0:4
grep -q "3 x 4, 3 entries" "$tmp/out" || { echo "FAIL: bool extract: $(cat "$tmp/out")"; failures=$((failures + 1)); }
expect 2 "$cli" bool extract "$tmp/g.mtx" --rows 3:3 --cols 0:4
expect 0 "$cli" bool equal "$tmp/g.mtx" "$tmp/g.mtx"
expect 1 "$cli" bool equal "$tmp/g.mtx" "$tmp/g2.mtx"
expect 0 "$cli" closure "$tmp/g.mtx" --method squaring
grep -q "closure: 12 pairs" "$tmp/out" || { echo "FAIL: closure: $(cat "$tmp/out")"; failures=$((failures + 1)); }
# PageRank on the same graph: ranks sum to 1, the best vertex first; bad damping is a usage error
expect 0 "$cli" pagerank "$tmp/g.mtx" --top 2 --out "$tmp/ranks.txt"
grep -q "^pagerank: 4 vertices" "$tmp/out" || { echo "FAIL: pagerank: $(cat "$tmp/out")"; failures=$((failures + 1)); }
awk '{ s += $1 } END { exit (s > 0.999999 && s < 1.000001) ? 0 : 1 }' "$tmp/ranks.txt" ||
    { echo "FAIL: pagerank ranks do not sum to 1: $(cat "$tmp/ranks.txt")"; failures=$((failures + 1)); }
expect 2 "$cli" pagerank "$tmp/g.mtx" --damping 1.5
expect 0 "$cli" pagerank "$tmp/g.mtx" --top 0
grep -q "^pagerank: 4 vertices" "$tmp/out" || { echo "FAIL: pagerank --top 0: $(cat "$tmp/out")"; failures=$((failures + 1)); }
expect 0 "$cli" reach "$tmp/g.mtx" --sources 2,0
grep -q "reach: 7 pairs" "$tmp/out" || { echo "FAIL: reach: $(cat "$tmp/out")"; failures=$((failures + 1)); }
expect 2 "$cli" reach "$tmp/g.mtx"
# the OpenCL backend: the same answers as the CPU's where a device is found, else exit code 4
expect 2 "$cli" --device x bool nnz "$tmp/g.mtx"
if "$cli" --backend opencl bool nnz "$tmp/g.mtx" >/dev/null 2>&1; then
    expect 0 "$cli" --backend opencl bool mxm "$tmp/g.mtx" "$tmp/g.mtx" --out "$tmp/g2_ocl.mtx"
    grep -q "opencl backend" "$tmp/out" || { echo "FAIL: opencl mxm: $(cat "$tmp/out")"; failures=$((failures + 1)); }
    cmp -s "$tmp/g2.mtx" "$tmp/g2_ocl.mtx" || { echo "FAIL: opencl mxm differs from cpu"; failures=$((failures + 1)); }
    expect 0 "$cli" --backend opencl closure "$tmp/g.mtx"
    grep -q "closure: 12 pairs" "$tmp/out" || { echo "FAIL: opencl closure: $(cat "$tmp/out")"; failures=$((failures + 1)); }
    expect 4 "$cli" --backend opencl --device 99 bool nnz "$tmp/g.mtx"
else
    expect 4 "$cli" --backend opencl bool nnz "$tmp/g.mtx"
fi
printf 'S -> a S b | a b\n' > "$tmp/anbn.txt"
printf '0 1 a\n1 2 a\n2 3 b\n3 4 b\n' > "$tmp/edges.txt"
expect 0 "$cli" cfpq "$tmp/anbn.txt" --graph "$tmp/edges.txt"
grep -q "cfpq: 2 pairs" "$tmp/out" || { echo "FAIL: cfpq: $(cat "$tmp/out")"; failures=$((failures + 1)); }
printf 'S -> a\nbroken line\n' > "$tmp/bad.txt"
expect 3 "$cli" cfpq "$tmp/bad.txt" --graph "$tmp/edges.txt"
grep -q "line 2" "$tmp/err" || { echo "FAIL: cfpq error lacks the line"; failures=$((failures + 1)); }
# Sampled products: S (2 x 3), A (2 x 2), B (3 x 2), V (3 x 1); S .* (A B^T) = {(0,0): 1, (0,2): 6, (1,1): 4}
printf '%%%%MatrixMarket matrix coordinate real general\n2 3 3\n1 1 1\n1 3 2\n2 2 1\n' > "$tmp/s.mtx"
printf '%%%%MatrixMarket matrix array real general\n2 2\n1\n3\n2\n4\n' > "$tmp/a.mtx"
printf '%%%%MatrixMarket matrix array real general\n3 2\n1\n0\n1\n0\n1\n1\n' > "$tmp/b.mtx"
printf '%%%%MatrixMarket matrix array real general\n3 1\n1\n2\n3\n' > "$tmp/v.mtx"
expect 0 "$cli" sddmm "$tmp/s.mtx" "$tmp/a.mtx" "$tmp/b.mtx" --out "$tmp/c.mtx"
grep -q "^1 3 6" "$tmp/c.mtx" && grep -q "^2 2 4" "$tmp/c.mtx" || { echo "FAIL: sddmm values: $(cat "$tmp/c.mtx")"; failures=$((failures + 1)); }
expect 0 "$cli" sddmm "$tmp/s.mtx" "$tmp/a.mtx" "$tmp/b.mtx" --spmm "$tmp/v.mtx" --out "$tmp/o.mtx"
[ "$(grep -v '^%' "$tmp/o.mtx" | tr -s ' \n' ' ')" = "2 1 19 8 " ] || { echo "FAIL: fused sddmm: $(cat "$tmp/o.mtx")"; failures=$((failures + 1)); }
# mxm under a user semiring from a definition file: the built-in max_min's product, and refusals
printf '%%%%MatrixMarket matrix coordinate real general\n4 4 6\n1 2 5\n2 3 2\n1 3 1\n3 4 7\n2 4 3\n4 1 4\n' > "$tmp/g.mtx"
printf '# widest paths\nname = widest\nadd = max\nmultiply = x < y ? x : y\ntype = float64\n' > "$tmp/widest.def"
export SPARSERING_JIT_CACHE="$tmp/jit"
expect 0 "$cli" --backend cpu mxm "$tmp/g.mtx" "$tmp/g.mtx" --semiring max_min --out "$tmp/builtin.mtx"
expect 0 "$cli" --backend cpu mxm "$tmp/g.mtx" "$tmp/g.mtx" --semiring-file "$tmp/widest.def" --out "$tmp/user.mtx"
grep -q "user-defined" "$tmp/out" || { echo "FAIL: mxm user semiring: $(cat "$tmp/out")"; failures=$((failures + 1)); }
cmp -s "$tmp/builtin.mtx" "$tmp/user.mtx" || { echo "FAIL: mxm widest differs from max_min"; diff "$tmp/builtin.mtx" "$tmp/user.mtx"; failures=$((failures + 1)); }
grep -q "^1 3 2" "$tmp/user.mtx" || { echo "FAIL: mxm widest values: $(cat "$tmp/user.mtx")"; failures=$((failures + 1)); }
# sddmm under the same semiring from its file: max over k of min(A(i, k), B(j, k)), then min with S's value
expect 0 "$cli" --backend cpu sddmm "$tmp/s.mtx" "$tmp/a.mtx" "$tmp/b.mtx" --semiring max_min --float64 --out "$tmp/c1.mtx"
expect 0 "$cli" --backend cpu sddmm "$tmp/s.mtx" "$tmp/a.mtx" "$tmp/b.mtx" --semiring-file "$tmp/widest.def" --out "$tmp/c2.mtx"
cmp -s "$tmp/c1.mtx" "$tmp/c2.mtx" || { echo "FAIL: sddmm widest differs from max_min"; diff "$tmp/c1.mtx" "$tmp/c2.mtx"; failures=$((failures + 1)); }
grep -q "^1 3 1" "$tmp/c2.mtx" && grep -q "^2 2 1" "$tmp/c2.mtx" || { echo "FAIL: sddmm widest values: $(cat "$tmp/c2.mtx")"; failures=$((failures + 1)); }
expect 2 "$cli" --backend cpu sddmm "$tmp/s.mtx" "$tmp/a.mtx" "$tmp/b.mtx" --semiring-file "$tmp/widest.def" --spmm "$tmp/v.mtx"
printf 'name = broken\nadd = plus\nmultiply = x ** y\n' > "$tmp/broken.def"
expect 2 "$cli" --backend cpu mxm "$tmp/g.mtx" "$tmp/g.mtx" --semiring-file "$tmp/broken.def"
grep -q "does not compile" "$tmp/err" && grep -q "x \*\* y" "$tmp/err" || { echo "FAIL: mxm broken: $(cat "$tmp/err")"; failures=$((failures + 1)); }
printf 'name = typo\nadd = plus\nmultiplx = x\n' > "$tmp/typo.def"
expect 3 "$cli" --backend cpu mxm "$tmp/g.mtx" "$tmp/g.mtx" --semiring-file "$tmp/typo.def"
expect 2 "$cli" mxm "$tmp/g.mtx" "$tmp/g.mtx" --semiring no_such
# a user metric from a file: cosine written again gives the built-in's dense path's lines
awk 'BEGIN { srand(3); print "%%MatrixMarket matrix coordinate real general"; print 200, 40, 1000;
             for (i = 1; i <= 200; i++) for (k = 0; k < 5; k++) print i, k * 8 + int(rand() * 8) + 1, rand() + 0.1 }' > "$tmp/d.mtx"
printf 'name = cosine_again\npair = q * x\nnorm = v * v\ndistance = sr_norm_product(nq, nx) > 0.0 ? sr_snap(sr_clamp(1.0 - acc / sr_norm_product(nq, nx), 0.0, 2.0), 1.0) : 1.0\n' > "$tmp/cos.def"
export SPARSERING_KNN_OVERLAP=0 # the built-in's dense path: the one a user metric takes
expect 0 "$cli" --backend cpu knn "$tmp/d.mtx" --metric cosine -k 4 --out "$tmp/k1.txt"
unset SPARSERING_KNN_OVERLAP
expect 0 "$cli" --backend cpu knn "$tmp/d.mtx" --metric-file "$tmp/cos.def" -k 4 --out "$tmp/k2.txt"
cmp -s "$tmp/k1.txt" "$tmp/k2.txt" || { echo "FAIL: knn --metric-file differs from cosine"; failures=$((failures + 1)); }
expect 0 "$cli" --backend cpu knn-graph "$tmp/d.mtx" --metric "@$tmp/cos.def" -k 3 --out "$tmp/g1.mtx"
expect 0 "$cli" --backend cpu radius "$tmp/d.mtx" --radius 0.5 --metric-file "$tmp/cos.def" --out "$tmp/r1.mtx"
printf 'name = chebyshev_again\npair = fabs(q - x)\nover = union\nreduce = max\n' > "$tmp/cheb.def"
export SPARSERING_KNN_OVERLAP=0
expect 0 "$cli" --backend cpu knn "$tmp/d.mtx" --metric chebyshev -k 4 --out "$tmp/k3.txt"
unset SPARSERING_KNN_OVERLAP
expect 0 "$cli" --backend cpu knn "$tmp/d.mtx" --metric-file "$tmp/cheb.def" -k 4 --out "$tmp/k4.txt"
cmp -s "$tmp/k3.txt" "$tmp/k4.txt" || { echo "FAIL: knn chebyshev --metric-file differs from chebyshev"; failures=$((failures + 1)); }
printf 'name = bad_over\npair = q * x\nover = everywhere\n' > "$tmp/over.def"
expect 3 "$cli" --backend cpu knn "$tmp/d.mtx" --metric-file "$tmp/over.def"
printf 'name = bad_pair\npair = q ** x\n' > "$tmp/badpair.def"
expect 2 "$cli" --backend cpu knn "$tmp/d.mtx" --metric-file "$tmp/badpair.def"
grep -q "does not compile" "$tmp/err" || { echo "FAIL: knn bad pair: $(cat "$tmp/err")"; failures=$((failures + 1)); }
unset SPARSERING_JIT_CACHE
expect 2 "$cli" sddmm "$tmp/s.mtx" "$tmp/b.mtx" "$tmp/a.mtx"
expect 2 "$cli" sddmm "$tmp/s.mtx" "$tmp/a.mtx" "$tmp/b.mtx" --softmax
expect 2 "$cli" sddmm "$tmp/s.mtx" "$tmp/a.mtx" "$tmp/b.mtx" --semiring nosuch
# Factorization of a small ratings file (a header line, then user,item,rating)
{ echo "userId,movieId,rating"; for u in 1 2 3 4 5 6 7 8; do for i in 10 20 30 40 50; do echo "$u,$i,$(( (u * i / 10) % 5 + 1 ))"; done; done; } > "$tmp/r.csv"
expect 0 "$cli" factorize "$tmp/r.csv" --rank 2 --iterations 3 --test-fraction 0.2 --factors "$tmp/f"
grep -q "8 users x 5 items" "$tmp/out" && [ -f "$tmp/f.items.mtx" ] || { echo "FAIL: factorize: $(cat "$tmp/out")"; failures=$((failures + 1)); }
printf 'userId,movieId,rating\n1,2,3\n1;2;3\n' > "$tmp/bad.csv"
expect 3 "$cli" factorize "$tmp/bad.csv"
grep -q "bad.csv:3" "$tmp/err" || { echo "FAIL: factorize error lacks the line: $(cat "$tmp/err")"; failures=$((failures + 1)); }
expect 2 "$cli" factorize "$tmp/r.csv" --test-fraction 1.5
expect 2 "$cli" factorize "$tmp/r.csv" --rank -2   # found by fuzz_cli: a negative rank sized the factors
echo "userId,movieId,rating" > "$tmp/header.csv"   # found by fuzz_cli: no ratings copied from NULL
expect 3 "$cli" factorize "$tmp/header.csv"
grep -q 'no "user,item,rating" lines' "$tmp/err" || { echo "FAIL: factorize of no ratings: $(cat "$tmp/err")"; failures=$((failures + 1)); }
expect 3 "$cli" factorize "$tmp"
# The fused pattern and the solvers: X = [1 2; 0 3; 4 0]; X^T (X [1 1]) = [19 15], X^T [1 2 3] = [13 8]
printf '%%%%MatrixMarket matrix coordinate real general\n3 2 4\n1 1 1\n1 2 2\n2 2 3\n3 1 4\n' > "$tmp/x.mtx"
printf '1\n1\n' > "$tmp/y2.txt"
printf '# three\n1\n2\n3\n' > "$tmp/y3.txt"
expect 0 "$cli" fused "$tmp/x.mtx" "$tmp/y2.txt"
[ "$(tr '\n' ' ' < "$tmp/out")" = "19 15 " ] || { echo "FAIL: fused: $(cat "$tmp/out")"; failures=$((failures + 1)); }
expect 0 "$cli" fused "$tmp/x.mtx" "$tmp/y3.txt" --form xty
[ "$(tr '\n' ' ' < "$tmp/out")" = "13 8 " ] || { echo "FAIL: fused xty: $(cat "$tmp/out")"; failures=$((failures + 1)); }
expect 2 "$cli" fused "$tmp/x.mtx" "$tmp/y3.txt"
grep -q "needs 2" "$tmp/err" || { echo "FAIL: fused length error: $(cat "$tmp/err")"; failures=$((failures + 1)); }
printf '1\nx\n' > "$tmp/ybad.txt"
expect 3 "$cli" fused "$tmp/x.mtx" "$tmp/ybad.txt"
grep -q "ybad.txt:2" "$tmp/err" || { echo "FAIL: fused parse error lacks the line"; failures=$((failures + 1)); }
expect 0 "$cli" ridge "$tmp/x.mtx" "$tmp/y3.txt" --lambda 0.5 --out "$tmp/w.txt"
[ "$(wc -l < "$tmp/w.txt")" -eq 2 ] || { echo "FAIL: ridge wrote $(cat "$tmp/w.txt")"; failures=$((failures + 1)); }
expect 0 "$cli" ridge "$tmp/x.mtx" "$tmp/y3.txt" --lambda 0.5 --plain-cg --out "$tmp/w_plain.txt"
paste "$tmp/w.txt" "$tmp/w_plain.txt" | awk '{ d = $1 - $2; if (d < 0) d = -d; s = $2 < 0 ? -$2 : $2; if (d > 1e-8 * (s + 1e-8)) bad = 1; n++ } END { exit (bad || n != 2) }' \
    || { echo "FAIL: ridge --plain-cg differs from the preconditioned solve"; failures=$((failures + 1)); }
# --deterministic: the same coefficients as a second deterministic run, and close to the default's
expect 0 "$cli" --deterministic ridge "$tmp/x.mtx" "$tmp/y3.txt" --lambda 0.5 --out "$tmp/w_det.txt"
expect 0 "$cli" --deterministic ridge "$tmp/x.mtx" "$tmp/y3.txt" --lambda 0.5 --out "$tmp/w_det2.txt"
cmp -s "$tmp/w_det.txt" "$tmp/w_det2.txt" || { echo "FAIL: two --deterministic ridge runs differ"; failures=$((failures + 1)); }
paste "$tmp/w.txt" "$tmp/w_det.txt" | awk '{ d = $1 - $2; if (d < 0) d = -d; s = $2 < 0 ? -$2 : $2; if (d > 1e-8 * (s + 1e-8)) bad = 1; n++ } END { exit (bad || n != 2) }' \
    || { echo "FAIL: ridge --deterministic differs from the default"; failures=$((failures + 1)); }
printf '1\nnan\n3\n' > "$tmp/y_nan.txt" # refused with its place, not solved to zeros
expect 2 "$cli" ridge "$tmp/x.mtx" "$tmp/y_nan.txt"
grep -q "y holds NaN at 1" "$tmp/err" || { echo "FAIL: ridge with NaN in y: $(cat "$tmp/err")"; failures=$((failures + 1)); }
printf '1\n-1\n1\n' > "$tmp/labels.txt"
expect 0 "$cli" logistic "$tmp/x.mtx" "$tmp/labels.txt" --C 2 --plain-cg
expect 0 "$cli" logistic "$tmp/x.mtx" "$tmp/labels.txt" --C 2
expect 0 timeout 20 "$cli" logistic "$tmp/x.mtx" "$tmp/labels.txt" --C 4.2e102 --max-iter 1  # once a hang
expect 0 "$cli" ridge "$tmp/x.mtx" "$tmp/y3.txt" --fit-intercept
grep -q "^intercept " "$tmp/out" || { echo "FAIL: ridge --fit-intercept: $(cat "$tmp/out")"; failures=$((failures + 1)); }
expect 2 "$cli" logistic "$tmp/x.mtx" "$tmp/y3.txt"
grep -q "label 1 is 2" "$tmp/err" || { echo "FAIL: logistic label error: $(cat "$tmp/err")"; failures=$((failures + 1)); }
# A size line of 3,000,000,000 rows and one entry: refused with the memory it needs, not killed
printf '%%%%MatrixMarket matrix coordinate real general\n3000000000 5 1\n1 1 1.5\n' > "$tmp/huge.mtx"
expect 1 "$cli" info "$tmp/huge.mtx"
grep -q "host memory limit of at least" "$tmp/err" || { echo "FAIL: huge info: $(cat "$tmp/err")"; failures=$((failures + 1)); }
expect 2 "$cli" --host-memory 5X info "$tmp/huge.mtx"
# Ctrl-C: a long k-NN stops at its next batch, exits 130 and says so (skipped if it ends first)
awk 'BEGIN { srand(7); n = 30000; print "%%MatrixMarket matrix coordinate real general"; print n, 3000, n * 40;
             for (i = 1; i <= n; i++) for (k = 0; k < 40; k++) print i, k * 75 + int(rand() * 75) + 1, rand() + 0.1 }' \
    > "$tmp/long.mtx"
"$cli" --backend cpu knn "$tmp/long.mtx" -k 5 --out "$tmp/long.out" >"$tmp/out" 2>"$tmp/err" &
pid=$!
sleep 1
kill -INT "$pid" 2>/dev/null
wait "$pid"; code=$?
if [ "$code" -eq 130 ]; then
    grep -q "interrupted" "$tmp/err" || { echo "FAIL: Ctrl-C: $(cat "$tmp/err")"; failures=$((failures + 1)); }
elif [ "$code" -ne 0 ]; then
    echo "FAIL: Ctrl-C'd knn exited $code: $(cat "$tmp/err")"; failures=$((failures + 1))
else
    echo "skip: the k-NN ended before Ctrl-C"
fi
rm -rf "$tmp"
if [ "$failures" -ne 0 ]; then echo "test_cli: $failures FAILED"; exit 1; fi
echo "test_cli: all checks passed"
