"""GPU arrays in and out (cupy, cupyx.scipy.sparse, torch CUDA tensors): the library reads a dense
input at its own device pointer (no hidden copy), results come back as the input's kind on the
device, and equal the numpy/scipy path on the same CUDA context. Skipped without a GPU, cupy or
torch."""
import numpy as np
import pytest
import scipy.sparse as sp

import sparsering as sr
from sparsering import _core

from conftest import random_csr

try:
    CUDA = sr.Context("cuda")
except sr.NoDeviceError:
    CUDA = None
cp = pytest.importorskip("cupy") if CUDA else None
csp = pytest.importorskip("cupyx.scipy.sparse") if CUDA else None
pytestmark = pytest.mark.skipif(CUDA is None, reason="no usable GPU")


def _torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    return torch


def host(x):
    """A numpy copy of a cupy array or torch tensor."""
    return x.cpu().numpy() if hasattr(x, "cpu") else cp.asnumpy(x)


def assert_same_neighbours(dist, idx, want_dist, want_idx):
    """Distances equal to float32 rounding; indices equal except where distances tie (the CUDA
    kernels may round a tie apart differently between calls: README, threads)."""
    np.testing.assert_allclose(dist, want_dist, rtol=1e-5, atol=1e-6)
    differ = idx != want_idx
    if differ.any():
        rows = np.nonzero(differ.any(axis=1))[0]
        for r in rows:  # the same neighbours, in another order among near-equal distances
            assert set(idx[r][:-1]) <= set(want_idx[r]) or np.allclose(dist[r], want_dist[r], rtol=1e-5)


def spy_on(monkeypatch, name):
    """Records the arguments of _core.<name> calls (the package's calls into the binding)."""
    seen = []
    real = getattr(_core, name)

    def spy(*args):
        seen.append(args)
        return real(*args)

    monkeypatch.setattr(_core, name, spy)
    return seen


def test_knn_on_cupy_sparse_returns_cupy(rng):
    X = random_csr(rng, 400, 60, 0.1, np.float32)
    Xd = csp.csr_matrix(X)
    dist, idx = sr.kneighbors(Xd, k=5, context=CUDA)
    assert isinstance(dist, cp.ndarray) and isinstance(idx, cp.ndarray)
    assert dist.dtype == np.float32 and idx.dtype == np.int64 and dist.shape == (400, 5)
    want_dist, want_idx = sr.kneighbors(X, k=5, context=CUDA)
    assert_same_neighbours(host(dist), host(idx), want_dist, want_idx)


def test_knn_on_cupy_dense_and_torch(rng):
    torch = _torch()
    X = rng.random((300, 40)).astype(np.float32)
    X[X < 0.7] = 0
    want_dist, want_idx = sr.kneighbors(X, k=4, metric="cosine", context=CUDA)
    for Xd in (cp.asarray(X), torch.as_tensor(X, device="cuda")):
        dist, idx = sr.kneighbors(Xd, k=4, metric="cosine", context=CUDA)
        assert type(dist) is type(Xd) and type(idx) is type(Xd)
        assert_same_neighbours(host(dist), host(idx), want_dist, want_idx)


def test_spmm_reads_the_callers_device_pointer(rng, monkeypatch):
    torch = _torch()
    A = random_csr(rng, 200, 150, 0.05, np.float32)
    B = rng.standard_normal((150, 16)).astype(np.float32)
    want = A @ B
    seen = spy_on(monkeypatch, "spmm")
    for Bd in (cp.asarray(B), torch.as_tensor(B, device="cuda")):
        ptr = Bd.data.ptr if isinstance(Bd, cp.ndarray) else Bd.data_ptr()
        C = sr.spmm(A, Bd, context=CUDA)
        assert type(C) is type(Bd)
        np.testing.assert_allclose(host(C), want, rtol=1e-5, atol=1e-5)
        b_tuple = seen[-1][3]
        assert b_tuple[0] == (ptr, B.nbytes), "B was copied before the library read it"
    # Fortran order is read in place too (column-major layout)
    Bf = cp.asfortranarray(cp.asarray(B))
    C = sr.spmm(A, Bf, context=CUDA)
    assert seen[-1][3][0] == (Bf.data.ptr, B.nbytes) and seen[-1][3][4] == 1
    np.testing.assert_allclose(host(C), want, rtol=1e-5, atol=1e-5)


