"""test_scipy_gmres.py: SciPy's own GMRES test cases (modelled on the cases of
scipy/sparse/linalg/_isolve/tests/test_iterative.py: the same systems, tolerances and
assertions) run against mixsparse.linalg.gmres on every backend: the same convergence outcome
as SciPy's info, the true residual within the tolerance. Where SciPy passes a LinearOperator
preconditioner, mixsparse's own preconditioners ("jacobi", "ilu0") take its place, and the
LinearOperator is checked to be refused with a clear message."""

import itertools
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

import mixsparse as ms
import mixsparse.linalg as msl

needs_monitor = pytest.mark.skipif(
    not ms.has_monitor(), reason="SKIPPED: this libmixsparse has no solver monitor (callbacks "
    "per inner iteration need msp_solver_options.monitor)")  # fmt: skip


class Case:
    def __init__(self, name, A, b=None, converges=True):
        self.name = name
        self.A = A
        self.b = np.arange(A.shape[0], dtype=A.dtype) if b is None else b
        self.converges = converges  # GMRES converges on it (in SciPy too)

    def __repr__(self):
        return self.name


def _cases():
    """SciPy's IterativeParams, the real cases (the complex ones are checked to be refused)."""
    cases = []
    N = 40
    data = np.ones((3, N))
    data[0, :] = 2
    data[1, :] = -1
    data[2, :] = -1
    poisson1d = sp.dia_array((data, [0, -1, 1]), shape=(N, N)).tocsr()
    cases.append(Case("poisson1d", poisson1d))
    cases.append(Case("poisson1d-F", poisson1d.astype(np.float32)))
    cases.append(Case("neg-poisson1d", -poisson1d))
    cases.append(Case("neg-poisson1d-F", (-poisson1d).astype("f")))
    poisson2d = sp.kronsum(poisson1d, poisson1d)
    cases.append(Case("poisson2d", poisson2d))
    cases.append(Case("poisson2d-F", poisson2d.astype("f")))
    data = np.array([[6, -5, 2, 7, -1, 10, 4, -3, -8, 9]], dtype="d")
    rand_diag = sp.dia_array((data, [0]), shape=(10, 10)).tocsr()
    cases.append(Case("rand-diag", rand_diag))
    cases.append(Case("rand-diag-F", rand_diag.astype("f")))
    rng = np.random.RandomState(1234)
    data = rng.rand(4, 4)
    cases.append(Case("rand", data))
    cases.append(Case("rand-F", data.astype("f")))
    rng = np.random.RandomState(1234)
    data = rng.rand(4, 4)
    data = data + data.T
    cases.append(Case("rand-sym", data))
    cases.append(Case("rand-sym-F", data.astype("f")))
    np.random.seed(1234)
    data = np.random.rand(9, 9)
    data = np.dot(data.conj(), data.T)
    cases.append(Case("rand-sym-pd", data))
    cases.append(Case("rand-sym-pd-F", data.astype("f")))
    data = np.ones((2, 10))
    data[0, :] = 2
    data[1, :] = -1
    A = sp.dia_array((data, [0, -1]), shape=(10, 10)).tocsr()
    cases.append(Case("nonsymposdef", A))
    A = np.array([[0, 0, 0, 0, 0, 1, -1, -0, -0, -0, -0],
                  [0, 0, 0, 0, 0, 2, -0, -1, -0, -0, -0],
                  [0, 0, 0, 0, 0, 2, -0, -0, -1, -0, -0],
                  [0, 0, 0, 0, 0, 2, -0, -0, -0, -1, -0],
                  [0, 0, 0, 0, 0, 1, -0, -0, -0, -0, -1],
                  [1, 2, 2, 2, 1, 0, -0, -0, -0, -0, -0],
                  [-1, 0, 0, 0, 0, 0, -1, -0, -0, -0, -0],
                  [0, -1, 0, 0, 0, 0, -0, -1, -0, -0, -0],
                  [0, 0, -1, 0, 0, 0, -0, -0, -1, -0, -0],
                  [0, 0, 0, -1, 0, 0, -0, -0, -0, -1, -0],
                  [0, 0, 0, 0, -1, 0, -0, -0, -0, -0, -1]], dtype=float)  # fmt: skip
    b = np.array([0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0], dtype=float)
    cases.append(Case("sym-nonpd", A, b))
    return cases


