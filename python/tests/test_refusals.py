"""test_refusals.py: what the binding must refuse instead of converting, truncating or cutting
silently: paths with a NUL, read-only output arrays, non-integer and out-of-range indices,
complex values, integers beyond what the C types hold."""

import numpy as np
import pytest
import scipy.sparse as sp

import mixsparse as ms


def test_paths_with_a_nul_are_refused(ctx, tmp_path):
    keep = tmp_path / "keep.mtx"
    keep.write_text("precious\n")
    v = ms.Vector([1.0, 2.0], ctx)
    for bad in (str(keep) + "\0.new", bytes(keep) + b"\0.new"):
        with pytest.raises(ValueError, match="null byte"):
            v.write_mtx(bad)
        with pytest.raises(ValueError, match="null byte"):
            ms.Vector.read_mtx(bad, ctx)
        with pytest.raises(ValueError, match="null byte"):
            ms.read_mtx(bad, ctx)
    assert keep.read_text() == "precious\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.mtx"]
    with pytest.raises(TypeError):
        v.write_mtx(3)
    v.write_mtx(tmp_path / "ok.mtx")  # an os.PathLike without NUL is written
    assert ms.Vector.read_mtx(tmp_path / "ok.mtx", ctx).to_numpy().tolist() == [1.0, 2.0]


def test_to_numpy_refuses_a_read_only_out(ctx, tmp_path):
    v = ms.Vector([1.0, 2.0, 3.0], ctx)
    ro = np.zeros(3)
    ro.flags.writeable = False
    with pytest.raises(ms.InvalidArgumentError, match="read-only"):
        v.to_numpy(out=ro)
    assert ro.tolist() == [0.0, 0.0, 0.0]
    path = tmp_path / "ro.bin"
    np.zeros(3).tofile(path)
    mm = np.memmap(path, dtype=np.float64, mode="r", shape=(3,))
    with pytest.raises(ms.InvalidArgumentError, match="read-only"):
        v.to_numpy(out=mm)
    assert np.fromfile(path).tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(ms.InvalidArgumentError):
        v.to_numpy(out=[0.0, 0.0, 0.0])
    out = np.empty(3)
    assert v.to_numpy(out=out) is out and out.tolist() == [1.0, 2.0, 3.0]


def test_non_integer_index_arrays_are_refused(ctx):
    with pytest.raises(TypeError, match="indices"):
        ms.Matrix.from_csr((1, 3), [0, 2], [0.9, 2.7], [1.0, 2.0], ctx)
    with pytest.raises(TypeError, match="indices"):
        ms.Matrix.from_csr((1, 3), [0, 2], np.array([0.0, 2.0]), [1.0, 2.0], ctx)
    with pytest.raises(TypeError, match="indptr"):
        ms.Matrix.from_csr((1, 3), [0.0, 2.5], [0, 2], [1.0, 2.0], ctx)
    with pytest.raises(TypeError, match="indices"):
        ms.Matrix.from_csr((1, 3), [0, 2], [True, False], [1.0, 2.0], ctx)
    with pytest.raises(TypeError, match="indices"):
        ms.Matrix.from_csr((1, 3), [0, 2], ["0", "1"], [1.0, 2.0], ctx)


