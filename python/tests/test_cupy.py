"""test_cupy.py: CuPy arrays and cupyx.scipy.sparse matrices in, CuPy arrays out, on a CUDA
context, with the vectors going device to device (no host copy). Skipped, saying why, without
CuPy or without a usable GPU in this build."""

import numpy as np
import pytest
import scipy.sparse as sp

import mixsparse as ms
import mixsparse.linalg as msl

from conftest import BACKENDS

try:
    import cupy
    import cupyx.scipy.sparse as csp
except ImportError:  # also a CuPy without its CUDA libraries
    cupy = None

pytestmark = [
    pytest.mark.skipif(cupy is None, reason="CuPy tests SKIPPED: CuPy is not installed for "
                       "this interpreter"),  # fmt: skip
    pytest.mark.skipif("cuda" not in BACKENDS, reason="CuPy tests SKIPPED: no CUDA context "
                       "here (a build without CUDA, or no usable GPU)"),  # fmt: skip
]


@pytest.fixture
def cuda():
    c = ms.Context("cuda")
    yield c
    c.close()


def system(n=300, seed=3):
    rng = np.random.default_rng(seed)
    A = sp.random(n, n, density=5.0 / n, random_state=rng, format="csr")
    A = sp.csr_matrix(A + sp.diags([-1.0, 4.0, -1.5], [-1, 0, 1], shape=(n, n)))
    return A, rng.random(n)


def test_products_device_to_device(cuda):
    A, x = system()
    M = ms.Matrix.from_scipy(A, cuda).convert(format="auto")
    xd = cupy.asarray(x)
    y = M @ xd
    assert isinstance(y, cupy.ndarray) and y.dtype == cupy.float64 and y.shape == (300,)
    np.testing.assert_allclose(cupy.asnumpy(y), A @ x, rtol=1e-13, atol=1e-13)
    X = cupy.asarray(np.random.default_rng(1).random((300, 3)))
    Y = M @ X
    assert isinstance(Y, cupy.ndarray) and Y.shape == (300, 3)
    np.testing.assert_allclose(cupy.asnumpy(Y), A @ cupy.asnumpy(X), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(cupy.asnumpy(M.T @ xd), A.T @ x, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(cupy.asnumpy(xd @ M), A.T @ x, rtol=1e-13, atol=1e-13)
    # Strided and float32 CuPy input is made contiguous float64 on the device.
    x2 = cupy.asarray(np.stack([x, x], axis=1))[:, 1]
    np.testing.assert_allclose(cupy.asnumpy(M @ x2), A @ x, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(cupy.asnumpy(M @ xd.astype(cupy.float32)),
                               A @ x.astype(np.float32), rtol=1e-13, atol=1e-13)  # fmt: skip
    # The work vectors were never copied between host and device.
    x_work, y_work = M._work[0], M._work[1]
    assert x_work.transfers == 0 and y_work.transfers == 0
    # A product on a non-default CuPy stream is ordered with it.
    with cupy.cuda.Stream(non_blocking=True):
        z = cupy.asarray(x) * 2.0
        w = M @ z
        np.testing.assert_allclose(cupy.asnumpy(w), 2.0 * (A @ x), rtol=1e-13, atol=1e-13)


def test_gmres_with_cupy_operands(cuda):
    A, x = system()
    b = A @ x
    xg, info = msl.gmres(csp.csr_matrix(A), cupy.asarray(b), rtol=1e-12)
    assert isinstance(xg, cupy.ndarray) and info == 0
    assert np.linalg.norm(A @ cupy.asnumpy(xg) - b) <= 1e-12 * np.linalg.norm(b)
    M = ms.Matrix.from_scipy(A, cuda)
    xg, info, rep = msl.gmres(M, cupy.asarray(b), x0=cupy.zeros(300), rtol=1e-12, M="ilu0",
                              basis_precision="f32", return_report=True)  # fmt: skip
    assert isinstance(xg, cupy.ndarray) and info == 0 and rep.converged
    assert np.linalg.norm(A @ cupy.asnumpy(xg) - b) <= 1e-12 * np.linalg.norm(b)
    xs, info = msl.gmres(A, cupy.asarray(b)[:, None], rtol=1e-12)  # scipy A, CuPy (n, 1) b
    assert isinstance(xs, cupy.ndarray) and xs.shape == (300,) and info == 0
    seen = []
    xg, info = msl.gmres(M, cupy.asarray(b), rtol=1e-12, restart=10, callback=seen.append,
                         callback_type="x")  # fmt: skip
    assert info == 0 and seen and all(isinstance(s, cupy.ndarray) for s in seen)


def test_scipy_solver_with_a_cuda_matrix(cuda):
    import scipy.sparse.linalg as spla

    A, x = system()
    b = A @ x
    M = ms.Matrix.from_scipy(A, cuda)
    import inspect

    kw = {"rtol" if "rtol" in inspect.signature(spla.gmres).parameters else "tol": 1e-10}
    xs, info = spla.gmres(M, b, atol=0.0, **kw)
    assert info == 0 and np.linalg.norm(A @ xs - b) <= 1e-10 * np.linalg.norm(b)


def test_pagerank_with_cupyx_sparse(cuda):
    G = sp.random(200, 200, density=0.03, random_state=4, format="csr")
    p = msl.pagerank(csp.csr_matrix(G), tol=1e-12)
    assert isinstance(p, cupy.ndarray) and abs(float(p.sum()) - 1) < 1e-12
    q = msl.pagerank(G, tol=1e-12, context=cuda)
    np.testing.assert_allclose(cupy.asnumpy(p), q, rtol=1e-10, atol=1e-14)
    try:
        import networkx as nx
    except ImportError:
        return
    want = nx.pagerank(nx.from_scipy_sparse_array(sp.csr_array(G), create_using=nx.DiGraph),
                       tol=1e-12, weight=None)  # fmt: skip
    np.testing.assert_allclose(q, [want[i] for i in range(200)], rtol=1e-7, atol=1e-12)


def test_cupy_refusals(cuda):
    A, x = system(20)
    M = ms.Matrix.from_scipy(A, cuda)
    with pytest.raises(TypeError, match="complex"):
        M @ cupy.ones(20, dtype=cupy.complex128)
    with pytest.raises(ms.DimensionMismatchError):
        M @ cupy.ones(21)
    with pytest.raises(TypeError, match="sparse"):
        M @ csp.csr_matrix(A)
    with ms.Context("cpu") as cpu:
        H = ms.Matrix.from_scipy(A, cpu)
        with pytest.raises(ms.NotSupportedError, match="CUDA context"):
            H @ cupy.ones(20)
