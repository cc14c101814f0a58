"""sparsering: sparse linear algebra over semirings, on the CPU and on CUDA GPUs.

numpy arrays and scipy.sparse matrices go in and come out; the work is done by the sparsering C
library (this package is a binding of it, not a second implementation).

    >>> import scipy.sparse as sp, sparsering as sr
    >>> X = sp.random(1000, 500, density=0.01, format="csr", random_state=0)
    >>> dist, ind = sr.NearestNeighbors(n_neighbors=5, metric="cosine").fit(X).kneighbors(X[:10])
    >>> D = sr.pairwise_distances(X[:5], X, metric="manhattan")
    >>> C = sr.mxm(X, X.T.tocsr(), "plus_times")            # SpGEMM, a scipy csr_matrix
    >>> y = sr.spmv(X, [1.0] * 500, "max_times")            # any semiring of sr.SEMIRINGS
    >>> G = X[:, :500] != 0                                   # a Boolean graph
    >>> C = sr.transitive_closure(G)                          # also reachability, cfpq, ewise_add, ...
X

Backends: a Context picks "cpu", "cuda", "opencl" (Boolean operations) or "auto" (the default: CUDA when a GPU is usable);
set_default_context("cpu") changes what calls use when they name none.
"""
import os

import numpy as np

from . import _core
from ._core import (CancelledError, DeviceError, DeviceOutOfMemoryError, FileError, InternalError,
                    InvalidArgumentError, InvalidMatrixError, NoDeviceError, OutOfMemoryError, ParseError,
                    SizeOverflowError, SparseringError, UnsupportedError)
from ._boolean import (QueryStats, bits_count, bits_from_matrix, bits_or, cfpq, ewise_add, ewise_mult, extract,
                       kronecker, labeled_graphs_from_networkx, matrix_from_bits, mxm_bits, pack_bits, reachability, read_labeled_graph, reduce_rows,
                       transitive_closure, unpack_bits)
from ._matrix import BooleanMatrix, Context, Matrix, as_matrix, default_context, set_default_context
from ._ops import (METRICS, SEMIRINGS, Metric, RowBlocks, Semiring, kneighbors, kneighbors_graph, mxm, mxm_row_blocks,
                   pairwise_distances, radius_neighbors, radius_neighbors_graph, spmm, spmv, SpmvPlan, spmv_plan,
                   spmv_plan_free)
from ._pagerank import PageRankInfo, pagerank
from ._regression import SolverResult, fused_pattern, logistic_regression, ridge
from ._sddmm import Factorization, factorize, sddmm, sddmm_spmm, sddmm_values
from .neighbors import NearestNeighbors

__version__ = _core.version().split()[0]  # the C library's: one version for both


def library_version():
    """The C library's version and backends, e.g. "0.1.0 (cpu+cuda)"."""
    return _core.version()


def show_config():
    """Prints the version, the backends built in and usable here, the GPUs and the CPU threads, as
    numpy.show_config() and scipy.show_config() do (for bug reports)."""
    import platform
    print(f"sparsering {__version__} (C library {library_version()})")
    print(f"  python {platform.python_version()}, numpy {np.__version__}, {platform.platform()}")
    for backend in ("cpu", "cuda", "opencl"):
        try:
            ctx = Context(backend)
            line = f"usable, {ctx.options()['threads'] or os.cpu_count()} threads" if backend == "cpu" else "usable"
            if backend == "cuda":
                line += f", device {ctx.options()['device']}"
        except SparseringError as e:
            line = f"not usable: {e}"
        print(f"  {backend:7s} {line}")
    print(f"  default context: {default_context()!r}")
    env = {k: v for k, v in os.environ.items() if k.startswith("SPARSERING_") or k == "OMP_NUM_THREADS"}
    print("  environment: " + (", ".join(f"{k}={v}" for k, v in sorted(env.items())) or "none set"))


def last_method():
    """The path this thread's last k-NN search took, e.g. "knn: tensor-core panel of 1024 of 102000
    columns (97.9% of the pair work), FP16 (exact)" or "knn: sparse tiles"."""
    return _core.last_method()


def read_mm(path, dtype=None, context=None):
    """Reads a Matrix Market file (.mtx or .mtx.gz) into a Matrix (to_scipy() gives a csr_matrix)."""
    return Matrix.read_mm(path, dtype=dtype, context=context)


__all__ = ["PageRankInfo", "pagerank", "SpmvPlan", "spmv_plan", "spmv_plan_free", "SolverResult", "fused_pattern", "logistic_regression", "ridge", "Factorization", "factorize", "sddmm", "sddmm_spmm", "sddmm_values", "QueryStats", "bits_count", "bits_from_matrix", "bits_or", "matrix_from_bits", "cfpq", "ewise_add", "ewise_mult", "extract", "kronecker", "labeled_graphs_from_networkx", "mxm_bits", "pack_bits",
           "reachability", "read_labeled_graph", "reduce_rows", "transitive_closure", "unpack_bits", "BooleanMatrix", "CancelledError", "Context", "DeviceError", "DeviceOutOfMemoryError", "FileError",
           "InternalError", "InvalidArgumentError", "InvalidMatrixError", "METRICS", "Matrix", "NearestNeighbors",
           "NoDeviceError", "OutOfMemoryError", "ParseError", "SEMIRINGS", "Semiring", "Metric", "SizeOverflowError", "SparseringError",
           "UnsupportedError", "as_matrix", "default_context", "kneighbors", "kneighbors_graph", "last_method", "library_version", "show_config", "mxm",
           "mxm_row_blocks", "RowBlocks", "pairwise_distances", "radius_neighbors", "radius_neighbors_graph", "read_mm", "set_default_context", "spmm",
           "spmv"]
