"""A lane-by-lane numpy emulation of warp_rows' per-warp loop (bench/probes/fused_warp_probe.py), to check
its row finding, segmented sums, carried rows and re-reads on the CPU before a GPU runs it: rows of 0
to 100 entries (empty rows, rows cut at chunk ends, rows spanning 2 and 3+ chunks), several warps,
against scipy in float64. It mirrors the CUDA line by line; a change to one needs the other.

    python3 bench/probes/fused_warp_emulate.py      (2026-11-26: max rel err 6e-16 to 1.5e-15)
"""
import numpy as np, scipy.sparse as sp
INF = 2**62
def row_of(k, r, rs, rowptr, m):
    cnt = np.zeros(32, np.int64)
    for step in (16, 8, 4, 2, 1):
        t = rs[cnt + step - 1]
        cnt = np.where(t <= k, cnt + step, cnt)
    last = rs[31]
    out = r + cnt
    for l in range(32):
        if last <= k[l]:
            lo, hi = r, m
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if rowptr[mid] <= k[l]: lo = mid
                else: hi = mid
            out[l] = lo
    return out
def warp(rowptr, col, val, m, y, v, alpha, r0, r_end, ws):
    lane = np.arange(32)
    e_end = rowptr[r_end]; e = rowptr[r0]; r = r0
    while r < r_end and rowptr[r + 1] <= e: r += 1
    carry = 0.0; open_start = e; kept = False; pending = np.zeros(32, bool); pc = np.zeros(32, np.int64); px = np.zeros(32)
    while e < e_end:
        k = e + lane; inn = k < e_end
        rs = np.array([rowptr[r + 1 + l] if r + 1 + l <= m else INF for l in range(32)])
        rk = row_of(np.where(inn, k, e), r, rs, rowptr, m)
        row = np.where(inn, rk, -1 - lane)
        c = np.where(inn, col[np.minimum(k, len(col) - 1)], 0)
        x = np.where(inn, val[np.minimum(k, len(col) - 1)], 0.0)
        acc = np.where(inn, x * y[c], 0.0)
        off = 1
        while off < 32:
            t = np.concatenate([acc[off:], acc[-off:]]); tr = np.concatenate([row[off:], row[-off:]])
            acc = np.where((lane + off < 32) & (tr == row), acc + t, acc); off *= 2
        prev_row = np.concatenate([row[:1], row[:-1]])
        heads = inn & ((lane == 0) | (prev_row != row))
        head = np.array([max(j for j in range(l + 1) if heads[j]) if heads[:l + 1].any() else 0 for l in range(32)])
        seg = acc[head]
        dot = seg + np.where(row == r, carry, 0.0)
        row_end = np.where(inn, rowptr[np.clip(row + 1, 0, m)], 0)
        complete = inn & (row_end <= e + 32)
        s = np.where(complete, alpha * v[np.clip(row, 0, m - 1)] * dot, 0.0)
        for l in range(32):
            if complete[l]: ws[c[l]] += x[l] * s[l]
        r_done = complete[0] and row[0] == r; s_r = s[0]
        if r_done:
            for l in range(32):
                if kept and pending[l]: ws[pc[l]] += px[l] * s_r
            for q in range(open_start, e - 32 if kept else e):
                ws[col[q]] += val[q] * s_r
        cut = inn[31] and not complete[31]; last_row = row[31]
        if cut:
            carry = dot[31]
            if last_row != r:
                open_start = e + head[31]; kept = True; pending = row == last_row
            else:
                kept = False; pending = np.zeros(32, bool)
            pc = c.copy(); px = x.copy(); r = last_row
        else:
            carry = 0.0; kept = False; pending = np.zeros(32, bool); r = row[31] + 1
        e += 32
        if not cut and e < e_end:
            while r < r_end and rowptr[r + 1] <= e: r += 1
            open_start = e
rng = np.random.default_rng(5)
for trial in range(6):
    lengths = rng.choice([0, 1, 3, 10, 31, 32, 33, 40, 64, 65, 100], size=400)
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n = 50
    X = sp.csr_matrix((rng.standard_normal(indptr[-1]), rng.integers(0, n, indptr[-1]), indptr), shape=(len(lengths), n))
    m = X.shape[0]; y = rng.standard_normal(n); v = rng.standard_normal(m); alpha = 0.75
    want = alpha * (X.T @ (v * (X @ y)))
    warps = 7
    row0 = np.searchsorted(X.indptr, np.linspace(0, X.nnz, warps + 1), side="left"); row0[0], row0[-1] = 0, m
    row0 = np.maximum.accumulate(row0)
    ws = np.zeros(n)
    for g in range(warps):
        warp(X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data, m, y, v, alpha, row0[g], row0[g + 1], ws)
    print(trial, "max rel err", np.abs(ws - want).max() / np.abs(want).max())
