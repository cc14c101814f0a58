"""sr.spmv_plan and sr.pagerank: the planned SpMV is bit-identical to the plain one; PageRank
against networkx (where installed) and a scipy power iteration, on each backend."""
import os

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

import sparsering as sr
from conftest import DATA


def skewed(rng, n, m, nnz, dtype=np.float32):
    """Columns drawn as n·u³ (a few popular ones), rows uniform, positive values."""
    rows = rng.integers(0, n, nnz)
    cols = (m * rng.random(nnz) ** 3).astype(np.int64)
    A = sp.csr_matrix((rng.random(nnz).astype(dtype) + 0.5, (rows, cols)), shape=(n, m))
    A.sum_duplicates()
    return A


def power_iteration(A, d, tol, max_iter):
    """networkx's PageRank in scipy: P = D⁻¹A, dangling rank spread evenly, Σ|Δ| <= n·tol."""
    n = A.shape[0]
    out = np.asarray(A.sum(axis=1)).ravel()
    P = sp.diags(np.divide(1.0, out, out=np.zeros(n), where=out > 0)) @ A
    r = np.full(n, 1.0 / n)
    for _ in range(max_iter):
        new = d * (P.T @ r) + ((1 - d) + d * r[out == 0].sum()) / n
        done = np.abs(new - r).sum() <= n * tol
        r = new
        if done:
            break
    return r


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_spmv_plan_identical(ctx, rng, dtype, monkeypatch):
    A = skewed(rng, 5000, 150_000, 80_000, dtype)
    M = sr.Matrix(A, context=ctx)
    x = rng.random(A.shape[1]).astype(dtype)
    plain = {s: sr.spmv(M, x, s, context=ctx) for s in ("plus_times", "min_plus", "max_times")}
    monkeypatch.setenv("SPARSERING_SPMV_PLAN", "hot" if ctx.on_device else "1")  # the planned kernel, always
    info = sr.spmv_plan(M, context=ctx)
    assert info.in_use and 0 < info.hot_share <= 1 and info.bytes > 0 and info.seconds > 0
    for s, y in plain.items():
        assert np.array_equal(sr.spmv(M, x, s, context=ctx).view(np.uint8), y.view(np.uint8)), s
    np.testing.assert_allclose(plain["plus_times"], A @ x, rtol=1e-4 if dtype == np.float32 else 1e-12)
    sr.spmv_plan_free(M, context=ctx)
    assert np.array_equal(sr.spmv(M, x, context=ctx), plain["plus_times"])
    with pytest.raises(TypeError, match="sparsering Matrix"):
        sr.spmv_plan(A, context=ctx)


def test_pagerank_against_power_iteration(ctx, rng):
    A = skewed(rng, 4000, 4000, 30_000, np.float64)
    A = sp.csr_matrix(A[:, :4000])
    want = power_iteration(A, 0.85, 1e-10, 500)
    for plan in (False, True):
        r, info = sr.pagerank(sr.Matrix(A, context=ctx), tol=1e-10, max_iter=500, plan=plan, context=ctx)
        assert np.abs(r - want).sum() < 1e-10 and abs(r.sum() - 1) < 1e-12
        assert info.iterations > 1 and info.iterate_seconds > 0 and (plan or not info.plan.in_use)
    r32, _ = sr.pagerank(A, tol=1e-10, dtype=np.float32, context=ctx)
    assert r32.dtype == np.float32 and np.abs(r32 - want).sum() < 1e-4


def test_pagerank_errors(ctx):
    with pytest.raises(ValueError, match="square"):
        sr.pagerank(sp.random(5, 7, density=0.5, format="csr"), context=ctx)
    with pytest.raises(ValueError, match="negative"):
        sr.pagerank(-sp.identity(4, format="csr"), context=ctx)
    with pytest.raises(ValueError, match="float32 or float64"):
        sr.pagerank(sp.identity(4, format="csr"), dtype=np.int32, context=ctx)


@pytest.mark.skipif(not os.path.exists(os.path.join(DATA, "graphs", "debian-depends.mtx.gz")),
                    reason="debian-depends not in SPARSERING_TEST_DATA")
def test_pagerank_debian_against_networkx(ctx):
    nx = pytest.importorskip("networkx")
    A = scipy.io.mmread(os.path.join(DATA, "graphs", "debian-depends.mtx.gz")).tocsr()
    ref = nx.pagerank(nx.from_scipy_sparse_array(A, create_using=nx.DiGraph), alpha=0.85, tol=1e-10, max_iter=1000)
    ref = np.array([ref[i] for i in range(A.shape[0])])
    r, info = sr.pagerank(A, tol=1e-10, max_iter=1000, context=ctx)
    assert np.abs(r - ref).sum() < 1e-12
