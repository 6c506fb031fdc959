"""test_products.py: y = alpha A x + beta y against scipy for every format x storage precision
(and every CSR kernel), on every backend here, within a bound derived from the precision.

The bound for row i, with M_i = sum_j |a_ij| |x_j| and len_i its stored entries:
  storage:    |alpha| u_p M_i for the IEEE precisions (each value rounded to nearest: relative
              error at most the unit roundoff u_p; CPMS read with every segment is exact),
              |alpha| e_A sum_j |x_j| for fixed point (e_A = max|a| / (2 qmax): half the largest
              block scale), u_f32 for the BDMP formats (each tile in fp32 or fp64);
  arithmetic: the library's fp64 evaluation and scipy's each take at most len_i + 4 roundings
              (Higham 3.1): 2 gamma(len_i + 4) (|alpha| (1 + u_p) M_i + |beta y0_i|), plus the
              result's own rounding to fp64.
The values lie in [0.5, 2] in magnitude, so no precision overflows or flushes them.
"""

import numpy as np
import pytest
import scipy.sparse as sp

import mixsparse as ms

U64 = 2.0**-53
UNIT_ROUNDOFF = {"f64": 0.0, "f32": 2.0**-24, "f16": 2.0**-11, "bf16": 2.0**-8,
                 "cpms2": 0.0, "cpms4": 0.0}  # fmt: skip
FIXED_BITS = {"fx32": 32, "fx16": 16}
F64_ONLY = {"bdmp-pbp", "bdmp-tcki"}  # BDMP picks fp32 or fp64 per tile itself


def gamma(m):
    return m * U64 / (1 - m * U64)


