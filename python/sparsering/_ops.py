"""Semiring products, pairwise distances and k-NN on numpy / scipy.sparse / Matrix inputs."""
from collections import namedtuple

import numpy as np
import scipy.sparse as sp

from . import _core, _device
from ._matrix import (BOOL, COL_MAJOR, FLOAT32, FLOAT64, ROW_MAJOR, Matrix, _context, as_matrix, exported_csr,
                      numpy_dtype, sr_type_of)
from ._progress import progress_callback

SEMIRINGS = _core.SEMIRINGS  # the names the library gives, in its order
METRICS = _core.METRICS


class Semiring:
    """A semiring you define (docs/user-semirings.md), taken wherever a semiring name is (spmv,
    spmm, mxm, ewise_add, ewise_mult, kronecker, reduce_rows, sddmm) on the CPU backend:

        bottleneck = sr.Semiring("bottleneck", add="max", multiply="x < y ? x : y")
        C = sr.mxm(G, G, bottleneck)

    add: "plus", "times", "min", "max", "or", "and" (a built-in monoid), or a C expression over a
    and b with its `identity`; multiply: a C expression over x (A's value) and y (B's); dtype:
    int32, float32 or float64, the values' type in and out. The expressions are compiled by the
    system C compiler (SPARSERING_CC) when the semiring is made, cached on disk
    (SPARSERING_JIT_CACHE), and run with your rights: they are code. One that does not compile
    raises InvalidArgumentError with the compiler's message. A Semiring pickles by its
    definition (made again where it is loaded, e.g. on a dask worker)."""

    def __init__(self, name, add, multiply, dtype=np.float64, identity=None):
        self.name, self.add, self.multiply, self.identity = str(name), str(add), str(multiply), identity
        self.dtype = np.dtype(dtype)
        if identity is not None:
            self.identity = str(identity)
        self.id = _core.semiring_define(self.name, sr_type_of(self.dtype), self.add, self.identity, self.multiply)

    def __reduce__(self):
        return (Semiring, (self.name, self.add, self.multiply, self.dtype.str, self.identity))

    def __eq__(self, other):
        return isinstance(other, Semiring) and self.id == other.id

    def __hash__(self):
        return hash(self.id)

    def __repr__(self):
        extra = f", identity={self.identity!r}" if self.identity is not None else ""
        return (f"sparsering.Semiring({self.name!r}, add={self.add!r}, multiply={self.multiply!r}, "
                f"dtype={self.dtype.name!r}{extra})")


class Metric:
    """A distance you define (docs/user-semirings.md, "Metrics you define"), taken wherever a metric
    name is (pairwise_distances, kneighbors, kneighbors_graph, radius_neighbors,
    NearestNeighbors(metric=...)) on the CPU backend:

        weighted_jaccard = sr.Metric("weighted_jaccard", pair="fmin(q, x)", norm="v",
                                     distance="nq + nx - acc > 0 ? 1 - acc / (nq + nx - acc) : 0")

    pair: the term of a column both rows hold, a C expression over q and x (doubles); acc is its
    sum. norm: a term over each entry v of a row, summed into nq and nx (default 0). distance: a
    C expression over acc, nq, nx, d (the column count) and p (default "acc"). over_union=True:
    pair is a term over every column either row holds, with pair(0, 0) = 0 and pair(v, 0) =
    pair(0, v); acc then sums pair(q, x) - pair(q, 0) - pair(0, x) over the shared columns and
    norm defaults to pair(v, 0), so the union's sum is nq + nx + acc. similarity=True: larger is
    nearer (k-NN keeps the largest). pair2 and norm2: a second sum and second norms (acc2, nq2,
    nx2 in distance; Bray-Curtis's denominator, correlation's row sums), split as pair over the
    union. reduce="max": acc, nq and nx are the largest terms (from 0) instead of sums; over the
    union, the columns only one row holds give pair(q, 0) or pair(0, x), as chebyshev's
    fabs(q - x) (no pair2 or norm2). Compiled when made, cached on disk; the expressions are
    code. Pickles by its definition."""

    def __init__(self, name, pair, norm=None, distance=None, over_union=False, similarity=False, pair2=None,
                 norm2=None, reduce="plus"):
        self.name, self.pair, self.norm, self.distance = str(name), str(pair), norm, distance
        self.over_union, self.similarity, self.pair2, self.norm2 = bool(over_union), bool(similarity), pair2, norm2
        self.reduce = str(reduce)
        text = lambda v: None if v is None else str(v)  # noqa: E731
        self.id = _core.metric_define(self.name, self.pair, text(norm), text(distance), self.over_union,
                                      self.similarity, text(pair2), text(norm2), self.reduce)

    def __reduce__(self):
        return (Metric, (self.name, self.pair, self.norm, self.distance, self.over_union, self.similarity, self.pair2,
                         self.norm2, self.reduce))

    def __eq__(self, other):
        return isinstance(other, Metric) and self.id == other.id

    def __hash__(self):
        return hash(("metric", self.id))

    def __repr__(self):
        return (f"sparsering.Metric({self.name!r}, pair={self.pair!r}, norm={self.norm!r}, distance={self.distance!r}, "
                f"over_union={self.over_union}, similarity={self.similarity}, reduce={self.reduce!r})")


