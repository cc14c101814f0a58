"""radius_neighbors and radius_neighbors_graph against scikit-learn's."""
import numpy as np
import pytest
import scipy.sparse as sp
from conftest import movielens, random_csr

import sparsering as sr

pytest.importorskip("sklearn")
from sklearn.metrics import pairwise_distances as sk_pairwise  # noqa: E402
from sklearn.neighbors import NearestNeighbors as SkNearestNeighbors  # noqa: E402
from sklearn.neighbors import radius_neighbors_graph as sk_radius_graph  # noqa: E402


def continuous(rng, m, n, density):
    """Random real values, no empty rows."""
    X = sp.random(m, n, density=density, format="csr", random_state=rng, dtype=np.float64)
    return X[np.diff(X.indptr) > 0]


def radius_between(D, q):
    """A radius near the q-quantile of the distances D, halfway between two of them: no pair lies
    at the radius itself, where the last bit of either library's distance would decide. Two
    distances a few ulps apart are one pair's D[i, j] and D[j, i] (scikit-learn's are not exactly
    symmetric), so the gap taken is wider than rounding."""
    d = np.unique(D)
    i = min(int(q * len(d)), len(d) - 2)
    while i + 2 < len(d) and d[i + 1] - d[i] <= 1e-9 * d[i + 1]:
        i += 1
    return (d[i] + d[i + 1]) / 2


def same_graph(ours, theirs, tol=1e-9):
    """Same pairs (explicit zeros included) and values."""
    assert ours.shape == theirs.shape and ours.dtype == np.float64
    a, b = ours.tocoo(), theirs.tocoo()
    assert set(zip(a.row, a.col)) == set(zip(b.row, b.col))
    assert abs(ours - theirs).max() <= tol if ours.nnz else True


@pytest.mark.parametrize("mode", ["connectivity", "distance"])
@pytest.mark.parametrize("include_self", [False, True])
@pytest.mark.parametrize("metric", ["euclidean", "cosine", "manhattan", "chebyshev"])
def test_graph_matches_sklearn(ctx, rng, mode, include_self, metric):
    X = continuous(rng, 150, 40, 0.2)
    dense = X.toarray() if metric == "chebyshev" else X  # scikit-learn's chebyshev takes dense input only
    r = radius_between(sk_pairwise(dense, metric=metric), 0.1)
    ours = sr.radius_neighbors_graph(X, r, mode=mode, metric=metric, include_self=include_self, context=ctx)
    theirs = sk_radius_graph(dense, r, mode=mode, metric=metric, include_self=include_self)
    same_graph(ours, theirs)
    assert ours.has_sorted_indices


def test_queries_and_sorted_results(ctx, rng):
    X, Q = continuous(rng, 200, 30, 0.25), continuous(rng, 20, 30, 0.25)
    r = radius_between(sk_pairwise(Q, X), 0.15)
    ours = sr.NearestNeighbors(radius=r, context=ctx).fit(X)
    theirs = SkNearestNeighbors(radius=r, algorithm="brute").fit(X)
    for q in (None, Q):
        d1, i1 = ours.radius_neighbors(q, sort_results=True)
        d2, i2 = theirs.radius_neighbors(q, sort_results=True)
        assert len(d1) == len(d2)
        for a, b, ia, ib in zip(d1, d2, i1, i2):
            np.testing.assert_array_equal(ia, ib)
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
        for mode in ("connectivity", "distance"):
            same_graph(ours.radius_neighbors_graph(q, mode=mode), theirs.radius_neighbors_graph(q, mode=mode))


