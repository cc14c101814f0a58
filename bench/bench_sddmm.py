"""SDDMM benchmark, in one process on the GPU: sparsering's sr_sddmm_values against cuSPARSE's SDDMM,
called directly (bench/cusparse_sddmm.py: int32 CSR, its analysis, cusparseSDDMM_preprocess, run once
per S and K, as a loop over one pattern would) and through torch.sparse.sampled_addmm (which runs the
analysis and clones S's values on every call), and a gather-multiply-sum in torch, for K = 32, 128, 512
in float32;
then the fused SDDMM→SpMM (plain and row-softmax) against the unfused pair (sr_sddmm, then sr_spmm;
and torch's sampled_addmm → [softmax] → sparse mm).

usage: python3 bench/bench_sddmm.py BUILD_DIR [--data ../shared/data] [--json OUT.json] [--quick] [--only TEXT]
       [--ks 32,128,512] [--reps N] [--no-fused] [--no-variants]

Matrices: the PyPI summaries bag of words (248,814 x 115,570, 2.2M entries) and PyPI names
3-grams (886,323 x 38,227, 11.7M) from ../shared/data/text (bench/knn_data.py makes them), and
the anchors' power-law matrix (500K x 500K, avg 20: 10M entries, ../shared/PERFORMANCE.md) plus a
larger one (2M x 2M, avg 16: 33M). The floor (floor_bytes): the cuSDDMM paper's model, each needed row
of A and B read once per tile of the best L2-sized tiling, S read and the output written once, at
the device-to-device copy bandwidth measured in the same run; the JSON also has the strict floor
(every needed row once overall)."""
import argparse
import contextlib
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import cusparse_sddmm  # noqa: E402
import sr_package  # noqa: E402
from knn_data import bag_of_words, ngrams  # noqa: E402
from powerlaw import powerlaw  # noqa: E402
from timing import median_time  # noqa: E402


def copy_bandwidth(cp):
    x = cp.empty(1 << 28, dtype=cp.float32)  # 1 GiB
    y = cp.empty_like(x)
    t = median_time(lambda: y.__setitem__(slice(None), x), reps=10, sync=cp.cuda.Device().synchronize)
    return 2 * x.nbytes / t


def matrices(data, quick):
    out = []
    if os.path.exists(os.path.join(data, "text/pypi-summaries.tsv.xz")):
        out.append(("pypi-summaries (bag of words)", bag_of_words(data)))
        if not quick:
            out.append(("pypi-names (3-grams)", ngrams(data)))
    out.append(("power-law 500K avg 20", powerlaw(500_000, 500_000, 20, seed=2)))
    if not quick:
        out.append(("power-law 2M avg 16", powerlaw(2_000_000, 2_000_000, 16, seed=4)))
    out.append(("dense-ish uniform 16K 5%", uniform(16_384, 16_384, 0.05, seed=5)))
    if not quick:
        out.append(("dense-ish uniform 8K 25%", uniform(8_192, 8_192, 0.25, seed=6)))
        out.append(("dense-ish band 32K w512", band(32_768, 256)))
    return out


def uniform(m, n, density, seed):
    """S with each cell present at random with the given density (the paper's dense-ish
    synthetic matrices, its Fig. 5), values in (0, 1]."""
    import scipy.sparse as sp
    rng = np.random.default_rng(seed)
    S = sp.random(m, n, density=density, format="csr", random_state=rng, dtype=np.float32)
    S.data[:] = 1.0 - rng.random(S.nnz, dtype=np.float32)
    return S


def band(m, half):
    """A local-attention mask: row i holds columns i - half .. i + half - 1 (clipped), all ones."""
    import scipy.sparse as sp
    lo = np.clip(np.arange(m) - half, 0, m)
    hi = np.clip(np.arange(m) + half, 0, m)
    indptr = np.concatenate([[0], np.cumsum(hi - lo)]).astype(np.int64)
    indices = (np.repeat(lo - indptr[:-1], hi - lo) + np.arange(indptr[-1])).astype(np.int32)
    return sp.csr_matrix((np.ones(indptr[-1], np.float32), indices, indptr), shape=(m, m))