def semiring_id(semiring):
    if isinstance(semiring, Semiring):
        return semiring.id
    try:
        return SEMIRINGS.index(semiring)
    except ValueError:
        raise ValueError(f"unknown semiring {semiring!r}; known: {', '.join(SEMIRINGS)}, or a sparsering.Semiring") from None


def _value_dtype(semiring):
    """The values' type a semiring takes: a user Semiring's own (inputs are converted to it),
    None for a built-in (the input's type)."""
    return semiring.dtype if isinstance(semiring, Semiring) else None


def _ctx_for(first, context):
    return first.context if context is None and isinstance(first, Matrix) else _context(context)


def _dense(arr, what, writable=False):
    """(array, nrows, ncols, type, layout) for the binding; 1-D arrays are columns."""
    rows, cols = (arr.shape[0], 1) if arr.ndim == 1 else arr.shape
    layout = ROW_MAJOR if arr.flags.c_contiguous else COL_MAJOR
    if writable and not arr.flags.writeable:
        raise ValueError(f"{what} is read-only")
    t = sr_type_of(arr.dtype)
    return (arr.view(np.uint8) if t == BOOL else arr, rows, cols, t, layout)


def _operand(arr, sr_type):
    """A dense operand in the matrix's type, copied only when its dtype or strides need it."""
    out = np.asarray(arr, dtype=numpy_dtype(sr_type))
    return out if out.flags.c_contiguous or out.flags.f_contiguous else np.ascontiguousarray(out)


def _output(out, shape, sr_type, accumulate, masked, what):
    dtype = numpy_dtype(sr_type)
    if out is None:
        if accumulate or masked:
            raise ValueError(f"{what}: accumulate and mask keep values already in the output: pass out=")
        return np.empty(shape, dtype=dtype)
    if not isinstance(out, np.ndarray) or out.shape != shape or out.dtype != dtype:
        raise ValueError(f"{what}: out must be a numpy array of shape {shape} and dtype {dtype}")
    if not (out.flags.c_contiguous or out.flags.f_contiguous):
        raise ValueError(f"{what}: out must be C- or Fortran-contiguous")
    return out


def _mask(mask, ctx, like):
    return None if mask is None else as_matrix(mask, ctx, np.bool_, like.location)._h


def _device_kind(*inputs):
    """The framework ("cupy" or "torch") of the first GPU input, None when all are host data."""
    for obj in inputs:
        kind = None if obj is None or isinstance(obj, (np.ndarray, Matrix)) else _device.kind_of(obj)
        if kind:
            return kind
    return None


_OUTPUT_KINDS = {None: None, "input": None, "numpy": "numpy", "cupy": "cupy", "array": "cupy", "torch": "torch"}


