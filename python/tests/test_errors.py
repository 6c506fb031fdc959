"""test_errors.py: every error path raises its mixsparse.Error subclass, carrying the status
name and the library's message (msp_last_error)."""

import numpy as np
import pytest
import scipy.sparse as sp

import mixsparse as ms

MM_CASES = {
    "ERR_MM_EMPTY": b"",
    "ERR_MM_BANNER": b"%%NotMatrixMarket matrix coordinate real general\n1 1 1\n1 1 1\n",
    "ERR_MM_UNSUPPORTED": b"%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n",
    "ERR_MM_SIZE": b"%%MatrixMarket matrix coordinate real general\n2 x\n",
    "ERR_MM_TOO_FEW": b"%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n",
    "ERR_MM_TOO_MANY": b"%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1\n2 2 1\n",
    "ERR_MM_INDEX": b"%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1\n",
    "ERR_MM_VALUE": b"%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 abc\n",
    "ERR_MM_GZIP": b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03not a deflate stream",
}


def raises(cls, name, fn, *args, **kwargs):
    """Call fn, which must raise cls with status name `name` and a nonempty message."""
    with pytest.raises(cls) as e:
        fn(*args, **kwargs)
    assert isinstance(e.value, ms.Error)
    assert e.value.name == name
    assert e.value.status == ms.status_names().index(name)
    assert e.value.message, "no message from msp_last_error"
    assert name in str(e.value)
    return e.value


@pytest.fixture
def tridiag(ctx):
    return ms.Matrix.from_scipy(sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(6, 6)), ctx)


def test_every_status_has_its_class():
    names = ms.status_names()
    assert names[0] == "SUCCESS" and len(names) > 20
    for code, name in enumerate(names[1:], start=1):
        cls = ms.error_class(code)
        assert issubclass(cls, ms.Error) and cls is not ms.Error, name
        if name.startswith("ERR_MM_"):
            assert cls is ms.MatrixMarketError
    assert ms.error_class(len(names) + 5) is ms.Error  # unknown codes: the base class


@pytest.mark.parametrize("name", sorted(MM_CASES))
def test_matrix_market_errors(tmp_path, ctx, name):
    path = tmp_path / ("bad_%s.mtx" % name.lower())
    path.write_bytes(MM_CASES[name])
    e = raises(ms.MatrixMarketError, name, ms.read_mtx, path, ctx)
    assert str(path) in e.message and "line" in e.message
    assert isinstance(e, ValueError)


def test_missing_file(ctx, tmp_path):
    e = raises(ms.FileError, "ERR_IO", ms.read_mtx, tmp_path / "absent.mtx", ctx)
    assert isinstance(e, OSError)


def test_invalid_arguments(ctx, tridiag):
    raises(ms.InvalidArgumentError, "ERR_INVALID_ARGUMENT", ms.Context, "gpu")
    raises(ms.InvalidArgumentError, "ERR_INVALID_ARGUMENT", tridiag.convert, format="nope")
    raises(ms.InvalidArgumentError, "ERR_INVALID_ARGUMENT", tridiag.convert, precision="f8")
    raises(ms.InvalidArgumentError, "ERR_INVALID_ARGUMENT", tridiag.convert, kernel="fast")
    raises(ms.InvalidArgumentError, "ERR_INVALID_ARGUMENT", tridiag.convert, colour="red")
    raises(ms.InvalidArgumentError, "ERR_INVALID_ARGUMENT", tridiag.convert, range="clip")
    raises(ms.InvalidArgumentError, "ERR_INVALID_ARGUMENT", ms.Matrix.generate, "nonsense:3", ctx)
    raises(ms.InvalidArgumentError, "ERR_INVALID_ARGUMENT", ms.gmres, tridiag, np.ones(6), precond="amg")
    raises(ms.InvalidArgumentError, "ERR_INVALID_ARGUMENT", ms.gmres, tridiag, np.ones(6), restart=0)
    raises(ms.InvalidArgumentError, "ERR_INVALID_ARGUMENT", ms.spmv, 1.0, tridiag, np.ones(6), 1.0, None)
    raises(ms.InvalidArgumentError, "ERR_INVALID_ARGUMENT", ms.Vector, 3, ctx, "f128")
    # Operands of another context are refused by the library.
    with ms.Context("cpu") as other:
        x = ms.Vector(np.ones(6), other)
        y = ms.Vector(6, other)
        e = raises(ms.InvalidArgumentError, "ERR_INVALID_ARGUMENT", ms.spmv, 1.0, tridiag, x, 0.0, y)
        assert "context" in e.message


