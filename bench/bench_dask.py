"""Scaling of sparsering.dask over worker processes (issue 59's targets): an all-vs-all k-NN graph
of a NY Times-shaped bag of words, SpGEMM A·A on an R-MAT graph, 50 PageRank steps on a larger
one and one ALS sweep (rank 32) on a MovieLens-25M-shaped set of ratings, each on a LocalCluster of W worker processes of T threads (W from --workers), or on a
LocalCUDACluster, one worker a GPU (--cuda), against the one-process call with W·T threads (or
on one GPU). The matrix is made on the client, cut into row blocks and persisted on the workers
before the clock starts (from_scipy); the time is the operation until its blocks (or its answer)
are done on the workers; the answer is checked against the one-process one.

    python3 bench/bench_dask.py BUILD [--workers 1,2,4] [--threads 4] [--only knn,spgemm,pagerank,als]
        [--knn-rows 300000] [--rmat-spgemm 20] [--rmat-pagerank 22] [--als-ratings 25000095] [--cuda]
        [--json out.json]
    python3 bench/bench_dask.py BUILD --mix 3 [--threads 4] [--knn-rows N] [--mix-parts 64]

--mix N (issue 73's GPU worker beside CPU workers): the k-NN graph on a cluster of one worker that
declares a GPU resource and N CPU workers, backend="per_worker". Each CPU worker holds index blocks
in proportion to its measured speed (query rows a second against the whole index: the GPU's from
the one-process call, a CPU worker's from a sample of the queries on --threads threads), the GPU
worker the rest; the mix is timed against the one-process GPU call and against the same blocks all
on the GPU worker.

Every size is printed as made (rows, entries). Defaults are the issue's sizes (NY Times-shaped at
the paper's density: 300,000 rows of about 233 distinct words of 102,000; R-MAT 20 and 22, edge
factor 16; 25M ratings of 162,541 users and 59,047 movies, fewer with --als-ratings, users and movies
scaled alike: repeated draws merge, so a scaled-down set holds fewer than asked, and the count
made is what is printed); smaller ones for a small host: --knn-rows 20000 --rmat-spgemm 14
--rmat-pagerank 18 --als-ratings 500000."""
import argparse
import contextlib
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import sr_package  # noqa: E402
from generated_graphs import rmat  # noqa: E402
from knn_data import synthetic  # noqa: E402


def knn_set(rows):
    """NY Times-shaped rows: the paper set's column count, density and log-normal lengths
    (knn_data.PAPER_SETS), `rows` of them."""
    return synthetic(rows, 102_000, int(round(69_679_427 * rows / 300_000)), 0, 2_000, degrees="lognormal")


def workloads(args):
    """(name, input, distributed call, one-process call, answers-equal check)."""
    import scipy.sparse as sp
    sr = args.sr
    out = []
    if "knn" in args.only:
        X = knn_set(args.knn_rows)
        out.append(("knn graph, cosine, k=5", X,
                    lambda R, be: R.kneighbors_graph(5, mode="distance", metric="cosine", backend=be),
                    lambda X, ctx: sr.kneighbors_graph(X, 5, mode="distance", metric="cosine", context=ctx),
                    lambda got, want: (got != want).nnz == 0))
    if "spgemm" in args.only:
        A = sp.csr_matrix(rmat(args.rmat_spgemm, 16), dtype=np.float32)
        out.append((f"SpGEMM A·A, R-MAT {args.rmat_spgemm}", A,
                    lambda R, be: R.mxm(R, backend=be),
                    lambda A, ctx: sr.mxm(A, A, context=ctx),
                    lambda got, want: got.nnz == want.nnz and abs(got - want).max() <= 1e-5 * abs(want).max()))
    if "pagerank" in args.only:
        G = sp.csr_matrix(rmat(args.rmat_pagerank, 16), dtype=np.float64)
        out.append((f"PageRank 50 steps, R-MAT {args.rmat_pagerank}", G,
                    lambda R, be: R.pagerank(tol=0.0, max_iter=50, backend=be),
                    lambda G, ctx: sr.pagerank(G, tol=0.0, max_iter=50, context=ctx),
                    lambda got, want: np.allclose(got[0], want[0] if isinstance(want, tuple) else want,
                                                  rtol=1e-10, atol=1e-14)))
    if "als" in args.only:
        from bench_factorize import ml25m_shaped  # (it imports sparsering: after sr_package.load)
        f = args.als_ratings / 25_000_095
        R = ml25m_shaped(users=max(1, round(162_541 * f)), items=max(4, round(59_047 * f)), ratings=args.als_ratings)
        # the same CG row by row; the mean, summed block by block, may move the last bits (test_dask)
        out.append(("ALS, one sweep, rank 32", R,
                    lambda R, be: R.factorize(rank=32, iterations=1, seed=5, backend=be)[:2],
                    lambda R, ctx: sr.factorize(R, rank=32, iterations=1, seed=5, context=ctx),
                    lambda got, want: np.allclose(got[0].compute(), want.W, rtol=2e-5, atol=2e-5)
                    and np.allclose(got[1].compute(), want.H, rtol=2e-5, atol=2e-5)))
    return out


