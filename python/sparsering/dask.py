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
import collections
import operator

import numpy as np
import scipy.sparse as sp

from ._core import InvalidArgumentError

__all__ = ["RowMatrix", "balanced_row_blocks", "kneighbors", "kneighbors_graph"]


def balanced_row_blocks(X, parts):
    """[(start, stop), ...]: at most `parts` consecutive row ranges of CSR X holding about
    X.nnz / parts entries each (the sddmm paper's nnz-balanced 1-D partition), none empty of rows."""
    return _balanced_ranges(sp.csr_matrix(X).indptr, parts)


def _balanced_ranges(prefix, parts):
    """At most `parts` consecutive ranges of the len(prefix) - 1 items whose running total is
    `prefix` (prefix[0] = 0), about prefix[-1] / parts each: the prefix cut at its multiples."""
    n = len(prefix) - 1
    parts = max(1, min(int(parts), n))
    cuts = np.searchsorted(prefix, np.arange(1, parts) * (prefix[-1] / parts), side="left")
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


_CONTEXTS = {}  # a worker's contexts by backend, made once: a CUDA context costs milliseconds
GPU_RESOURCE = "GPU"  # the worker resource that backend="per_worker" reads


def _worker_backend():
    """backend="per_worker" on this worker: "cuda" where the worker declares a GPU resource
    (`dask worker --resources GPU=1`, or resources={"GPU": 1} in a cluster's worker spec), "cpu"
    elsewhere; None (the default context) outside a worker."""
    try:
        from distributed import get_worker
        worker = get_worker()
    except (ImportError, ValueError):
        return None
    state = getattr(worker, "state", worker)
    resources = getattr(state, "total_resources", None) or getattr(worker, "total_resources", None) or {}
    return "cuda" if resources.get(GPU_RESOURCE, 0) > 0 else "cpu"


def _resolved(backend):
    return _worker_backend() if backend == "per_worker" else backend


def _context(backend):
    """This process's context for `backend` ("cpu", "cuda", "per_worker": by the worker's
    resources, or None: the default context)."""
    import sparsering as sr
    asked, backend = backend, _resolved(backend)
    if not backend:
        return sr.default_context()
    if backend not in _CONTEXTS:
        try:
            _CONTEXTS[backend] = sr.Context(backend)
        except sr.NoDeviceError as e:
            if asked != "per_worker":
                raise
            from distributed import get_worker
            raise sr.NoDeviceError(f"worker {get_worker().address} declares a {GPU_RESOURCE} resource, so "
                                   f'backend="per_worker" runs its blocks on CUDA, but no CUDA context can be made '
                                   f"there: {e}") from e
    return _CONTEXTS[backend]


class _Block:
    """A row block of the index, kept on one worker: its rows, where they start in the index, and
    the sparsering Matrix made from them on first use there (not pickled; made again if moved)."""

    def __init__(self, rows, start, numbers=None):
        # numbers: each row's number in the index where they do not run on from start (a group of
        # blocks that are not neighbours: _index_group)
        self.rows, self.start, self.numbers, self._matrix = rows, start, numbers, None

    def __getstate__(self):
        return {"rows": self.rows, "start": self.start, "numbers": self.numbers}

    def __setstate__(self, state):
        self.__dict__.update(state, _matrix=None)

    def matrix(self, backend):
        import sparsering as sr
        ctx = _context(backend)
        if self._matrix is None or self._matrix[0] is not ctx:
            self._matrix = (ctx, sr.Matrix(self.rows, context=ctx))
        return self._matrix[1]

    def numbered(self, local):
        """The index's numbers of local row numbers (an array of them)."""
        return local + self.start if self.numbers is None else self.numbers[local]


def _index_group(*blocks):
    """A worker's index blocks (in the index's order) as one, searched by one call instead of one
    call a block: the library's call has a fixed cost (a GPU's above all: the queries' copy to the
    device, the plan, the launches) that many small blocks pay again and again. Its rows are a
    copy, made where the blocks are, for the one search that asks for it."""
    if len(blocks) == 1:
        return blocks[0]
    rows = sp.vstack([b.rows for b in blocks], format="csr")
    runs_on = all(b.start + b.rows.shape[0] == c.start for b, c in zip(blocks, blocks[1:]))
    numbers = None if runs_on else np.concatenate([b.numbered(np.arange(b.rows.shape[0])) for b in blocks])
    return _Block(rows, blocks[0].start, numbers)


def _block_backend(block):
    """The backend of the sparsering Matrix a block was last used as ("cpu", "cuda"), or None."""
    return None if block._matrix is None else block._matrix[0].backend


try:  # dask's memory accounting (spilling, the active memory manager) sees a block's real size
    from dask.sizeof import sizeof as _sizeof

    @_sizeof.register(_Block)
    def _block_bytes(block):
        # the rows, and about as much again for the sparsering Matrix made from them where used
        return _sizeof(block.rows) * (1 if block._matrix is None else 2)
except ImportError:  # pragma: no cover (sparsering.dask is used with dask)
    pass


def _block_knn(block, queries, k, metric, p, dtype, backend):
    """A worker's local k nearest rows of its block, as global row numbers."""
    import sparsering as sr
    X = block.matrix(backend)
    kk = min(k, X.shape[0])
    dist, ind = sr.kneighbors(X, queries, k=kk, metric=metric, p=p, dtype=dtype, output_type="numpy")
    return dist, block.numbered(ind)


def _keeps_largest(metric):
    """Whether k-NN keeps the largest values: the inner product, and a user Metric made as a similarity."""
    return metric == "inner_product" or bool(getattr(metric, "similarity", False))


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
        d, i = _merge(client.gather(futures), k, _keeps_largest(metric))
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
    return _graph_rows((dist, ind), 0, n, k, mode, bool(extra))


def _graph_rows(answer, start, n, k, mode, drop_self):
    """Rows start.. of a k-NN graph over n columns from their (distances, indices): 1.0 or the
    distance a neighbour, columns ascending in each row, as the one-process graph; drop_self:
    the answer holds k + 1 a row, and each row itself is left out, or the nearest when equal rows
    of smaller index pushed it out (as sr_knn_graph and scikit-learn do)."""
    dist, ind = answer
    rows = ind.shape[0]
    if drop_self:
        own = ind == np.arange(start, start + rows)[:, None]
        drop = np.where(own.any(1), own.argmax(1), 0)
        keep = np.ones_like(own)
        keep[np.arange(rows), drop] = False
        dist, ind = dist[keep].reshape(rows, k), ind[keep].reshape(rows, k)
    data = np.ones(rows * k) if mode == "connectivity" else dist.ravel()
    G = sp.csr_matrix((data, ind.ravel(), np.arange(0, rows * k + 1, k)), shape=(rows, n))
    G.sort_indices()
    return G


