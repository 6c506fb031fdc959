"""test_api.py: scipy and numpy in and out, statistics, Vectors, GMRES and PageRank reports."""

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

import mixsparse as ms

U64 = 2.0**-53


def small(seed=3, rows=40, cols=30):
    return sp.random(rows, cols, density=0.15, format="coo", random_state=seed) * 4 - sp.eye(rows, cols)


SCIPY_KINDS = ["csr_matrix", "csc_matrix", "coo_matrix", "bsr_matrix", "lil_matrix", "dok_matrix",
               "dia_matrix", "csr_array", "csc_array", "coo_array", "lil_array"]  # fmt: skip


@pytest.mark.parametrize("kind", [k for k in SCIPY_KINDS if hasattr(sp, k)])
def test_from_scipy_any_kind_round_trips(ctx, kind):
    A = small().tocsr()
    M = ms.Matrix.from_scipy(getattr(sp, kind)(A), ctx)
    assert M.shape == A.shape and M.nnz == A.nnz
    B = M.to_scipy()
    assert B.format == "csr" and B.shape == A.shape
    assert abs(B - A).max() == 0  # fp64 copies, exactly
    assert ms.Matrix.from_scipy(A.toarray(), ctx).nnz == A.nnz  # dense input too


def test_duplicates_are_summed(ctx):
    A = sp.coo_array(([1.0, 2.0, 3.0], ([0, 0, 1], [1, 1, 0])), shape=(2, 2))
    M = ms.Matrix.from_scipy(A, ctx)
    assert M.nnz == 2
    assert M.to_scipy().toarray().tolist() == [[0.0, 3.0], [3.0, 0.0]]


def test_read_mtx_matches_scipy(ctx, tmp_path):
    A = small(seed=5).tocsr()
    path = tmp_path / "a.mtx"
    scipy.io.mmwrite(str(path), A, precision=17)
    M = ms.read_mtx(path, ctx)
    assert abs(M.to_scipy() - A).max() == 0


def test_analyze(ctx):
    A = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(10, 10)).tocsr()
    s = ms.Matrix.from_scipy(A, ctx).analyze()
    assert (s["rows"], s["cols"], s["nnz"]) == (10, 10, 28)
    assert (s["row_min"], s["row_max"], s["diagonals"], s["bandwidth"]) == (2, 3, 3, 1)
    assert (s["lower_bandwidth"], s["upper_bandwidth"], s["empty_rows"]) == (1, 1, 0)
    assert s["row_mean"] == 2.8
    assert s["abs_mean"] == pytest.approx(np.mean(abs(A.data)), rel=1e-15)
    assert s["dia_fill"] == pytest.approx((10 * 3 - 28) / 28, rel=1e-15)


def test_generate_and_properties(ctx):
    A = ms.Matrix.generate("laplace2d:8", ctx)
    assert A.shape == (64, 64) and A.nnz == 64 * 5 - 4 * 8
    assert (A.format, A.precision) == ("csr", "f64")
    B = A.convert(format="ell", precision="f16")
    assert B.nbytes < A.nbytes and B.choice_reason
    assert B.spmv_bytes() > 0 and "ell" in repr(B)
    C = A.convert(format="auto", precision="f64")
    assert C.format in ms.formats
    with pytest.raises(ms.NotSupportedError):
        B.set_kernel("merge")


def test_matmul_two_dimensional(ctx):
    A = small().tocsr()
    X = np.random.default_rng(1).standard_normal((A.shape[1], 3))
    M = ms.Matrix.from_scipy(A, ctx)
    Y = M @ X
    M_i = abs(A) @ abs(X)
    assert Y.shape == (A.shape[0], 3)
    m = np.diff(A.indptr)[:, None] + 4  # roundings per row in each of the two evaluations
    assert np.all(abs(Y - A @ X) <= 2 * m * U64 / (1 - m * U64) * M_i)


def test_vectors_stay_on_the_device(ctx):
    """Products and vector operations between Vectors move no data to the host; reading a
    result copies it back once (on the CPU backend nothing is ever copied)."""
    A = ms.Matrix.generate("laplace2d:16", ctx)
    x = ms.Vector(np.ones(256), ctx)
    y = A @ x
    before = y.transfers
    for _ in range(5):
        ms.spmv(1.0, A, x, 0.5, y)
        ms.axpby(0.25, x, 1.0, y)
    assert y.transfers == before
    h = y.to_numpy()
    after = y.transfers
    assert after - before <= 1 and (ctx.backend == "cpu" or after == before + 1)
    y.to_numpy()
    assert y.transfers == after  # the host copy is current now
    # Every intermediate is a short dyadic fraction: exact in fp64, whatever the order.
    ref = np.ones(256)
    S = A.to_scipy()
    r = S @ ref
    for _ in range(5):
        r = S @ ref + 0.5 * r + 0.25 * ref
    assert np.array_equal(h, r)


