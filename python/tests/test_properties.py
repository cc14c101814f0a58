"""Property tests (Hypothesis): each operation against an independent numpy float64 reference on
inputs drawn from the edges — 0 to 8 rows and columns, any density from empty to full, explicit
zeros (they are entries), unsorted column indices, every semiring, masks with and without
complement, accumulation, k from 1 to the rows — on every backend the machine has (CPU always,
CUDA where a GPU is usable; the Boolean ones on OpenCL too).

Profiles: "ci" (the default, a bounded number of examples) and "long" (10,000 an operation, for
the GPU machine): SPARSERING_HYPOTHESIS_PROFILE=long. A failure Hypothesis finds is kept below as
an explicit @example."""
import os

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.spatial.distance import cdist

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra.numpy import arrays  # noqa: E402

import sparsering as sr  # noqa: E402
from conftest import BOOL_CONTEXTS, CONTEXTS  # noqa: E402

settings.register_profile("ci", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=10_000, deadline=None, suppress_health_check=list(HealthCheck))
settings.load_profile(os.environ.get("SPARSERING_HYPOTHESIS_PROFILE", "ci"))

SEMIRINGS = {  # name: (⊕ as a numpy reduction, ⊗)
    "plus_times": (np.add.reduce, np.multiply),
    "min_plus": (np.minimum.reduce, np.add),
    "max_plus": (np.maximum.reduce, np.add),
    "max_times": (np.maximum.reduce, np.multiply),
    "min_times": (np.minimum.reduce, np.multiply),
    "max_min": (np.maximum.reduce, np.minimum),
}
ADD = {"plus_times": np.add, "min_plus": np.minimum, "max_plus": np.maximum, "max_times": np.maximum,
       "min_times": np.minimum, "max_min": np.maximum}


@st.composite
def patterned(draw, m=None, n=None, values=True):
    """(present, values): a pattern of any density and small integer values, 0 among them (an
    explicit zero is an entry); the products stay exact in float64."""
    m = draw(st.integers(0, 8)) if m is None else m
    n = draw(st.integers(0, 8)) if n is None else n
    density = draw(st.sampled_from([0.0, 0.1, 0.3, 0.7, 1.0]))
    present = draw(arrays(np.bool_, (m, n), elements=st.booleans().map(lambda b: b or density == 1.0)
                          if density not in (0.0, 1.0) else st.just(density == 1.0)))
    vals = draw(arrays(np.int8, (m, n), elements=st.integers(-3, 3))).astype(np.float64) if values else None
    return present, vals


def to_csr(present, vals, shuffle=False, seed=0):
    """A csr_matrix with exactly `present`'s entries (explicit zeros kept), columns unsorted
    within rows when asked (as TfidfVectorizer leaves them)."""
    rows, cols = np.nonzero(present)
    data = vals[rows, cols] if vals is not None else np.ones(rows.size, dtype=bool)
    indptr = np.concatenate([[0], np.cumsum(present.sum(axis=1))]).astype(np.int64)
    if shuffle:
        rng = np.random.default_rng(seed)
        for i in range(present.shape[0]):
            order = rng.permutation(indptr[i + 1] - indptr[i]) + indptr[i]
            cols[indptr[i]:indptr[i + 1]] = cols[order]
            data[indptr[i]:indptr[i + 1]] = data[order]
    return sp.csr_matrix((data, cols.astype(np.int32), indptr), shape=present.shape)


def dense_of(C):
    """(present, values) of a csr result."""
    C = sp.csr_matrix(C)
    present = np.zeros(C.shape, dtype=bool)
    vals = np.zeros(C.shape)
    rows = np.repeat(np.arange(C.shape[0]), np.diff(C.indptr))
    present[rows, C.indices] = True
    vals[rows, C.indices] = C.data
    return present, vals


def ref_mxm(ap, av, bp, bv, semiring):
    """The semiring product over the joined k: an entry wherever some k joins (none dropped)."""
    reduce, mul = SEMIRINGS[semiring]
    m, n = ap.shape[0], bp.shape[1]
    cp, cv = np.zeros((m, n), dtype=bool), np.zeros((m, n))
    for i in range(m):
        for j in range(n):
            ks = np.nonzero(ap[i] & bp[:, j])[0]
            if ks.size:
                cp[i, j] = True
                cv[i, j] = reduce(mul(av[i, ks], bv[ks, j]))
    return cp, cv


@pytest.mark.parametrize("ctx", [c[1] for c in CONTEXTS], ids=[c[0] for c in CONTEXTS])
@given(data=st.data(), semiring=st.sampled_from(sorted(SEMIRINGS)), shuffle=st.booleans(),
       masking=st.sampled_from(["none", "mask", "complement"]), accumulate=st.booleans())
