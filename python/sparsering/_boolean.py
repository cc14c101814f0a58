"""Element-wise and structural operations, bit-packed Boolean blocks, and graph queries
(transitive closure, multi-source reachability, context-free path querying).

Inputs may be GPU matrices (cupyx.scipy.sparse, torch sparse) on a CUDA context: results come back
as the input's kind (bool results as float32 ones: cupyx has no bool sparse matrix); bit blocks may
be cupy / torch uint64 arrays, read and written in place."""
import os
from collections import namedtuple

import numpy as np
import scipy.sparse as sp

from . import _core
from ._core import InvalidArgumentError
from ._matrix import BOOL, Matrix, as_matrix
from . import _device
from ._ops import _ctx_for, _device_kind, _mask, _ptr_of, semiring_id

QueryStats = namedtuple("QueryStats", "rounds products seconds")
_CLOSURE_METHODS = {"semi-naive": 1, "seminaive": 1, "squaring": 2}


def _default_semiring(A, semiring):
    if semiring is not None:
        return semiring_id(semiring)
    return semiring_id("or_and" if A._type == BOOL else "plus_times")


def _give(h, ctx, keep, kind=None):
    """A result as the first input's kind: Matrix, the GPU framework's sparse matrix, or scipy."""
    m = Matrix._wrap(h, ctx)
    return m if keep else m.to_device_csr(kind) if kind else m.to_scipy()


def _first(A, context, dtype=None, *others):
    """(context, Matrix of A, keep a Matrix, GPU kind) for a call whose first sparse input is A: a
    GPU input (A or one of `others`) puts A on the device and brings results back as its kind."""
    ctx = _ctx_for(A, context)
    keep = isinstance(A, Matrix)
    kind = None if keep else _device_kind(A, *others)
    return ctx, as_matrix(A, ctx, dtype, "device" if kind else None), keep, kind


def _binary(op, A, B, semiring, mask, complement, accumulate, context):
    ctx, A, keep, kind = _first(A, context, None, B)
    B = as_matrix(B, ctx, A.dtype, A.location)
    acc = None if accumulate is None else as_matrix(accumulate, ctx, A.dtype, A.location)._h
    h = _core.binary(ctx._ctx, op, A._h, B._h, _default_semiring(A, semiring), _mask(mask, ctx, A), acc, complement,
                     False)
    return _give(h, ctx, keep, kind)


def ewise_add(A, B, semiring=None, *, mask=None, complement=False, accumulate=None, context=None):
    """A ⊕ B over the union of the patterns: the semiring's ⊕ where both have an entry (default:
    "or_and" for bool, "plus_times" otherwise, i.e. | and +). mask, complement and accumulate as in
    mxm. Returns scipy csr_matrix, or a Matrix when A is a Matrix."""
    return _binary(1, A, B, semiring, mask, complement, accumulate, context)


def ewise_mult(A, B, semiring=None, *, mask=None, complement=False, accumulate=None, context=None):
    """A ⊗ B over the intersection of the patterns (& for bool, * for numbers by default)."""
    return _binary(2, A, B, semiring, mask, complement, accumulate, context)


def kronecker(A, B, semiring=None, *, mask=None, complement=False, accumulate=None, context=None):
    """The Kronecker product: C[i*p + k, j*q + l] = A[i, j] ⊗ B[k, l] (scipy.sparse.kron's layout)."""
    return _binary(3, A, B, semiring, mask, complement, accumulate, context)


def _range(sl, n, what):
    if isinstance(sl, (int, np.integer)):
        sl = slice(int(sl), int(sl) + 1 if sl != -1 else None)
    if not isinstance(sl, slice):
        raise TypeError(f"extract takes slices of {what}, not {type(sl).__name__}")
    start, stop, step = sl.indices(n)
    if step != 1:
        raise ValueError(f"extract takes contiguous {what} (step 1), not step {step}")
    return start, max(stop - start, 0)


