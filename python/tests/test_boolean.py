"""Boolean algebra and graph queries against scipy / numpy sets, networkx and pyformlang."""
import os
import sys

import numpy as np
import pytest
import scipy.sparse as sp

import sparsering as sr
from conftest import BOOL_CONTEXTS, DATA

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
from cfpq_graphs import cfpq_data_generators  # noqa: E402


@pytest.fixture(params=BOOL_CONTEXTS, ids=lambda c: c[0])
def ctx(request):
    """The Boolean operations run on every backend, OpenCL included."""
    return request.param[1]


def rand_bool(rng, m, n, density):
    return (sp.random(m, n, density=density, format="csr", random_state=rng) != 0).astype(np.bool_)


def same_pattern(got, expected):
    got = sp.csr_matrix(got)
    expected = sp.csr_matrix(expected)
    assert got.shape == expected.shape
    assert ((got != 0) != (expected != 0)).nnz == 0


@pytest.mark.parametrize("shape", [(0, 0), (1, 1), (40, 60), (300, 200)])
def test_elementwise_and_structure(ctx, rng, shape):
    m, n = shape
    A, B, M = (rand_bool(rng, m, n, 0.1) for _ in range(3))
    same_pattern(sr.ewise_add(A, B, context=ctx), A + B)
    same_pattern(sr.ewise_mult(A, B, context=ctx), A.multiply(B))
    same_pattern(sr.ewise_add(A, B, mask=M, context=ctx), (A + B).multiply(M))
    notM = np.ones((m, n), dtype=bool) & ~M.toarray()
    same_pattern(sr.ewise_mult(A, B, mask=M, complement=True, context=ctx), A.multiply(B).multiply(notM))
    same_pattern(sr.ewise_add(A, B, accumulate=M, context=ctx), A + B + M)
    same_pattern(sr.Matrix(A, context=ctx).T.to_scipy(), A.T)
    same_pattern(sr.reduce_rows(A, context=ctx), (A.getnnz(axis=1) > 0).reshape(-1, 1))
    r0, c0 = m // 3, n // 4
    same_pattern(sr.extract(A, slice(r0, m - 1), slice(c0, n), context=ctx), A[r0:max(m - 1, r0), c0:])
    assert sr.Matrix(A, context=ctx).equal(A)


def test_numeric_elementwise(ctx, rng):
    A = sp.random(30, 40, density=0.2, format="csr", random_state=rng)
    B = sp.random(30, 40, density=0.2, format="csr", random_state=rng)
    np.testing.assert_allclose(sr.ewise_add(A, B, context=ctx).toarray(), (A + B).toarray(), rtol=1e-12)
    np.testing.assert_allclose(sr.ewise_mult(A, B, context=ctx).toarray(), A.multiply(B).toarray(), rtol=1e-12)
    np.testing.assert_allclose(sr.ewise_add(A, B, "max_plus", context=ctx).toarray(),
                               np.where((A != 0).toarray() & (B != 0).toarray(), np.maximum(A.toarray(), B.toarray()),
                                        A.toarray() + B.toarray()), rtol=1e-12)
    np.testing.assert_allclose(sr.reduce_rows(A, context=ctx).toarray().ravel()[A.getnnz(axis=1) > 0],
                               np.asarray(A.sum(axis=1)).ravel()[A.getnnz(axis=1) > 0], rtol=1e-12)
    np.testing.assert_allclose(sr.kronecker(A[:4, :5], B[:3, :2], context=ctx).toarray(),
                               sp.kron(A[:4, :5], B[:3, :2]).toarray(), rtol=1e-12)


def test_kronecker_and_mxm(ctx, rng):
    A, B = rand_bool(rng, 9, 7, 0.3), rand_bool(rng, 5, 8, 0.3)
    same_pattern(sr.kronecker(A, B, context=ctx), sp.kron(A, B))
    G, H, M = rand_bool(rng, 200, 150, 0.03), rand_bool(rng, 150, 250, 0.03), rand_bool(rng, 200, 250, 0.2)
    P = (G.astype(np.int32) @ H.astype(np.int32)) != 0
    same_pattern(sr.mxm(G, H, "or_and", context=ctx), P)
    notM = ~M.toarray()
    same_pattern(sr.mxm(G, H, "or_and", mask=M, complement=True, context=ctx), P.multiply(notM))
    same_pattern(sr.mxm(G, H, "or_and", accumulate=M, context=ctx), P + M)