CASES = _cases()


def assert_success(A, x, b, rtol=1.0, atol=0.0, less_equal=False):
    """SciPy's _assert_success: ||A x - b|| < atol + rtol ||b|| (computed here in fp64)."""
    A64 = A.astype(np.float64) if hasattr(A, "astype") else A
    err = np.linalg.norm(A64 @ x - np.asarray(b, dtype=np.float64))
    limit = atol + rtol * np.linalg.norm(np.asarray(b, dtype=np.float64))
    assert err <= limit if less_equal else err < limit, (err, limit)


def _scipy_rtol(**kw):
    """SciPy's own gmres takes rtol from 1.12 on, tol before."""
    import inspect

    from scipy.sparse.linalg import gmres

    if "rtol" not in inspect.signature(gmres).parameters:
        kw["tol"] = kw.pop("rtol")
    return kw


@pytest.fixture(params=CASES, ids=[c.name for c in CASES])
def case(request):
    return request.param


@pytest.fixture
def solve(ctx):
    """mixsparse.linalg.gmres on the test's context."""

    def run(*args, **kwargs):
        return msl.gmres(*args, context=ctx, **kwargs)

    return run


@needs_monitor
def test_maxiter(case, solve):
    residuals = []

    def callback(r):
        residuals.append(r)

    with pytest.warns(DeprecationWarning, match="callback_type"):
        x, info = solve(case.A, case.b, x0=0 * case.b, rtol=1e-12, maxiter=1, callback=callback)
    assert len(residuals) == 1
    assert info == 1


def test_convergence(case, solve):
    rtol = 1e-8 if case.A.dtype == np.float64 else 1e-2
    b = case.b
    x0 = 0 * b
    x, info = solve(case.A, b, x0=x0, rtol=rtol)
    assert np.array_equal(x0, 0 * b)  # x0 is not overwritten
    assert x.dtype == np.float64 and x.shape == b.shape
    if case.converges:
        assert info == 0
        assert_success(case.A, x, b, rtol=rtol)
    else:
        assert info != 0
        assert_success(case.A, x, b, rtol=1, less_equal=True)


@pytest.mark.parametrize("M", [None, "jacobi", "ilu0", msl.Preconditioner("jacobi")])
def test_precond(case, solve, M):
    """SciPy's test_precond_dummy with mixsparse's own preconditioners where the matrix has the
    diagonal they need (ILU(0) and Jacobi refuse a zero pivot, naming the row)."""
    rtol = 1e-8 if case.A.dtype == np.float64 else 1.4e-3
    A = case.A
    diag = (A.diagonal() if sp.issparse(A) else np.diag(A)).astype(np.float64)
    kind = getattr(M, "kind", M)
    if kind is not None and not np.all(diag):
        with pytest.raises(ms.InvalidMatrixError, match="row"):
            solve(A, case.b, M=M, x0=0 * case.b, rtol=rtol)
        return
    x, info = solve(A, case.b, M=M, x0=0 * case.b, rtol=rtol)
    assert info == 0
    assert_success(A, x, case.b, rtol=rtol)


def test_linear_operator_preconditioner_refused(solve):
    A = CASES[0].A
    identity = LinearOperator(A.shape, lambda v: v, rmatvec=lambda v: v)
    for M in (identity, np.eye(A.shape[0]), sp.eye(A.shape[0])):
        with pytest.raises(TypeError, match="LinearOperator"):
            solve(A, CASES[0].b, M=M)


def test_atol(solve):
    rng = np.random.default_rng(168441431005389)
    A = rng.uniform(size=(10, 10))
    A = A @ A.T + 10 * np.eye(10)
    b = 1e3 * rng.uniform(size=10)
    tols = np.r_[0, np.logspace(-9, 2, 7), np.inf]
    for M, rtol, atol in itertools.product([None, "jacobi", "ilu0"], tols, tols):
        if rtol == 0 and atol == 0:
            continue
        x, info = solve(A, b, M=M, rtol=rtol, atol=atol)
        assert info == 0
        assert_success(A, x, b, rtol=rtol, atol=atol, less_equal=True)


