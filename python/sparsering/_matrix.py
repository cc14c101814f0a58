"""Contexts, matrices and the conversions from numpy and scipy.sparse."""
import os
import threading

import numpy as np
import scipy.sparse as sp

from . import _core, _device

BOOL, INT32, FLOAT32, FLOAT64 = 0, 1, 2, 3
ROW_MAJOR, COL_MAJOR = 0, 1
_DTYPES = {BOOL: np.dtype(np.bool_), INT32: np.dtype(np.int32), FLOAT32: np.dtype(np.float32),
           FLOAT64: np.dtype(np.float64)}
_BACKENDS = {"auto": 0, "cpu": 1, "cuda": 2, "opencl": 3}
_BACKEND_NAMES = {1: "cpu", 2: "cuda", 3: "opencl"}
_PARTITIONS = {"balanced": 0, "rows": 1}
_INT32 = np.iinfo(np.int32)


def sr_type_of(dtype):
    """The library's value type for a numpy dtype: bool, int32, float32 or float64.
    Other integer types map to int32 (checked when converted), float16 to float32."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return BOOL
    if dtype.kind in "iu":
        return INT32
    if dtype == np.float64:
        return FLOAT64
    if dtype.kind == "f" and dtype.itemsize <= 4:
        return FLOAT32
    raise TypeError(f"sparsering holds bool, int32, float32 and float64 values, not {dtype}")


def numpy_dtype(sr_type):
    return _DTYPES[sr_type]


def _values_as(values, sr_type):
    """values converted to the library's type, copied only when the dtype differs."""
    dtype = _DTYPES[sr_type]
    if values.dtype.kind in "iu" and values.dtype != np.int32 and values.size:
        lo, hi = values.min(), values.max()
        if lo < _INT32.min or hi > _INT32.max:
            raise OverflowError(f"integer values in [{lo}, {hi}] do not fit int32; pass dtype=np.float64")
    return np.ascontiguousarray(values, dtype=dtype)


