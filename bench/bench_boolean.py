"""Boolean algebra benchmark, in one process: M·M and M + M·M against cuSPARSE on the same
pattern in float32 (cupy) on the GPU, and against SuiteSparse:GraphBLAS (python-graphblas) on the
CPU; transitive closure and same-generation CFPQ on debian-depends, and S -> a S b | a b on cfpq-data's
generated graphs (--only cfpq-data), against a scipy semi-naive fixpoint on one core. Prints a
table and writes JSON rows.

usage: python3 bench/bench_boolean.py [--data ../shared/data] [--json OUT.json] [--quick] [--no-gpu]
                                      [--no-scipy-cfpq] [--only NAME] [--reps N]
Graphs: debian-depends (real, 68K vertices, 282K edges) and R-MAT graphs (Graph500 a = 0.57,
b = c = 0.19, vertices permuted at random, seed 7) of scales 14, 16, 17 and edge factor 8
(0.12M to 1M edges; A·A of scale 17 has 180M entries), and a uniform random graph of 2^20 vertices and
10.5M edges (seed 7; A·A about 110M entries)."""
import argparse
import json
import os
import sys
import time

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(__file__))
import sparsering as sr  # noqa: E402
from timing import median_time  # noqa: E402
import plots  # noqa: E402
from cfpq_graphs import cfpq_data_generators  # noqa: E402
from generated_graphs import rmat, uniform  # noqa: E402


def graphs(data, quick, only=None):
    out = []
    wanted = lambda name: only is None or only in name  # noqa: E731
    path = os.path.join(data, "graphs/debian-depends.mtx.gz")
    if os.path.exists(path) and wanted("debian-depends"):
        out.append(("debian-depends", sr.read_mm(path, dtype=np.bool_, context=sr.Context("cpu")).to_scipy()))
    for scale, ef in ([(14, 8)] if quick else [(14, 8), (16, 8), (17, 8)]):
        if wanted(f"rmat-{scale}-{ef}"):
            A = rmat(scale, ef)
            out.append((f"rmat-{scale}-{ef} ({A.nnz / 1e6:.2f}M edges)", A))
    if not quick and wanted("uniform-20"):
        A = uniform(1 << 20, 10 << 20)
        out.append((f"uniform-20-10 ({A.nnz / 1e6:.2f}M edges)", A))
    return out


def gpu_rows(name, A, reps):
    import cupy as cp
    import cupyx.scipy.sparse as cps
    ctx = sr.Context("cuda")
    pool = cp.get_default_memory_pool()
    rows = []
    M = sr.Matrix(A, context=ctx, location="device")
    sync = ctx.synchronize
    ctx.synchronize()
    # sparsering: M·M and M + M·M, no values anywhere
    P = sr.mxm(M, M, "or_and")
    base = ctx.device_memory()[0]
    ctx.reset_peak_memory()
    t_mm = median_time(lambda: sr.mxm(M, M, "or_and"), reps=reps, sync=sync)
    peak_mm = ctx.device_memory()[1] - base + P.nnz * 4 + (A.shape[0] + 1) * 8  # + the output, freed in the loop
    ctx.reset_peak_memory()
    base = ctx.device_memory()[0]
    t_add = median_time(lambda: sr.ewise_add(M, P), reps=reps, sync=sync)
    S = sr.ewise_add(M, P)
    peak_add = ctx.device_memory()[1] - base
    # cuSPARSE in float32 on the same pattern
    Af = cps.csr_matrix(A.astype(np.float32))
    cp.cuda.Device().synchronize()
    pool.free_all_blocks()
    used0 = pool.used_bytes()
    Pf = Af @ Af
    cp.cuda.Device().synchronize()
    t_cmm = median_time(lambda: Af @ Af, reps=reps, sync=cp.cuda.Device().synchronize)
    peak_cmm = pool.total_bytes() - used0
    pool.free_all_blocks()
    used0 = pool.used_bytes()
    t_cadd = median_time(lambda: Af + Pf, reps=reps, sync=cp.cuda.Device().synchronize)
    peak_cadd = pool.total_bytes() - used0
    assert Pf.nnz == P.nnz, f"{name}: cuSPARSE M·M has {Pf.nnz} entries, sparsering {P.nnz}"
    for op, t, tc, mem, memc, nnz in (("M·M", t_mm, t_cmm, peak_mm, peak_cmm, P.nnz),
                                      ("M + M·M", t_add, t_cadd, peak_add, peak_cadd, S.nnz)):
        rows.append(dict(operation=op, input=name, backend="cuda", seconds=t, baseline="cuSPARSE float32 (cupy)",
                         baseline_seconds=tc, ratio=tc / t, peak_device_bytes=int(mem),
                         baseline_peak_device_bytes=int(memc), output_nnz=int(nnz)))
    del Pf, Af
    pool.free_all_blocks()
    return rows


