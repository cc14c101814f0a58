"""The C API through ctypes, for the C-level comparison tests in this folder only: they call the
library's own entry points (host and device pointers, the C descriptors and enums) beneath the
Python package and check them against scipy and scikit-learn. Users and the benchmarks go
through the package (python/sparsering). Arrays are raw pointers: numpy .ctypes.data for host
memory, cupy .data.ptr for device memory."""
import ctypes as C
import os

HOST, DEVICE = 0, 1
BOOL, INT32, FLOAT32, FLOAT64 = 0, 1, 2, 3
ROW_MAJOR, COL_MAJOR = 0, 1
SEMIRINGS = ["plus_times", "min_plus", "max_plus", "max_times", "min_times", "max_min", "or_and", "plus_pair",
             "any_pair"]


SR_MAX_DEVICES = 16  # include/sparsering.h


class Options(C.Structure):
    """sr_context_options, every field: the library reads the whole struct (a shorter one left it
    reading past the end, and a stray partition value failed sr_context_create at random)."""
    _fields_ = [("backend", C.c_int), ("device", C.c_int), ("stream", C.c_void_p), ("threads", C.c_int),
                ("workspace_limit", C.c_size_t), ("host_memory_limit", C.c_size_t), ("ndevices", C.c_int),
                ("devices", C.c_int * SR_MAX_DEVICES), ("partition", C.c_int)]


class Dense(C.Structure):
    _fields_ = [("data", C.c_void_p), ("nrows", C.c_int64), ("ncols", C.c_int64), ("ld", C.c_int64),
                ("type", C.c_int), ("layout", C.c_int), ("location", C.c_int)]


class Descriptor(C.Structure):
    _fields_ = [("accumulate", C.c_bool), ("mask_complement", C.c_bool), ("transpose_b", C.c_bool),
                ("replace", C.c_bool), ("sample_pattern", C.c_bool)]


class Info(C.Structure):
    _fields_ = [("nrows", C.c_int64), ("ncols", C.c_int64), ("nnz", C.c_int64), ("type", C.c_int),
                ("location", C.c_int), ("device", C.c_int)]


def load(build_dir):
    lib = C.CDLL(os.path.join(build_dir, "libsparsering.so"))
    lib.sr_last_error.restype = C.c_char_p
    return Library(lib)


