"""Generated graphs the benchmarks share: Graph500-style R-MAT and uniform random graphs, as
Boolean scipy CSR adjacency matrices without self-loops."""
import numpy as np
import scipy.sparse as sp


def rmat(scale, edge_factor, seed=7):
    rng = np.random.default_rng(seed)
    n, m = 1 << scale, edge_factor << scale
    rows = np.zeros(m, dtype=np.int64)
    cols = np.zeros(m, dtype=np.int64)
    a, b, c = 0.57, 0.19, 0.19
    for bit in range(scale):
        u = rng.random(m)
        down = u >= a + b            # quadrants c, d: row bit set
        right = ((u >= a) & (u < a + b)) | (u >= a + b + c)
        rows |= down.astype(np.int64) << bit
        cols |= right.astype(np.int64) << bit
    perm = rng.permutation(n)
    A = sp.csr_matrix((np.ones(m, dtype=np.bool_), (perm[rows], perm[cols])), shape=(n, n))
    A.sum_duplicates()
    A.setdiag(False)
    A.eliminate_zeros()
    return A


def uniform(n, edges, seed=7):
    """A graph of about `edges` edges between n vertices chosen uniformly (Erdős–Rényi-like): no
    hubs, so M·M stays near edges²/n entries where R-MAT's hubs make it explode; it takes the
    benchmark to 10^7 edges."""
    rng = np.random.default_rng(seed)
    A = sp.csr_matrix((np.ones(edges, dtype=np.bool_), (rng.integers(0, n, edges), rng.integers(0, n, edges))),
                      shape=(n, n))
    A.sum_duplicates()
    A.setdiag(False)
    A.eliminate_zeros()
    return A
