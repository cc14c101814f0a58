"""Median wall time of a call, for the benchmarks."""
import time

import numpy as np


def median_time(f, reps=10, warm=2, sync=None):
    """Median seconds of `reps` calls of f after `warm` warm-ups; sync() (e.g. a device
    synchronize) runs before the clock starts and after each call, when given."""
    for _ in range(warm):
        f()
    if sync:
        sync()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        if sync:
            sync()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))
