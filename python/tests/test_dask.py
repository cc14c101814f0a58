"""sparsering.dask against the one-process answer, on a LocalCluster of two CPU worker processes."""
import numpy as np
import pytest
import scipy.sparse as sp

import sparsering as sr

distributed = pytest.importorskip("dask.distributed")
import sparsering.dask as srd  # noqa: E402


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    with distributed.Client(cluster) as c:
        c.wait_for_workers(2, timeout=120)
        yield c
    cluster.close()


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
    np.testing.assert_array_equal(got.indptr, want.indptr)
    np.testing.assert_array_equal(got.indices, want.indices)
    np.testing.assert_array_equal(got.data, want.data)


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
