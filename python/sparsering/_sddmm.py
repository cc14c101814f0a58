"""Sampled products (SDDMM), the fused SDDMM→SpMM and matrix factorization on numpy /
scipy.sparse / Matrix inputs."""
from collections import namedtuple

import numpy as np

from . import _core, _device
from ._matrix import COL_MAJOR, ROW_MAJOR, Matrix, as_matrix, numpy_dtype, sr_type_of
from ._ops import (_ctx_for, _dense, _device_in, _device_kind, _device_output, _dtype_of, _operand,
                   _run_on_device, _tensor_precision, semiring_id)


def _factor_type(A, B, S):
    """The value type of the dense operands: theirs when they agree on a float, else S's float
    type (float32 for bool or int S)."""
    kinds = {_dtype_of(A), _dtype_of(B)}
    if kinds <= {np.dtype(np.float64)}:
        return sr_type_of(np.float64)
    if kinds <= {np.dtype(np.float32)}:
        return sr_type_of(np.float32)
    s = getattr(S, "dtype", np.float32)
    return sr_type_of(np.float64 if s == np.float64 else np.float32)


def _operands(S, A, B, context, what):
    """(ctx, S as a Matrix, A's and B's binding tuples, the value type, the device kind or None,
    what to keep alive) for a sampled product; GPU inputs (cupy, torch) keep the work and the
    result on the device."""
    ctx = _ctx_for(S, context)
    kind = _device_kind(A, B, S)
    if kind:  # each device operand's pointer and shape read once (about 2 µs a torch tensor)
        A, B = (_device.device_array(x) or x for x in (A, B))
    t = _factor_type(A, B, S)
    S = as_matrix(S, ctx, None if getattr(S, "dtype", None) == np.bool_ else numpy_dtype(t),
                  "device" if kind else None)
    if kind:
        (a, Ad), (b, Bd) = (_device_in(A, t, kind, f"{what}: A", 2), _device_in(B, t, kind, f"{what}: B", 2))
        return ctx, S, a, b, t, kind, (Ad, Bd)
    A, B = _operand(A, t), _operand(B, t)
    if A.ndim != 2 or B.ndim != 2:
        raise ValueError(f"{what}: A and B must be 2-D (m x K and n x K)")
    return ctx, S, _dense(A, "A"), _dense(B, "B"), t, None, ()


def sddmm(S, A, B, *, alpha=1.0, beta=0.0, semiring="plus_times", pattern=False, context=None,
          precision="exact"):
    """C = alpha·(S ⊙ (A ⊕.⊗ Bᵀ)) + beta·S at the entries of S, and nowhere else (the sampled
    dense-dense product). A is m x K and B is n x K (numpy, either order; float32 or float64);
    S is m x n (scipy.sparse or Matrix; bool samples at its pattern). pattern=True ignores S's
    values in the product (cuSPARSE's form). S's pattern, explicit zeros included, is kept.
    precision: how float32 products of well-filled S on a GPU use tensor cores: "exact" (default;
    each operand split in two TF32 halves, float32's accuracy), "tf32" (one product, about 1e-3
    of |a||b|) or "float32" (the CUDA cores); elsewhere it changes nothing.
    Returns a scipy csr_matrix, or a Matrix (where it was computed) when S is a Matrix."""
    keep = isinstance(S, Matrix)
    prec = _tensor_precision(precision)
    ctx, S, a, b, t, kind, hold = _operands(S, A, B, context, "sddmm")
    h = []
    call = lambda: h.append(_core.sddmm(ctx._ctx, S._h, a, b, semiring_id(semiring), float(alpha),  # noqa: E731
                                        float(beta), bool(pattern), None, prec))
    _run_on_device(ctx, kind, call) if kind else call()
    C = Matrix._wrap(h[0], ctx)
    return C if keep else C.to_device_csr(kind) if kind else C.to_scipy()


def sddmm_values(S, A, B, *, alpha=1.0, beta=0.0, semiring="plus_times", pattern=False, out=None, context=None,
                 precision="exact"):
    """The values of sddmm(S, A, B, ...) alone, as a 1-D numpy array in the order of S's entries
    (CSR, columns ascending in each row), written into `out` when given (no new matrix: for
    iterative use, S converted once to a Matrix). precision as in sddmm."""
    prec = _tensor_precision(precision)
    ctx, S, a, b, t, kind, hold = _operands(S, A, B, context, "sddmm_values")
    out_type = _core.semiring_output_type(semiring_id(semiring), t)
    if kind:
        out, od = _device_output(out, kind, (S.nnz,), out_type, False, False, "sddmm_values", hold[0].obj)
        _run_on_device(ctx, kind, lambda: _core.sddmm(ctx._ctx, S._h, a, b, semiring_id(semiring), float(alpha),
                                                      float(beta), bool(pattern),
                                                      _device.dense_arg(od, out_type, ROW_MAJOR, COL_MAJOR), prec))
        return out
    if out is None:
        out = np.empty(S.nnz, dtype=numpy_dtype(out_type))
    elif not isinstance(out, np.ndarray) or out.shape != (S.nnz,) or out.dtype != numpy_dtype(out_type) or \
            not out.flags.c_contiguous:
        raise ValueError(f"sddmm_values: out must be a contiguous numpy vector of {S.nnz} {numpy_dtype(out_type)}")
    _core.sddmm(ctx._ctx, S._h, a, b, semiring_id(semiring), float(alpha), float(beta), bool(pattern),
                _dense(out, "out", True), prec)
    return out


