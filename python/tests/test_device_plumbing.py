"""The GPU-array plumbing's host-side rules (run everywhere; the device paths themselves are in
test_device_arrays.py, on a GPU): which inputs count as device data, how strides map to a layout,
and argument checks that fail before any device work."""
import numpy as np
import pytest
import scipy.sparse as sp

import sparsering as sr
from sparsering import _device


def test_host_data_is_not_device_data():
    for obj in (np.zeros((2, 2)), sp.csr_matrix((2, 2)), [1.0, 2.0], 3.0, None, sr.Matrix(np.eye(2))):
        assert _device.kind_of(obj) is None
        assert _device.device_array(obj) is None
        assert _device.device_sparse(obj) is None


def test_layout_from_strides():
    assert _device._order((3, 4), None, 4) == "C"
    assert _device._order((3, 4), (16, 4), 4) == "C"
    assert _device._order((3, 4), (4, 12), 4) == "F"
    assert _device._order((3, 1), (4, 4), 4) == "C"   # a column: any stride on a length-1 axis
    assert _device._order((3, 4), (32, 8), 4) is None  # every other element: not packed
    assert _device._order((5,), (4,), 4) == "C"


def test_output_type_is_checked_before_any_work():
    X = sp.random(20, 10, density=0.3, format="csr", random_state=0)
    with pytest.raises(ValueError, match="output_type"):
        sr.kneighbors(X, k=2, output_type="pandas")
    dist, ind = sr.kneighbors(X, k=2, output_type="numpy", context=sr.Context("cpu"))
    assert isinstance(dist, np.ndarray) and ind.shape == (20, 2)
