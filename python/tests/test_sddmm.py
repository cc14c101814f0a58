"""Sampled products, the fused SDDMM→SpMM and factorization against numpy references in float64."""
import csv
import gzip
import os

import numpy as np
import pytest
import scipy.sparse as sp

import sparsering as sr
from conftest import DATA


def rand_csr(rng, m, n, density, dtype=np.float64):
    S = sp.random(m, n, density=density, format="csr", random_state=rng, dtype=np.float64)
    S.data = rng.uniform(-1, 1, S.nnz)
    return S.astype(dtype)


def sampled(S, A, B, alpha=1.0, beta=0.0, pattern=False):
    """alpha * (S ⊙ A·Bᵀ) + beta * S at S's entries, in float64, in S's entry order."""
    S = S.tocsr()
    rows = np.repeat(np.arange(S.shape[0]), np.diff(S.indptr))
    dots = np.einsum("ij,ij->i", A[rows].astype(np.float64), B[S.indices].astype(np.float64))
    s = S.data.astype(np.float64)
    return alpha * (dots if pattern else s * dots) + beta * s


@pytest.mark.parametrize("K", [1, 7, 32, 130])
@pytest.mark.parametrize("order", ["C", "F"])
def test_sddmm_against_numpy(ctx, rng, K, order):
    S = rand_csr(rng, 120, 90, 0.08)
    A = np.asarray(rng.standard_normal((120, K)), order=order)
    B = np.asarray(rng.standard_normal((90, K)), order=order)
    for alpha, beta, pattern in [(1.0, 0.0, False), (-1.0, 1.0, True), (2.5, -0.5, False), (0.0, 1.0, False)]:
        C = sr.sddmm(S, A, B, alpha=alpha, beta=beta, pattern=pattern, context=ctx)
        assert (C.indptr == S.indptr).all() and (C.indices == S.indices).all()
        np.testing.assert_allclose(C.data, sampled(S, A, B, alpha, beta, pattern), rtol=1e-10, atol=1e-10)
    vals = sr.sddmm_values(S, A, B, alpha=-1.0, beta=1.0, pattern=True, context=ctx)
    np.testing.assert_allclose(vals, sampled(S, A, B, -1.0, 1.0, True), rtol=1e-10, atol=1e-10)
    out = np.full(S.nnz, np.nan)
    assert sr.sddmm_values(S, A, B, out=out, context=ctx) is out
    np.testing.assert_allclose(out, sampled(S, A, B), rtol=1e-10, atol=1e-10)
    C32 = sr.sddmm(S.astype(np.float32), A.astype(np.float32), B.astype(np.float32), context=ctx)
    assert C32.dtype == np.float32
    np.testing.assert_allclose(C32.data, sampled(S, A, B), rtol=2e-4, atol=2e-4 * np.sqrt(K))


@pytest.mark.parametrize("K", [32, 128])
def test_precision_modes_on_well_filled_s(ctx, rng, K):
    """A band of S (whole tiles on a GPU: tensor cores for "exact" and "tf32", the FMA pipes for
    "float32"): exact and float32 within float32's rounding of the float64 products, tf32 within
    its own bound; the fused product's scores the same."""
    n = 600
    S = sp.csr_matrix(sp.diags([rng.uniform(0.5, 1.5, n - abs(o)) for o in range(-150, 151)], range(-150, 151)),
                      dtype=np.float32)
    A = rng.standard_normal((n, K)).astype(np.float32)
    B = rng.standard_normal((n, K)).astype(np.float32)
    want = sampled(S, A, B)
    rows = np.repeat(np.arange(n), np.diff(S.indptr))
    scale = np.einsum("ij,ij->i", np.abs(A[rows].astype(np.float64)),
                      np.abs(B[S.indices].astype(np.float64))) * np.abs(S.data)  # Σ |s·a·b|
    for precision, bound in [("exact", 1e-6 * np.sqrt(K)), ("float32", 1e-6 * np.sqrt(K)), ("tf32", 2e-3)]:
        got = sr.sddmm_values(S, A, B, context=ctx, precision=precision)
        assert (np.abs(got - want) <= bound * scale + 1e-30).all(), precision
        C = sr.sddmm(S, A, B, context=ctx, precision=precision)
        np.testing.assert_array_equal(C.data, got)
    V = rng.standard_normal((n, 16)).astype(np.float32)
    fused_want = sp.csr_matrix((want, S.indices, S.indptr), shape=S.shape) @ V.astype(np.float64)
    for precision, rtol in [("exact", 1e-4), ("float32", 1e-4), ("tf32", 2e-2)]:
        O = sr.sddmm_spmm(S, A, B, V, context=ctx, precision=precision)
        np.testing.assert_allclose(O, fused_want, rtol=rtol, atol=rtol * np.abs(fused_want).max())
    with pytest.raises(ValueError, match="precision"):
        sr.sddmm(S, A, B, context=ctx, precision="half")