def sddmm_spmm(S, A, B, V, *, alpha=1.0, softmax=False, pattern=False, out=None, accumulate=False, context=None,
               precision="exact"):
    """O = N(alpha·(S ⊙ A·Bᵀ))·V without storing the sampled matrix: N is a row softmax of the
    sampled scores when softmax=True (graph attention: softmax(QKᵀ/√d at the edges)·V), else
    nothing. A m x K, B n x K, V n x p (numpy); returns O, m x p (`out` when given; accumulate
    adds to it). A row of S with no entries gives zeros. precision (the scores') as in sddmm."""
    prec = _tensor_precision(precision)
    ctx, S, a, b, t, kind, hold = _operands(S, A, B, context, "sddmm_spmm")
    if kind:
        v, Vd = _device_in(V, t, kind, "sddmm_spmm: V", 2)
        out, od = _device_output(out, kind, (S.shape[0], Vd.shape[1]), t, accumulate, False, "sddmm_spmm", Vd.obj)
        _run_on_device(ctx, kind, lambda: _core.sddmm_spmm(ctx._ctx, _device.dense_arg(od, t, ROW_MAJOR, COL_MAJOR),
                                                           S._h, a, b, v, float(alpha), bool(softmax), bool(pattern),
                                                           bool(accumulate), prec))
        return out
    V = _operand(V, t)
    if V.ndim != 2:
        raise ValueError("sddmm_spmm: A, B and V must be 2-D")
    shape = (S.shape[0], V.shape[1])
    if out is None:
        if accumulate:
            raise ValueError("sddmm_spmm: accumulate adds to out: pass out=")
        out = np.empty(shape, dtype=numpy_dtype(t))
    elif not isinstance(out, np.ndarray) or out.shape != shape or out.dtype != numpy_dtype(t) or not (
            out.flags.c_contiguous or out.flags.f_contiguous):
        raise ValueError(f"sddmm_spmm: out must be a contiguous numpy array of shape {shape}, {numpy_dtype(t)}")
    _core.sddmm_spmm(ctx._ctx, _dense(out, "out", True), S._h, a, b, _dense(V, "V"), float(alpha), bool(softmax),
                     bool(pattern), bool(accumulate), prec)
    return out


Factorization = namedtuple("Factorization", "W H mean history")
Factorization.__doc__ = """Result of factorize: ratings ≈ mean + W @ H.T. history is a list of
(iteration, train_rmse, test_rmse, seconds) after each sweep."""


def factorize(R, rank=32, *, test=None, lam=0.1, iterations=10, cg_steps=3, seed=42, center=True, H0=None,
              dtype=np.float32, callback=None, context=None):
    """Matrix factorization by ALS-WR (weighted-λ regularization), each least-squares system solved
    by conjugate gradient whose every product is one fused SDDMM→SpMM (sr_factorize). R: users x
    items ratings (scipy.sparse or Matrix; an entry per known rating). test: held-out ratings of
    R's shape, scored after every sweep. H0: the starting item factors (items x rank), else a
    seeded draw. callback(step) is called after each sweep with (iteration, train_rmse,
    test_rmse, seconds); a true result stops early. Returns Factorization(W, H, mean, history)."""
    ctx = _ctx_for(R, context)
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise ValueError("factorize: dtype must be float32 or float64")
    Rm = as_matrix(R, ctx, dtype)
    Tm = None if test is None else as_matrix(test, ctx, dtype, Rm.location)
    users, items = Rm.shape
    W = np.zeros((users, rank), dtype=dtype)
    H = np.zeros((items, rank), dtype=dtype) if H0 is None else np.array(H0, dtype=dtype, order="C")
    if H.shape != (items, rank):
        raise ValueError(f"factorize: H0 must be {items} x {rank}, not {H.shape}")
    mean, history = _core.factorize(ctx._ctx, Rm._h, None if Tm is None else Tm._h, _dense(W, "W", True),
                                    _dense(H, "H", True), int(rank), float(lam), int(iterations), int(cg_steps),
                                    int(seed), bool(center), H0 is not None, callback)
    return Factorization(W, H, mean, history)
