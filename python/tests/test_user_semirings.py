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


@pytest.mark.parametrize("builtin,add,multiply", BUILTINS)
@pytest.mark.parametrize("dtype", [np.int32, np.float64])
def test_builtins_written_again_on_the_gpu(rng, builtin, add, multiply, dtype):
    """On a GPU context, from NVRTC programs: the element-wise calls, the Kronecker product, the row
    reduction, SDDMM and SpGEMM of a built-in written again give the built-in's entries bit for bit (SDDMM's
    dense operands hold small integers, so plus_times's sums are exact in any order: the built-in's
    tuned kernels add in another order than the any-semiring kernel a user semiring runs)."""
    gpu = next((ctx for name, ctx in CONTEXTS if name == "cuda"), None)
    if gpu is None:
        pytest.skip("no GPU here")
    user = sr.Semiring(f"py_gpu_{builtin}_{np.dtype(dtype).name}", add=add, multiply=multiply, dtype=dtype)
    A, B = (sr.Matrix(_random(rng, 200, 300, 0.05, dtype), context=gpu) for _ in range(2))
    S1, S2 = (sr.Matrix(_random(rng, 12, 9, 0.3, dtype), context=gpu) for _ in range(2))
    for call, args in ((sr.ewise_add, (A, B)), (sr.ewise_mult, (A, B)), (sr.kronecker, (S1, S2)),
                       (sr.reduce_rows, (A,))):
        want, got = (sp.csr_matrix(call(*args, s).to_scipy()) for s in (builtin, user))
        np.testing.assert_array_equal(got.indptr, want.indptr, err_msg=call.__name__)
        np.testing.assert_array_equal(got.indices, want.indices, err_msg=call.__name__)
        np.testing.assert_array_equal(got.data.view(np.uint8), want.data.view(np.uint8), err_msg=call.__name__)
    if dtype == np.float64:  # SDDMM's dense operands are float32 or float64 in Python
        U, V = (rng.integers(-5, 6, (n, 24)).astype(dtype) for n in (200, 300))
        want, got = (sp.csr_matrix(sr.sddmm(A, U, V, semiring=s).to_scipy()) for s in (builtin, user))
        np.testing.assert_array_equal(got.data.view(np.uint8), want.data.view(np.uint8))
    # SpGEMM on a deterministic context, where the built-in's float sums are added in A-entry order,
    # as a user product's always are
    det = sr.Context("cuda", deterministic=True)
    A2, B2 = (sr.Matrix(_random(rng, r, c, d, dtype), context=det) for r, c, d in ((200, 300, 0.05), (300, 150, 0.08)))
    mask = sr.Matrix(sp.random(200, 150, density=0.3, format="csr", random_state=rng) != 0, context=det)
    for kwargs in ({}, {"mask": mask}, {"mask": mask, "complement": True}):
        want, got = (sp.csr_matrix(sr.mxm(A2, B2, s, **kwargs).to_scipy()) for s in (builtin, user))
        np.testing.assert_array_equal(got.indptr, want.indptr, err_msg=str(kwargs))
        np.testing.assert_array_equal(got.indices, want.indices, err_msg=str(kwargs))
        np.testing.assert_array_equal(got.data.view(np.uint8), want.data.view(np.uint8), err_msg=str(kwargs))


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


def test_refusals(rng, monkeypatch):
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
    U, V = rng.standard_normal((30, 70)), rng.standard_normal((30, 70))  # K = 70: the four-set dot products
    monkeypatch.setenv("SPARSERING_SDDMM_GEMM", "0")  # the built-in's dot products, the order a user one takes
    want = sr.sddmm(A, U, V, semiring="plus_times", context=CPU)
    got = sr.sddmm(A, U, V, semiring=s, context=CPU)
    np.testing.assert_array_equal(got.data.view(np.uint8), want.data.view(np.uint8))
    B = _random(rng, 30, 30, 0.1, np.float64)
    for op in (sr.ewise_add, sr.ewise_mult):  # the built-in's entries, bit for bit
        want, got = op(A, B, "plus_times", context=CPU), op(A, B, s, context=CPU)
        np.testing.assert_array_equal(got.toarray().view(np.uint8), want.toarray().view(np.uint8))


# the built-in metrics that sum over columns, written again (metric.h's formulas)
METRICS_AGAIN = [
    ("inner_product", dict(pair="q * x", distance="acc", similarity=True)),
    ("sqeuclidean", dict(pair="q * x", norm="v * v", distance="sr_snap(nq + nx - 2.0 * acc, nq + nx)")),
    ("cosine", dict(pair="q * x", norm="v * v", distance="sr_norm_product(nq, nx) > 0.0 ? "
                    "sr_snap(sr_clamp(1.0 - acc / sr_norm_product(nq, nx), 0.0, 2.0), 1.0) : 1.0")),
    ("jaccard", dict(pair="(q != 0.0 && x != 0.0) ? 1.0 : 0.0", norm="v != 0.0 ? 1.0 : 0.0",
                     distance="nq + nx - acc > 0.0 ? 1.0 - acc / (nq + nx - acc) : 0.0")),
    ("manhattan", dict(pair="fabs(q - x)", distance="fmax(0.0, nq + nx + acc)", over_union=True)),
    ("braycurtis", dict(pair="fabs(q - x)", pair2="fabs(q + x)", over_union=True,
                        distance="nq2 + nx2 + acc2 > 0.0 ? fmax(0.0, nq + nx + acc) / (nq2 + nx2 + acc2) : 0.0")),
    ("chebyshev", dict(pair="fabs(q - x)", over_union=True, reduce="max")),
]