def test_mxm_matches_reference(ctx, data, semiring, shuffle, masking, accumulate):
    m, k, n = (data.draw(st.integers(0, 7)) for _ in range(3))
    ap, av = data.draw(patterned(m, k))
    bp, bv = data.draw(patterned(k, n))
    A, B = to_csr(ap, av, shuffle), to_csr(bp, bv, shuffle, seed=1)
    cp, cv = ref_mxm(ap, av, bp, bv, semiring)
    kwargs = {}
    if masking != "none":
        mp, _ = data.draw(patterned(m, n, values=False))
        kwargs.update(mask=to_csr(mp, None), complement=masking == "complement")
        keep = ~mp if masking == "complement" else mp
        cp &= keep
    if accumulate:
        dp, dv = data.draw(patterned(m, n))
        kwargs["accumulate"] = to_csr(dp, dv)
        both = cp & dp
        cv = np.where(both, ADD[semiring](cv, dv), np.where(dp, dv, cv))
        cp = cp | dp
    got_p, got_v = dense_of(sr.mxm(A, B, semiring, context=ctx, **kwargs))
    np.testing.assert_array_equal(got_p, cp)
    np.testing.assert_array_equal(got_v[cp], cv[cp])


@pytest.mark.parametrize("ctx", [c[1] for c in CONTEXTS], ids=[c[0] for c in CONTEXTS])
@given(data=st.data(), semiring=st.sampled_from(sorted(SEMIRINGS)), shuffle=st.booleans())
def test_spmv_matches_reference(ctx, data, semiring, shuffle):
    ap, av = data.draw(patterned())
    x = data.draw(arrays(np.int8, ap.shape[1], elements=st.integers(-3, 3))).astype(np.float64)
    reduce, mul = SEMIRINGS[semiring]
    identity = {"plus_times": 0.0, "min_plus": np.inf, "min_times": np.inf}.get(semiring, -np.inf)
    want = np.array([reduce(mul(av[i, ap[i]], x[ap[i]])) if ap[i].any() else identity for i in range(ap.shape[0])])
    got = sr.spmv(to_csr(ap, av, shuffle), x, semiring, context=ctx)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("ctx", [c[1] for c in BOOL_CONTEXTS], ids=[c[0] for c in BOOL_CONTEXTS])
@given(data=st.data())
def test_boolean_products_and_closure(ctx, data):
    n = data.draw(st.integers(0, 8))
    ap, _ = data.draw(patterned(n, n, values=False))
    bp, _ = data.draw(patterned(n, n, values=False))
    A, B = to_csr(ap, None), to_csr(bp, None)
    prod = (ap.astype(int) @ bp.astype(int)) > 0
    np.testing.assert_array_equal(dense_of(sr.mxm(A, B, "or_and", context=ctx))[0], prod)
    np.testing.assert_array_equal(dense_of(sr.ewise_add(A, B, context=ctx))[0], ap | bp)
    np.testing.assert_array_equal(dense_of(sr.ewise_mult(A, B, context=ctx))[0], ap & bp)
    reach = ap.copy()  # paths of one or more edges: Warshall
    for j in range(n):
        reach |= np.outer(reach[:, j], reach[j, :])
    np.testing.assert_array_equal(dense_of(sr.transitive_closure(A, context=ctx))[0], reach)


@pytest.mark.parametrize("ctx", [c[1] for c in CONTEXTS], ids=[c[0] for c in CONTEXTS])
@given(data=st.data(), metric=st.sampled_from(["euclidean", "sqeuclidean", "cosine", "manhattan", "chebyshev"]),
       shuffle=st.booleans())
def test_kneighbors_distances_match_scipy(ctx, data, metric, shuffle):
    rows = data.draw(st.integers(1, 8))
    xp, xv = data.draw(patterned(rows, data.draw(st.integers(1, 8))))
    k = data.draw(st.integers(1, rows))
    X = to_csr(xp, xv, shuffle)
    dense = np.where(xp, xv, 0.0)
    ref = cdist(dense, dense, {"manhattan": "cityblock"}.get(metric, metric))
    if metric == "cosine":  # an all-zero row is at distance 1 from everything (scikit-learn's rule)
        zero = ~(dense != 0).any(axis=1)
        ref[zero, :] = 1.0
        ref[:, zero] = 1.0
        ref[np.ix_(zero, zero)] = 1.0
    dist, ind = sr.kneighbors(X, X, k=k, metric=metric, context=ctx)
    want = np.sort(ref, axis=1)[:, :k]
    np.testing.assert_allclose(dist, want, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(np.take_along_axis(ref, ind, axis=1), dist, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("ctx", [c[1] for c in CONTEXTS], ids=[c[0] for c in CONTEXTS])
@given(data=st.data(), pattern=st.booleans(), shuffle=st.booleans())
def test_sddmm_matches_reference(ctx, data, pattern, shuffle):
    sp_, sv = data.draw(patterned())
    K = data.draw(st.integers(0, 6))
    m, n = sp_.shape
    A = data.draw(arrays(np.int8, (m, K), elements=st.integers(-3, 3))).astype(np.float64)
    B = data.draw(arrays(np.int8, (n, K), elements=st.integers(-3, 3))).astype(np.float64)
    S = to_csr(sp_, sv, shuffle)
    S.sort_indices()  # the reference walks S's entries in the order the result keeps
    rows = np.repeat(np.arange(m), np.diff(S.indptr))
    dots = (A[rows] * B[S.indices]).sum(axis=1)
    want = dots if pattern else S.data * dots
    C = sr.sddmm(to_csr(sp_, sv, shuffle), A, B, pattern=pattern, context=ctx)
    C.sort_indices()
    np.testing.assert_array_equal(C.indptr, S.indptr)
    np.testing.assert_array_equal(C.indices, S.indices)
    np.testing.assert_array_equal(C.data, want)
