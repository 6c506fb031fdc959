"""test_interop.py: a Matrix as SciPy sees it (LinearOperator protocol, scipy's own solvers,
the transpose product), every scipy.sparse format and numpy arrays in, conversions that keep
fp64, clear refusals, and mixsparse.linalg.pagerank against networkx's algorithm."""

import threading

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import mixsparse as ms
import mixsparse.linalg as msl

FORMATS = ["csr", "csc", "coo", "bsr", "dia", "dok", "lil"]


def _scipy_rtol(value):
    import inspect

    return {"rtol" if "rtol" in inspect.signature(spla.gmres).parameters else "tol": value}


def convection(n, seed=7):
    """A nonsymmetric, diagonally dominant sparse matrix with empty-ish rows and a long row."""
    rng = np.random.default_rng(seed)
    A = sp.random(n, n, density=4.0 / n, random_state=rng, format="lil")
    A[0, :] = rng.random(n) * 0.01
    A = A + sp.diags([-1.0, 4.0, -2.0], [-1, 0, 1], shape=(n, n))
    return sp.csr_matrix(A)


def every_format(A):
    """A in each scipy.sparse format, as *_matrix and (where SciPy has it) *_array."""
    for fmt in FORMATS:
        yield "%s_matrix" % fmt, getattr(sp, "%s_matrix" % fmt)(A)
        if hasattr(sp, "%s_array" % fmt):
            yield "%s_array" % fmt, getattr(sp, "%s_array" % fmt)(A)