def test_vector_operations(ctx):
    a, b = np.arange(1.0, 6.0), np.array([2.0, -1.0, 0.5, 3.0, -2.0])
    x, y = ms.Vector(a, ctx), ms.Vector(b, ctx)
    assert ms.dot(x, y) == a @ b
    assert ms.nrm1(y) == abs(b).sum()
    assert ms.nrm2(x) == pytest.approx(np.linalg.norm(a), rel=4 * U64)
    ms.scale(2.0, x)
    assert np.array_equal(np.asarray(x), 2 * a)
    ms.copy(y, x)
    assert np.array_equal(x.to_numpy(), b)
    x.fill(0.5)
    assert np.array_equal(x.to_numpy(), np.full(5, 0.5))
    with pytest.raises(ms.InvalidArgumentError):
        ms.dot(x, b)  # a numpy array is not a Vector


def test_vector_mtx_round_trip(ctx, tmp_path):
    v = np.random.default_rng(2).standard_normal(17)
    ms.Vector(v, ctx).write_mtx(tmp_path / "v.mtx")
    w = ms.Vector.read_mtx(tmp_path / "v.mtx", ctx)
    assert np.array_equal(w.to_numpy(), v)  # %.17g round-trips


def test_gmres_against_scipy(ctx):
    A = ms.Matrix.generate("convdiff3d:8", ctx)
    S = A.to_scipy()
    b = np.random.default_rng(4).standard_normal(S.shape[0])
    x, rep = ms.gmres(A, b, rtol=1e-10, history=True)
    assert isinstance(rep, ms.GmresReport) and rep.converged
    res = np.linalg.norm(b - S @ x) / np.linalg.norm(b)
    assert res <= 1e-10 * (1 + 1e-6)
    # The report's explicit residual is the same quantity up to rounding in its evaluation.
    scale = (abs(S) @ abs(x)).max() + abs(b).max()
    assert abs(res - rep.rel_residual) <= 64 * U64 * scale * np.sqrt(S.shape[0]) / np.linalg.norm(b)
    # history[k]: the recurrence's relative residual after k iterations, from 1 (x0 = 0).
    assert rep.history.shape == (rep.iterations + 1,) and rep.history[0] == 1.0
    assert rep.history[-1] <= 1e-10
    assert rep.cycle_precisions == ["f64"] * (rep.restarts + 1)
    assert rep.iterations_by_precision == {"f64": rep.iterations}
    xs = scipy.sparse.linalg.spsolve(S.tocsc(), b)
    assert np.linalg.norm(x - xs) / np.linalg.norm(xs) < 1e-7


def test_cb_gmres_reports_its_basis(ctx):
    A = ms.Matrix.generate("poisson3d:8", ctx)
    b = ms.Vector(np.ones(512), ctx)
    x, rep = ms.gmres(A, b, rtol=1e-8, basis_precision="f16", restart=30)
    assert isinstance(x, ms.Vector) and rep.converged
    assert set(rep.cycle_precisions) == {"f16"} and rep.iterations_by_precision == {"f16": rep.iterations}
    assert rep.basis_bytes > 0 and rep.time_s >= 0
    assert 0 <= rep.setup_s <= rep.time_s
    _, auto = ms.gmres(A, np.ones(512), rtol=1e-8, basis_auto=True)
    assert auto.cycle_precisions[0] == "f32"
    _, capped = ms.gmres(A, np.ones(512), rtol=1e-14, max_iters=3)
    assert not capped.converged and capped.iterations == 3


@pytest.mark.skipif(not ms._lib.has("msp_pagerank"), reason="msp_pagerank is not in this build of the library")
@pytest.mark.parametrize("precision", ["f64", "cpms2", "cpms4"])
@pytest.mark.parametrize("order", ["natural", "degree"])
def test_pagerank_against_power_iteration(ctx, precision, order):
    G = sp.random(60, 60, density=0.08, format="csr", random_state=9)
    G.data[:] = 1.0
    p, rep = ms.pagerank(ms.Matrix.from_scipy(G, ctx), tol=1e-13, precision=precision, order=order)
    assert isinstance(rep, ms.PagerankReport) and rep.converged and rep.storage == precision
    assert rep.order == order
    assert sum(rep.iterations_by_bits.values()) == rep.iterations and 64 in rep.iterations_by_bits
    # Reference: p = alpha G^T D^-1 p + (alpha s + 1 - alpha) / n, s = mass on dangling nodes.
    n, alpha = 60, 0.85
    out = np.asarray(G.sum(axis=1)).ravel()
    dangling = out == 0
    q = np.full(n, 1.0 / n)
    for _ in range(2000):
        s = q[dangling].sum()
        new = alpha * (G.T @ np.where(dangling, 0.0, q / np.where(dangling, 1.0, out))) + (alpha * s + 1 - alpha) / n
        if abs(new - q).sum() < 1e-15:
            q = new
            break
        q = new
    assert rep.dangling == int(dangling.sum())
    assert abs(p.sum() - 1) < 1e-12 and abs(p - q).sum() < 1e-11


def test_device_queries():
    n = ms.device_count()
    assert n >= 0
    if n:
        d = ms.device_info(0)
        assert d["name"] and d["multiprocessors"] > 0
