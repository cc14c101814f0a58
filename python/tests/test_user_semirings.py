"""sr.Semiring: user semirings on the CPU backend, against the built-ins (bit for bit), a dense
reference and networkx, with their refusals."""
import pickle
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

import sparsering as sr
from conftest import CONTEXTS

CPU = sr.Context("cpu")
# the built-ins written again: (built-in, add, multiply); SR_MUL_MIN spelled as semiring.h has it
BUILTINS = [("plus_times", "plus", "x * y"), ("min_plus", "min", "x + y"), ("max_plus", "max", "x + y"),
            ("max_times", "max", "x * y"), ("min_times", "min", "x * y"),
            ("max_min", "max", "((y) < (x) || (x) != (x)) ? (y) : (x)"), ("plus_pair", "plus", "1")]


def _random(rng, rows, cols, density, dtype):
    M = sp.random(rows, cols, density=density, format="csr", random_state=rng)
    M.data = (rng.integers(1, 9, M.nnz) if dtype == np.int32 else rng.standard_normal(M.nnz)).astype(dtype)
    return M


@pytest.mark.parametrize("builtin,add,multiply", BUILTINS)
@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float64])
def test_builtins_written_again_give_their_bits(rng, builtin, add, multiply, dtype):
    user = sr.Semiring(f"py_{builtin}_{np.dtype(dtype).name}", add=add, multiply=multiply, dtype=dtype)
    A, B = _random(rng, 120, 90, 0.06, dtype), _random(rng, 90, 70, 0.06, dtype)
    mask = sp.random(120, 70, density=0.2, format="csr", random_state=rng) != 0
    want, got = sr.mxm(A, B, builtin, context=CPU), sr.mxm(A, B, user, context=CPU)
    assert (want != got).nnz == 0 and want.nnz == got.nnz
    np.testing.assert_array_equal(got.data.view(np.uint8), want.data.view(np.uint8))
    for complement in (False, True):
        w, g = (sr.mxm(A, B, s, mask=mask, complement=complement, context=CPU) for s in (builtin, user))
        np.testing.assert_array_equal(g.indices, w.indices)
        np.testing.assert_array_equal(g.data.view(np.uint8), w.data.view(np.uint8))
    w, g = (sr.mxm(A, B, s, accumulate=want, context=CPU) for s in (builtin, user))
    np.testing.assert_array_equal(g.data.view(np.uint8), w.data.view(np.uint8))
    x = np.asarray(rng.integers(1, 5, 90), dtype=dtype)
    np.testing.assert_array_equal(sr.spmv(A, x, user, context=CPU).view(np.uint8),
                                  sr.spmv(A, x, builtin, context=CPU).view(np.uint8))
    X = np.asarray(rng.integers(1, 5, (90, 33)), dtype=dtype, order="F")
    np.testing.assert_array_equal(sr.spmm(A, X, user, context=CPU).view(np.uint8),
                                  sr.spmm(A, X, builtin, context=CPU).view(np.uint8))


def test_a_viterbi_step_against_a_dense_reference(rng):
    """(max, +) over log-probabilities: one step of the Viterbi recursion, delta'_j = max_i
    delta_i + log T_ij, as the docs' example; the values are float64 and every pair is formed
    exactly once, so the answers are equal."""
    viterbi = sr.Semiring("viterbi", add="max", multiply="x + y")
    T = sp.random(50, 50, density=0.2, format="csr", random_state=rng)
    T.data = np.log(T.data + 1e-3)
    delta = np.log(rng.random(50))
    got = sr.spmv(T.T.tocsr(), delta, viterbi, context=CPU)
    Td = T.toarray()
    want = np.array([max((delta[i] + Td[i, j] for i in range(50) if Td[i, j] != 0), default=-np.inf)
                     for j in range(50)])
    np.testing.assert_array_equal(got, want)


def test_bottleneck_paths_match_networkx(rng):
    """Widest (bottleneck) paths from a vertex by (max, min) products until nothing changes, against
    networkx: the bottleneck between two vertices is the lightest edge on their path in a maximum
    spanning tree."""
    nx = pytest.importorskip("networkx")
    n = 120
    G = nx.connected_watts_strogatz_graph(n, 4, 0.1, seed=int(rng.integers(1 << 30)))
    for u, v in G.edges:
        G[u][v]["weight"] = float(rng.integers(1, 100))
    W = sp.csr_matrix(nx.to_scipy_sparse_array(G, weight="weight"))
    widest = sr.Semiring("widest", add="max", multiply="x < y ? x : y")
    best = np.full(n, -np.inf)
    best[0] = np.inf
    while True:
        step = sr.spmv(W.T.tocsr(), best, widest, context=CPU)
        new = np.maximum(best, step)
        if np.array_equal(new, best):
            break
        best = new
    T = nx.maximum_spanning_tree(G)
    for v in range(1, n):
        path = nx.shortest_path(T, 0, v)
        assert best[v] == min(T[a][b]["weight"] for a, b in zip(path, path[1:]))


def test_semirings_pickle_by_definition(rng):
    s = sr.Semiring("pickled_min_plus", add="min", multiply="x + y", dtype=np.float32)
    assert pickle.loads(pickle.dumps(s)) == s
    # in another process the definition is made again (compiled or taken from the cache)
    A = _random(rng, 40, 40, 0.1, np.float32)
    want = sr.mxm(A, A, s, context=CPU)
    code = ("import pickle, sys, sparsering as sr; s, A = pickle.loads(sys.stdin.buffer.read()); "
            "C = sr.mxm(A, A, s, context=sr.Context('cpu')); sys.stdout.buffer.write(pickle.dumps(C))")
    out = subprocess.run([sys.executable, "-c", code], input=pickle.dumps((s, A)), capture_output=True, check=True)
    got = pickle.loads(out.stdout)
    np.testing.assert_array_equal(got.toarray(), want.toarray())


def test_refusals(rng):
    with pytest.raises(sr.InvalidArgumentError, match=r"does not compile(.|\n)*x \*\* y|x \*\* y(.|\n)*does not compile"):
        sr.Semiring("broken_py", add="plus", multiply="x ** y")
    with pytest.raises(sr.InvalidArgumentError, match="needs its identity"):
        sr.Semiring("no_identity_py", add="a > b ? a : b", multiply="x * y")
    with pytest.raises(sr.InvalidArgumentError, match="built-in"):
        sr.Semiring("min_plus", add="min", multiply="x + y")
    sr.Semiring("taken_py", add="min", multiply="x + y")
    with pytest.raises(sr.InvalidArgumentError, match="defined already"):
        sr.Semiring("taken_py", add="max", multiply="x + y")
    with pytest.raises((TypeError, sr.InvalidArgumentError)):
        sr.Semiring("booleans_py", add="or", multiply="x && y", dtype=np.bool_)
    s = sr.Semiring("refused_py", add="plus", multiply="x * y")
    A = _random(rng, 30, 30, 0.1, np.float64)
    with pytest.raises(sr.SparseringError, match="does not take user semirings"):
        sr.ewise_add(A, A, s, context=CPU)
    for name, ctx in CONTEXTS:
        if name == "cuda":
            with pytest.raises(sr.SparseringError, match="runs on the CPU backend"):
                sr.mxm(sr.Matrix(A, context=ctx), A, s)
