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


def dense_bool(M):
    """The pattern of a scipy, cupyx or torch sparse matrix as a numpy bool array."""
    if hasattr(M, "to_dense"):
        return M.to_dense().cpu().numpy().astype(bool)
    return (M.get() if hasattr(M, "get") else M).toarray().astype(bool)


def test_boolean_calls_on_device(rng):
    """Element-wise, structural and graph calls on cupyx / torch sparse input answer in that kind
    (bool results as float32 ones), equal to the scipy path."""
    torch = _torch()
    A = (random_csr(rng, 60, 60, 0.05) != 0).astype(np.float32)
    B = (random_csr(rng, 60, 60, 0.05) != 0).astype(np.float32)
    Ad, Bd = csp.csr_matrix(A), csp.csr_matrix(B)
    small = A[:6, :6]
    for op, (X, Y) in ((sr.ewise_add, (A, B)), (sr.ewise_mult, (A, B)), (sr.kronecker, (small, B))):
        got = op(csp.csr_matrix(X), csp.csr_matrix(Y), context=CUDA)
        assert isinstance(got, csp.csr_matrix)
        np.testing.assert_allclose(got.get().toarray(), op(X, Y, context=CUDA).toarray())
    C = sr.transitive_closure(Ad, context=CUDA)
    assert isinstance(C, csp.csr_matrix)
    np.testing.assert_array_equal(dense_bool(C), dense_bool(sr.transitive_closure(A, context=CUDA)))
    R = sr.reachability(Ad, cp.asarray([0, 5, 7]), context=CUDA)
    np.testing.assert_array_equal(dense_bool(R), dense_bool(sr.reachability(A, [0, 5, 7], context=CUDA)))
    E = sr.extract(Ad, slice(3, 40), slice(10, 50), context=CUDA)
    np.testing.assert_array_equal(E.get().toarray(), A[3:40, 10:50].toarray())
    r = sr.reduce_rows(Ad, context=CUDA)
    np.testing.assert_allclose(r.get().toarray(), sr.reduce_rows(A, context=CUDA).toarray())
    At = torch.sparse_csr_tensor(torch.as_tensor(A.indptr.astype(np.int64)), torch.as_tensor(A.indices.astype(np.int64)),
                                 torch.as_tensor(A.data), size=A.shape).cuda()
    Ct = sr.transitive_closure(At, context=CUDA)
    assert Ct.layout == torch.sparse_csr and Ct.is_cuda
    np.testing.assert_array_equal(dense_bool(Ct), dense_bool(C))


def test_bit_blocks_on_device(rng, monkeypatch):
    """Bit-packed blocks as cupy uint64 / torch int64 arrays are read and written in place."""
    torch = _torch()
    A = random_csr(rng, 70, 90, 0.05) != 0
    X = rng.random((90, 130)) < 0.1
    Xw = sr.pack_bits(X)
    want = sr.mxm_bits(A, Xw, 130, context=CUDA)
    np.testing.assert_array_equal(sr.unpack_bits(want, 130), (A.astype(np.int64) @ X.astype(np.int64)) > 0)
    seen = spy_on(monkeypatch, "mxm_bits")
    Xd = cp.asarray(Xw)
    Y = sr.mxm_bits(csp.csr_matrix(A.astype(np.float32)), Xd, 130, context=CUDA)
    assert isinstance(Y, cp.ndarray) and Y.dtype == np.uint64
    assert seen[-1][4] == (Xd.data.ptr, Xw.nbytes), "X was copied before the library read it"
    np.testing.assert_array_equal(host(Y), want)
    out = torch.zeros(want.shape, dtype=torch.int64, device="cuda")
    assert sr.mxm_bits(A, torch.as_tensor(Xw.view(np.int64), device="cuda"), 130, out=out, context=CUDA) is out
    np.testing.assert_array_equal(host(out).view(np.uint64), want)
    bits = sr.bits_from_matrix(csp.csr_matrix(A.astype(np.float32)), context=CUDA)
    assert isinstance(bits, cp.ndarray)
    np.testing.assert_array_equal(host(bits), sr.bits_from_matrix(A, context=CUDA))
    M = sr.matrix_from_bits(bits, 90, context=CUDA)
    assert isinstance(M, csp.csr_matrix)
    np.testing.assert_array_equal(M.get().toarray() != 0, A.toarray())
    assert sr.bits_count(bits, 90, context=CUDA) == A.nnz
    Z = cp.zeros_like(bits)
    assert sr.bits_or(Z, bits, 90, context=CUDA) == A.nnz
    np.testing.assert_array_equal(host(Z), host(bits))