class Context:
    """Where and how sparsering works.

    backend: "auto" (CUDA when a GPU is usable, else the CPU; the SPARSERING_BACKEND environment
    variable overrides), "cpu", "cuda" or "opencl" (the Boolean operations, closure and CFPQ on an
    OpenCL device, any vendor's GPU or a CPU through PoCL, and everything else on the CPU; its
    matrices stay in host memory). device: the CUDA device, or the OpenCL device's index (GPUs
    first, in platform order). threads: CPU threads (0: OpenMP's default).
    workspace_limit: bytes of temporary memory one call may take (0: automatic, half the free
    device memory or 1 GiB on the host); k-NN works in batches under it. host_memory_limit: the
    most bytes one host allocation may take (0: no fixed limit); a matrix read from a file or built
    from triplets may in any case need at most the larger of 1 GiB and 16 times its entries unless
    this limit allows more (a file declaring billions of empty rows is refused, not read).
    devices: several CUDA devices of this host, e.g. [0, 1] (the SPARSERING_DEVICES environment
    variable, "0,1" or "all", gives them when this is None): matrices live on the first; k-NN, the
    k-NN graph, radius neighbours, SDDMM and SpGEMM spread over all of them and give the one-GPU
    results. partition: how they cut a matrix into row blocks, "balanced" (about equal nonzeros, or
    equal multiply-adds for SpGEMM) or "rows" (equal rows). deterministic: on the GPU, sum in a fixed
    order where the fast path adds floats atomically, so that a call gives the same bits on every
    run (the SPARSERING_DETERMINISTIC environment variable sets it; docs/c-library.md says which calls
    and what it costs); the CPU gives the same bits with the same threads either way.
    asynchronous: on the GPU, spmv, spmm and the fused pattern return as soon as their work is queued
    when every operand is on the device (cupy or torch arrays), instead of waiting for it: a loop of
    such calls then runs with no host wait between them. The next call on this context, and cupy or
    torch on the default stream, read the result in order; anything else should call synchronize()
    first (the SPARSERING_ASYNCHRONOUS environment variable sets it)."""

    def __init__(self, backend="auto", device=0, threads=0, workspace_limit=0, host_memory_limit=0, devices=None,
                 partition="balanced", deterministic=False, asynchronous=False):
        if backend not in _BACKENDS:
            raise ValueError(f"backend must be one of {sorted(_BACKENDS)}, not {backend!r}")
        if partition not in _PARTITIONS:
            raise ValueError(f"partition must be one of {sorted(_PARTITIONS)}, not {partition!r}")
        if devices is not None:
            devices = [int(d) for d in devices]
        self._ctx = _core.Context(_BACKENDS[backend], device, threads, workspace_limit, host_memory_limit, devices,
                                  _PARTITIONS[partition], bool(deterministic), bool(asynchronous))
        # what was asked for, for pickling: a context reopens from its settings where it is loaded
        # ("auto" resolves again there, so a model fitted on a GPU loads on a machine without one)
        self._asynchronous = self._ctx.options()["asynchronous"]  # read on every device call
        self._settings = dict(backend=backend, device=device, threads=threads, workspace_limit=workspace_limit,
                              host_memory_limit=host_memory_limit, devices=devices, partition=partition,
                              deterministic=bool(deterministic), asynchronous=bool(asynchronous))

    @property
    def devices(self):
        """The CUDA devices a context over several GPUs spans ([] for one)."""
        return self._ctx.options()["devices"]

    @property
    def backend(self):
        """"cpu", "cuda" or "opencl": what "auto" resolved to."""
        return _BACKEND_NAMES[self._ctx.backend()]

    @property
    def on_device(self):
        return self.backend == "cuda"

    def options(self):
        return self._ctx.options()

    def _remember(self, name, value):
        if self._settings is not None:  # the default context pickles as itself, not its settings
            self._settings[name] = value

    def set_threads(self, threads):
        self._ctx.set_threads(threads)
        self._remember("threads", threads)

    def set_workspace_limit(self, nbytes):
        self._ctx.set_workspace_limit(nbytes)
        self._remember("workspace_limit", nbytes)

    def set_host_memory_limit(self, nbytes):
        self._ctx.set_host_memory_limit(nbytes)
        self._remember("host_memory_limit", nbytes)

    @property
    def deterministic(self):
        """Whether GPU sums run in a fixed order (the same bits on every run)."""
        return self._ctx.options()["deterministic"]

    def set_deterministic(self, on):
        self._ctx.set_deterministic(bool(on))
        self._remember("deterministic", bool(on))

    @property
    def asynchronous(self):
        """Whether spmv, spmm and the fused pattern return queued on device operands (GPU only)."""
        return self._asynchronous

    def set_asynchronous(self, on):
        self._ctx.set_asynchronous(bool(on))
        self._asynchronous = bool(on)
        self._remember("asynchronous", bool(on))

    def synchronize(self):
        self._ctx.synchronize()

    def device_memory(self):
        """(current, peak) bytes of device memory held by this context's matrices and workspaces."""
        return self._ctx.device_memory()

    def reset_peak_memory(self):
        self._ctx.reset_peak_memory()

    def __repr__(self):
        devices = self.devices
        return f"sparsering.Context(backend={self.backend!r}" + (f", devices={devices!r})" if devices else ")")

    # A context is a handle (backend, device, stream, limits) that estimators share, not a value:
    # copies are the same context, so scikit-learn's clone, which deep-copies parameters, works.
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        return (_reopen_context, (self._settings,))


def _reopen_context(settings):
    """A pickled Context, reopened from its settings (the module's default context stays the one
    default: a pickle made with it loads with this process's default)."""
    if settings is None:
        return default_context()
    return Context(**settings)


_default = None
_default_lock = threading.Lock()


