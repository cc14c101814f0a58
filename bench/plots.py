"""Plots of the benchmarks' JSON rows as PNG. The bench scripts call plot(kind, rows, path) after
writing their JSON (--json OUT.json also writes OUT.png); run alone, this remakes README's plots,
docs/plot-*.png, from the committed bench/results-*.json:

usage: python3 bench/plots.py [--out docs]
Needs matplotlib (pip install matplotlib); without it the scripts say so and skip the plots."""
import argparse
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))

# RAFT on a V100, all-vs-all k = 5 seconds (the distances papers' tables, ../shared/PERFORMANCE.md)
RAFT_V100 = {
    "movielens-large-like": dict(cosine=110, euclidean=111, manhattan=228, hamming=230, canberra=268, chebyshev=336,
                                 minkowski=367, kl_divergence=170, jensenshannon=415),
    "scrna-like": dict(cosine=233, euclidean=233, manhattan=477, hamming=481, canberra=598, chebyshev=546,
                       minkowski=838, kl_divergence=409, jensenshannon=1052),
    "nytimes-like": dict(cosine=335, euclidean=337, manhattan=716, hamming=728, canberra=820, chebyshev=1072,
                         minkowski=1161, kl_divergence=525, jensenshannon=1331),
    "sec-edgar-like": dict(cosine=88, euclidean=88, manhattan=98, hamming=98, canberra=103, chebyshev=146,
                           minkowski=129, kl_divergence=88, jensenshannon=143),
}
for _sets in RAFT_V100.values():  # the papers give one range for the expanded family
    for _m in ("jaccard", "dice", "hellinger", "correlation", "russellrao"):
        _sets[_m] = _sets["cosine"]


def _bars(ax, labels, series, ylabel, log=False):
    """Grouped bars: series is [(name, values)], one value per label (None: no bar)."""
    width = 0.8 / len(series)
    for s, (name, values) in enumerate(series):
        xs = [i + (s - (len(series) - 1) / 2) * width for i in range(len(labels))]
        pairs = [(x, v) for x, v in zip(xs, values) if v is not None and v == v]
        ax.bar([p[0] for p in pairs], [p[1] for p in pairs], width, label=name)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=35, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    if log:
        ax.set_yscale("log")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)


def boolean(rows, plt):
    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 4.5))
    gpu = [r for r in rows if r["backend"] == "cuda" and "cuSPARSE" in r["baseline"]]
    cpu = [r for r in rows if r["backend"] == "cpu" and "GraphBLAS" in r["baseline"]]
    labels = [f"{r['operation']} {r['input'].split(' (')[0]}" for r in gpu]
    cpu_ratio = {(r["operation"], r["input"]): r["ratio"] for r in cpu}
    _bars(a, labels, [("GPU vs cuSPARSE", [r["ratio"] for r in gpu]),
                      ("CPU vs GraphBLAS (16 cores)", [cpu_ratio.get((r["operation"], r["input"])) for r in gpu])],
          "speedup (x)")
    a.axhline(1, color="k", lw=0.8)
    a.set_title("Boolean M·M and M + M·M: speedup")
    _bars(b, labels, [("cuSPARSE / sparsering peak memory", [r["baseline_peak_device_bytes"] / r["peak_device_bytes"]
                                                             for r in gpu])], "times less memory")
    b.axhline(4, color="r", lw=0.8, ls="--", label="target 4x")
    b.set_title("Boolean products: peak device memory")
    return fig


def knn_paper(rows, plt):
    sets = [s for s in RAFT_V100 if any(r["input"] == s for r in rows)]
    fig, axes = plt.subplots(1, len(sets), figsize=(4.6 * len(sets), 4.5), squeeze=False)
    for ax, name in zip(axes[0], sets):
        # ours: the measured all-vs-all run where there is one, else scaled from the timed queries
        mine = {r["metric"]: r.get("all_vs_all_measured_seconds") or r["all_vs_all_seconds"]
                for r in rows if r["input"] == name and r.get("operation", "knn") == "knn"
                and r.get("precision", "exact") == "exact"}
        measured = any(r.get("all_vs_all_measured_seconds") for r in rows if r["input"] == name)
        queries = max((r.get("queries", 0) for r in rows if r["input"] == name), default=0)
        metrics = [m for m in RAFT_V100[name] if m in mine]
        _bars(ax, metrics, [("sparsering " + next((r["device"].replace("NVIDIA ", "") for r in rows if r.get("device")), "H100"), [mine[m] for m in metrics]),
                            ("RAFT V100 (paper)", [RAFT_V100[name][m] for m in metrics]),
                            ("RAFT / 30 (target)", [RAFT_V100[name][m] / 30 for m in metrics])],
              "all-vs-all seconds", log=True)
        how = "measured" if measured else f"scaled from {queries} queries"
        ax.set_title(f"{name}: all-vs-all k-NN, k = 5 (ours {how})", fontsize=8)
    return fig