def test_nearest_neighbors_answers_in_the_input_kind(rng):
    """cuML's NearestNeighbors contract: cupyx in, cupy out (output_type "input"); output_type asks
    for numpy, cupy or torch; graphs come back as the kind's sparse CSR."""
    torch = _torch()
    # continuous values: no distance ties, so the host and device answers agree row by row
    X = sp.random(250, 40, density=0.15, format="csr", random_state=rng, dtype=np.float32)
    Q = sp.random(30, 40, density=0.15, format="csr", random_state=rng, dtype=np.float32)
    host_nn = sr.NearestNeighbors(n_neighbors=5, metric="euclidean", context=CUDA).fit(X)
    nn = sr.NearestNeighbors(n_neighbors=5, metric="euclidean", context=CUDA).fit(csp.csr_matrix(X))
    for q, hq in ((None, None), (csp.csr_matrix(Q), Q)):
        dist, ind = nn.kneighbors(q)
        assert isinstance(dist, cp.ndarray) and isinstance(ind, cp.ndarray) and ind.dtype == np.int64
        want_dist, want_ind = host_nn.kneighbors(hq)
        assert_same_neighbours(host(dist), host(ind), want_dist, want_ind)
        G = nn.kneighbors_graph(q, mode="distance")
        assert isinstance(G, csp.csr_matrix) and G.get().has_sorted_indices
        H = host_nn.kneighbors_graph(hq, mode="distance")
        assert G.shape == H.shape and G.nnz == H.nnz
        np.testing.assert_allclose(np.sort(G.get().data), np.sort(H.data), rtol=1e-5, atol=1e-6)
        R = nn.radius_neighbors_graph(q, radius=1.0)
        assert isinstance(R, csp.csr_matrix) and R.nnz > 0
        np.testing.assert_array_equal(R.get().toarray(), host_nn.radius_neighbors_graph(hq, radius=1.0).toarray())
    nn.set_params(output_type="torch")
    dist, ind = nn.kneighbors(Q)
    assert isinstance(dist, torch.Tensor) and dist.is_cuda and ind.dtype == torch.int64
    Gt = nn.kneighbors_graph(Q)
    assert Gt.layout == torch.sparse_csr and Gt.is_cuda
    np.testing.assert_array_equal(Gt.to_dense().cpu().numpy(), host_nn.kneighbors_graph(Q).toarray())
    nn.set_params(output_type="numpy")
    assert isinstance(nn.kneighbors(csp.csr_matrix(Q))[0], np.ndarray)
    tnn = sr.NearestNeighbors(n_neighbors=4, context=CUDA).fit(torch.as_tensor(X.toarray(), device="cuda"))
    dist, ind = tnn.kneighbors()
    assert isinstance(ind, torch.Tensor) and ind.shape == (250, 4)
    want_dist, want_ind = sr.NearestNeighbors(n_neighbors=4, context=CUDA).fit(X).kneighbors()
    assert_same_neighbours(host(dist), host(ind), want_dist, want_ind)