def _output_kind(output_type, *inputs):
    """The GPU framework results come back in ("cupy", "torch"), or None for numpy / scipy:
    output_type None or "input" follows the first GPU input, "numpy" stays on the host, "cupy"
    ("array", cuML's name) and "torch" ask for that framework."""
    if output_type not in _OUTPUT_KINDS:
        raise ValueError(f'output_type must be one of "input", "numpy", "cupy", "array" or "torch", not {output_type!r}')
    want = _OUTPUT_KINDS[output_type]
    if want is None:
        return _device_kind(*inputs)
    return None if want == "numpy" else want


def _device_output(out, kind, shape, sr_type, accumulate, masked, what, like):
    """The device output of a call on GPU data: `out` (a device array of the shape and dtype) or a
    new one of the input's kind."""
    dtype = numpy_dtype(sr_type)
    if out is None:
        if accumulate or masked:
            raise ValueError(f"{what}: accumulate and mask keep values already in the output: pass out=")
        out = _device.empty(kind, shape, dtype, like)
    d = _device.device_array(out)
    if d is None or d.shape != tuple(shape) or d.dtype != dtype or d.ptr != _ptr_of(out):  # a copy would lose the writes
        raise ValueError(f"{what}: out must be a packed device array of shape {shape} and dtype {dtype}")
    return out, d


def _ptr_of(obj):
    """The device pointer of a packed array as its owner reports it (data_ptr for torch)."""
    if hasattr(obj, "data_ptr"):
        return obj.data_ptr()
    ptr = getattr(getattr(obj, "data", None), "ptr", None)  # a cupy array's memory pointer
    return ptr if ptr is not None else obj.__cuda_array_interface__["data"][0]


def _dtype_of(x):
    """The numpy dtype of a numpy, cupy or torch array (or anything np.asarray takes)."""
    if isinstance(x, _device.DeviceArray):
        return x.dtype
    d = None if isinstance(x, np.ndarray) else _device.device_array(x)
    return d.dtype if d is not None else np.asarray(x).dtype


def _device_in(x, sr_type, kind, what, ndim):
    """(the binding's dense tuple, the DeviceArray to keep alive until the call is done) for an
    operand read on the device in place (converted there when its dtype or strides differ)."""
    d = _device.operand(x, numpy_dtype(sr_type), kind)
    if d.ndim != ndim:
        raise ValueError(f"{what} must be {ndim}-D, not of shape {d.shape}")
    return _device.dense_arg(d, sr_type, ROW_MAJOR, COL_MAJOR), d


def _fill_diagonal(D, kind):
    """Zeros on D's diagonal: as scikit-learn, a row is at distance 0 from itself (even an all-zero one)."""
    if kind == "torch":
        D.fill_diagonal_(0)
    elif kind == "cupy":
        import cupy
        cupy.fill_diagonal(D, 0)
    else:
        np.fill_diagonal(D, 0)


def _run_on_device(ctx, kind, call):
    """Runs a binding call on device data: the caller's stream is waited for before, the library's
    after, so the inputs are complete when read and the outputs when returned. On an asynchronous
    context whose caller works on the framework's legacy default stream, which waits for the
    library's blocking stream by itself, the call returns queued instead (no host wait)."""
    _device.synchronize_caller(kind)
    call()
    if not (ctx.asynchronous and _device.caller_stream(kind) == 0):
        ctx.synchronize()