def _graph_dtype(mode, dtype, data_dtype):
    """A neighbour graph's value type: float64 for connectivity, else the distances' (dtype when
    asked, float32 for float32 data, float64 otherwise)."""
    if mode == "connectivity":
        return np.dtype(np.float64)
    return np.dtype(dtype) if dtype is not None else np.dtype(np.float32 if data_dtype == np.float32 else np.float64)


def _graph_block(answer, start, n, k, mode, drop_self):
    return _Block(_graph_rows(answer, start, n, k, mode, drop_self), start)


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


def _block_spmm(block, B, semiring, backend):
    import sparsering as sr
    return sr.spmm(block.matrix(backend), B, semiring)


def _reach_partial(block, frontier, backend):
    """The block's share of a BFS step: the frontier's columns in the block's rows times the
    block (or.and), or None where the frontier has none there."""
    import sparsering as sr
    F = frontier[:, block.start:block.start + block.rows.shape[0]]
    if F.nnz == 0:
        return None
    return sp.csr_matrix(sr.mxm(sp.csr_matrix(F, dtype=bool), sp.csr_matrix(block.rows, dtype=bool), "or_and",
                                context=_context(backend)))


def _reach_step(visited, *partials):
    """(visited, the new frontier, its size) from the blocks' shares: the vertices reached now
    and not before."""
    parts = [q for q in partials if q is not None]
    if not parts:
        return visited, sp.csr_matrix(visited.shape, dtype=bool), 0
    reached = parts[0]
    for q in parts[1:]:
        reached = reached + q  # or, on bools
    new = sp.csr_matrix(reached > visited, dtype=bool)
    return sp.csr_matrix(visited + new, dtype=bool), new, int(new.nnz)


def _block_candidates(index_block, query_block, k, metric, p, dtype, backend):
    """The index block's k nearest rows (global numbers) to the query block's rows."""
    return _block_knn(index_block, query_block.rows, k, metric, p, dtype, backend)


def _piece(block, lo, hi):
    """Rows [lo, hi) of a block, numbered as in the whole matrix (the block itself when that is
    all of it: no copy)."""
    if lo == 0 and hi == block.rows.shape[0]:
        return block
    return _Block(block.rows[lo:hi], block.start + lo)


def _query_copy(block, lo, hi, after=None):
    """Rows [lo, hi) of a query block as a key of its own (the same object where the block
    lives when they are all of it), made once `after` (an earlier piece's answer) is done:
    RowMatrix._each_query_block."""
    return _piece(block, lo, hi)


def _row_lengths(block):
    """The entries of each of a block's rows (int64)."""
    return np.diff(block.rows.indptr).astype(np.int64)


def _row_products(a_block, b_lengths):
    """Each row of a block of A's products against B: the sum of B's row lengths over its columns."""
    rows = a_block.rows
    running = np.concatenate([[0], np.cumsum(b_lengths[rows.indices], dtype=np.int64)])
    return running[rows.indptr[1:]] - running[rows.indptr[:-1]]


def _sizeof_block(block):
    """The bytes dask counts for a block as a worker holds it (its rows, and its Matrix when made)."""
    from dask.sizeof import sizeof
    return int(sizeof(block))


def _limit_bytes(memory_limit):
    """A memory_limit in bytes (an int, or a string such as "2GB")."""
    from dask.utils import parse_bytes
    return parse_bytes(memory_limit) if isinstance(memory_limit, str) else int(memory_limit)


def _hold(held, home, workers, size):
    """Counts `size` bytes on each worker that holds it (home: a block's workers; none known: the
    first worker): a block on several workers is held by each."""
    for w in home or workers[:1]:
        held[w] += size


def _cut_by_cost(cost, room):
    """[(lo, hi)] consecutive ranges of rows whose costs add up to at most `room` each (each row's
    cost at most room), as few as that allows ([(0, 0)] for no rows)."""
    if len(cost) == 0:
        return [(0, 0)]
    total = np.cumsum(cost, dtype=np.float64)
    cuts, lo = [], 0
    while lo < len(cost):
        base = total[lo - 1] if lo else 0.0
        hi = int(np.searchsorted(total, base + room, side="right"))
        hi = max(hi, lo + 1)
        cuts.append((lo, hi))
        lo = hi
    return cuts


def _block_nbytes(block):
    """The bytes dask counts for a block's rows (dask.sizeof, as the workers' memory accounting)."""
    from dask.sizeof import sizeof
    return int(sizeof(block.rows))


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


def _used_columns(a_block, lo, hi, after=None):
    """The columns rows [lo, hi) of a row block of A use (sorted), once `after` (an earlier
    block's product) is done: RowMatrix.mxm."""
    return np.unique(_piece(a_block, lo, hi).rows.indices)


def _needed_rows(b_block, used):
    """B_j with only the rows that A_i's columns (`used`) name (the others empty): what A_i's
    product reads of it, and all that travels to A_i's worker."""
    rows = b_block.rows
    lo, hi = b_block.start, b_block.start + rows.shape[0]
    keep = np.zeros(hi - lo, dtype=bool)
    keep[used[(used >= lo) & (used < hi)] - lo] = True
    if keep.all():
        return b_block
    lengths = np.diff(rows.indptr)
    mask = np.repeat(keep, lengths)
    indptr = np.concatenate([[0], np.cumsum(lengths * keep)])
    return _Block(sp.csr_matrix((rows.data[mask], rows.indices[mask], indptr), shape=rows.shape), lo)


def _block_mxm(a_block, semiring, backend, *b_blocks, rows=None):
    """Row block i of A·B (its rows [lo, hi) when `rows` says): A_i times B's blocks stacked (each
    B_j with at least the rows A_i names, the others empty) in one product, so each row of C is
    summed in the order the one-process call sums it: the same bits, and no sum over the growing C
    a block of B."""
    import sparsering as sr
    if rows is not None:
        a_block = _piece(a_block, *rows)
    A, ctx = a_block.rows, _context(backend)
    out_type = np.bool_ if semiring == "or_and" else np.result_type(A.dtype, b_blocks[0].rows.dtype if b_blocks else A.dtype)
    if not b_blocks or A.nnz == 0:
        return _Block(sp.csr_matrix((A.shape[0], b_blocks[0].rows.shape[1] if b_blocks else 0), dtype=out_type),
                      a_block.start)
    B = sp.vstack([bj.rows for bj in b_blocks], format="csr") if len(b_blocks) > 1 else b_blocks[0].rows
    return _Block(sp.csr_matrix(sr.mxm(A, B, semiring, context=ctx)), a_block.start)