def cpu_rows(name, A, reps, gb):
    ctx = sr.Context("cpu")
    M = sr.Matrix(A, context=ctx)
    P = sr.mxm(M, M, "or_and")
    t_mm = median_time(lambda: sr.mxm(M, M, "or_and"), reps=reps)
    t_add = median_time(lambda: sr.ewise_add(M, P), reps=reps)
    rows = []
    tg_mm = tg_add = float("nan")
    if gb is not None:
        G = gb.io.from_scipy_sparse(A.astype(np.bool_))
        GP = G.mxm(G, gb.semiring.lor_land).new()
        assert GP.nvals == P.nnz, f"{name}: GraphBLAS M·M has {GP.nvals} entries, sparsering {P.nnz}"
        tg_mm = median_time(lambda: G.mxm(G, gb.semiring.lor_land).new(), reps=reps)
        tg_add = median_time(lambda: G.ewise_add(GP, gb.binary.lor).new(), reps=reps)
    for op, t, tg in (("M·M", t_mm, tg_mm), ("M + M·M", t_add, tg_add)):
        rows.append(dict(operation=op, input=name, backend="cpu", seconds=t, baseline="SuiteSparse:GraphBLAS",
                         baseline_seconds=tg, ratio=tg / t))
    return rows


def scipy_closure(A):
    reach, delta, Ai = A.copy(), A.copy(), A.astype(np.int32)
    while delta.nnz:
        delta = (((delta.astype(np.int32) @ Ai) != 0).astype(np.int8) - reach.astype(np.int8)) > 0
        reach = (reach + delta) != 0
    return reach


def scipy_brackets(L, R):
    """S -> l S r | l r: S = L·R, then S |= L·S·R, semi-naive on the new pairs (same generation is
    L = Aᵀ, R = A)."""
    Li, Ri = L.tocsr().astype(np.int32), R.tocsr().astype(np.int32)
    S = (Li @ Ri) != 0
    delta = S
    while delta.nnz:
        new = ((Li @ (delta.astype(np.int32) @ Ri)) != 0).astype(np.int8) - S.astype(np.int8)
        delta = new > 0
        S = (S + delta) != 0
    return S


def timed_cfpq(grammar, graphs, reverse=False):
    """One warm-up, then one timed query (the queries run for tens of ms to seconds)."""
    sr.cfpq(grammar, graphs, reverse=reverse)
    t0 = time.perf_counter()
    R, st = sr.cfpq(grammar, graphs, reverse=reverse, return_stats=True)
    next(iter(graphs.values())).context.synchronize()
    return R, st, time.perf_counter() - t0


def query_rows(A, gpu, scipy_cfpq):
    rows = []
    t0 = time.perf_counter()
    ref = scipy_closure(A)
    t_scipy = time.perf_counter() - t0
    grammar = "S -> d_r S d | d_r d"
    t_sg = float("nan")
    if scipy_cfpq:
        t0 = time.perf_counter()
        sg = scipy_brackets(A.T, A)
        t_sg = time.perf_counter() - t0
    for backend in (["cpu", "cuda"] if gpu else ["cpu"]):
        ctx = sr.Context(backend)
        M = sr.Matrix(A, context=ctx)
        for method in ("semi-naive", "squaring"):
            sr.transitive_closure(M, method)  # warm-up
            ctx.synchronize()
            t0 = time.perf_counter()
            C, st = sr.transitive_closure(M, method, return_stats=True)
            ctx.synchronize()
            t = time.perf_counter() - t0
            assert C.nnz == ref.nnz
            rows.append(dict(operation=f"closure ({method})", input="debian-depends", backend=backend, seconds=t,
                             baseline="scipy semi-naive, 1 core", baseline_seconds=t_scipy, ratio=t_scipy / t,
                             rounds=st.rounds, output_nnz=int(C.nnz)))
        R, st, t = timed_cfpq(grammar, {"d": M}, reverse=True)
        if scipy_cfpq:
            assert R.nnz == sg.nnz, f"same generation: {R.nnz} pairs, scipy {sg.nnz}"
        rows.append(dict(operation="CFPQ same generation", input="debian-depends", backend=backend, seconds=t,
                         baseline="scipy semi-naive, 1 core", baseline_seconds=t_sg, ratio=t_sg / t,
                         rounds=st.rounds, output_nnz=int(R.nnz)))
    return rows