def knn_real(rows, plt):
    names = {"bow": "PyPI bag of words", "ngrams": "PyPI 3-grams", "ratings": "MovieLens small"}
    sets = [s for s in names if any(r["input"] == s for r in rows)]
    fig, axes = plt.subplots(2, len(sets), figsize=(5 * len(sets), 9), squeeze=False)
    for ax, mem, name in zip(axes[0], axes[1], sets):
        rs = [r for r in rows if r["input"] == name and r["backend"] == "cuda"]
        per_query = lambda r, key: r[key] / r["queries"] * 1e3 if r.get(key) else None  # noqa: E731
        sk = [r["sklearn_seconds"] / r["sklearn_queries_timed"] * 1e3 if r.get("sklearn_seconds") else None for r in rs]
        _bars(ax, [r["metric"] for r in rs], [("sparsering", [per_query(r, "seconds") for r in rs]),
                                              ("cuSPARSE-densify", [per_query(r, "baseline_seconds") for r in rs]),
                                              ("scikit-learn, 16 cores", sk)], "ms per query", log=True)
        ax.set_title(f"{names[name]}: k-NN", fontsize=9)
        mib = lambda r, key: r[key] / 2**20 if r.get(key) else None  # noqa: E731
        _bars(mem, [r["metric"] for r in rs], [("sparsering", [mib(r, "peak_device_bytes") for r in rs]),
                                               ("cuSPARSE-densify", [mib(r, "baseline_peak_device_bytes") for r in rs])],
              "peak device MiB (inputs included)", log=True)
        mem.set_title(f"{names[name]}: peak device memory, {rs[0]['queries'] if rs else 0} queries", fontsize=9)
    return fig


def fused(rows, plt):
    fig, ax = plt.subplots(figsize=(8, 4.5))
    rs = [r for r in rows if "gpu_ms" in r]
    _bars(ax, [r["set"] for r in rs], [("fused (sparsering)", [r["gpu_ms"] for r in rs]),
                                       ("unfused cuSPARSE / cuBLAS", [r["unfused_ms"] for r in rs]),
                                       ("bandwidth floor", [r["floor_ms"] for r in rs])], "ms", log=True)
    ax.set_title("α·Xᵀ(v ⊙ X·y) + β·z on the H100")
    return fig


def products(rows, plt):
    fig, (ax, mem) = plt.subplots(1, 2, figsize=(18, 4.5), gridspec_kw={"width_ratios": [3, 1]})
    label = lambda r: (f"{r['operation']} {r['input']} " +  # noqa: E731
                       (r["product"] if r["operation"] == "spgemm" else f"K={r['K']} {r['layout']}"))
    _bars(ax, [label(r) for r in rows], [("sparsering / cuSPARSE speedup", [r["ratio"] for r in rows])], "speedup (x)")
    ax.axhline(1, color="k", lw=0.8)
    ax.set_title("Semiring products (plus_times, float32) against cuSPARSE on the H100")
    gemm = [r for r in rows if r["operation"] == "spgemm" and r.get("baseline_peak_device_bytes")]
    _bars(mem, [f"{r['input']} {r['product']}" for r in gemm],
          [("sparsering", [r["peak_device_bytes"] / 1e6 for r in gemm]),
           ("cuSPARSE", [r["baseline_peak_device_bytes"] / 1e6 for r in gemm])], "peak device MB (output, scratch)", log=True)
    mem.set_title("SpGEMM: peak device memory")
    return fig


def products_from_text(path):
    """The rows of the last run in a bench_products text log (results-products-h100.txt), as the
    JSON rows' fields the plot reads: the committed results are text."""
    import re
    rows = []
    dense = re.compile(r"^(spmv|spmm)\s+(.+?)\s+K=(\d+)\s+(row|col) \| ours\s+\S+ ms\s+cuSPARSE\s+\S+ ms\s+(\S+)x")
    gemm = re.compile(r"^spgemm (.+?)\s+(A\*A\^T|A\*A)\s+nnz.*?\s(\S+)x \| memory ours\s+(\S+) MB\s+cuSPARSE\s+(\S+) MB")
    with open(path) as f:
        for line in f:
            if line.startswith("device "):
                rows = []  # a later run replaces the earlier one
            if m := dense.match(line):
                rows.append(dict(operation=m[1], input=m[2], K=int(m[3]), layout=m[4], ratio=float(m[5])))
            elif m := gemm.match(line):
                rows.append(dict(operation="spgemm", input=m[1], product=m[2], ratio=float(m[3]),
                                 peak_device_bytes=float(m[4]) * 1e6, baseline_peak_device_bytes=float(m[5]) * 1e6))
    return rows