def make_matrix(rows, cols, seed):
    """Random lengths (empty rows, one long row), random signs, |values| in [0.5, 2]."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 12, size=rows)
    lengths[rng.integers(0, rows)] = min(cols, 150)
    lengths[:3] = 0
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    indices = np.concatenate([rng.choice(cols, size=k, replace=False) for k in lengths])
    data = rng.uniform(0.5, 2.0, size=indices.size) * rng.choice([-1.0, 1.0], size=indices.size)
    return sp.csr_array((data, indices.astype(np.int32), indptr), shape=(rows, cols))


MATRICES = {"square": make_matrix(300, 300, 1), "wide": make_matrix(97, 257, 2)}


def bound(A, x, y0, alpha, beta, fmt, prec):
    absA = abs(A)
    M = absA @ abs(x)
    lens = np.diff(A.indptr)
    if fmt in F64_ONLY:
        u, store = 2.0**-24, 2.0**-24 * M
    elif prec in FIXED_BITS:
        qmax = 2.0 ** (FIXED_BITS[prec] - 1) - 1
        u = 0.0
        store = abs(A).max() / (2 * qmax) * ((absA != 0).astype(np.float64) @ abs(x))
    else:
        u = UNIT_ROUNDOFF[prec]
        store = u * M
    arith = 2 * gamma(lens + 4) * (abs(alpha) * (1 + u) * M + abs(beta * y0))
    ref = alpha * (A @ x) + beta * y0
    return ref, abs(alpha) * store + arith + U64 * abs(ref)


def cases():
    for fmt in ms.formats:
        for prec in ms.precisions:
            yield fmt, prec, "auto"
    for kernel in ("scalar", "vector", "merge"):
        for prec in ("f64", "f32", "fx16"):
            yield "csr", prec, kernel


@pytest.mark.parametrize("fmt,prec,kernel", list(cases()))
@pytest.mark.parametrize("name", sorted(MATRICES))
def test_product_against_scipy(ctx, name, fmt, prec, kernel):
    A = MATRICES[name]
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, size=A.shape[1])
    y0 = rng.uniform(-1, 1, size=A.shape[0])
    M = ms.Matrix.from_scipy(A, ctx)
    if fmt in F64_ONLY and prec != "f64":
        with pytest.raises(ms.NotSupportedError) as e:
            M.convert(format=fmt, precision=prec, kernel=kernel)
        assert e.value.name == "ERR_NOT_SUPPORTED" and e.value.message
        return
    B = M.convert(format=fmt, precision=prec, kernel=kernel, max_fill=1e4)
    assert (B.format, B.precision, B.shape, B.nnz) == (fmt, prec, A.shape, A.nnz)
    if kernel != "auto":
        assert B.kernel == kernel
    for alpha, beta in ((1.0, 0.0), (-0.5, 2.0)):
        ref, tol = bound(A, x, y0, alpha, beta, fmt, prec)
        if beta == 0:
            y = B @ x  # numpy in, numpy out
        else:
            y = y0.copy()
            assert ms.spmv(alpha, B, x, beta, y) is y  # updated in place
        err = abs(y - ref)
        worst = int(np.argmax(err - tol))
        assert np.all(err <= tol), "%s %s %s row %d: |y - ref| = %g > bound %g" % (
            fmt, prec, kernel, worst, err[worst], tol[worst])  # fmt: skip
    # The same product through Vectors, which stay on the context's device.
    xv, yv = ms.Vector(x, ctx), ms.Vector(y0, ctx)
    ms.spmv(-0.5, B, xv, 2.0, yv)
    ref, tol = bound(A, x, y0, -0.5, 2.0, fmt, prec)
    assert np.all(abs(yv.to_numpy() - ref) <= tol)


def test_auto_with_digits(ctx):
    """format="auto" with bdmp_digits: AUTO picks the format and storage for the digits asked
    (no precision needed), and the product keeps them: within 5e-D * sum_j |a_ij| * max|x|."""
    A = MATRICES["square"]
    M = ms.Matrix.from_scipy(A, ctx)
    x = np.linspace(-1.0, 2.0, A.shape[1])
    for d in (4, 7, 12):
        B = M.convert(format="auto", bdmp_digits=d)
        y = ms.spmv(1.0, B, x, 0.0, None)
        ref = A @ x
        tol = 5 * 10.0 ** -d * abs(A) @ np.full(A.shape[1], abs(x).max()) + 1e-13 * abs(ref)
        assert np.all(abs(y - ref) <= tol), (d, B.format, B.precision)
    with pytest.raises(ms.InvalidArgumentError):
        M.convert(format="auto", precision="f32", bdmp_digits=7)


@pytest.mark.parametrize("fmt", ["bdmp-pbp", "bdmp-tcki"])
def test_bdmp_bound_is_reported(ctx, fmt):
    A = MATRICES["square"]
    B = ms.Matrix.from_scipy(A, ctx).convert(format=fmt, precision="f64")
    info = B.bdmp_info()
    assert info["nnz_f32"] + info["nnz_f64"] == A.nnz
    assert info["tiles"] >= info["tiles_f32"] >= 0
    parts = info["bytes_values"] + info["bytes_indices"] + info["bytes_meta"]
    assert parts == B.nbytes
    if fmt == "bdmp-pbp":
        assert info["bytes_values"] == 4 * info["nnz_f32"] + 8 * info["nnz_f64"]
    else:  # slab padding and the CSR-like part's values
        assert info["bytes_values"] >= 4 * info["nnz_f32"] + 8 * info["nnz_f64"]
    # BDMP is built on the device on CUDA (its device time reported), on the host otherwise
    if ctx.backend == "cuda":
        assert info["convert_device_ms"] > 0
    else:
        assert info["convert_device_ms"] == 0.0


@pytest.mark.parametrize("prec", ms.precisions)
def test_vector_storage_precision(ctx, prec):
    """A Vector stores its values in its precision: reading back gives the stored values."""
    v = np.array([1.0, -0.5, 0.75, 2.0, -1.25, 0.0, 3.0])
    V = ms.Vector(v, ctx, precision=prec)
    assert V.precision == prec and len(V) == v.size
    got = V.to_numpy()
    if prec in UNIT_ROUNDOFF:
        assert np.all(abs(got - v) <= UNIT_ROUNDOFF[prec] * abs(v))
    else:
        assert np.all(abs(got - v) <= abs(v).max() / (2 * (2.0 ** (FIXED_BITS[prec] - 1) - 1)))
