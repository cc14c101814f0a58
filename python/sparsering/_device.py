"""GPU arrays in and out without a trip through host memory: cupy arrays, PyTorch CUDA tensors and
anything else with __cuda_array_interface__ or a CUDA DLPack capsule (read through cupy), and
the sparse matrices of cupyx.scipy.sparse and torch (CSR, COO).

Dense arrays are read and written where they are: the library gets their device pointer (no
copy unless the dtype or the strides need one). Sparse inputs are copied once on the device into
the library's CSR (64-bit row pointers, 32-bit columns), validated there. Results come back as
the kind of the input (cupy in, cupy out; torch in, torch out) on the input's device.

Streams: before a call the caller's current stream (cupy's or torch's) is synchronized, and after
it the library's stream, so inputs are complete when the library reads them and results are
complete when the call returns, whatever stream the caller uses next. A caller on the legacy
default stream (both frameworks' default) is not waited for: the library's stream is a blocking
stream, which the driver already orders after the default stream's earlier work."""
import numpy as np

KDL_CUDA = 2  # DLPack's device type for CUDA memory


class DeviceArray:
    """A dense CUDA array: the object that owns it (kept alive while used), its framework ("cupy"
    or "torch"), pointer, shape, numpy dtype and layout ("C" or "F")."""

    __slots__ = ("obj", "kind", "ptr", "shape", "dtype", "order", "readonly")

    def __init__(self, obj, kind, ptr, shape, dtype, order, readonly):
        self.obj, self.kind, self.ptr, self.shape, self.dtype = obj, kind, ptr, tuple(shape), dtype
        self.order, self.readonly = order, readonly

    @property
    def nbytes(self):
        n = self.dtype.itemsize  # a loop: np.prod costs 6 µs a call, most of a small call's own work
        for extent in self.shape:
            n *= extent
        return n

    @property
    def ndim(self):
        return len(self.shape)


def _framework(obj):
    module = type(obj).__module__ or ""
    if module.startswith("torch"):
        return "torch"
    if module.startswith("cupy"):
        return "cupy"
    return None


def _order(shape, strides, itemsize):
    """"C" or "F" when the strides (bytes, None for C order) are those of a packed array, else None."""
    if strides is None:
        return "C"
    c, f = [], []
    step = itemsize
    for n in reversed(shape):
        c.insert(0, step)
        step *= n
    step = itemsize
    for n in shape:
        f.append(step)
        step *= n
    # a dimension of length 1 may carry any stride
    same = lambda want: all(s == w or n == 1 for s, w, n in zip(strides, want, shape))  # noqa: E731
    return "C" if same(c) else "F" if same(f) else None


def _contiguous(obj, kind):
    if kind == "torch":
        return obj.contiguous()
    import cupy
    return cupy.ascontiguousarray(obj)


def device_array(obj):
    """A DeviceArray for a dense CUDA array (made packed when it is strided), None for anything
    else (numpy, scipy, host tensors, sparse tensors). cupy arrays and torch tensors are read
    through their own attributes (their __cuda_array_interface__ builds a dict a call: torch's
    costs about 10 µs), other objects through the interface or DLPack."""
    kind = _framework(obj)
    if kind == "torch":
        return _torch_array(obj)
    if kind == "cupy" and type(obj).__name__ == "ndarray":
        flags = obj.flags
        if not (flags.c_contiguous or flags.f_contiguous):
            return device_array(_contiguous(obj, kind))
        return DeviceArray(obj, kind, obj.data.ptr, obj.shape, obj.dtype, "C" if flags.c_contiguous else "F", False)
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is None and kind is None and hasattr(obj, "__dlpack_device__"):
        if obj.__dlpack_device__()[0] != KDL_CUDA:
            return None
        import cupy
        obj, kind = cupy.from_dlpack(obj), "cupy"
        cai = obj.__cuda_array_interface__
    if cai is None:
        return None
    kind = kind or "cupy"
    dtype = np.dtype(cai["typestr"])
    order = _order(cai["shape"], cai.get("strides"), dtype.itemsize)
    if order is None:
        return device_array(_contiguous(obj, kind))
    ptr, readonly = cai["data"]
    return DeviceArray(obj, kind, ptr, cai["shape"], dtype, order, readonly)


_TORCH_DTYPES = {}  # torch dtype -> numpy dtype, filled on first use


