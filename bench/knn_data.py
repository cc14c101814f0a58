"""Data sets for the k-NN benchmark, as scipy CSR float32 matrices.

Real sets (../shared/data; see its README for provenance):
  ratings   MovieLens latest-small: users x movies, the rating as value
  bow       PyPI one-line summaries as word counts (tokens [a-z0-9]+, lower-cased)
  ngrams    PyPI package names as character 3-gram counts of " name " (lower-cased)
Generated at the papers' scale (PERFORMANCE.md, "Paper-scale k-NN"): the table's shape and entry
count (checked within 5%, printed), row degrees clipped to the table's range, distinct columns per
row with Zipf-like popularity, count or rating values, a fixed seed (`paper_set`).

`python3 bench/knn_data.py ../shared/data OUT` parses the real text sets once and saves them
as OUT/<name>.npz, so the GPU machine need not parse them."""
import csv
import gzip
import lzma
import os
import re
import sys

import numpy as np
import scipy.sparse as sp


def ratings(data_dir):
    rows, cols, vals = [], [], []
    with gzip.open(os.path.join(data_dir, "ratings/ml-latest-small/ratings.csv.gz"), "rt") as f:
        for rec in csv.DictReader(f):
            rows.append(int(rec["userId"]))
            cols.append(int(rec["movieId"]))
            vals.append(float(rec["rating"]))
    _, r = np.unique(rows, return_inverse=True)
    _, c = np.unique(cols, return_inverse=True)
    return sp.csr_matrix((np.array(vals, np.float32), (r, c)))


def _counts(docs):
    """Token lists -> CSR of counts (vocabulary in first-seen order)."""
    vocab, indptr, indices = {}, [0], []
    for tokens in docs:
        for t in tokens:
            indices.append(vocab.setdefault(t, len(vocab)))
        indptr.append(len(indices))
    m = sp.csr_matrix((np.ones(len(indices), np.float32), np.array(indices, np.int32), np.array(indptr, np.int64)),
                      shape=(len(indptr) - 1, len(vocab)))
    m.sum_duplicates()  # repeated tokens become counts
    return m


def bag_of_words(data_dir):
    word = re.compile(r"[a-z0-9]+")
    with lzma.open(os.path.join(data_dir, "text/pypi-summaries.tsv.xz"), "rt", encoding="utf-8") as f:
        return _counts(word.findall(line.split("\t", 1)[1].lower()) if "\t" in line else [] for line in f)


def ngrams(data_dir):
    with lzma.open(os.path.join(data_dir, "text/pypi-names.txt.xz"), "rt", encoding="utf-8") as f:
        def grams(name):
            s = " " + name.strip().lower() + " "
            return [s[i:i + 3] for i in range(len(s) - 2)]
        return _counts(grams(line) for line in f)


def _degrees(rng, nrows, nnz, lo, hi, shape):
    """Row degrees of the given shape ("pareto" or "lognormal") clipped to [lo, hi], scaled so
    that they sum to nnz within 0.5% (the scale is bisected on the clipped sum)."""
    raw = rng.pareto(1.2, nrows) + 1.0 if shape == "pareto" else rng.lognormal(0.0, 0.6, nrows)
    raw = raw / raw.mean()
    lo_s, hi_s = 1e-3, 1e4
    for _ in range(200):
        s = np.sqrt(lo_s * hi_s)
        deg = np.clip(np.rint(raw * s * nnz / nrows), lo, hi).astype(np.int64)
        total = int(deg.sum())
        if abs(total - nnz) <= 0.005 * nnz:
            break
        lo_s, hi_s = (s, hi_s) if total < nnz else (lo_s, s)
    return deg


def _zipf_ranks(rng, n, ncols, zipf):
    """n column ranks 0..ncols-1 drawn with probability about (rank+1)^-zipf: the inverse of the
    continuous Zipf law's distribution function (O(1) a draw, where a search of the discrete one
    took 9 s for NY Times' 70M draws)."""
    u = rng.random(n)
    if zipf == 1.0:
        r = np.exp(u * np.log(ncols + 1.0))
    else:
        e = 1.0 - zipf
        r = (1.0 + u * ((ncols + 1.0) ** e - 1.0)) ** (1.0 / e)
    return np.minimum(r.astype(np.int64) - 1, ncols - 1).clip(0)


