"""Where an SDDMM call on a real matrix spends its time: the call as bench_sddmm.py times it (wall
clock, a device synchronize after each call) against the device time of the kernels it launched
(torch.profiler, which sees every kernel in the process) and against the bare binding, for torch
and cupy operands, on the PyPI summaries bag of words (K = 32 and 128).

    PYTHONPATH=BUILD/python python3 bench/probes/sddmm_call_probe.py DATA_DIR [--profile]

--profile: where the package's host time goes (cProfile of 2,000 calls on torch operands at K = 32)."""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import sparsering as sr  # noqa: E402
from knn_data import bag_of_words  # noqa: E402
from sparsering import _core, _device  # noqa: E402
from sparsering._matrix import COL_MAJOR, FLOAT32, ROW_MAJOR  # noqa: E402
from timing import median_time  # noqa: E402


def kernel_times(f, torch, calls=20):
    """The device time of each kernel f launched, µs a call, by kernel name."""
    from torch.profiler import ProfilerActivity, profile
    f()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            f()
        torch.cuda.synchronize()
    out = {}
    for ev in prof.key_averages():
        if ev.device_time_total > 0:
            out[ev.key[:60]] = ev.device_time_total / calls
    return out


def main():
    import cupy as cp
    import torch
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    data = args[0] if args else "../shared/data"
    ctx = sr.Context("cuda")
    S = bag_of_words(data).tocsr().astype(np.float32)
    S.sort_indices()
    Sd = sr.Matrix(S, context=ctx, location="device")
    sync = cp.cuda.Device().synchronize
    m, n = S.shape
    for K in (32, 128):
        for name, make in (("torch", lambda shape: torch.rand(*shape, device="cuda") - 0.5),
                           ("cupy", lambda shape: cp.random.rand(*shape, dtype=cp.float32) - 0.5)):
            A, B, out = make((m, K)), make((n, K)), make((S.nnz,))
            da, db, do = _device.device_array(A), _device.device_array(B), _device.device_array(out)
            arg = lambda d: _device.dense_arg(d, FLOAT32, ROW_MAJOR, COL_MAJOR)  # noqa: E731
            call = lambda: sr.sddmm_values(Sd, A, B, pattern=True, out=out, context=ctx)  # noqa: E731
            bare = lambda: _core.sddmm(ctx._ctx, Sd._h, arg(da), arg(db), 0, 1.0, 0.0, True, arg(do))  # noqa: E731
            whole = median_time(call, reps=30, sync=sync) * 1e6
            bare_t = median_time(bare, reps=30, sync=sync) * 1e6
            t0 = time.perf_counter()
            for _ in range(30):
                call()
            sync()
            pipelined = (time.perf_counter() - t0) / 30 * 1e6
            kernels = kernel_times(call, torch)
            print(f"K={K:4d} {name:6s} whole call {whole:7.1f} µs | bare binding {bare_t:7.1f} µs | 30 calls back to "
                  f"back {pipelined:7.1f} µs a call | kernels (µs a call): "
                  + ", ".join(f"{k} {v:.1f}" for k, v in kernels.items()), flush=True)
    if "--profile" in sys.argv:
        import cProfile
        import pstats
        A, B, out = (torch.rand(m, 32, device="cuda"), torch.rand(n, 32, device="cuda"),
                     torch.empty(S.nnz, device="cuda"))
        with cProfile.Profile() as prof:
            for _ in range(2000):
                sr.sddmm_values(Sd, A, B, pattern=True, out=out, context=ctx)
        pstats.Stats(prof).sort_stats("tottime").print_stats(16)
    return 0


if __name__ == "__main__":
    sys.exit(main())