def extract(A, rows=slice(None), cols=slice(None), *, context=None):
    """The submatrix A[rows, cols] for contiguous slices (also Matrix[r0:r1, c0:c1])."""
    ctx, A, keep, kind = _first(A, context)
    r0, nr = _range(rows, A.shape[0], "rows")
    c0, nc = _range(cols, A.shape[1], "columns")
    return _give(_core.extract(ctx._ctx, A._h, r0, c0, nr, nc), ctx, keep, kind)


def reduce_rows(A, semiring=None, *, context=None):
    """⊕ of each row as an (nrows x 1) sparse column with an entry for every non-empty row (for
    bool: the rows with any entry; for numbers, by default, the row sums)."""
    ctx, A, keep, kind = _first(A, context)
    return _give(_core.reduce_rows(ctx._ctx, A._h, _default_semiring(A, semiring)), ctx, keep, kind)


def pack_bits(dense):
    """A 2-D bool array -> its bit-packed form: uint64 words, 64 columns a word (bit j % 64 of word
    j // 64). Returns the (nrows, ceil(ncols / 64)) array; unpack_bits(words, ncols) inverts it."""
    dense = np.asarray(dense, dtype=np.bool_)
    if dense.ndim != 2:
        raise ValueError("pack_bits takes a 2-D array")
    rows, cols = dense.shape
    words = (cols + 63) // 64
    padded = np.zeros((rows, words * 64), dtype=np.bool_)
    padded[:, :cols] = dense
    # little-endian bit order within bytes and bytes within words: column j is bit j % 64 of word j // 64
    return np.ascontiguousarray(np.packbits(padded, axis=1, bitorder="little").view("<u8").astype(np.uint64))


def unpack_bits(words, ncols):
    """The bool array (nrows, ncols) of a bit-packed block."""
    words = np.ascontiguousarray(words, dtype=np.uint64)
    bits = np.unpackbits(words.view(np.uint8).reshape(words.shape[0], -1), axis=1, bitorder="little")
    return bits[:, :ncols].astype(np.bool_)


