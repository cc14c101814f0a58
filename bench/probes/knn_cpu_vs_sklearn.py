"""The CPU backend against scikit-learn's brute force on the same cores: k-NN (k = 10) and radius
neighbours of 2,000 PyPI summaries (word counts) against the first 20,000, per metric; the best of
three runs each.

    PYTHONPATH=BUILD/python python3 bench/probes/knn_cpu_vs_sklearn.py DATA_DIR [--threads N]"""
import argparse
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # idle BLAS threads spin on the cores we time
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python", "tests"))


def best(f, runs=3):
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        f()
        out.append(time.perf_counter() - t0)
    return min(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    args = ap.parse_args()
    os.environ["SPARSERING_TEST_DATA"] = args.data
    import sparsering as sr
    from sklearn.neighbors import NearestNeighbors
    from test_neighbors import pypi_summaries
    X = pypi_summaries(20000).astype(np.float64)
    X.sort_indices()  # scikit-learn's manhattan is wrong on unsorted indices
    Q = X[:2000]
    ctx = sr.Context("cpu", threads=args.threads)
    print(f"2,000 x 20,000 PyPI summaries, {args.threads} threads; seconds, best of 3")
    for metric, radius in (("cosine", 0.3), ("euclidean", 1.5), ("manhattan", 3.0)):
        nn = NearestNeighbors(n_neighbors=10, metric=metric, algorithm="brute", n_jobs=args.threads).fit(X)
        ours = sr.NearestNeighbors(n_neighbors=10, radius=radius, metric=metric, context=ctx).fit(X)
        sk_knn, sr_knn = best(lambda: nn.kneighbors(Q)), best(lambda: ours.kneighbors(Q))
        sk_rad, sr_rad = best(lambda: nn.radius_neighbors(Q, radius=radius)), best(lambda: ours.radius_neighbors(Q))
        print(f"{metric:10} k-NN: scikit-learn {sk_knn:.3f}  ours {sr_knn:.3f}  {sk_knn / sr_knn:5.1f}x | "
              f"radius {radius}: scikit-learn {sk_rad:.3f}  ours {sr_rad:.3f}  {sk_rad / sr_rad:5.1f}x", flush=True)


if __name__ == "__main__":
    main()
