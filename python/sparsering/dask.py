"""k nearest neighbours over several hosts on dask.distributed (as cuML's multi-node k-NN).

The index is cut into row blocks of about equal nonzeros (one a worker unless `parts` says
otherwise), each block stays on its worker, and the queries go to every block in batches; each
worker runs sparsering on its block (its GPU when it has one, else its cores) and returns its
local k nearest rows, which the client merges into the global k nearest: closest first, ties to
the smaller index, so the answer is the one-process answer, distances bit for bit (a pair's
distance depends only on its two rows).

    from dask.distributed import Client
    import sparsering.dask as srd
    client = Client("tcp://scheduler:8786")          # or Client(LocalCluster(...))
    dist, ind = srd.kneighbors(client, X, k=10, metric="cosine")
    G = srd.kneighbors_graph(client, X, 10, mode="distance", metric="cosine")

Start the cluster with `dask scheduler` on one host and `dask worker tcp://HOST:8786` on each
(README, "Several hosts"); docs/multi-host.md says what MPI/NCCL would change.
"""
import numpy as np
import scipy.sparse as sp

from ._core import InvalidArgumentError

__all__ = ["balanced_row_blocks", "kneighbors", "kneighbors_graph"]


def balanced_row_blocks(X, parts):
    """[(start, stop), ...]: at most `parts` consecutive row ranges of CSR X holding about
    X.nnz / parts entries each (a prefix sum of the row lengths cut at multiples of nnz / parts;
    the sddmm paper's nnz-balanced 1-D partition), none empty of rows."""
    X = sp.csr_matrix(X)
    n, parts = X.shape[0], max(1, min(int(parts), X.shape[0]))
    cuts = np.searchsorted(X.indptr, np.arange(1, parts) * (X.nnz / parts), side="left")
    bounds = np.unique(np.clip(np.concatenate(([0], cuts, [n])), 0, n))
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]


def _workers(client, wait=60.0):
    """The addresses of all the cluster's workers, waiting up to `wait` seconds for a first one
    when there are none (a LocalCluster still starting them, a nanny restarting one that died)."""
    def listed():
        try:
            info = client.scheduler_info(n_workers=-1)  # all of them (some versions list 5 by default)
        except TypeError:  # versions without n_workers list all
            info = client.scheduler_info()
        return list(info["workers"])
    workers = listed()
    if not workers:
        try:
            client.wait_for_workers(1, timeout=wait)
        except Exception as e:  # dask's TimeoutError
            raise RuntimeError(f"sparsering.dask: the cluster has no workers (waited {wait:g} s)") from e
        workers = listed()
    return workers


class _Block:
    """A row block of the index, kept on one worker: its rows, where they start in the index, and
    the sparsering Matrix made from them on first use there (not pickled; made again if moved)."""

    def __init__(self, rows, start):
        self.rows, self.start, self._matrix = rows, start, None

    def __getstate__(self):
        return {"rows": self.rows, "start": self.start}

    def __setstate__(self, state):
        self.__dict__.update(state, _matrix=None)

    def matrix(self, backend):
        import sparsering as sr
        if self._matrix is None or self._matrix[0] != backend:
            ctx = sr.Context(backend) if backend else sr.default_context()
            self._matrix = (backend, sr.Matrix(self.rows, context=ctx))
        return self._matrix[1]


def _block_knn(block, queries, k, metric, p, dtype, backend):
    """A worker's local k nearest rows of its block, as global row numbers."""
    import sparsering as sr
    X = block.matrix(backend)
    kk = min(k, X.shape[0])
    dist, ind = sr.kneighbors(X, queries, k=kk, metric=metric, p=p, dtype=dtype, output_type="numpy")
    return dist, ind + block.start


def _merge(results, k, largest):
    """The k best of the blocks' candidates for each query: closest (largest for inner_product)
    first, ties to the smaller index."""
    dist = np.concatenate([d for d, _ in results], axis=1)
    ind = np.concatenate([i for _, i in results], axis=1)
    order = np.lexsort((ind, -dist if largest else dist), axis=1)[:, :k]
    return np.take_along_axis(dist, order, 1), np.take_along_axis(ind, order, 1)


