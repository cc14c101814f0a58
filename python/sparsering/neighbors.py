"""NearestNeighbors with scikit-learn's interface, on sparsering's brute-force k-NN."""
import inspect

import numpy as np

import scipy.sparse as sp

from . import _device
from ._matrix import _context, as_matrix
from ._ops import (_OUTPUT_KINDS, _device_kind, _graph_result, _metric, _output_kind, _radius_matrix, kneighbors,
                   kneighbors_graph, radius_neighbors)


try:  # a scikit-learn estimator where scikit-learn is installed (clone, tags, pipelines, its checks)
    from sklearn.base import BaseEstimator as _Base
    from sklearn.exceptions import NotFittedError as _NotFitted
    from sklearn.utils import check_array as _check_array
except ImportError:  # pragma: no cover - the package does not need scikit-learn
    _Base, _NotFitted, _check_array = object, AttributeError, None


def _validated(X, estimator):
    """Host input checked as scikit-learn checks it at fit (its messages: empty data, NaN or
    infinity, complex or object values, a 1-d array) and converted to float32/float64 CSR or a
    dense array; GPU arrays and Matrix objects are checked by the library itself."""
    if _check_array is None or _device_kind(X) or hasattr(X, "_h"):
        return X
    finite = "ensure_all_finite" if "ensure_all_finite" in inspect.signature(_check_array).parameters else \
        "force_all_finite"
    return _check_array(X, accept_sparse="csr", dtype=[np.float32, np.float64], estimator=estimator,
                        **{finite: True})


# Exact search answers every algorithm a caller may name: scikit-learn's trees give the same
# neighbours as brute force, cuML's approximate indexes (ivfflat, ivfpq) and rbc approximate them.
_ALGORITHMS = ("auto", "brute", "ball_tree", "kd_tree", "rbc", "ivfflat", "ivfpq")


