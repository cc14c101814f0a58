"""Matrix factorization benchmark: sr.factorize (ALS-WR, CG on the fused SDDMM→SpMM) on MovieLens
small (real, 610 x 9,724, 100,836 ratings) against an exact numpy ALS-WR with the same model and
start, and on a generated set of MovieLens-25M's shape (162,541 users x 59,047 movies, 25M
ratings, power-law activity and popularity, a planted rank-10 model plus noise, half-star
ratings), on the CPU and on the GPU. Held-out RMSE after each sweep and time; fixed seeds.

usage: python3 bench/bench_factorize.py [--data ../shared/data] [--json OUT.json] [--no-gpu] [--no-large]"""
import argparse
import csv
import gzip
import json
import os
import sys
import time

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../python/tests"))
import sparsering as sr  # noqa: E402


def movielens(data):
    with gzip.open(os.path.join(data, "ratings/ml-latest-small/ratings.csv.gz"), "rt") as f:
        rec = [(int(r["userId"]), int(r["movieId"]), float(r["rating"])) for r in csv.DictReader(f)]
    u, i, v = map(np.array, zip(*rec))
    _, u = np.unique(u, return_inverse=True)
    _, i = np.unique(i, return_inverse=True)
    return sp.csr_matrix((v, (u, i)))


def ml25m_shaped(seed=5, users=162_541, items=59_047, ratings=25_000_095, rank=10):
    rng = np.random.default_rng(seed)
    activity = rng.pareto(1.2, users) + 1
    drawn = int(ratings * 1.45)  # repeated (user, movie) draws merge: draw more, keep `ratings`
    deg = np.minimum(np.maximum((activity / activity.sum() * drawn).astype(np.int64), 1), items // 4)
    popularity = 1.0 / (np.arange(items) + 20.0) ** 0.9
    popularity = rng.permutation(popularity / popularity.sum())
    rows = np.repeat(np.arange(users), deg)
    cols = rng.choice(items, size=rows.size, p=popularity)
    W = rng.standard_normal((users, rank)) * 0.4
    H = rng.standard_normal((items, rank)) * 0.4
    r = 3.5 + np.einsum("ij,ij->i", W[rows], H[cols]) + rng.standard_normal(rows.size) * 0.5
    r = np.clip(np.round(r * 2) / 2, 0.5, 5.0)
    pair = rows * items + cols
    _, first = np.unique(pair, return_index=True)  # one rating a (user, movie)
    keep = np.sort(rng.choice(first, size=min(ratings, first.size), replace=False))
    return sp.csr_matrix((r[keep], (rows[keep], cols[keep])), shape=(users, items))


def split(R, rng, fraction=0.1):
    c = R.tocoo()
    test = rng.random(c.nnz) < fraction
    mk = lambda m: sp.csr_matrix((c.data[m], (c.row[m], c.col[m])), shape=R.shape)  # noqa: E731
    return mk(~test), mk(test)


def numpy_als(R, H0, rank, lam, sweeps, test):
    from test_sddmm import als_reference, rmse
    t0 = time.perf_counter()
    W, H, mu = als_reference(R, H0, rank, lam, sweeps)
    return rmse(test, W, H, mu), time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "../../shared/data"))
    ap.add_argument("--json")
    ap.add_argument("--no-gpu", action="store_true")
    ap.add_argument("--no-large", action="store_true")
    args = ap.parse_args()
    contexts = [("cpu", sr.Context("cpu"))]
    if not args.no_gpu:
        try:
            contexts.append(("cuda", sr.Context("cuda")))
        except sr.NoDeviceError as e:
            print("no GPU:", e)
    rows = []
    rng = np.random.default_rng(11)
    sets = []
    if os.path.exists(os.path.join(args.data, "ratings/ml-latest-small/ratings.csv.gz")):
        sets.append(("MovieLens small", movielens(args.data), 16, 10))
    if not args.no_large:
        t0 = time.perf_counter()
        sets.append(("MovieLens-25M-shaped (generated)", ml25m_shaped(), 32, 10))
        print(f"generated the 25M-shaped set in {time.perf_counter() - t0:.1f} s", flush=True)
    for name, R, rank, sweeps in sets:
        train, test = split(R, rng)
        H0 = np.random.default_rng(3).uniform(-0.5, 0.5, (R.shape[1], rank)) / np.sqrt(rank)
        print(f"\n{name}: {R.shape[0]} x {R.shape[1]}, {train.nnz} training / {test.nnz} held-out ratings, "
              f"rank {rank}, lambda 0.1", flush=True)
        if R.nnz < 1_000_000:
            ref, t_ref = numpy_als(train, H0, rank, 0.1, sweeps, test)
            print(f"  numpy exact ALS-WR ({sweeps} sweeps): held-out RMSE {ref:.4f}, {t_ref:.2f} s", flush=True)
            rows.append(dict(set=name, method="numpy exact ALS", test_rmse=ref, seconds=t_ref, sweeps=sweeps))
        for backend, ctx in contexts:
            f = sr.factorize(train, rank, test=test, lam=0.1, iterations=sweeps, H0=H0, context=ctx)
            print(f"  sparsering {backend}: " + ", ".join(f"{s[2]:.4f}" for s in f.history) +
                  f"  (held-out RMSE per sweep); {f.history[-1][3]:.2f} s in all, "
                  f"{f.history[-1][3] / sweeps * 1e3:.0f} ms a sweep", flush=True)
            rows.append(dict(set=name, method=f"sparsering {backend}", history=f.history, sweeps=sweeps,
                             test_rmse=f.history[-1][2], seconds=f.history[-1][3]))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
