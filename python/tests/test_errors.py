"""Issue 27: each library status reaches Python as its own exception class (all subclasses of
SparseringError, the message the library wrote), from a real failing call, and the failed call
leaves its inputs alone."""
import numpy as np
import pytest
import scipy.sparse as sp

import sparsering as sr


def cpu():
    return sr.Context("cpu")


def test_every_error_class_is_a_sparsering_error():
    for name in ("InvalidArgumentError", "InvalidMatrixError", "SizeOverflowError", "OutOfMemoryError",
                 "DeviceOutOfMemoryError", "NoDeviceError", "DeviceError", "FileError", "ParseError",
                 "UnsupportedError", "InternalError", "CancelledError"):
        assert issubclass(getattr(sr, name), sr.SparseringError), name


def test_invalid_argument_k_past_the_index():
    X = sp.random(6, 5, density=0.5, format="csr", random_state=1)
    before = X.copy()
    with pytest.raises(sr.InvalidArgumentError, match="k"):
        sr.kneighbors(X, None, 7, "cosine", context=cpu())
    assert (X != before).nnz == 0


def test_invalid_matrix_column_past_the_shape():
    # scipy's constructor does not look at index values; the library names the bad one
    X = sp.csr_matrix((np.ones(2), np.array([0, 5], dtype=np.int32), np.array([0, 2])), shape=(1, 3))
    with pytest.raises(sr.InvalidMatrixError, match="5"):
        sr.Matrix(X, context=cpu())


def test_size_overflow_kronecker_columns():
    wide = sp.csr_matrix((np.ones(1), np.array([7], dtype=np.int32), np.array([0, 1])), shape=(1, 2**31 - 1))
    with pytest.raises(sr.SizeOverflowError):
        sr.kronecker(wide, wide, context=cpu())


def test_file_and_parse_errors(tmp_path):
    with pytest.raises(sr.FileError):
        sr.read_mm(tmp_path / "missing.mtx", context=cpu())
    bad = tmp_path / "bad.mtx"
    bad.write_text("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 x 1\n")
    with pytest.raises(sr.ParseError, match="bad.mtx"):
        sr.read_mm(bad, context=cpu())


def test_no_device_error_without_a_gpu():
    try:
        sr.Context("cuda")
    except sr.NoDeviceError as e:
        assert str(e)
    else:
        pytest.skip("a GPU is present")


def test_cancelled_by_a_progress_callback():
    # (a solver's callback returning True is an early stop, not an error: test_regression.py)
    X = sp.random(40, 30, density=0.2, format="csr", random_state=2)
    ctx = sr.Context("cpu", workspace_limit=40 * 8 * 4)  # several batches
    with pytest.raises(sr.CancelledError):
        sr.kneighbors(X, None, 3, "cosine", progress=lambda done, total: True, context=ctx)


def test_logistic_bad_label_leaves_nothing_half_done():
    X = sp.random(6, 5, density=0.5, format="csr", random_state=3)
    y = np.array([1.0, -1.0, 0.5, 1.0, -1.0, 1.0])
    with pytest.raises(sr.InvalidArgumentError, match="label 2 is 0.5"):
        sr.logistic_regression(X, y, 1.0, context=cpu())


def test_ctrl_c_stops_a_long_call_and_the_next_call_works():
    # Ctrl-C arrives while the library runs; the progress or report hook turns it into
    # KeyboardInterrupt at its next call, and the call frees what it held (ASan checks the C side)
    import signal
    # Python's own SIGINT handler (KeyboardInterrupt), whatever an earlier test left in place: the
    # test missed its KeyboardInterrupt once in CI's pip-installed run (2026-11-25), not reproduced
    # here, and dask's LocalCluster was checked to leave the handler alone
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _ctrl_c_then_usable(signal)
    finally:
        signal.signal(signal.SIGINT, previous)


def _ctrl_c_then_usable(signal):
    X = sp.random(60, 30, density=0.2, format="csr", random_state=4)
    ctx = sr.Context("cpu", workspace_limit=60 * 8 * 4)  # several batches

    def press_ctrl_c(*_):
        signal.raise_signal(signal.SIGINT)

    with pytest.raises(KeyboardInterrupt):
        sr.kneighbors(X, None, 3, "cosine", progress=press_ctrl_c, context=ctx)
    y = np.where(np.arange(60) % 2 == 0, 1.0, -1.0)
    with pytest.raises(KeyboardInterrupt):
        sr.ridge(X, y, 1.0, callback=press_ctrl_c, context=ctx)
    dist, idx = sr.kneighbors(X, None, 3, "cosine", context=ctx)  # the context is still usable
    assert idx.shape == (60, 3) and np.all(np.isfinite(dist))
