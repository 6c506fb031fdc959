"""test_dlpack.py: DLPack exchange (Vector.__dlpack__ / __dlpack_device__, from_dlpack).

Everywhere: the capsules made with ctypes are read by numpy (layout, deleter, the owner kept
alive exactly as long as the consumer's array), capsules are checked on import (dtype, shape,
strides), host arrays come in, and the refusals (CPU vectors, device memory into a CPU context)
raise. With CuPy and a CUDA context (the GPU machine): cupy array -> Vector -> spmv -> cupy
array against cupyx.scipy.sparse, with the device pointers and the transfer counters showing
that nothing went through the host. Skipped, saying why, without CuPy or a GPU.
"""

import gc
import weakref

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import BACKENDS

import mixsparse as ms
from mixsparse import _dlpack

U64 = 2.0**-53

try:
    import cupy as cp
    import cupyx.scipy.sparse as csp

    CUPY_MISSING = None
except Exception as e:  # noqa: BLE001  (ImportError, or CuPy failing to find its CUDA)
    cp = csp = None
    CUPY_MISSING = "%s: %s" % (type(e).__name__, e)


class _Owner:
    """Something a weak reference can watch."""


class _HostProducer:
    """A producer of a kDLCPU capsule over a numpy buffer, made by mixsparse's exporter."""

    def __init__(self, arr, owner):
        self.arr, self.owner = arr, owner

    def __dlpack_device__(self):
        return (_dlpack.KDL_CPU, 0)

    def __dlpack__(self, stream=None):
        return _dlpack.export(self.arr.ctypes.data, self.arr.shape[0], (1, 0), self.owner)


class _FakeProducer:
    """Claims a device and hands out `capsule` (whatever it is)."""

    def __init__(self, device, capsule=None):
        self.device, self.capsule = device, capsule

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None):
        return self.capsule


def test_capsule_read_by_numpy_keeps_the_owner_alive():
    base = np.arange(7.0) * 1.5
    owner = _Owner()
    watch = weakref.ref(owner)
    before = _dlpack.live_exports()
    arr = np.from_dlpack(_HostProducer(base, owner))
    del owner
    assert arr.ctypes.data == base.ctypes.data  # the same memory: no copy
    assert arr.dtype == np.float64 and arr.shape == (7,)
    assert np.array_equal(arr, base)
    gc.collect()
    assert watch() is not None and _dlpack.live_exports() == before + 1
    del arr
    gc.collect()
    assert watch() is None and _dlpack.live_exports() == before  # the deleter ran once


def test_unconsumed_capsule_releases_on_destruction():
    base = np.ones(3)
    owner = _Owner()
    watch = weakref.ref(owner)
    before = _dlpack.live_exports()
    capsule = _HostProducer(base, owner).__dlpack__()
    del owner
    assert watch() is not None and _dlpack.live_exports() == before + 1
    t = _dlpack.read(capsule)  # reading does not take it over
    assert (t.data, t.n, t.device) == (base.ctypes.data, 3, (1, 0))
    del capsule
    gc.collect()
    assert watch() is None and _dlpack.live_exports() == before


def test_read_checks_the_tensor():
    t = _dlpack.read(np.arange(5.0).__dlpack__())
    assert t.n == 5 and t.device == (1, 0)
    empty = _dlpack.read(np.zeros(0).__dlpack__())
    assert empty.n == 0
    bad = {
        "stride 2": np.arange(10.0)[::2],
        "32 bits": np.arange(4, dtype=np.float32),
        "type code 0": np.arange(4, dtype=np.int64),
        "2 dimensions": np.zeros((2, 3)),
    }
    for words, arr in bad.items():
        with pytest.raises(ms.InvalidArgumentError) as e:
            _dlpack.read(arr.__dlpack__())
        assert words in e.value.message, e.value.message
    with pytest.raises(ms.InvalidArgumentError, match="not a DLPack capsule"):
        _dlpack.read("dltensor")


def test_from_dlpack_host_arrays(ctx):
    x = np.linspace(-1, 1, 11)
    v = ms.from_dlpack(x, ctx)
    assert isinstance(v, ms.Vector) and v.context is ctx and v.precision == "f64"
    assert np.array_equal(v.to_numpy(), x)
    w = ms.Vector.from_dlpack(ctx, x[:4])  # (context, obj) works too
    assert np.array_equal(w.to_numpy(), x[:4])
    with pytest.raises(ms.InvalidArgumentError, match="float64"):
        ms.from_dlpack(x.astype(np.float32), ctx)
    with pytest.raises(ms.InvalidArgumentError, match="one dimension"):
        ms.from_dlpack(np.zeros((2, 2)), ctx)
    with pytest.raises(ms.InvalidArgumentError, match="__dlpack__"):
        ms.from_dlpack([1.0, 2.0], ctx)


def test_device_memory_needs_a_cuda_context():
    with ms.Context("cpu") as ctx:
        with pytest.raises(ms.NotSupportedError, match="CUDA context"):
            ms.from_dlpack(_FakeProducer((_dlpack.KDL_CUDA, 0)), ctx)
        with pytest.raises(ms.NotSupportedError, match="device type 14"):
            ms.from_dlpack(_FakeProducer((14, 0)), ctx)