L2_BYTES = 50 << 20  # the H100's L2

# The other paths each call is also timed on (environment settings of the library).
VARIANTS = {
    "sparse": [("CSR order", {"SPARSERING_SDDMM_PANELS": "0"}), ("panels", {"SPARSERING_SDDMM_PANELS": "1"})],
    "dense": [("panels", {"SPARSERING_SDDMM_PANELS": "1"}),
              ("gemm tiles", {"SPARSERING_SDDMM_GEMM": "1"}),
              ("gemm tiles FMA", {"SPARSERING_SDDMM_GEMM": "1", "SPARSERING_SDDMM_MATH": "0"}),
              ("gemm tiles TF32", {"SPARSERING_SDDMM_GEMM": "1", "SPARSERING_SDDMM_MATH": "1"}),
              ("no gemm tiles", {"SPARSERING_SDDMM_GEMM": "0"}),
              ("dense tiles", {"SPARSERING_SDDMM_GEMM": "0", "SPARSERING_SDDMM_DENSE": "1"}),
              ("no dense tiles", {"SPARSERING_SDDMM_GEMM": "0", "SPARSERING_SDDMM_DENSE": "0"}),
              ("CSR order", {"SPARSERING_SDDMM_GEMM": "0", "SPARSERING_SDDMM_DENSE": "0",
                             "SPARSERING_SDDMM_PANELS": "0"})],
}


@contextlib.contextmanager
def library_settings(env):
    """The library's environment settings (SPARSERING_SDDMM_*) in force inside the block only."""
    os.environ.update(env)
    try:
        yield
    finally:
        for key in env:
            del os.environ[key]


def max_rel_diff(got, want):
    """The largest difference of two torch tensors, relative to want's largest magnitude."""
    return float((got - want).abs().max() / (want.abs().max() + 1e-30))


