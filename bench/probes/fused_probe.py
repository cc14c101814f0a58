"""Where the fused pattern's time goes on the GPU, by class of input: XTVXY against X·y alone (no
sums into w), against the same rows with uniformly random columns (no hot columns), and under each
vector size (SPARSERING_FUSED_VECTOR), with cuSPARSE's X·y for scale. --tiles: instead, the row
tiles against the vector kernel (TILE_SETTINGS) in float32 and float64.
usage: python3 bench/probes/fused_probe.py BUILD_DIR [--data ../shared/data] [--tiles] [--only SETS]"""
import argparse
import os
import sys

import cupy as cp
import cupyx.scipy.sparse as cps
import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import sr_package  # noqa: E402
from knn_data import bag_of_words, ngrams  # noqa: E402
from timing import median_time  # noqa: E402


def uniform(rng, m, n, per_row):
    X = sp.csr_matrix((rng.standard_normal(m * per_row).astype(np.float32), rng.integers(0, n, m * per_row),
                       np.arange(0, m * per_row + 1, per_row)), shape=(m, n))
    return X.tocoo().tocsr()  # sums repeated columns


# SPARSERING_FUSED_TILES: the automatic choice, row tiles of 4 and 8 entries a thread, the vector kernel
TILE_SETTINGS = ["", "4", "8", "0"]


def tiles(X, m, n):
    for dt in (np.float32, np.float64):
        y, v = (cp.asarray(rng.standard_normal(k).astype(dt)) for k in (n, m))
        for setting in TILE_SETTINGS:
            os.environ["SPARSERING_FUSED_TILES"] = setting
            Xd = sr.Matrix(X.astype(dt), context=ctx, location="device")
            line = []
            for form, nw in (("xtvxy", n), ("xy", m), ("xty", n)):
                out = cp.empty(nw, dtype=dt)
                yy = v if form == "xty" else y
                call = lambda: sr.fused_pattern(Xd, yy, v=v, form=form, out=out, context=ctx)  # noqa: E731
                line.append(f"{form.upper()} {median_time(call, reps=20, sync=sync) * 1e3:7.3f} ms")
            kind = "auto" if not setting else "vector" if setting == "0" else f"row {setting}"
            print(f"  {np.dtype(dt).name:8} {kind:8} " + "  ".join(line), flush=True)
            del Xd
    os.environ["SPARSERING_FUSED_TILES"] = ""


ap = argparse.ArgumentParser()
ap.add_argument("build")
ap.add_argument("--data", default="../shared/data")
ap.add_argument("--tiles", action="store_true")
ap.add_argument("--only", default="", help="comma-separated set names (BoW, 3-grams, tall-skinny, ultra-wide)")
args = ap.parse_args()
sr = sr_package.load(args.build)
ctx = sr.Context("cuda")
sync = cp.cuda.Device().synchronize
rng = np.random.default_rng(0)
sets = [("BoW", lambda: bag_of_words(args.data)), ("3-grams", lambda: ngrams(args.data)),
        ("tall-skinny", lambda: uniform(rng, 10_000_000, 100, 10)),
        ("ultra-wide", lambda: uniform(rng, 10_000, 10_000_000, 1000))]
for name, make in sets:
    if args.only and name not in args.only.split(","):
        continue
    X = make()
    X = X.astype(np.float32).tocsr()
    m, n = X.shape
    top = np.sort(np.bincount(X.indices, minlength=n))[::-1]
    print(f"{name}: {m}x{n} nnz {X.nnz}; hottest column {top[0]} entries; top 1K / 28K / 56K columns hold "
          f"{top[:1000].sum() / X.nnz:.0%} / {top[:28000].sum() / X.nnz:.0%} / {top[:56000].sum() / X.nnz:.0%}")
    y, v = (cp.asarray(rng.standard_normal(k).astype(np.float32)) for k in (n, m))
    outs = {"xtvxy": cp.empty(n, dtype=cp.float32), "xy": cp.empty(m, dtype=cp.float32)}
    if args.tiles:
        tiles(X, m, n)
        continue
    variants = [("as is", X, vs) for vs in ("", "2", "4", "8", "16")]
    variants.append(("random columns", uniform(rng, m, n, max(1, X.nnz // m)), ""))
    for label, M, vs in variants:
        os.environ["SPARSERING_FUSED_VECTOR"] = vs
        Xd = sr.Matrix(M, context=ctx, location="device")
        for form in ("xtvxy", "xy"):
            call = lambda: sr.fused_pattern(Xd, y, v=v, form=form, out=outs[form], context=ctx)  # noqa: E731
            t = median_time(call, reps=20, sync=sync)
            print(f"  {label:15} VS {vs or 'auto':4} {form.upper():6} {t * 1e3:8.3f} ms", flush=True)
        del Xd
    os.environ["SPARSERING_FUSED_VECTOR"] = ""
    Xc = cps.csr_matrix(X)
    print(f"  cuSPARSE X@y                  {median_time(lambda: Xc @ y, reps=20, sync=sync) * 1e3:8.3f} ms")
    del Xc
