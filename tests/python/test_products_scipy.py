"""Semiring products against scipy / numpy on real data (../shared/data) and random power-law
matrices, through the C library (ctypes), on the CPU backend and on CUDA where a GPU is usable."""
import ctypes as C
import os
import sys

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(__file__))
from common import BACKENDS, DATA, SEED, lib, sr  # noqa: E402


def real_matrices():
    names = ["graphs/karate.mtx.gz", "graphs/west0067.mtx.gz", "graphs/bcsstk13.mtx.gz", "graphs/pushpull.mtx.gz",
             "graphs/debian-depends.mtx.gz", "sparse-dnn/n1024-l1.mtx.gz"]
    found = []
    for n in names:
        p = os.path.join(DATA, n)
        if DATA and os.path.exists(p):
            found.append((n, p))
    return found


def with_random_values(A, rng):
    A = sp.csr_matrix(A, dtype=np.float64)
    A.sum_duplicates()
    A.sort_indices()
    A.data = rng.random(A.nnz) + 0.1  # positive: no sums cancel to zero, so scipy keeps every entry
    return A


def powerlaw(m, n, avg, rng):
    deg = np.minimum((rng.pareto(1.8, m) + 1) * avg / 2.2, n).astype(np.int64)
    indptr = np.concatenate([[0], np.cumsum(deg)])
    A = sp.csr_matrix((rng.random(indptr[-1]) + 0.1, rng.integers(0, n, indptr[-1]), indptr), shape=(m, n))
    A.sum_duplicates()
    A.sort_indices()
    return A


def inputs():
    rng = np.random.default_rng(SEED)
    cases = [("powerlaw", powerlaw(3000, 3000, 12, rng))]
    for name, path in real_matrices():
        A = scipy.io.mmread(path).tocsr()
        if A.shape[0] != A.shape[1]:
            continue
        cases.append((name, with_random_values(A, rng)))
    return cases


CASES = inputs()


class Matrix:
    """A float64 (or bool) scipy CSR as a sparsering matrix where the backend computes."""

    def __init__(self, ctx, where, A, type_=sr.FLOAT64):
        self.rp = np.ascontiguousarray(A.indptr, dtype=np.int64)
        self.ci = np.ascontiguousarray(A.indices, dtype=np.int32)
        self.v = np.ascontiguousarray(A.data, dtype=np.float64)
        H = lib.matrix_from_csr(ctx, A.shape[0], A.shape[1], type_, self.rp.ctypes.data, self.ci.ctypes.data,
                                self.v.ctypes.data if type_ != sr.BOOL else None, sr.HOST)
        self.M = H if where == sr.HOST else lib.copy_to(ctx, H, sr.DEVICE)
        if where != sr.HOST:
            lib.free(H)

    def __del__(self):
        lib.free(self.M)


def to_scipy(ctx, M, dtype=np.float64):
    H = lib.copy_to(ctx, M, sr.HOST)
    i = lib.info(H)
    rp, ci, v = lib.arrays(H)
    indptr = np.ctypeslib.as_array(C.cast(rp, C.POINTER(C.c_int64)), shape=(i.nrows + 1,)).copy()
    indices = np.ctypeslib.as_array(C.cast(ci, C.POINTER(C.c_int32)), shape=(max(i.nnz, 1),))[: i.nnz].copy()
    if v:
        ctype = {np.float64: C.c_double, np.int32: C.c_int32}[dtype]
        data = np.ctypeslib.as_array(C.cast(v, C.POINTER(ctype)), shape=(max(i.nnz, 1),))[: i.nnz].copy()
    else:
        data = np.ones(i.nnz, dtype=dtype)
    lib.free(H)
    return sp.csr_matrix((data, indices, indptr), shape=(i.nrows, i.ncols))


