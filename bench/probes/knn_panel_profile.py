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
    ap.add_argument("--warm", action="store_true", help="one call before the ones timed")
    ap.add_argument("--settings", default="", help="calls under these settings, one after another: "
                    "'NAME=V,NAME=V;NAME=V' (a call a group)")
    ap.add_argument("--rounds", type=int, default=1, help="the groups' calls this many times over, "
                    "interleaved (A/B comparisons: each group's median printed last)")
    args = ap.parse_args()
    import cupy as cp
    sr, ctx, _, rows, Xd, Qd = probe_inputs(args)
    for metric in args.metric.split(","):  # the probe's --metric may name several
        call = lambda: sr.kneighbors(Xd, Qd, args.k, metric, dtype=np.float32, output_type="cupy",  # noqa: E731
                                     context=ctx)
        if args.warm:
            call()
        groups = args.settings.split(";")
        times = {g: [] for g in groups}
        for _ in range(args.rounds):
            for group in groups:
                pairs = [kv.split("=", 1) for kv in group.split(",") if kv]
                for name, value in pairs:
                    os.environ[name] = value
                cp.cuda.Device().synchronize()
                t = time.perf_counter()
                call()
                cp.cuda.Device().synchronize()
                times[group].append(time.perf_counter() - t)
                print(f"{args.set} {metric} [{group}]: {len(rows)} queries {1e3 * times[group][-1]:.1f} ms; "
                      f"{sr.last_method()}", flush=True)
                for name, _ in pairs:
                    os.environ.pop(name)
        if args.rounds > 1:
            print(f"{args.set} {metric} medians: " + "; ".join(
                f"[{g}] {1e3 * float(np.median(t)):.1f} ms" for g, t in times.items()), flush=True)


if __name__ == "__main__":
    main()