def test_bits(ctx, rng):
    A = rand_bool(rng, 120, 90, 0.05)
    X = rng.random((90, 130)) < 0.1
    M = rng.random((120, 130)) < 0.5
    W = sr.pack_bits(X)
    assert W.shape == (90, 3) and np.array_equal(sr.unpack_bits(W, 130), X)
    P = (A.astype(np.int32) @ X.astype(np.int32)) > 0
    assert np.array_equal(sr.unpack_bits(sr.mxm_bits(A, W, 130), 130), P)
    Y = sr.mxm_bits(A, W, 130, mask=sr.pack_bits(M), complement=True, replace=True)
    assert np.array_equal(sr.unpack_bits(Y, 130), P & ~M)
    with pytest.raises(ValueError):
        sr.mxm_bits(A, W[:, :2], 130)
    # the library's own conversions and word operations agree with numpy's
    XS = sp.csr_matrix(X)
    assert np.array_equal(sr.bits_from_matrix(XS, context=ctx), W)
    same_pattern(sr.matrix_from_bits(W, 130, context=ctx), XS)
    V = sr.pack_bits(M[:90])
    assert sr.bits_count(V, 130, context=ctx) == int(M[:90].sum())
    assert sr.bits_or(V, W, 130, context=ctx) == int((M[:90] | X).sum())
    assert np.array_equal(sr.unpack_bits(V, 130), M[:90] | X)


def random_graph(rng, n, degree):
    return rand_bool(rng, n, n, min(1.0, degree / max(n, 1)))


@pytest.mark.parametrize("n", [1, 50, 400])
def test_closure_and_reachability(ctx, rng, n):
    nx = pytest.importorskip("networkx")
    A = random_graph(rng, n, 1.5)
    G = nx.DiGraph()
    G.add_nodes_from(range(n))
    G.add_edges_from(zip(*A.nonzero()))
    closure = nx.to_scipy_sparse_array(nx.transitive_closure(G, reflexive=False), nodelist=range(n))
    for method in ("semi-naive", "squaring"):
        C, stats = sr.transitive_closure(A, method, return_stats=True, context=ctx)
        same_pattern(C, closure)
        assert stats.rounds >= 1
    sources = rng.integers(0, n, size=min(n, 70))
    R = sr.reachability(A, sources, context=ctx)
    expected = sp.lil_matrix((len(sources), n), dtype=bool)
    for s, v in enumerate(sources):
        for w in nx.descendants(G, int(v)) | {int(v)}:
            expected[s, w] = True
    same_pattern(R, expected)
    with pytest.raises(sr.InvalidArgumentError, match="not a vertex"):
        sr.reachability(A, [n], context=ctx)


def cfpq_reference(text, graphs, n):
    """pyformlang's CNF of the grammar and a fixpoint over Python sets; the empty word by
    pyformlang's generate_epsilon."""
    pyformlang = pytest.importorskip("pyformlang.cfg")
    cfg = pyformlang.CFG.from_text(text.replace("eps", "$"))
    cnf = cfg.to_normal_form()
    edges = {label: set(zip(*g.nonzero())) for label, g in graphs.items()}
    T = {}
    for p in cnf.productions:
        if len(p.body) == 1:
            T.setdefault(p.head, set()).update(edges.get(p.body[0].value, set()))
    changed = True
    while changed:
        changed = False
        for p in cnf.productions:
            if len(p.body) == 2:
                left, right = T.get(p.body[0], set()), T.get(p.body[1], set())
                by_start = {}
                for (k, j) in right:
                    by_start.setdefault(k, []).append(j)
                new = {(i, j) for (i, k) in left for j in by_start.get(k, [])} - T.get(p.head, set())
                if new:
                    T.setdefault(p.head, set()).update(new)
                    changed = True
    pairs = set(T.get(cnf.start_symbol, set()))
    if cfg.generate_epsilon():
        pairs |= {(i, i) for i in range(n)}
    return pairs


@pytest.mark.parametrize("text", ["S -> b S a | b a", "S -> a S b S | eps", "S -> A c B a | B\nA -> a | A b\nB -> c c | A"])
def test_cfpq_against_pyformlang(ctx, rng, text):
    n = 25
    graphs = {label: random_graph(rng, n, 1.3) for label in "abc"}
    R = sr.cfpq(text, graphs, context=ctx)
    got = set(zip(*sp.csr_matrix(R).nonzero()))
    assert got == cfpq_reference(text, graphs, n)