def default_context():
    """The context used when a call names none: made on first use with backend "auto"."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Context(os.environ.get("SPARSERING_PYTHON_BACKEND", "auto"))
            _default._settings = None  # pickles as "the default context" (_reopen_context)
        return _default


def set_default_context(context):
    """Makes `context` (a Context, or a backend name) the one calls use when they name none."""
    global _default
    if isinstance(context, str):
        context = Context(context)
    if not isinstance(context, Context):
        raise TypeError("set_default_context takes a Context or a backend name")
    with _default_lock:
        _default = context


def _context(context):
    return default_context() if context is None else context


def exported_csr(export, nrows, ncols, nnz, type_id):
    """A scipy csr_matrix from a library export: export(indptr, indices, values or None) fills
    host arrays (int64 row pointers, int32 columns); bool matrices give True at every entry."""
    indptr = np.empty(nrows + 1, dtype=np.int64)
    indices = np.empty(nnz, dtype=np.int32)
    values = None if type_id == BOOL else np.empty(nnz, dtype=_DTYPES[type_id])
    export(indptr, indices, values)
    if values is None:
        values = np.ones(nnz, dtype=np.bool_)
    if nnz <= _INT32.max:
        indptr = indptr.astype(np.int32)  # scipy wants one index dtype for both arrays
    else:
        indices = indices.astype(np.int64)
    return sp.csr_matrix((values, indices, indptr), shape=(nrows, ncols))


class Matrix:
    """A sparse matrix held by sparsering (CSR, 64-bit row pointers, 32-bit columns), on the
    host or on the GPU. Make one with Matrix(scipy_matrix_or_array), Matrix.read_mm, or as the
    result of mxm on Matrix inputs. Operations run where the matrix lives."""

    def __init__(self, data, dtype=None, context=None, location=None):
        ctx = _context(context)
        if isinstance(data, Matrix):
            handle = data._h if dtype is None or sr_type_of(dtype) == data._type else data._h.cast(sr_type_of(dtype))
        elif isinstance(data, _core.Matrix):
            handle = data
        else:
            handle = _handle_from(data, dtype, ctx)
        self._set(handle, ctx)
        where = location if location is not None else ("device" if ctx.on_device else None)
        if where is not None and where != self.location:
            self._set(handle.copy_to(_core.DEVICE if where == "device" else _core.HOST), ctx)

    def _set(self, handle, ctx):
        self._h = handle
        self._ctx = ctx
        self._nrows, self._ncols, self._nnz, self._type, self._loc, _ = handle.info()

    @staticmethod
    def _wrap(handle, ctx):
        """A Matrix for a new handle: a BooleanMatrix when its values are bool."""
        m = object.__new__(BooleanMatrix if handle.info()[3] == BOOL else Matrix)
        m._set(handle, ctx)
        return m

    @classmethod
    def read_mm(cls, path, dtype=None, context=None):
        """Reads a Matrix Market file (.mtx or .mtx.gz); dtype converts the values."""
        ctx = _context(context)
        h = _core.read_mm(ctx._ctx, os.fspath(path), -1 if dtype is None else sr_type_of(dtype))
        m = Matrix._wrap(h, ctx)
        return m.to("device") if ctx.on_device else m

    @property
    def shape(self):
        return (self._nrows, self._ncols)

    @property
    def nnz(self):
        return self._nnz

    @property
    def dtype(self):
        return _DTYPES[self._type]

    @property
    def location(self):
        """"host" or "device"."""
        return "device" if self._loc == _core.DEVICE else "host"

    @property
    def context(self):
        return self._ctx

    def to(self, location):
        """A copy on "host" or "device" (self when already there)."""
        if location not in ("host", "device"):
            raise ValueError(f'location must be "host" or "device", not {location!r}')
        if location == self.location:
            return self
        return Matrix._wrap(self._h.copy_to(_core.DEVICE if location == "device" else _core.HOST), self._ctx)

    def astype(self, dtype):
        return Matrix._wrap(self._h.cast(sr_type_of(dtype)), self._ctx)

    def copy(self):
        return Matrix._wrap(self._h.dup(), self._ctx)

    def transpose(self):
        return Matrix._wrap(self._h.transpose(), self._ctx)

    T = property(transpose)

    def equal(self, other):
        """True when shape, type, pattern and values are the same (NaN equals NaN)."""
        return self._h.equal(as_matrix(other, self._ctx, self.dtype, self.location)._h)

    def to_scipy(self):
        """A scipy.sparse.csr_matrix copy (bool matrices give True at every entry)."""
        return exported_csr(self._h.export_csr, self._nrows, self._ncols, self._nnz, self._type)

    def to_device_csr(self, kind="cupy"):
        """The matrix as a cupyx.scipy.sparse.csr_matrix (kind "cupy") or a torch sparse CSR tensor
        (kind "torch") on the GPU, copied on the device (a host Matrix is moved there first)."""
        if kind not in ("cupy", "torch"):
            raise ValueError(f'kind must be "cupy" or "torch", not {kind!r}')
        m = self.to("device") if self.location == "host" else self
        indptr = _device.empty(kind, (m._nrows + 1,), np.int64)
        indices = _device.empty(kind, (m._nnz,), np.int32, indptr)
        dtype = np.dtype(np.float32) if m._type == BOOL else _DTYPES[m._type]  # bool: 1 at each entry
        values = _device.empty(kind, (m._nnz,), dtype, indptr)
        src = m if m._type != BOOL else m.astype(np.float32)
        src._h.export_csr(_device.pointer(indptr), _device.pointer(indices), _device.pointer(values))
        self._ctx.synchronize()
        return _device.csr_result(kind, m.shape, indptr, indices, values)

    def toarray(self, order="C"):
        out = np.empty(self.shape, dtype=_DTYPES[self._type], order=order)
        self._h.export_dense(out, ROW_MAJOR if order == "C" else COL_MAJOR)
        return out

    def write_mm(self, path, symmetric=False, array=False, comment=None):
        """Writes a Matrix Market file (gzip when the name ends in .gz); atomic: a failure leaves
        no half-written file."""
        self._h.write_mm(os.fspath(path), array, symmetric, comment)

    def __getitem__(self, key):
        """M[r0:r1, c0:c1]: a contiguous submatrix (sr_extract), as a Matrix."""
        from ._boolean import extract
        rows, cols = key if isinstance(key, tuple) else (key, slice(None))
        return extract(self, rows, cols)

    def __or__(self, other):
        """A | B: the union (ewise_add with or for bool, + for numbers)."""
        from ._boolean import ewise_add
        return ewise_add(self, other)

    def __and__(self, other):
        """A & B: the intersection (ewise_mult with and for bool, * for numbers)."""
        from ._boolean import ewise_mult
        return ewise_mult(self, other)

    def __matmul__(self, other):
        """A @ B: the ordinary product (or_and for bool matrices); sparse B gives a Matrix,
        dense B a numpy array."""
        from ._ops import mxm, spmm, spmv
        semiring = "or_and" if self._type == BOOL else "plus_times"
        if isinstance(other, Matrix) or sp.issparse(other):
            return mxm(self, other, semiring)
        other = np.asarray(other)
        return spmv(self, other, semiring) if other.ndim == 1 else spmm(self, other, semiring)

    def __repr__(self):
        return (f"<sparsering.{type(self).__name__} {self._nrows}x{self._ncols}, {self._nnz} entries, {self.dtype}, "
                f"{self.location}>")


def _handle_from(data, dtype, ctx):
    if sp.issparse(data):
        return _handle_from_scipy(data, dtype, ctx)
    device = _device.device_sparse(data)
    if device is not None:
        return _handle_from_device_sparse(device, dtype, ctx)
    dense = _device.device_array(data)
    if dense is not None:
        return _handle_from_device_dense(dense, dtype, ctx)
    arr = np.asarray(data)
    if arr.ndim != 2:
        raise ValueError(f"a matrix must be 2-D, not {arr.ndim}-D")
    t = sr_type_of(arr.dtype if dtype is None else dtype)
    arr = np.asarray(arr, dtype=_DTYPES[t])
    if not (arr.flags.c_contiguous or arr.flags.f_contiguous):
        arr = np.ascontiguousarray(arr)
    layout = ROW_MAJOR if arr.flags.c_contiguous else COL_MAJOR
    return _core.from_dense(ctx._ctx, arr.view(np.uint8) if t == BOOL else arr, arr.shape[0], arr.shape[1], t,
                            layout)


def _handle_from_scipy(data, dtype, ctx):
    if data.format == "coo":
        t = sr_type_of(data.dtype if dtype is None else dtype)
        rows = np.ascontiguousarray(data.row, dtype=np.int64)
        cols = np.ascontiguousarray(data.col, dtype=np.int32)
        values = None if t == BOOL else _values_as(data.data, t)
        return _core.from_coo(ctx._ctx, data.shape[0], data.shape[1], t, rows, cols, values, True)
    csr = data.tocsr()
    if not csr.has_canonical_format:  # the library wants sorted, distinct columns per row
        csr = csr.copy()
        csr.sum_duplicates()
    t = sr_type_of(csr.dtype if dtype is None else dtype)
    if t == BOOL and csr.nnz and csr.dtype != np.bool_ and not np.all(csr.data):
        csr = csr.copy()  # a bool matrix stores only its true entries
        csr.eliminate_zeros()
    indptr = np.ascontiguousarray(csr.indptr, dtype=np.int64)
    indices = np.ascontiguousarray(csr.indices, dtype=np.int32)
    values = None if t == BOOL else _values_as(csr.data, t)
    return _core.from_csr(ctx._ctx, csr.shape[0], csr.shape[1], t, indptr, indices, values)


def _need_device_context(ctx, what):
    if not ctx.on_device:
        raise ValueError(f"{what} lives on the GPU but the context runs on the CPU: pass a CUDA context "
                         "(sparsering.Context(\"cuda\")), or copy the data to the host")


def _handle_from_device_sparse(device, dtype, ctx):
    """A device Matrix from a cupyx.scipy.sparse matrix or a torch sparse tensor: its arrays are
    converted on the device where their types differ from the library's, then copied once on the
    device into the library's CSR (never through the host)."""
    kind, fmt, (shape, a, b, data) = device
    _need_device_context(ctx, f"a {kind} sparse matrix")
    t = sr_type_of(_device.device_array(data).dtype if dtype is None else dtype)
    values = None if t == BOOL else _device.astype(data, _DTYPES[t])
    if fmt == "coo":  # duplicates are summed, as scipy's coo_matrix.tocsr does
        rows, cols = _device.astype(a, np.int64), _device.astype(b, np.int32)
        _device.synchronize_caller(kind)
        return _core.from_coo(ctx._ctx, shape[0], shape[1], t, _device.pointer(rows), _device.pointer(cols),
                              None if values is None else _device.pointer(values), True)
    indptr, indices = _device.astype(a, np.int64), _device.astype(b, np.int32)
    nnz = int(indptr[-1]) if shape[0] >= 0 and len(indptr) == shape[0] + 1 else -1
    if nnz != len(indices) or (values is not None and len(values) != nnz):
        raise ValueError(f"a {kind} CSR matrix of shape {shape} has {len(indptr)} row pointers, {len(indices)} "
                         f"column indices and {None if values is None else len(values)} values")
    _device.synchronize_caller(kind)
    return _core.from_csr(ctx._ctx, shape[0], shape[1], t, _device.pointer(indptr), _device.pointer(indices),
                          None if values is None else _device.pointer(values))