def test_duplicates_empty_rows_and_edges(ctx, rng):
    X = random_csr(rng, 60, 20, 0.2)  # row 1 repeats row 0, row 2 is empty
    G = sr.radius_neighbors_graph(X, 0.0, mode="distance", metric="euclidean", context=ctx)
    pairs = set(zip(*G.tocoo().coords))
    assert (0, 1) in pairs and (1, 0) in pairs and G[0, 1] == 0  # the equal rows' explicit zeros are kept
    with pytest.raises(sr.InvalidArgumentError, match="never negative"):  # as scikit-learn refuses it
        sr.radius_neighbors_graph(X, -1.0, context=ctx)
    everything = sr.radius_neighbors_graph(X, np.inf, include_self=True, context=ctx)
    assert everything.nnz == 60 * 60
    dist, ind = sr.radius_neighbors(X, X[2:3], radius=np.inf, metric="euclidean", context=ctx)
    assert len(ind[0]) == 60 and np.all(np.diff(ind[0]) > 0)


def test_movielens_matches_sklearn(ctx):
    X = movielens()[:300]
    r = np.quantile(sk_pairwise(X, metric="cosine"), 0.05)
    ours = sr.radius_neighbors_graph(X, r, mode="distance", metric="cosine", context=ctx)
    theirs = sk_radius_graph(X, r, mode="distance", metric="cosine")
    D = sk_pairwise(X, metric="cosine")
    a, b = set(zip(*ours.tocoo().coords)), set(zip(*theirs.tocoo().coords))
    for i, j in a ^ b:  # a disagreement only where float rounding decides: at the radius itself
        assert abs(D[i, j] - r) <= 1e-6, (i, j, D[i, j], r)
    assert len(a ^ b) <= 2


def test_batch_over_workspace_raises(rng):
    X = continuous(rng, 200, 20, 0.3)
    small = sr.Context("cpu", workspace_limit=64 * 1024)
    with pytest.raises(sr.OutOfMemoryError, match="lower the radius"):
        sr.radius_neighbors_graph(X, np.inf, context=small)
    G = sr.radius_neighbors_graph(X, 0.3, context=small)  # many batches, few pairs: fine
    same_graph(G, sk_radius_graph(X, 0.3, mode="connectivity"))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cosine_ties_of_count_data_are_exact(ctx, rng, dtype):
    """Word counts put many pairs at exactly cosine distance 1/2 (4(q.x)^2 = |q|^2 |x|^2, decided
    here in integers): every one of them is within radius 0.5, every pair beyond is not."""
    X = sp.random(400, 12, density=0.3, format="csr", random_state=rng,
                  data_rvs=lambda n: rng.integers(1, 4, n)).astype(np.int64)
    dots = (X @ X.T).toarray()
    sq = np.asarray(X.multiply(X).sum(1)).ravel()
    within = 4 * dots.astype(np.float64) ** 2 >= np.outer(sq, sq)  # exact in float64 at these sizes
    within &= (sq[:, None] > 0) & (sq[None, :] > 0)                 # empty rows: cosine 1
    ties = int((4 * dots.astype(np.float64) ** 2 == np.outer(sq, sq))[np.outer(sq, sq) > 0].sum())
    assert ties > 100                                               # the case this test is about
    G = sr.radius_neighbors_graph(X.astype(dtype), 0.5, mode="connectivity", metric="cosine", include_self=True,
                                  context=ctx)
    np.testing.assert_array_equal(G.toarray() != 0, within)


def test_negative_radius_is_refused(ctx, rng):
    """A negative radius matches no distance: refused with a message, not answered with nothing
    (found trying the package as a new user, issue 58); the inner product, a similarity, takes one."""
    X = random_csr(rng, 40, 12, 0.3, np.float32)
    with pytest.raises(sr.InvalidArgumentError, match="never negative"):
        sr.radius_neighbors(X, X[:5], radius=-1.0, metric="cosine", context=ctx)
    with pytest.raises(sr.InvalidArgumentError, match="NaN"):
        sr.radius_neighbors_graph(X, float("nan"), metric="euclidean", context=ctx)
    sr.radius_neighbors_graph(X, -0.5, metric="inner_product", context=ctx)