class Library:
    def __init__(self, lib):
        self.lib = lib

    def check(self, status):
        if status != 0:
            raise RuntimeError(self.lib.sr_last_error().decode())

    def context(self, backend=2):
        ctx = C.c_void_p()
        self.check(self.lib.sr_context_create(C.byref(ctx), C.byref(Options(backend, 0, None, 0, 0, 0))))
        return ctx

    def matrix_from_csr(self, ctx, nrows, ncols, type_, rowptr, colind, values, where):
        A = C.c_void_p()
        self.check(self.lib.sr_matrix_from_csr(ctx, C.byref(A), C.c_int64(nrows), C.c_int64(ncols), type_,
                                               C.c_void_p(rowptr), C.c_void_p(colind), C.c_void_p(values), where))
        return A

    def info(self, A):
        i = Info()
        self.check(self.lib.sr_matrix_get_info(A, C.byref(i)))
        return i

    def arrays(self, A):
        rp, ci, v = C.c_void_p(), C.c_void_p(), C.c_void_p()
        self.check(self.lib.sr_matrix_csr_arrays(A, C.byref(rp), C.byref(ci), C.byref(v)))
        return rp.value, ci.value, v.value

    def spmm(self, ctx, Cd, semiring, A, Bd, accumulate=False):
        self.check(self.lib.sr_spmm(ctx, C.byref(Cd), None, semiring, A, C.byref(Bd),
                                    C.byref(Descriptor(accumulate, False, False))))

    def mxm(self, ctx, semiring, A, B, transpose_b=False):
        out = C.c_void_p()
        self.check(self.lib.sr_mxm(ctx, C.byref(out), None, semiring, A, B,
                                   C.byref(Descriptor(False, False, transpose_b))))
        return out

    def sddmm_values(self, ctx, values, semiring, alpha, S, Ad, Bd, beta, pattern=False):
        d = Descriptor(False, False, False, False, pattern)
        self.check(self.lib.sr_sddmm_values(ctx, C.byref(values), semiring, C.c_double(alpha), S, C.byref(Ad),
                                            C.byref(Bd), C.c_double(beta), C.byref(d)))

    def sddmm(self, ctx, semiring, alpha, S, Ad, Bd, beta, pattern=False):
        out = C.c_void_p()
        d = Descriptor(False, False, False, False, pattern)
        self.check(self.lib.sr_sddmm(ctx, C.byref(out), semiring, C.c_double(alpha), S, C.byref(Ad), C.byref(Bd),
                                     C.c_double(beta), C.byref(d)))
        return out

    def sddmm_spmm(self, ctx, Od, alpha, S, Ad, Bd, Vd, softmax=False, pattern=False):
        d = Descriptor(False, False, False, False, pattern)
        self.check(self.lib.sr_sddmm_spmm(ctx, C.byref(Od), C.c_double(alpha), S, C.byref(Ad), C.byref(Bd),
                                          C.byref(Vd), 1 if softmax else 0, C.byref(d)))

    def copy_to(self, ctx, A, where):
        out = C.c_void_p()
        self.check(self.lib.sr_matrix_copy_to(ctx, A, where, C.byref(out)))
        return out

    def context_or_none(self, backend):
        ctx = C.c_void_p()
        status = self.lib.sr_context_create(C.byref(ctx), C.byref(Options(backend, 0, None, 0, 0, 0)))
        return ctx if status == 0 else None

    def metric(self, name):
        m = C.c_int()
        self.check(self.lib.sr_metric_from_name(name.encode(), C.byref(m)))
        return m.value

    def knn(self, ctx, index, queries, k, metric, metric_arg, indices_ptr, dist_dense):
        self.check(self.lib.sr_knn(ctx, index, queries, C.c_int64(k), metric, C.c_double(metric_arg),
                                   C.c_void_p(indices_ptr), C.byref(dist_dense), None))

    def pairwise(self, ctx, A, B, metric, metric_arg, D):
        self.check(self.lib.sr_pairwise_distance(ctx, A, B, metric, C.c_double(metric_arg), C.byref(D)))

    def set_workspace(self, ctx, nbytes):
        self.check(self.lib.sr_context_set_workspace_limit(ctx, C.c_size_t(nbytes)))

    def from_scipy(self, ctx, m, where, dtype=FLOAT32):
        """A float32 (or float64) sparsering matrix from a scipy CSR (made on the host, then moved)."""
        import numpy as np
        m = m.tocsr()
        m.sort_indices()
        rp = np.ascontiguousarray(m.indptr, dtype=np.int64)
        ci = np.ascontiguousarray(m.indices, dtype=np.int32)
        v = np.ascontiguousarray(m.data, dtype=np.float32 if dtype == FLOAT32 else np.float64)
        A = self.matrix_from_csr(ctx, m.shape[0], m.shape[1], dtype, rp.ctypes.data, ci.ctypes.data,
                                 v.ctypes.data, HOST)
        if where == HOST:
            return A
        D = self.copy_to(ctx, A, where)
        self.free(A)
        return D

    def from_scipy_f64(self, ctx, m, where):
        return self.from_scipy(ctx, m, where, FLOAT64)

    def free(self, A):
        self.lib.sr_matrix_free(A)

    def memory(self, ctx):
        cur, peak = C.c_size_t(), C.c_size_t()
        self.check(self.lib.sr_context_device_memory(ctx, C.byref(cur), C.byref(peak)))
        return cur.value, peak.value

    def reset_peak(self, ctx):
        self.check(self.lib.sr_context_reset_peak_memory(ctx))


def dense(ptr, nrows, ncols, type_, layout, location=DEVICE):
    ld = ncols if layout == ROW_MAJOR else nrows
    return Dense(ptr, nrows, ncols, max(ld, 1), type_, layout, location)