def _torch_array(t):
    """A DeviceArray of a strided CUDA tensor (None for host or sparse tensors)."""
    if not t.is_cuda or t.layout is not _torch().strided:
        return None
    if not _TORCH_DTYPES:
        torch = _torch()
        for name in ("float32", "float64", "float16", "int8", "int16", "int32", "int64", "uint8", "bool"):
            _TORCH_DTYPES[getattr(torch, name)] = np.dtype(name)
        if hasattr(torch, "uint64"):
            _TORCH_DTYPES[torch.uint64] = np.dtype(np.uint64)
    dtype = _TORCH_DTYPES.get(t.dtype)
    if dtype is None:
        raise TypeError(f"sparsering reads no torch {t.dtype} tensors")
    shape = tuple(t.shape)
    order = "C" if t.is_contiguous() else "F" if t.dim() == 2 and t.t().is_contiguous() else None
    if order is None:
        return _torch_array(t.contiguous())
    return DeviceArray(t, "torch", t.data_ptr(), shape, dtype, order, False)


def _torch():
    import torch
    return torch


def device_sparse(obj):
    """(kind, format, parts) for a sparse CUDA matrix: cupyx.scipy.sparse (csr, csc, coo) or a torch
    sparse CSR/COO tensor; format "csr" with parts (shape, indptr, indices, data) or "coo" with
    (shape, rows, cols, data), each a framework array on the device. None for anything else."""
    kind = _framework(obj)
    if kind == "cupy":
        try:
            import cupyx.scipy.sparse as csp
        except ImportError:
            return None
        if not csp.issparse(obj):
            return None
        if obj.format == "coo":
            return kind, "coo", (obj.shape, obj.row, obj.col, obj.data)
        csr = obj.tocsr()
        if not csr.has_canonical_format:
            csr = csr.copy()
            csr.sum_duplicates()
        return kind, "csr", (csr.shape, csr.indptr, csr.indices, csr.data)
    if kind == "torch" and getattr(obj, "is_cuda", False):
        torch = _torch()
        if obj.layout == torch.sparse_csr:
            return kind, "csr", (tuple(obj.shape), obj.crow_indices(), obj.col_indices(), obj.values())
        if obj.layout == torch.sparse_coo:
            idx = obj._indices()
            return kind, "coo", (tuple(obj.shape), idx[0], idx[1], obj._values())
    return None


def is_device(obj):
    """True for a dense or sparse CUDA array of a framework sparsering reads in place."""
    return device_sparse(obj) is not None or device_array(obj) is not None


def astype(arr, dtype):
    """The framework array (cupy or torch) in a numpy dtype, converted on the device when needed."""
    dtype = np.dtype(dtype)
    if _framework(arr) == "torch":
        torch = _torch()
        want = {np.dtype(np.float32): torch.float32, np.dtype(np.float64): torch.float64,
                np.dtype(np.int32): torch.int32, np.dtype(np.int64): torch.int64,
                np.dtype(np.bool_): torch.bool}[dtype]
        return arr.to(want).contiguous()
    import cupy
    return cupy.ascontiguousarray(arr, dtype=dtype)


def to_host(d):
    """A numpy copy of a DeviceArray (for small inputs the library reads on the host)."""
    if d.kind == "torch":
        return d.obj.cpu().numpy()
    import cupy
    return cupy.asnumpy(d.obj)


def pointer(arr):
    """The (device pointer, bytes) pair the binding reads for a framework array (kept alive by the caller)."""
    d = device_array(arr)
    if d is None:
        raise TypeError(f"expected a CUDA array, got {type(arr).__name__}")
    return (d.ptr, d.nbytes)


def _torch_device(like):
    """The device of `like` (a tensor), else torch's current CUDA device."""
    return like.device if like is not None and hasattr(like, "device") else "cuda"


def empty(kind, shape, dtype, like=None):
    """A new array of the kind ("cupy" or "torch") on the device of `like` (a framework array)."""
    dtype = np.dtype(dtype)
    if kind == "torch":
        torch = _torch()
        return torch.empty(shape, dtype=getattr(torch, dtype.name if dtype != np.bool_ else "bool"),
                           device=_torch_device(like))
    import cupy
    return cupy.empty(shape, dtype=dtype)


