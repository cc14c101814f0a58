"""docs/plot-spmv-plan.png from bench/results-spmv-plan-h100.json and results-pagerank-h100.json:
speed against cuSPARSE per matrix, SpMV without and with the plan, and PageRank's iterations.

    python3 bench/plot_spmv_plan.py"""
import json
import os

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    spmv = json.load(open(os.path.join(HERE, "results-spmv-plan-h100.json")))
    pr = json.load(open(os.path.join(HERE, "results-pagerank-h100.json")))
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2), gridspec_kw={"width_ratios": [len(spmv), len(pr)]})
    for ax, rows, key, title, base in (
            (axes[0], spmv, "matrix", "SpMV (float32), one call", "cusparse_s"),
            (axes[1], pr, "graph", "PageRank, per iteration", "cupy_s")):
        names = [r[key] for r in rows]
        plain = [r[base] / r["plain_s"] for r in rows]
        planned = [r[base] / r["planned_s"] for r in rows]
        xs = range(len(rows))
        ax.bar([x - 0.2 for x in xs], plain, 0.4, label="sparsering")
        ax.bar([x + 0.2 for x in xs], planned, 0.4, label="sparsering with sr_spmv_plan")
        ax.axhline(1.0, color="k", lw=0.8)
        ax.axhline(2.0, color="r", lw=0.8, ls="--", label="target (plan): 2x")
        ax.set_xticks(list(xs))
        ax.set_xticklabels(names, rotation=20, fontsize=8)
        ax.set_ylabel("cuSPARSE time / ours" if base == "cusparse_s" else "cupy+cuSPARSE time / ours")
        ax.set_title(title)
        ax.legend(fontsize=8)
    fig.suptitle("H100: SpMV and PageRank against cuSPARSE (higher is faster)")
    fig.tight_layout()
    fig.savefig(os.path.join(HERE, "..", "docs", "plot-spmv-plan.png"), dpi=110)


if __name__ == "__main__":
    main()