def spgemm_rmat(rows, plt):
    fig, (ax, mem) = plt.subplots(1, 2, figsize=(14, 4.2))
    labels = [r["input"] for r in rows]
    _bars(ax, labels, [("sparsering / cuSPARSE speedup", [r["ratio"] if r["cusparse_ok"] else None for r in rows])],
          "speedup (x)")
    for i, r in enumerate(rows):
        if not r["cusparse_ok"]:
            ax.text(i, 0.05, f"cuSPARSE: empty result\n(ours {r['ours_ms']:.0f} ms, {r['nnz'] / 1e9:.2f}G entries)",
                    rotation=90, ha="center", va="bottom", fontsize=7)
    ax.axhline(1, color="k", lw=0.8)
    ax.set_title("SpGEMM A·A on Graph500 R-MAT (float32) against cuSPARSE, H100")
    _bars(mem, labels, [("sparsering", [r["peak_mb"] for r in rows]),
                        ("cuSPARSE", [r["baseline_peak_mb"] if r["cusparse_ok"] else None for r in rows])],
          "peak device MB", log=True)
    mem.set_title("SpGEMM on R-MAT: peak device memory")
    return fig


def spgemm_rmat_from_text(path):
    """The R-MAT rows of results-spgemm-rmat-h100.txt (bench/probes/spgemm_rmat.py's lines)."""
    import re
    line_re = re.compile(r"^R-MAT (\d+) ef (\d+): nnz \d+ -> (\d+) \(cuSPARSE (-?\d+).*?\| ours\s+(\S+) ms,\s+(\S+) MB "
                         r"\| cuSPARSE\s+(\S+) ms,\s+(\S+) MB")
    rows = {}
    with open(path) as f:
        for line in f:
            if m := line_re.match(line):  # a later line for the same matrix replaces an earlier one
                rows[(int(m[1]), int(m[2]))] = dict(
                    input=f"R-MAT {m[1]}, ef {m[2]}", nnz=int(m[3]), cusparse_ok=int(m[4]) == int(m[3]),
                    ours_ms=float(m[5]), peak_mb=float(m[6]), baseline_ms=float(m[7]), baseline_peak_mb=float(m[8]),
                    ratio=float(m[7]) / float(m[5]))
    return [rows[k] for k in sorted(rows)]


def products_cpu(rows, plt):
    fig, ax = plt.subplots(figsize=(14, 4.2))
    labels = [f"{r['product']} {r['matrix']}" for r in rows]
    _bars(ax, labels, [("over GraphBLAS (16 threads)", [r["graphblas_ms"] / r["ours_ms"] for r in rows]),
                       ("over scipy (1 thread)", [r["scipy_ms"] / r["ours_ms"] for r in rows])], "speedup (x)", log=True)
    ax.axhline(1, color="k", lw=0.8)
    ax.set_title("CPU backend (16 cores) against SuiteSparse:GraphBLAS and scipy, float32")
    return fig


KINDS = {"boolean": (boolean, "results-boolean-h100.json"), "knn-paper": (knn_paper, "results-knn-paper-h200.json"),
         "knn-real": (knn_real, "results-knn-real-h100.json"), "fused": (fused, "results-fused-h100.json"),
         "products": (products, "results-products-h100.txt"),
         "spgemm-rmat": (spgemm_rmat, "results-spgemm-rmat-h100.txt"),
         "products-cpu": (products_cpu, "results-products-cpu-16cores.json")}


def plot(kind, rows, path):
    """Writes the plot of the rows to path (PNG); returns path, or None without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"no matplotlib: {path} not written (pip install matplotlib)")
        return None
    fig = KINDS[kind][0](rows, plt)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def beside(json_path):
    """The PNG beside a JSON file: OUT.json -> OUT.png."""
    return os.path.splitext(json_path)[0] + ".png"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "..", "docs"))
    args = ap.parse_args()
    for kind, (_, source) in KINDS.items():
        path = os.path.join(HERE, source)
        if source.endswith(".txt"):
            rows = spgemm_rmat_from_text(path) if kind == "spgemm-rmat" else products_from_text(path)
        else:
            with open(path) as f:
                rows = json.load(f)
            rows = rows["rows"] if isinstance(rows, dict) else rows
        print(plot(kind, rows, os.path.join(args.out, f"plot-{kind}.png")))


if __name__ == "__main__":
    main()
