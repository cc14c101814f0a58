"""The fused pattern against numpy, and the ridge / logistic solvers against scikit-learn."""
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression, Ridge

import sparsering as sr


def rand_X(rng, m, n, density):
    X = sp.random(m, n, density=density, format="csr", random_state=rng)
    X.data = rng.standard_normal(X.nnz)
    return X


@pytest.mark.parametrize("shape", [(500, 40), (30, 3000), (200, 1)])
@pytest.mark.parametrize("dense", [False, True])
def test_fused_pattern_forms(ctx, rng, shape, dense):
    m, n = shape
    Xs = rand_X(rng, m, n, 0.1)
    X = Xs.toarray() if dense else Xs
    A = Xs.toarray()
    y, v, z = rng.standard_normal(n), rng.standard_normal(m), rng.standard_normal(n)
    w = sr.fused_pattern(X, y, v=v, z=z, alpha=0.5, beta=2.0, context=ctx)
    np.testing.assert_allclose(w, 0.5 * A.T @ (v * (A @ y)) + 2.0 * z, rtol=1e-10, atol=1e-10)
    p = rng.standard_normal(m)
    np.testing.assert_allclose(sr.fused_pattern(X, p, form="xty", context=ctx), A.T @ p, rtol=1e-10, atol=1e-10)
    zm = rng.standard_normal(m)
    np.testing.assert_allclose(sr.fused_pattern(X, y, v=v, z=zm, beta=-1.0, form="xy", context=ctx),
                               v * (A @ y) - zm, rtol=1e-10, atol=1e-10)
    out = z.copy()  # w = z: (XᵀX + 3I)·z
    sr.fused_pattern(X, z, z=out, beta=3.0, out=out, context=ctx)
    np.testing.assert_allclose(out, A.T @ (A @ z) + 3 * z, rtol=1e-10, atol=1e-10)
    w32 = sr.fused_pattern(X.astype(np.float32), y.astype(np.float32), context=ctx)
    assert w32.dtype == np.float32
    np.testing.assert_allclose(w32, A.T @ (A @ y), rtol=2e-4, atol=2e-4 * np.abs(A).sum() / max(n, 1))


