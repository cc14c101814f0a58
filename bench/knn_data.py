"""Data sets for the k-NN benchmark, as scipy CSR float32 matrices.

Real sets (../shared/data; see its README for provenance):
  ratings   MovieLens latest-small: users x movies, the rating as value
  bow       PyPI one-line summaries as word counts (tokens [a-z0-9]+, lower-cased)
  ngrams    PyPI package names as character 3-gram counts of " name " (lower-cased)
Generated at the papers' scale (PERFORMANCE.md, "Paper-scale k-NN"): power-law row degrees
clipped to [min, max], Zipf-like column popularity, values 1..5, a fixed seed.

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


def synthetic(nrows, ncols, nnz, min_degree, max_degree, seed=7):
    """Power-law row degrees clipped to [min, max] scaled to about nnz entries; columns drawn from
    a Zipf-like popularity (exponent 1); distinct columns per row."""
    rng = np.random.default_rng(seed)
    deg = rng.pareto(1.2, nrows) + 1.0
    deg = deg / deg.mean() * (nnz / nrows)
    deg = np.clip(np.rint(deg), min_degree, max_degree).astype(np.int64)
    weights = 1.0 / np.arange(1, ncols + 1)
    cdf = np.cumsum(weights) / weights.sum()
    perm = rng.permutation(ncols).astype(np.int32)  # popular columns spread over the range
    indptr = np.concatenate([[0], np.cumsum(deg)])
    cols = perm[np.minimum(np.searchsorted(cdf, rng.random(indptr[-1])), ncols - 1)]
    rows = np.repeat(np.arange(nrows), deg)
    m = sp.csr_matrix((rng.integers(1, 6, indptr[-1]).astype(np.float32), (rows, cols)), shape=(nrows, ncols))
    m.sum_duplicates()
    m.data = np.minimum(m.data, 5).astype(np.float32)  # repeats merge; keep values 1..5
    return m


PAPER_SETS = {  # name: (rows, cols, nnz, min degree, max degree), PERFORMANCE.md
    "movielens-large-like": (283_000, 194_000, 27_000_000, 0, 24_000),
    "sec-edgar-like": (663_000, 858_000, 4_000_000, 0, 51),
    "scrna-like": (66_000, 26_000, 120_000_000, 501, 9_600),
    "nytimes-like": (300_000, 102_000, 61_000_000, 0, 2_000),
}


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