def test_zero_rhs(solve):
    rng = np.random.default_rng(1684414984100503)
    A = rng.random(size=(10, 10))
    A = A @ A.T + 10 * np.eye(10)
    b = np.zeros(10)
    for tol in np.logspace(-10, 2, 7):
        x, info = solve(A, b, rtol=tol)
        assert info == 0
        np.testing.assert_allclose(x, 0, atol=1e-15)
        x, info = solve(A, b, rtol=tol, x0=np.ones(10))
        assert info == 0
        np.testing.assert_allclose(x, 0, atol=tol)
        x, info = solve(A, b, rtol=tol, atol=0.0, x0=np.ones(10))
        if info == 0:
            np.testing.assert_allclose(x, 0)
        x, info = solve(A, b, rtol=tol, atol=tol)
        assert info == 0
        np.testing.assert_allclose(x, 0, atol=1e-300)
        x, info = solve(A, b, rtol=tol, atol=0.0)
        assert info == 0
        np.testing.assert_allclose(x, 0, atol=1e-300)


def test_maxiter_worsening_is_refused_as_complex(solve):
    # SciPy's test_maxiter_worsening uses a complex matrix: mixsparse refuses it by name.
    A = np.array([[-0.11, 0, 0, 0.16], [0, -0.13 + 6.28j, 0, 0], [0, 0, -0.13 - 6.28j, 0],
                  [0.11, 0j, 0j, -0.16]])  # fmt: skip
    with pytest.raises(TypeError, match="complex"):
        solve(A, np.ones(4), maxiter=3, rtol=1e-8, atol=0.0)


def _random_system():
    rng = np.random.default_rng(1685363802304750)
    A = rng.random(size=(10, 10))
    A = A @ A.T
    return A, rng.random(10), rng.random(10)


def test_x0_working(solve):
    A, b, x0 = _random_system()
    x, info = solve(A, b, atol=0.0, rtol=1e-6)
    assert info == 0
    assert_success(A, x, b, rtol=1e-6)
    x, info = solve(A, b, x0=x0, atol=0.0, rtol=1e-6)
    assert info == 0
    assert_success(A, x, b, rtol=1e-5)


@pytest.mark.parametrize("M", [None, "jacobi"])
def test_x0_equals_Mb(case, solve, M):
    A = case.A
    if M == "jacobi" and not np.all(A.diagonal() if sp.issparse(A) else np.diag(A)):
        pytest.skip("Jacobi needs a full diagonal (refusal tested in test_precond)")
    rtol = 1e-8 if case.A.dtype == np.float64 else 1.5e-3
    x0 = "Mb"
    x, info = solve(A, case.b, x0=x0, rtol=rtol, M=M)
    assert x0 == "Mb"
    assert info == 0
    assert_success(A, x, case.b, rtol=rtol)


def test_x0_solves_problem_exactly(solve):
    mat = np.eye(2)
    rhs = np.array([-1.0, -1.0])
    sol, info = solve(mat, rhs, x0=rhs)
    np.testing.assert_allclose(sol, rhs)
    assert info == 0


def test_positional_error(solve):
    A, b, x0 = _random_system()
    with pytest.raises(TypeError):
        msl.gmres(A, b, x0, 1e-5)


@pytest.mark.parametrize("atol", ["legacy", None, -1])
def test_invalid_atol(solve, atol):
    A, b, x0 = _random_system()
    with pytest.raises(ValueError):
        solve(A, b, x0, atol=atol)


def test_basic(solve):
    A = np.vander(np.arange(10) + 1)[:, ::-1]
    b = np.zeros(10)
    b[0] = 1
    x_gm, err = solve(A, b, restart=5, maxiter=1)
    np.testing.assert_allclose(x_gm[0], 0.359, rtol=1e-2)
    assert err == 1


@needs_monitor
def test_callback(solve):
    def store_residual(r, rvec):
        rvec[rvec.nonzero()[0].max() + 1] = r

    A = sp.csr_array(np.array([[-2, 1, 0, 0, 0, 0], [1, -2, 1, 0, 0, 0], [0, 1, -2, 1, 0, 0],
                               [0, 0, 1, -2, 1, 0], [0, 0, 0, 1, -2, 1], [0, 0, 0, 0, 1, -2]]))
    b = np.ones((A.shape[0],))
    maxiter = 1
    rvec = np.zeros(maxiter + 1)
    rvec[0] = 1.0
    with pytest.warns(DeprecationWarning, match="callback_type"):
        x, flag = solve(A, b, x0=np.zeros(A.shape[0]), rtol=1e-16, maxiter=maxiter,
                        callback=lambda r: store_residual(r, rvec))  # fmt: skip
    # The value SciPy has given since 1.0.0 (SciPy's preconditioned variant, M = 1e-3 I as a
    # matrix, is a LinearOperator M: refused, see test_linear_operator_preconditioner_refused).
    np.testing.assert_allclose(rvec, np.array([1.0, 0.81649658092772603]), rtol=1e-10)
    assert flag == 1


