"""kneighbors_graph against scikit-learn's."""
import numpy as np
import pytest
import scipy.sparse as sp
from conftest import movielens

import sparsering as sr

pytest.importorskip("sklearn")
from sklearn.metrics import pairwise_distances as sk_pairwise  # noqa: E402
from sklearn.neighbors import NearestNeighbors as SkNearestNeighbors  # noqa: E402
from sklearn.neighbors import kneighbors_graph as sk_kneighbors_graph  # noqa: E402


def continuous(rng, m, n, density):
    """Random real values: no ties, so the graphs must agree entry for entry."""
    return sp.random(m, n, density=density, format="csr", random_state=rng, dtype=np.float64)


@pytest.mark.parametrize("mode", ["connectivity", "distance"])
@pytest.mark.parametrize("include_self", [False, True])
@pytest.mark.parametrize("metric", ["euclidean", "cosine", "manhattan"])
def test_matches_sklearn(ctx, rng, mode, include_self, metric):
    X = continuous(rng, 120, 40, 0.2)
    X = X[np.diff(X.indptr) > 0]  # scikit-learn's cosine of empty rows differs (documented)
    ours = sr.kneighbors_graph(X, 6, mode=mode, metric=metric, include_self=include_self, context=ctx)
    theirs = sk_kneighbors_graph(X, 6, mode=mode, metric=metric, include_self=include_self)
    assert ours.dtype == np.float64 and ours.shape == theirs.shape and ours.nnz == theirs.nnz
    assert abs(ours - theirs).max() <= 1e-12
    assert ours.has_sorted_indices


def test_symmetrized(ctx, rng):
    X = continuous(rng, 80, 30, 0.3)
    G = sr.kneighbors_graph(X, 5, mode="distance", context=ctx)
    S = sr.kneighbors_graph(X, 5, mode="distance", symmetrize=True, context=ctx)
    np.testing.assert_allclose(S.toarray(), np.maximum(G.toarray(), G.T.toarray()))
    C = sr.kneighbors_graph(X, 5, symmetrize=True, context=ctx)
    np.testing.assert_array_equal(C.toarray() != 0, (G.toarray() != 0) | (G.T.toarray() != 0))


def test_nearest_neighbors_graph_methods(ctx, rng):
    X = continuous(rng, 90, 30, 0.3)
    Q = continuous(rng, 10, 30, 0.3)
    ours = sr.NearestNeighbors(n_neighbors=4, context=ctx).fit(X)
    theirs = SkNearestNeighbors(n_neighbors=4, algorithm="brute").fit(X)
    for q in (None, Q):
        for mode in ("connectivity", "distance"):
            assert abs(ours.kneighbors_graph(q, mode=mode) - theirs.kneighbors_graph(q, mode=mode)).max() <= 1e-12


def test_ties_and_duplicates_on_movielens(ctx):
    X = movielens()[:400]
    G = sr.kneighbors_graph(X, 8, mode="distance", metric="manhattan", context=ctx)
    ref = sk_kneighbors_graph(X, 8, mode="distance", metric="manhattan")
    D = sk_pairwise(X, metric="manhattan")
    for i in range(X.shape[0]):  # same distances per row; our columns hold exactly those distances
        row, ref_row = G[i], ref[i]
        assert i not in row.indices and len(row.indices) == 8
        np.testing.assert_allclose(np.sort(row.data), np.sort(ref_row.data), rtol=1e-12)
        np.testing.assert_allclose(row.data, D[i, row.indices], rtol=1e-12)


def test_errors(ctx, rng):
    X = continuous(rng, 10, 5, 0.5)
    with pytest.raises(sr.InvalidArgumentError, match="k must be 1..9: a row is not its own neighbour"):
        sr.kneighbors_graph(X, 10, context=ctx)
    assert sr.kneighbors_graph(X, 10, include_self=True, context=ctx).nnz == 100
    with pytest.raises(ValueError, match="mode must be"):
        sr.kneighbors_graph(X, 3, mode="weights")
