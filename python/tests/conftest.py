"""Fixtures for the package tests: the backends to run on (CPU always, CUDA where a GPU is
usable), a seeded generator (the seed is printed), and the real data sets when present."""
import gzip
import os

import numpy as np
import pytest
import scipy.sparse as sp

import sparsering as sr

SEED = int(os.environ.get("SR_TEST_SEED", np.random.SeedSequence().entropy % 2**32))
DATA = os.environ.get("SPARSERING_TEST_DATA", "")


def pytest_terminal_summary(terminalreporter):
    """After the results, even under -q (which hides prints), so a failing run says how to repeat it."""
    terminalreporter.write_line(
        f"package tests: seed {SEED} (rerun with SR_TEST_SEED={SEED}); {sr.library_version()}")


def _contexts():
    out = [("cpu", sr.Context("cpu"))]
    try:
        out.append(("cuda", sr.Context("cuda")))
    except sr.NoDeviceError as e:
        if os.environ.get("SR_TEST_REQUIRE_CUDA"):  # the GPU gate: a skipped GPU part is a failure
            raise RuntimeError(f"SR_TEST_REQUIRE_CUDA is set, but no CUDA context: {e}") from e
        print(f"SKIP cuda backend: {e}")
    return out


CONTEXTS = _contexts()


def _opencl_contexts():
    """An OpenCL context where a device is found (PoCL's CPU device on machines without a GPU):
    the Boolean tests run on it too."""
    try:
        return [("opencl", sr.Context("opencl"))]
    except sr.NoDeviceError as e:
        print(f"SKIP opencl backend: {e}")
        return []


BOOL_CONTEXTS = CONTEXTS + _opencl_contexts()


@pytest.fixture(params=CONTEXTS, ids=lambda c: c[0])
def ctx(request):
    return request.param[1]


@pytest.fixture
def rng():
    return np.random.default_rng(SEED)


def random_csr(rng, m, n, density, dtype=np.float64, repeats=True):
    """Small integer values (ties and exact repeats happen), a repeated row and an empty row."""
    A = sp.random(m, n, density=density, format="csr", random_state=rng, dtype=np.float64)
    A.data = np.round(A.data * 4 + 1)
    if repeats and m > 2:
        A = A.tolil()
        A[1] = A[0]
        A[2] = 0
        A = A.tocsr()
    return A.astype(dtype)


def movielens():
    """MovieLens (ml-latest-small) as a users x movies ratings matrix, or skip."""
    path = os.path.join(DATA, "ratings/ml-latest-small/ratings.csv.gz")
    if not DATA or not os.path.exists(path):
        pytest.skip("MovieLens ratings not found (set SPARSERING_TEST_DATA to ../shared/data)")
    with gzip.open(path, "rt") as f:
        table = np.loadtxt(f, delimiter=",", skiprows=1, usecols=(0, 1, 2))
    users = np.unique(table[:, 0], return_inverse=True)[1]
    movies = np.unique(table[:, 1], return_inverse=True)[1]
    return sp.csr_matrix((table[:, 2], (users, movies)))