def _block_sddmm(s_block, a_rows, B, alpha, beta, pattern, backend):
    import sparsering as sr
    C = sr.sddmm(s_block.matrix(backend), a_rows, B, alpha=alpha, beta=beta, pattern=pattern)
    return _Block(C.to_scipy() if hasattr(C, "to_scipy") else sp.csr_matrix(C), s_block.start)


def _out_weights(block):
    """A row block's out-weights (its rows' sums, float64), its weights checked to be >= 0, and
    which of its rows have out-edges (stored entries, whatever their weights)."""
    W = sp.csr_matrix(block.rows, dtype=np.float64)
    if W.nnz and (W.data.min() < 0 or np.isnan(W.data).any()):
        raise InvalidArgumentError("pagerank: a negative or NaN edge weight (PageRank needs weights >= 0)")
    return np.asarray(W.sum(axis=1)).ravel(), np.diff(W.indptr) > 0


def _out_parts(*parts):
    """The blocks' out-weights and has-out-edges flags, each whole."""
    return _concat(*[w for w, _ in parts]), _concat(*[h for _, h in parts])


def _concat(*arrays):
    return np.concatenate(arrays) if arrays else np.zeros(0)


def _pagerank_prep(block, out):
    """A row block of the transpose (its vertices' in-edges) in float64, kept on the worker, its
    columns numbered among the vertices with out-edges only (no in-edge comes from another: x is
    pulled for them alone, half the vertices of an R-MAT graph; in order, so each row's sum runs
    as before); with its vertices' inverse out-weights (0 for a vertex without out-weight), those
    dangling ones, and those with out-edges."""
    weights, has_out = out
    rows = block.rows.shape[0]
    mine = weights[block.start:block.start + rows]
    inv = np.divide(1.0, mine, out=np.zeros(rows), where=mine > 0)
    sources = np.flatnonzero(has_out[block.start:block.start + rows])
    T = sp.csr_matrix(block.rows, dtype=np.float64)
    place = np.cumsum(has_out) - 1  # a vertex's number among those with out-edges
    T = sp.csr_matrix((T.data, place[T.indices].astype(T.indices.dtype), T.indptr), shape=(rows, int(has_out.sum())))
    return _Block(T, block.start), sources, inv[sources], np.flatnonzero(mine == 0)


def _rank_state(prep, r, change):
    """A block's state: ((x = r / out-weight over its vertices with out-edges, the rank of its
    dangling vertices, Σ|r − r before|): the part every block pulls, r)."""
    _, sources, inv, dangling = prep
    return (r[sources] * inv, float(r[dangling].sum()), change), r


def _pagerank_start(prep, n):
    return _rank_state(prep, np.full(prep[0].rows.shape[0], 1.0 / n), 0.0)


def _pagerank_pull(prep, state, damping, n, backend, *pulled):
    """The next state of a block (networkx's iteration): its vertices' ranks from their in-edges
    and every block's x (pulled: no block's share of another block's vertices is ever summed),
    the dangling rank summed from the same pulled parts in block order (the same bits on every
    block, and no step waits on a total of the step before)."""
    import sparsering as sr
    y = sr.spmv(prep[0].matrix(backend), _concat(*[x for x, _, _ in pulled]))
    dangling = float(sum(d for _, d, _ in pulled))
    r = damping * y + (damping * dangling + (1.0 - damping)) / n
    return _rank_state(prep, r, float(np.abs(r - state[1]).sum()))


def _change(*pulled):
    """Σ of the blocks' changes in block order, from the parts the next step pulls anyway (every
    worker holds them all: no transfer of its own)."""
    return float(sum(c for _, _, c in pulled))


def _ranks(*states):
    return _concat(*[r for _, r in states])


def _closure_step(closed, found, backend=None):
    """(the pairs of `found` that `closed` lacks, closed ∪ them, how many): one semi-naive round
    on a row block (bool blocks, the same rows)."""
    import sparsering as sr
    ctx = _context(backend)
    fresh = sp.csr_matrix(sr.ewise_add(found.rows, found.rows, "or_and", mask=closed.rows, complement=True,
                                       context=ctx), dtype=bool)
    union = sp.csr_matrix(sr.ewise_add(closed.rows, fresh, "or_and", context=ctx), dtype=bool)
    return _Block(fresh, found.start), _Block(union, found.start), int(fresh.nnz)


def _as_bool(block):
    return _Block(sp.csr_matrix(block.rows, dtype=bool), block.start)


def _column_counts(block):
    return np.bincount(block.rows.indices, minlength=block.rows.shape[1])


def _sum_arrays(*parts):
    return np.sum(parts, axis=0)


def _transposed_pieces(block, cuts):
    """Block i's columns cut at `cuts`, each piece transposed: piece j holds columns cuts[j] as
    rows and block i's rows as columns."""
    T = block.rows.T.tocsr()
    return [T[a:b] for a, b in cuts]


# ALS-WR on row blocks (sparsering.factorize's algorithm, src/algorithms/factorize.c): each half
# sweep solves every row of one side from the other side's factors alone, so a block's rows are
# solved on its worker with the other factor sent there once; the same CG, step for step.

def _centered_block(block, mu, dtype):
    """The block with its ratings less mu (in dtype, as sparsering's S) and in float64 (the RMSE's)."""
    centered = block.rows.data.astype(np.float64) - mu
    S = sp.csr_matrix((centered.astype(dtype), block.rows.indices, block.rows.indptr), shape=block.rows.shape)
    return _Block(S, block.start), centered


def _as_part(block):
    """An item block as _als_half takes it (no RMSE values: the RMSE is the users' side's)."""
    return block, None


def _block_sum_count(block):
    return float(np.sum(block.rows.data, dtype=np.float64)), int(block.rows.nnz)


def _row_dot(x, y):
    """Σ_k x[i, k]·y[i, k] for each row, k in order (the C loop's sums, bit for bit)."""
    s = np.zeros(x.shape[0])
    for k in range(x.shape[1]):
        s += x[:, k] * y[:, k]
    return s


def _als_half(part, X, Y, lam, cg_steps, backend):
    """This block's rows of one side's factors (float64, rows × K) after cg_steps of CG from X,
    given the other side's factors Y (in the ratings' type): factorize.c's solve_side."""
    import sparsering as sr
    block, _ = part
    S = block.matrix(backend)
    t = Y.dtype
    count = np.diff(block.rows.indptr).astype(np.float64)
    weight = (lam * count)[:, None]

    def gram(P):
        q = sr.sddmm_spmm(S, np.ascontiguousarray(P, dtype=t), Y, Y, pattern=True).astype(np.float64)
        q += weight * P
        return q

    X = np.array(X, dtype=np.float64)
    b = sr.spmm(S, Y).astype(np.float64)
    q = gram(X)
    empty = count == 0
    X[empty] = 0.0
    r = np.where(empty[:, None], 0.0, b - q)
    p = r.copy()
    rs = _row_dot(r, r)
    for _ in range(int(cg_steps)):
        q = gram(p)
        pq = _row_dot(p, q)
        live = (pq > 0) & (rs > 0)
        alpha = (rs[live] / pq[live])[:, None]
        X[live] += alpha * p[live]
        r[live] -= alpha * q[live]
        nxt = _row_dot(r[live], r[live])
        p[live] = r[live] + (nxt / rs[live])[:, None] * p[live]
        rs[live] = nxt
    return X