def kneighbors(client, index, queries=None, k=5, metric="euclidean", *, p=None, dtype=None, parts=None,
               batch_rows=65536, backend=None):
    """sparsering.kneighbors on a dask.distributed cluster: (distances, indices) of the k nearest
    rows of `index` (scipy sparse) to each row of `queries` (the index itself when None; each
    row then finds itself first). parts: row blocks (default: one a worker); batch_rows: queries
    sent at a time; backend: "cpu", "cuda" or None (each worker's default: its GPU when usable)."""
    index = sp.csr_matrix(index)
    queries = index if queries is None else sp.csr_matrix(queries)
    k = int(k)
    if not 1 <= k <= index.shape[0]:
        raise InvalidArgumentError(f"kneighbors: k = {k}, but the index has {index.shape[0]} rows (k must be 1..rows)")
    if queries.shape[1] != index.shape[1]:
        raise InvalidArgumentError(f"kneighbors: the queries have {queries.shape[1]} columns, the index {index.shape[1]}")
    workers = _workers(client)
    blocks = balanced_row_blocks(index, parts or len(workers))
    where = [workers[j % len(workers)] for j in range(len(blocks))]
    placed = [client.scatter(_Block(index[a:b], a), workers=[w], hash=False) for (a, b), w in zip(blocks, where)]
    batch_rows = max(1, int(batch_rows))
    dist = ind = None
    for q0 in range(0, queries.shape[0], batch_rows):
        batch = client.scatter(queries[q0:q0 + batch_rows], broadcast=True, hash=False)
        futures = [client.submit(_block_knn, blk, batch, k, metric, p, dtype, backend, workers=[w],
                                 allow_other_workers=False, pure=False) for blk, w in zip(placed, where)]
        d, i = _merge(client.gather(futures), k, metric == "inner_product")
        if dist is None:
            dist = np.empty((queries.shape[0], k), d.dtype)
            ind = np.empty((queries.shape[0], k), np.int64)
        dist[q0:q0 + d.shape[0]], ind[q0:q0 + d.shape[0]] = d, i
    return dist, ind


def kneighbors_graph(client, X, n_neighbors, mode="connectivity", metric="minkowski", p=2, include_self=False, *,
                     dtype=None, parts=None, batch_rows=65536, backend=None):
    """sparsering.kneighbors_graph on a dask.distributed cluster: the k-nearest-neighbour graph of
    X's rows as a scipy csr_matrix (1.0 for connectivity, the distance for mode="distance");
    include_self=False leaves each row out of its own list (its k + 1 nearest, less itself).
    symmetrize is not offered here: G.maximum(G.T) on the result gives it."""
    if mode not in ("connectivity", "distance"):
        raise ValueError(f'mode must be "connectivity" or "distance", not {mode!r}')
    X = sp.csr_matrix(X)
    n, k = X.shape[0], int(n_neighbors)
    extra = 0 if include_self else 1
    if not include_self and k >= n:
        raise InvalidArgumentError(f"kneighbors_graph: n_neighbors = {k}, but X has {n} rows (at most rows - 1 "
                                   "when each row is left out of its own list)")
    dist, ind = kneighbors(client, X, None, k + extra, metric, p=p if metric == "minkowski" else None, dtype=dtype,
                           parts=parts, batch_rows=batch_rows, backend=backend)
    if extra:  # drop each row itself, or the last when it is not among the k + 1
        own = ind == np.arange(n)[:, None]
        drop = np.where(own.any(1), own.argmax(1), k)
        keep = np.ones_like(own)
        keep[np.arange(n), drop] = False
        dist, ind = dist[keep].reshape(n, k), ind[keep].reshape(n, k)
    data = np.ones(n * k) if mode == "connectivity" else dist.ravel()
    G = sp.csr_matrix((data, ind.ravel(), np.arange(0, n * k + 1, k)), shape=(n, n))
    G.sort_indices()  # columns ascending in each row, as the one-process graph
    return G