def _handle_from_device_dense(arr, dtype, ctx):
    """A device Matrix of a dense cupy array or torch tensor's nonzero elements, read in place."""
    _need_device_context(ctx, f"a {arr.kind} array")
    if arr.ndim != 2:
        raise ValueError(f"a matrix must be 2-D, not {arr.ndim}-D")
    t = sr_type_of(arr.dtype if dtype is None else dtype)
    if arr.dtype != _DTYPES[t]:
        arr = _device.device_array(_device.astype(arr.obj, _DTYPES[t]))
    _device.synchronize_caller(arr.kind)
    return _core.from_dense(ctx._ctx, (arr.ptr, arr.nbytes), arr.shape[0], arr.shape[1], t,
                            ROW_MAJOR if arr.order == "C" else COL_MAJOR)


def as_matrix(data, context=None, dtype=None, location=None):
    """`data` as a Matrix in the context's place (converted when it is scipy or numpy; a Matrix
    of the right type and place is used as is)."""
    ctx = _context(context)
    if isinstance(data, Matrix):
        m = data if dtype is None or np.dtype(dtype) == data.dtype else data.astype(dtype)
        where = location or ("device" if ctx.on_device else m.location)
        return m.to(where)
    return Matrix(data, dtype=dtype, context=ctx, location=location)