def test_every_scipy_format_in(ctx, rng):
    A = convection(60)
    x = rng.random(60)
    ref = A @ x
    b = A @ np.ones(60)
    count = 0
    for name, S in every_format(A):
        M = ms.Matrix.from_scipy(S, ctx)
        assert (M.to_scipy() != A).nnz == 0, name
        np.testing.assert_allclose(M @ x, ref, rtol=1e-14, atol=1e-14, err_msg=name)
        y, info = msl.gmres(S, b, rtol=1e-12, context=ctx)
        assert info == 0 and np.linalg.norm(A @ y - b) <= 1e-12 * np.linalg.norm(b), name
        count += 1
    assert count >= len(FORMATS)
    # Dense numpy (and nested lists) where a matrix is expected; COO duplicates summed.
    D = A.toarray()
    np.testing.assert_allclose(ms.as_matrix(D, ctx) @ x, ref, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(ms.as_matrix(D.tolist(), ctx) @ x, ref, rtol=1e-14, atol=1e-14)
    dup = sp.coo_matrix(([1.0, 2.0, 4.0], ([0, 0, 1], [1, 1, 0])), shape=(2, 2))
    assert ms.as_matrix(dup, ctx).to_scipy().toarray().tolist() == [[0, 3], [4, 0]]
    # The native entry points take them too.
    xs, rep = ms.gmres(sp.csc_matrix(A), b, rtol=1e-12)
    assert rep.converged and np.linalg.norm(A @ xs - b) <= 1e-12 * np.linalg.norm(b)
    np.testing.assert_allclose(ms.spmv(1.0, sp.coo_array(A), x, 0.0, None), ref, rtol=1e-14,
                               atol=1e-14)  # fmt: skip


def test_scipy_solvers_take_a_matrix(ctx):
    A = convection(80)
    b = A @ np.linspace(1, 2, 80)
    M = ms.Matrix.from_scipy(A, ctx).convert(format="hll", max_fill=100.0)
    x, info = spla.gmres(M, b, atol=0.0, **_scipy_rtol(1e-10))
    assert info == 0 and np.linalg.norm(A @ x - b) <= 1e-10 * np.linalg.norm(b)
    x, info = spla.bicgstab(M, b, atol=0.0, **_scipy_rtol(1e-10))  # uses only matvec
    assert info == 0 and np.linalg.norm(A @ x - b) <= 1e-10 * np.linalg.norm(b)
    x, info = spla.qmr(M, b, atol=0.0, **_scipy_rtol(1e-10))  # needs rmatvec: M.T
    assert info == 0 and np.linalg.norm(A @ x - b) <= 1e-10 * np.linalg.norm(b)
    x, istop = spla.lsqr(M, b, atol=1e-12, btol=1e-12)[:2]  # matvec and rmatvec
    assert np.linalg.norm(A @ x - b) <= 1e-8 * np.linalg.norm(b)


def test_linear_operator_protocol(ctx, rng):
    A = sp.csr_matrix(sp.random(30, 20, density=0.2, random_state=3))  # rectangular
    M = ms.Matrix.from_scipy(A, ctx)
    assert M.shape == (30, 20) and M.dtype == np.float64 and M.ndim == 2
    L = spla.aslinearoperator(M)
    x, y = rng.random(20), rng.random(30)
    X, Y = rng.random((20, 3)), rng.random((30, 4))
    for got, want in [
        (L.matvec(x), A @ x), (L.rmatvec(y), A.T @ y), (L.matmat(X), A @ X),
        (L @ x, A @ x), (L.T @ y, A.T @ y), (L.H @ y, A.T @ y), (L.dot(X), A @ X),
        (M.matvec(x), A @ x), (M.matvec(x[:, None]), A @ x[:, None]), (M.rmatvec(y), A.T @ y),
        (M.matmat(X), A @ X), (M.rmatmat(Y), A.T @ Y), (M.dot(x), A @ x), (M * x, A @ x),
        (M @ X, A @ X), (M.T @ y, A.T @ y), (M.H @ y, A.T @ y), (M.transpose() @ Y, A.T @ Y),
        (y @ M, y @ A), (Y.T @ M, Y.T @ A), (M @ x.tolist(), A @ x),
        (M @ x.astype(np.float32), A @ x.astype(np.float32)),
        (M @ np.asfortranarray(X), A @ X), (M @ x[::-1].copy()[::-1], A @ x),
    ]:  # fmt: skip
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
    assert M.matvec(x[:, None]).shape == (30, 1) and (M @ X).flags.c_contiguous
    assert M.T.T is M and M.T.shape == (20, 30) and M.adjoint() is M.T
    # Scalars and operators give SciPy operators, as LinearOperator does.
    np.testing.assert_allclose((M * 2.0) @ x, 2 * (A @ x), rtol=1e-13)
    np.testing.assert_allclose((3.0 * M) @ x, 3 * (A @ x), rtol=1e-13)
    np.testing.assert_allclose((M @ spla.aslinearoperator(np.eye(20))) @ x, A @ x, rtol=1e-13)
    # Vectors in, Vectors out.
    v = M @ ms.Vector(x, ctx)
    assert isinstance(v, ms.Vector)
    np.testing.assert_allclose(v.to_numpy(), A @ x, rtol=1e-13)


@pytest.mark.parametrize("fmt,prec", [("csr", "f64"), ("csr", "f32"), ("ell", "f64"),
                                      ("hll", "f32"), ("coo", "f64"), ("dia", "f64"),
                                      ("hyb", "bf16"), ("auto", "f64")])  # fmt: skip
def test_transpose_product_against_scipy(ctx, rng, fmt, prec):
    A = convection(70, seed=11)[:, :50]  # rectangular, a long first row
    M = ms.Matrix.from_scipy(A, ctx).convert(format=fmt, precision=prec, max_fill=100.0)
    T = M.T
    assert T.shape == (50, 70) and T.context is M.context and T.precision == prec
    y = rng.random(70)
    stored = A.astype(np.float32).astype(np.float64) if prec == "f32" else A
    if prec == "bf16":
        ref = M.to_scipy()  # the fp64 values as given: bound the bf16 error instead
        got = M.T @ y
        bound = 2.0**-8 * (abs(ref.T) @ abs(y)) * 1.001
        assert (abs(got - ref.T @ y) <= bound).all()
        return
    np.testing.assert_allclose(M.T @ y, stored.T @ y, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(M.rmatvec(y), stored.T @ y, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(y @ M, stored.T @ y, rtol=1e-13, atol=1e-13)


def test_convert_keeps_fp64(ctx, rng):
    A = sp.random(200, 200, density=0.05, random_state=5, format="csr")
    A.data = rng.random(A.nnz) * 1e-3 + np.pi  # values fp32 would round
    x = rng.random(200)
    M = ms.Matrix.from_scipy(A, ctx)
    for B in (M.convert(), M.convert(format="coo"), M.convert(format="ell"),
              M.convert(format="csr", kernel="vector")):  # fmt: skip
        assert B.precision == "f64"
        np.testing.assert_allclose(B @ x, A @ x, rtol=1e-15, atol=0)
    C = M.convert(format="csr", precision="f32")
    assert C.precision == "f32" and C.convert(format="coo").precision == "f32"
    assert np.abs(C @ x - A @ x).max() > 0  # fp32 storage does round these values


def test_products_reuse_their_work_vectors(ctx, rng):
    A = convection(100)
    M = ms.Matrix.from_scipy(A, ctx)
    x = rng.random(100)
    M @ x
    before = len(ctx._children)
    for _ in range(50):
        M @ x
        M @ rng.random((100, 2))
    assert len(ctx._children) == before
    # Threads sharing a matrix get right answers (the second thread takes temporaries).
    errors = []

    def work(seed):
        r = np.random.default_rng(seed)
        for _ in range(200):
            v = r.random(100)
            if not np.allclose(M @ v, A @ v, rtol=1e-14, atol=1e-14):
                errors.append(seed)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    M.close()
    with pytest.raises(ms.InvalidArgumentError, match="closed"):
        M @ x


def test_clear_refusals(ctx):
    A = sp.csr_matrix(np.array([[1.0, 2.0], [0.0, 3.0]]))
    M = ms.Matrix.from_scipy(A, ctx)
    with pytest.raises(TypeError, match="sparse .* is not supported"):
        M @ A
    with pytest.raises(TypeError, match="sparse .* is not supported"):
        M @ M
    with pytest.raises(TypeError, match="sparse .* is not supported"):
        A @ M
    with pytest.raises(TypeError, match="sparse .* is not supported"):
        M * sp.csr_array(A)
    with pytest.raises(TypeError, match="complex"):
        M @ np.array([1.0, 1j])
    with pytest.raises(TypeError, match="complex"):
        M.matvec(np.array([1.0, 1j]))
    with pytest.raises(TypeError, match="complex"):
        ms.Matrix.from_scipy(A.astype(complex), ctx)
    with pytest.raises(TypeError, match="scalar"):
        M @ 2.0
    with pytest.raises(TypeError, match="LinearOperator"):
        ms.as_matrix(spla.aslinearoperator(A), ctx)
    with pytest.raises(ms.DimensionMismatchError, match="x has length 3, A has 2 columns"):
        M @ np.ones(3)
    with pytest.raises(ms.DimensionMismatchError):
        M.matvec(np.ones((2, 2)))
    with pytest.raises(ms.InvalidArgumentError, match="square"):
        msl.gmres(np.ones((2, 3)), np.ones(2), context=ctx)
    with pytest.raises(ms.DimensionMismatchError, match="b has length 3"):
        msl.gmres(A, np.ones(3), context=ctx)
    with pytest.raises(TypeError, match="callable"):
        msl.gmres(A, np.ones(2), callback=3, callback_type="x", context=ctx)
    with pytest.raises(ValueError, match="callback_type"):
        msl.gmres(A, np.ones(2), callback_type="residual", context=ctx)
    with pytest.raises(ms.InvalidArgumentError, match="another context"):
        with ms.Context("cpu") as other:
            ms.as_matrix(M, other)


def networkx_pagerank(A, alpha=0.85, personalization=None, max_iter=100, tol=1e-6,
                      nstart=None, weighted=False):  # fmt: skip
    """networkx's _pagerank_scipy algorithm, written out: A[i, j] an edge i -> j."""
    A = sp.csr_matrix(A, dtype=float)
    if not weighted:
        A.data[:] = 1.0
    n = A.shape[0]
    S = np.asarray(A.sum(axis=1)).ravel()
    Q = sp.diags(np.divide(1.0, S, out=np.zeros(n), where=S != 0)) @ A
    x = np.full(n, 1.0 / n) if nstart is None else nstart / nstart.sum()
    p = np.full(n, 1.0 / n) if personalization is None else personalization / personalization.sum()
    dangling = S == 0
    for _ in range(max_iter):
        xlast = x
        x = alpha * (x @ Q + x[dangling].sum() * p) + (1 - alpha) * p
        if np.abs(x - xlast).sum() < n * tol:
            return x, True
    return x, False


def test_pagerank_like_networkx(ctx, rng):
    G = sp.random(300, 300, density=0.02, random_state=9, format="lil")
    G[5, :] = 0  # a dangling node
    G = sp.csr_matrix(G)
    G.data = rng.random(G.nnz) + 0.1
    pers = rng.random(300)
    start = rng.random(300)
    for kw, ref_kw in [
        ({}, {}),
        ({"alpha": 0.6, "tol": 1e-10}, {"alpha": 0.6, "tol": 1e-10}),
        ({"personalization": pers}, {"personalization": pers}),
        ({"personalization": {3: 1.0, 7: 2.0}},
         {"personalization": np.bincount([3, 7], [1.0, 2.0], 300)}),
        ({"nstart": start, "tol": 1e-9}, {"nstart": start, "tol": 1e-9}),
        ({"weight": "weight"}, {"weighted": True}),
        ({"dangling": pers, "personalization": 2 * pers}, {"personalization": pers}),
    ]:  # fmt: skip
        p = msl.pagerank(G, context=ctx, **kw)
        want, converged = networkx_pagerank(G, **ref_kw)
        assert converged
        assert isinstance(p, np.ndarray) and p.shape == (300,) and abs(p.sum() - 1) < 1e-12
        tol = ref_kw.get("tol", 1e-6)
        assert np.abs(p - want).sum() < 300 * tol * 10, kw
    p, rep = msl.pagerank(ms.as_matrix(G, ctx), return_report=True, precision="cpms2")
    assert rep.converged and rep.dangling == 1 and abs(p.sum() - 1) < 1e-12


def test_pagerank_refusals_and_nonconvergence(ctx):
    G = sp.csr_matrix(np.array([[0, 1, 1], [1, 0, 0], [0, 1, 0]], dtype=float))
    with pytest.raises(msl.PowerIterationFailedConvergence) as e:
        msl.pagerank(G, max_iter=2, tol=1e-14, context=ctx)
    assert e.value.num_iterations == 2 and abs(e.value.ranks.sum() - 1) < 1e-12
    p, rep = msl.pagerank(G, max_iter=2, tol=1e-14, fail_on_nonconvergence=False,
                          return_report=True, context=ctx)  # fmt: skip
    assert not rep.converged and rep.iterations == 2 and abs(p.sum() - 1) < 1e-12
    with pytest.raises(ms.NotSupportedError, match="dangling"):
        msl.pagerank(G, dangling={0: 1.0}, context=ctx)
    with pytest.raises(ms.InvalidArgumentError, match="square"):
        msl.pagerank(np.ones((2, 3)), context=ctx)
    with pytest.raises(TypeError, match="weight"):
        msl.pagerank(G, weight=3, context=ctx)
    with pytest.raises(ms.InvalidArgumentError, match="personalization key"):
        msl.pagerank(G, personalization={7: 1.0}, context=ctx)
    with pytest.raises(TypeError, match="complex"):
        msl.pagerank(G.astype(complex), context=ctx)
    assert msl.pagerank(sp.csr_matrix((0, 0)), context=ctx).shape == (0,)


def test_pagerank_against_networkx_itself(ctx):
    nx = pytest.importorskip("networkx", reason="networkx is not installed: compared with its "
                             "algorithm written out in test_pagerank_like_networkx instead")
    G = sp.random(150, 150, density=0.04, random_state=2, format="csr")
    graph = nx.from_scipy_sparse_array(sp.csr_array(G), create_using=nx.DiGraph)
    for kw in ({}, {"alpha": 0.7, "personalization": {0: 1.0, 9: 3.0}}):
        want = nx.pagerank(graph, weight=None, **kw)
        got = msl.pagerank(G, context=ctx, **kw)
        assert np.abs(got - [want[i] for i in range(150)]).sum() < 150 * 1e-6 * 10
    want = nx.pagerank(graph, weight="weight", tol=1e-10)
    got = msl.pagerank(G, weight="weight", tol=1e-10, context=ctx)
    np.testing.assert_allclose(got, [want[i] for i in range(150)], rtol=1e-6, atol=1e-12)
