"""cuSPARSE's SDDMM called directly (ctypes), for bench_sddmm.py: out = A·op(B) at S's entries,
S in int32 CSR, A m x K row-major, B our n x K row-major buffer, which cuSPARSE reads as the
K x n column-major op(B) without a copy. cusparseSDDMM_preprocess runs once per (S, K), as a
program calling SDDMM in a loop on one pattern would; torch.sparse.sampled_addmm runs it, and
clones S's values, on every call (`per_call` times that sequence here too)."""
import ctypes
import glob
import os

_INDEX_32I, _BASE_ZERO, _R_32F, _ORDER_COL, _ORDER_ROW, _NON_TRANSPOSE, _ALG_DEFAULT = 2, 0, 0, 1, 2, 0, 0
_P, _I64, _INT = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int


def _load():
    """The cuSPARSE that torch loaded, else the toolkit's (its soname is .12 in CUDA 12 and 13)."""
    dirs = [""] + sorted(glob.glob(os.path.join(os.path.dirname(__import__("torch").__file__), "..", "nvidia",
                                                "cusparse", "lib"))) + ["/usr/local/cuda/lib64"]
    for d in dirs:
        for name in ("libcusparse.so.12", "libcusparse.so.13", "libcusparse.so"):
            try:
                lib = ctypes.CDLL(os.path.join(d, name) if d else name)
            except OSError:
                continue
            sddmm_args = [_P, _INT, _INT, _P, _P, _P, _P, _P, _INT, _INT]
            for fn, args in (("cusparseCreate", [_P]), ("cusparseDestroy", [_P]),
                             ("cusparseCreateCsr", [_P, _I64, _I64, _I64, _P, _P, _P, _INT, _INT, _INT, _INT]),
                             ("cusparseCreateDnMat", [_P, _I64, _I64, _I64, _P, _INT, _INT]),
                             ("cusparseDestroySpMat", [_P]), ("cusparseDestroyDnMat", [_P]),
                             ("cusparseSDDMM_bufferSize", sddmm_args + [_P]),
                             ("cusparseSDDMM_preprocess", sddmm_args + [_P]),
                             ("cusparseSDDMM", sddmm_args + [_P])):
                getattr(lib, fn).argtypes = args
                getattr(lib, fn).restype = _INT
            return lib
    raise OSError("libcusparse not found")


_lib = None


def _check(status, what):
    if status != 0:
        raise RuntimeError(f"{what}: cuSPARSE status {status}")


class Sddmm:
    """One (S, A, B) triple, torch CUDA tensors: indptr and indices int32, values float32 (written
    by each call), A (m x K) and B (n x K) float32 row-major, contiguous."""

    def __init__(self, indptr, indices, values, A, B, alpha=1.0):
        global _lib
        import torch
        _lib = _lib or _load()
        m, K = A.shape
        n = B.shape[0]
        self.handle, self.C, self.dA, self.dB = _P(), _P(), _P(), _P()
        _check(_lib.cusparseCreate(ctypes.byref(self.handle)), "cusparseCreate")
        _check(_lib.cusparseCreateCsr(ctypes.byref(self.C), m, n, values.numel(), indptr.data_ptr(),
                                      indices.data_ptr(), values.data_ptr(), _INDEX_32I, _INDEX_32I, _BASE_ZERO,
                                      _R_32F), "cusparseCreateCsr")
        _check(_lib.cusparseCreateDnMat(ctypes.byref(self.dA), m, K, K, A.data_ptr(), _R_32F, _ORDER_ROW),
               "cusparseCreateDnMat A")
        _check(_lib.cusparseCreateDnMat(ctypes.byref(self.dB), K, n, K, B.data_ptr(), _R_32F, _ORDER_COL),
               "cusparseCreateDnMat B")
        self.alpha, self.beta = ctypes.c_float(alpha), ctypes.c_float(0.0)
        self.args = (self.handle, _NON_TRANSPOSE, _NON_TRANSPOSE, ctypes.byref(self.alpha), self.dA, self.dB,
                     ctypes.byref(self.beta), self.C, _R_32F, _ALG_DEFAULT)
        size = ctypes.c_size_t(0)
        _check(_lib.cusparseSDDMM_bufferSize(*self.args, ctypes.byref(size)), "cusparseSDDMM_bufferSize")
        self.buffer = torch.empty(max(1, size.value), dtype=torch.uint8, device="cuda")
        self.preprocess()

    def preprocess(self):
        _check(_lib.cusparseSDDMM_preprocess(*self.args, _P(self.buffer.data_ptr())), "cusparseSDDMM_preprocess")

    def __call__(self):
        _check(_lib.cusparseSDDMM(*self.args, _P(self.buffer.data_ptr())), "cusparseSDDMM")

    def per_call(self):
        """What torch.sparse.sampled_addmm runs on each call, less its copies."""
        self.preprocess()
        self()

    def close(self):
        _lib.cusparseDestroySpMat(self.C)
        _lib.cusparseDestroyDnMat(self.dA)
        _lib.cusparseDestroyDnMat(self.dB)
        _lib.cusparseDestroy(self.handle)