class BooleanMatrix(Matrix):
    """A Boolean (pattern) matrix: every stored entry is true, no values are held. Products use
    the (or, and) semiring: A @ B is the Boolean product (reachability in one step of A then B),
    A @ x for a bool vector x is the vector of rows that reach a true entry. Results of bool
    type come back as BooleanMatrix; transpose, equal, to_scipy, write_mm work as for Matrix."""

    def __init__(self, data, context=None, location=None):
        super().__init__(data, dtype=np.bool_, context=context, location=location)

    def mxm(self, other, *, mask=None, complement=False, transpose_b=False, accumulate=None):
        """self (or.and) other, with an optional structural mask and or-accumulation."""
        from ._ops import mxm
        return mxm(self, other, "or_and", mask=mask, complement=complement, transpose_b=transpose_b,
                   accumulate=accumulate)

    def mxv(self, x, *, out=None, mask=None, complement=False, accumulate=False):
        """self (or.and) x for a dense bool vector x (numpy): the rows with an entry where x is true."""
        from ._ops import spmv
        return spmv(self, np.asarray(x, dtype=np.bool_), "or_and", out=out, mask=mask, complement=complement,
                    accumulate=accumulate)

    def pair_counts(self, other):
        """For each (i, j), how many k have both self[i, k] and other[k, j] (the plus_pair semiring):
        common neighbours, triangle counts under a mask."""
        from ._ops import mxm
        return mxm(self, other, "plus_pair")