def test_ridge_matches_sklearn(ctx, rng):
    X = rand_X(rng, 400, 60, 0.1)
    y = rng.standard_normal(400)
    for lam in (0.1, 10.0):
        got = sr.ridge(X, y, lam, context=ctx)
        want = Ridge(alpha=lam, fit_intercept=False, solver="sparse_cg", tol=1e-14, max_iter=10_000).fit(X, y).coef_
        exact = np.linalg.solve((X.T @ X).toarray() + lam * np.eye(60), X.T @ y)
        np.testing.assert_allclose(got.coef, exact, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(got.coef, want, rtol=1e-6, atol=1e-9)
        assert got.history and got.history[-1][3] < 1e-8 * np.linalg.norm(2 * X.T @ y) * 100
        objective = np.sum((X @ got.coef - y) ** 2) + lam * got.coef @ got.coef  # reported after every step
        assert abs(got.history[-1][2] - objective) < 1e-9 * objective
        assert all(later[2] <= earlier[2] * (1 + 1e-12) for earlier, later in zip(got.history, got.history[1:]))


def test_preconditioners(ctx, rng):
    X = rand_X(rng, 500, 40, 0.2)
    X = (X @ sp.diags(10.0 ** (np.arange(40) % 4))).tocsr()  # columns of scales 1 to 1000
    y = rng.standard_normal(500)
    jacobi = sr.ridge(X, y, 0.5, context=ctx)
    plain = sr.ridge(X, y, 0.5, context=ctx, preconditioner=None)
    # both stop at ‖r‖ <= 1e-10·‖b‖; on columns this unevenly scaled that fixes the coefficients to
    # ~1e-8 of the largest, not each small one to 1e-6 of itself
    assert np.abs(jacobi.coef - plain.coef).max() <= 1e-6 * np.abs(plain.coef).max()
    assert jacobi.history[-1][0] < plain.history[-1][0]
    with pytest.raises(ValueError, match="preconditioner"):
        sr.ridge(X, y, 0.5, context=ctx, preconditioner="ilu")
    labels = np.where(y > 0, 1.0, -1.0)
    pcg = sr.logistic_regression(X, labels, 2.0, context=ctx)
    cg = sr.logistic_regression(X, labels, 2.0, context=ctx, preconditioner=None)
    assert np.abs(pcg.coef - cg.coef).max() <= 1e-6 * np.abs(cg.coef).max()
    assert pcg.history[-1][1] < cg.history[-1][1]


def test_logistic_matches_sklearn(ctx, rng):
    X = rand_X(rng, 600, 50, 0.15)
    truth = rng.standard_normal(50)
    y = np.where(X @ truth + 0.3 * rng.standard_normal(600) > 0, 1.0, -1.0)
    for C in (0.1, 2.0):
        got = sr.logistic_regression(X, y, C, context=ctx)
        # newton-cholesky reaches ‖∇‖ ~ 1e-15 at this tolerance; lbfgs and liblinear stop near 1e-7
        # to 1e-6 whatever tol asks, so they agree to ~1e-5 only
        want = LogisticRegression(C=C, fit_intercept=False, solver="newton-cholesky", tol=1e-15, max_iter=1000)
        np.testing.assert_allclose(got.coef, want.fit(X, y).coef_.ravel(), rtol=1e-6, atol=1e-9)
        lbfgs = LogisticRegression(C=C, fit_intercept=False, solver="lbfgs", tol=1e-14, max_iter=100_000).fit(X, y)
        np.testing.assert_allclose(got.coef, lbfgs.coef_.ravel(), rtol=1e-4, atol=1e-6)
        objective = 0.5 * got.coef @ got.coef + C * np.logaddexp(0, -y * (X @ got.coef)).sum()
        assert abs(got.history[-1][2] - objective) < 1e-9 * objective
    got01 = sr.logistic_regression(X, (y > 0).astype(float), 1.0, context=ctx)  # 1/0 labels read as ±1
    np.testing.assert_allclose(got01.coef, sr.logistic_regression(X, y, 1.0, context=ctx).coef)


def test_intercepts_match_sklearn(ctx, rng):
    X = rand_X(rng, 500, 30, 0.2)
    y = X @ rng.standard_normal(30) + 3.0 + 0.1 * rng.standard_normal(500)
    got = sr.ridge(X, y, 2.0, fit_intercept=True, context=ctx)
    want = Ridge(alpha=2.0, fit_intercept=True, solver="sparse_cg", tol=1e-14, max_iter=10_000).fit(X, y)
    np.testing.assert_allclose(got.coef, want.coef_, rtol=1e-6, atol=1e-9)
    assert abs(got.intercept - want.intercept_) < 1e-8 * max(1, abs(want.intercept_))
    objective = np.sum((X @ got.coef + got.intercept - y) ** 2) + 2.0 * got.coef @ got.coef
    assert abs(got.history[-1][2] - objective) < 1e-9 * objective and got.history[-1][5] == got.intercept
    labels = np.where(y > 3.2, 1.0, -1.0)
    got = sr.logistic_regression(X, labels, 1.5, fit_intercept=True, context=ctx)
    want = LogisticRegression(C=1.5, solver="newton-cholesky", tol=1e-15, max_iter=1000).fit(X, labels)
    np.testing.assert_allclose(got.coef, want.coef_.ravel(), rtol=1e-6, atol=1e-9)
    assert abs(got.intercept - want.intercept_[0]) < 1e-7
    assert got.history[-1][5] == got.intercept


def test_solver_errors(ctx, rng):
    X = rand_X(rng, 20, 5, 0.5)
    with pytest.raises(sr.InvalidArgumentError, match="labels"):
        sr.logistic_regression(X, np.full(20, 2.0), context=ctx)
    with pytest.raises(sr.InvalidArgumentError, match="lambda"):
        sr.ridge(X, np.ones(20), -1.0, context=ctx)
    with pytest.raises(sr.InvalidArgumentError):
        sr.ridge(X, np.ones(19), context=ctx)
    with pytest.raises(ValueError, match="form"):
        sr.fused_pattern(X, np.ones(5), form="xxt", context=ctx)


def test_deterministic_context_repeats_bits(ctx, rng):
    """A deterministic context (on the GPU, sums in a fixed order): the fused pattern and ridge give
    the same bits on a second call and on a second context, and agree with the default context."""
    opts = ctx.options()
    backend = "cuda" if ctx.on_device else "cpu"
    det = [sr.Context(backend, device=opts["device"], deterministic=True) for _ in range(2)]
    assert det[0].deterministic and not ctx.deterministic
    X = rand_X(rng, 3000, 500, 0.02)
    y, v = rng.standard_normal(500), rng.standard_normal(3000)
    runs = [sr.fused_pattern(X, y, v=v, context=c) for c in (det[0], det[0], det[1])]
    assert all(np.array_equal(runs[0], r) for r in runs[1:])
    np.testing.assert_allclose(runs[0], sr.fused_pattern(X, y, v=v, context=ctx), rtol=1e-12, atol=1e-12)
    labels = rng.standard_normal(3000)
    coefs = [sr.ridge(X, labels, 0.5, context=c)[0] for c in (det[0], det[1])]
    assert np.array_equal(coefs[0], coefs[1])
    c = sr.Context(backend, device=opts["device"])
    c.set_deterministic(True)
    assert c.deterministic and c.options()["deterministic"]


def test_asynchronous_context_same_answers(ctx, rng):
    """An asynchronous context (on the GPU, spmv, spmm and the fused pattern return queued on device
    operands) gives the waiting context's answers, reports its option, and keeps it when pickled."""
    import pickle
    opts = ctx.options()
    backend = "cuda" if ctx.on_device else "cpu"
    contexts = [sr.Context(backend, device=opts["device"], deterministic=True, asynchronous=a) for a in (False, True)]
    assert contexts[1].asynchronous and contexts[1].options()["asynchronous"] and not contexts[0].asynchronous
    X = rand_X(rng, 3000, 500, 0.02)
    y, v = rng.standard_normal(500), rng.standard_normal(3000)
    runs = [sr.fused_pattern(X, y, v=v, context=c) for c in contexts]
    assert np.array_equal(runs[0], runs[1])
    products = [sr.spmv(X, y, context=c) for c in contexts]
    assert np.array_equal(products[0], products[1])
    c = sr.Context(backend, device=opts["device"])
    c.set_asynchronous(True)
    assert c.asynchronous and c.options()["asynchronous"]
    assert pickle.loads(pickle.dumps(c)).asynchronous
    c.set_asynchronous(False)
    assert not c.asynchronous


def test_solvers_refuse_nonfinite_input(ctx, rng):
    """NaN or infinity in X, y or the ratings is refused with its place, as scikit-learn refuses it
    (the solvers had returned all-zero coefficients, ALS finite factors with a NaN RMSE)."""
    X = rand_X(rng, 200, 30, 0.2).tocsr()
    y = rng.standard_normal(200)
    bad_y = y.copy()
    bad_y[11] = np.nan
    with pytest.raises(ValueError, match="y holds NaN at 11"):
        sr.ridge(X, bad_y, 1.0, context=ctx)
    Xbad = X.copy()
    row = int(np.flatnonzero(np.diff(Xbad.indptr))[3])
    Xbad.data[Xbad.indptr[row]] = np.inf
    where = f"X holds infinity at row {row}, column {Xbad.indices[Xbad.indptr[row]]}"
    with pytest.raises(ValueError, match=where):
        sr.ridge(Xbad, y, 1.0, context=ctx)
    with pytest.raises(ValueError, match=where):
        sr.logistic_regression(Xbad, np.sign(y), 1.0, context=ctx)
    R = sp.random(50, 40, density=0.2, format="csr", random_state=rng)
    R.data = np.ceil(R.data * 5)
    R.data[0] = np.nan
    with pytest.raises(ValueError, match="R holds NaN"):
        sr.factorize(R, rank=4, iterations=1, context=ctx)
