"""Distances and k-NN against scipy.spatial.distance.cdist and scikit-learn's NearestNeighbors on
real data (MovieLens ratings, graphs from ../shared/data) and random sparse data, through the C
library (ctypes), on the CPU backend and on CUDA where a GPU is usable."""
import os
import sys

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from scipy.spatial.distance import cdist

sys.path.insert(0, os.path.dirname(__file__))
from common import BACKENDS, DATA, SEED, lib, sr  # noqa: E402

# our name -> (scipy cdist name, how to prepare the dense rows, keyword arguments)
SCIPY = {
    "euclidean": ("euclidean", None, {}), "sqeuclidean": ("sqeuclidean", None, {}),
    "euclidean_unexpanded": ("euclidean", None, {}), "sqeuclidean_unexpanded": ("sqeuclidean", None, {}),
    "manhattan": ("cityblock", None, {}), "chebyshev": ("chebyshev", None, {}),
    "minkowski": ("minkowski", None, {"p": 3.0}), "canberra": ("canberra", None, {}),
    "hamming": ("hamming", None, {}), "jaccard": ("jaccard", "bool", {}), "dice": ("dice", "bool", {}),
    "russellrao": ("russellrao", "bool", {}), "cosine": ("cosine", None, {}),
    "correlation": ("correlation", None, {}), "braycurtis": ("braycurtis", None, {}),
    "jensenshannon": ("jensenshannon", "normalize", {}),
}


def ratings():
    path = os.path.join(DATA, "ratings/ml-latest-small/ratings.csv.gz")
    if not DATA or not os.path.exists(path):
        pytest.skip("MovieLens ratings not found (SPARSERING_TEST_DATA)")
    import knn_data
    return knn_data.ratings(DATA).astype(np.float64)


def random_sparse(m, n, density, rng):
    A = sp.random(m, n, density=density, format="csr", random_state=rng, dtype=np.float64)
    A.data = np.round(A.data * 4 + 1)  # small integers: ties and exact repeats happen
    A = A.tolil()
    A[1] = A[0]  # a repeated row
    A[2] = 0  # an empty row
    return A.tocsr()


def to_sr(ctx, A, where):
    return lib.from_scipy_f64(ctx, A, where)


def pairwise(ctx, where, metric, A, B, arg=0.0):
    Am, Bm = to_sr(ctx, A, where), to_sr(ctx, B, where)
    out = np.full((A.shape[0], B.shape[0]), np.nan)
    lib.pairwise(ctx, Am, Bm, lib.metric(metric), arg, sr.dense(out.ctypes.data, *out.shape, sr.FLOAT64,
                                                                   sr.ROW_MAJOR, sr.HOST))
    lib.free(Am)
    lib.free(Bm)
    return out