def test_out_of_range_integers_are_refused_before_any_cast(ctx):
    # -2**32 would wrap to column 0 in int32; 2**32 + 1 to column 1.
    for col in (-(2**32), 2**32 + 1, -1, 3):
        with pytest.raises(ms.InvalidMatrixError) as e:
            ms.Matrix.from_csr((1, 3), [0, 2], np.array([0, col], dtype=np.int64), [1.0, 2.0], ctx)
        assert "indices[1] = %d" % col in str(e.value) and "0-based" in str(e.value)
    with pytest.raises(ms.InvalidMatrixError, match=r"indices\[0\]"):
        ms.Matrix.from_csr((1, 3), [0, 1], np.array([2**63 + 5], dtype=np.uint64), [1.0], ctx)
    with pytest.raises(ms.InvalidMatrixError, match=r"indptr\[1\]"):
        ms.Matrix.from_csr((1, 3), [0, 2**70], [0], [1.0], ctx)
    with pytest.raises(ms.InvalidArgumentError, match="length"):
        ms.Vector(2**70, ctx)
    with pytest.raises(ms.InvalidArgumentError, match="length"):
        ms.Vector(-1, ctx)
    with pytest.raises(TypeError):
        ms.Vector(True, ctx)
    A = ms.Matrix.from_scipy(sp.eye(4, format="csr") * 2.0, ctx)
    with pytest.raises(ms.InvalidArgumentError, match="restart"):
        ms.gmres(A, np.ones(4), restart=2**32 + 3)
    with pytest.raises(ms.InvalidArgumentError, match="max_iters"):
        ms.gmres(A, np.ones(4), max_iters=2**64 + 1)
    with pytest.raises(TypeError, match="restart"):
        ms.gmres(A, np.ones(4), restart=2.5)
    with pytest.raises(ms.InvalidArgumentError, match="maxiter"):
        ms.linalg.gmres(A, np.ones(4), maxiter=2**63)
    with pytest.raises(ms.InvalidArgumentError, match="restart"):
        ms.linalg.gmres(A, np.ones(4), restart=2**32 + 3)
    with pytest.raises(ms.InvalidArgumentError, match="max_iter"):
        ms.linalg.pagerank(A, max_iter=2**64)
    with pytest.raises(ms.InvalidArgumentError, match="segments"):
        A.convert(format="csr", precision="cpms2").set_cpms_segments(2**32 + 1)
    with pytest.raises(ms.InvalidArgumentError, match="hack_size"):
        A.convert(format="hll", hack_size=2**32 + 32)


def test_complex_values_are_refused(ctx):
    with pytest.raises(TypeError, match="complex"):
        ms.Matrix.from_csr((1, 2), [0, 2], [0, 1], [1.0 + 2j, 3.0], ctx)
    with pytest.raises(TypeError, match="complex"):
        ms.Vector([1.0, 1j], ctx)
    A = ms.Matrix.from_scipy(sp.eye(3, format="csr"), ctx)
    with pytest.raises(TypeError, match="complex"):
        A @ np.ones(3, dtype=complex)
    with pytest.raises(TypeError, match="complex"):
        A @ np.ones((3, 2), dtype=complex)
    with pytest.raises(TypeError, match="complex"):
        ms.spmv(1j, A, np.ones(3), 0.0, None)
    with pytest.raises(TypeError, match="complex"):
        ms.Vector(3, ctx).fill(1 + 1j)
    with pytest.raises(TypeError, match="complex"):
        ms.linalg.gmres(A, np.ones(3) + 0j)
    with pytest.raises(TypeError, match="complex"):
        ms.linalg.gmres(sp.eye(3, dtype=complex), np.ones(3))


def test_shapes_and_bases_are_named(ctx):
    with pytest.raises(ms.InvalidArgumentError, match=r"negative shape \(-2, 2\)"):
        ms.Matrix.from_csr((-2, 2), [0], [], [], ctx)
    with pytest.raises(ms.InvalidArgumentError, match="negative shape"):
        ms.Matrix.from_csr((2, -1), [0, 0, 0], [], [], ctx)
    with pytest.raises(TypeError, match="shape"):
        ms.Matrix.from_csr((2.0, 2), [0, 0, 0], [], [], ctx)
    with pytest.raises(ms.InvalidMatrixError, match=r"row 1 \(0-based\)"):
        ms.Matrix.from_csr((3, 3), [0, 2, 1, 2], [0, 1], [1.0, 1.0], ctx)
    with pytest.raises(ms.NonFiniteError, match=r"row 1, column 2, 0-based"):
        ms.Matrix.from_csr((2, 3), [0, 1, 2], [0, 2], [1.0, np.inf], ctx)
    # The accepted forms still work: an empty matrix, int32 and uint arrays, Python lists.
    assert ms.Matrix.from_csr((0, 0), [0], [], [], ctx).shape == (0, 0)
    B = ms.Matrix.from_csr((2, 3), np.array([0, 1, 2], np.uint32), np.array([2, 0], np.int16),
                           np.array([1, 2], np.int64), ctx)  # fmt: skip
    assert B.to_scipy().toarray().tolist() == [[0, 0, 1], [2, 0, 0]]