def _words(words, nrows, ncols, what, writable=False):
    """(the binding's argument, the array) for a bit block of nrows x ncols: a numpy array (copied
    to packed uint64 unless written in place), or a packed uint64 cupy / torch array read in place
    (int64 too: torch has few uint64 operations)."""
    shape = (int(nrows), (int(ncols) + 63) // 64)
    d = _device.device_array(words)
    if d is not None:
        if d.dtype not in (np.uint64, np.int64) or d.shape != shape or (d.order != "C" and shape[0] > 1) or \
                (writable and d.ptr != _ptr_of(words)):
            raise ValueError(f"{what} must be a packed uint64 device array of shape {shape}, not {d.dtype} {d.shape}")
        return (d.ptr, d.nbytes), words
    if writable:
        if not isinstance(words, np.ndarray) or words.dtype != np.uint64 or words.shape != shape or \
                not words.flags.c_contiguous:
            raise ValueError(f"{what} must be a C-contiguous uint64 array of shape {shape}")
        return words, words
    words = np.ascontiguousarray(words, dtype=np.uint64)
    if words.shape != shape:
        raise ValueError(f"{what} must be {shape} uint64 words, not {words.shape}")
    return words, words


def _new_words(nrows, ncols, kind, like=None):
    shape = (int(nrows), (int(ncols) + 63) // 64)
    return _device.empty(kind, shape, np.uint64, like) if kind else np.zeros(shape, dtype=np.uint64)


def _bits_call(kind, ctx, call):
    """Runs a binding call on bit blocks; device blocks wait for the caller's stream first and
    for the library's after (the stream rule of every device call)."""
    if kind:
        _device.synchronize_caller(kind)
    out = call()
    if kind:
        ctx.synchronize()
    return out


def bits_from_matrix(A, *, context=None):
    """A sparse matrix's pattern, bit-packed (sr_bits_from_matrix): (nrows, ceil(ncols / 64)) uint64,
    numpy for host input, the input's kind (cupy / torch) for a GPU input."""
    ctx = _ctx_for(A, context)
    kind = None if isinstance(A, Matrix) else _device_kind(A)
    A = as_matrix(A, ctx, np.bool_, "device" if kind else "host")
    out = _new_words(A.shape[0], A.shape[1], kind)
    arg, out = _words(out, A.shape[0], A.shape[1], "out", writable=True)
    _bits_call(kind, ctx, lambda: _core.bits_from_matrix(ctx._ctx, A._h, arg))
    return out


def matrix_from_bits(words, ncols, *, context=None):
    """The set bits of a bit-packed block as a bool scipy csr_matrix (sr_matrix_from_bits); the
    input's sparse kind for device words."""
    ctx = _ctx_for(None, context)
    kind = _device_kind(words)
    arg, words = _words(words, len(words), ncols, "words")
    h = _bits_call(kind, ctx, lambda: _core.matrix_from_bits(ctx._ctx, arg, len(words), int(ncols)))
    return _give(h, ctx, False, kind)


def bits_or(Y, X, ncols, *, context=None):
    """Y |= X in place for bit-packed blocks of one shape; returns the bits set in Y (sr_bits_or)."""
    ctx = _ctx_for(None, context)
    kind = _device_kind(Y, X)
    y, Y = _words(Y, len(Y), ncols, "Y", writable=True)
    x, _ = _words(X, len(Y), ncols, "X")
    return _bits_call(kind, ctx, lambda: _core.bits_or(ctx._ctx, y, x, len(Y), int(ncols)))


def bits_count(X, ncols, *, context=None):
    """The set bits of a bit-packed block (sr_bits_count)."""
    ctx = _ctx_for(None, context)
    kind = _device_kind(X)
    x, X = _words(X, len(X), ncols, "X")
    return _bits_call(kind, ctx, lambda: _core.bits_or(ctx._ctx, x, None, len(X), int(ncols)))


def mxm_bits(A, X, ncols, *, out=None, mask=None, complement=False, replace=False, accumulate=False, context=None):
    """Y = A or.and X for a sparse A (m x n, its pattern) and a bit-packed X (n x ncols, uint64
    words as pack_bits makes): row i of Y ORs the rows of X that row i of A names, 64 columns a word.
    mask (bit-packed like Y), complement, replace (clear what the mask excludes) and accumulate
    (Y |= ...) as in sr_mxm_bits; `out` is written in place. Blocks on the GPU (cupy / torch
    uint64, with A on a CUDA context) are read and written there. Returns Y."""
    ctx = _ctx_for(A, context)
    kind = _device_kind(A, X, out, mask)
    A = as_matrix(A, ctx, np.bool_, "device" if kind else "host")
    x, _ = _words(X, A.shape[1], ncols, "mxm_bits: X")
    if out is None:
        if accumulate or (mask is not None and not replace):
            raise ValueError("mxm_bits: accumulate and a mask without replace keep bits already in the output: pass out=")
        out = _new_words(A.shape[0], ncols, kind, X)
    y, out = _words(out, A.shape[0], ncols, "mxm_bits: out", writable=True)
    m = None if mask is None else _words(mask, A.shape[0], ncols, "mxm_bits: mask")[0]
    _bits_call(kind, ctx, lambda: _core.mxm_bits(ctx._ctx, y, m, A._h, x, int(ncols), complement, replace, accumulate))
    return out


def _query(result, ctx, keep, return_stats, kind=None):
    h, rounds, products, seconds = result
    out = _give(h, ctx, keep, kind)
    return (out, QueryStats(rounds, products, seconds)) if return_stats else out


def transitive_closure(A, method="semi-naive", *, return_stats=False, context=None):
    """C = A⁺ for a square graph (its pattern): C[i, j] when a path of one or more edges leads from
    i to j. method: "semi-naive" (multiplies only last round's new pairs) or "squaring"
    (C |= C·C). return_stats=True also gives QueryStats(rounds, products, seconds)."""
    if method not in _CLOSURE_METHODS:
        raise ValueError(f"method must be one of {sorted(set(_CLOSURE_METHODS) - {'seminaive'})}, not {method!r}")
    ctx, A, keep, kind = _first(A, context, np.bool_)
    return _query(_core.closure(ctx._ctx, A._h, _CLOSURE_METHODS[method]), ctx, keep, return_stats, kind)


def reachability(A, sources, *, return_stats=False, context=None):
    """R (len(sources) x n, bool): R[s, v] when v can be reached from sources[s] (itself included),
    by BFS on bit-packed frontiers, 64 sources a word."""
    ctx, A, keep, kind = _first(A, context, np.bool_)
    d = _device.device_array(sources)
    src = np.ascontiguousarray(np.atleast_1d(_device.to_host(d) if d is not None else sources), dtype=np.int64)
    return _query(_core.reachability(ctx._ctx, A._h, src), ctx, keep, return_stats, kind)


def cfpq(grammar, graphs, symbol=None, *, reverse=False, return_stats=False, context=None, allow_missing_labels=False):
    """Context-free path query: the (i, j) joined by a path whose edge labels spell a word that
    `symbol` (default: the grammar's start symbol, the first rule's left side) derives.

    grammar: text, one rule a line, "S -> d_r S d | d_r d" ("eps" is the empty word; README has
    the format), or a pathlib.Path / os.PathLike of a file holding it. graphs: {label: square adjacency (scipy, numpy or Matrix)}; reverse=True adds
    label + "_r" with the reversed edges of each. A terminal of the grammar that names no graph is
    refused (a typo would look like "no paths"); allow_missing_labels=True takes it as a label
    with no edges. Returns scipy csr_matrix (bool), or a Matrix when the graphs are Matrix objects."""
    if not isinstance(graphs, dict) or not graphs:
        raise TypeError("graphs must be a non-empty dict {label: adjacency matrix}")
    first = next(iter(graphs.values()))
    ctx = _ctx_for(first, context)
    keep = isinstance(first, Matrix)
    kind = None if keep else _device_kind(first)
    labels, mats = [], []
    for label, g in graphs.items():
        m = as_matrix(g, ctx, np.bool_, "device" if kind else None)
        labels.append(str(label))
        mats.append(m._h)
        if reverse:
            labels.append(f"{label}_r")
            mats.append(m.transpose()._h)
    is_path = isinstance(grammar, os.PathLike)
    text = os.fspath(grammar) if is_path else str(grammar)
    return _query(_core.cfpq(ctx._ctx, text, is_path, labels, mats, symbol, bool(allow_missing_labels)), ctx, keep,
                  return_stats, kind)


def read_labeled_graph(path, nvertices=0, *, context=None):
    """Reads "FROM TO LABEL" lines ('#' comments) into {label: scipy csr bool adjacency}, in the
    order labels first appear, all of the same size: 1 + the largest vertex number, or nvertices
    when larger (sr_labeled_graph_read)."""
    ctx = _ctx_for(None, context)
    pairs, _ = _core.read_labeled_graph(ctx._ctx, os.fspath(path), int(nvertices))
    return {label: Matrix._wrap(h, ctx).to_scipy() for label, h in pairs}


def labeled_graphs_from_networkx(G, attribute="label", nvertices=0):
    """{label: scipy csr bool adjacency} from a networkx (Multi)DiGraph whose edges carry the label
    in `attribute` (as cfpq-data's generators and loaders make them); an edge without one is
    refused. Vertex i is the i-th of G.nodes (so nodes 0..n-1 keep their numbers); the size is
    the node count, or nvertices when larger. An undirected graph gives both directions."""
    index = {v: i for i, v in enumerate(G.nodes)}
    n = max(len(index), int(nvertices))
    edges = {}
    directed = G.is_directed()
    for u, v, label in G.edges(data=attribute):
        if label is None:
            raise InvalidArgumentError(f"edge ({u!r}, {v!r}) has no {attribute!r} attribute")
        rows, cols = edges.setdefault(str(label), ([], []))
        rows.append(index[u]), cols.append(index[v])
        if not directed:
            rows.append(index[v]), cols.append(index[u])
    out = {}
    for label, (rows, cols) in edges.items():
        A = sp.csr_matrix((np.ones(len(rows), dtype=np.bool_), (rows, cols)), shape=(n, n))
        A.sum_duplicates()  # a multigraph's parallel edges are one entry
        out[label] = A
    return out