def test_spmv_into_a_device_out(rng):
    A = random_csr(rng, 300, 200, 0.05, np.float64)
    x = rng.standard_normal(200)
    out = cp.zeros(300, dtype=cp.float64)
    y = sr.spmv(csp.csr_matrix(A), cp.asarray(x), out=out, context=CUDA)
    assert y is out
    np.testing.assert_allclose(host(out), A @ x, rtol=1e-12)
    with pytest.raises(ValueError, match="packed device array"):
        sr.spmv(A, cp.asarray(x), out=cp.zeros(299), context=CUDA)


def test_torch_sparse_products(rng):
    torch = _torch()
    A = random_csr(rng, 120, 120, 0.05, np.float64)
    At = torch.sparse_csr_tensor(torch.as_tensor(A.indptr.astype(np.int64)), torch.as_tensor(A.indices.astype(np.int64)),
                                 torch.as_tensor(A.data), size=A.shape).cuda()
    C = sr.mxm(At, At, context=CUDA)
    assert C.layout == torch.sparse_csr and C.is_cuda
    np.testing.assert_allclose(C.to_dense().cpu().numpy(), (A @ A).toarray(), rtol=1e-12)
    coo = A.tocoo()
    Ac = torch.sparse_coo_tensor(np.vstack([coo.row, coo.col]), coo.data, size=A.shape).cuda()
    assert sr.Matrix(Ac, context=CUDA).equal(sr.Matrix(A, context=CUDA))


def test_pairwise_on_device_and_matrix_from_device_dense(rng):
    X = rng.random((80, 30))
    X[X < 0.6] = 0
    D = sr.pairwise_distances(cp.asarray(X), metric="manhattan", context=CUDA)
    assert isinstance(D, cp.ndarray) and D.shape == (80, 80)
    np.testing.assert_allclose(host(D), sr.pairwise_distances(X, metric="manhattan", context=CUDA), rtol=1e-12)
    assert np.all(host(D).diagonal() == 0)
    assert sr.Matrix(cp.asarray(X), context=CUDA).equal(sr.Matrix(X, context=CUDA))
    back = sr.Matrix(sp.csr_matrix(X), context=CUDA).to_device_csr("cupy")
    np.testing.assert_array_equal(back.get().toarray(), X)


def test_device_input_on_a_cpu_context_is_refused():
    with pytest.raises(ValueError, match="CUDA context"):
        sr.Matrix(cp.zeros((3, 3)), context=sr.Context("cpu"))


def test_sddmm_forms_on_device(rng):
    torch = _torch()
    S = random_csr(rng, 90, 70, 0.1, np.float32)
    A = rng.standard_normal((90, 24)).astype(np.float32)
    B = rng.standard_normal((70, 24)).astype(np.float32)
    V = rng.standard_normal((70, 8)).astype(np.float32)
    want = S.multiply(A @ B.T).tocsr()
    C = sr.sddmm(csp.csr_matrix(S), cp.asarray(A), cp.asarray(B), context=CUDA)
    assert isinstance(C, csp.csr_matrix)
    np.testing.assert_allclose(C.get().toarray(), want.toarray(), rtol=1e-5, atol=1e-5)
    vals = sr.sddmm_values(S, cp.asarray(A), cp.asarray(B), context=CUDA)
    assert isinstance(vals, cp.ndarray)
    np.testing.assert_allclose(host(vals), sr.sddmm_values(S, A, B, context=CUDA), rtol=1e-6)
    O = sr.sddmm_spmm(S, torch.as_tensor(A, device="cuda"), torch.as_tensor(B, device="cuda"),
                      torch.as_tensor(V, device="cuda"), softmax=True, context=CUDA)
    assert isinstance(O, torch.Tensor) and O.is_cuda
    np.testing.assert_allclose(host(O), sr.sddmm_spmm(S, A, B, V, softmax=True, context=CUDA), rtol=1e-5, atol=1e-6)


def test_fused_pattern_and_graph_on_device(rng):
    X = random_csr(rng, 200, 50, 0.1, np.float64)
    y = rng.standard_normal(50)
    v = rng.random(200)
    w = sr.fused_pattern(csp.csr_matrix(X), cp.asarray(y), v=cp.asarray(v), alpha=0.5, context=CUDA)
    assert isinstance(w, cp.ndarray)
    np.testing.assert_allclose(host(w), 0.5 * (X.T @ (v * (X @ y))), rtol=1e-10)
    G = sr.kneighbors_graph(csp.csr_matrix(X.astype(np.float32)), 4, mode="distance", context=CUDA)
    assert isinstance(G, csp.csr_matrix) and G.shape == (200, 200) and G.nnz == 800
    H = sr.kneighbors_graph(X.astype(np.float32), 4, mode="distance", context=CUDA)
    np.testing.assert_allclose(np.sort(G.get().data), np.sort(H.data), rtol=1e-5)