class NearestNeighbors(_Base):
    """Unsupervised nearest neighbours, a drop-in for sklearn.neighbors.NearestNeighbors and for
    cuml.neighbors.NearestNeighbors, on sparsering's exact brute-force search.

    n_neighbors: default k for kneighbors. radius: default radius for radius_neighbors. metric: any of sparsering.METRICS or "minkowski"
    (scikit-learn's default; with p=2 it is euclidean, p=1 manhattan). dtype: float32 or
    float64 for the distances (default: float32 for float32 data, else float64). progress: as
    sparsering.kneighbors. context: a sparsering.Context (default: the module's; a CUDA
    context keeps the fitted matrix on the GPU). precision: "exact" (default), "tf32" or
    "float32", as sparsering.kneighbors (tensor cores on the GPU for the dot-product metrics).

    Accepted for the two signatures, with these meanings: algorithm (any of scikit-learn's or
    cuML's names; the search is always exact, so the approximate ones return exact neighbours),
    leaf_size and n_jobs (scikit-learn; threads come from the context), verbose, handle,
    algo_params (cuML; ignored) and output_type (cuML's: None or "input" answers in the kind of
    the queries, or of the fitted data for X=None: numpy / scipy for host data, cupy / cupyx or
    torch for GPU data; "numpy", "cupy" (or "array") and "torch" ask for one). radius_neighbors'
    object arrays are numpy whatever the input.

    >>> nn = NearestNeighbors(n_neighbors=3, metric="cosine").fit(X)   # X: scipy.sparse or numpy
    >>> dist, ind = nn.kneighbors(Q)
    >>> dist, ind = nn.radius_neighbors(Q, radius=0.5)                 # object arrays, one per query
    """

    def __init__(self, n_neighbors=5, radius=1.0, *, algorithm="auto", leaf_size=30, metric="minkowski", p=2,
                 metric_params=None, n_jobs=None, dtype=None, progress=None, context=None, verbose=False,
                 handle=None, algo_params=None, output_type=None, precision="exact"):
        self.n_neighbors = n_neighbors
        self.radius = radius
        self.algorithm = algorithm
        self.leaf_size = leaf_size
        self.metric = metric
        self.p = p
        self.metric_params = metric_params
        self.n_jobs = n_jobs
        self.dtype = dtype
        self.progress = progress
        self.context = context
        self.verbose = verbose
        self.handle = handle
        self.algo_params = algo_params
        self.output_type = output_type
        self.precision = precision

    def get_params(self, deep=True):
        """The constructor's parameters (read from its signature, as scikit-learn's estimators do)."""
        names = list(inspect.signature(type(self).__init__).parameters)[1:]
        return {name: getattr(self, name) for name in names}

    def set_params(self, **params):
        for name, value in params.items():
            if name not in self.get_params():
                raise ValueError(f"NearestNeighbors has no parameter {name!r}")
            setattr(self, name, value)
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.allow_nan = False
        tags.non_deterministic = False
        return tags

    def _more_tags(self):  # scikit-learn before 1.6
        return {"X_types": ["2darray", "sparse"], "allow_nan": False}

    # A fitted estimator pickles its index as a scipy matrix (and its context as its settings,
    # sparsering.Context.__reduce__); loading puts the index back where it was fitted, or on the
    # host where the loading machine's context has no GPU.
    def __getstate__(self):
        state = dict(self.__dict__)
        if "_fit_X" in state:
            state["_fit_X"] = self._fit_X.to_scipy()
            state["_fit_on_device"] = self._fit_X.location == "device"
            state.pop("_ctx", None)
        return state

    def __setstate__(self, state):
        index = state.pop("_fit_X", None)
        on_device = state.pop("_fit_on_device", False)
        self.__dict__.update(state)
        if index is not None:
            self._ctx = _context(self.context)
            where = "device" if on_device and self._ctx.on_device else None
            self._fit_X = as_matrix(index, self._ctx, None, where)
            if where is None:
                self._fit_kind = None

    def _check_queries(self, X):
        """Queries of host data checked as fit checks them, with the fitted width."""
        if X is None:
            return None
        X = _validated(X, self)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but NearestNeighbors is expecting "
                             f"{self.n_features_in_} features as input")
        return X

    def _metric_and_p(self):
        p = self.p
        if self.metric_params and "p" in self.metric_params:
            p = self.metric_params["p"]
        return self.metric, (p if self.metric == "minkowski" else None)

    def fit(self, X, y=None):
        """Keeps X (scipy.sparse, numpy or Matrix) as the index, converted once."""
        if self.algorithm not in _ALGORITHMS:
            raise ValueError(f"algorithm {self.algorithm!r} is not one of {', '.join(_ALGORITHMS)}")
        if self.output_type not in _OUTPUT_KINDS:
            raise NotImplementedError(f"output_type {self.output_type!r}: results come as numpy, cupy or torch "
                                      "(None, 'input', 'numpy', 'cupy', 'array' or 'torch')")
        metric, p = self._metric_and_p()
        _metric(metric, p)  # unknown names fail here, not at the first query
        X = _validated(X, self)
        self._ctx = _context(self.context)
        self._fit_kind = _device_kind(X)
        self._fit_X = as_matrix(X, self._ctx, None, "device" if self._fit_kind else None)
        self.n_samples_fit_, self.n_features_in_ = self._fit_X.shape
        self.effective_metric_ = metric
        return self

    def kneighbors(self, X=None, n_neighbors=None, return_distance=True, convert_dtype=True,
                   two_pass_precision=False):
        """(distances, indices) of the n_neighbors nearest fitted rows to each row of X, closest
        first. X=None queries the fitted rows themselves, leaving each one out of its own
        neighbours, as scikit-learn does. convert_dtype and two_pass_precision are cuML's, accepted
        and unneeded (inputs are converted; distances are computed once, exactly)."""
        if not hasattr(self, "_fit_X"):
            raise _NotFitted("this NearestNeighbors is not fitted yet: call fit(X) first")
        k = self.n_neighbors if n_neighbors is None else n_neighbors
        if k <= 0:
            raise ValueError(f"Expected n_neighbors > 0. Got {k}")
        metric, p = self._metric_and_p()
        query_self = X is None
        X = self._check_queries(X)
        queries = None if query_self else as_matrix(X, self._ctx, None, self._fit_X.location)
        kk = k + 1 if query_self else k
        if kk > self.n_samples_fit_:
            raise ValueError(f"Expected n_neighbors <= n_samples_fit, but n_neighbors = {kk}, "
                             f"n_samples_fit = {self.n_samples_fit_}, n_samples = "
                             f"{self.n_samples_fit_ if query_self else queries.shape[0]}")
        kind = self._output_kind(X)
        dist, ind = kneighbors(self._fit_X, queries, kk, metric, p=p, dtype=self.dtype, progress=self.progress,
                               output_type=kind or "numpy", context=self._ctx, precision=self.precision)
        if query_self:  # drop each row itself; when ties pushed it out, drop the first column instead
            keep = ind != _device.arange(kind, ind.shape[0], ind)[:, None]
            keep[keep.all(1), 0] = False
            ind = ind[keep].reshape(ind.shape[0], k)
            dist = dist[keep].reshape(dist.shape[0], k)
        return (dist, ind) if return_distance else ind

    def _output_kind(self, X):
        """The GPU framework of this call's results (None: numpy / scipy)."""
        if X is None and self.output_type in (None, "input"):
            return self._fit_kind
        return _output_kind(self.output_type, X)

    def kneighbors_graph(self, X=None, n_neighbors=None, mode="connectivity"):
        """The graph of kneighbors(X) as a scipy csr_matrix (1.0 or the distance per edge), as
        scikit-learn's: X=None gives the fitted rows' graph, each row left out of its own list.
        GPU data (or output_type) gives a cupyx / torch sparse CSR matrix, built on the device."""
        if mode not in ("connectivity", "distance"):
            raise ValueError(f'mode must be "connectivity" or "distance", not {mode!r}')
        if not hasattr(self, "_fit_X"):
            raise _NotFitted("this NearestNeighbors is not fitted yet: call fit(X) first")
        k = self.n_neighbors if n_neighbors is None else n_neighbors
        metric, p = self._metric_and_p()
        kind = self._output_kind(X)
        if X is None:
            return kneighbors_graph(self._fit_X, k, mode, metric, p if p is not None else 2, dtype=self.dtype,
                                    progress=self.progress, output_type=kind or "numpy", context=self._ctx,
                                    precision=self.precision)
        dist, ind = self.kneighbors(X, k)
        if kind:  # k entries a row, columns sorted, as the host graph
            ind, dist = _device.sort_rows(ind, dist)
            n = ind.shape[0]
            values = dist.reshape(-1) if mode == "distance" else _device.ones(kind, n * k, np.float64, ind)
            indptr = _device.arange(kind, n + 1, ind) * k
            return _device.csr_result(kind, (n, self.n_samples_fit_), indptr,
                                      _device.astype(ind.reshape(-1), np.int32), values)
        rows = np.repeat(np.arange(ind.shape[0]), k)
        values = np.ones(ind.size) if mode == "connectivity" else dist.ravel()
        return sp.csr_matrix((values, (rows, ind.ravel())), shape=(ind.shape[0], self.n_samples_fit_))

    def radius_neighbors(self, X=None, radius=None, return_distance=True, sort_results=False):
        """(distances, indices) of the fitted rows within radius of each row of X: numpy object
        arrays with one array per query, by index, or closest first with sort_results=True.
        X=None queries the fitted rows, each one leaving itself out, as scikit-learn does."""
        if not hasattr(self, "_fit_X"):
            raise _NotFitted("this NearestNeighbors is not fitted yet: call fit(X) first")
        r = self.radius if radius is None else radius
        metric, p = self._metric_and_p()
        queries = None if X is None else as_matrix(X, self._ctx, None, self._fit_X.location)
        dist, ind = radius_neighbors(self._fit_X, queries, r, metric, p=p, dtype=self.dtype,
                                     sort_results=sort_results, progress=self.progress, context=self._ctx)
        return (dist, ind) if return_distance else ind

    def radius_neighbors_graph(self, X=None, radius=None, mode="connectivity", sort_results=False):
        """The pairs of radius_neighbors(X) as a scipy csr_matrix (1.0 or the distance per pair;
        explicit zeros for equal rows kept). sort_results is accepted for scikit-learn's
        signature; the columns of each row are sorted by index."""
        if not hasattr(self, "_fit_X"):
            raise _NotFitted("this NearestNeighbors is not fitted yet: call fit(X) first")
        r = self.radius if radius is None else radius
        metric, p = self._metric_and_p()
        queries = None if X is None else as_matrix(X, self._ctx, None, self._fit_X.location)
        R = _radius_matrix(self._fit_X, queries, r, mode, metric, p, False, self.dtype, self.progress, self._ctx)
        return _graph_result(R, self._output_kind(X), mode)