def _distinct_columns(rng, deg, ncols, zipf, rounds=48):
    """deg[i] distinct columns for each row i, by Zipf-like popularity (the popular columns spread
    over the range by a permutation): rows draw what they still lack until every draw is new to
    its row; after `rounds` rounds the few rows still short (the longest, whose last columns are
    the rarest) take uniformly random columns they lack. Returns sorted keys row * ncols + column,
    exactly deg.sum() of them."""
    perm = rng.permutation(ncols)
    chunks, need = [], deg.copy()
    for r in range(rounds + 64):
        todo = np.flatnonzero(need > 0)
        if len(todo) == 0:
            break
        rows = np.repeat(todo, need[todo]).astype(np.int64)
        if r < rounds:
            cols = perm[_zipf_ranks(rng, len(rows), ncols, zipf)]
        else:
            cols = rng.integers(0, ncols, len(rows))
        new = np.sort(rows * ncols + cols)  # unique by sort: numpy 2's hashing np.unique took 55 of 67 s
        new = new[np.concatenate(([True], new[1:] != new[:-1]))]
        for c in (c for c in chunks if len(c)):  # drop the keys a row already holds
            pos = np.minimum(np.searchsorted(c, new), len(c) - 1)
            new = new[c[pos] != new]
        chunks.append(new)
        need -= np.bincount(new // ncols, minlength=len(deg))
    if need.any():
        raise RuntimeError(f"{int(need.sum())} entries could not be drawn distinct")
    return np.sort(np.concatenate(chunks))


def synthetic(nrows, ncols, nnz, min_degree, max_degree, degrees="pareto", zipf=1.0, values="counts", seed=7):
    """A nrows x ncols CSR float32 matrix of nnz entries within 0.5%: row degrees of the given
    shape clipped to [min, max], each row's columns distinct (drawn again until they are, so no
    entries are lost to merged repeats), column popularity Zipf-like (rank^-zipf), values 1..5
    ("counts") or half stars 0.5..5 ("ratings"); a fixed seed."""
    rng = np.random.default_rng(seed)
    deg = _degrees(rng, nrows, nnz, min_degree, min(max_degree, ncols // 2), degrees)
    keys = _distinct_columns(rng, deg, ncols, zipf)
    if values == "ratings":
        vals = rng.integers(1, 11, len(keys)).astype(np.float32) * 0.5
    else:
        vals = rng.integers(1, 6, len(keys)).astype(np.float32)
    indptr = np.concatenate([[0], np.cumsum(deg)])
    return sp.csr_matrix((vals, (keys % ncols).astype(np.int32), indptr), shape=(nrows, ncols))


# name: (rows, cols, nnz, min degree, max degree, options): PERFORMANCE.md's table; NY Times has
# the real set's 69,679,427 entries (about 232 distinct words a document, log-normal-like lengths)
PAPER_SETS = {
    "movielens-large-like": (283_000, 194_000, 27_000_000, 0, 24_000, dict(values="ratings")),
    "sec-edgar-like": (663_000, 858_000, 4_000_000, 0, 51, dict()),
    "scrna-like": (66_000, 26_000, 120_000_000, 501, 9_600, dict(zipf=0.5)),
    "nytimes-like": (300_000, 102_000, 69_679_427, 0, 2_000, dict(degrees="lognormal")),
}


def paper_set(name, quiet=False):
    """The generated paper-scale set `name`, checked to hold its table's entry count within 5%
    (the count made is printed)."""
    rows, cols, nnz, lo, hi, opts = PAPER_SETS[name]
    X = synthetic(rows, cols, nnz, lo, hi, **opts)
    deg = np.diff(X.indptr)
    if not quiet:
        print(f"# {name}: made {X.shape[0]} x {X.shape[1]}, {X.nnz} entries (asked {nnz}), "
              f"row degree {deg.min()}-{deg.max()}, mean {deg.mean():.1f}", flush=True)
    if abs(X.nnz - nnz) > 0.05 * nnz:
        raise RuntimeError(f"{name}: {X.nnz} entries made, {nnz} asked")
    return X


def load_real(name, data_dir, cache_dir=None):
    if cache_dir and os.path.exists(os.path.join(cache_dir, name + ".npz")):
        return sp.load_npz(os.path.join(cache_dir, name + ".npz")).astype(np.float32).tocsr()
    return {"ratings": ratings, "bow": bag_of_words, "ngrams": ngrams}[name](data_dir)


if __name__ == "__main__":
    data_dir, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    for name in ("ratings", "bow", "ngrams"):
        m = load_real(name, data_dir)
        m.sort_indices()
        small = sp.csr_matrix((m.data.astype(np.float16), m.indices, m.indptr), shape=m.shape)
        sp.save_npz(os.path.join(out, name + ".npz"), small, compressed=True)
        deg = np.diff(m.indptr)
        print(f"{name}: {m.shape[0]} x {m.shape[1]}, {m.nnz} nnz, row degree {deg.min()}-{deg.max()}")
