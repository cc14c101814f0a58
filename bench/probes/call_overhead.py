"""Where a small GPU call through the package spends its time: the whole call against its parts
(reading a device array's pointer, the two stream synchronizations, the bare binding call), for
cupy and torch operands, on an SDDMM and an SpMV small enough that the kernel is a few µs.

    PYTHONPATH=BUILD/python python3 bench/probes/call_overhead.py [--profile]"""
import sys
import time

import numpy as np
import scipy.sparse as sp

import sparsering as sr
from sparsering import _core, _device
from sparsering._matrix import COL_MAJOR, FLOAT32, ROW_MAJOR


def per_call_us(f, reps=2000):
    for _ in range(50):
        f()
    t0 = time.perf_counter()
    for _ in range(reps):
        f()
    return (time.perf_counter() - t0) / reps * 1e6


def waited(f):
    """per_call_us of f with the caller's stream waited for even when it is the default stream
    (as the package did before 2026-11-27)."""
    real = _device.caller_stream
    _device.caller_stream = lambda kind: 1
    try:
        return per_call_us(f)
    finally:
        _device.caller_stream = real


def main():
    import cupy as cp
    import torch
    ctx = sr.Context("cuda")
    rng = np.random.default_rng(0)
    S = sp.random(2000, 2000, density=0.002, format="csr", dtype=np.float32, random_state=rng)
    Sd = sr.Matrix(S, context=ctx, location="device")
    rows = []
    for name, make in (("cupy", lambda a: cp.asarray(a)), ("torch", lambda a: torch.as_tensor(a, device="cuda"))):
        A, B = make(rng.random((2000, 32), dtype=np.float32)), make(rng.random((2000, 32), dtype=np.float32))
        out = make(np.empty(S.nnz, np.float32))
        x, y = make(rng.random(2000, dtype=np.float32)), make(np.empty(2000, np.float32))
        da, db, do = _device.device_array(A), _device.device_array(B), _device.device_array(out)
        arg = lambda d: _device.dense_arg(d, FLOAT32, ROW_MAJOR, COL_MAJOR)  # noqa: E731
        bare = lambda: _core.sddmm(ctx._ctx, Sd._h, arg(da), arg(db), 0, 1.0, 0.0, True, arg(do))  # noqa: E731
        rows += [
            (name, "sr.sddmm_values (whole call)", per_call_us(lambda: sr.sddmm_values(Sd, A, B, pattern=True, out=out,
                                                                                       context=ctx))),
            (name, "sr.spmv (whole call)", per_call_us(lambda: sr.spmv(Sd, x, out=y, context=ctx))),
            (name, "sr.sddmm_values, caller always waited", waited(lambda: sr.sddmm_values(Sd, A, B, pattern=True,
                                                                                        out=out, context=ctx))),
            (name, "bare binding sddmm + ctx sync", per_call_us(lambda: (bare(), ctx.synchronize()))),
            (name, "device_array(A)", per_call_us(lambda: _device.device_array(A))),
            (name, "kind_of(A)", per_call_us(lambda: _device.kind_of(A))),
            (name, "synchronize_caller", per_call_us(lambda: _device.synchronize_caller(name))),
            (name, "ctx.synchronize (idle)", per_call_us(ctx.synchronize)),
        ]
    print(f"{'operands':8s} {'part':34s} {'µs a call':>10s}")
    for name, part, us in rows:
        print(f"{name:8s} {part:34s} {us:10.1f}")
    if "--profile" in sys.argv:  # where the torch SpMV's and SDDMM's package time goes, by function
        import cProfile
        import pstats
        x, y = torch.rand(2000, device="cuda"), torch.empty(2000, device="cuda")
        A, B = torch.rand(2000, 32, device="cuda"), torch.rand(2000, 32, device="cuda")
        out = torch.empty(S.nnz, device="cuda")
        for call in (lambda: sr.spmv(Sd, x, out=y, context=ctx),
                     lambda: sr.sddmm_values(Sd, A, B, pattern=True, out=out, context=ctx)):
            with cProfile.Profile() as prof:
                for _ in range(2000):
                    call()
            pstats.Stats(prof).sort_stats("tottime").print_stats(16)
    return 0


if __name__ == "__main__":
    sys.exit(main())