def test_closed_objects(ctx, tridiag):
    x = ms.Vector(np.ones(6), ctx)
    x.close()
    x.close()  # idempotent
    assert x.closed
    raises(ms.InvalidArgumentError, "ERR_INVALID_ARGUMENT", len, x)
    raises(ms.InvalidArgumentError, "ERR_INVALID_ARGUMENT", ms.spmv, 1.0, tridiag, x, 0.0, None)
    tridiag.close()
    raises(ms.InvalidArgumentError, "ERR_INVALID_ARGUMENT", tridiag.convert)
    raises(ms.InvalidArgumentError, "ERR_INVALID_ARGUMENT", lambda: tridiag.shape)


def test_dimension_mismatch(ctx, tridiag):
    raises(ms.DimensionMismatchError, "ERR_DIMENSION_MISMATCH", tridiag.__matmul__, np.ones(5))
    raises(ms.DimensionMismatchError, "ERR_DIMENSION_MISMATCH", ms.spmv, 1.0, tridiag, np.ones(6), 0.0, np.ones(7))
    raises(ms.DimensionMismatchError, "ERR_DIMENSION_MISMATCH", ms.gmres, tridiag, np.ones(4))
    # Vectors: the library's own check.
    x, y = ms.Vector(5, ctx), ms.Vector(6, ctx)
    e = raises(ms.DimensionMismatchError, "ERR_DIMENSION_MISMATCH", ms.spmv, 1.0, tridiag, x, 0.0, y)
    assert "5" in e.message
    raises(ms.DimensionMismatchError, "ERR_DIMENSION_MISMATCH", y.set, np.ones(5))


def test_invalid_matrix(ctx):
    raises(ms.InvalidMatrixError, "ERR_INVALID_MATRIX", ms.Matrix.from_csr, (2, 2), [0, 1, 2], [0, 2], [1.0, 1.0], ctx)
    raises(ms.InvalidMatrixError, "ERR_INVALID_MATRIX", ms.Matrix.from_csr, (2, 2), [0, 2, 1], [0, 1], [1.0, 1.0], ctx)
    # ILU(0) with a zero pivot: the factorisation (on the host for every backend) names the row.
    Z = ms.Matrix.from_scipy(sp.csr_array(np.array([[0.0, 1.0], [1.0, 0.0]])), ctx)
    e = raises(ms.InvalidMatrixError, "ERR_INVALID_MATRIX", ms.gmres, Z, np.ones(2), precond="ilu0")
    assert "row" in e.message


def test_nonfinite(ctx):
    A = sp.csr_array(np.array([[1.0, np.nan], [0.0, 1.0]]))
    raises(ms.NonFiniteError, "ERR_NONFINITE", ms.Matrix.from_scipy, A, ctx)
    assert ms.Matrix.from_scipy(A, ctx, allow_nonfinite=True).nnz == 3
    raises(ms.NonFiniteError, "ERR_NONFINITE", ms.Vector, [1.0, np.inf], ctx, "fx16")


def test_range(ctx):
    A = ms.Matrix.from_scipy(sp.csr_array(np.array([[1.0e6, 1.0], [0.0, 1.0]])), ctx)
    e = raises(ms.RangeError, "ERR_RANGE", A.convert, format="csr", precision="f16")
    assert "f16" in e.message
    B = A.convert(format="csr", precision="f16", range="saturate")
    assert B.range_info() == (1, 0)
    raises(ms.RangeError, "ERR_RANGE", ms.Vector, [1.0e6, 1.0], ctx, "f16")


def test_fill_limit(ctx):
    # One full row among rows of one entry: ELL would pad every row to 200 entries.
    A = sp.lil_array((200, 200))
    A.setdiag(1.0)
    A[0, :] = 1.0
    M = ms.Matrix.from_scipy(A, ctx)
    e = raises(ms.FillLimitError, "ERR_FILL_LIMIT", M.convert, format="ell", precision="f64", max_fill=3)
    assert e.message