def test_complex_refused(solve):
    A = np.eye(2)
    b = np.ones(2)
    x, info = solve(A, b)
    np.testing.assert_allclose(x, b)
    assert info == 0
    with pytest.raises(TypeError, match="complex"):
        solve(A.astype(complex), b.astype(complex))


def test_atol_legacy(solve):
    A = np.eye(2)
    b = np.ones(2)
    x, info = solve(A, b, rtol=1e-5)
    assert np.linalg.norm(A @ x - b) <= 1e-5 * np.linalg.norm(b)
    np.testing.assert_allclose(x, b, atol=0.0, rtol=1e-8)
    rndm = np.random.RandomState(12345)
    A = rndm.rand(30, 30)
    b = 1e-6 * np.ones(30)
    x, info = solve(A, b, rtol=1e-7, restart=20)
    assert np.linalg.norm(A @ x - b) > 1e-7
    A = np.eye(2)
    b = 1e-10 * np.ones(2)
    x, info = solve(A, b, rtol=1e-8, atol=0.0)
    assert np.linalg.norm(A @ x - b) <= 1e-8 * np.linalg.norm(b)


def test_defective_matrix_breakdown(solve):
    A = np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0]])
    b = np.array([1, 0, 1])
    rtol = 1e-8
    x, info = solve(A, b, rtol=rtol, atol=0)
    assert not np.isnan(x).any()  # no NaN, no false success
    if info == 0:
        assert np.linalg.norm(A @ x - b) <= rtol * np.linalg.norm(b)
    else:
        assert info == 10 * 3  # maxiter's default, as SciPy
    np.testing.assert_allclose(A @ (A @ x), A @ b)  # right outside A's null space


@needs_monitor
def test_callback_type(solve):
    np.random.seed(1)
    A = np.random.rand(20, 20)
    b = np.random.rand(20)
    cb_count = [0]

    def pr_norm_cb(r):
        cb_count[0] += 1
        assert isinstance(r, float)

    def x_cb(x):
        cb_count[0] += 1
        assert isinstance(x, np.ndarray)

    with pytest.warns(DeprecationWarning, match="callback_type"):
        x, info = solve(A, b, rtol=1e-6, atol=0.0, callback=pr_norm_cb, maxiter=2, restart=50)
    assert info == 2 and cb_count[0] == 2
    cb_count = [0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # callback_type given: no warning
        x, info = solve(A, b, rtol=1e-6, atol=0.0, callback=pr_norm_cb, maxiter=2, restart=50,
                        callback_type="legacy")  # fmt: skip
    assert info == 2 and cb_count[0] == 2
    cb_count = [0]
    x, info = solve(A, b, rtol=1e-6, atol=0.0, callback=pr_norm_cb, maxiter=2, restart=50,
                    callback_type="pr_norm")  # fmt: skip
    assert info == 0 and cb_count[0] > 2
    cb_count = [0]
    x, info = solve(A, b, rtol=1e-6, atol=0.0, callback=x_cb, maxiter=2, restart=50,
                    callback_type="x")  # fmt: skip
    assert info == 0 and cb_count[0] == 1


def test_callback_x_monotonic(solve):
    rng = np.random.RandomState(1)
    A = rng.rand(20, 20) + np.eye(20)
    b = rng.rand(20)
    prev_r = [np.inf]
    count = [0]

    def x_cb(x):
        r = np.linalg.norm(A @ x - b)
        assert r <= prev_r[0]
        prev_r[0] = r
        count[0] += 1

    x, info = solve(A, b, rtol=1e-6, atol=0.0, callback=x_cb, maxiter=20, restart=10,
                    callback_type="x")  # fmt: skip
    assert info == 20
    assert count[0] == 20


def test_maxiter_zero(solve):
    with pytest.raises(ValueError, match="maxiter"):
        solve(np.eye(3), np.ones(3), maxiter=0)


def test_callback_stops_the_solve(solve):
    A = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(200, 200), format="csr")
    b = np.ones(200)
    seen = []

    def stop_after_two(x):
        seen.append(np.linalg.norm(A @ x - b))
        if len(seen) == 2:
            raise StopIteration

    x, info, rep = solve(A, b, restart=5, callback=stop_after_two, callback_type="x",
                         return_report=True)  # fmt: skip
    assert len(seen) == 2 and info > 0 and rep.stopped and not rep.converged
    assert rep.iterations == 10 and rep.info == info

    def fail(x):
        raise KeyError("from the callback")

    with pytest.raises(KeyError, match="from the callback"):
        solve(A, b, restart=5, callback=fail, callback_type="x")


