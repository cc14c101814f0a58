"""sparsering.dask against the one-process answer, on a LocalCluster of two CPU worker processes."""
import collections
import contextlib
import os
import time

import numpy as np
import pytest
import scipy.sparse as sp

import sparsering as sr
from conftest import CONTEXTS

distributed = pytest.importorskip("dask.distributed")
import sparsering.dask as srd  # noqa: E402


@contextlib.contextmanager
def _two_workers(stealing=True):
    """A client of a fresh LocalCluster of two single-threaded worker processes (stealing=False:
    the scheduler's work stealing off, so tasks stay where they were put)."""
    import dask

    with dask.config.set({"distributed.scheduler.work-stealing": stealing}):
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    with distributed.Client(cluster) as c:
        c.wait_for_workers(2, timeout=120)
        yield c
    cluster.close()


def _kill_worker(c, address):
    """The worker's process ends at once (its nanny starts another); the call may see it go."""
    try:
        c.run(os._exit, 1, workers=[address])
    except Exception:
        pass


@pytest.fixture(scope="module")
def client():
    with _two_workers() as c:
        yield c


def _data(rng, rows=1200, cols=300, density=0.03):
    X = sp.random(rows, cols, density=density, format="csr", random_state=rng, dtype=np.float64)
    X[5] = X[17]  # duplicate rows: ties at distance 0 across blocks
    X[rows - 3] = X[17]
    X[rows // 3] = 0  # an empty row
    X.eliminate_zeros()
    return X.tocsr()


def test_blocks_balance_nonzeros():
    rng = np.random.default_rng(3)
    lengths = rng.zipf(1.6, 5000).clip(0, 2000)
    X = sp.csr_matrix((np.ones(lengths.sum()), rng.integers(0, 100, lengths.sum()),
                       np.concatenate(([0], np.cumsum(lengths)))), shape=(5000, 100))
    blocks = srd.balanced_row_blocks(X, 4)
    assert blocks[0][0] == 0 and blocks[-1][1] == 5000
    assert all(a < b for a, b in blocks) and all(b == c for (_, b), (c, _) in zip(blocks, blocks[1:]))
    sizes = [X.indptr[b] - X.indptr[a] for a, b in blocks]
    assert max(sizes) <= X.nnz / 4 + lengths.max()  # each cut within one row of its mark
    assert srd.balanced_row_blocks(sp.csr_matrix(np.ones((3, 4))), 8) == [(0, 1), (1, 2), (2, 3)]  # <= rows
    assert srd.balanced_row_blocks(sp.csr_matrix((3, 4)), 2) == [(0, 3)]  # no entries: one block


@pytest.mark.parametrize("metric", ["cosine", "euclidean", "manhattan", "inner_product", "jensenshannon"])
def test_kneighbors_equals_one_process(client, metric):
    rng = np.random.default_rng(11)
    X = _data(rng)
    if metric == "jensenshannon":
        X = abs(X)
    Q = _data(rng, rows=300)
    Q = abs(Q) if metric == "jensenshannon" else Q
    ctx = sr.Context("cpu")
    for queries, k in ((None, 7), (Q, 7), (Q, 1)):
        want_d, want_i = sr.kneighbors(X, queries, k=k, metric=metric, context=ctx)
        got_d, got_i = srd.kneighbors(client, X, queries, k=k, metric=metric, parts=3, batch_rows=128, backend="cpu")
        np.testing.assert_array_equal(got_i, want_i)
        np.testing.assert_array_equal(got_d, want_d)  # bit for bit: a pair's distance is its rows' alone


def test_no_workers_is_a_clear_error():
    class Empty:  # a client whose cluster has no workers and gets none
        def scheduler_info(self, n_workers=-1):
            return {"workers": {}}

        def wait_for_workers(self, n, timeout=None):
            raise TimeoutError(f"no {n} workers in {timeout} s")
    with pytest.raises(RuntimeError, match="no workers"):
        srd.kneighbors(Empty(), sp.csr_matrix(np.eye(4)), k=2)


def test_k_larger_than_a_block(client):
    X = _data(np.random.default_rng(5), rows=40, cols=30, density=0.2)
    ctx = sr.Context("cpu")
    want = sr.kneighbors(X, None, k=25, metric="cosine", context=ctx)
    got = srd.kneighbors(client, X, None, k=25, metric="cosine", parts=4, backend="cpu")  # blocks of ~10 rows
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(got[0], want[0])
    with pytest.raises(sr.InvalidArgumentError):
        srd.kneighbors(client, X, None, k=41, backend="cpu")


@pytest.mark.parametrize("mode", ["connectivity", "distance"])
@pytest.mark.parametrize("include_self", [False, True])
def test_kneighbors_graph_equals_one_process(client, mode, include_self):
    X = _data(np.random.default_rng(23), rows=700)
    ctx = sr.Context("cpu")
    want = sr.kneighbors_graph(X, 6, mode=mode, metric="euclidean", include_self=include_self, context=ctx)
    got = srd.kneighbors_graph(client, X, 6, mode=mode, metric="euclidean", include_self=include_self, parts=2,
                               backend="cpu")
    assert got.shape == want.shape and got.dtype == want.dtype
    _assert_same_arrays(got, want)


@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_real_text_equals_one_process(client, metric):
    """5,000 PyPI summaries (word counts) in three blocks against the one-process answer."""
    from test_neighbors import pypi_summaries
    X = pypi_summaries(5000)
    ctx = sr.Context("cpu")
    want = sr.kneighbors(X, None, k=10, metric=metric, context=ctx)
    got = srd.kneighbors(client, X, None, k=10, metric=metric, parts=3, batch_rows=2000, backend="cpu")
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(got[0], want[0])


# ------------------------------------------------------------------ RowMatrix: row blocks on the workers


def test_row_matrix_constructors_agree(client, rng, tmp_path):
    import dask.array as da
    X = _data(rng, rows=700, cols=90)
    paths = []
    for j, (a, b) in enumerate([(0, 250), (250, 251), (251, 700)]):  # a one-row shard among them
        path = tmp_path / f"shard{j}.{'npz' if j == 1 else 'mtx'}"
        if j == 1:
            sp.save_npz(path, X[a:b])
        else:
            sr.Matrix(X[a:b]).write_mm(str(path))
        paths.append(path)
    made = [srd.RowMatrix.from_scipy(client, X), srd.RowMatrix.from_shards(client, paths),
            srd.RowMatrix.from_dask_array(client, da.from_array(X, chunks=(160, 90), asarray=False))]
    for R in made:
        assert R.shape == X.shape and R.nblocks >= 2
        assert (R.to_scipy() != X).nnz == 0
    with pytest.raises(sr.InvalidArgumentError, match="one chunk across its columns"):
        srd.RowMatrix.from_dask_array(client, da.from_array(X, chunks=(160, 45), asarray=False))


def test_row_matrix_from_shards_read_by_the_workers_named(client, rng, tmp_path):
    """Shards on a host's own disk: workers[j] names who reads shard j (here against the
    round-robin order, and one shard by either worker), and each block lives there."""
    X = _data(rng, rows=600, cols=70)
    paths = []
    for j, (a, b) in enumerate([(0, 200), (200, 450), (450, 600)]):
        paths.append(tmp_path / f"local{j}.npz")
        sp.save_npz(paths[-1], X[a:b])
    first, second = srd._workers(client)[:2]
    R = srd.RowMatrix.from_shards(client, paths, workers=[second, first, [first, second]])
    distributed.wait(R.blocks)
    where = client.who_has(R.blocks)
    assert list(where[R.blocks[0].key]) == [second] and list(where[R.blocks[1].key]) == [first]
    assert (R.to_scipy() != X).nnz == 0
    with pytest.raises(sr.InvalidArgumentError, match="one entry a shard"):
        srd.RowMatrix.from_shards(client, paths, workers=[first])


@pytest.mark.parametrize("semiring", ["plus_times", "min_plus"])
def test_row_matrix_spmv_matches_one_process(client, rng, semiring):
    X = _data(rng, rows=900, cols=120)
    x = rng.standard_normal(120)
    R = srd.RowMatrix.from_scipy(client, X, parts=3)
    y = R.spmv(x, semiring)
    assert y.shape == (900,)
    np.testing.assert_array_equal(y.compute(), sr.spmv(X, x, semiring))


@pytest.mark.parametrize("semiring", ["plus_times", "max_plus"])
def test_row_matrix_spmm_matches_one_process(client, rng, semiring):
    X = _data(rng, rows=700, cols=150)
    B = rng.standard_normal((150, 7))
    C = srd.RowMatrix.from_scipy(client, X, parts=3).spmm(B, semiring)
    assert C.shape == (700, 7)
    np.testing.assert_array_equal(C.compute(), sr.spmm(X, B, semiring))


def test_row_matrix_reachability_is_the_one_process_answer(client, rng):
    G = sp.lil_matrix(sp.random(500, 500, density=0.003, format="csr", random_state=rng), dtype=bool)
    sources = [0, 7, 499, 7]  # a source twice: two equal rows
    for source in set(sources):  # a walk of 5 steps from each source, whatever the seed drew
        walk = [source, *rng.choice(500, size=5, replace=False)]
        G[walk[:-1], walk[1:]] = True
    G = G.tocsr()
    got = srd.RowMatrix.from_scipy(client, G, parts=3).reachability(sources)
    want = sr.reachability(G, sources)
    assert got.dtype == np.bool_ and got.shape == (4, 500)
    assert want.nnz > 8  # the walks leave their sources
    np.testing.assert_array_equal(got.toarray(), want.toarray())
    with pytest.raises(sr.InvalidArgumentError):
        srd.RowMatrix.from_scipy(client, G).reachability([500])


@pytest.mark.parametrize("operation", ["spmv", "spmm", "reachability", "mxm", "transitive_closure", "kneighbors",
                                       "sddmm", "pagerank"])
def test_row_matrix_operations_run_on_the_backend_asked_for(client, rng, operation):
    """backend= reaches the workers' calls: one no context can be made for is refused there (the
    Boolean steps and the products of mxm once ran on the workers' default context whatever was asked)."""
    G = sp.random(60, 60, density=0.05, format="csr", random_state=rng, dtype=np.float64)
    R = srd.RowMatrix.from_scipy(client, G, parts=2)
    calls = {"spmv": lambda b: R.spmv(np.ones(60), backend=b), "spmm": lambda b: R.spmm(np.ones((60, 3)), backend=b),
             "reachability": lambda b: R.reachability([0, 1], backend=b), "mxm": lambda b: R.mxm(R, backend=b),
             "transitive_closure": lambda b: R.transitive_closure(backend=b),
             "kneighbors": lambda b: R.kneighbors(k=3, backend=b),
             "sddmm": lambda b: R.sddmm(np.ones((60, 2)), np.ones((60, 2)), backend=b),
             "pagerank": lambda b: R.pagerank(backend=b)}
    call = calls[operation]
    call("cpu")  # the backend every machine has
    with pytest.raises(ValueError, match="backend"):
        out = call("no-such-backend")
        for piece in (out if isinstance(out, tuple) else (out,)):  # lazy results: made to compute
            if hasattr(piece, "to_scipy"):
                piece.to_scipy()
            elif hasattr(piece, "compute"):
                piece.compute()


@pytest.mark.parametrize("metric", ["cosine", "manhattan", "inner_product"])
def test_row_matrix_kneighbors_is_the_one_process_answer(client, rng, metric):
    X = _data(rng)
    Q = _data(rng, rows=300)
    R, RQ = srd.RowMatrix.from_scipy(client, X, parts=3), srd.RowMatrix.from_scipy(client, Q, parts=2)
    for queries, dense in ((None, X), (RQ, Q)):
        dist, ind = R.kneighbors(queries, k=7, metric=metric)
        assert dist.shape == (dense.shape[0], 7)  # lazily: nothing gathered yet
        want_d, want_i = sr.kneighbors(X, dense, k=7, metric=metric)
        np.testing.assert_array_equal(ind.compute(), want_i)
        np.testing.assert_array_equal(dist.compute(), want_d)
    with pytest.raises(sr.InvalidArgumentError, match="k must be"):
        R.kneighbors(k=X.shape[0] + 1)


@pytest.mark.parametrize("placed", ["round", "runs"])
def test_kneighbors_searches_a_workers_blocks_in_one_call(client, rng, placed):
    """Six index blocks on two workers: each query block is searched by one task a worker (12 in
    all, not 36), the worker's blocks as one; the answer is the one-process answer, ties across
    blocks included, whether a worker's blocks are neighbours in the index ("runs": their rows
    run on) or not ("round": blocks 0, 2, 4 on one worker, so its rows are renumbered)."""
    X = _data(rng, rows=900)
    workers = sorted(client.scheduler_info()["workers"])
    where = [workers[j % 2] for j in range(6)] if placed == "round" else [workers[j // 3] for j in range(6)]
    R = srd.RowMatrix.from_scipy(client, X, parts=6, workers=where)
    distributed.wait(R.blocks)
    want_d, want_i = sr.kneighbors(X, X, k=7, metric="cosine")
    with distributed.get_task_stream(client) as stream:
        dist, ind = R.kneighbors(k=7, metric="cosine")
        np.testing.assert_array_equal(ind.compute(), want_i)
        np.testing.assert_array_equal(dist.compute(), want_d)
    from dask.utils import key_split
    kinds = collections.Counter(key_split(t["key"]) for t in stream.data)
    searches, groups = kinds["block_candidates"], kinds["index_group"]  # key_split drops the leading _
    assert searches == 12 and groups == 2, kinds


@pytest.mark.parametrize("mode", ["connectivity", "distance"])
def test_row_matrix_radius_graph_is_the_one_process_answer(client, rng, mode):
    X = _data(rng, rows=600, cols=80, density=0.06)
    R = srd.RowMatrix.from_scipy(client, X, parts=3)
    G = R.radius_neighbors_graph(0.6, mode=mode, metric="cosine")
    want = sr.radius_neighbors_graph(X, 0.6, mode=mode, metric="cosine")
    got = G.to_scipy()
    assert G.shape == want.shape and got.nnz == want.nnz > 0
    np.testing.assert_array_equal(got.indptr, want.indptr)
    np.testing.assert_array_equal(got.indices, want.indices)
    np.testing.assert_array_equal(got.data, want.data)  # explicit zeros (equal rows) kept alike
    Q = srd.RowMatrix.from_scipy(client, X[:100], parts=2)
    got_q = R.radius_neighbors_graph(0.6, queries=Q, mode=mode, metric="cosine").to_scipy()
    _, i = sr.radius_neighbors(X, X[:100], radius=0.6, metric="cosine")  # queries apart: each row's own pair kept
    assert got_q.nnz == sum(len(x) for x in i)
    for row in range(100):
        np.testing.assert_array_equal(got_q.indices[got_q.indptr[row]:got_q.indptr[row + 1]], np.sort(i[row]))


@pytest.mark.parametrize("semiring", ["plus_times", "min_plus"])
def test_row_matrix_mxm_matches_one_process(client, rng, semiring):
    A = _data(rng, rows=500, cols=400, density=0.01)
    B = _data(rng, rows=400, cols=300, density=0.02)
    A.data, B.data = np.round(A.data * 8), np.round(B.data * 8)  # integers: sums exact in any order
    C = srd.RowMatrix.from_scipy(client, A, parts=3).mxm(srd.RowMatrix.from_scipy(client, B, parts=2), semiring)
    _assert_same_csr(C.to_scipy(), sr.mxm(A, B, semiring))


def test_row_matrix_mxm_sums_a_row_as_one_process_does(client, rng):
    # real values, rows long enough for the products' accumulators: a block's row of C is one
    # product over B's stacked blocks, summed in the one-process order, so the same bits
    A = _data(rng, rows=600, cols=900, density=0.05)
    B = _data(rng, rows=900, cols=700, density=0.05)
    C = srd.RowMatrix.from_scipy(client, A, parts=4).mxm(srd.RowMatrix.from_scipy(client, B, parts=3))
    _assert_same_csr(C.to_scipy(), sr.mxm(A, B))


def _assert_same_csr(got, want):
    got.sort_indices()
    _assert_same_arrays(got, want)


def test_row_matrix_sddmm_matches_one_process(client, rng):
    S = _data(rng, rows=700, cols=200, density=0.03)
    A, B = rng.standard_normal((700, 16)), rng.standard_normal((200, 16))
    C = srd.RowMatrix.from_scipy(client, S, parts=3).sddmm(A, B, alpha=0.5)
    want = sr.sddmm(S, A, B, alpha=0.5)
    got = C.to_scipy()
    np.testing.assert_array_equal(got.indices, want.indices)
    np.testing.assert_array_equal(got.data, want.data)


def test_row_matrix_pagerank_matches_one_process(client, rng):
    G = sp.random(800, 800, density=0.004, format="csr", random_state=rng, dtype=np.float64)
    G.data[:] = 1.0
    G[:, 5] = 1.0  # a popular vertex (every row then has an edge: dangling rows are the next test's)
    G = sp.csr_matrix(G)
    ranks, iterations = srd.RowMatrix.from_scipy(client, G, parts=3).pagerank(0.85, tol=1e-10)
    want, info = sr.pagerank(G, 0.85, tol=1e-10)
    assert iterations == info.iterations
    np.testing.assert_allclose(ranks, want, rtol=1e-12, atol=1e-15)
    assert abs(ranks.sum() - 1.0) < 1e-12


@pytest.mark.parametrize("max_iter", [3, 100])
def test_row_matrix_pagerank_with_dangling_vertices_and_weights(client, rng, max_iter):
    """Weighted edges, vertices with no out-edges (empty rows, and a row whose weights are all 0),
    more blocks than workers, and a run stopped by max_iter before it converges (the queued steps
    past it released): the one-process ranks and count."""
    G = sp.random(700, 700, density=0.006, format="csr", random_state=rng, dtype=np.float64)
    G.data[:] = rng.integers(1, 5, G.nnz)
    G = sp.lil_matrix(G)
    G[10:40, :] = 0  # dangling: no out-edges
    G[50, :] = 0
    G[50, 3] = G[50, 7] = 1.0
    G = sp.csr_matrix(G)
    G[50, 3] = G[50, 7] = 0.0  # entries whose weights are 0: dangling too
    assert G.getrow(50).nnz == 2 and np.diff(G.indptr)[10:40].sum() == 0
    ranks, iterations = srd.RowMatrix.from_scipy(client, G, parts=5).pagerank(0.85, tol=1e-12, max_iter=max_iter)
    want, info = sr.pagerank(G, 0.85, tol=1e-12, max_iter=max_iter)
    assert iterations == info.iterations and (max_iter > 50 or iterations == max_iter)
    np.testing.assert_allclose(ranks, want, rtol=1e-12, atol=1e-15)


def test_row_matrix_survives_a_worker_dying(rng, tmp_path):
    """A worker killed during a k-NN: its blocks are recomputed from the shards (the collection's
    lineage) on the workers left and the answer is the same."""
    X = _data(rng, rows=900, cols=100)
    paths = []
    for j, (a, b) in enumerate([(0, 300), (300, 600), (600, 900)]):
        paths.append(tmp_path / f"part{j}.npz")
        sp.save_npz(paths[-1], X[a:b])
    with _two_workers() as c:
        R = srd.RowMatrix.from_shards(c, paths)
        distributed.wait(R.blocks)
        victim = next(iter(c.who_has(R.blocks)[R.blocks[0].key]))
        dist, ind = R.kneighbors(k=6, metric="cosine")
        _kill_worker(c, victim)  # mid-call
        want_d, want_i = sr.kneighbors(X, X, k=6, metric="cosine")
        np.testing.assert_array_equal(ind.compute(), want_i)
        np.testing.assert_array_equal(dist.compute(), want_d)


def test_row_matrix_transitive_closure_is_the_one_process_answer(client, rng):
    G = sp.random(400, 400, density=0.004, format="csr", random_state=rng, dtype=np.float64)
    G = sp.csr_matrix(G, dtype=bool)
    C = srd.RowMatrix.from_scipy(client, G, parts=3).transitive_closure()
    want = sr.transitive_closure(G)
    got = C.to_scipy()
    got.sort_indices()
    assert got.nnz == want.nnz > G.nnz
    np.testing.assert_array_equal(got.indptr, want.indptr)
    np.testing.assert_array_equal(got.indices, want.indices)


def test_row_matrix_transpose_is_the_transpose(client, rng):
    X = _data(rng, rows=700, cols=260)
    R = srd.RowMatrix.from_scipy(client, X, parts=3)
    T = R.transpose(parts=4)
    assert T.shape == (260, 700) and T.nblocks == 4 and T.starts[0] == 0
    got = T.to_scipy()
    want = X.T.tocsr()
    want.sort_indices()
    assert (got != want).nnz == 0 and got.has_sorted_indices


def _ratings(rng, users=400, items=150, per_user=12):
    rows, cols = [], []
    for u in range(users):
        if u % 37 == 5:
            continue  # a user with no ratings
        picked = rng.choice(items - 3, size=per_user, replace=False)  # the last 3 items: no ratings
        rows += [u] * per_user
        cols += list(picked)
    vals = rng.integers(1, 11, len(rows)) * 0.5
    return sp.csr_matrix((vals, (rows, cols)), shape=(users, items))


@pytest.mark.parametrize("dtype,center", [(np.float64, False), (np.float32, True)])
def test_row_matrix_factorize_matches_one_process(client, rng, dtype, center):
    R = _ratings(rng)
    T = _ratings(np.random.default_rng(77), per_user=3)  # held-out ratings
    T = T - T.multiply(R != 0)  # none where a training rating is
    T.eliminate_zeros()
    want = sr.factorize(R, rank=6, test=T, lam=0.05, iterations=4, cg_steps=3, seed=9, center=center, dtype=dtype,
                        context=sr.Context("cpu"))
    Rd = srd.RowMatrix.from_scipy(client, R, parts=3)
    Td = srd.RowMatrix(client, [client.submit(srd._as_block, T[a:b], a) for a, b in zip(Rd.starts, Rd._stops())],
                       Rd.starts, T.shape, T.dtype)
    W, H, mean, history = Rd.factorize(rank=6, test=Td, lam=0.05, iterations=4, cg_steps=3, seed=9, center=center,
                                       dtype=dtype, item_parts=2, backend="cpu")
    W, H = W.compute(), H.compute()
    assert W.shape == want.W.shape and H.shape == want.H.shape and W.dtype == np.dtype(dtype)
    # the same CG row by row, bit for bit; only the mean (summed block by block) and the RMSE's sum
    # may round differently
    np.testing.assert_allclose(mean, want.mean, rtol=1e-14)
    if center:
        tol = 1e-12 if dtype == np.float64 else 2e-5  # a last-bit mean moves every rating
        np.testing.assert_allclose(W, want.W, rtol=tol, atol=tol)
        np.testing.assert_allclose(H, want.H, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(W, want.W)
        np.testing.assert_array_equal(H, want.H)
    np.testing.assert_allclose([h[1:3] for h in history], [h[1:3] for h in want.history], rtol=1e-12)
    with pytest.raises(sr.InvalidArgumentError, match="row blocks"):
        Rd.factorize(rank=2, test=srd.RowMatrix.from_scipy(client, T, parts=2), iterations=1)
    assert [h[0] for h in history] == [1, 2, 3, 4]
    assert history[-1][1] < history[0][1]  # the fit improves
    assert np.all(W[[5, 42]] == 0)  # users without ratings keep zero factors


def test_row_matrix_pagerank_survives_a_worker_dying(rng):
    """A worker killed while PageRank iterates: the steps it held are recomputed from their
    lineage and the ranks and iteration count are the one-process ones."""
    import threading
    import time
    G = sp.random(3000, 3000, density=0.002, format="csr", random_state=rng, dtype=np.float64)
    want, info = sr.pagerank(G, tol=1e-15, max_iter=60)
    with _two_workers() as c:
        R = srd.RowMatrix.from_scipy(c, G, parts=4)
        out, started = {}, threading.Event()

        def run():
            started.set()
            try:
                out["ranks"], out["it"] = R.pagerank(tol=1e-15, max_iter=60)
            except Exception as e:  # reported below
                out["error"] = e
        t = threading.Thread(target=run)
        t.start()
        started.wait()
        time.sleep(0.3)
        killed_midway = t.is_alive()
        _kill_worker(c, next(iter(c.scheduler_info()["workers"])))
        t.join(timeout=300)
        assert killed_midway, "PageRank ended before the worker was killed: make the graph larger"
        assert "error" not in out, f"PageRank failed when the worker died: {out.get('error')!r}"
        assert out["it"] == info.iterations
        np.testing.assert_allclose(out["ranks"], want, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("mode", ["connectivity", "distance"])
@pytest.mark.parametrize("include_self", [False, True])
def test_row_matrix_kneighbors_graph_is_the_one_process_graph(client, mode, include_self):
    X = _data(np.random.default_rng(29), rows=650)
    want = sr.kneighbors_graph(X, 5, mode=mode, metric="cosine", include_self=include_self, context=sr.Context("cpu"))
    G = srd.RowMatrix.from_scipy(client, X, parts=3).kneighbors_graph(5, mode=mode, metric="cosine",
                                                                      include_self=include_self, backend="cpu")
    assert isinstance(G, srd.RowMatrix) and G.shape == (650, 650) and G.starts == [0] + G.starts[1:]
    got = G.to_scipy()
    assert got.dtype == want.dtype
    _assert_same_arrays(got, want)
    with pytest.raises(sr.InvalidArgumentError, match="n_neighbors"):
        srd.RowMatrix.from_scipy(client, X[:4]).kneighbors_graph(4)


def test_client_memory_stays_near_what_it_asks_for(client, tmp_path):
    """16 shards on disk, their all-vs-all k-NN graph as a RowMatrix: the client reads only the
    shards' headers and gets back the graph's entry count, so its peak allocation (tracemalloc,
    numpy included) does not grow with the matrix: a matrix 8 times larger moves it by less than
    a tenth of the difference (dask's own bookkeeping, the same for both, is the rest)."""
    import tracemalloc

    def peak_for(rows, folder):
        rng = np.random.default_rng(31)
        folder.mkdir()
        paths = []
        for j in range(16):
            part = sp.random(rows, 4000, density=0.01, format="csr", random_state=rng, dtype=np.float64)
            paths.append(folder / f"part{j:02d}.npz")
            sp.save_npz(paths[-1], part, compressed=False)
        tracemalloc.start()
        R = srd.RowMatrix.from_shards(client, paths)
        G = R.kneighbors_graph(5, mode="distance", metric="cosine", backend="cpu")
        entries = sum(client.gather([client.submit(lambda b: b.rows.nnz, blk, pure=False) for blk in G.blocks]))
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert G.shape == (16 * rows, 16 * rows) and entries == 16 * rows * 5
        return peak, 16 * rows * 4000 * 0.01 * 12  # the matrix's values and column indices

    small, small_bytes = peak_for(250, tmp_path / "small")
    big, big_bytes = peak_for(2000, tmp_path / "big")
    assert big - small < (big_bytes - small_bytes) / 10, \
        f"the client's peak grew by {(big - small) / 1e6:.2f} MB for {(big_bytes - small_bytes) / 1e6:.1f} MB more matrix"


def _most_held(c, held, run):
    """run() while held(dask_worker) (a tuple of counts) is polled on every worker; the most of
    each count seen on each worker."""
    import threading

    most = {}
    done = threading.Event()

    def poll():
        while not done.is_set():
            for w, counts in c.run(held).items():
                most[w] = tuple(max(a, b) for a, b in zip(most.get(w, counts), counts))
            done.wait(0.02)

    watcher = threading.Thread(target=poll)
    watcher.start()
    try:
        run()
    finally:
        done.set()
        watcher.join()
    return most


def _assert_same_arrays(got, want):
    """The same CSR arrays, bit for bit (row pointers, columns in order, values)."""
    np.testing.assert_array_equal(got.indptr, want.indptr)
    np.testing.assert_array_equal(got.indices, want.indices)
    np.testing.assert_array_equal(got.data, want.data)


def _shards(tmp_path, name, parts):
    paths = []
    for j, part in enumerate(parts):
        paths.append(tmp_path / f"{name}{j:02d}.npz")
        sp.save_npz(paths[-1], part)
    return paths


def _keys_like(dask_worker, prefix):
    return [k for k in dask_worker.data.keys() if str(k).startswith(prefix)]


def _most_awaited(scheduler, name):
    """A scheduler plugin (the class made here: dask.distributed is imported only when present)."""
    from distributed.diagnostics.plugin import SchedulerPlugin

    class MostAwaited(SchedulerPlugin):
        """The most keys whose names start with `name` held in memory at once for tasks still to
        run (their waiters), in the scheduler's own state. Not every key in memory: a key also stays
        while the client's future of it lives, and the client's release reaches the scheduler
        with the lag of a loaded machine (CI runs saw 9 copies on a worker in a poll of its memory,
        4 in the scheduler's memory state, where the window bounds the awaited ones at 2). The
        most in memory at all is kept too, for the message."""

        def __init__(self):
            self.alive, self.most, self.most_in_memory = set(), 0, 0

        def transition(self, key, start, finish, *args, **kwargs):
            if str(key).startswith(name):
                if finish == "memory":
                    self.alive.add(key)
                elif start == "memory":
                    self.alive.discard(key)
                self.most_in_memory = max(self.most_in_memory, len(self.alive))
            # any task's end may be a copy's last waiter's: count on every transition
            awaited = sum(1 for k in self.alive if k in scheduler.tasks and scheduler.tasks[k].waiters)
            self.most = max(self.most, awaited)

    return MostAwaited()


def test_workers_hold_their_blocks_and_a_few_query_copies(tmp_path):
    """An all-vs-all k-NN graph of 16 shards on two workers: polled while it runs, each worker holds
    its own blocks (8 of the 16, where the shards were placed; under load the scheduler may still
    run a task elsewhere now and then, so 2 more are allowed); and the scheduler keeps at most
    2 query blocks' copies for tasks still to run (query block j's copy is made once block j - 2's
    answer is done, when block j - 2's tasks have all run; a window of 16 kept more), never the
    whole matrix (taken straight, each worker came to hold all 16 blocks until the end). Work
    stealing is off: on blocks this small it moves tasks, and copies of their
    index blocks, freely."""
    rng = np.random.default_rng(5)
    paths = _shards(tmp_path, "part", [sp.random(300, 2000, density=0.02, format="csr", random_state=rng,
                                                 dtype=np.float32) for _ in range(16)])

    def held(dask_worker):
        return (len(_keys_like(dask_worker, "_read_block")),)

    with _two_workers(stealing=False) as c:
        R = srd.RowMatrix.from_shards(c, paths)
        distributed.wait(R.blocks)
        own = {w: n for w, (n,) in c.run(held).items()}
        copies = _most_awaited(c.cluster.scheduler, "_query_copy")
        c.cluster.scheduler.add_plugin(copies, name="most-query-copies")
        graph = []
        most = _most_held(c, held, lambda: graph.append(R.kneighbors_graph(5, mode="distance", metric="cosine",
                                                                           backend="cpu")) or distributed.wait(graph[0].blocks))
        for w, (blocks,) in most.items():
            assert blocks <= own[w] + 2, f"{w} held {blocks} index blocks, {own[w]} its own"
        assert 1 <= copies.most <= 2, (f"the scheduler kept {copies.most} query copies for tasks at once "
                                       f"({copies.most_in_memory} in memory)")
        assert graph[0].to_scipy().nnz == 16 * 300 * 5


def test_mxm_fetches_only_the_rows_it_needs(tmp_path):
    """A·B with A's block i using only B's block i's rows (16 shards each, two workers): polled
    while it runs, no worker holds more than 2 of the other's blocks, and the rows of B it fetched at once stay under
    a quarter of B (each block of A got all of B before: 8 blocks more a worker); the product is the one-process one. Work stealing off, as
    above."""
    from dask.sizeof import sizeof

    rng = np.random.default_rng(6)
    a_parts = [sp.hstack([sp.csr_matrix((200, 200 * i)), sp.random(200, 200, density=0.05, random_state=rng),
                          sp.csr_matrix((200, 200 * (15 - i)))], format="csr") for i in range(16)]
    b_parts = [sp.random(200, 3000, density=0.02, format="csr", random_state=rng) for _ in range(16)]
    for part in a_parts + b_parts:
        part.data = np.round(part.data * 8)  # integers: the sums are exact in any order

    def held(dask_worker):
        # the rows of B held as pieces, less the pieces that are a block of this worker itself (a
        # block whose rows are all needed is passed on as it is: the same object, no more memory)
        blocks = {id(dask_worker.data[k]) for k in _keys_like(dask_worker, "_read_block")}
        return (len(blocks),
                sum(sizeof(piece) for piece in (dask_worker.data[k] for k in _keys_like(dask_worker, "_needed_rows"))
                    if id(piece) not in blocks))

    with _two_workers(stealing=False) as c:
        A = srd.RowMatrix.from_shards(c, _shards(tmp_path, "a", a_parts))
        B = srd.RowMatrix.from_shards(c, _shards(tmp_path, "b", b_parts))
        distributed.wait(A.blocks + B.blocks)
        own = {w: n for w, (n, _) in c.run(held).items()}
        product = []
        most = _most_held(c, held, lambda: product.append(A.mxm(B)) or distributed.wait(product[0].blocks))
        b_bytes = sum(sizeof(p) for p in b_parts)
        for w, (blocks, rows_bytes) in most.items():
            assert blocks <= own[w] + 2, f"{w} held {blocks} blocks, {own[w]} its own"
            assert rows_bytes < b_bytes / 4, f"{w} held {rows_bytes} bytes of B's rows at once (B: {b_bytes})"
        want = sr.mxm(sp.vstack(a_parts, format="csr"), sp.vstack(b_parts, format="csr"))
        got = product[0].to_scipy()
        got.sort_indices()
        np.testing.assert_array_equal(got.toarray(), want.toarray())


def _held_bytes(dask_worker):
    """The bytes a worker holds, as dask.sizeof counts them (an object under two keys once)."""
    from dask.sizeof import sizeof

    seen, total = set(), 0
    for value in list(dask_worker.data.values()):
        if id(value) not in seen:
            seen.add(id(value))
            total += sizeof(value)
    return (total,)


def _released(c, keys, patience=30.0):
    """Waits (up to `patience` s) until no worker holds any of `keys`: the scheduler releases a
    call's results some time after the client drops them, and on a loaded machine a fixed 0.3 s
    let one graph's blocks count in the next call's peak (9.3 MB under a limit of 8 MB)."""
    deadline, last = time.monotonic() + patience, None
    while time.monotonic() < deadline:
        now = {k for held in c.has_what().values() for k in held}
        if not keys & now and now == last:  # the graph's blocks gone, and what follows them (two polls alike)
            return
        last = now
        time.sleep(0.2)


def _peak_under_each_limit(c, call, limits, want, whole_blocks, sort_columns=False):
    """For each limit (None: no limit), call(limit), a RowMatrix, while every worker's held bytes
    are polled: its matrix must be `want` bit for bit (its columns sorted first when asked) and,
    under a limit, come in more than `whole_blocks` blocks with no worker's peak above the limit.
    Each answer's blocks are released before the next call is measured. Returns each limit's peak."""
    from dask.utils import parse_bytes
    peaks = {}
    for limit in limits:
        answer = []
        most = _most_held(c, _held_bytes, lambda: answer.append(call(limit)) or distributed.wait(answer[0].blocks))
        peaks[limit] = max(m for (m,) in most.values())
        got = answer[0].to_scipy()
        if sort_columns:
            got.sort_indices()
        _assert_same_arrays(got, want)
        if limit is not None:
            bound = parse_bytes(limit) if isinstance(limit, str) else limit
            assert answer[0].nblocks > whole_blocks, f"under {limit} bytes the blocks went whole"
            assert peaks[limit] <= bound, f"a worker held {peaks[limit]} bytes under a limit of {limit}"
        keys = {b.key for b in answer[0].blocks}
        del answer, got  # this answer's blocks go before the next call is measured
        _released(c, keys)
    return peaks


def test_memory_limit_bounds_what_each_worker_holds(tmp_path):
    """An all-vs-all k-NN graph of 8 shards on two workers, polled while it runs: under a memory
    limit of 7 MB and of 8 MB each worker's held bytes stay under it (the query blocks go in
    pieces) and the graph is the one-process graph; without a limit the same call held more than
    7 MB on some worker, so the poll sees the peaks the limit takes away. Each worker must hold
    about 6.5 MB whatever the pieces (its 4 blocks, twice for the matrices made from them, and
    its rows' answers): a limit of 5 MB is refused with that count."""
    rng = np.random.default_rng(8)
    parts = [sp.random(1500, 3000, density=0.01, format="csr", random_state=rng, dtype=np.float64) for _ in range(8)]
    paths = _shards(tmp_path, "part", parts)
    want = sr.kneighbors_graph(sp.vstack(parts, format="csr"), 10, mode="distance", metric="cosine",
                               context=sr.Context("cpu"))
    with _two_workers(stealing=False) as c:
        R = srd.RowMatrix.from_shards(c, paths)
        distributed.wait(R.blocks)
        peaks = _peak_under_each_limit(c, lambda limit: R.kneighbors_graph(
            10, mode="distance", metric="cosine", backend="cpu", memory_limit=limit), (7e6, 8e6, None), want,
            R.nblocks)
        assert peaks[None] > 7e6, f"without a limit the most a worker held was {peaks[None]} bytes: the test shows nothing"
        dist, ind = R.kneighbors(k=4, metric="cosine", backend="cpu", memory_limit="7MB")
        want_d, want_i = sr.kneighbors(sp.vstack(parts, format="csr"), k=4, metric="cosine", context=sr.Context("cpu"))
        np.testing.assert_array_equal(ind.compute(), want_i)
        np.testing.assert_array_equal(dist.compute(), want_d)
        with pytest.raises(sr.InvalidArgumentError, match="below what a worker must hold"):
            R.kneighbors_graph(10, memory_limit=5e6)


def test_mxm_memory_limit_bounds_what_each_worker_holds(tmp_path):
    """A·B on two workers with B's rows needed by every block of A (A: 8 blocks of 50 rows, 80
    entries a row over all of B's 4,000 rows; B: 4,000 x 100, half full), polled while it runs:
    under a memory limit of 3 MB and of 4 MB each worker's held bytes stay under it (A's blocks go
    in pieces, each fetching only its rows of B) and the product is the one-process one bit for
    bit; without a limit the same call held more than 3 MB on some worker (each block of A fetched
    most of B at once). A limit below what a worker must hold whatever the pieces (its blocks and
    its rows of C at their most, about 1.6 MB) is refused with that count."""
    rng = np.random.default_rng(9)
    a_parts = [sp.random(50, 4000, density=0.02, format="csr", random_state=rng) for _ in range(8)]
    b_parts = [sp.random(500, 100, density=0.5, format="csr", random_state=rng) for _ in range(8)]
    for part in a_parts + b_parts:
        part.data = np.round(part.data * 8) + 1  # integers: the sums are exact in any order
    want = sr.mxm(sp.vstack(a_parts, format="csr"), sp.vstack(b_parts, format="csr"), context=sr.Context("cpu"))
    with _two_workers(stealing=False) as c:
        A = srd.RowMatrix.from_shards(c, _shards(tmp_path, "a", a_parts))
        B = srd.RowMatrix.from_shards(c, _shards(tmp_path, "b", b_parts))
        distributed.wait(A.blocks + B.blocks)
        peaks = _peak_under_each_limit(c, lambda limit: A.mxm(B, backend="cpu", memory_limit=limit),
                                       (3e6, "4MB", None), want, A.nblocks, sort_columns=True)
        assert peaks[None] > 3e6, f"without a limit the most a worker held was {peaks[None]} bytes: the test shows nothing"
        with pytest.raises(sr.InvalidArgumentError, match="below what a worker must hold"):
            A.mxm(B, memory_limit=1e6)


@contextlib.contextmanager
def _cpu_and_gpu_workers():
    """A client of a cluster of two single-threaded worker processes, the second declaring a GPU
    resource (as `dask worker --resources GPU=1` does), and the two workers' addresses."""
    spec = {"cpu": {"cls": distributed.Nanny, "options": {"nthreads": 1}},
            "gpu": {"cls": distributed.Nanny, "options": {"nthreads": 1, "resources": {srd.GPU_RESOURCE: 1}}}}
    cluster = distributed.SpecCluster(workers=spec, scheduler={"cls": distributed.Scheduler,
                                                               "options": {"dashboard": False}})
    with distributed.Client(cluster) as c:
        c.wait_for_workers(2, timeout=120)
        info = c.scheduler_info()["workers"]
        gpu = [a for a, w in info.items() if w.get("resources", {}).get(srd.GPU_RESOURCE)]
        cpu = [a for a in info if a not in gpu]
        yield c, cpu[0], gpu[0]
    cluster.close()


def test_gpu_worker_beside_a_cpu_worker(rng):
    """backend="per_worker": the blocks placed on the worker with a GPU resource run on CUDA, the
    others on the CPU, and the k-NN answer is the one-process answer (counts under manhattan:
    every sum exact, so the two backends' distances agree bit for bit). Where no GPU is usable,
    the GPU worker's blocks are refused with a message that names the worker and the resource."""
    X = sp.random(900, 200, density=0.05, format="csr", random_state=rng, dtype=np.float64)
    X.data = np.ceil(X.data * 5)
    X = X.tolil()
    X[7] = X[300]  # ties across blocks
    X = X.tocsr()
    want_d, want_i = sr.kneighbors(X, k=6, metric="manhattan", context=sr.Context("cpu"))
    cuda = any(name == "cuda" for name, _ in CONTEXTS)
    with _cpu_and_gpu_workers() as (c, cpu, gpu):
        R = srd.RowMatrix.from_scipy(c, X, parts=4, workers=[gpu, gpu, gpu, cpu])
        distributed.wait(R.blocks)
        assert c.who_has(R.blocks) == {b.key: (gpu,) if j < 3 else (cpu,) for j, b in enumerate(R.blocks)}
        with pytest.raises(sr.InvalidArgumentError, match="3 workers for 4 blocks"):
            srd.RowMatrix.from_scipy(c, X, parts=4, workers=[gpu, gpu, cpu])
        if not cuda:
            with pytest.raises(sr.NoDeviceError, match=f"worker {gpu} declares a GPU resource"):
                R.kneighbors(k=6, metric="manhattan", backend="per_worker")[0].compute()
            return
        dist, ind = R.kneighbors(k=6, metric="manhattan", backend="per_worker")
        np.testing.assert_array_equal(ind.compute(), want_i)
        np.testing.assert_array_equal(dist.compute(), want_d)
        # the GPU worker searched its three blocks as one, so each worker made its kind of context alone
        made = c.run(lambda: sorted(srd._CONTEXTS))
        assert made == {gpu: ["cuda"], cpu: ["cpu"]}, made
        # with a memory limit, block by block: each block's matrix where it lives
        dist, ind = R.kneighbors(k=6, metric="manhattan", backend="per_worker", memory_limit="1GB")
        np.testing.assert_array_equal(ind.compute(), want_i)
        np.testing.assert_array_equal(dist.compute(), want_d)
        ran_on = c.gather([c.submit(srd._block_backend, b, pure=False) for b in R.blocks])
        assert ran_on == ["cuda", "cuda", "cuda", "cpu"], ran_on