def test_sddmm_keeps_explicit_zeros_and_bool_pattern(ctx, rng):
    S = rand_csr(rng, 50, 40, 0.1)
    S.data[::3] = 0.0  # explicit zeros: entries that stay
    A, B = rng.standard_normal((50, 8)), rng.standard_normal((40, 8))
    C = sr.sddmm(S, A, B, context=ctx)
    assert C.nnz == S.nnz
    assert (C.data[::3] == 0).all()
    T = rand_csr(rng, 50, 40, 0.1)
    P = sr.sddmm(T.astype(bool), A, B, context=ctx)  # a bool S samples its pattern
    np.testing.assert_allclose(P.data, sampled(T, A, B, pattern=True), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", ["graphs/pushpull.mtx.gz", "sparse-dnn/n1024-l1.mtx.gz"])
def test_sddmm_on_real_matrices(ctx, rng, name):
    path = os.path.join(DATA, name)
    if not DATA or not os.path.exists(path):
        pytest.skip(f"{name} is not present (SPARSERING_TEST_DATA)")
    S = sr.read_mm(path, dtype=np.float64, context=sr.Context("cpu")).to_scipy()
    A, B = rng.standard_normal((S.shape[0], 48)), rng.standard_normal((S.shape[1], 48))
    C = sr.sddmm(S, A, B, alpha=0.5, beta=2.0, context=ctx)
    np.testing.assert_allclose(C.data, sampled(S, A, B, 0.5, 2.0), rtol=1e-10, atol=1e-10)
    V = rng.standard_normal((S.shape[1], 20))
    O = sr.sddmm_spmm(S, A, B, V, alpha=0.5, pattern=True, context=ctx)
    P = sp.csr_matrix((sampled(S, A, B, 0.5, pattern=True), S.indices, S.indptr), shape=S.shape)
    np.testing.assert_allclose(O, P @ V, rtol=1e-9, atol=1e-9)


def test_sddmm_semirings(ctx, rng):
    S = rand_csr(rng, 30, 20, 0.2)
    A, B = rng.standard_normal((30, 5)), rng.standard_normal((20, 5))
    C = sr.sddmm(S, A, B, semiring="min_plus", pattern=True, context=ctx).tocoo()
    np.testing.assert_allclose(C.data, (A[C.row][:, :, None] + B[C.col][:, :, None]).min(axis=(1, 2)))
    C = sr.sddmm(S, A, B, semiring="max_times", pattern=True, context=ctx).tocoo()
    np.testing.assert_allclose(C.data, (A[C.row] * B[C.col]).max(axis=1))


@pytest.mark.parametrize("softmax", [False, True])
def test_fused_against_unfused(ctx, rng, softmax):
    keep = np.ones(200)
    keep[3] = 0  # an empty row: zeros out
    S = sp.csr_matrix(sp.diags(keep) @ rand_csr(rng, 200, 150, 0.05))
    S.eliminate_zeros()
    A, B, V = rng.standard_normal((200, 16)), rng.standard_normal((150, 16)), rng.standard_normal((150, 24))
    scores = sp.csr_matrix((sampled(S, A, B, alpha=0.3), S.indices, S.indptr), shape=S.shape)
    if softmax:
        dense = np.where(S.toarray() != 0, scores.toarray(), -np.inf)
        with np.errstate(invalid="ignore"):
            top = dense.max(axis=1, keepdims=True)
            e = np.where(np.isfinite(dense), np.exp(dense - np.where(np.isfinite(top), top, 0)), 0)
            weights = e / np.maximum(e.sum(axis=1, keepdims=True), 1e-300)
        want = weights @ V
    else:
        want = scores @ V
    O = sr.sddmm_spmm(S, A, B, V, alpha=0.3, softmax=softmax, context=ctx)
    np.testing.assert_allclose(O, want, rtol=1e-9, atol=1e-9)
    assert (O[3] == 0).all()
    O2 = np.asfortranarray(np.ones_like(want))
    sr.sddmm_spmm(S, A, B, V, alpha=0.3, softmax=softmax, out=O2, accumulate=True, context=ctx)
    np.testing.assert_allclose(O2, want + 1, rtol=1e-9, atol=1e-9)


def test_errors(ctx, rng):
    S = rand_csr(rng, 10, 8, 0.3)
    with pytest.raises(sr.InvalidArgumentError, match="K columns"):
        sr.sddmm(S, np.ones((10, 3)), np.ones((8, 4)), context=ctx)
    with pytest.raises(sr.InvalidArgumentError, match="rows"):
        sr.sddmm(S, np.ones((8, 3)), np.ones((10, 3)), context=ctx)
    with pytest.raises(ValueError):
        sr.sddmm_spmm(S, np.ones((10, 3)), np.ones((8, 3)), np.ones((8, 2)), accumulate=True, context=ctx)


def als_reference(R, H, rank, lam, sweeps):
    """Exact ALS-WR in numpy (a solve per row), centered by the mean rating."""
    R = R.tocsr()
    mu = R.data.mean()
    RT = R.T.tocsr()
    W = np.zeros((R.shape[0], rank))
    H = H.astype(np.float64).copy()

    def half(M, Y, X):
        for i in range(M.shape[0]):
            lo, hi = M.indptr[i], M.indptr[i + 1]
            if hi == lo:
                X[i] = 0
                continue
            Yi = Y[M.indices[lo:hi]]
            X[i] = np.linalg.solve(Yi.T @ Yi + lam * (hi - lo) * np.eye(rank), Yi.T @ (M.data[lo:hi] - mu))
    for _ in range(sweeps):
        half(R, H, W)
        half(RT, W, H)
    return W, H, mu


def rmse(R, W, H, mu):
    R = R.tocoo()
    return np.sqrt(np.mean((R.data - mu - np.einsum("ij,ij->i", W[R.row], H[R.col])) ** 2))


def movielens():
    path = os.path.join(DATA, "ratings/ml-latest-small/ratings.csv.gz")
    if not DATA or not os.path.exists(path):
        pytest.skip("MovieLens small is not present (SPARSERING_TEST_DATA)")
    with gzip.open(path, "rt") as f:
        rec = [(int(r["userId"]), int(r["movieId"]), float(r["rating"])) for r in csv.DictReader(f)]
    u, i, v = map(np.array, zip(*rec))
    _, u = np.unique(u, return_inverse=True)
    _, i = np.unique(i, return_inverse=True)
    return sp.csr_matrix((v, (u, i)))


def test_factorize_matches_exact_als_on_movielens(ctx, rng):
    R = movielens()
    test = rng.random(R.nnz) < 0.1
    Rc = R.tocoo()
    train = sp.csr_matrix((Rc.data[~test], (Rc.row[~test], Rc.col[~test])), shape=R.shape)
    held = sp.csr_matrix((Rc.data[test], (Rc.row[test], Rc.col[test])), shape=R.shape)
    rank, lam = 8, 0.1
    H0 = rng.uniform(-0.5, 0.5, (R.shape[1], rank)) / np.sqrt(rank)
    Wr, Hr, mu = als_reference(train, H0, rank, lam, 3)
    # as many CG steps as the rank: each system solved exactly, so the factors agree
    f = sr.factorize(train, rank, test=held, lam=lam, iterations=3, cg_steps=rank + 4, H0=H0, dtype=np.float64,
                     context=ctx)
    assert abs(f.mean - mu) < 1e-12
    np.testing.assert_allclose(f.W, Wr, atol=1e-5)
    np.testing.assert_allclose(f.H, Hr, atol=1e-5)
    assert abs(f.history[-1][1] - rmse(train, Wr, Hr, mu)) < 1e-6
    assert abs(f.history[-1][2] - rmse(held, Wr, Hr, mu)) < 1e-6
    # the default: 3 warm-started CG steps a half sweep, float32: within 1% of exact ALS's held-out RMSE
    Wr, Hr, mu = als_reference(train, H0, rank, lam, 8)
    f = sr.factorize(train, rank, test=held, lam=lam, iterations=8, H0=H0, context=ctx)
    assert f.history[-1][2] < rmse(held, Wr, Hr, mu) * 1.01
    assert [s[0] for s in f.history] == list(range(1, 9))


def test_factorize_callback_stops(ctx, rng):
    R = rand_csr(rng, 40, 30, 0.3)
    R.data += 3
    seen = []
    f = sr.factorize(R, 4, iterations=10, callback=lambda step: seen.append(step) or len(seen) == 2, context=ctx)
    assert len(seen) == 2 and len(f.history) == 2