def spmv(A, x, semiring="plus_times", *, out=None, mask=None, complement=False, accumulate=False, context=None):
    """y = A ⊕.⊗ x for a sparse matrix A and a dense vector x (numpy). Returns y (numpy), written
    into `out` when given (needed with accumulate or a mask: entries the mask excludes keep
    their values). x is taken in A's value type."""
    ctx = _ctx_for(A, context)
    kind = _device_kind(x, A, out)
    A = as_matrix(A, ctx, _value_dtype(semiring), "device" if kind else None)
    s = semiring_id(semiring)
    if kind:
        t = _core.semiring_output_type(s, A._type)
        xd = _device.operand(x, numpy_dtype(A._type), kind)
        if xd.ndim != 1 and (xd.ndim != 2 or xd.shape[1] != 1):
            raise ValueError(f"spmv: x must be a vector, not of shape {xd.shape}")
        xd.shape, xd.order = (xd.shape[0],), "C"
        y, yd = _device_output(out, kind, (A.shape[0],), t, accumulate, mask is not None, "spmv", xd.obj)
        _run_on_device(ctx, kind, lambda: _core.spmv(ctx._ctx, _device.dense_arg(yd, t, ROW_MAJOR, COL_MAJOR), A._h,
                                                     _device.dense_arg(xd, A._type, ROW_MAJOR, COL_MAJOR), s,
                                                     _mask(mask, ctx, A), accumulate, complement))
        return y
    x = _operand(x, A._type).reshape(-1)
    y = _output(out, (A.shape[0],), _core.semiring_output_type(s, A._type), accumulate, mask is not None, "spmv")
    _core.spmv(ctx._ctx, _dense(y, "out", True), A._h, _dense(x, "x"), s, _mask(mask, ctx, A), accumulate,
               complement)
    return y


SpmvPlan = namedtuple("SpmvPlan", "in_use hot_columns hot_share seconds plain_seconds planned_seconds bytes")
SpmvPlan.__doc__ = """What sr.spmv_plan found (sr_spmv_plan_info): whether the plan is in use, the columns whose x
values a call keeps in fast memory and their share of the entries, the analysis's seconds, one
SpMV's seconds without and with the plan, and the bytes the plan keeps with the matrix."""


def spmv_plan(A, *, context=None):
    """Analyses the sparsering Matrix A once for the many SpMVs that follow (PageRank, CG, GNN
    layers): the x values of its most popular columns get a place in fast memory (a GPU block's
    shared memory; the front of a renumbered x on the CPU). The plan is kept with A when one
    SpMV measured faster with it; every later spmv(A, x) then uses it, with results identical
    bit for bit to the plain call's. Returns an SpmvPlan. spmv_plan_free(A) drops it."""
    if not isinstance(A, Matrix):
        raise TypeError("spmv_plan: A must be a sparsering Matrix (the plan stays with it), "
                        f"not {type(A).__name__}; make one with sparsering.Matrix(A)")
    ctx = _ctx_for(A, context)
    return SpmvPlan(*_core.spmv_plan(ctx._ctx, A._h, False))


def spmv_plan_free(A, *, context=None):
    """Drops A's SpMV plan, if it has one."""
    if not isinstance(A, Matrix):
        raise TypeError(f"spmv_plan_free: A must be a sparsering Matrix, not {type(A).__name__}")
    _core.spmv_plan(_ctx_for(A, context)._ctx, A._h, True)


def spmm(A, B, semiring="plus_times", *, out=None, mask=None, complement=False, accumulate=False, context=None):
    """C = A ⊕.⊗ B for sparse A and a dense B (numpy, row- or column-major, used without a copy
    when it already has A's type). Returns C (numpy; `out` when given)."""
    ctx = _ctx_for(A, context)
    kind = _device_kind(B, A, out)
    A = as_matrix(A, ctx, _value_dtype(semiring), "device" if kind else None)
    s = semiring_id(semiring)
    if kind:
        t = _core.semiring_output_type(s, A._type)
        Bd = _device.operand(B, numpy_dtype(A._type), kind)
        if Bd.ndim != 2:
            raise ValueError(f"spmm: B must be 2-D, not {Bd.ndim}-D (spmv takes vectors)")
        C, Cd = _device_output(out, kind, (A.shape[0], Bd.shape[1]), t, accumulate, mask is not None, "spmm",
                               Bd.obj)
        _run_on_device(ctx, kind, lambda: _core.spmm(ctx._ctx, _device.dense_arg(Cd, t, ROW_MAJOR, COL_MAJOR), A._h,
                                                     _device.dense_arg(Bd, A._type, ROW_MAJOR, COL_MAJOR), s,
                                                     _mask(mask, ctx, A), accumulate, complement))
        return C
    B = _operand(B, A._type)
    if B.ndim != 2:
        raise ValueError(f"spmm: B must be 2-D, not {B.ndim}-D (spmv takes vectors)")
    C = _output(out, (A.shape[0], B.shape[1]), _core.semiring_output_type(s, A._type), accumulate,
                mask is not None, "spmm")
    _core.spmm(ctx._ctx, _dense(C, "out", True), A._h, _dense(B, "B"), s, _mask(mask, ctx, A), accumulate,
               complement)
    return C