def _factor_block(start, stop, K, seed):
    """Rows [start, stop) of sparsering.factorize's seeded item factors (its splitmix64 draw)."""
    with np.errstate(over="ignore"):
        z = np.uint64(seed) + np.uint64(0x9E3779B97F4A7C15) * np.arange(start * K + 1, stop * K + 1, dtype=np.uint64)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    u = (z >> np.uint64(11)).astype(np.float64) / 9007199254740992.0
    return ((u - 0.5) / np.sqrt(K)).reshape(stop - start, K)


def _concat_factor(dtype, *blocks):
    return np.ascontiguousarray(np.concatenate(blocks) if blocks else np.zeros((0, 0)), dtype=dtype)


def _squared_error(part, W, H, backend):
    """Σ over the block's ratings of (centered value − w_i·h_j)² (W: the block's rows)."""
    import sparsering as sr
    block, centered = part
    if block.rows.nnz == 0:
        return 0.0
    pred = sr.sddmm_values(block.matrix(backend), np.ascontiguousarray(W, dtype=H.dtype), H, pattern=True)
    return float(np.sum((centered - pred) ** 2))


def _total(*values):
    """Σ over the blocks' values, in block order (the same bits wherever they live)."""
    return float(sum(values))


class RowMatrix:
    """A sparse matrix as row blocks that live on the workers of a dask.distributed cluster, each
    a scipy CSR block that becomes a sparsering Matrix on its worker (its GPU when it has one)
    at first use and stays there. The client holds only the blocks' futures, shapes and first
    rows: build one from shards each worker reads itself (`from_shards`), from a dask.array of
    scipy.sparse chunks (`from_dask_array`) or, for small data, from a scipy matrix
    (`from_scipy`). Results come back as dask arrays (`.compute()` brings them to the client).

    Every operation takes backend=: None (each worker's default context: its GPU when it has
    one), "cpu", "cuda", or "per_worker" (CUDA on the workers that declare a GPU resource, the
    CPU on the others: a GPU worker beside CPU workers, docs/multi-host.md)."""

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
    def from_scipy(cls, client, X, parts=None, workers=None):
        """Row blocks of about equal nonzeros (one a worker unless `parts` says) sent from the
        client, for data that fits on it. Each block is a task that holds its rows (not scattered
        data), so the scheduler can build a block again when the worker that held it is lost.

        workers: the worker (an address, or a list of them) that holds each block, one entry a
        block (`parts` of them), instead of the blocks going round the workers: e.g. most blocks
        on a GPU worker and a few on CPU workers beside it, with backend="per_worker" in the calls
        (docs/multi-host.md). The operations run each block's work where the block is."""
        X = sp.csr_matrix(X)
        listed = _workers(client)
        parts = parts or (len(workers) if workers is not None else len(listed))
        cuts = balanced_row_blocks(X, parts) if X.shape[0] else []
        if workers is not None and len(workers) != len(cuts):
            raise InvalidArgumentError(f"RowMatrix.from_scipy: {len(workers)} workers for {len(cuts)} blocks (one "
                                       f"entry a block; {X.shape[0]} rows make at most {len(cuts)} blocks)")
        homes = ([[w] if isinstance(w, str) else list(w) for w in workers] if workers is not None
                 else [[listed[j % len(listed)]] for j in range(len(cuts))])
        blocks = [client.submit(_as_block, X[a:b], int(a), workers=home, allow_other_workers=True, pure=False)
                  for (a, b), home in zip(cuts, homes)]
        return cls(client, blocks, [a for a, _ in cuts], X.shape, X.dtype)

    @classmethod
    def from_shards(cls, client, paths, dtype=None, workers=None):
        """One row block a shard, in the order given (Matrix Market .mtx[.gz] or scipy .npz), each
        read by the worker it is given to: the client never loads them (it reads their headers
        for the shapes, on the same workers). A block is one task from its file, so a worker lost
        later has its blocks read again by the others. All shards must have the same columns.

        workers: by default the shards go round the workers and any worker may read any of them
        (shared storage). For shards on a host's own disk, workers[j] names the worker (its
        address, or a list of them, e.g. the workers of that host) that can read shard j: only
        those read it, and a shard whose workers are all lost cannot be read again."""
        listed = _workers(client)
        if workers is not None and len(workers) != len(paths):
            raise InvalidArgumentError(f"RowMatrix.from_shards: {len(workers)} workers for {len(paths)} shards "
                                       "(one entry a shard)")
        readers = ([[w] if isinstance(w, str) else list(w) for w in workers] if workers is not None
                   else [[listed[j % len(listed)]] for j in range(len(paths))])
        anywhere = workers is None
        shapes = client.gather([client.submit(_shard_shape, path, workers=r, allow_other_workers=anywhere, pure=False)
                                for path, r in zip(paths, readers)])
        cols = {c for _, c in shapes}
        if len(cols) > 1:
            raise InvalidArgumentError(f"RowMatrix.from_shards: the shards have different columns: {sorted(cols)}")
        starts = np.concatenate([[0], np.cumsum([r for r, _ in shapes])]).astype(int)
        blocks = [client.submit(_read_block, path, dtype, int(a), workers=r, allow_other_workers=anywhere, pure=False)
                  for path, a, r in zip(paths, starts[:-1], readers)]
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

    def spmm(self, B, semiring="plus_times", *, backend=None):
        """C = self ⊕.⊗ B for B dense (numpy, the columns × K): B sent once to every worker, each
        block's rows of C computed where the block lives; a dask array of the rows × K."""
        import dask.array as da
        B = np.asarray(B)
        if B.ndim != 2 or B.shape[0] != self.shape[1]:
            raise InvalidArgumentError(f"RowMatrix.spmm: B has shape {B.shape}, the matrix {self.shape[1]} columns")
        Bf = self.client.scatter(B, broadcast=True, hash=False)
        parts = [self.client.submit(_block_spmm, b, Bf, semiring, backend, pure=False) for b in self.blocks]
        out_type = np.result_type(self.dtype, B.dtype) if semiring != "or_and" else np.bool_
        return da.concatenate([da.from_delayed(f, shape=(int(r), B.shape[1]), dtype=out_type)
                               for f, r in zip(parts, self._rows())]) if parts else da.zeros((0, B.shape[1]),
                                                                                            dtype=out_type)

    def reachability(self, sources, *, backend=None):
        """sparsering.reachability on the graph this square matrix holds (row i's entries: the
        edges out of i): R (len(sources) x n, a bool csr_matrix), R[s, v] when v can be reached from
        sources[s], itself included. Breadth first, all sources at once: each step the frontier
        (sources × n, sparse) goes to every worker, each block multiplies its rows' part of it
        (or.and), the parts are or-ed on a worker; the client sees each step's count of new pairs."""
        n = self.shape[0]
        if self.shape[0] != self.shape[1]:
            raise InvalidArgumentError(f"reachability: the matrix is {self.shape[0]} x {self.shape[1]}, not square")
        sources = np.asarray(sources, dtype=np.int64).reshape(-1)
        if sources.size and (sources.min() < 0 or sources.max() >= n):
            raise InvalidArgumentError(f"reachability: sources must lie in 0..{n - 1}")
        start = sp.csr_matrix((np.ones(sources.size, dtype=bool), (np.arange(sources.size), sources)),
                              shape=(sources.size, n))
        visited = frontier = self.client.submit(sp.csr_matrix, start, pure=False)  # a task: it has lineage
        fresh = sources.size
        while fresh:
            partials = [self.client.submit(_reach_partial, b, frontier, backend, pure=False) for b in self.blocks]
            step = self.client.submit(_reach_step, visited, *partials, pure=False)
            visited = self.client.submit(operator.getitem, step, 0, pure=False)
            frontier = self.client.submit(operator.getitem, step, 1, pure=False)
            fresh = self.client.submit(operator.getitem, step, 2, pure=False).result()
        R = visited.result()
        R.sort_indices()
        return R

    def kneighbors(self, queries=None, k=5, metric="euclidean", *, p=None, dtype=None, backend=None,
                   memory_limit=None):
        """The k nearest rows of this matrix to each row of `queries` (a RowMatrix; this matrix
        when None, each row then finds itself first): every query block against the index blocks
        of each worker, by one call there (block by block with memory_limit), the candidates
        merged on the query block's worker
        (closest first, ties to the smaller index: the one-process answer, distances bit for bit).
        Returns (distances, indices) as dask arrays of the queries' rows × k.

        memory_limit (bytes, or a string such as "2GB"): the most each worker holds for the call
        at once (its blocks, the copies of query rows it searches, the candidates and answers, as
        dask.sizeof counts them); the query blocks then go in pieces short enough for it
        (_knn_plan). The library's own working memory inside a call is bounded apart, by the
        worker's context (sparsering.Context's workspace and memory limits)."""
        import dask.array as da
        queries = self if queries is None else queries
        k = int(k)
        if not 1 <= k <= self.shape[0]:
            raise InvalidArgumentError(f"kneighbors: k = {k}, but the index has {self.shape[0]} rows (k must be 1..rows)")
        if queries.shape[1] != self.shape[1]:
            raise InvalidArgumentError(f"kneighbors: the queries have {queries.shape[1]} columns, the index {self.shape[1]}")
        kind = np.dtype(dtype) if dtype is not None else np.dtype(np.float32 if self.dtype == np.float32 else np.float64)
        dists, inds = [], []
        merged_answers, spans = self._merged_answers(queries, k, metric, p, dtype, backend, memory_limit)
        for merged, (_, rows) in zip(merged_answers, spans):
            dists.append(da.from_delayed(self.client.submit(operator.getitem, merged, 0), shape=(int(rows), k),
                                         dtype=kind))
            inds.append(da.from_delayed(self.client.submit(operator.getitem, merged, 1), shape=(int(rows), k),
                                        dtype=np.int64))
        if not dists:
            return da.zeros((0, k)), da.zeros((0, k), dtype=np.int64)
        return da.concatenate(dists), da.concatenate(inds)

    def _each_query_block(self, queries, pair_task, pair_args, join, carry=None, plan=None, index=None):
        """For each piece of each query block (plan: the pieces, (lo, hi) local row ranges of each
        query block, and the window; by default each block whole and a window of the workers'
        count), pair_task(index block, carried, *pair_args) on every index block's worker and
        join(query block's number, those futures, the query block's workers). Returns join's
        futures and each piece's (first row, rows); join also gets the piece's local rows (lo, hi)
        when it takes them. `carried` is carry(query block, lo, hi) (the
        piece itself by default, _query_copy), a key of its own made on the query block's worker
        only once the join of piece j - window is done and released with its pair tasks, so a
        worker holds its own blocks and a few carried pieces at a time. (Taken straight, a block
        that is every query block's index waits on the whole graph, so the scheduler keeps every
        copy: two workers each grew by 2.6x the matrix over an all-vs-all graph.) index: the
        index's blocks and their homes (_index_groups), this matrix's own by default."""
        carry = carry or _query_copy
        pieces, window = plan or ([[(0, r)] for r in queries._rows()], len(_workers(self.client)))
        blocks, homes = index or (self.blocks, self._homes())
        out, spans = [], []
        for j, (qb, q_home, cuts) in enumerate(zip(queries.blocks, queries._homes(), pieces)):
            for lo, hi in cuts:
                n = len(out)
                q = self.client.submit(carry, qb, lo, hi, out[n - window] if n >= window else None, workers=q_home,
                                       allow_other_workers=True, pure=False)
                parts = [self.client.submit(pair_task, ib, q, *pair_args, workers=home, allow_other_workers=True,
                                            pure=False)
                         for ib, home in zip(blocks, homes)]
                out.append(join(j, parts, q_home, lo, hi))
                spans.append((int(queries.starts[j]) + lo, hi - lo))
        return out, spans

    def _knn_plan(self, queries, k, memory_limit):
        """The pieces and window of _each_query_block for a k-NN search in which each worker holds
        at most memory_limit bytes (dask.sizeof's count) at once: its index blocks (twice: the
        rows and the sparsering Matrix made from them), its query blocks, the answers of the query
        rows it is home to (the merged k and what is made of them, kept till the end), and, for
        each of the `window` pieces in flight, the piece's copy and its k candidates from every
        index block (they all come to the piece's merge, on its query block's worker), and one
        piece more for the one whose release is on its way. The pieces
        are as long as that allows (whole blocks when they fit); a limit below what a worker must
        hold whatever the pieces is an error."""
        limit = _limit_bytes(memory_limit)
        workers = _workers(self.client)
        homes, q_homes = self._homes(), queries._homes()
        sizes = self._at_homes(_block_nbytes, homes)
        q_sizes = sizes if queries is self else queries._at_homes(_block_nbytes, q_homes)
        answer_row = 2 * k * 16  # a row's merged distances and indices (8 bytes each), and its graph row
        held = collections.Counter()
        for size, home in zip(sizes, homes):
            _hold(held, home, workers, 2 * size)
        for size, rows, home in zip(q_sizes, queries._rows(), q_homes):
            _hold(held, home, workers, (size if queries is not self else 0) + answer_row * rows)
        need = max(held.values(), default=0)
        if need >= limit:
            raise InvalidArgumentError(
                f"kneighbors: memory_limit {limit} bytes is below what a worker must hold whatever the pieces "
                f"({need} bytes: its blocks, twice for the matrix made from them, and its queries' answers); "
                f"use more workers or a larger limit")
        query_row = max((size / rows for size, rows in zip(q_sizes, queries._rows()) if rows), default=0)
        in_flight_row = query_row + k * 16 * len(self.blocks) + answer_row
        # room for one piece more than the window: a finished piece's copy and candidates stay on
        # the worker until the scheduler's release reaches it, which on a loaded host comes after
        # the next piece has started (7.3 MB under a 7 MB limit on 2 busy cores)
        window = len(workers)
        rows = min((limit - held[w]) / ((window + 1) * in_flight_row) for w in workers)
        if rows < 1:
            window, rows = 1, min((limit - held[w]) / (2 * in_flight_row) for w in workers)
        if rows < 1:
            raise InvalidArgumentError(f"kneighbors: memory_limit {limit} bytes leaves no room for one query row "
                                       f"in flight ({need} bytes held, {in_flight_row:.0f} a row in flight)")
        pieces = []
        for r in queries._rows():
            count = max(1, -(-r // int(rows)))
            cuts = np.linspace(0, r, count + 1).astype(int)
            pieces.append([(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:]) if b > a] or [(0, 0)])
        return pieces, window

    def _homes(self):
        """Each block's workers (for tasks that should run where a block is, loosely: a lost
        worker's tasks move). The blocks are computed first, to know them."""
        from distributed import wait
        wait(self.blocks)
        who = self.client.who_has(self.blocks)
        return [list(who.get(b.key, ())) or None for b in self.blocks]

    def _at_homes(self, fn, homes, *args):
        """fn(block, *args) for each block, gathered, each run where its block is (homes: _homes()).
        A task the scheduler put elsewhere would copy its block there, a replica that stays and
        that no memory plan counts (on a loaded host it did: 3.77 MB under a 3 MB mxm limit)."""
        return self.client.gather([self.client.submit(fn, b, *args, workers=h, allow_other_workers=True, pure=False)
                                   for b, h in zip(self.blocks, homes)])

    def _index_groups(self):
        """The index's blocks grouped by the worker that holds them, a group a worker searched by
        one call (_index_group, made there), and each group's home. (One call a block made an
        all-vs-all graph of B blocks B² calls: 64 blocks of 50,000 rows on one GPU worker took
        12 s where one call takes 0.07 s, on an H100.)"""
        homes = self._homes()
        by_home = collections.defaultdict(list)
        for j, home in enumerate(homes):
            by_home[tuple(home or ())].append(j)
        if all(len(js) == 1 for js in by_home.values()):
            return self.blocks, homes
        groups = [self.client.submit(_index_group, *[self.blocks[j] for j in js], workers=list(home) or None,
                                     allow_other_workers=True, pure=False)
                  for home, js in by_home.items()]
        return groups, [list(home) or None for home in by_home]

    def _merged_answers(self, queries, k, metric, p, dtype, backend, memory_limit=None):
        """A future a piece of a query block (whole blocks without memory_limit): its (distances,
        indices) against every index block, merged on the query block's worker; and the pieces'
        (first row, rows). Without memory_limit a worker searches its index blocks as one
        (_index_groups: a copy of them for the call); with it, block by block, as _knn_plan counts."""
        largest = _keeps_largest(metric)
        plan = self._knn_plan(queries, k, memory_limit) if memory_limit is not None else None
        return self._each_query_block(
            queries, _block_candidates, (k, metric, p, dtype, backend),
            lambda j, cands, home, *_: self.client.submit(_merge_candidates, k, largest, *cands, workers=home,
                                                      allow_other_workers=True, pure=False), plan=plan,
            index=self._index_groups() if memory_limit is None else None)

    def kneighbors_graph(self, n_neighbors, mode="connectivity", metric="euclidean", *, p=None, include_self=False,
                         dtype=None, backend=None, memory_limit=None):
        """The k-nearest-neighbour graph of this matrix's rows (sparsering.kneighbors_graph's):
        each row's k nearest rows (k + 1 less the row itself unless include_self), 1.0 or the
        distance a neighbour, as a RowMatrix of this matrix's row blocks (of their pieces, with
        memory_limit: see kneighbors), each built on a worker from its merged answer (no process
        holds the whole graph unless asked: .to_scipy())."""
        if mode not in ("connectivity", "distance"):
            raise ValueError(f'mode must be "connectivity" or "distance", not {mode!r}')
        n, k = self.shape[0], int(n_neighbors)
        extra = 0 if include_self else 1
        if not 1 <= k + extra <= n:
            raise InvalidArgumentError(f"kneighbors_graph: n_neighbors = {k}, but the matrix has {n} rows (at most "
                                       f"rows{'' if include_self else ' - 1 when each row is left out of its own list'})")
        merged_answers, spans = self._merged_answers(self, k + extra, metric, p, dtype, backend, memory_limit)
        blocks = [self.client.submit(_graph_block, merged, start, n, k, mode, bool(extra), pure=False)
                  for merged, (start, _) in zip(merged_answers, spans)]
        return RowMatrix(self.client, blocks, [start for start, _ in spans], (n, n),
                         _graph_dtype(mode, dtype, self.dtype))

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
        drop_self = own and not include_self
        blocks, _ = self._each_query_block(
            queries, _block_radius, (radius, mode, metric, p, dtype, backend),
            lambda j, parts, _home, *_: self.client.submit(_join_columns, int(queries.starts[j]), drop_self, *parts,
                                                       pure=False))
        return RowMatrix(self.client, blocks, queries.starts, (queries.shape[0], self.shape[0]),
                         _graph_dtype(mode, dtype, self.dtype))

    def mxm(self, B, semiring="plus_times", *, backend=None, memory_limit=None):
        """C = self ⊕.⊗ B for B a RowMatrix: row block i of C on block i's worker, from the rows of
        B its columns name (cut on B's workers, fetched there); C comes back as a RowMatrix of the
        same row blocks (of their pieces, with memory_limit).

        memory_limit (bytes, or a string such as "2GB"): the most each worker holds for the call
        at once, as dask.sizeof counts it (its blocks of A and B, the rows of C it is home to, and
        the used columns, rows of B and products of the pieces in flight); the row blocks of A then
        go in pieces short enough for it (_mxm_plan). C's rows are counted at their most (a row's
        products, at most B's columns), so the pieces are cut for the worst case."""
        if B.shape[0] != self.shape[1]:
            raise InvalidArgumentError(f"mxm: A is {self.shape[0]} x {self.shape[1]} but B is {B.shape[0]} x {B.shape[1]}")
        out = np.dtype(np.bool_) if semiring == "or_and" else np.result_type(self.dtype, B.dtype)
        # without a limit, two blocks of A a worker in flight: a worker runs one task at a time and
        # each product waits on rows of B from every worker, so with one a worker the next round's
        # rows were cut only after each worker's product, every round waiting on the slowest (on
        # 2 workers of 2 blocks each, R-MAT 15's A·A: median 0.76 s so against 1.02 s, 5 runs each)
        plan = self._mxm_plan(B, out, memory_limit) if memory_limit is not None else (
            [[(0, r)] for r in self._rows()], 2 * len(_workers(self.client)))
        # each block of A gets only the rows of B its columns name, cut on B's workers, a few
        # blocks of A at a time (B's blocks as the index, A's as the queries, their used columns
        # carried), so a worker holds its blocks and the rows a few products need, not all of B
        blocks, spans = B._each_query_block(
            self, _needed_rows, (),
            lambda i, needed, home, lo, hi: self.client.submit(_block_mxm, self.blocks[i], semiring, backend,
                                                               *needed, rows=(lo, hi), workers=home,
                                                               allow_other_workers=True, pure=False),
            carry=_used_columns, plan=plan)
        return RowMatrix(self.client, blocks, [start for start, _ in spans], (self.shape[0], B.shape[1]), out)

    def _mxm_plan(self, B, out, memory_limit):
        """The pieces and window of _each_query_block for C = self·B in which each worker holds at
        most memory_limit bytes (dask.sizeof's count) at once: its blocks of A and B; the rows of C
        it is home to, kept till the end and counted at their most (a row's entries are at most its
        products, Σ over its entries of B's row lengths, and at most B's columns); and, for each of
        the `window` pieces in flight and one more whose release is on its way, counted on the
        worker that computes it and on the one that receives it: the piece's used columns (at
        most its entries), the rows of B it needs from every block (each a block's shape, its row
        pointers whole, with at most the piece's products or all of B's entries) and its product.
        The pieces are as long as that allows (whole blocks when they fit); a limit below what a
        worker must hold whatever the pieces is an error."""
        limit = _limit_bytes(memory_limit)
        workers = _workers(self.client)
        a_homes, b_homes = self._homes(), B._homes()
        b_lengths = np.concatenate(B._at_homes(_row_lengths, b_homes) or [np.zeros(0, dtype=np.int64)])
        lengths = self.client.scatter(b_lengths, broadcast=True, hash=False)
        products = self._at_homes(_row_products, a_homes, lengths)
        entries = self._at_homes(_row_lengths, a_homes)
        held = collections.Counter()
        for matrix, homes in ((self, a_homes), (B, b_homes)):
            for size, home in zip(matrix._at_homes(_sizeof_block, homes), homes):
                _hold(held, home, workers, size)
        entry = 4 + out.itemsize  # a column index and a value, as scipy stores them
        c_rows = [np.minimum(p, B.shape[1]) * entry + 8 for p in products]  # C's rows at their most, row pointers
        for rows, home in zip(c_rows, a_homes):
            _hold(held, home, workers, int(rows.sum()))  # the join runs on any of them
        need = max(held.values(), default=0)
        if need >= limit:
            raise InvalidArgumentError(
                f"mxm: memory_limit {limit} bytes is below what a worker must hold whatever the pieces ({need} bytes: "
                f"its blocks of A and B and its rows of C at their most); use more workers or a larger limit")
        b_entry, len_b = 4 + np.dtype(B.dtype).itemsize, int(b_lengths.sum())
        fixed = 8 * (B.shape[0] + len(B.blocks))  # each needed block's row pointers, whatever the piece
        for window in (len(workers), 1):
            # a piece in flight counts twice (where it is made and where it goes); one more piece
            # than the window: a finished one's stay until the scheduler's release reaches them
            room = (limit - need) / (2 * (window + 1)) - fixed
            if room > 0:
                break
        pieces = []
        for p, n, c in zip(products, entries, c_rows):
            cost = np.minimum(p, len_b) * b_entry + 4 * n + c  # used columns, B's rows, product
            if len(cost) and cost.max() > room:
                raise InvalidArgumentError(
                    f"mxm: memory_limit {limit} bytes leaves no room for one row of A in flight ({need} bytes held, "
                    f"a row needs up to {int(cost.max())})")
            pieces.append(_cut_by_cost(cost, room))
        return pieces, window

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

    def transpose(self, parts=None):
        """This matrix's transpose as a RowMatrix, its row blocks (this matrix's columns) of about
        equal nonzeros, one a worker unless `parts` says: each block cut and transposed on its
        worker, the pieces of a new block stacked on a worker; the client sees only the columns'
        counts."""
        workers = _workers(self.client)
        counts = self.client.submit(_sum_arrays, *[self.client.submit(_column_counts, b, pure=False)
                                                   for b in self.blocks], pure=False).result() \
            if self.blocks else np.zeros(self.shape[1], dtype=np.int64)
        cuts = _balanced_ranges(np.concatenate([[0], np.cumsum(counts)]), parts or len(workers))
        split = [self.client.submit(_transposed_pieces, b, cuts, pure=False) for b in self.blocks]
        blocks = []
        for j, (a, _) in enumerate(cuts):
            pieces = [self.client.submit(operator.getitem, sb, j, pure=False) for sb in split]
            blocks.append(self.client.submit(_join_columns, a, False, *pieces, workers=[workers[j % len(workers)]],
                                             allow_other_workers=True, pure=False))
        return RowMatrix(self.client, blocks, [a for a, _ in cuts], (self.shape[1], self.shape[0]), self.dtype)

    def factorize(self, rank=32, *, test=None, lam=0.1, iterations=10, cg_steps=3, seed=42, center=True,
                  dtype=np.float32, item_parts=None, backend=None, callback=None):
        """ALS-WR matrix factorization of these ratings (users × items, an entry per rating),
        sparsering.factorize's algorithm and arguments on row blocks: the users' factors live with
        this matrix's row blocks and the items' with the row blocks of its transpose (made once,
        `item_parts` of them); each half sweep solves a block's rows on its worker (cg_steps of CG,
        each product one fused SDDMM→SpMM) with the other side's factors sent there once. The
        client holds neither the ratings nor the factors. test: held-out ratings as a RowMatrix of
        this shape and these row blocks, scored after every sweep. callback(step) after each sweep
        with (iteration, train_rmse, test_rmse, seconds), as sparsering.factorize's history (test_rmse
        NaN without test); a true result stops. Returns (W, H, mean, history): W (users × rank) and
        H (items × rank) as dask arrays of their blocks."""
        import time

        import dask.array as da
        dtype = np.dtype(dtype)
        if dtype not in (np.float32, np.float64):
            raise InvalidArgumentError("factorize: dtype must be float32 or float64")
        if not (1 <= int(rank) <= 4096) or int(iterations) < 0 or int(cg_steps) < 1 or not lam >= 0:
            raise InvalidArgumentError(f"factorize: rank {rank} (1..4096), iterations {iterations} (>= 0), "
                                       f"cg_steps {cg_steps} (>= 1) and lam {lam} (>= 0) are not all valid")
        if test is not None and (test.shape != self.shape or [int(a) for a in test.starts] != [int(a) for a in self.starts]):
            raise InvalidArgumentError("factorize: the test ratings must be a RowMatrix of the ratings' shape and row "
                                       f"blocks ({self.shape}, blocks starting at {[int(a) for a in self.starts]})")
        t0, K, submit = time.perf_counter(), int(rank), self.client.submit
        sums = self.client.gather([submit(_block_sum_count, b, pure=False) for b in self.blocks])
        nnz = sum(c for _, c in sums)
        mu = sum(v for v, _ in sums) / nnz if center and nnz else 0.0
        users = [submit(_centered_block, b, mu, dtype, pure=False) for b in self.blocks]
        held_out = [] if test is None else [submit(_centered_block, b, mu, dtype, pure=False) for b in test.blocks]
        held_nnz = sum(c for _, c in self.client.gather([submit(_block_sum_count, b, pure=False)
                                                         for b in (test.blocks if test is not None else [])]))
        ratings = RowMatrix(self.client, [submit(operator.getitem, u, 0, pure=False) for u in users],
                            self.starts, self.shape, dtype)
        items_side = ratings.transpose(item_parts)
        items = [submit(_as_part, b, pure=False) for b in items_side.blocks]
        W = [submit(np.zeros, (r, K), pure=False) for r in self._rows()]
        H = [submit(_factor_block, a, b, K, int(seed), pure=False)
             for a, b in zip(items_side.starts, items_side._stops())]
        history = []
        for it in range(1, int(iterations) + 1):
            Hf = submit(_concat_factor, dtype, *H, pure=False)
            W = [submit(_als_half, u, w, Hf, float(lam), int(cg_steps), backend, pure=False) for u, w in zip(users, W)]
            Wf = submit(_concat_factor, dtype, *W, pure=False)
            H = [submit(_als_half, v, h, Wf, float(lam), int(cg_steps), backend, pure=False) for v, h in zip(items, H)]
            Hf = submit(_concat_factor, dtype, *H, pure=False)
            err, held = self.client.gather([  # both sums in one round trip
                submit(_total, *[submit(_squared_error, part, w, Hf, backend, pure=False) for part, w in zip(side, W)],
                       pure=False) for side in (users, held_out)])
            step = (it, float(np.sqrt(err / nnz)) if nnz else float("nan"),
                    float(np.sqrt(held / held_nnz)) if held_nnz else float("nan"), time.perf_counter() - t0)
            history.append(step)
            if callback is not None and callback(step):
                break

        def as_array(futures, rows):
            parts = [da.from_delayed(submit(np.ascontiguousarray, f, dtype, pure=False), shape=(int(r), K), dtype=dtype)
                     for f, r in zip(futures, rows)]
            return da.concatenate(parts) if parts else da.zeros((0, K), dtype=dtype)
        return as_array(W, self._rows()), as_array(H, items_side._rows()), mu, history

    def pagerank(self, damping=0.85, *, tol=1e-6, max_iter=100, backend=None):
        """PageRank of the graph this square matrix holds (row i's entries: the edges out of i,
        weights >= 0), networkx's iteration as sparsering.pagerank: from 1/n until
        Σ|r_new − r| <= n·tol. The graph is transposed once (RowMatrix.transpose: each block then
        holds its vertices' in-edges); a step, each block pulls every block's r / out-weight (over its
        vertices with out-edges, the only ones an in-edge comes from) and
        computes its own vertices' ranks, so nothing is summed across workers but the change and
        the dangling rank (two numbers a block); the client sees only each step's change.
        Returns (ranks as numpy, iterations)."""
        n = self.shape[0]
        if self.shape[0] != self.shape[1]:
            raise InvalidArgumentError(f"pagerank: the matrix is {self.shape[0]} x {self.shape[1]}, not square")
        if n == 0:
            return np.zeros(0), 0
        c = self.client
        out = c.submit(_out_parts, *[c.submit(_out_weights, b, pure=False) for b in self.blocks], pure=False)
        preps = [c.submit(_pagerank_prep, b, out, pure=False) for b in self.transpose(parts=len(self.blocks)).blocks]
        states = [c.submit(_pagerank_start, prep, n, pure=False) for prep in preps]

        def pulled(states):
            return [c.submit(operator.getitem, st, 0, pure=False) for st in states]

        xs = pulled(states)
        # Steps are submitted up to `ahead` before the client has read their changes, so the
        # scheduler starts each when the states before it exist instead of waiting for the client's
        # round trip; the steps past the one that converges are released, their ranks unused (the
        # answer and the count are those of the one-step-at-a-time loop). A step waits only on the
        # pulled parts of the one before; the change, summed for the client, is off that path.
        ahead, pending = 4, collections.deque()  # (iteration, states, change) not yet read
        submitted = 0
        while True:
            while submitted < int(max_iter) and len(pending) < ahead:
                submitted += 1
                states = [c.submit(_pagerank_pull, prep, st, float(damping), n, backend, *xs, pure=False)
                          for prep, st in zip(preps, states)]
                xs = pulled(states)
                change = c.submit(_change, *xs, pure=False)
                pending.append((submitted, states, change))
            if not pending:  # max_iter = 0
                return c.submit(_ranks, *states, pure=False).result(), 0
            it, done, change = pending.popleft()
            if change.result() <= n * tol or not pending and submitted >= int(max_iter):
                answer = c.submit(_ranks, *done, pure=False).result()
                pending.clear()  # released, not cancelled: dask forgets the steps past it
                return answer, it

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
            steps = [self.client.submit(_closure_step, c, f, backend, pure=False)
                     for c, f in zip(closed.blocks, found.blocks)]
            fresh = RowMatrix(self.client, [self.client.submit(operator.getitem, s, 0, pure=False) for s in steps],
                              self.starts, self.shape, np.bool_)
            closed = RowMatrix(self.client, [self.client.submit(operator.getitem, s, 1, pure=False) for s in steps],
                               self.starts, self.shape, np.bool_)
            if sum(self.client.gather([self.client.submit(operator.getitem, s, 2, pure=False) for s in steps])) == 0:
                break
        return closed
