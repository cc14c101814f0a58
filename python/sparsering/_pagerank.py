"""PageRank on sparsering's SpMV (sr_pagerank), with the SpMV plan."""
from collections import namedtuple

import numpy as np

from . import _core
from ._matrix import as_matrix
from ._ops import SpmvPlan, _ctx_for, _dense

PageRankInfo = namedtuple("PageRankInfo", "iterations change setup_seconds plan_seconds iterate_seconds plan")
PageRankInfo.__doc__ = """What sr.pagerank did: iterations, the last iteration's Σ|r_new − r|, the seconds to build
the transition matrix, to plan its SpMV (0 without) and to iterate, and the SpmvPlan found."""


def pagerank(A, damping=0.85, *, tol=1e-6, max_iter=100, plan=True, dtype=np.float64, context=None):
    """PageRank of the directed graph A (scipy.sparse / Matrix, square; A[i, j] an edge i -> j
    weighing its value, weights >= 0), as networkx.pagerank(G, alpha=damping, tol=tol) without
    personalization: power iteration from 1/n until Σ|r_new − r| <= n·tol. Runs where A lives (a
    device Matrix on the GPU); with plan the transition matrix's SpMV is analysed first
    (sr.spmv_plan). dtype (float32 or float64) is the iterations' precision. Returns (ranks as a
    numpy vector summing to 1, PageRankInfo)."""
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"pagerank: dtype must be float32 or float64, not {dtype}")
    ctx = _ctx_for(A, context)
    M = as_matrix(A, ctx, None)
    ranks = np.empty(M.shape[0], dtype=dtype)
    it, change, setup, planning, iterate, info = _core.pagerank(ctx._ctx, M._h, _dense(ranks, "rank", True),
                                                               float(damping), float(tol), int(max_iter), bool(plan))
    return ranks, PageRankInfo(it, change, setup, planning, iterate, SpmvPlan(*info))