def mxm(A, B, semiring="plus_times", *, mask=None, complement=False, transpose_b=False, accumulate=None,
        context=None):
    """C = A ⊕.⊗ B for sparse A and B (SpGEMM). mask: a structural mask (only its pattern counts;
    complement=True computes where it has no entry). accumulate: a matrix of C's shape whose
    entries are combined with the product by the semiring's ⊕. Returns a scipy.sparse
    csr_matrix, or a Matrix (kept where it was computed) when A is a Matrix."""
    ctx = _ctx_for(A, context)
    keep = isinstance(A, Matrix)
    kind = _device_kind(A, B)
    A = as_matrix(A, ctx, _value_dtype(semiring), "device" if kind else None)
    B = as_matrix(B, ctx, A.dtype, A.location)  # B is taken in A's value type
    s = semiring_id(semiring)
    acc = None if accumulate is None else as_matrix(accumulate, ctx, _value_dtype(semiring), A.location)._h
    h = _core.binary(ctx._ctx, 0, A._h, B._h, s, _mask(mask, ctx, A), acc, complement, transpose_b)
    C = Matrix._wrap(h, ctx)
    return C if keep else C.to_device_csr(kind) if kind else C.to_scipy()


class RowBlocks:
    """C = A ⊕.⊗ B left in row blocks where the GPUs made it (mxm_row_blocks): on a context over
    several GPUs, block g holds rows [first_rows[g], first_rows[g] + its rows) on GPU g, so the
    product's second half never crosses to the first GPU; elsewhere one block, the whole product.
    block(g) and to_scipy() copy each block to the host from its own GPU; gather() puts the blocks
    together where mxm would (a Matrix)."""

    def __init__(self, capsule, ctx, shape):
        self._blocks, self._ctx, self.shape = capsule, ctx, shape
        self._info = _core.row_blocks_info(capsule)

    def __len__(self):
        return len(self._info)

    @property
    def first_rows(self):
        """The first row of C each block holds."""
        return [i[0] for i in self._info]

    @property
    def nnz(self):
        return sum(i[3] for i in self._info)

    @property
    def devices(self):
        """The CUDA device each block lives on (-1: the host)."""
        return [i[6] if i[5] else -1 for i in self._info]

    def block(self, g):
        """Block g as a scipy csr_matrix of its rows (bool blocks give True at every entry)."""
        _, nrows, ncols, nnz, t, _, _ = self._info[g]
        return exported_csr(lambda *arrays: _core.row_blocks_export_csr(self._blocks, g, *arrays), nrows, ncols, nnz, t)

    def to_scipy(self):
        """The whole product as a scipy csr_matrix, the blocks stacked on the host."""
        return sp.vstack([self.block(g) for g in range(len(self))], format="csr")

    def gather(self):
        """The blocks one under the other as one Matrix, where mxm would have put the product."""
        return Matrix._wrap(_core.row_blocks_gather(self._ctx._ctx, self._blocks), self._ctx)

    def __repr__(self):
        return f"<sparsering.RowBlocks {self.shape[0]}x{self.shape[1]}, {self.nnz} entries in {len(self)} blocks>"