@pytest.mark.parametrize("builtin,definition", METRICS_AGAIN)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_builtin_metrics_written_again_give_their_bits(rng, monkeypatch, builtin, definition, dtype):
    metric = sr.Metric(f"py_again_{builtin}", **definition)
    X = _random(rng, 200, 60, 0.08, dtype)
    Q = _random(rng, 30, 60, 0.08, dtype)
    want = sr.pairwise_distances(Q, X, builtin, context=CPU)
    got = sr.pairwise_distances(Q, X, metric, context=CPU)
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    monkeypatch.setenv("SPARSERING_KNN_OVERLAP", "0")  # the built-in's dense path, the one a user metric takes
    wd, wi = sr.kneighbors(X, Q, 6, builtin, context=CPU)
    monkeypatch.delenv("SPARSERING_KNN_OVERLAP")
    gd, gi = sr.kneighbors(X, Q, 6, metric, context=CPU)
    np.testing.assert_array_equal(gi, wi)
    np.testing.assert_array_equal(gd.view(np.uint8), wd.view(np.uint8))


@pytest.mark.parametrize("builtin,definition", METRICS_AGAIN)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_builtin_metrics_written_again_give_their_bits_on_the_gpu(rng, builtin, definition, dtype):
    """NVRTC's program of the user metric against the built-in, on a deterministic GPU context
    (sums in a fixed order): pairwise distances, and k-NN (the user's on the distance block, the
    built-in's on its tiles)."""
    if not any(name == "cuda" for name, _ in CONTEXTS):
        pytest.skip("no GPU here")
    gpu = sr.Context("cuda", deterministic=True)
    metric = sr.Metric(f"py_again_{builtin}", **definition)
    X = sr.Matrix(_random(rng, 200, 60, 0.08, dtype), context=gpu)
    Q = sr.Matrix(_random(rng, 30, 60, 0.08, dtype), context=gpu)
    want = np.asarray(sr.pairwise_distances(Q, X, builtin, context=gpu))
    got = np.asarray(sr.pairwise_distances(Q, X, metric, context=gpu))
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    wd, wi = sr.kneighbors(X, Q, 6, builtin, context=gpu)
    gd, gi = sr.kneighbors(X, Q, 6, metric, context=gpu)
    np.testing.assert_array_equal(np.asarray(gi), np.asarray(wi))
    np.testing.assert_array_equal(np.asarray(gd).view(np.uint8), np.asarray(wd).view(np.uint8))


def test_weighted_jaccard_knn_on_tfidf():
    """The docs' example: weighted Jaccard (1 - Σmin/Σmax) k-NN on TF-IDF rows, against numpy."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    docs = ["sparse matrices on the gpu", "semirings for sparse distances", "k nearest neighbours on sparse data",
            "the gpu computes distances", "graphs as sparse matrices", "neighbours of neighbours in graphs"]
    X = TfidfVectorizer().fit_transform(docs)
    X.sort_indices()
    wj = sr.Metric("weighted_jaccard", pair="fmin(q, x)", norm="v",
                   distance="nq + nx - acc > 0 ? 1 - acc / (nq + nx - acc) : 0")
    nn = sr.NearestNeighbors(n_neighbors=3, metric=wj, context=CPU).fit(X)
    dist, ind = nn.kneighbors(X)
    D = X.toarray()
    want = np.array([[1 - np.minimum(a, b).sum() / np.maximum(a, b).sum() for b in D] for a in D])
    np.testing.assert_allclose(np.take_along_axis(want, ind, 1), dist, rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.sort(want, 1)[:, :3], dist, rtol=0, atol=1e-12)
    assert pickle.loads(pickle.dumps(wj)) == wj


def test_a_maximum_pickles_and_matches_scipy(rng):
    """reduce="max" over the union: chebyshev written again against scipy's, through a pickle."""
    from scipy.spatial.distance import cdist
    cheb = pickle.loads(pickle.dumps(sr.Metric("py_chebyshev", pair="fabs(q - x)", over_union=True, reduce="max")))
    assert cheb.reduce == "max" and "reduce='max'" in repr(cheb)
    X = _random(rng, 50, 30, 0.1, np.float64)
    np.testing.assert_allclose(sr.pairwise_distances(X, metric=cheb, context=CPU),
                               cdist(X.toarray(), X.toarray(), "chebyshev"), rtol=0, atol=1e-15)


def test_metric_refusals(rng):
    with pytest.raises(sr.InvalidArgumentError, match="does not compile"):
        sr.Metric("broken_metric_py", pair="q ** x")
    with pytest.raises(sr.InvalidArgumentError, match="built-in metric"):
        sr.Metric("cosine", pair="q * x")
    with pytest.raises(TypeError, match="sparsering.Metric"):
        sr.pairwise_distances(sp.eye(3, format="csr"), metric=42, context=CPU)
    with pytest.raises(sr.InvalidArgumentError, match="expected plus or max"):
        sr.Metric("smallest_py", pair="q * x", reduce="min")


def test_a_maximum_runs_where_the_data_is(rng):
    """A maximum over the union on every backend: the GPU's (a warp a pair) gives the CPU's answer."""
    m = sr.Metric("largest_gap_py", pair="fabs(q - x) * (1.0 + fabs(q))", over_union=True, reduce="max")
    X = _random(rng, 40, 12, 0.3, np.float32)
    want_d, want_i = sr.kneighbors(X, None, 3, m, context=CPU)
    for name, ctx in CONTEXTS:
        d, i = sr.kneighbors(sr.Matrix(X, context=ctx), None, 3, m)
        np.testing.assert_array_equal(np.asarray(i), want_i, err_msg=name)
        np.testing.assert_array_equal(np.asarray(d), want_d, err_msg=name)