@pytest.mark.parametrize("text", ["S -> a S b | a b", "S -> a S b S | eps"])
def test_cfpq_on_cfpq_data_graphs(ctx, text):
    """cfpq-data's own generators: two cycles of coprime lengths (the a^n b^n worst case, its
    rounds grow as n·m) and a labelled scale-free graph, against pyformlang."""
    generators = cfpq_data_generators()
    if generators is None:
        pytest.skip("cfpq-data not installed (pip install --no-deps cfpq-data==5.0.0)")
    two_cycles, scale_free = generators
    for G in (two_cycles(6, 5), two_cycles(4, 3, labels=("b", "a")), scale_free(90, labels="ab", seed=11)):
        graphs = sr.labeled_graphs_from_networkx(G)
        n = G.number_of_nodes()
        R = sr.cfpq(text, graphs, context=ctx)
        assert set(zip(*sp.csr_matrix(R).nonzero())) == cfpq_reference(text, graphs, n)


def test_labeled_graphs_from_networkx():
    nx = pytest.importorskip("networkx")
    G = nx.MultiDiGraph()
    G.add_edge("x", "y", label="a")
    G.add_edge("x", "y", label="a")  # a parallel edge is one entry
    G.add_edge("y", "z", label="b")
    g = sr.labeled_graphs_from_networkx(G, nvertices=5)
    assert set(g) == {"a", "b"} and g["a"].shape == (5, 5)
    assert g["a"].nnz == 1 and g["a"][0, 1] and g["b"][1, 2]
    U = nx.Graph()
    U.add_edge(0, 1, kind="d")
    assert sr.labeled_graphs_from_networkx(U, attribute="kind")["d"].nnz == 2
    G.add_edge("z", "x")
    with pytest.raises(sr.InvalidArgumentError, match="no 'label'"):
        sr.labeled_graphs_from_networkx(G)


def test_cfpq_reverse_and_errors(ctx, rng):
    d = random_graph(rng, 30, 1.2)
    a = sr.cfpq("S -> d_r S d | d_r d", {"d": d}, reverse=True, context=ctx)
    b = sr.cfpq("S -> r S d | r d", {"d": d, "r": d.T.tocsr()}, context=ctx)
    same_pattern(a, b)
    with pytest.raises(sr.ParseError, match="line 2"):
        sr.cfpq("S -> a\nno arrow here", {"a": d}, context=ctx)
    with pytest.raises(sr.InvalidArgumentError, match="not a nonterminal"):
        sr.cfpq("S -> a", {"a": d}, symbol="T", context=ctx)
    # found by trying it as a new user (issue 58): these once answered with an empty result
    with pytest.raises(sr.ParseError, match="line 1, column 6: a second '->'"):
        sr.cfpq("S -> -> a", {"a": d}, context=ctx)
    with pytest.raises(sr.InvalidArgumentError, match="terminal 'b' names no graph \\(labels given: 'a'\\)"):
        sr.cfpq("S -> b", {"a": d}, context=ctx)
    none = sr.cfpq("S -> b | a", {"a": d}, allow_missing_labels=True, context=ctx)  # b: a label without edges
    same_pattern(none, sr.cfpq("S -> a", {"a": d}, context=ctx))


def test_labeled_graph_file(tmp_path, ctx):
    path = tmp_path / "g.txt"
    path.write_text("# a chain\n0 1 a\n1 2 b\n2 3 a\n")
    graphs = sr.read_labeled_graph(path)
    assert set(graphs) == {"a", "b"} and graphs["a"].shape == (4, 4)
    R = sr.cfpq("S -> a b a", graphs, context=ctx)
    assert set(zip(*sp.csr_matrix(R).nonzero())) == {(0, 3)}
    grammar = tmp_path / "grammar.txt"
    grammar.write_text("# a file\nS -> a b a\n")
    same_pattern(sr.cfpq(grammar, graphs, context=ctx), R)
    assert sr.read_labeled_graph(path, nvertices=10)["a"].shape == (10, 10)
    path.write_text("0 1\n")
    with pytest.raises(sr.ParseError, match="FROM TO LABEL"):
        sr.read_labeled_graph(path)


def debian():
    path = os.path.join(DATA, "graphs/debian-depends.mtx.gz")
    if not DATA or not os.path.exists(path):
        pytest.skip("debian-depends not found (set SPARSERING_TEST_DATA to ../shared/data)")
    return sr.read_mm(path, dtype=np.bool_, context=sr.Context("cpu")).to_scipy()


def test_debian_closure_against_scipy(ctx):
    A = debian()
    reach, delta = A.copy(), A.copy()
    Ai = A.astype(np.int32)
    while delta.nnz:  # scipy's semi-naive fixpoint, the reference of the issue
        new = ((delta.astype(np.int32) @ Ai) != 0).astype(np.int8) - reach.astype(np.int8)
        delta = new > 0
        reach = (reach + delta) != 0
    C = sr.transitive_closure(A, context=ctx)
    assert C.nnz == reach.nnz
    same_pattern(C, reach)