def mxm_row_blocks(A, B, semiring="plus_times", *, context=None):
    """C = A ⊕.⊗ B (SpGEMM) left in row blocks, one a GPU of a context over several GPUs (cut as
    mxm cuts A), instead of gathered on the first GPU: a RowBlocks. On any other context there is
    one block. No mask, accumulate or transpose (mxm has them)."""
    ctx = _ctx_for(A, context)
    kind = _device_kind(A, B)
    A = as_matrix(A, ctx, None, "device" if kind else None)
    B = as_matrix(B, ctx, A.dtype, A.location)  # B is taken in A's value type
    return RowBlocks(_core.mxm_row_blocks(ctx._ctx, A._h, B._h, semiring_id(semiring)), ctx, (A.shape[0], B.shape[1]))


def _metric(metric, p):
    """The library's metric for a scikit-learn metric name and p."""
    if metric == "minkowski":
        p = 2.0 if p is None else float(p)
        if p == 2.0:
            return _core.metric_from_name("euclidean"), 0.0
        if p == 1.0:
            return _core.metric_from_name("manhattan"), 0.0
        if p == np.inf:
            return _core.metric_from_name("chebyshev"), 0.0
        return _core.metric_from_name("minkowski"), p
    if isinstance(metric, Metric):
        return metric.id, 0.0 if p is None else float(p)
    if not isinstance(metric, str):
        raise TypeError(f"metric must be a name ({', '.join(METRICS)}) or a sparsering.Metric, not "
                        f"{type(metric).__name__}")
    return _core.metric_from_name(metric), 0.0 if p is None else float(p)


def _precision(dtype, *inputs):
    """float64 when asked or when an input holds float64, int32 or bool (as scikit-learn), else float32."""
    if dtype is not None:
        t = sr_type_of(dtype)
        if t not in (FLOAT32, FLOAT64):
            raise ValueError(f"distances are float32 or float64, not {np.dtype(dtype)}")
        return t
    return FLOAT32 if all(m._type == FLOAT32 for m in inputs) else FLOAT64


def pairwise_distances(X, Y=None, metric="euclidean", *, p=None, dtype=None, context=None):
    """Distances between the rows of X and the rows of Y (X itself when Y is None: the diagonal
    is then 0, as scikit-learn makes it), as sklearn.metrics.pairwise_distances, for sparse
    (scipy, Matrix) or dense inputs. Every
    metric of sparsering.METRICS, or a sparsering.Metric (its diagonal as it computes it);
    "minkowski" takes p. Returns a dense numpy array,
    X.shape[0] x Y.shape[0], float32 when the inputs are float32, else float64 (dtype= overrides)."""
    ctx = _ctx_for(X, context)
    m, arg = _metric(metric, p)
    kind = _device_kind(X, Y)
    A = as_matrix(X, ctx, None, "device" if kind else None)
    B = A if Y is None else as_matrix(Y, ctx, None, A.location)
    t = _precision(dtype, A, B)
    shape = (A.shape[0], B.shape[0])
    if kind:
        D = _device.empty(kind, shape, numpy_dtype(t))
        Dd = _device.device_array(D)
        _run_on_device(ctx, kind, lambda: _core.pairwise(ctx._ctx, A._h, B._h, m, arg,
                                                         _device.dense_arg(Dd, t, ROW_MAJOR, COL_MAJOR)))
    else:
        D = np.empty(shape, dtype=numpy_dtype(t))
        _core.pairwise(ctx._ctx, A._h, B._h, m, arg, _dense(D, "D", True))
    if Y is None and m != _core.metric_from_name("inner_product") and not isinstance(metric, Metric):
        _fill_diagonal(D, kind)  # (a user metric's own values stay: it may be a similarity)
    return D


PRECISIONS = {"exact": 0, "tf32": 1, "float32": 2}


