"""Conversions between scipy/numpy and sparsering matrices, and the Matrix methods."""
import numpy as np
import pytest
import scipy.sparse as sp
from conftest import random_csr

import sparsering as sr


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.bool_])
def test_csr_round_trip(ctx, rng, dtype):
    A = random_csr(rng, 40, 30, 0.2, dtype)
    M = sr.Matrix(A, context=ctx)
    assert M.shape == A.shape and M.nnz == A.nnz and M.dtype == np.dtype(dtype)
    assert M.location == ("device" if ctx.on_device else "host")
    B = M.to_scipy()
    assert B.dtype == np.dtype(dtype) and (B != A).nnz == 0
    np.testing.assert_array_equal(M.toarray(), A.toarray())
    np.testing.assert_array_equal(M.toarray(order="F"), A.toarray())


def test_non_canonical_scipy_input(ctx):
    # unsorted columns and a duplicate (summed, as scipy does)
    A = sp.csr_matrix((np.array([3.0, 1.0, 2.0, 5.0]), np.array([2, 0, 2, 1]), np.array([0, 3, 4])), shape=(2, 3))
    assert not A.has_canonical_format
    M = sr.Matrix(A, context=ctx)
    np.testing.assert_array_equal(M.toarray(), [[1, 0, 5], [0, 5, 0]])
    assert A.indices.tolist() == [2, 0, 2, 1]  # the caller's matrix is untouched


def test_coo_dense_and_other_dtypes(ctx, rng):
    A = random_csr(rng, 25, 17, 0.3)
    np.testing.assert_array_equal(sr.Matrix(A.tocoo(), context=ctx).toarray(), A.toarray())
    dense = A.toarray()
    np.testing.assert_array_equal(sr.Matrix(dense, context=ctx).toarray(), dense)
    np.testing.assert_array_equal(sr.Matrix(np.asfortranarray(dense), context=ctx).toarray(), dense)
    M = sr.Matrix(A.astype(np.int64), context=ctx)
    assert M.dtype == np.int32
    with pytest.raises(OverflowError, match="do not fit int32"):
        sr.Matrix(sp.csr_matrix(np.array([[2**40]])), context=ctx)
    with pytest.raises(TypeError, match="complex"):
        sr.Matrix(sp.csr_matrix(np.array([[1j]])), context=ctx)


def test_bool_matrix_drops_explicit_false(ctx):
    A = sp.csr_matrix((np.array([1.0, 0.0, 2.0]), np.array([0, 1, 2]), np.array([0, 3])), shape=(1, 3))
    M = sr.BooleanMatrix(A, context=ctx)
    assert isinstance(M, sr.BooleanMatrix) and M.nnz == 2


def test_empty_shapes(ctx):
    for shape in [(0, 0), (0, 5), (5, 0), (3, 4)]:
        M = sr.Matrix(sp.csr_matrix(shape), context=ctx)
        assert M.shape == shape and M.nnz == 0 and M.to_scipy().shape == shape


def test_methods(ctx, rng, tmp_path):
    A = random_csr(rng, 30, 20, 0.2)
    M = sr.Matrix(A, context=ctx)
    assert (M.T.to_scipy() != A.T).nnz == 0
    assert M.equal(A) and M.copy().equal(M) and not M.equal(A * 2)
    assert M.astype(np.float32).dtype == np.float32
    host = M.to("host")
    assert host.location == "host" and host.equal(A)
    path = tmp_path / "a.mtx.gz"
    M.write_mm(path, comment="round trip")
    back = sr.read_mm(path, context=ctx)
    assert back.equal(M)
    np.testing.assert_array_equal((M @ np.ones(20)), A @ np.ones(20))
    assert repr(M).startswith("<sparsering.Matrix 30x20")


def test_errors_carry_the_library_message(ctx, tmp_path):
    bad = tmp_path / "bad.mtx"
    bad.write_text("%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1.0\n")
    with pytest.raises(sr.ParseError, match=r"bad.mtx:3: entry \(3, 1\) is outside") as e:
        sr.read_mm(bad, context=ctx)
    assert e.value.status == "SR_ERROR_PARSE" and isinstance(e.value, ValueError)
    with pytest.raises(sr.FileError) as e:
        sr.read_mm(tmp_path / "missing.mtx", context=ctx)
    assert isinstance(e.value, OSError) and isinstance(e.value, sr.SparseringError)
    with pytest.raises(ValueError, match="unknown semiring"):
        sr.mxm(sp.eye(3, format="csr"), sp.eye(3, format="csr"), "plus_max")
    with pytest.raises(sr.InvalidArgumentError, match="A is 3 x 3 but B has 4 rows"):
        sr.mxm(sp.eye(3, format="csr"), sp.eye(4, format="csr"))


def test_backend_names():
    assert sr.Context("cpu").backend == "cpu"
    with pytest.raises(ValueError, match="backend must be one of"):
        sr.Context("gpu")
    if "cuda" not in sr.library_version():
        with pytest.raises(sr.NoDeviceError):
            sr.Context("cuda")


def test_declared_sizes_past_the_entries_are_refused(tmp_path):
    path = tmp_path / "huge.mtx"
    path.write_text("%%MatrixMarket matrix coordinate real general\n3000000000 5 1\n1 1 1.5\n")
    with pytest.raises(sr.OutOfMemoryError, match="3000000000 rows"):
        sr.read_mm(str(path), context=sr.Context("cpu"))
    small = tmp_path / "small.mtx"
    small.write_text("%%MatrixMarket matrix coordinate real general\n1000000 5 1\n1 1 1.5\n")
    assert sr.read_mm(str(small), context=sr.Context("cpu")).shape == (1000000, 5)
    tight = sr.Context("cpu", host_memory_limit=1 << 20)
    assert tight.options()["host_memory_limit"] == 1 << 20
    with pytest.raises(sr.OutOfMemoryError, match="host memory limit"):
        sr.read_mm(str(small), context=tight)
    tight.set_host_memory_limit(0)
    assert tight.options()["host_memory_limit"] == 0
    assert sr.read_mm(str(small), context=tight).shape == (1000000, 5)
