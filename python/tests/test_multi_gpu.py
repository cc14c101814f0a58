"""A Context over several GPUs (devices=[0, 1]) gives the one-GPU results: k-NN (indices and
distances bit for bit on integer-valued data, whose sums are exact in any order), the k-NN graph,
radius neighbours, SDDMM values (bit for bit) and SpGEMM.
The option checks run everywhere; the rest is skipped without two GPUs."""
import numpy as np
import pytest
import scipy.sparse as sp

import sparsering as sr

from conftest import random_csr


def test_options_are_checked():
    with pytest.raises(ValueError, match="partition"):
        sr.Context("cpu", partition="diagonal")
    cpu = sr.Context("cpu", devices=[0, 1])  # the host ignores a device list
    assert cpu.devices == []


def _contexts():
    try:
        many = sr.Context("cuda", devices=[0, 1])
    except sr.NoDeviceError as e:
        pytest.skip(f"needs two GPUs: {e}")
    return sr.Context("cuda"), many


def test_knn_and_graphs_equal_one_gpu():
    one, many = _contexts()
    assert many.devices == [0, 1]
    rng = np.random.default_rng(5)
    X = random_csr(rng, 30000, 800, 0.01, np.float32)
    Q = random_csr(rng, 500, 800, 0.02, np.float32)
    for metric in ("cosine", "euclidean", "manhattan"):
        d1, i1 = sr.kneighbors(X, Q, k=12, metric=metric, context=one)
        dn, i_n = sr.kneighbors(X, Q, k=12, metric=metric, context=many)
        np.testing.assert_array_equal(i_n, i1)
        np.testing.assert_array_equal(dn, d1)
    G1 = sr.kneighbors_graph(X, 8, mode="distance", metric="cosine", context=one)
    Gn = sr.kneighbors_graph(X, 8, mode="distance", metric="cosine", context=many)
    assert (G1 != Gn).nnz == 0
    R1 = sr.radius_neighbors_graph(X, 0.4, mode="distance", metric="cosine", context=one)
    Rn = sr.radius_neighbors_graph(X, 0.4, mode="distance", metric="cosine", context=many)
    assert R1.shape == Rn.shape and (R1 != Rn).nnz == 0


def test_sddmm_and_mxm_equal_one_gpu():
    one, many = _contexts()
    rng = np.random.default_rng(6)
    S = sp.random(4000, 3000, density=0.01, format="csr", random_state=rng, dtype=np.float32)
    A = rng.standard_normal((4000, 64)).astype(np.float32)
    B = rng.standard_normal((3000, 64)).astype(np.float32)
    np.testing.assert_array_equal(sr.sddmm_values(S, A, B, context=many), sr.sddmm_values(S, A, B, context=one))
    M = sp.random(3000, 3000, density=0.003, format="csr", random_state=rng, dtype=np.float64)
    C1 = sr.mxm(M, M, context=one)
    Cn = sr.mxm(M, M, context=many)
    C1, Cn = (c.to_scipy() if hasattr(c, "to_scipy") else c for c in (C1, Cn))
    assert (abs(C1 - Cn) > 1e-12 * abs(C1).max()).nnz == 0


def test_mxm_row_blocks_stay_on_their_gpus():
    one, many = _contexts()
    rng = np.random.default_rng(7)
    M = sp.random(3000, 3000, density=0.003, format="csr", random_state=rng, dtype=np.float64)
    C = sr.mxm(M, M, context=one)
    R = sr.mxm_row_blocks(sr.Matrix(M, context=many, location="device"), M, context=many)
    assert len(R) == 2 and R.devices == [0, 1] and R.first_rows[0] == 0 and R.nnz == C.nnz
    for g, first in enumerate(R.first_rows):
        block = R.block(g)
        want = C[first:first + block.shape[0]]
        assert (abs(block - want) > 1e-12 * abs(C).max()).nnz == 0
    assert (abs(R.to_scipy() - C) > 1e-12 * abs(C).max()).nnz == 0
    G = R.gather()
    assert G.location == "device" and (abs(G.to_scipy() - C) > 1e-12 * abs(C).max()).nnz == 0