def mix_cluster(cpu_workers):
    """One worker that declares a GPU resource (as `dask worker --resources GPU=1` does) and
    `cpu_workers` plain ones, a process each, one task at a time."""
    import distributed
    import sparsering.dask as srd
    spec = {"gpu": {"cls": distributed.Nanny, "options": {"nthreads": 1, "resources": {srd.GPU_RESOURCE: 1}}}}
    spec.update({f"cpu{i}": {"cls": distributed.Nanny, "options": {"nthreads": 1}} for i in range(cpu_workers)})
    return distributed.SpecCluster(workers=spec, scheduler={"cls": distributed.Scheduler,
                                                            "options": {"dashboard": False}})


def graph_difference(got, want):
    """(rows whose neighbours differ, the largest distance difference) of two k-NN graphs: CPU and
    GPU sums may part in the last bits, and then break ties apart."""
    got, want = got.tocsr(), want.tocsr()
    rows = sum(set(got.indices[got.indptr[i]:got.indptr[i + 1]]) != set(want.indices[want.indptr[i]:want.indptr[i + 1]])
               for i in range(want.shape[0]))
    return rows, float(abs(np.sort(got.data) - np.sort(want.data)).max()) if want.nnz and got.nnz == want.nnz else float("nan")


def run_mix(args):
    """--mix: the k-NN graph on one GPU worker and args.mix CPU workers (see the module's text)."""
    import distributed
    import sparsering.dask as srd
    sr, n_cpu = args.sr, args.mix
    X = knn_set(args.knn_rows)
    print(f"# knn graph, cosine, k=5: {X.shape[0]} x {X.shape[1]}, {X.nnz} entries; 1 GPU worker + {n_cpu} CPU "
          f"worker{'s' if n_cpu > 1 else ''} x {args.threads} threads", flush=True)
    one = lambda M, ctx: sr.kneighbors_graph(M, 5, mode="distance", metric="cosine", context=ctx)  # noqa: E731
    gpu = sr.Context(args.mix_gpu_backend)
    warm = one(X, gpu)
    t = time.perf_counter()
    want = one(X, gpu)
    t_gpu = time.perf_counter() - t
    del warm
    sample = max(1, X.shape[0] // args.mix_sample)
    cpu = sr.Context("cpu", threads=args.threads)
    sr.kneighbors(X, X[:min(sample, 100)], k=5, metric="cosine", context=cpu)  # warm-up
    t = time.perf_counter()
    sr.kneighbors(X, X[:sample], k=5, metric="cosine", context=cpu)
    t_cpu = time.perf_counter() - t
    gpu_rate, cpu_rate = X.shape[0] / t_gpu, sample / t_cpu
    share = cpu_rate / (gpu_rate + n_cpu * cpu_rate)
    parts = args.mix_parts
    cpu_blocks = int(parts * share)  # rounded down: a CPU worker past its share holds everyone up
    print(f"one process: GPU {t_gpu:.2f} s ({gpu_rate:.0f} query rows/s); a CPU worker {cpu_rate:.0f} query rows/s "
          f"({sample} queries in {t_cpu:.2f} s): each CPU worker's share {share:.2%}, {cpu_blocks} of {parts} blocks",
          flush=True)
    with mix_cluster(n_cpu) as cl, distributed.Client(cl) as client:
        client.wait_for_workers(n_cpu + 1, timeout=300)
        info = client.scheduler_info()["workers"]
        gpu_addr = next(a for a, w in info.items() if w.get("resources", {}).get(srd.GPU_RESOURCE))
        cpu_addrs = [a for a in info if a != gpu_addr]
        layouts = [("the GPU worker alone", [gpu_addr] * parts)]
        if cpu_blocks:
            layouts.append((f"the GPU worker and {n_cpu} CPU worker{'s' if n_cpu > 1 else ''}",
                            [gpu_addr] * (parts - n_cpu * cpu_blocks) + [a for a in cpu_addrs for _ in range(cpu_blocks)]))
        else:
            print("the CPU workers' share rounds to no block: the mix is the GPU worker alone (more --mix-parts "
                  "cut finer)", flush=True)
        backend = "per_worker" if args.mix_gpu_backend == "cuda" else "cpu"
        for name, where in layouts:
            R = srd.RowMatrix.from_scipy(client, X, parts=parts, workers=where)
            distributed.wait(R.blocks)
            G = R.kneighbors_graph(5, mode="distance", metric="cosine", backend=backend)  # warm-up: contexts
            distributed.wait(G.blocks)
            del G
            t = time.perf_counter()
            G = finish(R.kneighbors_graph(5, mode="distance", metric="cosine", backend=backend), distributed)
            t_w = time.perf_counter() - t
            rows, worst = graph_difference(G.to_scipy(), want)
            print(f"knn graph, cosine, k=5, {parts} blocks on {name}: {t_w:.2f} s, {t_gpu / t_w:.2f}x the one-process "
                  f"GPU call; rows whose neighbours differ from it: {rows}, largest distance difference {worst:.2g}",
                  flush=True)
            del R, G


def finish(result, distributed):
    """Waits until the operation's answer is done on the workers (blocks, dask arrays or values)."""
    if hasattr(result, "blocks"):
        distributed.wait(result.blocks)
    elif isinstance(result, tuple) and hasattr(result[0], "persist"):
        distributed.wait([r.persist() for r in result])
    return result


def as_scipy(result):
    if hasattr(result, "to_scipy"):
        return result.to_scipy()
    return result


def print_task_stream(records, wall):
    """Where the workers' time went in one timed call (dask's task stream): for each task kind its
    count and seconds computing, in transfers and in (de)serialisation, and each worker's busy share
    of the wall time: what keeps W workers from W times one."""
    import collections
    from dask.utils import key_split
    kinds = collections.defaultdict(collections.Counter)
    busy = collections.Counter()
    for rec in records:
        kind = key_split(rec["key"])
        kinds[kind]["tasks"] += 1
        for part in rec.get("startstops", ()):
            seconds = part["stop"] - part["start"]
            kinds[kind][part["action"]] += seconds
            busy[rec["worker"]] += seconds
    for kind, c in sorted(kinds.items(), key=lambda kv: -kv[1]["compute"]):
        extra = ", ".join(f"{a} {c[a]:.2f} s" for a in ("transfer", "deserialize", "disk-read", "disk-write") if c[a])
        print(f"    {kind}: {c['tasks']} tasks, compute {c['compute']:.2f} s{', ' + extra if extra else ''}")
    print("    busy share of the wall time a worker: " +
          ", ".join(f"{b / wall:.0%}" for _, b in sorted(busy.items())), flush=True)


def cluster(args, workers):
    import distributed
    if args.cuda:
        from dask_cuda import LocalCUDACluster
        return LocalCUDACluster(CUDA_VISIBLE_DEVICES=",".join(str(g) for g in range(workers)),
                                dashboard_address=None)
    return distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                    dashboard_address=None)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build")
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--threads", type=int, default=4, help="sparsering threads a worker (CPU)")
    ap.add_argument("--only", default="knn,spgemm,pagerank,als")
    ap.add_argument("--knn-rows", type=int, default=300_000)
    ap.add_argument("--rmat-spgemm", type=int, default=20)
    ap.add_argument("--rmat-pagerank", type=int, default=22)
    ap.add_argument("--als-ratings", type=int, default=25_000_095)
    ap.add_argument("--cuda", action="store_true", help="LocalCUDACluster, one worker a GPU")
    ap.add_argument("--json", default=None)
    ap.add_argument("--tasks", action="store_true", help="print where the workers' time went (dask's task stream)")
    ap.add_argument("--mix", type=int, default=0, help="the k-NN graph on one GPU worker and this many CPU workers")
    ap.add_argument("--mix-parts", type=int, default=64, help="--mix: row blocks, split by the workers' speeds")
    ap.add_argument("--mix-sample", type=int, default=50, help="--mix: a CPU worker times 1/this of the queries")
    ap.add_argument("--mix-gpu-backend", default="cuda", help=argparse.SUPPRESS)  # "cpu": the plumbing without a GPU
    args = ap.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)  # each worker process's sparsering threads
    args.sr = sr_package.load(args.build)
    if args.mix:
        return run_mix(args)
    import distributed
    sr = args.sr
    backend = "cuda" if args.cuda else "cpu"
    counts = [int(w) for w in args.workers.split(",")]
    rows = []
    for name, M, dist_call, one_call, same in workloads(args):
        print(f"# {name}: {M.shape[0]} x {M.shape[1]}, {M.nnz} entries", flush=True)
        ctx = sr.Context(backend, threads=max(counts) * args.threads) if not args.cuda else sr.Context("cuda")
        # warm-up, kept while the timed call runs: the workers keep every answer they make, so
        # the timed call too writes into memory the process has not used before (freed, the
        # warm-up's answer let the timed call reuse its pages: R-MAT 14's A·A, 20M entries, took
        # 0.29 s so against 0.60 s in fresh memory on a 2-core host, most of it the kernel's
        # page faults)
        warm = one_call(M, ctx)
        t = time.perf_counter()
        want = one_call(M, ctx)
        t_one = time.perf_counter() - t
        del warm
        print(f"{name}: one process ({'1 GPU' if args.cuda else f'{max(counts) * args.threads} threads'}) "
              f"{t_one:.2f} s", flush=True)
        base = None
        for w in counts:
            with cluster(args, w) as cl, distributed.Client(cl) as client:
                client.wait_for_workers(w, timeout=300)
                import sparsering.dask as srd
                R = srd.RowMatrix.from_scipy(client, M, parts=max(w, 1) * 2)
                distributed.wait(R.blocks)
                # the task stream's scheduler plugin only when asked: it is work inside the timed call
                with distributed.get_task_stream(client) if args.tasks else contextlib.nullcontext() as stream:
                    t = time.perf_counter()
                    got = finish(dist_call(R, backend), distributed)
                    t_w = time.perf_counter() - t
                ok = same(as_scipy(got), want)
                if args.tasks:
                    print_task_stream(stream.data, t_w)
            base = base or t_w
            print(f"{name}: {w} worker(s) x {1 if args.cuda else args.threads} threads {t_w:.2f} s, "
                  f"{base / t_w:.2f}x one worker, {t_one / t_w:.2f}x one process; same answer: {ok}", flush=True)
            rows.append(dict(operation=name, rows=M.shape[0], nnz=int(M.nnz), workers=w,
                             threads=None if args.cuda else args.threads, backend=backend, seconds=t_w,
                             one_process_seconds=t_one, speedup=base / t_w, same_answer=bool(ok)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
