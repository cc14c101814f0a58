"""One k-NN call of the tensor-core panel on a generated paper-scale set, for a profiler to time
kernel by kernel (the set and the matrices are made before the call; one warm-up call first when
asked). Under Nsight Compute:

    ncu --clock-control none --metrics gpu__time_duration.sum --csv \\
        python3 bench/probes/knn_panel_profile.py BUILD --set nytimes-like --queries 2000 \\
        [--settings 'SPARSERING_KNN_PANEL_COLUMNS=2048;SPARSERING_KNN_PANEL=0']
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from knn_panel_widths import probe_inputs, probe_parser  # noqa: E402


def main():
    ap = probe_parser()
    ap.add_argument("--warm", action="store_true", help="one call before the one timed")
    ap.add_argument("--settings", default="", help="calls under these settings, one after another: "
                    "'NAME=V,NAME=V;NAME=V' (a call a group)")
    args = ap.parse_args()
    import cupy as cp
    sr, ctx, _, rows, Xd, Qd = probe_inputs(args)
    call = lambda: sr.kneighbors(Xd, Qd, args.k, args.metric, dtype=np.float32, output_type="cupy", context=ctx)
    if args.warm:
        call()
    for group in args.settings.split(";"):
        pairs = [kv.split("=", 1) for kv in group.split(",") if kv]
        for name, value in pairs:
            os.environ[name] = value
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        call()
        cp.cuda.Device().synchronize()
        print(f"{args.set} {args.metric} [{group}]: {len(rows)} queries {1e3 * (time.perf_counter() - t):.1f} ms; "
              f"{sr.last_method()}", flush=True)
        for name, _ in pairs:
            os.environ.pop(name)


if __name__ == "__main__":
    main()
