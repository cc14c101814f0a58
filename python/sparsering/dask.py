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

For data that does not fit on the client, RowMatrix keeps a matrix as row blocks on the workers
(made from shards each worker reads, a dask.array of scipy.sparse chunks, or a scipy matrix) and
answers k-NN and SpMV as dask arrays:

    R = srd.RowMatrix.from_shards(client, ["part0.npz", "part1.npz"])
    dist, ind = R.kneighbors(k=10, metric="cosine")    # dask arrays; .compute() gathers them

Start the cluster with `dask scheduler` on one host and `dask worker tcp://HOST:8786` on each
(README, "Several hosts"); docs/multi-host.md says what MPI/NCCL would change.
"""
import operator

import numpy as np
import scipy.sparse as sp

from ._core import InvalidArgumentError

__all__ = ["RowMatrix", "balanced_row_blocks", "kneighbors", "kneighbors_graph"]


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


# ------------------------------------------------------------------ a matrix as a collection of row blocks


def _read_shard(path, dtype):
    """A shard read on the worker that holds it: Matrix Market (sparsering's reader) or .npz."""
    import os

    import sparsering as sr
    path = os.fspath(path)
    if path.endswith(".npz"):
        rows = sp.load_npz(path).tocsr()
        return rows.astype(dtype) if dtype is not None else rows
    return sr.read_mm(path, dtype=dtype, context=sr.Context("cpu")).to_scipy()


def _shard_shape(path):
    """A shard's (rows, columns) from its header alone."""
    import os

    import scipy.io
    path = os.fspath(path)
    if path.endswith(".npz"):
        with np.load(path) as f:
            return tuple(int(x) for x in f["shape"])
    rows, cols = scipy.io.mminfo(path)[:2]
    return int(rows), int(cols)


def _read_block(path, dtype, start):
    return _Block(_read_shard(path, dtype), start)


def _block_dtype(block):
    return block.rows.dtype.str


def _as_block(rows, start):
    return _Block(sp.csr_matrix(rows), start)


def _block_spmv(block, x, semiring, backend):
    import sparsering as sr
    return sr.spmv(block.matrix(backend), x, semiring)


def _block_candidates(index_block, query_block, k, metric, p, dtype, backend):
    """The index block's k nearest rows (global numbers) to the query block's rows."""
    return _block_knn(index_block, query_block.rows, k, metric, p, dtype, backend)


def _merge_candidates(k, largest, *results):
    return _merge(list(results), k, largest)


def _block_radius(index_block, query_block, radius, mode, metric, p, dtype, backend):
    """The index block's rows within `radius` of the query block's rows (the block's own columns)."""
    from ._ops import _radius_matrix
    X = index_block.matrix(backend)
    return _radius_matrix(X, query_block.rows, radius, mode, metric, p, False, dtype, None, None).to_scipy()


def _join_columns(query_start, drop_self, *parts):
    """The query block's rows against every index block: the parts side by side in the index
    blocks' order (consecutive from row 0, so a part's columns land on its rows), each row's
    columns ascending, stored zeros kept; drop_self leaves out each row's own entry (only that one)."""
    R = sp.hstack(parts, format="csr")
    if drop_self:
        rows = R.shape[0]
        row_of = np.repeat(np.arange(rows), np.diff(R.indptr))
        keep = row_of + query_start != R.indices
        indptr = np.concatenate([[0], np.cumsum(np.bincount(row_of[keep], minlength=rows))])
        R = sp.csr_matrix((R.data[keep], R.indices[keep], indptr), shape=R.shape)
    return _Block(R, query_start)


def _block_mxm(a_block, semiring, b_starts, b_stops, backend, *b_blocks):
    """Row block i of A·B: ⊕ over B's blocks j of A_i's columns in j's rows times B_j."""
    import sparsering as sr
    A = a_block.rows
    C = None
    for lo, hi, bj in zip(b_starts, b_stops, b_blocks):
        part = A[:, lo:hi]
        if part.nnz == 0:
            continue
        P = sr.mxm(part, bj.rows, semiring)
        C = P if C is None else sr.ewise_add(C, P, semiring)
    if C is None:
        out_type = np.bool_ if semiring == "or_and" else np.result_type(A.dtype, b_blocks[0].rows.dtype if b_blocks else A.dtype)
        C = sp.csr_matrix((A.shape[0], b_blocks[0].rows.shape[1] if b_blocks else 0), dtype=out_type)
    return _Block(sp.csr_matrix(C), a_block.start)


def _block_sddmm(s_block, a_rows, B, alpha, beta, pattern, backend):
    import sparsering as sr
    C = sr.sddmm(s_block.matrix(backend), a_rows, B, alpha=alpha, beta=beta, pattern=pattern)
    return _Block(C.to_scipy() if hasattr(C, "to_scipy") else sp.csr_matrix(C), s_block.start)


def _pagerank_block(block):
    """A row block's transition part for PageRank: its rows' out-weights (float64) and its
    transpose (n x the block's rows), kept on the worker."""
    W = sp.csr_matrix(block.rows, dtype=np.float64)
    if W.nnz and (W.data.min() < 0 or np.isnan(W.data).any()):
        raise InvalidArgumentError("pagerank: a negative or NaN edge weight (PageRank needs weights >= 0)")
    out = np.asarray(W.sum(axis=1)).ravel()
    return _Block(W.T.tocsr(), block.start), out


def _pagerank_partial(part, r, backend):
    """This block's share of Aᵀ·(r / out-weight) and its dangling rows' rank."""
    import sparsering as sr
    WT, out = part
    mine = r[WT.start:WT.start + out.size]
    x = np.divide(mine, out, out=np.zeros_like(mine), where=out > 0)
    return sr.spmv(WT.matrix(backend), x), float(mine[out == 0].sum())


def _pagerank_step(r, damping, n, *partials):
    """The next ranks (networkx's iteration) and Σ|r_new - r|."""
    y = np.sum([p[0] for p in partials], axis=0) if partials else np.zeros(n)
    dangling = sum(p[1] for p in partials)
    new = damping * y + (damping * dangling + (1.0 - damping)) / n
    return new, float(np.abs(new - r).sum())


def _closure_step(closed, found):
    """(the pairs of `found` that `closed` lacks, closed ∪ them, how many): one semi-naive round
    on a row block (bool blocks, the same rows)."""
    import sparsering as sr
    fresh = sp.csr_matrix(sr.ewise_add(found.rows, found.rows, "or_and", mask=closed.rows, complement=True), dtype=bool)
    union = sp.csr_matrix(sr.ewise_add(closed.rows, fresh, "or_and"), dtype=bool)
    return _Block(fresh, found.start), _Block(union, found.start), int(fresh.nnz)


def _as_bool(block):
    return _Block(sp.csr_matrix(block.rows, dtype=bool), block.start)


class RowMatrix:
    """A sparse matrix as row blocks that live on the workers of a dask.distributed cluster, each
    a scipy CSR block that becomes a sparsering Matrix on its worker (its GPU when it has one)
    at first use and stays there. The client holds only the blocks' futures, shapes and first
    rows: build one from shards each worker reads itself (`from_shards`), from a dask.array of
    scipy.sparse chunks (`from_dask_array`) or, for small data, from a scipy matrix
    (`from_scipy`). Results come back as dask arrays (`.compute()` brings them to the client)."""

    def __init__(self, client, blocks, starts, shape, dtype):
        self.client, self.blocks, self.starts = client, list(blocks), list(starts)
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)

    @property
    def nblocks(self):
        return len(self.blocks)

    def __repr__(self):
        return (f"<sparsering.dask.RowMatrix {self.shape[0]}x{self.shape[1]} {self.dtype}, "
                f"{self.nblocks} row blocks>")

    # constructors
    @classmethod
    def from_scipy(cls, client, X, parts=None):
        """Row blocks of about equal nonzeros (one a worker unless `parts` says), scattered from
        the client: for data that fits on it."""
        X = sp.csr_matrix(X)
        workers = _workers(client)
        cuts = balanced_row_blocks(X, parts or len(workers)) if X.shape[0] else []
        blocks = [client.scatter(_Block(X[a:b], a), workers=[workers[j % len(workers)]], hash=False)
                  for j, (a, b) in enumerate(cuts)]
        return cls(client, blocks, [a for a, _ in cuts], X.shape, X.dtype)

    @classmethod
    def from_shards(cls, client, paths, dtype=None):
        """One row block a shard, in the order given (Matrix Market .mtx[.gz] or scipy .npz), each
        read by the worker it is given to: the client never loads them (it reads their headers
        for the shapes). A block is one task from its file, so a worker lost later has its blocks
        read again by the others. All shards must have the same columns."""
        workers = _workers(client)
        shapes = client.gather([client.submit(_shard_shape, path, pure=False) for path in paths])
        cols = {c for _, c in shapes}
        if len(cols) > 1:
            raise InvalidArgumentError(f"RowMatrix.from_shards: the shards have different columns: {sorted(cols)}")
        starts = np.concatenate([[0], np.cumsum([r for r, _ in shapes])]).astype(int)
        blocks = [client.submit(_read_block, path, dtype, int(a), workers=[workers[j % len(workers)]],
                                allow_other_workers=True, pure=False)
                  for j, (path, a) in enumerate(zip(paths, starts[:-1]))]
        first = client.submit(_block_dtype, blocks[0]).result() if blocks else np.float64
        return cls(client, blocks, starts[:-1], (int(starts[-1]), cols.pop() if cols else 0), np.dtype(first))

    @classmethod
    def from_dask_array(cls, client, array):
        """From a 2-D dask.array whose chunks are scipy.sparse matrices, one chunk across the
        columns (rechunk it so first): a block a chunk of rows, computed where the cluster puts it."""
        if len(array.chunks[1]) != 1:
            raise InvalidArgumentError("RowMatrix.from_dask_array: the array must have one chunk across its columns "
                                       f"(it has {len(array.chunks[1])}); rechunk it so first")
        import dask
        starts = np.concatenate([[0], np.cumsum(array.chunks[0])]).astype(int)
        # each block one graph from the array's own tasks: a lost worker's blocks are computed again
        blocks = client.compute([dask.delayed(_as_block)(d, int(a))
                                 for d, a in zip(array.to_delayed().ravel(), starts[:-1])])
        return cls(client, blocks, starts[:-1], array.shape, array.dtype)

    # results
    def to_scipy(self):
        """The whole matrix on the client (small data; tests)."""
        if not self.blocks:
            return sp.csr_matrix(self.shape, dtype=self.dtype)
        return sp.vstack([b.rows for b in self.client.gather(self.blocks)], format="csr")

    def _stops(self):
        """Each block's end row (the next block's first)."""
        return [int(x) for x in self.starts[1:]] + [self.shape[0]]

    def _rows(self):
        return [b - int(a) for a, b in zip(self.starts, self._stops())]

    def spmv(self, x, semiring="plus_times", *, backend=None):
        """y = self ⊕.⊗ x: x (numpy, the columns' length) sent once to every worker, each block's
        rows of y computed where the block lives; a dask array of the rows' length."""
        import dask.array as da
        x = np.asarray(x)
        if x.shape != (self.shape[1],):
            raise InvalidArgumentError(f"RowMatrix.spmv: x has shape {x.shape}, the matrix {self.shape[1]} columns")
        xf = self.client.scatter(x, broadcast=True, hash=False)
        parts = [self.client.submit(_block_spmv, b, xf, semiring, backend, pure=False) for b in self.blocks]
        out_type = np.result_type(self.dtype, x.dtype) if semiring != "or_and" else np.bool_
        return da.concatenate([da.from_delayed(f, shape=(int(r),), dtype=out_type)
                               for f, r in zip(parts, self._rows())]) if parts else da.zeros(0, dtype=out_type)

    def kneighbors(self, queries=None, k=5, metric="euclidean", *, p=None, dtype=None, backend=None):
        """The k nearest rows of this matrix to each row of `queries` (a RowMatrix; this matrix
        when None, each row then finds itself first): every query block against every index
        block on the index block's worker, the candidates merged on a worker (closest first, ties
        to the smaller index: the one-process answer, distances bit for bit). Returns (distances,
        indices) as dask arrays of the queries' rows × k."""
        import dask.array as da
        queries = self if queries is None else queries
        k = int(k)
        if not 1 <= k <= self.shape[0]:
            raise InvalidArgumentError(f"kneighbors: k = {k}, but the index has {self.shape[0]} rows (k must be 1..rows)")
        if queries.shape[1] != self.shape[1]:
            raise InvalidArgumentError(f"kneighbors: the queries have {queries.shape[1]} columns, the index {self.shape[1]}")
        largest = metric == "inner_product"
        kind = np.dtype(dtype) if dtype is not None else np.dtype(np.float32 if self.dtype == np.float32 else np.float64)
        dists, inds = [], []
        for qb, rows in zip(queries.blocks, queries._rows()):
            cands = [self.client.submit(_block_candidates, ib, qb, k, metric, p, dtype, backend, pure=False)
                     for ib in self.blocks]
            merged = self.client.submit(_merge_candidates, k, largest, *cands, pure=False)
            dists.append(da.from_delayed(self.client.submit(operator.getitem, merged, 0), shape=(int(rows), k),
                                         dtype=kind))
            inds.append(da.from_delayed(self.client.submit(operator.getitem, merged, 1), shape=(int(rows), k),
                                        dtype=np.int64))
        if not dists:
            return da.zeros((0, k)), da.zeros((0, k), dtype=np.int64)
        return da.concatenate(dists), da.concatenate(inds)

    def radius_neighbors_graph(self, radius, queries=None, mode="connectivity", metric="euclidean", *, p=None,
                               include_self=False, dtype=None, backend=None):
        """Every pair of rows within `radius`: this matrix against itself (each row's own entry left
        out unless include_self), or each row of `queries` (a RowMatrix) against this one. Each
        query block against each index block on the index block's worker, the parts joined on a
        worker; the result is a RowMatrix of the queries' row blocks (1.0 or the distance a pair)."""
        if mode not in ("connectivity", "distance"):
            raise ValueError(f'mode must be "connectivity" or "distance", not {mode!r}')
        own = queries is None
        queries = self if own else queries
        if queries.shape[1] != self.shape[1]:
            raise InvalidArgumentError(f"radius_neighbors_graph: the queries have {queries.shape[1]} columns, "
                                       f"the index {self.shape[1]}")
        blocks = []
        for qb, start in zip(queries.blocks, queries.starts):
            parts = [self.client.submit(_block_radius, ib, qb, radius, mode, metric, p, dtype, backend, pure=False)
                     for ib in self.blocks]
            blocks.append(self.client.submit(_join_columns, int(start), own and not include_self, *parts, pure=False))
        kind = np.float64 if mode == "connectivity" or (dtype is None and self.dtype != np.float32) else np.float32
        return RowMatrix(self.client, blocks, queries.starts, (queries.shape[0], self.shape[0]),
                         np.dtype(dtype) if dtype is not None and mode == "distance" else kind)

    def mxm(self, B, semiring="plus_times", *, backend=None):
        """C = self ⊕.⊗ B for B a RowMatrix: row block i of C on block i's worker, from the blocks
        of B whose rows its columns name (fetched there); C comes back as a RowMatrix of the same
        row blocks."""
        if B.shape[0] != self.shape[1]:
            raise InvalidArgumentError(f"mxm: A is {self.shape[0]} x {self.shape[1]} but B is {B.shape[0]} x {B.shape[1]}")
        blocks = [self.client.submit(_block_mxm, ab, semiring, [int(x) for x in B.starts], B._stops(), backend,
                                     *B.blocks, pure=False) for ab in self.blocks]
        out = np.dtype(np.bool_) if semiring == "or_and" else np.result_type(self.dtype, B.dtype)
        return RowMatrix(self.client, blocks, self.starts, (self.shape[0], B.shape[1]), out)

    def sddmm(self, A, B, *, alpha=1.0, beta=0.0, pattern=False, backend=None):
        """The sampled product at this matrix's entries (sparsering.sddmm): A's rows (numpy,
        rows × K) go to the workers of the blocks that sample them, B (columns × K) to every
        worker once; the result keeps these row blocks (a RowMatrix)."""
        A, B = np.asarray(A), np.asarray(B)
        if A.shape[0] != self.shape[0] or B.shape[0] != self.shape[1] or A.shape[1] != B.shape[1]:
            raise InvalidArgumentError(f"sddmm: S is {self.shape[0]} x {self.shape[1]}, A {A.shape}, B {B.shape}")
        Bf = self.client.scatter(B, broadcast=True, hash=False)
        who = self.client.who_has(self.blocks)
        blocks = []
        for blk, a, b in zip(self.blocks, self.starts, self._stops()):
            holders = list(who.get(blk.key, ()))
            rows = self.client.scatter(A[a:b], workers=holders or None, hash=False)
            blocks.append(self.client.submit(_block_sddmm, blk, rows, Bf, alpha, beta, pattern, backend, pure=False))
        return RowMatrix(self.client, blocks, self.starts, self.shape, np.result_type(A.dtype, B.dtype))

    def pagerank(self, damping=0.85, *, tol=1e-6, max_iter=100, backend=None):
        """PageRank of the graph this square matrix holds (row i's entries: the edges out of i,
        weights >= 0), networkx's iteration as sparsering.pagerank: from 1/n until
        Σ|r_new − r| <= n·tol. Each worker multiplies its block's transpose by its rows' share of
        the ranks; the shares are summed on a worker and the new ranks sent back, one exchange a
        step; the client sees only each step's change. Returns (ranks as numpy, iterations)."""
        n = self.shape[0]
        if self.shape[0] != self.shape[1]:
            raise InvalidArgumentError(f"pagerank: the matrix is {self.shape[0]} x {self.shape[1]}, not square")
        if n == 0:
            return np.zeros(0), 0
        parts = [self.client.submit(_pagerank_block, b, pure=False) for b in self.blocks]
        r = self.client.scatter(np.full(n, 1.0 / n), broadcast=True, hash=False)
        it = 0
        for it in range(1, int(max_iter) + 1):
            partials = [self.client.submit(_pagerank_partial, part, r, backend, pure=False) for part in parts]
            step = self.client.submit(_pagerank_step, r, float(damping), n, *partials, pure=False)
            r = self.client.submit(operator.getitem, step, 0, pure=False)
            change = self.client.submit(operator.getitem, step, 1, pure=False).result()
            if change <= n * tol:
                break
        return r.result(), it

    def transitive_closure(self, *, max_rounds=None, backend=None):
        """Every pair (i, j) joined by a path of one or more edges of this square matrix's pattern,
        by distributed semi-naive rounds: the pairs new last round times the edges (mxm on the
        workers), less the pairs known (each row block on its worker), until a round finds none;
        the client sees one count a round. Returns a bool RowMatrix of the same row blocks."""
        if self.shape[0] != self.shape[1]:
            raise InvalidArgumentError(f"transitive_closure: the matrix is {self.shape[0]} x {self.shape[1]}, not square")
        edges = RowMatrix(self.client, [self.client.submit(_as_bool, b, pure=False) for b in self.blocks],
                          self.starts, self.shape, np.bool_)
        closed, fresh = edges, edges
        rounds = 0
        while max_rounds is None or rounds < max_rounds:
            rounds += 1
            found = fresh.mxm(edges, "or_and", backend=backend)
            steps = [self.client.submit(_closure_step, c, f, pure=False) for c, f in zip(closed.blocks, found.blocks)]
            fresh = RowMatrix(self.client, [self.client.submit(operator.getitem, s, 0, pure=False) for s in steps],
                              self.starts, self.shape, np.bool_)
            closed = RowMatrix(self.client, [self.client.submit(operator.getitem, s, 1, pure=False) for s in steps],
                               self.starts, self.shape, np.bool_)
            if sum(self.client.gather([self.client.submit(operator.getitem, s, 2, pure=False) for s in steps])) == 0:
                break
        return closed
