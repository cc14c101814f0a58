"""pairwise_distances and NearestNeighbors against scikit-learn and scipy."""
import os

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import CONTEXTS, DATA, movielens, random_csr
from scipy.spatial.distance import cdist

import sparsering as sr

sklearn = pytest.importorskip("sklearn")
from sklearn.metrics import pairwise_distances as sk_pairwise  # noqa: E402
from sklearn.neighbors import NearestNeighbors as SkNearestNeighbors  # noqa: E402

# our name: (scipy cdist name, input preparation, keyword arguments)
SCIPY = {
    "euclidean": ("euclidean", None, {}), "sqeuclidean": ("sqeuclidean", None, {}),
    "euclidean_unexpanded": ("euclidean", None, {}), "sqeuclidean_unexpanded": ("sqeuclidean", None, {}),
    "manhattan": ("cityblock", None, {}), "chebyshev": ("chebyshev", None, {}),
    "canberra": ("canberra", None, {}), "hamming": ("hamming", None, {}), "cosine": ("cosine", None, {}),
    "correlation": ("correlation", None, {}), "braycurtis": ("braycurtis", None, {}),
    "jaccard": ("jaccard", "bool", {}), "dice": ("dice", "bool", {}), "russellrao": ("russellrao", "bool", {}),
    "jensenshannon": ("jensenshannon", "normalize", {}),
}


def cdist_reference(metric, X, Y):
    name, prep, kw = SCIPY[metric]
    a, b = X.toarray(), Y.toarray()
    if prep == "bool":
        a, b = a != 0, b != 0
    with np.errstate(all="ignore"):
        return cdist(a, b, name, **kw)


def without_empty_rows(X):
    # scipy gives NaN where sparsering documents 1 (cosine, correlation of zero/constant rows)
    X = X.tocsr()
    return X[np.diff(X.indptr) > 1]


@pytest.mark.parametrize("metric", sorted(SCIPY))
def test_pairwise_matches_scipy(ctx, rng, metric):
    X = without_empty_rows(random_csr(rng, 60, 40, 0.15))
    Y = without_empty_rows(random_csr(rng, 50, 40, 0.15))
    if SCIPY[metric][1] == "normalize":
        X = sp.csr_matrix(X.multiply(1 / X.sum(1)))
        Y = sp.csr_matrix(Y.multiply(1 / Y.sum(1)))
    D = sr.pairwise_distances(X, Y, metric, context=ctx)
    assert D.dtype == np.float64 and D.shape == (X.shape[0], Y.shape[0])
    np.testing.assert_allclose(D, cdist_reference(metric, X, Y), rtol=1e-9, atol=1e-9)


def test_pairwise_minkowski_precision_and_dense(ctx, rng):
    X = random_csr(rng, 30, 20, 0.3)
    np.testing.assert_allclose(sr.pairwise_distances(X, metric="minkowski", p=3, context=ctx),
                               cdist(X.toarray(), X.toarray(), "minkowski", p=3), rtol=1e-9, atol=1e-12)
    D32 = sr.pairwise_distances(X.astype(np.float32), metric="manhattan", context=ctx)
    assert D32.dtype == np.float32
    np.testing.assert_allclose(D32, sk_pairwise(X, metric="manhattan"), rtol=1e-5)
    np.testing.assert_allclose(sr.pairwise_distances(X.toarray(), metric="cosine", context=ctx),
                               sk_pairwise(X.toarray(), metric="cosine"), atol=1e-12)