def test_not_supported(ctx, tridiag):
    raises(ms.NotSupportedError, "ERR_NOT_SUPPORTED", tridiag.bdmp_info)
    raises(ms.NotSupportedError, "ERR_NOT_SUPPORTED", tridiag.set_cpms_segments, 1)
    raises(ms.NotSupportedError, "ERR_NOT_SUPPORTED", tridiag.convert, format="bdmp-pbp", precision="f32")


def test_out_of_memory(ctx):
    try:
        ms.set_memory_limit(64 * 1024)
        e = raises(ms.OutOfMemoryError, "ERR_OUT_OF_MEMORY", ms.Matrix.generate, "laplace2d:300", ctx)
        assert isinstance(e, MemoryError)
        raises(ms.OutOfMemoryError, "ERR_OUT_OF_MEMORY", ms.Vector, 10**6, ctx)
    finally:
        ms.set_memory_limit(0)
    assert ms.Matrix.generate("laplace2d:300", ctx).nnz > 0


def test_cuda_unavailable():
    try:
        c = ms.Context("cuda")
    except (ms.NotBuiltError, ms.NoDeviceError) as e:
        assert e.name in ("ERR_NOT_BUILT", "ERR_NO_DEVICE") and e.message
        assert ms.device_count() == 0
        with pytest.raises((ms.NotBuiltError, ms.NoDeviceError)):
            ms.device_info(0)
        return
    c.close()
    assert ms.device_count() > 0
    pytest.skip("a CUDA device is usable here: the no-GPU error paths cannot be reached")


def test_context_closes_its_objects():
    with ms.Context("cpu") as c:
        A = ms.Matrix.generate("laplace2d:4", c)
        x = ms.Vector(16, c)
    assert c.closed and A.closed and x.closed
    raises(ms.InvalidArgumentError, "ERR_INVALID_ARGUMENT", ms.Vector, 3, c)


def test_type_errors(ctx):
    with pytest.raises(TypeError):
        ms.Matrix.from_scipy(sp.csr_array(np.array([[1j, 0], [0, 1]])), ctx)


def test_checks_made_in_python(ctx, tridiag):
    raises(ms.InvalidArgumentError, "ERR_INVALID_ARGUMENT", ms.Matrix.from_csr, (2, 2), [0, 1], [0], [1.0], ctx)
    raises(ms.InvalidArgumentError, "ERR_INVALID_ARGUMENT", ms.spmv, 1.0, tridiag, np.ones(6), 0.0,
           np.ones(6, dtype=np.int64))  # fmt: skip
    raises(ms.InvalidArgumentError, "ERR_INVALID_ARGUMENT", ms.Vector(3, ctx).to_numpy, np.empty(3, np.float32))
    raises(ms.InvalidArgumentError, "ERR_INVALID_ARGUMENT", ms.Vector, np.ones((2, 2)), ctx)
    raises(ms.InvalidArgumentError, "ERR_INVALID_ARGUMENT", ms.spmv, 1.0, "A", np.ones(6), 0.0, None)
    raises(ms.InvalidArgumentError, "ERR_INVALID_ARGUMENT", ms.Matrix.from_scipy, sp.eye(2), "cpu")


@pytest.mark.skipif(not ms._lib.has("msp_pagerank"), reason="msp_pagerank is not in this build of the library")
def test_pagerank_errors(ctx, tridiag):
    raises(ms.InvalidArgumentError, "ERR_INVALID_ARGUMENT", ms.pagerank, tridiag, alpha=1.5)
    raises(ms.InvalidArgumentError, "ERR_INVALID_ARGUMENT", ms.pagerank, tridiag, precision="f16")
    raises(ms.InvalidArgumentError, "ERR_INVALID_ARGUMENT", ms.pagerank, tridiag, order="random")
    raises(ms.InvalidArgumentError, "ERR_INVALID_ARGUMENT", ms.pagerank, tridiag,
           personalization=[1.0, -1.0, 0.0, 0.0, 0.0, 0.0])  # fmt: skip
    raises(ms.DimensionMismatchError, "ERR_DIMENSION_MISMATCH", ms.pagerank, tridiag, personalization=[1.0])
    rect = ms.Matrix.from_scipy(sp.random(4, 5, density=0.5, random_state=1), ctx)
    raises(ms.InvalidArgumentError, "ERR_INVALID_ARGUMENT", ms.pagerank, rect)
    raises(ms.InvalidMatrixError, "ERR_INVALID_MATRIX", ms.pagerank, tridiag, weighted=True)