@needs_monitor
def test_pr_norm_callback_stops_and_propagates(solve):
    A = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(200, 200), format="csr")
    b = np.ones(200)
    seen = []

    def stop_at_five(r):
        seen.append(r)
        if len(seen) == 5:
            raise StopIteration

    x, info, rep = solve(A, b, callback=stop_at_five, callback_type="pr_norm",
                         return_report=True)  # fmt: skip
    assert len(seen) == 5 and rep.stopped and info > 0 and rep.iterations == 5
    assert all(later <= earlier for earlier, later in zip(seen, seen[1:]))

    def fail(r):
        raise ZeroDivisionError("from the callback")

    with pytest.raises(ZeroDivisionError, match="from the callback"):
        solve(A, b, callback=fail, callback_type="pr_norm")


def test_against_scipy_gmres(solve):
    """The same systems solved by SciPy's own gmres: same info, solutions alike."""
    from scipy.sparse.linalg import gmres

    for case in CASES:
        if case.A.dtype != np.float64:
            continue
        xs, infos = gmres(case.A, case.b, atol=0.0, **_scipy_rtol(rtol=1e-10))
        x, info = solve(case.A, case.b, rtol=1e-10)
        assert (info == 0) == (infos == 0), case.name
        if info == 0:
            assert_success(case.A, x, case.b, rtol=1e-10)
            dense = case.A.toarray() if sp.issparse(case.A) else case.A
            # The 2-D Poisson matrix's condition number is that of the 1-D one (about 680 on
            # 40 points): no SVD of its 1600 x 1600 dense copy.
            scale = np.linalg.cond(dense) if dense.shape[0] <= 100 else 1e3
            np.testing.assert_allclose(x, xs, atol=1e-8 * scale * np.abs(xs).max())


def test_report_on_request(solve):
    A = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(100, 100), format="csr")
    b = np.ones(100)
    x, info, rep = solve(A, b, rtol=1e-10, restart=30, basis_precision="f32", history=True,
                         return_report=True)  # fmt: skip
    assert info == 0 and rep.info == 0 and rep.converged
    assert rep.iterations == rep.iterations_by_precision["f32"]
    assert rep.history.shape == (rep.iterations + 1,) and rep.history[-1] <= 1e-10
    assert_success(A, x, b, rtol=1e-10)
    x2, info2, auto = solve(A, b, rtol=1e-10, restart=30, basis_precision="auto",
                            return_report=True)  # fmt: skip
    assert info2 == 0 and "f32" in auto.iterations_by_precision
    x3, info3, f32 = solve(A, b, rtol=1e-10, precision="f32", format="ell", return_report=True)
    assert info3 == 0 and f32.converged
    assert np.linalg.norm(A @ x3 - b) <= 1e-10 * np.linalg.norm(b)  # the fp32-stored system


def test_large_values_and_infinite_tolerances(solve):
    A = 2.0 * np.eye(3)
    b = np.full(3, 1e200)  # ||b|| overflows in fp64: not an infinite tolerance
    x, info = solve(A, b)
    assert info == 0 and np.allclose(x, 5e199)
    x, info = solve(A, np.ones(3), x0=np.full(3, 7.0), rtol=np.inf)
    assert info == 0 and x.tolist() == [7.0, 7.0, 7.0]  # SciPy returns the initial guess
    with pytest.raises(ms.NonFiniteError, match="b holds"):
        solve(A, np.array([1.0, np.nan, 1.0]))
