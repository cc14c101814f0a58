"""The fused pattern w = α·Xᵀ(v ⊙ X·y) + β·z and the ridge / logistic solvers built on it."""
from collections import namedtuple

import numpy as np

from . import _core, _device
from ._matrix import COL_MAJOR, ROW_MAJOR, as_matrix, numpy_dtype, sr_type_of
from ._ops import _ctx_for, _dense, _device_in, _device_kind, _device_output, _dtype_of, _operand, _run_on_device

_FORMS = {"xtvxy": 0, "xty": 1, "xy": 2}


def fused_pattern(X, y, *, v=None, z=None, alpha=1.0, beta=0.0, form="xtvxy", out=None, context=None):
    """w = alpha·Xᵀ·(v ⊙ (X·y)) + beta·z with X read once (form "xtvxy"); "xty": alpha·Xᵀ·(v ⊙ y)
    + beta·z; "xy": alpha·v ⊙ (X·y) + beta·z. X: scipy.sparse / Matrix (float or bool) or a 2-D
    numpy array; y, v, z: 1-D numpy (v None = ones, z None = no β term); the vectors' dtype (float32
    or float64) is the computation's. Returns w (`out` when given; out may be z)."""
    if form not in _FORMS:
        raise ValueError(f"fused_pattern: form must be one of {', '.join(_FORMS)}, not {form!r}")
    t = sr_type_of(np.float32 if _dtype_of(y) == np.float32 else np.float64)
    dtype = numpy_dtype(t)
    kind = _device_kind(X, y, v, z, out)
    if kind:
        return _fused_on_device(kind, X, y, v, z, alpha, beta, form, out, t, context)
    y = np.asarray(y)
    dense = isinstance(X, np.ndarray)
    ctx = _ctx_for(X, context)
    if dense:
        Xh, Xd = None, _dense(_operand(X, t), "X")
        m, n = X.shape
    else:
        Xm = as_matrix(X, ctx, None if getattr(X, "dtype", None) == np.bool_ else dtype)
        Xh, Xd = Xm._h, None
        m, n = Xm.shape
    vec = lambda a: None if a is None else _dense(np.ascontiguousarray(a, dtype=dtype), "vector")  # noqa: E731
    nw = m if form == "xy" else n
    if out is None:
        out = np.empty(nw, dtype=dtype)
    elif not isinstance(out, np.ndarray) or out.shape != (nw,) or out.dtype != dtype or not out.flags.c_contiguous:
        raise ValueError(f"fused_pattern: out must be a contiguous numpy vector of {nw} {dtype}")
    zt = None if z is None else (_dense(z, "z") if z is out else vec(z))
    _core.fused_pattern(ctx._ctx, _FORMS[form], _dense(out, "out", True), float(alpha), Xh, Xd, vec(v),
                        vec(y), float(beta), zt)
    return out


def _fused_on_device(kind, X, y, v, z, alpha, beta, form, out, t, context):
    """fused_pattern with GPU vectors (cupy, torch): a dense X read on the device in place, a sparse X
    moved to (or already on) the device."""
    ctx = _ctx_for(X, context)
    dtype = numpy_dtype(t)
    if _device.device_array(X) is not None or isinstance(X, np.ndarray):  # dense X, read in place
        (xt, Xd), Xh = _device_in(X, t, kind, "fused_pattern: X", 2), None
        m, n = Xd.shape
    else:
        Xm = as_matrix(X, ctx, None if getattr(X, "dtype", None) == np.bool_ else dtype, "device")
        Xh, xt = Xm._h, None
        m, n = Xm.shape
    nw = m if form == "xy" else n
    out, od = _device_output(out, kind, (nw,), t, False, False, "fused_pattern", None)
    vec = lambda a: (None, None) if a is None else _device_in(a, t, kind, "fused_pattern: a vector", 1)  # noqa: E731
    (yt, yd), (vt, vd) = vec(y), vec(v)
    zt, zd = (_device.dense_arg(od, t, ROW_MAJOR, COL_MAJOR), od) if z is out and z is not None else vec(z)
    _run_on_device(ctx, kind, lambda: _core.fused_pattern(ctx._ctx, _FORMS[form],
                                                          _device.dense_arg(od, t, ROW_MAJOR, COL_MAJOR), float(alpha),
                                                          Xh, xt, vt, yt, float(beta), zt))
    return out


SolverResult = namedtuple("SolverResult", "coef intercept history")
SolverResult.__doc__ = """coef: the coefficients (float64); intercept: b (0.0 without fit_intercept);
history: (iteration, inner CG steps, objective, gradient norm, seconds, intercept) after each
iteration."""


_PRECONDITIONERS = {"jacobi": 0, None: 1, "none": 1}


def _solve(kind, X, y, param, tol, max_iter, fit_intercept, callback, context, preconditioner="jacobi"):
    if preconditioner not in _PRECONDITIONERS:
        raise ValueError(f"preconditioner must be 'jacobi' or None, not {preconditioner!r}")
    ctx = _ctx_for(X, context)
    Xm = as_matrix(X, ctx, None if getattr(X, "dtype", None) in (np.bool_, np.float32) else np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64).ravel()
    w = np.zeros(Xm.shape[1])
    b, history = _core.solve(ctx._ctx, kind, Xm._h, _dense(y, "y"), _dense(w, "w", True), float(param), float(tol),
                             int(max_iter or 0), bool(fit_intercept), callback, _PRECONDITIONERS[preconditioner])
    return SolverResult(w, b, history)


def ridge(X, y, lam=1.0, *, fit_intercept=False, tol=1e-10, max_iter=None, callback=None, context=None,
          preconditioner="jacobi"):
    """argmin ‖X·w + b − y‖² + lam·‖w‖² (scikit-learn Ridge(alpha=lam, fit_intercept=...)) by
    conjugate gradient on the normal equations; each product (XᵀX + lam·I)·p reads X once
    (fused_pattern); with fit_intercept X and y are centered implicitly (X stays sparse). Stops
    when the residual falls below tol times its start. preconditioner="jacobi" (the default,
    on every backend) scales by the normal matrix's diagonal, None runs plain CG, step for
    step as scikit-learn's sparse_cg. Returns SolverResult(coef, intercept, history)."""
    return _solve(0, X, y, lam, tol, max_iter, fit_intercept, callback, context, preconditioner)


def logistic_regression(X, y, C=1.0, *, fit_intercept=False, tol=1e-10, max_iter=None, callback=None,
                        context=None, preconditioner="jacobi"):
    """argmin ½‖w‖² + C·Σ log(1 + exp(−y_i (x_i·w + b))) (scikit-learn LogisticRegression(C=C,
    fit_intercept=...), the intercept unpenalized; labels ±1 or 1/0) by trust-region Newton with CG
    inner steps (LIBLINEAR's TRON); each Hessian-vector product reads X once. Stops when
    ‖∇‖ <= tol·‖∇ at 0‖. preconditioner="jacobi" (the default, on every backend)
    preconditions the inner CG by 0.99·I + 0.01·diag(H) as LIBLINEAR does, None runs it plain.
    Returns SolverResult(coef, intercept, history)."""
    return _solve(1, X, y, C, tol, max_iter, fit_intercept, callback, context, preconditioner)