def check_neighbors(d, i, d_ref, reference_rows):
    """Our distances equal scikit-learn's, and are the true distances of the indices we return
    (indices may differ from scikit-learn's only among equal distances)."""
    np.testing.assert_allclose(d, d_ref, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(np.take_along_axis(reference_rows, i, 1), d, rtol=1e-9, atol=1e-9)
    assert all(len(set(row)) == len(row) for row in i)


@pytest.mark.parametrize("metric,p", [("cosine", None), ("euclidean", None), ("manhattan", None),
                                      ("minkowski", 2), ("minkowski", 1), ("minkowski", 3), ("chebyshev", None)])
def test_nearest_neighbors_matches_sklearn_on_movielens(ctx, metric, p):
    X = movielens()
    queries = X[::37]
    kw = {} if p is None else {"p": p}
    d, i = sr.NearestNeighbors(n_neighbors=10, metric=metric, context=ctx, **kw).fit(X).kneighbors(queries)
    dense = metric in ("chebyshev", "minkowski") and p not in (1, 2)  # scikit-learn takes these dense only
    Xs, Qs = (X.toarray(), queries.toarray()) if dense else (X, queries)
    d_ref, _ = SkNearestNeighbors(n_neighbors=10, metric=metric, algorithm="brute", **kw).fit(Xs).kneighbors(Qs)
    check_neighbors(d, i, d_ref, sk_pairwise(queries.toarray(), X.toarray(), metric=metric, **kw))


def test_kneighbors_of_the_fitted_rows_leaves_each_out(ctx, rng):
    X = random_csr(rng, 80, 30, 0.2, repeats=False)
    ours = sr.NearestNeighbors(n_neighbors=4, metric="euclidean", context=ctx).fit(X)
    theirs = SkNearestNeighbors(n_neighbors=4, metric="euclidean", algorithm="brute").fit(X)
    d, i = ours.kneighbors()
    d_ref, i_ref = theirs.kneighbors()
    np.testing.assert_allclose(d, d_ref, rtol=1e-9, atol=1e-9)
    assert (i != np.arange(80)[:, None]).all()
    assert ours.kneighbors(X[:3], n_neighbors=2, return_distance=False).shape == (3, 2)


def test_kneighbors_float32_inner_product_and_errors(ctx, rng):
    X = random_csr(rng, 100, 40, 0.2, np.float32)
    d, i = sr.kneighbors(X, X[:5], 3, "inner_product", context=ctx)
    assert d.dtype == np.float32
    full = (X[:5] @ X.T).toarray()
    np.testing.assert_allclose(d, -np.sort(-full, axis=1)[:, :3], rtol=1e-6)
    with pytest.raises(ValueError, match="n_neighbors <= n_samples_fit"):
        sr.NearestNeighbors(n_neighbors=100, context=ctx).fit(X).kneighbors()
    with pytest.raises(ValueError, match="unknown metric"):
        sr.NearestNeighbors(metric="cosin").fit(X)
    with pytest.raises(AttributeError, match="not fitted"):
        sr.NearestNeighbors().kneighbors(X)
    nan = X.copy()
    nan.data[0] = np.nan
    with pytest.raises(sr.InvalidArgumentError, match="NaN"):
        sr.kneighbors(nan, None, 2, context=ctx)


def test_progress_reports_and_cancels(rng):
    ctx = sr.Context("cpu", workspace_limit=50 * 8 * 7)  # a few queries per batch
    X = random_csr(rng, 50, 30, 0.2)
    seen = []
    sr.kneighbors(X, None, 3, "cosine", progress=lambda done, total: seen.append((done, total)), context=ctx)
    assert len(seen) > 2 and seen[-1] == (50, 50) and all(t == 50 for _, t in seen)
    with pytest.raises(sr.CancelledError, match="stopped by the progress callback"):
        sr.kneighbors(X, None, 3, "cosine", progress=lambda done, total: True, context=ctx)

    def fails(done, total):
        raise RuntimeError("from the callback")
    with pytest.raises(RuntimeError, match="from the callback"):
        sr.kneighbors(X, None, 3, "cosine", progress=fails, context=ctx)
    d, i = sr.kneighbors(X, None, 3, "cosine", progress=True, context=ctx)  # a bar (tqdm or a line)
    assert i.shape == (50, 3)


def test_cuda_and_cpu_agree(rng):
    if len([c for c in __import__("conftest").CONTEXTS]) < 2:
        pytest.skip("no usable GPU")
    cpu, gpu = sr.Context("cpu"), sr.Context("cuda")
    X = random_csr(rng, 3000, 500, 0.02, np.float32)
    for metric in ["cosine", "euclidean", "chebyshev", "jensenshannon"]:
        d_cpu, _ = sr.kneighbors(X, X[:200], 8, metric, context=cpu)
        d_gpu, _ = sr.kneighbors(X, X[:200], 8, metric, context=gpu)
        np.testing.assert_allclose(d_gpu, d_cpu, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("metric", ["cosine", "euclidean", "inner_product", "jaccard", "hellinger"])
def test_precision_modes_agree_with_float32_and_scipy(ctx, metric):
    """Every precision gives the float32 answer on count data (exact and bit for bit on the GPU's
    FP16 panel; the CPU has no tensor cores and computes float32 in each mode), tf32 within its
    error; the path taken is reported; a precision that does not exist is refused."""
    rng = np.random.default_rng(11)
    X = random_csr(rng, 1500, 300, 0.05, np.float32)
    X.data = np.ceil(np.abs(X.data) * 5).astype(np.float32)  # counts 1..5
    d32, i32 = sr.kneighbors(X, X[:100], 5, metric, context=ctx, precision="float32")
    assert "panel" not in sr.last_method()
    d, i = sr.kneighbors(X, X[:100], 5, metric, context=ctx, precision="exact")
    assert sr.last_method().startswith("knn: ")
    if metric == "hellinger":  # square roots of counts: not integers, so no FP16
        np.testing.assert_allclose(d, d32, rtol=1e-5, atol=1e-6)
    else:
        np.testing.assert_array_equal(d, d32)
        np.testing.assert_array_equal(i, i32)
    d_tf32, _ = sr.kneighbors(X, X[:100], 5, metric, context=ctx, precision="tf32")
    np.testing.assert_allclose(d_tf32, d32, rtol=1e-2, atol=1e-2)
    if metric in ("cosine", "euclidean"):  # against scipy in float64
        ref = np.sort(cdist_reference(metric, X[:100].astype(np.float64), X.astype(np.float64)), axis=1)[:, :5]
        rows = np.isfinite(ref).all(1)  # scipy's cosine of an empty row is NaN (ours: 1)
        np.testing.assert_allclose(d[rows], ref[rows], rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="precision must be one of"):
        sr.kneighbors(X, X[:10], 5, metric, context=ctx, precision="fp8")
    nn = sr.NearestNeighbors(n_neighbors=3, metric=metric, precision="tf32", context=ctx).fit(X)
    assert nn.get_params()["precision"] == "tf32"
    assert nn.kneighbors(X[:4])[1].shape == (4, 3)


def count_metric_reference(metric, Q, X):
    """float64 distances of the sum metrics on counts, from the dense rows (scipy where it has the
    metric in our form; KL divergence and Jensen-Shannon of unnormalized rows by their formulas)."""
    a, b = Q.toarray().astype(np.float64), X.toarray().astype(np.float64)
    if metric == "minkowski":
        return cdist(a, b, "minkowski", p=3)
    if metric in ("kl_divergence", "jensenshannon"):
        q, x = a[:, None, :], b[None, :, :]
        with np.errstate(all="ignore"):
            if metric == "kl_divergence":
                return np.where((q > 0) & (x > 0), q * np.log(q / x), 0.0).sum(-1)
            m = 0.5 * (q + x)
            terms = np.where(q > 0, q * np.log(q / m), 0.0) + np.where(x > 0, x * np.log(x / m), 0.0)
            return np.sqrt(0.5 * np.maximum(terms.sum(-1), 0.0))
    return cdist(a, b, SCIPY[metric][0])


@pytest.mark.parametrize("metric", ["manhattan", "braycurtis", "hamming", "canberra", "minkowski",
                                    "sqeuclidean_unexpanded", "kl_divergence", "jensenshannon"])
def test_count_levels_and_value_classes_agree_with_float64(ctx, metric, monkeypatch):
    """The sum metrics without a dot-product form on count data, with the panel forced where a GPU
    takes it (count levels, equality levels, value classes; docs/tensor-cores.md): the distances
    agree with float64 formulas in each precision (exact ones to float32 rounding; Canberra and KL
    to float32 accuracy; Jensen-Shannon's root of a float32 sum near 0 in tf32 to 1e-2), on every
    backend. A few counts past 16 are off the value classes."""
    rng = np.random.default_rng(5)
    X = random_csr(rng, 700, 180, 0.08, np.float32)
    X.data = np.ceil(np.abs(X.data) * 5).astype(np.float32)  # counts 1..5
    X.data[::97] = 40.0
    X = without_empty_rows(X)  # scipy's Bray-Curtis of two empty rows is not ours (0)
    Q = X[:60]
    monkeypatch.setenv("SPARSERING_KNN_PANEL", "1")
    # and its width: on 60 queries no column's pairs repay it in the model, which left the value
    # classes off the panel on an H100 (SPARSERING_KNN_PANEL forces only whether a panel pays)
    monkeypatch.setenv("SPARSERING_KNN_PANEL_COLUMNS", "64")
    ref = np.sort(count_metric_reference(metric, Q, X), axis=1)[:, :5]
    on_gpu = ctx.backend == "cuda"
    for precision in ("exact", "tf32"):
        d, _ = sr.kneighbors(X, Q, 5, metric, context=ctx, precision=precision, p=3.0)
        method = sr.last_method()
        root_near_zero = metric == "jensenshannon" and precision == "tf32"
        if on_gpu:
            assert ("panel" in method) == (metric != "jensenshannon" or precision == "tf32"), method
        tol = 1e-2 if root_near_zero else 1e-5 if metric in ("canberra", "kl_divergence") else 1e-6
        np.testing.assert_allclose(d, ref, rtol=tol, atol=tol, err_msg=f"{precision}: {method}")


def test_drop_in_for_sklearn_and_cuml_signatures(ctx, rng):
    """scikit-learn's and cuML's constructor and kneighbors arguments are accepted; clone works;
    every algorithm name gives the exact neighbours."""
    from sklearn.base import clone
    X = rng.standard_normal((300, 12))
    want_d, want_i = SkNearestNeighbors(n_neighbors=6).fit(X).kneighbors(X[:40])
    for kwargs in (dict(algorithm="kd_tree", leaf_size=10, n_jobs=-1),
                   dict(algorithm="ivfflat", verbose=True, handle=None, algo_params={"nlist": 8}, output_type="numpy",
                        metric="euclidean")):
        nn = sr.NearestNeighbors(n_neighbors=6, context=ctx, **kwargs)
        assert clone(nn).get_params() == nn.get_params()
        d, i = nn.fit(X).kneighbors(X[:40], convert_dtype=True, two_pass_precision=False)
        np.testing.assert_array_equal(i, want_i)
        np.testing.assert_allclose(d, want_d, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="algorithm 'annoy'"):
        sr.NearestNeighbors(algorithm="annoy").fit(X)
    with pytest.raises(NotImplementedError, match="output_type 'cudf'"):
        sr.NearestNeighbors(output_type="cudf").fit(X)


def blobs():
    from sklearn.datasets import make_blobs
    return make_blobs(600, 20, centers=4, random_state=0)


def test_spectral_clustering_takes_kneighbors_graph(ctx):
    """SpectralClustering(affinity="precomputed_nearest_neighbors") on sr.kneighbors_graph: the
    graph is scikit-learn's, and so are the clusters."""
    from sklearn.cluster import SpectralClustering
    from sklearn.metrics import adjusted_rand_score
    from sklearn.neighbors import kneighbors_graph
    X, y = blobs()
    G = sr.kneighbors_graph(X, 10, mode="connectivity", context=ctx)
    assert (G != kneighbors_graph(X, 10, mode="connectivity")).nnz == 0
    labels = SpectralClustering(4, affinity="precomputed_nearest_neighbors", n_neighbors=10,
                                random_state=0).fit_predict(G)
    assert adjusted_rand_score(labels, y) == 1.0


def test_umap_takes_precomputed_knn(ctx):
    """umap-learn's precomputed_knn=(indices, distances, None) from sr.kneighbors(X, X, k) (each
    row's own index first): the embedding keeps the four blobs apart."""
    umap = pytest.importorskip("umap")
    from sklearn.cluster import KMeans
    from sklearn.metrics import adjusted_rand_score
    X, y = blobs()
    dist, ind = sr.kneighbors(X, X, k=15, context=ctx)
    np.testing.assert_array_equal(ind[:, 0], np.arange(len(X)))
    embedding = umap.UMAP(n_neighbors=15, precomputed_knn=(ind, dist, None), random_state=0).fit_transform(X)
    labels = KMeans(4, n_init=10, random_state=0).fit_predict(embedding)
    assert adjusted_rand_score(labels, y) == 1.0


def pypi_summaries(nrows):
    """The first nrows PyPI summaries as word counts (bench/knn_data.py's bag of words), or skip."""
    import itertools
    import lzma
    import re
    path = os.path.join(DATA, "text/pypi-summaries.tsv.xz")
    if not DATA or not os.path.exists(path):
        pytest.skip("no ../shared/data/text/pypi-summaries.tsv.xz")
    word, vocab, indptr, indices = re.compile(r"[a-z0-9]+"), {}, [0], []
    with lzma.open(path, "rt", encoding="utf-8") as f:
        for line in itertools.islice(f, nrows):
            for t in word.findall(line.split("\t", 1)[1].lower()) if "\t" in line else []:
                indices.append(vocab.setdefault(t, len(vocab)))
            indptr.append(len(indices))
    m = sp.csr_matrix((np.ones(len(indices), np.float32), indices, indptr), shape=(len(indptr) - 1, len(vocab)))
    m.sum_duplicates()
    return m


@pytest.mark.parametrize("metric", ["euclidean", "sqeuclidean", "cosine", "manhattan", "jaccard", "hellinger",
                                    "braycurtis", "jensenshannon", "inner_product", "correlation", "chebyshev"])
def test_host_overlap_path_equals_dense_path_on_real_text(metric, monkeypatch):
    """The host k-NN's overlap path (the default) against the dense path (SPARSERING_KNN_OVERLAP=0)
    on 20,000 PyPI summaries: the same neighbours and the same distances, bit for bit."""
    X = pypi_summaries(20000)
    ctx = sr.Context("cpu")
    Q = X[7000:7300]
    got = sr.kneighbors(X, Q, 10, metric, context=ctx)
    monkeypatch.setenv("SPARSERING_KNN_OVERLAP", "0")
    want = sr.kneighbors(X, Q, 10, metric, context=ctx)
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(got[0], want[0])


@pytest.mark.skipif(not any(name == "cuda" for name, _ in CONTEXTS), reason="no usable GPU")
@pytest.mark.parametrize("metric", ["cosine", "inner_product", "euclidean"])
def test_device_overlap_path_agrees_with_dense_path_on_real_text(metric, monkeypatch):
    """The device k-NN's overlap path (SPARSERING_KNN_OVERLAP=1; euclidean, which it does not take,
    falls to the default) against the default device path (the tiles, which sum as the dense kernel
    does) on 20,000 PyPI summaries. The tiles sum a pair's terms in float32 in an order their
    atomics pick, the overlap path in column order: distances agree to rounding, and neighbours
    differ only where two distances tie to that rounding."""
    X = pypi_summaries(20000)
    ctx = sr.Context("cuda")
    Xd = sr.Matrix(X, context=ctx, location="device")
    Qd = sr.Matrix(X[7000:7300], context=ctx, location="device")
    monkeypatch.setenv("SPARSERING_KNN_OVERLAP", "1")
    got = sr.kneighbors(Xd, Qd, 10, metric, context=ctx)
    monkeypatch.setenv("SPARSERING_KNN_OVERLAP", "0")
    want = sr.kneighbors(Xd, Qd, 10, metric, context=ctx)
    scale = max(1.0, float(np.abs(want[0]).max()))
    np.testing.assert_allclose(got[0], want[0], rtol=0, atol=1e-5 * scale)
    swapped = got[1] != want[1]
    assert swapped.mean() < 0.01, f"{swapped.sum()} of {swapped.size} neighbours differ"


from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402


@parametrize_with_checks([sr.NearestNeighbors(context=sr.Context("cpu")), sr.NearestNeighbors(metric="cosine")])
def test_scikit_learn_estimator_checks(estimator, check):
    """scikit-learn's own estimator checks, every one (clone, fit validation, pickling, tags)."""
    check(estimator)


def test_fitted_estimator_pickles_and_answers_the_same(ctx, rng):
    """A fitted model pickles (its index as scipy, its context as its settings) and the loaded one
    answers as the original; so does a bare Context."""
    import pickle
    X = random_csr(rng, 400, 60, 0.1, np.float32)
    nn = sr.NearestNeighbors(n_neighbors=4, metric="cosine", context=ctx).fit(X)
    d, i = nn.kneighbors(X[:30])
    loaded = pickle.loads(pickle.dumps(nn))
    d2, i2 = loaded.kneighbors(X[:30])
    np.testing.assert_array_equal(i2, i)
    np.testing.assert_array_equal(d2, d)
    assert loaded.context.backend == ctx.backend
    c = pickle.loads(pickle.dumps(sr.Context("cpu", threads=2)))
    assert c.backend == "cpu" and c.options()["threads"] == 2
    assert pickle.loads(pickle.dumps(sr.default_context())) is sr.default_context()


def test_fit_refuses_what_scikit_learn_refuses(ctx):
    with pytest.raises(ValueError, match="NaN"):
        sr.NearestNeighbors(context=ctx).fit(np.array([[1.0, np.nan], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="0 sample"):
        sr.NearestNeighbors(context=ctx).fit(np.zeros((0, 3)))
    with pytest.raises(ValueError, match="Complex"):
        sr.NearestNeighbors(context=ctx).fit(np.array([[1 + 1j, 0], [0, 1]]))
    nn = sr.NearestNeighbors(n_neighbors=1, context=ctx).fit(np.eye(3))
    with pytest.raises(ValueError, match="X has 2 features, but NearestNeighbors is expecting 3"):
        nn.kneighbors(np.ones((1, 2)))
