"""Semiring products against dense numpy references computed in float64."""
import numpy as np
import pytest
import scipy.sparse as sp
from conftest import random_csr

import sparsering as sr

# (add, multiply, identity) of each semiring on numbers
NUMERIC = {
    "plus_times": (np.add, np.multiply, 0.0), "min_plus": (np.minimum, np.add, np.inf),
    "max_plus": (np.maximum, np.add, -np.inf), "max_times": (np.maximum, np.multiply, -np.inf),
    "min_times": (np.minimum, np.multiply, np.inf), "max_min": (np.maximum, np.minimum, -np.inf),
}


def reference_product(A, B, semiring):
    """C(i,j) = add over the k where A(i,k) is stored of mul(A(i,k), B(k,j)); B dense."""
    add, mul, identity = NUMERIC[semiring]
    C = np.full((A.shape[0], B.shape[1]), identity)
    A = A.tocsr()
    for i in range(A.shape[0]):
        for k, a in zip(A.indices[A.indptr[i]:A.indptr[i + 1]], A.data[A.indptr[i]:A.indptr[i + 1]]):
            C[i] = add(C[i], mul(a, B[k]))
    return C


@pytest.mark.parametrize("semiring", sorted(NUMERIC))
def test_spmv_spmm(ctx, rng, semiring):
    A = random_csr(rng, 50, 40, 0.15)
    x = rng.integers(-3, 4, 40).astype(np.float64)
    np.testing.assert_allclose(sr.spmv(A, x, semiring, context=ctx), reference_product(A, x[:, None], semiring)[:, 0])
    B = rng.integers(-3, 4, (40, 7)).astype(np.float64)
    ref = reference_product(A, B, semiring)
    np.testing.assert_allclose(sr.spmm(A, B, semiring, context=ctx), ref)
    np.testing.assert_allclose(sr.spmm(A, np.asfortranarray(B), semiring, context=ctx), ref)
    out = np.zeros((50, 7), order="F")
    assert sr.spmm(A, B, semiring, out=out, context=ctx) is out
    np.testing.assert_allclose(out, ref)


def reference_sparse_product(A, B, semiring):
    """Both operands sparse: only stored entries of A and B join; returns (values, pattern)."""
    add, mul, identity = NUMERIC[semiring]
    A, B = A.tocsr(), B.tocsr()
    C = np.full((A.shape[0], B.shape[1]), identity)
    pattern = np.zeros(C.shape, dtype=bool)
    for i in range(A.shape[0]):
        for k, a in zip(A.indices[A.indptr[i]:A.indptr[i + 1]], A.data[A.indptr[i]:A.indptr[i + 1]]):
            cols, vals = B.indices[B.indptr[k]:B.indptr[k + 1]], B.data[B.indptr[k]:B.indptr[k + 1]]
            C[i, cols] = add(C[i, cols], mul(a, vals))
            pattern[i, cols] = True
    return C, pattern


@pytest.mark.parametrize("semiring", ["plus_times", "min_plus", "max_min"])
def test_mxm(ctx, rng, semiring):
    A, B = random_csr(rng, 30, 25, 0.2), random_csr(rng, 25, 35, 0.2)
    C = sr.mxm(A, B, semiring, context=ctx)
    assert isinstance(C, sp.csr_matrix)
    values, pattern = reference_sparse_product(A, B, semiring)
    got = np.zeros(C.shape, dtype=bool)
    got[C.nonzero()] = True
    stored = np.zeros(C.shape, dtype=bool)
    coo = C.tocoo()
    stored[coo.row, coo.col] = True
    np.testing.assert_array_equal(stored, pattern)  # an entry wherever some k joins, no more
    np.testing.assert_allclose(C.toarray()[pattern], values[pattern])


def test_mxm_mask_accumulate_transpose(ctx, rng):
    A, B = random_csr(rng, 20, 20, 0.25), random_csr(rng, 20, 20, 0.25)
    mask = random_csr(rng, 20, 20, 0.3) != 0
    full = (A @ B).toarray()
    C = sr.mxm(A, B, mask=mask, context=ctx).toarray()
    np.testing.assert_allclose(C, np.where(mask.toarray(), full, 0))
    C = sr.mxm(A, B, mask=mask, complement=True, context=ctx).toarray()
    np.testing.assert_allclose(C, np.where(mask.toarray(), 0, full))
    np.testing.assert_allclose(sr.mxm(A, B.T.tocsr(), transpose_b=True, context=ctx).toarray(), full)
    old = random_csr(rng, 20, 20, 0.1)
    np.testing.assert_allclose(sr.mxm(A, B, accumulate=old, context=ctx).toarray(), full + old.toarray())
    M = sr.Matrix(A, context=ctx)
    assert isinstance(sr.mxm(M, B, context=ctx), sr.Matrix)  # a Matrix in, a Matrix out (kept in place)


def test_spmv_mask_and_accumulate_need_out(ctx, rng):
    A = random_csr(rng, 10, 10, 0.3)
    with pytest.raises(ValueError, match="pass out="):
        sr.spmv(A, np.ones(10), accumulate=True, context=ctx)
    y = np.full(10, 5.0)
    sr.spmv(A, np.ones(10), out=y, accumulate=True, context=ctx)
    np.testing.assert_allclose(y, 5.0 + A @ np.ones(10))


def test_boolean_matrix(ctx, rng):
    A = random_csr(rng, 30, 30, 0.1) != 0
    B = sr.BooleanMatrix(A, context=ctx)
    AA = (A.astype(int) @ A.astype(int)).toarray()
    C = B @ B
    assert isinstance(C, sr.BooleanMatrix)
    np.testing.assert_array_equal(C.toarray(), AA > 0)
    np.testing.assert_array_equal(B.pair_counts(B).toarray(), AA)
    x = rng.random(30) < 0.3
    np.testing.assert_array_equal(B.mxv(x), (A.astype(int) @ x.astype(int)) > 0)
    np.testing.assert_array_equal(B.T.toarray(), A.T.toarray())
    masked = B.mxm(B, mask=A, complement=True).toarray()
    np.testing.assert_array_equal(masked, (AA > 0) & ~A.toarray())


def test_graph_from_shared_data(ctx):
    import os
    data = os.environ.get("SPARSERING_TEST_DATA", "")
    path = os.path.join(data, "graphs", "jagmesh7.mtx.gz")
    if not data or not os.path.exists(path):
        pytest.skip("jagmesh7 not found (SPARSERING_TEST_DATA)")
    M = sr.read_mm(path, dtype=np.float64, context=ctx)
    A = M.to_scipy()
    np.testing.assert_allclose(sr.mxm(M, M, context=ctx).to_scipy().toarray(), (A @ A).toarray(), rtol=1e-12)


def test_mxm_row_blocks_one_block(ctx, rng):
    """Off a context over several GPUs the product is one block: mxm's, stacked and gathered alike."""
    A, B = random_csr(rng, 120, 80, 0.05), random_csr(rng, 80, 90, 0.05)
    C = sr.mxm(A, B, context=ctx)
    R = sr.mxm_row_blocks(A, B, context=ctx)
    assert len(R) == 1 and R.first_rows == [0] and R.shape == (120, 90) and R.nnz == C.nnz
    assert R.devices == ([0] if ctx.on_device else [-1])
    assert abs(R.to_scipy() - C).max() == 0 and abs(R.block(0) - C).max() == 0
    assert abs(R.gather().to_scipy() - C).max() == 0
    with pytest.raises(sr.InvalidArgumentError, match="rows"):
        sr.mxm_row_blocks(B, B, context=ctx)