@pytest.mark.parametrize("n", [70, 120_000])  # B's rows well within L2, and past half of it
def test_sddmm_spmm_with_v_the_same_device_array_as_b(rng, n):
    """V passed as B itself (ALS's product, self-attention): the GPU reads B's row once for both."""
    S = random_csr(rng, 300, n, 8.0 / n, np.float32)
    A = rng.standard_normal((300, 64)).astype(np.float32)
    B = cp.asarray(rng.standard_normal((n, 64)).astype(np.float32))
    Bh = B.get().astype(np.float64)
    for softmax in (False, True):
        O = sr.sddmm_spmm(S, cp.asarray(A), B, B, alpha=0.25, softmax=softmax, context=CUDA)
        W = S.multiply(0.25 * (A.astype(np.float64) @ Bh.T)).tocsr()
        if softmax:
            for i in range(W.shape[0]):
                row = W.data[W.indptr[i]:W.indptr[i + 1]]
                if row.size:
                    row[:] = np.exp(row - row.max()) / np.exp(row - row.max()).sum()
        np.testing.assert_allclose(host(O), W @ Bh, rtol=2e-4, atol=2e-5)


@pytest.mark.parametrize("kind", ["torch", "cupy"])
@pytest.mark.parametrize("side_stream", [False, True])
def test_inputs_written_just_before_the_call_are_read_complete(rng, kind, side_stream):
    """A writes A on its current stream behind milliseconds of other work and calls at once: on
    the default stream the package does not wait (the library's blocking stream is ordered after
    it by the driver), on a side stream it waits for that stream; either way the library must
    read the finished A and the result be complete when the call returns."""
    S = random_csr(rng, 300, 200, 0.05, np.float32)
    A_true = rng.standard_normal((300, 16)).astype(np.float32)
    B = rng.standard_normal((200, 16)).astype(np.float32)
    want = sr.sddmm_values(S, A_true, B, context=CUDA)
    Sd = sr.Matrix(S, context=CUDA, location="device")
    if kind == "torch":
        torch = _torch()
        stream = torch.cuda.Stream() if side_stream else torch.cuda.default_stream()
        with torch.cuda.stream(stream):
            big = torch.rand(4096, 4096, device="cuda")
            A = torch.zeros(300, 16, device="cuda")
            Bd, At = torch.as_tensor(B, device="cuda"), torch.as_tensor(A_true, device="cuda")
            stream.synchronize()
            for _ in range(6):  # milliseconds of work queued ahead of A's values
                big = big @ big / 4096
            A.copy_(At + 0 * big[:300, :16])
            got = sr.sddmm_values(Sd, A, Bd, context=CUDA)
            np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-5, atol=1e-6)
    else:
        stream = cp.cuda.Stream(non_blocking=True) if side_stream else cp.cuda.Stream.null
        with stream:
            big = cp.random.rand(4096, 4096, dtype=cp.float32)
            A = cp.zeros((300, 16), dtype=cp.float32)
            Bd, At = cp.asarray(B), cp.asarray(A_true)
            stream.synchronize()
            for _ in range(6):
                big = big @ big / 4096
            A[...] = At + 0 * big[:300, :16]
            got = sr.sddmm_values(Sd, A, Bd, context=CUDA)
            np.testing.assert_allclose(cp.asnumpy(got), want, rtol=1e-5, atol=1e-6)


def test_asynchronous_context_power_iteration_on_cupy(rng, monkeypatch):
    """An asynchronous context returns spmv queued on cupy arrays (no synchronize after the call, as
    the caller works on cupy's default stream) and cupy reads each result in order: 20 steps of a
    power iteration give the bits of the waiting context, and none of the calls waited."""
    A = sp.random(3000, 3000, density=0.004, random_state=5, format="csr")
    x0 = cp.asarray(rng.standard_normal(3000))
    answers = []
    for asynchronous in (False, True):
        ctx = sr.Context("cuda", deterministic=True, asynchronous=asynchronous)
        assert ctx.asynchronous == asynchronous and ctx.options()["asynchronous"] == asynchronous
        M = sr.Matrix(A, context=ctx).to("device")
        waits = []
        monkeypatch.setattr(ctx, "synchronize", lambda: waits.append(1))
        x = x0.copy()
        for _ in range(20):
            y = sr.spmv(M, x, context=ctx)
            x = y / cp.linalg.norm(y)  # cupy, on its default stream, after the queued product
        answers.append(host(x))
        assert len(waits) == (0 if asynchronous else 20)
    assert np.array_equal(answers[0], answers[1])