def test_cpu_vectors_are_not_exported():
    with ms.Context("cpu") as ctx:
        v = ms.Vector(np.ones(4), ctx)
        for call in (v.__dlpack__, v.__dlpack_device__, v.device_pointer):
            with pytest.raises(ms.NotSupportedError) as e:
                call()
            assert "cpu" in e.value.message
        assert np.array_equal(v.to_numpy(), np.ones(4))


def test_export_keeps_the_vector_open(monkeypatch):
    """The bookkeeping of Vector.__dlpack__ on a CPU vector made to look exportable: its device
    pointer replaced by a host buffer, read by numpy. Closing the vector (or its context)
    while the consumer's array lives is refused; afterwards it works."""
    buf = np.arange(5.0)
    monkeypatch.setattr(ms.Vector, "__dlpack_device__", lambda self: (_dlpack.KDL_CPU, 0))
    monkeypatch.setattr(ms.Vector, "device_pointer", lambda self: buf.ctypes.data)
    ctx = ms.Context("cpu")
    v = ms.Vector(5, ctx)
    arr = np.from_dlpack(v)
    assert arr.ctypes.data == buf.ctypes.data and v._dlpack_exports == 1
    with pytest.raises(ms.InvalidArgumentError, match="still used by 1 array"):
        v.close()
    other = ms.Vector(3, ctx)
    with pytest.raises(ms.InvalidArgumentError, match="DLPack"):
        ctx.close()
    assert not v.closed and not other.closed and not ctx.closed  # nothing was closed
    with pytest.raises(BufferError):
        v.__dlpack__(copy=True)
    with pytest.raises(BufferError):
        v.__dlpack__(dl_device=(2, 0))
    with pytest.raises(ms.NotSupportedError, match="f64 vectors only"):
        ms.Vector(5, ctx, precision="f32").__dlpack__()
    del arr
    gc.collect()
    assert v._dlpack_exports == 0
    ctx.close()
    assert v.closed and ctx.closed


# ---- the GPU: CuPy arrays in and out without host copies -----------------------------------


@pytest.fixture
def gpu():
    """A CUDA context, when CuPy is importable and a CUDA context can be made here."""
    if CUPY_MISSING:
        pytest.skip("CuPy is not importable (%s); the GPU exchange runs where it is" % CUPY_MISSING)
    if "cuda" not in BACKENDS:
        pytest.skip("no CUDA context can be made here (no GPU, or a build without CUDA)")
    c = ms.Context("cuda")
    yield c
    gc.collect()
    c.close()


def _fp64_bound(A, x):
    """Per row: both products take at most len_i + 4 roundings in fp64 (Higham 3.1)."""
    m = (abs(A) @ abs(x)).astype(np.float64)
    lens = np.diff(A.indptr) + 4
    gam = lens * U64 / (1 - lens * U64)
    return 2 * gam * m + U64 * abs(A @ x)


def test_cupy_spmv_without_host_copies(gpu):
    rng = np.random.default_rng(11)
    A = sp.random(700, 500, density=0.02, format="csr", random_state=5)
    A.data = rng.uniform(0.5, 2.0, A.nnz) * rng.choice([-1.0, 1.0], A.nnz)
    x_host = rng.uniform(-1, 1, 500)
    x_cp = cp.asarray(x_host)
    M = ms.Matrix.from_scipy(A, gpu)

    xv = ms.from_dlpack(x_cp, gpu)  # device to device
    assert xv.transfers == 0
    assert xv.device_pointer() != x_cp.data.ptr  # its own copy, on the device
    assert bool(cp.array_equal(cp.from_dlpack(xv), x_cp))

    y = M @ xv
    y_cp = cp.from_dlpack(y)
    assert y_cp.data.ptr == y.device_pointer()  # the vector's own memory
    assert y_cp.shape == (700,) and y_cp.dtype == cp.float64
    assert xv.transfers == 0 and y.transfers == 0  # nothing went through the host

    ref = csp.csr_matrix(A) @ x_cp
    err = cp.asnumpy(cp.abs(y_cp - ref))
    tol = _fp64_bound(A, x_host)
    worst = int(np.argmax(err - tol))
    assert np.all(err <= tol), "row %d: %g > %g" % (worst, err[worst], tol[worst])

    # Writes through the CuPy array are what mixsparse reads next (host copy refreshed once).
    y_cp[:] = 0.5
    cp.cuda.get_current_stream().synchronize()
    assert ms.nrm1(y) == 350.0
    assert np.array_equal(y.to_numpy(), np.full(700, 0.5)) and y.transfers == 1

    # The vector outlives neither the exported array nor its context's close.
    with pytest.raises(ms.InvalidArgumentError, match="DLPack"):
        y.close()
    del y_cp
    gc.collect()
    y.close()


def test_cupy_refusals(gpu):
    with pytest.raises(ms.InvalidArgumentError, match="32 bits"):
        ms.from_dlpack(cp.ones(8, dtype=cp.float32), gpu)
    with pytest.raises(ms.InvalidArgumentError, match="stride"):
        ms.from_dlpack(cp.arange(10.0)[::2], gpu)
    with pytest.raises(ms.NotSupportedError, match="f64 vectors only"):
        ms.Vector(8, gpu, precision="f32").__dlpack__(stream=1)
    assert ms.Vector(8, gpu).__dlpack_device__() == (2, gpu.device)
    with ms.Context("cpu") as cpu:
        with pytest.raises(ms.NotSupportedError, match="CUDA context"):
            ms.from_dlpack(cp.ones(4), cpu)