@pytest.mark.parametrize("backend", range(len(BACKENDS)), ids=[b[0] for b in BACKENDS])
@pytest.mark.parametrize("case", range(len(CASES)), ids=[c[0] for c in CASES])
def test_spmv_spmm_match_scipy(backend, case):
    _, ctx, where = BACKENDS[backend]
    name, A = CASES[case]
    M = Matrix(ctx, where, A)
    rng = np.random.default_rng(SEED + case)
    for K, order in ((1, "F"), (8, "C"), (32, "F")):
        B = np.asarray(rng.random((A.shape[1], K)), order=order)
        Cm = np.full((A.shape[0], K), np.nan, order=order)  # poisoned: every element must be written
        layout = sr.ROW_MAJOR if order == "C" else sr.COL_MAJOR
        Bd = sr.dense(B.ctypes.data, A.shape[1], K, sr.FLOAT64, layout, sr.HOST)
        Cd = sr.dense(Cm.ctypes.data, A.shape[0], K, sr.FLOAT64, layout, sr.HOST)
        lib.spmm(ctx, Cd, 0, M.M, Bd)
        want = A @ B
        assert np.all(np.isfinite(Cm)), f"{name}: unwritten outputs"
        err = np.linalg.norm(Cm - want) / max(np.linalg.norm(want), 1e-300)
        assert err < 1e-12, f"{name} K={K}: relative error {err}"


@pytest.mark.parametrize("backend", range(len(BACKENDS)), ids=[b[0] for b in BACKENDS])
@pytest.mark.parametrize("case", range(len(CASES)), ids=[c[0] for c in CASES])
def test_mxm_plus_times_matches_scipy(backend, case):
    _, ctx, where = BACKENDS[backend]
    name, A = CASES[case]
    M = Matrix(ctx, where, A)
    col_counts = np.bincount(A.indices, minlength=A.shape[1])
    products = {False: int(np.dot(col_counts, np.diff(A.indptr))), True: int(np.dot(col_counts, col_counts))}
    for transpose in (False, True):
        if products[transpose] > 20_000_000:  # e.g. A A^T of debian-depends: 550M entries (libc6 is everywhere)
            continue
        got = to_scipy(ctx, lib.mxm(ctx, 0, M.M, M.M, transpose))
        want = (A @ (A.T if transpose else A)).tocsr()
        want.sort_indices()
        assert got.nnz == want.nnz, f"{name}: {got.nnz} entries, scipy {want.nnz}"
        assert np.array_equal(got.indptr, want.indptr) and np.array_equal(got.indices, want.indices)
        err = np.abs(got.data - want.data).max() / np.abs(want.data).max()
        assert err < 1e-12, f"{name} transpose={transpose}: relative error {err}"


@pytest.mark.parametrize("backend", range(len(BACKENDS)), ids=[b[0] for b in BACKENDS])
@pytest.mark.parametrize("case", [i for i, c in enumerate(CASES) if c[1].shape[0] <= 2500],
                         ids=[c[0] for c in CASES if c[1].shape[0] <= 2500])
def test_other_semirings_match_numpy(backend, case):
    _, ctx, where = BACKENDS[backend]
    name, A = CASES[case]
    D = A.toarray()
    present = D != 0
    M = Matrix(ctx, where, A)
    # min_plus: min over k of A[i,k] + A[k,j], where both are present
    want = np.full(D.shape, np.inf)
    At = A.tocsc()
    for k in range(D.shape[0]):  # only the (i, j) that k joins
        I, J = At.indices[At.indptr[k]:At.indptr[k + 1]], A.indices[A.indptr[k]:A.indptr[k + 1]]
        if len(I) and len(J):
            block = D[I, k][:, None] + D[k, J][None, :]
            want[np.ix_(I, J)] = np.minimum(want[np.ix_(I, J)], block)
    got = to_scipy(ctx, lib.mxm(ctx, 1, M.M, M.M)).toarray()
    gotp = to_scipy(ctx, lib.mxm(ctx, 1, M.M, M.M))
    assert np.array_equal(gotp.toarray() != 0, np.isfinite(want)), f"{name}: min_plus pattern"
    assert np.allclose(got[np.isfinite(want)], want[np.isfinite(want)], rtol=1e-12), f"{name}: min_plus values"
    # plus_pair: how many k join i and j
    P = sp.csr_matrix(present.astype(np.int64))  # sparse: a dense integer matmul has no BLAS and is slow
    PP = (P @ P).toarray()
    counts = to_scipy(ctx, lib.mxm(ctx, 7, M.M, M.M)).toarray()
    assert np.array_equal(counts, PP), f"{name}: plus_pair"
    # or_and on bool matrices: the pattern of the Boolean product
    Bm = Matrix(ctx, where, A, type_=sr.BOOL)
    pattern = to_scipy(ctx, lib.mxm(ctx, 6, Bm.M, Bm.M), dtype=np.int32).toarray() != 0
    assert np.array_equal(pattern, PP > 0), f"{name}: or_and"