def floor_bytes(S, K):
    """The floor of the cuSDDMM paper's model: S read once (8 bytes an entry, the row pointers),
    the output written once (4 bytes an entry), and each needed row of A and of B read once per
    tile, for the tiling whose stationary tile (B's rows of a column tile, or A's of a row tile)
    fits in L2: the best of both orientations and of 1 to 4x the fewest tiles. Also the strict
    floor: every needed row once overall. Returns (model floor, strict floor) in bytes."""
    rows = np.repeat(np.arange(S.shape[0]), np.diff(S.indptr))
    cols = S.indices.astype(np.int64)
    fixed = S.nnz * (4 + 4 + 4) + (S.shape[0] + 1) * 8
    used_rows, used_cols = np.unique(rows).size, np.unique(cols).size
    strict = fixed + (used_rows + used_cols) * K * 4
    best = None
    for stay, walk, n_stay in ((cols, rows, S.shape[1]), (rows, cols, S.shape[0])):
        fewest = max(1, -(-n_stay * K * 4 // L2_BYTES))
        for tiles in sorted({fewest, 2 * fewest, 4 * fewest}):
            width = -(-n_stay // tiles)
            walked = np.unique(walk * tiles + stay // width).size  # (walked row, tile) pairs
            total = fixed + (np.unique(stay).size + walked) * K * 4
            best = total if best is None else min(best, total)
    return best, strict


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "../../shared/data"))
    ap.add_argument("--json")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--no-fused", action="store_true", help="the SDDMM rows alone")
    ap.add_argument("--no-variants", action="store_true", help="leave out the library's other paths")
    ap.add_argument("--only", help="run the matrices whose name holds one of these (comma-separated) texts")
    ap.add_argument("--ks", default="32,128,512", help="the K values, comma-separated")
    args = ap.parse_args()
    import cupy as cp
    import torch
    sr = sr_package.load(args.build)
    ctx = sr.Context("cuda")
    sync = cp.cuda.Device().synchronize
    bw = copy_bandwidth(cp)
    print(f"device-to-device copy bandwidth: {bw / 1e9:.0f} GB/s", flush=True)
    rows = []
    head = (f"{'matrix':32} {'nnz':>6} {'K':>4} | {'sparsering':>10} {'GFLOP/s':>7} {'floor':>7} {'x floor':>7} | "
            f"{'cuSPARSE':>9} {'speedup':>7} | {'torch':>9} {'speedup':>7} | {'gather':>8} {'speedup':>7}")
    print(head)
    print("-" * len(head))
    for name, S in matrices(args.data, args.quick):
        if args.only and not any(part in name for part in args.only.split(",")):
            continue
        S = S.tocsr().astype(np.float32)
        S.sort_indices()
        m, n = S.shape
        Sd = sr.Matrix(S, context=ctx, location="device")
        St = torch.sparse_csr_tensor(torch.from_numpy(S.indptr.astype(np.int64)).cuda(),
                                     torch.from_numpy(S.indices.astype(np.int64)).cuda(),
                                     torch.from_numpy(S.data).cuda(), size=S.shape)
        r = torch.repeat_interleave(torch.arange(m, device="cuda"), torch.from_numpy(np.diff(S.indptr)).cuda())
        c = St.col_indices()
        indptr32, indices32 = (torch.from_numpy(a.astype(np.int32)).cuda() for a in (S.indptr, S.indices))
        for K in (int(k) for k in args.ks.split(",")):
            A = torch.rand(m, K, device="cuda") - 0.5
            B = torch.rand(n, K, device="cuda") - 0.5
            Bt = B.t().contiguous()  # cuSPARSE's own layout for the right factor (K x n, row-major)
            out = torch.empty(S.nnz, device="cuda")

            def ours():  # the package on torch tensors, read and written in place
                sr.sddmm_values(Sd, A, B, pattern=True, out=out, context=ctx)
            sync()
            t0 = time.perf_counter()
            ours()  # the first call builds S's entry order (row panels or column tiles), kept with S
            sync()
            t_first = time.perf_counter() - t0
            t_sr = median_time(ours, reps=args.reps, sync=sync)
            # the paths that would run without the entry orders or tiles, for comparison: the
            # CSR-order kernel (no row panels); for dense-ish S also the dense tiles forced on
            # and the L2 kernels (no dense tiles)
            variants = {}
            paths = [] if args.no_variants else VARIANTS["dense" if name.startswith("dense-ish") else "sparse"]
            for label, env in paths:
                with library_settings(env):
                    variants[label] = median_time(ours, reps=args.reps, sync=sync)
            t_csr = variants.get("CSR order", float("nan"))
            if name.startswith("dense-ish"):  # the tile paths' error against float64 on 2^20 sampled entries
                pick = torch.randint(S.nnz, (1 << 20,), device="cuda")
                r64 = (A.double()[r[pick]] * B.double()[c[pick]]).sum(1)
                for label, env in (("exact", {}), ("FMA", {"SPARSERING_SDDMM_MATH": "0"}),
                                   ("TF32", {"SPARSERING_SDDMM_MATH": "1"})):
                    with library_settings(env):
                        ours()
                        sync()
                    variants[f"err {label}"] = float((out[pick].double() - r64).abs().max() / r64.abs().max())
            ref = torch.sparse.sampled_addmm(St, A, Bt, beta=0.0, alpha=1.0)
            err = max_rel_diff(out, ref.values())
            t_cs = median_time(lambda: torch.sparse.sampled_addmm(St, A, Bt, beta=0.0, alpha=1.0), reps=args.reps,
                               sync=sync)
            direct_vals = torch.empty(S.nnz, device="cuda")
            direct = cusparse_sddmm.Sddmm(indptr32, indices32, direct_vals, A, B)
            t_cd = median_time(direct, reps=args.reps, sync=sync)
            t_cd_call = median_time(direct.per_call, reps=max(3, args.reps // 2), sync=sync)
            direct()
            sync()
            err_cd = max_rel_diff(out, direct_vals)
            direct.close()
            del direct, direct_vals
            chunk = max(1, (1 << 28) // K)  # 1 GiB of gathered rows at a time

            def gather():
                for e0 in range(0, S.nnz, chunk):
                    (A[r[e0:e0 + chunk]] * B[c[e0:e0 + chunk]]).sum(1)
            t_g = median_time(gather, reps=max(3, args.reps // 3), sync=sync)
            model, strict = floor_bytes(S, K)
            floor = model / bw
            gf = 2 * S.nnz * K / t_sr / 1e9
            row = dict(op="sddmm", matrix=name, nnz=S.nnz, K=K, sparsering_ms=t_sr * 1e3, gflops=gf,
                       floor_ms=floor * 1e3, strict_floor_ms=strict / bw * 1e3, cusparse_direct_ms=t_cd * 1e3,
                       cusparse_direct_per_call_ms=t_cd_call * 1e3, cusparse_direct_max_rel_diff=err_cd,
                       cusparse_ms=t_cs * 1e3,
                       gather_ms=t_g * 1e3, max_rel_diff=err, first_call_ms=t_first * 1e3,
                       csr_order_ms=t_csr * 1e3,
                       variants_ms={k: v * 1e3 for k, v in variants.items() if not k.startswith("err")},
                       max_rel_err_vs_float64={k[4:]: v for k, v in variants.items() if k.startswith("err")})
            rows.append(row)
            print(f"{name:32} {S.nnz / 1e6:5.1f}M {K:4} | {t_sr * 1e3:8.2f}ms {gf:7.0f} {floor * 1e3:5.2f}ms "
                  f"{t_sr / floor:7.2f} | {t_cd * 1e3:7.2f}ms {t_cd / t_sr:7.2f} | "
                  f"{t_cs * 1e3:7.2f}ms {t_cs / t_sr:7.2f} | "
                  f"{t_g * 1e3:6.2f}ms {t_g / t_sr:7.2f}   (max rel diff {err:.1e}, cuSPARSE direct {err_cd:.1e}; "
                  f"cuSPARSE with its analysis each call {t_cd_call * 1e3:.2f} ms; first call {t_first * 1e3:.2f} ms, "
                  + ", ".join(f"{k} {v:.1e}" if k.startswith("err") else f"{k} {v * 1e3:.2f} ms"
                              for k, v in variants.items()) + ")",
                  flush=True)
            del Bt, out
            if K in (32, 128) and not args.no_fused:
                rows += fused_rows(sr, ctx, name, S, Sd, St, (indptr32, indices32), A, B, K, args.reps, sync, torch)
            del A, B
        del Sd
        del St, r, c, indptr32, indices32
        torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(bandwidth_GBs=bw / 1e9, rows=rows), f, indent=1)


def fused_rows(sr, ctx, name, S, Sd, St, S32, A, B, K, reps, sync, torch):
    """O = N(S ⊙ A·Bᵀ)·V with V n x K: fused against the unfused pair (ours; cuSPARSE's SDDMM
    called directly, then its SpMM through cupy; torch's). S32: S's int32 (indptr, indices)."""
    import cupy as cp
    import cupyx.scipy.sparse as cps
    m, n = S.shape
    V = torch.rand(n, K, device="cuda") - 0.5
    O = torch.empty(m, K, device="cuda")
    out = []
    Bt = B.t().contiguous()
    for kind, softmax, same in (("fused", False, False), ("fused, V = B", False, True), ("fused softmax", True, False)):
        alpha = 1.0 / np.sqrt(K)
        Vx = B if same else V
        t_f = median_time(lambda: sr.sddmm_spmm(Sd, A, B, Vx, alpha=alpha, softmax=softmax, pattern=True, out=O,
                                                context=ctx), reps=reps, sync=sync)
        fused_out = O.clone()
        paths = {}  # dense-ish S: the fused call with the whole tiles forced on and off
        settings = (("tiles", {"SPARSERING_SDDMM_GEMM": "1"}),
                    ("tiles FMA", {"SPARSERING_SDDMM_GEMM": "1", "SPARSERING_SDDMM_MATH": "0"}),
                    ("tiles TF32", {"SPARSERING_SDDMM_GEMM": "1", "SPARSERING_SDDMM_MATH": "1"}),
                    ("no tiles", {"SPARSERING_SDDMM_GEMM": "0"}))
        for label, env in settings if name.startswith("dense-ish") else ():
            with library_settings(env):
                paths[label] = median_time(lambda: sr.sddmm_spmm(Sd, A, B, Vx, alpha=alpha, softmax=softmax,
                                                                 pattern=True, out=O, context=ctx), reps=reps, sync=sync)

        def unfused():  # the library has no sparse softmax: ours is timed for the plain forms
            C = sr.sddmm(Sd, A, B, alpha=alpha, pattern=True, context=ctx)  # a device Matrix
            sr.spmm(C, Vx, out=O, context=ctx)
        t_u = median_time(unfused, reps=reps, sync=sync) if not softmax else float("nan")
        t_d = err_d = float("nan")
        if not softmax:  # cuSPARSE has no sparse softmax either
            vals = torch.empty(S.nnz, device="cuda")
            sddmm = cusparse_sddmm.Sddmm(*S32, vals, A, B, alpha=alpha)
            P = cps.csr_matrix((cp.asarray(vals), cp.asarray(S32[1]), cp.asarray(S32[0])), shape=S.shape)
            Vc = cp.asarray(Vx)

            def direct_pair():
                sddmm()
                return P @ Vc  # cusparseSpMM
            t_d = median_time(direct_pair, reps=reps, sync=sync)
            err_d = max_rel_diff(fused_out, torch.as_tensor(direct_pair(), device="cuda"))
            sddmm.close()
            del sddmm, P, Vc, vals

        def torch_pair():
            P = torch.sparse.sampled_addmm(St, A, Bt, beta=0.0, alpha=alpha)
            if softmax:
                P = torch.sparse.softmax(P.to_sparse_coo(), 1)
            return torch.sparse.mm(P, Vx)
        ref = torch_pair()
        ref = ref.to_dense() if ref.is_sparse else ref
        err = max_rel_diff(fused_out, ref)
        t_t = median_time(torch_pair, reps=max(3, reps // 2), sync=sync)
        out.append(dict(op=kind, matrix=name, nnz=S.nnz, K=K, fused_ms=t_f * 1e3, unfused_ms=t_u * 1e3,
                        cusparse_pair_ms=t_d * 1e3, cusparse_pair_max_rel_diff=err_d, torch_ms=t_t * 1e3,
                        max_rel_diff=err, paths_ms={k: v * 1e3 for k, v in paths.items()}))
        print(f"  {kind:14} K={K:4}: fused {t_f * 1e3:8.2f} ms | our sddmm+spmm {t_u * 1e3:8.2f} ms "
              f"({t_u / t_f:5.2f}x) | cuSPARSE SDDMM+SpMM {t_d * 1e3:8.2f} ms ({t_d / t_f:5.2f}x) | "
              f"torch {'sampled_addmm+softmax+mm' if softmax else 'sampled_addmm+mm'} "
              f"{t_t * 1e3:8.2f} ms ({t_t / t_f:5.2f}x)   (max rel diff {err:.1e}, cuSPARSE pair {err_d:.1e}"
              + "".join(f"; {k} {v * 1e3:.2f} ms" for k, v in paths.items()) + ")", flush=True)
    del V, O, Bt
    return out


if __name__ == "__main__":
    main()