def cfpq_data_rows(gpu, scipy_cfpq, quick):
    """S -> a S b | a b on cfpq-data's generated graphs: two cycles of 100 and 99 vertices (the
    rounds worst case: about 2·n·m of them) and a scale-free graph of 10^4 vertices (10^5 on the
    backends alone, beyond scipy's reach), labels a and b drawn at random (seed 7)."""
    generators = cfpq_data_generators()
    if generators is None:
        print("no cfpq-data (pip install --no-deps cfpq-data==5.0.0): its CFPQ rows are skipped")
        return []
    two_cycles, scale_free = generators
    cases = [("two cycles 100+99", two_cycles(100, 99), True),
             ("scale-free 1e4", scale_free(10_000, labels="ab", seed=7), True)]
    if not quick:
        cases.append(("scale-free 1e5", scale_free(100_000, labels="ab", seed=7), False))
    grammar, rows = "S -> a S b | a b", []
    for name, G, with_scipy in cases:
        graphs = sr.labeled_graphs_from_networkx(G)
        name = f"{name} ({sum(g.nnz for g in graphs.values())} edges)"
        print(f"{name}: {G.number_of_nodes()} vertices", flush=True)
        t_ref, ref = float("nan"), None
        if scipy_cfpq and with_scipy:
            t0 = time.perf_counter()
            ref = scipy_brackets(graphs["a"], graphs["b"])
            t_ref = time.perf_counter() - t0
        for backend in (["cpu", "cuda"] if gpu else ["cpu"]):
            ctx = sr.Context(backend)
            R, st, t = timed_cfpq(grammar, {k: sr.Matrix(g, context=ctx) for k, g in graphs.items()})
            if ref is not None:
                assert R.nnz == ref.nnz, f"{name}: {R.nnz} pairs, scipy {ref.nnz}"
            rows.append(dict(operation="CFPQ a^n b^n", input=name, backend=backend, seconds=t,
                             baseline="scipy semi-naive, 1 core", baseline_seconds=t_ref, ratio=t_ref / t,
                             rounds=st.rounds, output_nnz=int(R.nnz)))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "../../shared/data"))
    ap.add_argument("--json")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-gpu", action="store_true")
    ap.add_argument("--no-scipy-cfpq", action="store_true")
    ap.add_argument("--only", help="the graphs whose name contains this text")
    ap.add_argument("--reps", type=int, help="timed runs a case (default 10, 3 with --quick)")
    args = ap.parse_args()
    try:
        import graphblas as gb
        gb.init("suitesparse", blocking=True)
        print(f"python-graphblas {gb.__version__}, threads {gb.ss.config['nthreads']}")
    except ImportError as e:
        print(f"no python-graphblas ({e}): the CPU rows have no baseline")
        gb = None
    gpu = not args.no_gpu
    if gpu:
        try:
            sr.Context("cuda")
        except sr.NoDeviceError as e:
            print(f"no GPU: {e}")
            gpu = False
    reps = args.reps or (3 if args.quick else 10)
    rows = []
    for name, A in graphs(args.data, args.quick, args.only):
        print(f"{name}: {A.shape[0]} vertices, {A.nnz} edges", flush=True)
        if gpu:
            rows += gpu_rows(name, A, reps)
        rows += cpu_rows(name, A, reps, gb)
        if name == "debian-depends":
            rows += query_rows(A, gpu, not args.no_scipy_cfpq)
    if args.only is None or args.only in "cfpq-data":
        rows += cfpq_data_rows(gpu, not args.no_scipy_cfpq, args.quick)
    print(f"\n{'operation':24} {'input':30} {'backend':7} {'ms':>9} {'baseline ms':>12} {'ratio':>7} "
          f"{'peak MB':>8} {'base MB':>8}")
    for r in rows:
        mem = r.get("peak_device_bytes")
        memb = r.get("baseline_peak_device_bytes")
        print(f"{r['operation']:24} {r['input']:30} {r['backend']:7} {1e3 * r['seconds']:9.3f} "
              f"{1e3 * r['baseline_seconds']:12.3f} {r['ratio']:7.2f} "
              f"{'' if mem is None else f'{mem / 1e6:8.1f}'} {'' if memb is None else f'{memb / 1e6:8.1f}'}  "
              f"{r['baseline']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
        plots.plot("boolean", rows, plots.beside(args.json))


if __name__ == "__main__":
    main()