def arange(kind, n, like=None):
    """0..n-1 (int64) in the kind's framework (numpy for kind None), on `like`'s device."""
    if kind == "torch":
        torch = _torch()
        return torch.arange(n, device=_torch_device(like))
    if kind == "cupy":
        import cupy
        return cupy.arange(n, dtype=np.int64)
    return np.arange(n, dtype=np.int64)


def ones(kind, n, dtype, like=None):
    """n ones of a numpy dtype in the kind's framework, on `like`'s device."""
    out = empty(kind, (n,), dtype, like)
    if kind == "torch":
        out.fill_(1)
    else:
        out.fill(1)
    return out


def sort_rows(keys, values):
    """(keys, values) with each row ordered by its keys (2-D framework arrays of one shape)."""
    if _framework(keys) == "torch":
        torch = _torch()
        keys, order = torch.sort(keys, dim=1, stable=True)
        return keys, torch.gather(values, 1, order)
    import cupy
    order = cupy.argsort(keys, axis=1)
    return cupy.take_along_axis(keys, order, 1), cupy.take_along_axis(values, order, 1)


def caller_stream(kind):
    """The raw cudaStream_t (an int; 0: the legacy default stream) of the caller's current stream."""
    if kind == "torch":
        torch = _torch()
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # 0.3 µs; current_stream() takes ~8
        return raw(torch.cuda.current_device()) if raw else torch.cuda.current_stream().cuda_stream
    import cupy
    return cupy.cuda.get_current_stream().ptr


def synchronize_caller(kind):
    """Waits for the work queued on the caller's current stream of the framework, unless that is
    the legacy default stream (which the library's blocking stream waits for by itself)."""
    if kind not in ("torch", "cupy") or caller_stream(kind) == 0:
        return
    if kind == "torch":
        _torch().cuda.current_stream().synchronize()
    else:
        import cupy
        cupy.cuda.get_current_stream().synchronize()


def csr_result(kind, shape, indptr, indices, data):
    """A sparse matrix of the kind from device CSR arrays (int64 row pointers, int32 columns)."""
    if kind == "torch":
        import warnings
        torch = _torch()
        with warnings.catch_warnings():  # torch's "sparse CSR support is in beta" note, on every call
            warnings.simplefilter("ignore", UserWarning)
            return torch.sparse_csr_tensor(indptr, indices.to(torch.int64), data, size=shape)
    import cupy
    import cupyx.scipy.sparse as csp  # int32 row pointers only
    return csp.csr_matrix((data, indices, indptr.astype(cupy.int32)), shape=shape)


def kind_of(obj):
    """"cupy" or "torch" for a dense or sparse CUDA input, else None (numpy, scipy, Matrix, host tensors)."""
    kind = _framework(obj)
    if kind == "torch":
        return kind if getattr(obj, "is_cuda", False) else None
    if kind == "cupy":
        return kind
    if hasattr(obj, "__cuda_array_interface__"):
        return "cupy"
    if hasattr(obj, "__dlpack_device__") and not isinstance(obj, np.ndarray):
        try:
            return "cupy" if obj.__dlpack_device__()[0] == KDL_CUDA else None
        except Exception:  # noqa: BLE001 - an exporter that cannot say is not a device array
            return None
    return None


def operand(obj, dtype, kind, like=None):
    """A DeviceArray of obj in a numpy dtype: a device array read in place (converted on the device
    when its dtype or strides differ), or a host array copied onto the device by the kind's
    framework (the one copy a host input needs to meet device data). obj may be a DeviceArray."""
    d = obj if isinstance(obj, DeviceArray) else device_array(obj)
    if d is None:
        host = np.asarray(obj, dtype=dtype)
        if kind == "torch":
            torch = _torch()
            return device_array(torch.as_tensor(np.ascontiguousarray(host), device=_torch_device(like)))
        import cupy
        return device_array(cupy.asarray(host))
    if d.dtype != np.dtype(dtype):
        return device_array(astype(d.obj, dtype))
    return d


def dense_arg(d, sr_type, layout_c, layout_f):
    """The binding's dense tuple ((pointer, bytes), rows, cols, type, layout) for a DeviceArray
    (1-D arrays are columns)."""
    rows, cols = (d.shape[0], 1) if d.ndim == 1 else d.shape
    return ((d.ptr, d.nbytes), rows, cols, sr_type, layout_c if d.order == "C" else layout_f)