def reference(metric, A, B):
    name, prep, kw = SCIPY[metric]
    a, b = A.toarray(), B.toarray()
    if prep == "bool":
        a, b = a != 0, b != 0
    if prep == "normalize":  # scipy normalizes rows; ours takes them as given
        a = a / np.maximum(a.sum(1, keepdims=True), 1e-300)
        b = b / np.maximum(b.sum(1, keepdims=True), 1e-300)
    with np.errstate(all="ignore"):
        return cdist(a, b, name, **kw), a, b


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b[0])
@pytest.mark.parametrize("metric", sorted(SCIPY))
@pytest.mark.parametrize("source", ["ratings", "random"])
def test_pairwise_matches_scipy(backend, metric, source):
    _, ctx, where = backend
    rng = np.random.default_rng(SEED)
    X = ratings()[:120] if source == "ratings" else random_sparse(80, 60, 0.1, rng)
    ref, a, b = reference(metric, X, X)
    A = sp.csr_matrix(a.astype(np.float64)) if SCIPY[metric][1] else X
    got = pairwise(ctx, where, metric, A, A, 3.0 if metric == "minkowski" else 0.0)
    # documented differences: zero rows (scipy NaN) are distance 1 for cosine/correlation, 0 for dice
    # (jensenshannon: scipy's normalization of an all-zero row gives inf/NaN; nothing to compare)
    nan = ~np.isfinite(ref)
    if metric in ("cosine", "correlation"):
        assert np.all(got[nan] == 1.0)
    elif metric in ("dice", "jaccard", "braycurtis"):
        assert np.all(got[nan] == 0.0)
    # sums are exact to ~1e-15 of the rows' scale (the expanded forms to ~1e-6: they cancel); a
    # square root or p-th root of a cancelled difference turns that into its root
    big = max(1.0, float(np.abs(X).sum(1).max()))
    eps = 1e-6 if metric in ("euclidean", "sqeuclidean") else 1e-14
    if metric in ("euclidean", "euclidean_unexpanded", "jensenshannon", "minkowski"):
        eps = eps ** 0.5 if metric != "minkowski" else eps ** (1 / 3)
    np.testing.assert_allclose(got[~nan], ref[~nan], rtol=1e-7, atol=eps * big)


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b[0])
@pytest.mark.parametrize("metric", ["cosine", "euclidean", "manhattan", "chebyshev", "canberra"])
def test_knn_matches_sklearn(backend, metric):
    from sklearn.neighbors import NearestNeighbors
    _, ctx, where = backend
    X = ratings()
    Q = X[::7]
    k = 15
    nn = NearestNeighbors(n_neighbors=k + 1, metric=metric, algorithm="brute").fit(X if metric in (
        "cosine", "euclidean", "manhattan") else X.toarray())
    dref, iref = nn.kneighbors(Q if metric in ("cosine", "euclidean", "manhattan") else Q.toarray())
    Xm, Qm = to_sr(ctx, X, where), to_sr(ctx, Q, where)
    idx = np.full((Q.shape[0], k), -1, np.int64)
    dist = np.full((Q.shape[0], k), np.nan)
    lib.knn(ctx, Xm, Qm, k, lib.metric(metric), 0.0, idx.ctypes.data,
            sr.dense(dist.ctypes.data, Q.shape[0], k, sr.FLOAT64, sr.ROW_MAJOR, sr.HOST))
    lib.free(Xm)
    lib.free(Qm)
    np.testing.assert_allclose(dist, dref[:, :k], rtol=1e-6, atol=1e-6)
    # indices agree wherever the distance is not tied with a neighbour's (rank k+1 included)
    gap = np.abs(np.diff(dref, axis=1)) > 1e-6
    untied = np.ones_like(dref, bool)
    untied[:, 1:] &= gap
    untied[:, :-1] &= gap
    untied = untied[:, :k]
    assert metric == "chebyshev" or untied.mean() > 0.5  # the check has teeth (chebyshev: values 0.5..5 tie a lot)
    assert np.all(idx[untied] == iref[:, :k][untied])


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b[0])
def test_graph_jaccard(backend):
    """Jaccard k-NN of a real graph's adjacency rows (pattern matrices: bool values)."""
    _, ctx, where = backend
    path = os.path.join(DATA, "graphs/jagmesh7.mtx.gz")
    if not DATA or not os.path.exists(path):
        pytest.skip("graphs not found")
    A = sp.csr_matrix(scipy.io.mmread(path), dtype=np.float64)
    A = ((A + A.T) != 0).astype(np.float64).tocsr()
    ref, _, _ = reference("jaccard", A, A)
    got = pairwise(ctx, where, "jaccard", A, A)
    np.testing.assert_allclose(got, ref, atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b[0])
def test_nan_rejected(backend):
    _, ctx, where = backend
    A = sp.csr_matrix(np.array([[1.0, np.nan], [0.0, 2.0]]))
    with pytest.raises(RuntimeError, match="row 0 of the queries holds NaN"):
        pairwise(ctx, where, "cosine", A, A)