def _tensor_precision(precision):
    """The library's sr_precision for a name (see kneighbors)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(map(repr, PRECISIONS))}, not {precision!r}")
    return PRECISIONS[precision]


def kneighbors(index, queries=None, k=5, metric="euclidean", *, p=None, dtype=None, progress=None, output_type=None,
               context=None, precision="exact"):
    """The k nearest rows of `index` to each row of `queries` (index itself when None; each row
    then finds itself first). Returns (distances, indices), closest first, ties to the smaller
    index; inner_product keeps the largest. progress: True for a progress bar (tqdm when
    installed), or a callable(done, total) whose true result stops the run (CancelledError);
    Ctrl-C stops it between batches. output_type: "cupy" (or "array") or "torch" for results on
    the GPU, "numpy" for host arrays; None or "input" (the default) answers GPU inputs in their
    kind, others in numpy.

    precision: how float32 searches of the dot-product metrics on a GPU may use tensor cores for
    the columns that carry most of the work. "exact" (default): FP16 where every value is an
    integer that FP16 holds and every dot product stays below 2^24 (checked; the float32 answer
    bit for bit), else a split TF32 product of float32 accuracy; "tf32": one TF32 product, fastest,
    dot products to about 1e-3 relative; "float32": no tensor cores. `sparsering.last_method()`
    says which path a call took."""
    prec = _tensor_precision(precision)
    ctx = _ctx_for(index, context)
    m, arg = _metric(metric, p)
    kind = _output_kind(output_type, index, queries)
    X = as_matrix(index, ctx, None, "device" if kind else None)
    Q = X if queries is None else as_matrix(queries, ctx, None, X.location)
    t = _precision(dtype, X, Q)
    k = int(k)
    if kind:  # results on the device, as the input's kind
        dist, idx = _device.empty(kind, (Q.shape[0], k), numpy_dtype(t)), _device.empty(kind, (Q.shape[0], k), np.int64)
        dd, di = _device.device_array(dist), _device.device_array(idx)
        with progress_callback(progress, Q.shape[0]) as callback:
            _run_on_device(ctx, kind, lambda: _core.knn(ctx._ctx, X._h, Q._h, k, m, arg, (di.ptr, di.nbytes),
                                                        _device.dense_arg(dd, t, ROW_MAJOR, COL_MAJOR), callback, prec))
        return dist, idx
    dist = np.empty((Q.shape[0], k), dtype=numpy_dtype(t))
    idx = np.empty((Q.shape[0], k), dtype=np.int64)
    with progress_callback(progress, Q.shape[0]) as callback:
        _core.knn(ctx._ctx, X._h, Q._h, k, m, arg, idx, _dense(dist, "distances", True), callback, prec)
    return dist, idx


def kneighbors_graph(X, n_neighbors, mode="connectivity", metric="minkowski", p=2, metric_params=None,
                     include_self=False, n_jobs=None, *, symmetrize=False, dtype=None, progress=None, output_type=None,
                     context=None, precision="exact"):
    """The k-nearest-neighbour graph of X's rows, as sklearn.neighbors.kneighbors_graph: a
    scipy csr_matrix, row i holding its n_neighbors nearest rows, 1.0 (connectivity) or the
    distance (mode="distance"; explicit zeros for equal rows are kept). include_self=False leaves
    each row out of its own list. symmetrize=True returns G ∪ Gᵀ with the larger value where both
    hold an entry (for UMAP, spectral clustering). Built in batches; n_jobs is ignored (the
    context's threads or the GPU do the work). A GPU input gives the graph in its sparse kind
    (cupyx / torch); output_type and precision as in kneighbors."""
    prec = _tensor_precision(precision)
    if mode not in ("connectivity", "distance"):
        raise ValueError(f'mode must be "connectivity" or "distance", not {mode!r}')
    if metric_params and "p" in metric_params:
        p = metric_params["p"]
    ctx = _ctx_for(X, context)
    m, arg = _metric(metric, p if metric == "minkowski" else None)
    kind = _output_kind(output_type, X)
    A = as_matrix(X, ctx, None, "device" if kind else None)
    t = _precision(dtype, A)
    with progress_callback(progress, A.shape[0]) as callback:
        h = _core.knn_graph(ctx._ctx, A._h, int(n_neighbors), m, arg, mode == "distance", include_self, symmetrize,
                            t, callback, prec)
    return _graph_result(Matrix._wrap(h, ctx), kind, mode)


def _graph_result(G, kind, mode):
    """A graph as scipy csr (host inputs) or the GPU input's sparse kind; connectivity graphs hold
    1.0 in float64, as scikit-learn's."""
    if not kind:
        out = G.to_scipy()
        return out.astype(np.float64) if mode == "connectivity" else out
    if mode == "connectivity":
        G = G.astype(np.float64)
    return G.to_device_csr(kind)


def _radius_matrix(X, Y, radius, mode, metric, p, include_self, dtype, progress, context):
    """The library's radius result (a Matrix) for X against itself (Y None) or Y's rows against X's."""
    if mode not in ("connectivity", "distance"):
        raise ValueError(f'mode must be "connectivity" or "distance", not {mode!r}')
    ctx = _ctx_for(X, context)
    m, arg = _metric(metric, p)
    A = as_matrix(X, ctx, None, "device" if _device_kind(X, Y) else None)
    B = None if Y is None else as_matrix(Y, ctx, None, A.location)
    t = _precision(dtype, A) if B is None else _precision(dtype, A, B)
    nq = A.shape[0] if B is None else B.shape[0]
    with progress_callback(progress, nq) as callback:
        h = _core.radius(ctx._ctx, A._h, None if B is None else B._h, float(radius), m, arg, mode == "distance",
                         include_self, t, callback)
    return Matrix._wrap(h, ctx)


def radius_neighbors_graph(X, radius, mode="connectivity", metric="minkowski", p=2, metric_params=None,
                           include_self=False, n_jobs=None, *, dtype=None, progress=None, output_type=None,
                           context=None):
    """Every pair of X's rows within `radius`, as sklearn.neighbors.radius_neighbors_graph: a scipy
    csr_matrix, 1.0 (connectivity) or the distance (mode="distance"; explicit zeros for equal
    rows are kept) per pair; include_self=False leaves out each row's own entry (only that one).
    inner_product, a similarity, keeps the pairs at least `radius`. Built in batches; a batch
    whose pairs would not fit the workspace limit raises OutOfMemoryError (on the GPU, batches are
    retried smaller first: only a single query's pairs can). n_jobs is ignored.
    output_type as in kneighbors_graph."""
    if metric_params and "p" in metric_params:
        p = metric_params["p"]
    kind = _output_kind(output_type, X)
    R = _radius_matrix(X, None, radius, mode, metric, p if metric == "minkowski" else None, include_self, dtype,
                       progress, context)
    return _graph_result(R, kind, mode)


def radius_neighbors(index, queries=None, radius=1.0, metric="euclidean", *, p=None, dtype=None, sort_results=False,
                     progress=None, context=None):
    """The rows of `index` within `radius` of each row of `queries` (index itself when None; each
    row then leaves itself out, as scikit-learn's radius_neighbors(X=None)). Returns (distances,
    indices): numpy object arrays holding one array per query, by index, or closest first with
    sort_results=True (ties to the smaller index)."""
    R = _radius_matrix(index, queries, radius, "distance", metric, p, False, dtype, progress, context).to_scipy()
    nq = R.shape[0]
    dist, ind = np.empty(nq, dtype=object), np.empty(nq, dtype=object)
    # each query's arrays are views of two whole ones: a row's own copy and numpy-scalar bounds
    # cost 1 us a query, an eighth of a 2,000-query search on 2 cores
    ptr, data, cols = R.indptr.tolist(), R.data, R.indices.astype(np.int64)
    for i in range(nq):
        lo, hi = ptr[i], ptr[i + 1]
        d, j = data[lo:hi], cols[lo:hi]
        if sort_results:
            order = np.lexsort((j, d))
            d, j = d[order], j[order]
        dist[i], ind[i] = d, j
    return dist, ind
